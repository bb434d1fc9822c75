// C++ operator new / delete under LD_PRELOAD=libarena_alloc.so (and without it: the same
// output). Checks every form: results, alignment, that a failed `new` calls the installed
// new_handler and then throws std::bad_alloc, and that the nothrow forms return null.
// With EXPECT_ARENA=1 it also requires that `operator new` and `operator delete` are
// arena-alloc's (dladdr names the library that defines them) and that mallinfo2 sees the
// blocks `new` hands out.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <malloc.h>
#include <new>
#include <vector>

static int failures = 0;
#define CHECK(c)                                                                            \
    do {                                                                                    \
        if (!(c)) {                                                                         \
            std::fprintf(stderr, "cxx_test: check failed at line %d: %s\n", __LINE__, #c); \
            failures++;                                                                     \
        }                                                                                   \
    } while (0)

static int handler_calls = 0;
static void handler() {
    handler_calls++;
    std::set_new_handler(nullptr); // the next failure throws
}

struct alignas(256) Wide {
    unsigned char bytes[256];
};

static bool defined_by_arena(const char *sym) {
    void *f = dlsym(RTLD_DEFAULT, sym);
    Dl_info info;
    return f && dladdr(f, &info) && info.dli_fname && std::strstr(info.dli_fname, "arena_alloc");
}

int main() {
    const bool arena = std::getenv("EXPECT_ARENA") != nullptr;
    if (arena) {
        const char *syms[] = {"_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnwmSt11align_val_t",
                              "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdlPvSt11align_val_t"};
        for (const char *s : syms) {
            if (!defined_by_arena(s)) {
                std::fprintf(stderr, "cxx_test: %s is not arena-alloc's\n", s);
                failures++;
            }
        }
    }

    // Every size to 4 KiB, plain and array forms, written and freed (sized and unsized).
    unsigned long sum = 0;
    for (std::size_t n = 0; n <= 4096; n++) {
        char *p = static_cast<char *>(::operator new(n));
        CHECK(reinterpret_cast<std::uintptr_t>(p) % 16 == 0);
        std::memset(p, 0x5a, n);
        char *q = new char[n + 1];
        q[n] = static_cast<char>(n);
        sum += static_cast<unsigned char>(q[n]);
        if (n % 2) {
            ::operator delete(p, n);
        } else {
            ::operator delete(p);
        }
        delete[] q;
    }
    std::printf("sizes: %lu\n", sum);

    // Aligned forms, to well beyond a page.
    for (std::size_t a = 16; a <= (1u << 20); a *= 2) {
        void *p = ::operator new(a + 8, std::align_val_t(a));
        CHECK(reinterpret_cast<std::uintptr_t>(p) % a == 0);
        std::memset(p, 1, a + 8);
        ::operator delete(p, std::align_val_t(a));
        void *q = ::operator new[](24, std::align_val_t(a), std::nothrow);
        CHECK(q && reinterpret_cast<std::uintptr_t>(q) % a == 0);
        ::operator delete[](q, std::align_val_t(a));
    }
    Wide *w = new Wide[3];
    CHECK(reinterpret_cast<std::uintptr_t>(w) % 256 == 0);
    delete[] w;
    std::printf("aligned: ok\n");

    // Containers: a realistic mix.
    std::vector<std::vector<int>> vv;
    for (int i = 0; i < 2000; i++) vv.emplace_back(static_cast<std::size_t>(i % 97), i);
    long total = 0;
    for (auto &v : vv) for (int x : v) total += x;
    std::printf("vectors: %ld\n", total);

    if (arena) {
        struct mallinfo2 before = mallinfo2();
        std::vector<char *> keep;
        for (int i = 0; i < 1000; i++) keep.push_back(new char[1000]);
        struct mallinfo2 after = mallinfo2();
        CHECK(after.uordblks >= before.uordblks + 1000 * 1000);
        for (char *p : keep) delete[] p;
    }

    // Out of memory: the handler runs once, then std::bad_alloc.
    std::set_new_handler(handler);
    bool threw = false;
    try {
        void *volatile p = ::operator new(SIZE_MAX / 2);
        ::operator delete(p);
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    CHECK(threw);
    CHECK(handler_calls == 1);
    threw = false;
    try {
        void *volatile p = ::operator new[](SIZE_MAX / 2, std::align_val_t(64));
        ::operator delete[](p, std::align_val_t(64));
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    CHECK(threw);
    CHECK(::operator new(SIZE_MAX / 2, std::nothrow) == nullptr);
    CHECK(::operator new[](SIZE_MAX / 2, std::nothrow) == nullptr);
    CHECK(::operator new(SIZE_MAX / 2, std::align_val_t(128), std::nothrow) == nullptr);
    std::printf("out of memory: handler %d, bad_alloc\n", handler_calls);

    if (failures) {
        std::fprintf(stderr, "cxx_test: %d failures\n", failures);
        return 1;
    }
    std::printf("cxx_test: all checks passed\n");
    return 0;
}
