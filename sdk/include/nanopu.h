/*
 * nanopu.h - the nanoPU hardware/software interface for guest programs.
 *
 * Follows shared/reference/nanopu-abi.md: x30 is netRX (every read pops one
 * 8-byte word of the running context's receive FIFO), x31 is netTX (every
 * write pushes one word to its transmit FIFO), plus the LNIC CSRs 0x052-0x061.
 *
 * Every lnic_* macro that touches x30/x31 is exactly ONE `asm volatile`
 * instruction, labelled and recorded in the non-allocated ELF section
 * `.nanopu.netregs`; `make check-regs` uses that record to prove that no
 * other instruction of the program reads x30 or writes x31.
 *
 * Programs must be compiled with -ffixed-x30 -ffixed-x31 (the SDK Makefile
 * does this) so that the compiler never uses t5/t6 as temporaries.
 *
 * Usable from C and from assembly (.S files, via __ASSEMBLER__).
 */
#ifndef NANOPU_H
#define NANOPU_H

#ifdef __ASSEMBLER__
#define NANOPU_UL(x) x
#else
#define NANOPU_UL(x) x##UL
#endif

/* ------------------------------------------------------------------ */
/* CSR numbers (nanopu-abi.md, "Control and status registers")         */
/* ------------------------------------------------------------------ */
#define CSR_LMSGSRDY        0x052 /* r:  current context's RX FIFO holds a message */
#define CSR_LCURCONTEXT     0x053 /* rw: context id (layer-4 port) of the running thread */
#define CSR_LNICCMD         0x054 /* w:  nanokernel commands (LNICCMD_*) */
#define CSR_LCURPRIORITY    0x055 /* rw: priority of the running thread (0 = highest) */
#define CSR_LNICUCMD        0x056 /* w:  application commands (LNICUCMD_*) */
#define CSR_LNICRDY         0x057 /* r:  NIC has finished reset */
#define CSR_LTARGETCONTEXT  0x058 /* r:  context the hardware scheduler wants to run next */
#define CSR_LTARGETPRIORITY 0x059 /* r:  its priority */
#define CSR_LMSGCYCLES      0x060 /* rw: priority-0 message processing bound, cycles */
#define CSR_LIDLECYCLES     0x061 /* rw: idle timeout, cycles */

/* Lower-case aliases with the ABI's names, usable as read_csr(lmsgsrdy). */
#define lmsgsrdy        0x052
#define lcurcontext     0x053
#define lniccmd         0x054
#define lcurpriority    0x055
#define lnicucmd        0x056
#define lnicrdy         0x057
#define ltargetcontext  0x058
#define ltargetpriority 0x059
#define lmsgcycles      0x060
#define lidlecycles     0x061

/* lniccmd bits */
#define LNICCMD_INSERT_CONTEXT 1 /* register lcurcontext with priority lcurpriority */
#define LNICCMD_REMOVE_CONTEXT 2 /* remove a context (unimplemented on the prototype) */
#define LNICCMD_RESTART_TIMER  4 /* restart the message-processing timer */
/* lnicucmd bits */
#define LNICUCMD_MSG_DONE 1 /* message processing done */
#define LNICUCMD_IDLE     2 /* application is idle */

/* Application header masks (RX: source, TX: destination). */
#define IP_MASK      NANOPU_UL(0xffffffff00000000)
#define CONTEXT_MASK NANOPU_UL(0x00000000ffff0000)
#define PORT_MASK    CONTEXT_MASK /* the paper's name (Listing 2) */
#define LEN_MASK     NANOPU_UL(0x000000000000ffff)

/* Hardware thread scheduler */
#define LNIC_MAX_CONTEXTS     4      /* MAX_NUM_CONTEXTS per core */
#define LNIC_KERNEL_CONTEXT   0xffff /* context id of the nanokernel */
#define LNIC_IRQ              16     /* machine interrupt number */
#define MIP_LNIC              (NANOPU_UL(1) << 16)
#define MCAUSE_LNIC_IRQ       NANOPU_UL(0x8000000000000010)

/* Standard machine-mode bits used by the SDK */
#define MSTATUS_MIE   NANOPU_UL(0x00000008)
#define MSTATUS_MPIE  NANOPU_UL(0x00000080)
#define MSTATUS_MPP   NANOPU_UL(0x00001800)
#define MSTATUS_FS    NANOPU_UL(0x00006000)
#define MSTATUS_FS_INITIAL NANOPU_UL(0x00002000)
#define MSTATUS_FS_CLEAN   NANOPU_UL(0x00004000)
#define MSTATUS_FS_DIRTY   NANOPU_UL(0x00006000)
#define MIP_MSIP      (NANOPU_UL(1) << 3)
#define MIP_MTIP      (NANOPU_UL(1) << 7)
#define MIP_MEIP      (NANOPU_UL(1) << 11)
#define MCAUSE_INTERRUPT      NANOPU_UL(0x8000000000000000)
#define MCAUSE_MTIMER_IRQ     NANOPU_UL(0x8000000000000007)

/* Exception causes */
#define CAUSE_MISALIGNED_FETCH 0
#define CAUSE_FETCH_ACCESS     1
#define CAUSE_ILLEGAL_INSTRUCTION 2
#define CAUSE_BREAKPOINT       3
#define CAUSE_MISALIGNED_LOAD  4
#define CAUSE_LOAD_ACCESS      5
#define CAUSE_MISALIGNED_STORE 6
#define CAUSE_STORE_ACCESS     7
#define CAUSE_MACHINE_ECALL    11

/* CLINT (nanopu-abi.md, "Timer") */
#define CLINT_BASE        NANOPU_UL(0x2000000)
#define CLINT_MSIP(h)     (CLINT_BASE + NANOPU_UL(4) * (h))
#define CLINT_MTIMECMP(h) (CLINT_BASE + NANOPU_UL(0x4000) + NANOPU_UL(8) * (h))
#define CLINT_MTIME       (CLINT_BASE + NANOPU_UL(0xbff8))
#ifndef NK_MTIME_HZ
#define NK_MTIME_HZ NANOPU_UL(1000000) /* mtime ticks per second: 1 per microsecond (ABI inference) */
#endif

/* The SDK supports up to this many harts (one stack each); programs with
 * more cores (sdk/programs/nb_mica) build their own runtime with it raised. */
#ifndef NANOPU_MAX_HARTS
#define NANOPU_MAX_HARTS 8
#endif
/* Per-hart stack + TLS area, bytes (log2). */
#define NANOPU_STACK_SHIFT 16

#ifdef __ASSEMBLER__

/*
 * NETREG insn, operands... : assemble one instruction that reads x30 and/or
 * writes x31 and record its address for check-regs.  Example:
 *     NETREG mv x31, x30
 */
.macro NETREG insn:vararg
999: \insn
    .pushsection .nanopu.netregs, "", @progbits
    .8byte 999b
    .popsection
.endm

#else /* C */

#include <stdint.h>

#define __nanopu_str2(x) #x
#define __nanopu_str(x) __nanopu_str2(x)

/* CSR access: reg is a number (0x052, CSR_LMSGSRDY, lmsgsrdy) or a standard name. */
#define read_csr(reg) ({ unsigned long __v; \
    __asm__ volatile ("csrr %0, " __nanopu_str(reg) : "=r"(__v)); __v; })
#define write_csr(reg, val) ({ \
    __asm__ volatile ("csrw " __nanopu_str(reg) ", %0" :: "rK"(val)); })
#define swap_csr(reg, val) ({ unsigned long __v; \
    __asm__ volatile ("csrrw %0, " __nanopu_str(reg) ", %1" : "=r"(__v) : "rK"(val)); __v; })
#define set_csr(reg, bits) ({ unsigned long __v; \
    __asm__ volatile ("csrrs %0, " __nanopu_str(reg) ", %1" : "=r"(__v) : "rK"(bits)); __v; })
#define clear_csr(reg, bits) ({ unsigned long __v; \
    __asm__ volatile ("csrrc %0, " __nanopu_str(reg) ", %1" : "=r"(__v) : "rK"(bits)); __v; })

/* Appended to every netRX/netTX instruction: records label 1 for check-regs. */
#define NANOPU_NETREG_MARK \
    "\n\t.pushsection .nanopu.netregs,\"\",@progbits\n\t.8byte 1b\n\t.popsection"

/* ------------------------------------------------------------------ */
/* The lnic_* macros (names from the paper)                            */
/* ------------------------------------------------------------------ */

/* Bind the running thread to context cid with priority prio (csrw 0x053, csrw 0x055, csrwi 0x054 1). */
#define lnic_add_context(cid, prio) do { \
    write_csr(0x053, (unsigned long)(cid)); \
    write_csr(0x055, (unsigned long)(prio)); \
    write_csr(0x054, LNICCMD_INSERT_CONTEXT); } while (0)

/* Non-zero when the running context's RX FIFO holds a message (csrr 0x052). */
#define lnic_has_msg() read_csr(0x052)

/* Wait for a message: poll lmsgsrdy, telling the scheduler we are idle while none is there. */
#define lnic_wait() do { \
    while (read_csr(0x052) == 0) write_csr(0x056, LNICUCMD_IDLE); } while (0)

/* Tell the NIC/scheduler that the current message has been processed (csrwi 0x056, 1). */
#define lnic_msg_done() write_csr(0x056, LNICUCMD_MSG_DONE)

/* Tell the scheduler this thread is idle (csrwi 0x056, 2). */
#define lnic_idle() write_csr(0x056, LNICUCMD_IDLE)

/* Non-zero once the NIC has finished reset (csrr 0x057). */
#define lnic_ready() read_csr(0x057)

/* Restart the message-processing timer (csrwi 0x054, 4). */
#define lnic_restart_timer() write_csr(0x054, LNICCMD_RESTART_TIMER)

/* Pop one word from netRX into a C value (mv %0, x30). */
#define lnic_read() ({ uint64_t __w; \
    __asm__ volatile ("1: mv %0, x30" NANOPU_NETREG_MARK : "=r"(__w)); __w; })

/* Pop one word from netRX and push it to netTX (mv x31, x30). */
#define lnic_copy() \
    __asm__ volatile ("1: mv x31, x30" NANOPU_NETREG_MARK)

/* Push a register value to netTX (mv x31, %0). */
#define lnic_write_r(v) \
    __asm__ volatile ("1: mv x31, %0" NANOPU_NETREG_MARK :: "r"((uint64_t)(v)))

/* Push a constant to netTX (li x31, imm); imm must fit a signed 12-bit immediate
 * so that li is one instruction (a longer li would push several words). */
#define lnic_write_i(imm) \
    __asm__ volatile ("1: li x31, %0" NANOPU_NETREG_MARK :: "I"(imm))

/* Push a 64-bit word loaded from memory to netTX (ld x31, mem); mem is an lvalue. */
#define lnic_write_m(mem) \
    __asm__ volatile ("1: ld x31, %0" NANOPU_NETREG_MARK :: "m"(mem))

/* Pop one word, add a signed 12-bit constant and push the sum (addi x31, x30, imm). */
#define lnic_add_int_i(imm) \
    __asm__ volatile ("1: addi x31, x30, %0" NANOPU_NETREG_MARK :: "I"(imm))

/*
 * lnic_branch(op, val, label): pop one word from netRX and compare it with
 * val using branch op ("beq", "bne", "blt", "bge", "bltu", "bgeu"); jump to the
 * C label `label` when the comparison holds (op x30, val, label).  Exactly one
 * word is popped whether or not the branch is taken.  Example:
 *     lnic_branch("bne", DATA_TYPE, bad_msg);
 */
#define lnic_branch(op, val, label) \
    __asm__ goto ("1: " op " x30, %0, %l[" #label "]" NANOPU_NETREG_MARK \
                  :: "r"((uint64_t)(val)) :: label)

/* Announce readiness: one message with header 8 (0.0.0.0, context 0, 8 bytes) and one word 0. */
#define lnic_boot() do { lnic_write_i(8); lnic_write_i(0); } while (0)

/* ------------------------------------------------------------------ */
/* Cache hints (Zicbop)                                                 */
/* ------------------------------------------------------------------ */

/*
 * nanopu_prefetch_r(p) / _w(p) / _i(p): Zicbop prefetch.r / prefetch.w /
 * prefetch.i of the cache line holding p (any pointer). Hints: they never
 * fault and change no register (architecturally `ori x0, rs1, imm`, with
 * imm[4:0] = 1 / 3 / 0), so they run anywhere; emitted with `.insn` so they
 * assemble under the default -march=rv64gc. On the simulator a prefetch
 * starts a refill into the L1 data cache when the core has a free MSHR
 * ([node.core] l1d_mshrs > 0; the prototype's default 0 ignores them).
 */
#define __nanopu_prefetch(p, kind) \
    __asm__ volatile (".insn i 0x13, 6, x0, %0, " #kind :: "r"(p))
#define nanopu_prefetch_r(p) __nanopu_prefetch(p, 1)
#define nanopu_prefetch_w(p) __nanopu_prefetch(p, 3)
#define nanopu_prefetch_i(p) __nanopu_prefetch(p, 0)

/* ------------------------------------------------------------------ */
/* Application headers                                                  */
/* ------------------------------------------------------------------ */

/* Build a TX header: destination IPv4 address, destination context, length in bytes. */
static inline uint64_t lnic_hdr(uint32_t ip, uint16_t context, uint16_t len_bytes)
{
    return ((uint64_t)ip << 32) | ((uint64_t)context << 16) | (uint64_t)len_bytes;
}
/* Source (RX) or destination (TX) IPv4 address of a header. */
static inline uint32_t lnic_hdr_ip(uint64_t h) { return (uint32_t)(h >> 32); }
/* Source (RX) or destination (TX) context of a header. */
static inline uint16_t lnic_hdr_context(uint64_t h) { return (uint16_t)(h >> 16); }
/* Message length in bytes (payload, excluding the 8-byte header). */
static inline uint16_t lnic_hdr_len(uint64_t h) { return (uint16_t)(h & LEN_MASK); }
/* Number of 8-byte payload words of a message (length rounded up). */
static inline uint32_t lnic_hdr_words(uint64_t h) { return ((uint32_t)lnic_hdr_len(h) + 7) / 8; }
/* TX header answering the sender of RX header rx with a message of len_bytes. */
static inline uint64_t lnic_reply_hdr(uint64_t rx, uint16_t len_bytes)
{
    return (rx & (IP_MASK | CONTEXT_MASK)) | (uint64_t)len_bytes;
}

#include "nanopu_rt.h"

#endif /* __ASSEMBLER__ */
#endif /* NANOPU_H */
