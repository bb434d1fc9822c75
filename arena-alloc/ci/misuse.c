/* One misuse of free per run, named by argv[1]; real_programs.sh runs each case under
 * LD_PRELOAD=libarena_alloc.so and expects SIGABRT and one "arena-alloc: free(): ..." line
 * on stderr. If the allocator lets the misuse pass, the program prints the next blocks it
 * hands out (showing the overlap) and exits 0, which the script reports as a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    if (!strcmp(c, "huge-double")) {
        char *p = malloc(1 << 20);
        free(p);
        free(p);
    } else if (!strcmp(c, "huge-interior")) {
        char *p = malloc(1 << 20);
        free(p + 16);
    } else if (!strcmp(c, "direct-double")) {
        char *p = malloc(200u << 20); /* beyond the largest span: a mapping of its own */
        free(p);
        free(p);
    } else if (!strcmp(c, "small-interior-64")) {
        char *p = malloc(64);
        free(p + 16);
    } else if (!strcmp(c, "small-interior-48")) {
        char *p = malloc(48);
        free(p + 16);
    } else if (!strcmp(c, "small-interior-2k")) {
        char *p = malloc(2000); /* a class served by the arena, not the thread cache */
        free(p + 1024);
    } else if (!strcmp(c, "medium-interior-10k")) {
        /* 10 KiB gets a 16 KiB block: 10 KiB in is where the old 10 KiB class's next
           block started */
        char *p = malloc(10 * 1024);
        free(p + 10 * 1024);
    } else if (!strncmp(c, "double-", 7)) {
        /* double-<how>-<size>: a double free of a block of <size> bytes, at once ("now"),
           after another block of its size was freed ("later"), or after the thread's cache
           went back to the arenas ("flushed": malloc_trim does that first) */
        const char *how = c + 7, *dash = strrchr(c, '-');
        size_t size = strtoul(dash + 1, NULL, 10);
        char *p = malloc(size);
        free(p);
        if (!strncmp(how, "later", 5)) free(malloc(size));
        else if (!strncmp(how, "flushed", 7)) malloc_trim(0);
        free(p);
    } else if (!strcmp(c, "unmapped-double")) {
        /* 8,000 blocks of 8 KiB fill 16 small segments; freed and trimmed, all but a few
           are unmapped (the middle one among them), and the second free reads what is
           left of it */
        enum { N = 8000 };
        static char *v[N];
        for (int i = 0; i < N; i++) v[i] = malloc(8192);
        for (int i = 0; i < N; i++) free(v[i]);
        malloc_trim(0);
        free(v[N / 2]);
    } else if (!strcmp(c, "medium-double")) {
        char *p = malloc(20 * 1024);
        free(p);
        free(p);
    } else if (!strcmp(c, "small-double")) {
        char *p = malloc(64);
        free(p);
        free(p);
    } else if (!strcmp(c, "valid")) {
        size_t sizes[] = {48, 64, 2000, 10 * 1024, 20 * 1024, 1 << 20, 200u << 20};
        for (int i = 0; i < 7; i++) free(malloc(sizes[i]));
        puts("valid: ok");
        return 0;
    } else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    void *a = malloc(64), *b = malloc(64), *d = malloc(1 << 20), *e = malloc(1 << 20);
    printf("ACCEPTED %s: next blocks %p %p %p %p\n", c, a, b, d, e);
    return 0;
}
