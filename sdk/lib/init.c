/*
 * init.c - C side of startup: thread-local data, argc/argv, the split
 * between hart 0 (main) and the other harts (thread_entry), and the weak
 * defaults programs may override (nanopu_ncores, thread_entry, handle_trap).
 */
#include <nanopu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef NCORES
#define NCORES 4
#endif

__attribute__((weak)) const int nanopu_ncores = NCORES;

int main(int argc, char **argv);

extern char _tdata_begin[], _tdata_end[], _tbss_end[];

static void init_tls(void)
{
    char *tp;
    __asm__ volatile ("mv %0, tp" : "=r"(tp));
    size_t tdata = (size_t)(_tdata_end - _tdata_begin);
    size_t tbss = (size_t)(_tbss_end - _tdata_end);
    memcpy(tp, _tdata_begin, tdata);
    memset(tp + tdata, 0, tbss);
}

static void __attribute__((noreturn)) park(void)
{
    for (;;)
        __asm__ volatile ("wfi");
}

__attribute__((weak)) void thread_entry(int cid, int nc)
{
    (void)cid;
    (void)nc;
    park();
}

static const char *cause_name(uintptr_t cause)
{
    if (cause & MCAUSE_INTERRUPT) {
        switch (cause & 0xff) {
        case 3: return "machine software interrupt";
        case 7: return "machine timer interrupt";
        case 11: return "machine external interrupt";
        case LNIC_IRQ: return "nanoPU scheduler interrupt";
        default: return "interrupt";
        }
    }
    switch (cause) {
    case CAUSE_MISALIGNED_FETCH: return "misaligned fetch";
    case CAUSE_FETCH_ACCESS: return "fetch access fault";
    case CAUSE_ILLEGAL_INSTRUCTION: return "illegal instruction";
    case CAUSE_BREAKPOINT: return "breakpoint";
    case CAUSE_MISALIGNED_LOAD: return "misaligned load";
    case CAUSE_LOAD_ACCESS: return "load access fault";
    case CAUSE_MISALIGNED_STORE: return "misaligned store/AMO";
    case CAUSE_STORE_ACCESS: return "store/AMO access fault";
    case 8: return "ecall from U-mode";
    case 9: return "ecall from S-mode";
    case CAUSE_MACHINE_ECALL: return "ecall from M-mode";
    default: return "exception";
    }
}

__attribute__((weak)) uintptr_t handle_trap(uintptr_t cause, uintptr_t epc, uintptr_t regs[32])
{
    (void)regs;
    unsigned long tval = read_csr(mtval);
    printf("*** unhandled trap on hart %lu: mcause=0x%lx (%s) mepc=0x%lx mtval=0x%lx\n",
           nanopu_hartid(), (unsigned long)cause, cause_name(cause),
           (unsigned long)epc, tval);
    exit(128 + (int)(cause & 0xff));
}

void nanopu_barrier_wait(nanopu_barrier_t *b, int n)
{
    int sense = b->sense;
    if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == n) {
        b->count = 0;
        __atomic_store_n(&b->sense, !sense, __ATOMIC_RELEASE);
    } else {
        while (__atomic_load_n(&b->sense, __ATOMIC_ACQUIRE) == sense)
            ;
    }
}

/* Buffer for SYS_getmainvars: argc, argv[], NULL, envp NULL, strings. */
static uint64_t mainvars[64] __attribute__((aligned(64)));

static int get_main_vars(char ***argv)
{
#ifdef NANOPU_NO_MAINVARS
    long r = -1;
#else
    long r = htif_syscall(SYS_getmainvars, (long)(uintptr_t)mainvars, (long)sizeof(mainvars), 0);
#endif
    if (r != 0 || mainvars[0] >= sizeof(mainvars) / sizeof(mainvars[0]) - 2) {
        mainvars[0] = 0;
        mainvars[1] = 0;
        mainvars[2] = 0;
    }
    *argv = (char **)&mainvars[1];
    return (int)mainvars[0];
}

void __attribute__((noreturn)) _init(int cid, int nc)
{
    init_tls();
    if (cid >= nc)
        park();
    if (cid == 0) {
        char **argv;
        int argc = get_main_vars(&argv);
        exit(main(argc, argv));
    }
    thread_entry(cid, nc);
    park();
}
