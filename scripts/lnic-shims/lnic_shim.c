/* What the prototype's C++ programs (tests-lnic/lnic-multi-core-mica.cc)
 * take from the RISC-V newlib toolchain they were built with, and neither
 * the artifact's syscalls.c nor picolibc provides: sbrk_init and sbrk for
 * malloc's heap, and the constructor and destructor arrays' walkers.
 * scripts/build-lnic-tests.sh links it in; the prototype's code is not
 * changed. */
#include <stddef.h>

extern char _end[];
static char *brk_cur;

/* The program calls this first with the heap's start (past the cores'
 * thread-local areas). */
void sbrk_init(long *init) { brk_cur = (char *)init; }

void *sbrk(ptrdiff_t inc) {
    if (!brk_cur)
        brk_cur = _end;
    char *old = brk_cur;
    brk_cur += inc;
    return old;
}

typedef void (*fn)(void);
/* Defined by init_array.ld; weak so a program without either array links. */
extern fn __init_array_start[] __attribute__((weak));
extern fn __init_array_end[] __attribute__((weak));
extern fn __fini_array_start[] __attribute__((weak));
extern fn __fini_array_end[] __attribute__((weak));

void __libc_init_array(void) {
    for (fn *f = __init_array_start; f && f < __init_array_end; f++)
        (*f)();
}

void __libc_fini_array(void) {
    for (fn *f = __fini_array_end; f && f > __fini_array_start; f--)
        (*(f - 1))();
}
