/*
 * nanopu_rt.h - the SDK runtime: startup hooks, traps, HTIF host calls,
 * harts, locks, barriers and the CLINT timer.  Included by nanopu.h.
 */
#ifndef NANOPU_RT_H
#define NANOPU_RT_H

#include "nanopu.h"

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- startup (lib/crt.S, lib/init.c) ------------------------------------ */

/*
 * Number of harts the program expects.  Weak: defaults to NCORES (-DNCORES=...
 * when the SDK is built, default 4).  A program overrides it by defining
 *     const int nanopu_ncores = 2;
 * Harts with mhartid >= nanopu_ncores (or >= NANOPU_MAX_HARTS) are parked in wfi.
 */
extern const int nanopu_ncores;

/* Called on every hart other than 0 (cid = mhartid, nc = nanopu_ncores).
 * The weak default parks the hart (wfi loop). Returning parks the hart too. */
void thread_entry(int cid, int nc);

/* Hart 0 calls main(argc, argv) with the argument list fetched through
 * SYS_getmainvars (argc = 0 if the host gives none); `int main(void)` works too. */

/*
 * Trap handler called by the SDK trap entry with the interrupted program's
 * integer registers (regs[0], regs[30], regs[31] are 0: x30/x31 are network
 * FIFOs and are never saved or restored).  Returns the pc to resume at; may
 * modify regs[1..29], which are restored.  Weak default: print mcause, mepc
 * and mtval and exit(128 + (cause & 0xff)).  Must not use floating point (the
 * trap entry does not save f registers).
 */
uintptr_t handle_trap(uintptr_t cause, uintptr_t epc, uintptr_t regs[32]);

/* The SDK's trap entry (mtvec points here after startup). */
void trap_entry(void);

/* ---- harts ---------------------------------------------------------------- */

static inline unsigned long nanopu_hartid(void)
{
    unsigned long h;
    __asm__ volatile ("csrr %0, mhartid" : "=r"(h));
    return h;
}

static inline uint64_t rdcycle(void)
{
    uint64_t c;
    __asm__ volatile ("csrr %0, mcycle" : "=r"(c));
    return c;
}

static inline uint64_t rdinstret(void)
{
    uint64_t c;
    __asm__ volatile ("csrr %0, minstret" : "=r"(c));
    return c;
}

/* ---- spin locks and barriers (amoswap / amoadd based) --------------------- */

typedef struct { volatile int word; } nanopu_spinlock_t;
#define NANOPU_SPINLOCK_INIT { 0 }

static inline void nanopu_spin_lock(nanopu_spinlock_t *l)
{
    for (;;) {
        if (__atomic_exchange_n(&l->word, 1, __ATOMIC_ACQUIRE) == 0)
            return;
        while (l->word)
            ;
    }
}

static inline int nanopu_spin_trylock(nanopu_spinlock_t *l)
{
    return __atomic_exchange_n(&l->word, 1, __ATOMIC_ACQUIRE) == 0;
}

static inline void nanopu_spin_unlock(nanopu_spinlock_t *l)
{
    __atomic_store_n(&l->word, 0, __ATOMIC_RELEASE);
}

/* Sense-reversing barrier for n participants. Zero-initialise. */
typedef struct { volatile int count; volatile int sense; } nanopu_barrier_t;
void nanopu_barrier_wait(nanopu_barrier_t *b, int n);

/* ---- HTIF host interface (lib/syscalls.c) ---------------------------------- */

#define SYS_read        63
#define SYS_write       64
#define SYS_getmainvars 2011

extern volatile uint64_t tohost;
extern volatile uint64_t fromhost;

/* Perform a host syscall through the shared magic memory block (locked). */
long htif_syscall(long num, long a0, long a1, long a2);
/* Flush this hart's buffered standard output. */
void nanopu_flush(void);
/* Write bytes straight to the host (fd 1), bypassing the line buffer. */
long nanopu_write(const void *buf, size_t len);
/* Read up to len bytes from the host's standard input (SYS_read, fd 0). */
long nanopu_read(void *buf, size_t len);

/* ---- CLINT timer ------------------------------------------------------------ */

static inline uint64_t clint_mtime(void)
{
    return *(volatile uint64_t *)CLINT_MTIME;
}
static inline void clint_set_mtimecmp(unsigned long hart, uint64_t when)
{
    *(volatile uint64_t *)CLINT_MTIMECMP(hart) = when;
}

#ifdef __cplusplus
}
#endif

#endif /* NANOPU_RT_H */
