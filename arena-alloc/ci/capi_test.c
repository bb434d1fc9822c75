/* Exercises every export of libarena_alloc.so with C semantics. Prints the same lines with
 * or without LD_PRELOAD; exits non-zero on the first failed check. With EXPECT_ARENA=1 it
 * also checks that the preloaded allocator is the one answering (16-byte minimum block). */
#define _GNU_SOURCE
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
    test_threads_and_fork();
    puts("all ok");
    return 0;
}
