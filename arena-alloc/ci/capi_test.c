/* Exercises every export of libarena_alloc.so with C semantics. Prints the same lines with
 * or without LD_PRELOAD; exits non-zero on the first failed check. With EXPECT_ARENA=1 it
 * also checks that the preloaded allocator is the one answering (16-byte minimum block)
 * and what only arena-alloc promises (C23 free_sized, which glibc 2.36 lacks; mallopt's
 * return value for unknown parameters; malloc_trim's result). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "FAILED %s:%d: %s\n", __FILE__, __LINE__, #c);   \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static int aligned(void *p, size_t a) { return ((uintptr_t)p % a) == 0; }

static void fill(unsigned char *p, size_t n, unsigned char s) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(s + i);
}
static int same(const unsigned char *p, size_t n, unsigned char s) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(s + i)) return 0;
    return 1;
}

static void test_malloc_free(void) {
    void *a = malloc(0), *b = malloc(0);
    CHECK(a && b && a != b);
    CHECK(aligned(a, 16) && aligned(b, 16));
    free(a);
    free(b);
    free(NULL);
    for (size_t n = 1; n < 70000; n = n * 3 + 1) {
        unsigned char *p = malloc(n);
        CHECK(p && aligned(p, 16) && malloc_usable_size(p) >= n);
        fill(p, n, (unsigned char)n);
        CHECK(same(p, n, (unsigned char)n));
        free(p);
    }
    unsigned char *big = malloc(50u << 20);
    CHECK(big && aligned(big, 16));
    big[0] = 1;
    big[(50u << 20) - 1] = 2;
    free(big);
    errno = 0;
    CHECK(malloc(SIZE_MAX - 4096) == NULL && errno == ENOMEM);
    CHECK(malloc_usable_size(NULL) == 0);
    puts("malloc/free: ok");
}

static void test_calloc(void) {
    for (size_t n = 1; n < 300000; n = n * 5 + 3) {
        unsigned char *p = malloc(n);
        memset(p, 0xAB, n);
        free(p);
        unsigned char *z = calloc(n, 1);
        CHECK(z);
        for (size_t i = 0; i < n; i++) CHECK(z[i] == 0);
        free(z);
    }
    void *z0 = calloc(0, 8);
    CHECK(z0 != NULL);
    free(z0);
    errno = 0;
    CHECK(calloc(SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
    puts("calloc: ok");
}

static void test_realloc(void) {
    unsigned char *p = realloc(NULL, 10);
    CHECK(p);
    fill(p, 10, 7);
    size_t old = 10;
    size_t sizes[] = {20, 5, 100, 4000, 130000, 3u << 20, 200, 40u << 20, 17, 1};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t n = sizes[i];
        p = realloc(p, n);
        CHECK(p && aligned(p, 16));
        CHECK(same(p, old < n ? old : n, 7));
        fill(p, n, 7);
        old = n;
    }
    errno = 0;
    CHECK(realloc(p, SIZE_MAX - 4096) == NULL && errno == ENOMEM);
    CHECK(same(p, old, 7)); /* untouched on failure */
    CHECK(realloc(p, 0) == NULL); /* frees, returns NULL (glibc behaviour) */
    unsigned char *q = reallocarray(NULL, 10, 10);
    CHECK(q);
    fill(q, 100, 3);
    q = reallocarray(q, 100, 10);
    CHECK(q && same(q, 100, 3));
    errno = 0;
    CHECK(reallocarray(q, SIZE_MAX / 4, 8) == NULL && errno == ENOMEM);
    free(q);
    puts("realloc/reallocarray: ok");
}

static void test_aligned(void) {
    long page = sysconf(_SC_PAGESIZE);
    for (size_t a = sizeof(void *); a <= (8u << 20); a *= 2) {
        void *p = NULL;
        CHECK(posix_memalign(&p, a, 100) == 0 && p && aligned(p, a));
        memset(p, 1, 100);
        free(p);
        p = aligned_alloc(a, 3 * a);
        CHECK(p && aligned(p, a));
        free(p);
        p = memalign(a, 1);
        CHECK(p && aligned(p, a));
        free(p);
    }
    void *p = (void *)1;
    CHECK(posix_memalign(&p, 24, 8) == EINVAL && p == (void *)1);
    CHECK(posix_memalign(&p, 4, 8) == EINVAL);
    CHECK(posix_memalign(&p, 0, 8) == EINVAL);
    CHECK(posix_memalign(&p, 64, 0) == 0 && p);
    free(p);
    if (getenv("EXPECT_ARENA")) {
        /* C11/C17 and glibc >= 2.38; older glibc rounds the alignment up instead. */
        errno = 0;
        CHECK(aligned_alloc(3, 10) == NULL && errno == EINVAL);
        errno = 0;
        CHECK(aligned_alloc(0, 10) == NULL && errno == EINVAL);
    }
    p = memalign(24, 10); /* rounded up to 32, as glibc does */
    CHECK(p && aligned(p, 32));
    free(p);
    p = valloc(10);
    CHECK(p && aligned(p, (size_t)page));
    free(p);
    p = pvalloc(10);
    CHECK(p && aligned(p, (size_t)page) && malloc_usable_size(p) >= (size_t)page);
    free(p);
    errno = 0;
    CHECK(pvalloc(SIZE_MAX - 10) == NULL && errno == ENOMEM);
    puts("posix_memalign/aligned_alloc/memalign/valloc/pvalloc: ok");
}

/* glibc's internal names, exported by glibc and by arena-alloc (not declared in headers). */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);
/* cfree: glibc keeps it only as a compat symbol (not linkable), so it is looked up. */
static void (*cfree_fn)(void *);
static void cfree(void *p) {
    if (cfree_fn) cfree_fn(p);
    else free(p);
}

static void test_libc_names(void) {
    long page = sysconf(_SC_PAGESIZE);
    cfree_fn = (void (*)(void *))dlsym(RTLD_DEFAULT, "cfree");
    if (getenv("EXPECT_ARENA")) CHECK(cfree_fn);
    /* Every mix of the two families. */
    for (int round = 0; round < 2; round++) {
        size_t n = round ? 300000 : 100; /* small and huge blocks */
        unsigned char *p = __libc_malloc(n);
        CHECK(p && aligned(p, 16));
        fill(p, n, 1);
        free(p);
        p = malloc(n);
        CHECK(p);
        __libc_free(p);
        p = __libc_calloc(n, 1);
        CHECK(p);
        for (size_t i = 0; i < n; i++) CHECK(p[i] == 0);
        fill(p, n, 2);
        p = realloc(p, 2 * n);
        CHECK(p && same(p, n, 2));
        p = __libc_realloc(p, n / 2);
        CHECK(p && same(p, n / 2, 2));
        cfree(p);
        p = __libc_memalign(4096, n);
        CHECK(p && aligned(p, 4096));
        p = __libc_realloc(p, n + 1);
        CHECK(p && aligned(p, 16));
        free(p);
        p = __libc_valloc(n);
        CHECK(p && aligned(p, (size_t)page));
        __libc_free(p);
        p = __libc_pvalloc(n);
        CHECK(p && aligned(p, (size_t)page) && malloc_usable_size(p) >= n);
        free(p);
    }
    errno = 0;
    CHECK(__libc_malloc(SIZE_MAX - 4096) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(__libc_calloc(SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
    __libc_free(NULL);
    cfree(NULL);
    /* C23 free_sized / free_aligned_sized: glibc 2.36 has neither, so look them up. */
    void (*fs)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
    void (*fas)(void *, size_t, size_t) =
        (void (*)(void *, size_t, size_t))dlsym(RTLD_DEFAULT, "free_aligned_sized");
    if (getenv("EXPECT_ARENA")) CHECK(fs && fas);
    if (fs && fas) {
        for (size_t n = 1; n < 3000000; n = n * 7 + 5) {
            void *p = malloc(n);
            CHECK(p);
            fs(p, n);
            p = aligned_alloc(256, n);
            CHECK(p && aligned(p, 256));
            fas(p, 256, n);
        }
        fs(NULL, 0);
        fas(NULL, 64, 0);
    }
    puts("__libc_* / cfree / free_sized: ok");
}

/* Bytes in live blocks as mallinfo2 reports them (heap and mmapped). */
static size_t in_use(void) {
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

static void test_introspection(void) {
    enum { N = 6000, SZ = 1000 };
    static void *blocks[N];
    size_t before = in_use();
    struct mallinfo old = mallinfo();
    for (int i = 0; i < N; i++) {
        blocks[i] = malloc(SZ);
        CHECK(blocks[i]);
        memset(blocks[i], i, SZ);
    }
    size_t during = in_use();
    CHECK(during >= before + (size_t)N * SZ); /* 6 MB live must show */
    CHECK(during < before + (size_t)N * SZ * 2);
    struct mallinfo2 m2 = mallinfo2();
    CHECK(m2.arena + m2.hblkhd >= m2.uordblks);
    struct mallinfo m = mallinfo();
    CHECK((size_t)m.uordblks + (size_t)m.hblkhd >= (size_t)old.uordblks + (size_t)N * SZ);
    for (int i = 0; i < N; i++) free(blocks[i]);
    CHECK(in_use() < during - (size_t)N * SZ / 2);
    int t = malloc_trim(0);
    CHECK(t == 0 || t == 1);
    if (getenv("EXPECT_ARENA")) CHECK(t == 1); /* 6 MB of emptied pages were released */

    /* mallopt: accepted, and the mmap threshold is honoured (by glibc too). */
    CHECK(mallopt(M_MMAP_THRESHOLD, 256 * 1024) == 1);
    size_t hb = mallinfo2().hblks;
    void *big = malloc(1 << 20);
    CHECK(big);
    CHECK(mallinfo2().hblks == hb + 1 && mallinfo2().hblkhd >= (1 << 20));
    free(big);
    CHECK(mallinfo2().hblks == hb);
    CHECK(mallopt(M_TRIM_THRESHOLD, 64 << 20) == 1);
    CHECK(mallopt(M_TOP_PAD, 1 << 16) == 1);
    CHECK(mallopt(M_MMAP_MAX, 65536) == 1);
    CHECK(mallopt(M_ARENA_MAX, 4) == 1);
    if (getenv("EXPECT_ARENA")) CHECK(mallopt(12345, 1) == 1);
    CHECK(mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1);

    /* malloc_stats writes per-arena figures to stderr. */
    char path[] = "/tmp/capi_test_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    int saved = dup(2);
    void *live = malloc(100);
    fflush(stderr);
    CHECK(dup2(fd, 2) == 2);
    malloc_stats();
    fflush(stderr);
    CHECK(dup2(saved, 2) == 2);
    close(saved);
    free(live);
    char text[16384];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    CHECK(n > 0);
    text[n] = 0;
    CHECK(strstr(text, "Arena ") && strstr(text, "in use bytes") && strstr(text, "Total"));

    /* malloc_info writes well-formed XML; options other than 0 are EINVAL. */
    FILE *f = tmpfile();
    CHECK(f);
    CHECK(malloc_info(1, f) == EINVAL);
    CHECK(malloc_info(0, f) == 0);
    long len = ftell(f);
    CHECK(len > 0 && len < (long)sizeof text);
    rewind(f);
    CHECK(fread(text, 1, (size_t)len, f) == (size_t)len);
    text[len] = 0;
    fclose(f);
    CHECK(strncmp(text, "<malloc version=\"1\"", 19) == 0);
    /* Tags nest, every attribute value is quoted, no stray '<' or '&'. */
    const char *stack[64];
    size_t lens[64];
    int depth = 0;
    for (const char *c = text; *c;) {
        if (*c != '<') {
            CHECK(*c != '>' && *c != '&');
            c++;
            continue;
        }
        const char *end = strchr(c, '>');
        CHECK(end);
        int closing = c[1] == '/';
        int empty = end[-1] == '/';
        const char *name = c + 1 + closing;
        size_t nl = strcspn(name, " />");
        CHECK(nl > 0);
        for (const char *q = name + nl; q < end - empty; q++) {
            if (*q == '=') {
                CHECK(q[1] == '"');
                const char *close = strchr(q + 2, '"');
                CHECK(close && close < end);
                q = close;
            } else {
                CHECK(*q != '<' && *q != '"');
            }
        }
        if (closing) {
            CHECK(depth > 0 && lens[depth - 1] == nl && strncmp(stack[depth - 1], name, nl) == 0);
            depth--;
        } else if (!empty) {
            CHECK(depth < 64);
            stack[depth] = name;
            lens[depth] = nl;
            depth++;
        }
        c = end + 1;
    }
    CHECK(depth == 0);
    if (getenv("MALLOC_INFO_OUT")) { /* for an external XML parser in CI */
        FILE *o = fopen(getenv("MALLOC_INFO_OUT"), "w");
        CHECK(o && malloc_info(0, o) == 0);
        fclose(o);
    }
    close(fd);
    unlink(path);
    puts("mallinfo/mallinfo2/mallopt/malloc_trim/malloc_stats/malloc_info: ok");
}

#define THREADS 8
#define PER 20000
static void *slots[THREADS][64];

static void *worker(void *arg) {
    long t = (long)arg;
    unsigned x = (unsigned)t * 2654435761u + 1;
    for (int i = 0; i < PER; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        int s = (int)(x % 64);
        /* free whatever the neighbour left: cross-thread frees */
        long victim = (t + 1) % THREADS;
        void *old = __atomic_exchange_n(&slots[victim][s], NULL, __ATOMIC_ACQ_REL);
        free(old);
        size_t n = 1 + x % 3000;
        unsigned char *p = malloc(n);
        CHECK(p);
        fill(p, n < 16 ? n : 16, (unsigned char)n);
        p = realloc(p, n + 7);
        CHECK(p && same(p, n < 16 ? n : 16, (unsigned char)n));
        old = __atomic_exchange_n(&slots[t][s], p, __ATOMIC_ACQ_REL);
        free(old);
    }
    return NULL;
}

static void test_threads_and_fork(void) {
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, worker, (void *)t) == 0);
    for (int k = 0; k < 5; k++) {
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            alarm(20);
            for (int i = 0; i < 10000; i++) free(malloc((size_t)i % 5000 + 1));
            void *big = malloc(10u << 20);
            _exit(big ? 0 : 3);
        }
        int st = 0;
        CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    for (int t = 0; t < THREADS; t++) CHECK(pthread_join(th[t], NULL) == 0);
    for (int t = 0; t < THREADS; t++)
        for (int s = 0; s < 64; s++) free(slots[t][s]);
    puts("threads/fork: ok");
}

int main(void) {
    if (getenv("EXPECT_ARENA")) {
        void *p = malloc(1);
        /* glibc's minimum chunk gives 24 usable bytes; arena-alloc's smallest class 16 */
        CHECK(malloc_usable_size(p) == 16);
        free(p);
    }
    test_malloc_free();
    test_calloc();
    test_realloc();
    test_aligned();
    test_libc_names();
    test_introspection();
    test_threads_and_fork();
    puts("all ok");
    return 0;
}
