/*
 * traps: exercises the SDK trap path with its own handle_trap.
 *   1. c.unimp (16-bit 0x0000)            -> mcause 2, mepc = its address
 *   2. unimp (32-bit csrrw x0, cycle, x0) -> mcause 2
 *   3. ecall                               -> mcause 11; the handler sets a0 = 42
 *   4. ebreak                              -> mcause 3
 *   5. misaligned ld                       -> mcause 4 and mtval = address, or
 *                                            the correct value (both accepted)
 *   6. misaligned sd                       -> mcause 6, or stored correctly
 *   7. CLINT timer interrupt: mtimecmp = mtime + a few ticks, MTIE + MIE,
 *      wfi until it fires                  -> mcause 0x8000000000000007
 * The handler returns mepc + the trapping instruction's length (2 or 4).
 * Exit: 0 ok, else the number of the failing step.
 */
#include <nanopu.h>
#include <stdio.h>
#include <stdlib.h>

static volatile uintptr_t last_cause, last_epc, last_tval;
static volatile int traps_taken;
static volatile int timer_fired;

uintptr_t handle_trap(uintptr_t cause, uintptr_t epc, uintptr_t regs[32])
{
    last_cause = cause;
    last_epc = epc;
    last_tval = read_csr(mtval);
    traps_taken++;
    if (cause == MCAUSE_MTIMER_IRQ) {
        clint_set_mtimecmp(nanopu_hartid(), ~0ULL); /* quiet the timer */
        clear_csr(mie, MIP_MTIP);
        timer_fired = 1;
        return epc; /* interrupts resume at the interrupted instruction */
    }
    if (cause & MCAUSE_INTERRUPT) {
        printf("traps: unexpected interrupt 0x%lx\n", (unsigned long)cause);
        exit(100);
    }
    if (cause == CAUSE_MACHINE_ECALL)
        regs[10] = 42; /* a0: the frame is restored on return */
    uint16_t low = *(volatile uint16_t *)epc;
    return epc + ((low & 3) == 3 ? 4 : 2);
}

static int expect(int step, const char *what, uintptr_t cause, uintptr_t epc, int before)
{
    int ok = traps_taken == before + 1 && last_cause == cause && last_epc == epc;
    printf("traps: %-26s mcause=%lu mepc=%s mtval=0x%lx %s\n", what, (unsigned long)last_cause,
           last_epc == epc ? "ok" : "WRONG", (unsigned long)last_tval, ok ? "ok" : "FAIL");
    if (!ok) {
        printf("traps: step %d: want cause %lu at 0x%lx, got %d trap(s), cause %lu at 0x%lx\n", step,
               (unsigned long)cause, (unsigned long)epc, traps_taken - before,
               (unsigned long)last_cause, (unsigned long)last_epc);
        exit(step);
    }
    return 0;
}

int main(void)
{
    uintptr_t at;
    int before;

    /* 1. c.unimp */
    before = traps_taken;
    __asm__ volatile (".option push\n.option rvc\n"
                      "lla %0, 1f\n"
                      "1: .2byte 0x0000\n"
                      ".option pop" : "=&r"(at) :: "memory");
    expect(1, "illegal (c.unimp)", CAUSE_ILLEGAL_INSTRUCTION, at, before);

    /* 2. 32-bit unimp: write to the read-only cycle CSR */
    before = traps_taken;
    __asm__ volatile ("lla %0, 1f\n"
                      "1: .4byte 0xc0001073" : "=&r"(at) :: "memory");
    expect(2, "illegal (unimp, 32-bit)", CAUSE_ILLEGAL_INSTRUCTION, at, before);
    if (last_tval != 0 && last_tval != 0xc0001073)
        printf("traps: note: mtval 0x%lx is neither 0 nor the instruction\n", (unsigned long)last_tval);

    /* 3. ecall: the handler's a0 = 42 must reach us */
    before = traps_taken;
    uintptr_t a0;
    __asm__ volatile ("li a0, 7\n"
                      "lla %0, 1f\n"
                      "1: ecall\n"
                      "mv %1, a0" : "=&r"(at), "=&r"(a0) :: "a0", "memory");
    expect(3, "ecall", CAUSE_MACHINE_ECALL, at, before);
    if (a0 != 42) {
        printf("traps: FAIL ecall: a0 = %lu after the handler set 42\n", (unsigned long)a0);
        return 3;
    }

    /* 4. ebreak (may be assembled as c.ebreak) */
    before = traps_taken;
    __asm__ volatile ("lla %0, 1f\n"
                      "1: ebreak" : "=&r"(at) :: "memory");
    expect(4, "ebreak", CAUSE_BREAKPOINT, at, before);

    /* 5. misaligned load */
    static volatile uint64_t buf[3] = { 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL, 0 };
    uintptr_t addr = (uintptr_t)buf + 3;
    uint64_t val;
    before = traps_taken;
    __asm__ volatile ("li %1, -1\n"
                      "lla %0, 1f\n"
                      "1: ld %1, 0(%2)" : "=&r"(at), "=&r"(val) : "r"(addr) : "memory");
    if (traps_taken == before) {
        if (val != 0x0a09080706050403ULL) {
            printf("traps: FAIL misaligned ld returned 0x%llx without trapping\n", (unsigned long long)val);
            return 5;
        }
        printf("traps: %-26s handled in hardware, value ok\n", "misaligned load");
    } else {
        expect(5, "misaligned load (trapped)", CAUSE_MISALIGNED_LOAD, at, before);
        if (last_tval != addr)
            printf("traps: note: mtval 0x%lx is not the address 0x%lx\n", (unsigned long)last_tval,
                   (unsigned long)addr);
    }

    /* 6. misaligned store */
    before = traps_taken;
    __asm__ volatile ("lla %0, 1f\n"
                      "1: sd %1, 0(%2)" : "=&r"(at) : "r"(0x1122334455667788ULL), "r"((uintptr_t)buf + 9)
                      : "memory");
    if (traps_taken == before) {
        uint64_t w1 = buf[1], w2 = buf[2];
        if (w1 != 0x2233445566778808ULL || w2 != 0x11) {
            printf("traps: FAIL misaligned sd stored %016llx %016llx\n", (unsigned long long)w1,
                   (unsigned long long)w2);
            return 6;
        }
        printf("traps: %-26s handled in hardware, value ok\n", "misaligned store");
    } else {
        expect(6, "misaligned store (trapped)", CAUSE_MISALIGNED_STORE, at, before);
    }

    /* 7. timer interrupt */
    before = traps_taken;
    unsigned long hart = nanopu_hartid();
    uint64_t now = clint_mtime();
    clint_set_mtimecmp(hart, now + 20);
    set_csr(mie, MIP_MTIP);
    set_csr(mstatus, MSTATUS_MIE);
    long waits = 0;
    while (!timer_fired) {
        __asm__ volatile ("wfi");
        waits++;
    }
    clear_csr(mstatus, MSTATUS_MIE);
    uint64_t later = clint_mtime();
    int ok = traps_taken == before + 1 && last_cause == MCAUSE_MTIMER_IRQ;
    printf("traps: %-26s mcause=0x%lx after %lu ticks, %ld wfi %s\n",
           "timer interrupt", (unsigned long)last_cause, (unsigned long)(later - now), waits, ok ? "ok" : "FAIL");
    if (!ok)
        return 7;
    if (later - now < 20) {
        printf("traps: FAIL timer fired after %lu ticks, before mtimecmp\n", (unsigned long)(later - now));
        return 7;
    }

    printf("traps: OK (%d traps)\n", traps_taken);
    return 0;
}
