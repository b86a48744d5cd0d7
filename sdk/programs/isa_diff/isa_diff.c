/*
 * isa_diff: differential test of RV64IMAFDC + Zicsr (user-visible parts).
 *
 * Executes, through inline asm, every RV64I/M/A and F/D computational
 * instruction (plus loads/stores, branches, jumps, lui/auipc, fences, a set
 * of compressed forms and the FP CSRs) on a fixed list of edge-case operands
 * and on values from a fixed-seed PRNG, with each static rounding mode where
 * one applies and with every dynamic mode set through frm.  After every FP
 * instruction fflags is read and cleared.  One line per case:
 *
 *     mnemonic rm operands -> result flags
 *
 * in hex (rm and flags are "-" for integer instructions; single-precision
 * operands print as 8 digits, every result as the full 64-bit register, so
 * NaN boxing is visible).  The last lines give the case count and an FNV-1a
 * hash of everything printed before.
 *
 * Builds unchanged for the SDK (bare metal) and for Linux (glibc, run with
 * qemu-riscv64): on correct implementations both print byte-identical output.
 * No address, time or counter value is ever printed.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* output: a private buffer written with fwrite in large chunks        */
/* ------------------------------------------------------------------ */
static char obuf[8192];
static size_t olen;
static uint64_t ohash = 0xcbf29ce484222325ULL;
static unsigned long ncases;

static void out_flush(void)
{
    fwrite(obuf, 1, olen, stdout);
    olen = 0;
}
static void out_c(char c)
{
    obuf[olen++] = c;
    ohash = (ohash ^ (unsigned char)c) * 0x100000001b3ULL;
}
static void out_s(const char *s)
{
    while (*s)
        out_c(*s++);
}
static void out_hex(uint64_t v, int digits)
{
    for (int i = digits - 1; i >= 0; i--)
        out_c("0123456789abcdef"[(v >> (4 * i)) & 15]);
}
static void out_end(void)
{
    out_c('\n');
    ncases++;
    if (olen > sizeof(obuf) - 256)
        out_flush();
}

/* operand widths */
enum { W8 = 8, W16 = 16 };

/* "mn rm a [b [c]] -> r flags" */
static void line(const char *mn, const char *rm, int n, const uint64_t *ops, int w,
                 uint64_t r, int flags)
{
    out_s(mn);
    out_c(' ');
    out_s(rm);
    for (int i = 0; i < n; i++) {
        out_c(' ');
        out_hex(ops[i], w);
    }
    out_s(" -> ");
    out_hex(r, 16);
    out_c(' ');
    if (flags < 0)
        out_c('-');
    else
        out_hex((uint64_t)flags, 2);
    out_end();
}

/* ------------------------------------------------------------------ */
/* PRNG (xorshift64*, fixed seed)                                       */
/* ------------------------------------------------------------------ */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dULL;
}

/* ------------------------------------------------------------------ */
/* operand lists                                                        */
/* ------------------------------------------------------------------ */
#define NINT_EDGE 12
#define NINT_RAND 16
#define NINT (NINT_EDGE + NINT_RAND)
static uint64_t ints[NINT] = {
    0, 1, 0xffffffffffffffffULL /* -1 */, 2, 31, 63,
    0x7fffffffULL, 0x80000000ULL /* 2^31 */, 0xffffffffULL, 0xffffffff80000000ULL /* INT32_MIN */,
    0x7fffffffffffffffULL, 0x8000000000000000ULL /* INT64_MIN, 2^63 */,
};

/* single: 24 edge values + 3 random */
#define NFP 27
static uint64_t sv[NFP] = {
    0x00000000, 0x80000000, 0x3f800000, 0xbf800000, /* +0 -0 1 -1 */
    0x3fc00000, 0x40200000, 0xc0200000, 0x3f000000, /* 1.5 2.5 -2.5 0.5 */
    0xbf000000, 0x3eaaaaab, 0x7f800000, 0xff800000, /* -0.5 1/3 +inf -inf */
    0x7fc00000, 0x7f800001, 0xffc00000, 0x00000001, /* qNaN sNaN -qNaN min subnormal */
    0x807fffff, 0x00800000, 0x7f7fffff, 0xff7fffff, /* -max subnormal, min normal, max, -max */
    0x4f000000, 0xcf000000, 0x5f000000, 0x4f800000, /* 2^31 -2^31 2^63 2^32 */
};
static uint64_t dv[NFP] = {
    0x0000000000000000ULL, 0x8000000000000000ULL, 0x3ff0000000000000ULL, 0xbff0000000000000ULL,
    0x3ff8000000000000ULL, 0x4004000000000000ULL, 0xc004000000000000ULL, 0x3fe0000000000000ULL,
    0xbfe0000000000000ULL, 0x3fd5555555555555ULL, 0x7ff0000000000000ULL, 0xfff0000000000000ULL,
    0x7ff8000000000000ULL, 0x7ff0000000000001ULL, 0xfff8000000000000ULL, 0x0000000000000001ULL,
    0x800fffffffffffffULL, 0x0010000000000000ULL, 0x7fefffffffffffffULL, 0xffefffffffffffffULL,
    0x41e0000000000000ULL, 0xc1e0000000000000ULL, 0x43e0000000000000ULL, 0x41f0000000000000ULL,
};
/* subsets (indices into sv/dv) */
static const int arith_set[] = { 0, 1, 2, 3, 5, 9, 10, 11, 12, 13, 15, 17, 18, 19, 24, 25 };
static const int cmp_set[] = { 0, 1, 2, 3, 9, 10, 11, 12, 13, 14, 15, 18, 24, 26 };
static const int rm_set[] = { 2, 3, 5, 6, 9, 15, 18, 24 };
static const int fma_set[] = { 2, 3, 9, 10, 12, 24 };
static const int fma_rm_set[] = { 9, 24, 25 };
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void init_values(void)
{
    for (int i = NINT_EDGE; i < NINT; i++) {
        uint64_t r = rng();
        switch (i & 3) {
        case 0: ints[i] = r; break;
        case 1: ints[i] = r >> (r & 63); break;            /* small magnitudes */
        case 2: ints[i] = (uint64_t)(int64_t)(int32_t)r; break; /* sign-extended words */
        default: ints[i] = r | 0x8000000000000000ULL; break;
        }
    }
    for (int i = 24; i < NFP; i++) {
        /* random but mostly finite, normal values near 1 */
        uint64_t r = rng();
        uint64_t sign = r >> 63;
        sv[i] = (sign << 31) | ((uint64_t)(127 - 12 + (r >> 40) % 24) << 23) | (r & 0x7fffff);
        dv[i] = (sign << 63) | ((uint64_t)(1023 - 40 + (r >> 40) % 80) << 52) | (r & 0xfffffffffffffULL);
    }
}

#define BOX(x) (0xffffffff00000000ULL | (uint32_t)(x))

/* ------------------------------------------------------------------ */
/* integer instructions                                                 */
/* ------------------------------------------------------------------ */
typedef uint64_t (*ifn2)(uint64_t, uint64_t);

#define IR(id, mn) static uint64_t id(uint64_t a, uint64_t b) { \
    uint64_t r; __asm__ volatile (mn " %0, %1, %2" : "=r"(r) : "r"(a), "r"(b)); return r; }
IR(i_add, "add") IR(i_sub, "sub") IR(i_sll, "sll") IR(i_slt, "slt") IR(i_sltu, "sltu")
IR(i_xor, "xor") IR(i_srl, "srl") IR(i_sra, "sra") IR(i_or, "or") IR(i_and, "and")
IR(i_addw, "addw") IR(i_subw, "subw") IR(i_sllw, "sllw") IR(i_srlw, "srlw") IR(i_sraw, "sraw")
IR(i_mul, "mul") IR(i_mulh, "mulh") IR(i_mulhsu, "mulhsu") IR(i_mulhu, "mulhu")
IR(i_div, "div") IR(i_divu, "divu") IR(i_rem, "rem") IR(i_remu, "remu")
IR(i_mulw, "mulw") IR(i_divw, "divw") IR(i_divuw, "divuw") IR(i_remw, "remw") IR(i_remuw, "remuw")

#define BR(id, mn) static uint64_t id(uint64_t a, uint64_t b) { \
    uint64_t r; __asm__ volatile ("li %0, 1\n\t" mn " %1, %2, 1f\n\tli %0, 0\n1:" \
                                  : "=&r"(r) : "r"(a), "r"(b)); return r; }
BR(b_beq, "beq") BR(b_bne, "bne") BR(b_blt, "blt") BR(b_bge, "bge") BR(b_bltu, "bltu") BR(b_bgeu, "bgeu")

static const struct { const char *mn; ifn2 fn; } rr_ops[] = {
    { "add", i_add }, { "sub", i_sub }, { "sll", i_sll }, { "slt", i_slt }, { "sltu", i_sltu },
    { "xor", i_xor }, { "srl", i_srl }, { "sra", i_sra }, { "or", i_or }, { "and", i_and },
    { "addw", i_addw }, { "subw", i_subw }, { "sllw", i_sllw }, { "srlw", i_srlw }, { "sraw", i_sraw },
    { "mul", i_mul }, { "mulh", i_mulh }, { "mulhsu", i_mulhsu }, { "mulhu", i_mulhu },
    { "div", i_div }, { "divu", i_divu }, { "rem", i_rem }, { "remu", i_remu },
    { "mulw", i_mulw }, { "divw", i_divw }, { "divuw", i_divuw }, { "remw", i_remw }, { "remuw", i_remuw },
    { "beq", b_beq }, { "bne", b_bne }, { "blt", b_blt }, { "bge", b_bge }, { "bltu", b_bltu },
    { "bgeu", b_bgeu },
};

static void test_int_rr(void)
{
    for (int o = 0; o < COUNT(rr_ops); o++) {
        /* every pair of edge values, then random pairs */
        for (int i = 0; i < NINT_EDGE; i++)
            for (int j = 0; j < NINT_EDGE; j++) {
                uint64_t ops[2] = { ints[i], ints[j] };
                line(rr_ops[o].mn, "-", 2, ops, W16, rr_ops[o].fn(ops[0], ops[1]), -1);
            }
        for (int i = NINT_EDGE; i < NINT; i++) {
            uint64_t ops[2] = { ints[i], ints[NINT_EDGE + (i + o) % NINT_RAND] ^ (i & 1 ? 0 : ints[i]) };
            line(rr_ops[o].mn, "-", 2, ops, W16, rr_ops[o].fn(ops[0], ops[1]), -1);
        }
    }
}

/* immediate forms: one asm per immediate */
#define IMM_CASE(mn, k, imm) case k: __asm__ volatile (mn " %0, %1, " #imm : "=r"(r) : "r"(a)); break;
#define II(id, mn) static uint64_t id(uint64_t a, int k) { uint64_t r = 0; switch (k) { \
    IMM_CASE(mn, 0, 0) IMM_CASE(mn, 1, 1) IMM_CASE(mn, 2, -1) IMM_CASE(mn, 3, 2047) \
    IMM_CASE(mn, 4, -2048) IMM_CASE(mn, 5, 1365) } return r; }
#define SH64(id, mn) static uint64_t id(uint64_t a, int k) { uint64_t r = 0; switch (k) { \
    IMM_CASE(mn, 0, 0) IMM_CASE(mn, 1, 1) IMM_CASE(mn, 2, 31) IMM_CASE(mn, 3, 32) \
    IMM_CASE(mn, 4, 63) IMM_CASE(mn, 5, 17) } return r; }
#define SH32(id, mn) static uint64_t id(uint64_t a, int k) { uint64_t r = 0; switch (k) { \
    IMM_CASE(mn, 0, 0) IMM_CASE(mn, 1, 1) IMM_CASE(mn, 2, 31) IMM_CASE(mn, 3, 16) \
    IMM_CASE(mn, 4, 30) IMM_CASE(mn, 5, 5) } return r; }
II(ii_addi, "addi") II(ii_slti, "slti") II(ii_sltiu, "sltiu") II(ii_xori, "xori")
II(ii_ori, "ori") II(ii_andi, "andi") II(ii_addiw, "addiw")
SH64(ii_slli, "slli") SH64(ii_srli, "srli") SH64(ii_srai, "srai")
SH32(ii_slliw, "slliw") SH32(ii_srliw, "srliw") SH32(ii_sraiw, "sraiw")

static const int64_t imm_arith[6] = { 0, 1, -1, 2047, -2048, 1365 };
static const int64_t imm_sh64[6] = { 0, 1, 31, 32, 63, 17 };
static const int64_t imm_sh32[6] = { 0, 1, 31, 16, 30, 5 };
static const struct { const char *mn; uint64_t (*fn)(uint64_t, int); const int64_t *imms; } ri_ops[] = {
    { "addi", ii_addi, imm_arith }, { "slti", ii_slti, imm_arith }, { "sltiu", ii_sltiu, imm_arith },
    { "xori", ii_xori, imm_arith }, { "ori", ii_ori, imm_arith }, { "andi", ii_andi, imm_arith },
    { "addiw", ii_addiw, imm_arith }, { "slli", ii_slli, imm_sh64 }, { "srli", ii_srli, imm_sh64 },
    { "srai", ii_srai, imm_sh64 }, { "slliw", ii_slliw, imm_sh32 }, { "srliw", ii_srliw, imm_sh32 },
    { "sraiw", ii_sraiw, imm_sh32 },
};

static void test_int_ri(void)
{
    for (int o = 0; o < COUNT(ri_ops); o++)
        for (int k = 0; k < 6; k++)
            for (int i = 0; i < NINT; i++) {
                uint64_t ops[2] = { ints[i], (uint64_t)ri_ops[o].imms[k] };
                line(ri_ops[o].mn, "-", 2, ops, W16, ri_ops[o].fn(ints[i], k), -1);
            }
}

static void test_upper_and_jumps(void)
{
    uint64_t r, base;
#define LUI(imm) \
    __asm__ volatile ("lui %0, " #imm : "=r"(r)); \
    { uint64_t op = imm; line("lui", "-", 1, &op, W16, r, -1); }
    LUI(0) LUI(1) LUI(0x7ffff) LUI(0x80000) LUI(0xfffff) LUI(0x12345)
#define AUIPC(imm) \
    __asm__ volatile ("1: auipc %0, " #imm "\n\tlla %1, 1b" : "=&r"(r), "=&r"(base)); \
    { uint64_t op = imm; line("auipc-pc", "-", 1, &op, W16, r - base, -1); }
    AUIPC(0) AUIPC(1) AUIPC(0x7ffff) AUIPC(0x80000) AUIPC(0xfffff)

    /* jal: link = address of the next instruction */
    __asm__ volatile (".option push\n.option norvc\n"
                      "jal %0, 1f\n1:\n\tlla %1, 1b\n.option pop" : "=&r"(r), "=&r"(base));
    { uint64_t op = 0; line("jal-link", "-", 1, &op, W16, r - base, -1); }
    /* jalr clears bit 0 of the target */
    __asm__ volatile (".option push\n.option norvc\n"
                      "lla %1, 1f\n\taddi %1, %1, 1\n\tjalr %0, 0(%1)\n\tli %0, 0\n1:\n.option pop"
                      : "=&r"(r), "=&r"(base));
    { uint64_t op = 1; line("jalr-lsb", "-", 1, &op, W16, r != 0, -1); }
    /* jalr with rd == rs1: the target uses the old value */
    __asm__ volatile (".option push\n.option norvc\n"
                      "lla %0, 1f\n\tjalr %0, 0(%0)\n\tli %0, 0\n1:\n\tlla %1, 1b\n.option pop"
                      : "=&r"(r), "=&r"(base));
    { uint64_t op = 2; line("jalr-rd=rs1", "-", 1, &op, W16, r == base - 4 ? 1 : 0, -1); }
    /* negative offsets */
    __asm__ volatile (".option push\n.option norvc\n"
                      "lla %1, 2f\n\taddi %1, %1, 16\n\tjalr %0, -16(%1)\n\tli %0, 0\n2:\n.option pop"
                      : "=&r"(r), "=&r"(base));
    { uint64_t op = 3; line("jalr-negoff", "-", 1, &op, W16, r != 0, -1); }

    __asm__ volatile ("fence" ::: "memory");
    __asm__ volatile ("fence rw, w" ::: "memory");
    __asm__ volatile ("fence.i" ::: "memory");
    { uint64_t op = 0; line("fence+fence.i", "-", 1, &op, W16, 1, -1); }
}

/* ---- loads and stores ---- */
static uint64_t mem[4] __attribute__((aligned(16)));

#define LD(id, mn) static uint64_t id(const void *p) { \
    uint64_t r; __asm__ volatile (mn " %0, 0(%1)" : "=r"(r) : "r"(p) : "memory"); return r; }
LD(l_lb, "lb") LD(l_lh, "lh") LD(l_lw, "lw") LD(l_ld, "ld") LD(l_lbu, "lbu") LD(l_lhu, "lhu") LD(l_lwu, "lwu")
#define ST(id, mn) static void id(void *p, uint64_t v) { \
    __asm__ volatile (mn " %1, 0(%0)" :: "r"(p), "r"(v) : "memory"); }
ST(s_sb, "sb") ST(s_sh, "sh") ST(s_sw, "sw") ST(s_sd, "sd")

static void fill_mem(void)
{
    static const uint8_t pat[32] = {
        0x80, 0x01, 0xff, 0x7f, 0x00, 0x80, 0x34, 0x12, 0xfe, 0xff, 0xff, 0xff, 0x78, 0x56, 0x34, 0x92,
        0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x80, 0x11, 0x22, 0x33, 0x44,
    };
    memcpy(mem, pat, sizeof(pat));
}

static void test_loads_stores(void)
{
    static const struct { const char *mn; uint64_t (*fn)(const void *); int size; } lds[] = {
        { "lb", l_lb, 1 }, { "lh", l_lh, 2 }, { "lw", l_lw, 4 }, { "ld", l_ld, 8 },
        { "lbu", l_lbu, 1 }, { "lhu", l_lhu, 2 }, { "lwu", l_lwu, 4 },
    };
    fill_mem();
    for (int o = 0; o < COUNT(lds); o++)
        for (int off = 0; off < 32; off += lds[o].size) {
            uint64_t op = (uint64_t)off;
            line(lds[o].mn, "-", 1, &op, W16, lds[o].fn((const char *)mem + off), -1);
        }
    static const struct { const char *mn; void (*fn)(void *, uint64_t); int size; } sts[] = {
        { "sb", s_sb, 1 }, { "sh", s_sh, 2 }, { "sw", s_sw, 4 }, { "sd", s_sd, 8 },
    };
    for (int o = 0; o < COUNT(sts); o++)
        for (int off = 0; off < 16; off += sts[o].size) {
            fill_mem();
            uint64_t v = 0x8877665544332211ULL ^ ((uint64_t)off * 0x0101010101010101ULL);
            sts[o].fn((char *)mem + off, v);
            uint64_t ops[2] = { (uint64_t)off, v };
            line(sts[o].mn, "-", 2, ops, W16, mem[off / 8], -1);
        }
}

/* ---- A extension ---- */
static uint64_t amem __attribute__((aligned(8)));
#define AMO(id, mn) static uint64_t id(volatile void *p, uint64_t b) { \
    uint64_t r; __asm__ volatile (mn " %0, %2, (%1)" : "=&r"(r) : "r"(p), "r"(b) : "memory"); return r; }
AMO(a_swap_w, "amoswap.w") AMO(a_add_w, "amoadd.w") AMO(a_xor_w, "amoxor.w") AMO(a_and_w, "amoand.w")
AMO(a_or_w, "amoor.w") AMO(a_min_w, "amomin.w") AMO(a_max_w, "amomax.w") AMO(a_minu_w, "amominu.w")
AMO(a_maxu_w, "amomaxu.w")
AMO(a_swap_d, "amoswap.d.aqrl") AMO(a_add_d, "amoadd.d") AMO(a_xor_d, "amoxor.d.aq") AMO(a_and_d, "amoand.d")
AMO(a_or_d, "amoor.d.rl") AMO(a_min_d, "amomin.d") AMO(a_max_d, "amomax.d") AMO(a_minu_d, "amominu.d")
AMO(a_maxu_d, "amomaxu.d")

static void test_atomics(void)
{
    static const struct { const char *mn; uint64_t (*fn)(volatile void *, uint64_t); int word; } amos[] = {
        { "amoswap.w", a_swap_w, 1 }, { "amoadd.w", a_add_w, 1 }, { "amoxor.w", a_xor_w, 1 },
        { "amoand.w", a_and_w, 1 }, { "amoor.w", a_or_w, 1 }, { "amomin.w", a_min_w, 1 },
        { "amomax.w", a_max_w, 1 }, { "amominu.w", a_minu_w, 1 }, { "amomaxu.w", a_maxu_w, 1 },
        { "amoswap.d", a_swap_d, 0 }, { "amoadd.d", a_add_d, 0 }, { "amoxor.d", a_xor_d, 0 },
        { "amoand.d", a_and_d, 0 }, { "amoor.d", a_or_d, 0 }, { "amomin.d", a_min_d, 0 },
        { "amomax.d", a_max_d, 0 }, { "amominu.d", a_minu_d, 0 }, { "amomaxu.d", a_maxu_d, 0 },
    };
    static const int set[] = { 0, 1, 2, 7, 8, 9, 10, 11, 12, 14 };
    for (int o = 0; o < COUNT(amos); o++)
        for (int i = 0; i < COUNT(set); i++)
            for (int j = 0; j < COUNT(set); j++) {
                uint64_t m = ints[set[i]], b = ints[set[j]];
                amem = amos[o].word ? 0xdeadbeef00000000ULL | (uint32_t)m : m;
                uint64_t old = amos[o].fn(&amem, b);
                uint64_t in[2] = { amos[o].word ? (uint32_t)m : m, b };
                /* result: old value (sign-extended for .w), then the new memory */
                line(amos[o].mn, "-", 2, in, W16, old, -1);
                line(amos[o].mn, "mem", 2, in, W16, amem, -1);
            }

    uint64_t r, fail;
    /* lr/sc pair succeeds */
    amem = 5;
    __asm__ volatile ("lr.d %0, (%2)\n\taddi %0, %0, 1\n\tsc.d %1, %0, (%2)"
                      : "=&r"(r), "=&r"(fail) : "r"(&amem) : "memory");
    { uint64_t op = 5; line("lr.d/sc.d", "-", 1, &op, W16, (fail == 0) | (amem << 1), -1); }
    /* sc after a completed sc fails: no reservation */
    __asm__ volatile ("sc.d %0, %1, (%2)" : "=&r"(fail) : "r"(99ULL), "r"(&amem) : "memory");
    { uint64_t op = 6; line("sc.d-noreserve", "-", 1, &op, W16, (fail != 0) | (amem << 1), -1); }
    /* word forms, sign extension of lr.w */
    amem = 0x00000000fffffff0ULL;
    __asm__ volatile ("lr.w.aq %0, (%2)\n\taddi %0, %0, 1\n\tsc.w.rl %1, %0, (%2)"
                      : "=&r"(r), "=&r"(fail) : "r"(&amem) : "memory");
    { uint64_t op = 0xfffffff0ULL; line("lr.w/sc.w", "-", 1, &op, W16, r, -1); }
    { uint64_t op = 0xfffffff0ULL; line("lr.w/sc.w", "mem", 1, &op, W16, (fail == 0) | (amem << 1), -1); }
    __asm__ volatile ("sc.w %0, %1, (%2)" : "=&r"(fail) : "r"(1ULL), "r"(&amem) : "memory");
    { uint64_t op = 7; line("sc.w-noreserve", "-", 1, &op, W16, (fail != 0) | (amem << 1), -1); }
}

/* ---- compressed forms (registers a0/a1 are in the x8-x15 range) ---- */
#define C2(id, mn) static uint64_t id(uint64_t a, uint64_t b) { \
    register uint64_t x __asm__("a0") = a; register uint64_t y __asm__("a1") = b; \
    __asm__ volatile (".option push\n.option rvc\n" mn " a0, a1\n.option pop" : "+r"(x) : "r"(y)); return x; }
C2(c_add, "c.add") C2(c_mv, "c.mv") C2(c_sub, "c.sub") C2(c_xor, "c.xor") C2(c_or, "c.or")
C2(c_and, "c.and") C2(c_subw, "c.subw") C2(c_addw, "c.addw")
#define C1(id, mn, imm) static uint64_t id(uint64_t a, uint64_t b) { (void)b; \
    register uint64_t x __asm__("a0") = a; \
    __asm__ volatile (".option push\n.option rvc\n" mn " a0, " #imm "\n.option pop" : "+r"(x)); return x; }
C1(c_addi, "c.addi", -32) C1(c_addi2, "c.addi", 31) C1(c_addiw, "c.addiw", -1) C1(c_addiw0, "c.addiw", 0)
C1(c_li, "c.li", -32) C1(c_lui, "c.lui", 0xfffe1) C1(c_lui2, "c.lui", 0x1f) C1(c_slli, "c.slli", 63)
C1(c_srli, "c.srli", 1) C1(c_srai, "c.srai", 63) C1(c_srai2, "c.srai", 32) C1(c_andi, "c.andi", -17)

static void test_compressed(void)
{
    static const struct { const char *mn; ifn2 fn; int binary; } cs[] = {
        { "c.add", c_add, 1 }, { "c.mv", c_mv, 1 }, { "c.sub", c_sub, 1 }, { "c.xor", c_xor, 1 },
        { "c.or", c_or, 1 }, { "c.and", c_and, 1 }, { "c.subw", c_subw, 1 }, { "c.addw", c_addw, 1 },
        { "c.addi-32", c_addi, 0 }, { "c.addi31", c_addi2, 0 }, { "c.addiw-1", c_addiw, 0 },
        { "c.addiw0", c_addiw0, 0 }, { "c.li-32", c_li, 0 }, { "c.lui0xfffe1", c_lui, 0 },
        { "c.lui0x1f", c_lui2, 0 }, { "c.slli63", c_slli, 0 }, { "c.srli1", c_srli, 0 },
        { "c.srai63", c_srai, 0 }, { "c.srai32", c_srai2, 0 }, { "c.andi-17", c_andi, 0 },
    };
    static const int set[] = { 0, 1, 2, 6, 7, 9, 10, 11, 13, 18 };
    for (int o = 0; o < COUNT(cs); o++)
        for (int i = 0; i < COUNT(set); i++) {
            if (cs[o].binary) {
                for (int j = 0; j < COUNT(set); j++) {
                    uint64_t ops[2] = { ints[set[i]], ints[set[j]] };
                    line(cs[o].mn, "-", 2, ops, W16, cs[o].fn(ops[0], ops[1]), -1);
                }
            } else {
                uint64_t op = ints[set[i]];
                line(cs[o].mn, "-", 1, &op, W16, cs[o].fn(op, 0), -1);
            }
        }
}

/* ------------------------------------------------------------------ */
/* floating point                                                       */
/* ------------------------------------------------------------------ */
struct res {
    uint64_t f;  /* ft3 (fmv.x.d) */
    uint64_t x;  /* integer destination */
    uint64_t fl; /* fflags, read and cleared */
};

/* ft0/ft1/ft2 = a/b/c as raw 64-bit patterns, %[ia] = a; insn writes ft3 or %[x]. */
#define FPX(insn, a, b, c) ({                                              \
    struct res __r;                                                        \
    __asm__ volatile (                                                     \
        "fmv.d.x ft0, %[ia]\n\t"                                           \
        "fmv.d.x ft1, %[ib]\n\t"                                           \
        "fmv.d.x ft2, %[ic]\n\t"                                           \
        "fmv.d.x ft3, zero\n\t"                                            \
        "li %[x], 0\n\t"                                                   \
        "fsflags zero\n\t"                                                 \
        insn "\n\t"                                                        \
        "fsflags %[fl], zero\n\t"                                          \
        "fmv.x.d %[f], ft3"                                                \
        : [f] "=&r"(__r.f), [x] "=&r"(__r.x), [fl] "=&r"(__r.fl)           \
        : [ia] "r"(a), [ib] "r"(b), [ic] "r"(c)                            \
        : "ft0", "ft1", "ft2", "ft3");                                     \
    __r; })

typedef struct res (*ffn)(uint64_t, uint64_t, uint64_t);
#define DEF(id, insn) static struct res id(uint64_t a, uint64_t b, uint64_t c) { return FPX(insn, a, b, c); }
#define DEF_RM(id, insn) DEF(id##_rne, insn ", rne") DEF(id##_rtz, insn ", rtz") DEF(id##_rdn, insn ", rdn") \
    DEF(id##_rup, insn ", rup") DEF(id##_rmm, insn ", rmm") DEF(id##_dyn, insn ", dyn") \
    static const ffn id[6] = { id##_rne, id##_rtz, id##_rdn, id##_rup, id##_rmm, id##_dyn };
static const char *const rm_names[6] = { "rne", "rtz", "rdn", "rup", "rmm", "dyn" };

DEF_RM(fadd_s, "fadd.s ft3, ft0, ft1") DEF_RM(fsub_s, "fsub.s ft3, ft0, ft1")
DEF_RM(fmul_s, "fmul.s ft3, ft0, ft1") DEF_RM(fdiv_s, "fdiv.s ft3, ft0, ft1")
DEF_RM(fadd_d, "fadd.d ft3, ft0, ft1") DEF_RM(fsub_d, "fsub.d ft3, ft0, ft1")
DEF_RM(fmul_d, "fmul.d ft3, ft0, ft1") DEF_RM(fdiv_d, "fdiv.d ft3, ft0, ft1")
DEF_RM(fsqrt_s, "fsqrt.s ft3, ft0") DEF_RM(fsqrt_d, "fsqrt.d ft3, ft0")
DEF_RM(fmadd_s, "fmadd.s ft3, ft0, ft1, ft2") DEF_RM(fmsub_s, "fmsub.s ft3, ft0, ft1, ft2")
DEF_RM(fnmsub_s, "fnmsub.s ft3, ft0, ft1, ft2") DEF_RM(fnmadd_s, "fnmadd.s ft3, ft0, ft1, ft2")
DEF_RM(fmadd_d, "fmadd.d ft3, ft0, ft1, ft2") DEF_RM(fmsub_d, "fmsub.d ft3, ft0, ft1, ft2")
DEF_RM(fnmsub_d, "fnmsub.d ft3, ft0, ft1, ft2") DEF_RM(fnmadd_d, "fnmadd.d ft3, ft0, ft1, ft2")
DEF_RM(fcvt_w_s, "fcvt.w.s %[x], ft0") DEF_RM(fcvt_wu_s, "fcvt.wu.s %[x], ft0")
DEF_RM(fcvt_l_s, "fcvt.l.s %[x], ft0") DEF_RM(fcvt_lu_s, "fcvt.lu.s %[x], ft0")
DEF_RM(fcvt_w_d, "fcvt.w.d %[x], ft0") DEF_RM(fcvt_wu_d, "fcvt.wu.d %[x], ft0")
DEF_RM(fcvt_l_d, "fcvt.l.d %[x], ft0") DEF_RM(fcvt_lu_d, "fcvt.lu.d %[x], ft0")
DEF_RM(fcvt_s_w, "fcvt.s.w ft3, %[ia]") DEF_RM(fcvt_s_wu, "fcvt.s.wu ft3, %[ia]")
DEF_RM(fcvt_s_l, "fcvt.s.l ft3, %[ia]") DEF_RM(fcvt_s_lu, "fcvt.s.lu ft3, %[ia]")
/* always exact: binutils 2.40 accepts no rounding mode on these */
DEF(fcvt_d_w_only, "fcvt.d.w ft3, %[ia]") DEF(fcvt_d_wu_only, "fcvt.d.wu ft3, %[ia]")
static const ffn fcvt_d_w[1] = { fcvt_d_w_only }, fcvt_d_wu[1] = { fcvt_d_wu_only };
DEF_RM(fcvt_d_l, "fcvt.d.l ft3, %[ia]") DEF_RM(fcvt_d_lu, "fcvt.d.lu ft3, %[ia]")
DEF_RM(fcvt_s_d, "fcvt.s.d ft3, ft0")

DEF(fcvt_d_s, "fcvt.d.s ft3, ft0")
DEF(fmin_s, "fmin.s ft3, ft0, ft1") DEF(fmax_s, "fmax.s ft3, ft0, ft1")
DEF(fsgnj_s, "fsgnj.s ft3, ft0, ft1") DEF(fsgnjn_s, "fsgnjn.s ft3, ft0, ft1") DEF(fsgnjx_s, "fsgnjx.s ft3, ft0, ft1")
DEF(feq_s, "feq.s %[x], ft0, ft1") DEF(flt_s, "flt.s %[x], ft0, ft1") DEF(fle_s, "fle.s %[x], ft0, ft1")
DEF(fmin_d, "fmin.d ft3, ft0, ft1") DEF(fmax_d, "fmax.d ft3, ft0, ft1")
DEF(fsgnj_d, "fsgnj.d ft3, ft0, ft1") DEF(fsgnjn_d, "fsgnjn.d ft3, ft0, ft1") DEF(fsgnjx_d, "fsgnjx.d ft3, ft0, ft1")
DEF(feq_d, "feq.d %[x], ft0, ft1") DEF(flt_d, "flt.d %[x], ft0, ft1") DEF(fle_d, "fle.d %[x], ft0, ft1")
DEF(fclass_s, "fclass.s %[x], ft0") DEF(fclass_d, "fclass.d %[x], ft0")
DEF(fmv_x_w, "fmv.x.w %[x], ft0") DEF(fmv_w_x, "fmv.w.x ft3, %[ia]")
DEF(fmv_x_d, "fmv.x.d %[x], ft0") DEF(fmv_d_x, "fmv.d.x ft3, %[ia]")

enum { RES_F = 0, RES_X = 1 };

/* one FP case: prints operands of width w, the chosen result and the flags */
static void fcase(const char *mn, const char *rm, ffn fn, int n, const uint64_t *ops, int w, int resx)
{
    uint64_t a = ops[0], b = n > 1 ? ops[1] : 0, c = n > 2 ? ops[2] : 0;
    if (w == W8) { /* single operands are passed NaN-boxed */
        a = BOX(a);
        b = BOX(b);
        c = BOX(c);
    }
    struct res r = fn(a, b, c);
    line(mn, rm, n, ops, w, resx ? r.x : r.f, (int)r.fl);
}

struct fgroup {
    const char *mn;
    const ffn *fns; /* rounding-mode variants (6) or NULL */
    ffn fn;         /* single variant */
    int nargs, resx;
};

static void run_grid2(const struct fgroup *g, int w, const uint64_t *vals, const int *set, int nset, int rm)
{
    for (int i = 0; i < nset; i++)
        for (int j = 0; j < nset; j++) {
            uint64_t ops[2] = { vals[set[i]], vals[set[j]] };
            fcase(g->mn, g->fns ? rm_names[rm] : "-", g->fns ? g->fns[rm] : g->fn, 2, ops, w, g->resx);
        }
}

static void test_fp_precision(int dbl)
{
    const uint64_t *vals = dbl ? dv : sv;
    int w = dbl ? W16 : W8;
    const struct fgroup arith[] = {
        { dbl ? "fadd.d" : "fadd.s", dbl ? fadd_d : fadd_s, 0, 2, RES_F },
        { dbl ? "fsub.d" : "fsub.s", dbl ? fsub_d : fsub_s, 0, 2, RES_F },
        { dbl ? "fmul.d" : "fmul.s", dbl ? fmul_d : fmul_s, 0, 2, RES_F },
        { dbl ? "fdiv.d" : "fdiv.s", dbl ? fdiv_d : fdiv_s, 0, 2, RES_F },
    };
    for (int o = 0; o < COUNT(arith); o++) {
        run_grid2(&arith[o], w, vals, arith_set, COUNT(arith_set), 0);
        for (int rm = 1; rm < 5; rm++)
            run_grid2(&arith[o], w, vals, rm_set, COUNT(rm_set), rm);
    }

    /* sqrt: every value, every static rounding mode */
    for (int rm = 0; rm < 5; rm++)
        for (int i = 0; i < NFP; i++)
            fcase(dbl ? "fsqrt.d" : "fsqrt.s", rm_names[rm], (dbl ? fsqrt_d : fsqrt_s)[rm], 1, &vals[i], w, RES_F);

    /* fused multiply-add family */
    const struct { const char *mn; const ffn *fns; } fma[] = {
        { dbl ? "fmadd.d" : "fmadd.s", dbl ? fmadd_d : fmadd_s },
        { dbl ? "fmsub.d" : "fmsub.s", dbl ? fmsub_d : fmsub_s },
        { dbl ? "fnmsub.d" : "fnmsub.s", dbl ? fnmsub_d : fnmsub_s },
        { dbl ? "fnmadd.d" : "fnmadd.s", dbl ? fnmadd_d : fnmadd_s },
    };
    for (int o = 0; o < COUNT(fma); o++) {
        for (int i = 0; i < COUNT(fma_set); i++)
            for (int j = 0; j < COUNT(fma_set); j++)
                for (int k = 0; k < COUNT(fma_set); k++) {
                    uint64_t ops[3] = { vals[fma_set[i]], vals[fma_set[j]], vals[fma_set[k]] };
                    fcase(fma[o].mn, "rne", fma[o].fns[0], 3, ops, w, RES_F);
                }
        for (int rm = 1; rm < 5; rm++)
            for (int i = 0; i < COUNT(fma_rm_set); i++)
                for (int j = 0; j < COUNT(fma_rm_set); j++)
                    for (int k = 0; k < COUNT(fma_rm_set); k++) {
                        uint64_t ops[3] = { vals[fma_rm_set[i]], vals[fma_rm_set[j]], vals[fma_rm_set[k]] };
                        fcase(fma[o].mn, rm_names[rm], fma[o].fns[rm], 3, ops, w, RES_F);
                    }
    }

    /* min/max, sign injection, compares */
    const struct fgroup cmp[] = {
        { dbl ? "fmin.d" : "fmin.s", 0, dbl ? fmin_d : fmin_s, 2, RES_F },
        { dbl ? "fmax.d" : "fmax.s", 0, dbl ? fmax_d : fmax_s, 2, RES_F },
        { dbl ? "fsgnj.d" : "fsgnj.s", 0, dbl ? fsgnj_d : fsgnj_s, 2, RES_F },
        { dbl ? "fsgnjn.d" : "fsgnjn.s", 0, dbl ? fsgnjn_d : fsgnjn_s, 2, RES_F },
        { dbl ? "fsgnjx.d" : "fsgnjx.s", 0, dbl ? fsgnjx_d : fsgnjx_s, 2, RES_F },
        { dbl ? "feq.d" : "feq.s", 0, dbl ? feq_d : feq_s, 2, RES_X },
        { dbl ? "flt.d" : "flt.s", 0, dbl ? flt_d : flt_s, 2, RES_X },
        { dbl ? "fle.d" : "fle.s", 0, dbl ? fle_d : fle_s, 2, RES_X },
    };
    for (int o = 0; o < COUNT(cmp); o++)
        run_grid2(&cmp[o], w, vals, cmp_set, COUNT(cmp_set), 0);

    for (int i = 0; i < NFP; i++)
        fcase(dbl ? "fclass.d" : "fclass.s", "-", dbl ? fclass_d : fclass_s, 1, &vals[i], w, RES_X);

    /* to integer */
    const struct { const char *mn; const ffn *fns; } toint[] = {
        { dbl ? "fcvt.w.d" : "fcvt.w.s", dbl ? fcvt_w_d : fcvt_w_s },
        { dbl ? "fcvt.wu.d" : "fcvt.wu.s", dbl ? fcvt_wu_d : fcvt_wu_s },
        { dbl ? "fcvt.l.d" : "fcvt.l.s", dbl ? fcvt_l_d : fcvt_l_s },
        { dbl ? "fcvt.lu.d" : "fcvt.lu.s", dbl ? fcvt_lu_d : fcvt_lu_s },
    };
    for (int o = 0; o < COUNT(toint); o++)
        for (int rm = 0; rm < 5; rm++)
            for (int i = 0; i < NFP; i++)
                fcase(toint[o].mn, rm_names[rm], toint[o].fns[rm], 1, &vals[i], w, RES_X);

    /* from integer */
    const struct { const char *mn; const ffn *fns; int exact; } fromint[] = {
        { dbl ? "fcvt.d.w" : "fcvt.s.w", dbl ? fcvt_d_w : fcvt_s_w, dbl },
        { dbl ? "fcvt.d.wu" : "fcvt.s.wu", dbl ? fcvt_d_wu : fcvt_s_wu, dbl },
        { dbl ? "fcvt.d.l" : "fcvt.s.l", dbl ? fcvt_d_l : fcvt_s_l, 0 },
        { dbl ? "fcvt.d.lu" : "fcvt.s.lu", dbl ? fcvt_d_lu : fcvt_s_lu, 0 },
    };
    for (int o = 0; o < COUNT(fromint); o++)
        for (int rm = 0; rm < (fromint[o].exact ? 1 : 5); rm++)
            for (int i = 0; i < NINT; i++) {
                struct res r = fromint[o].fns[rm](ints[i], 0, 0);
                line(fromint[o].mn, fromint[o].exact ? "-" : rm_names[rm], 1, &ints[i], W16, r.f, (int)r.fl);
            }

    /* moves between register files */
    for (int i = 0; i < NINT; i++) {
        struct res r = (dbl ? fmv_d_x : fmv_w_x)(ints[i], 0, 0);
        line(dbl ? "fmv.d.x" : "fmv.w.x", "-", 1, &ints[i], W16, r.f, (int)r.fl);
        r = (dbl ? fmv_x_d : fmv_x_w)(ints[i], 0, 0); /* raw register contents, boxed or not */
        line(dbl ? "fmv.x.d" : "fmv.x.w", "-", 1, &ints[i], W16, r.x, (int)r.fl);
    }
}

static void test_fp_cross(void)
{
    for (int rm = 0; rm < 5; rm++)
        for (int i = 0; i < NFP; i++)
            fcase("fcvt.s.d", rm_names[rm], fcvt_s_d[rm], 1, &dv[i], W16, RES_F);
    for (int i = 0; i < NFP; i++)
        fcase("fcvt.d.s", "-", fcvt_d_s, 1, &sv[i], W8, RES_F);

    /* improperly NaN-boxed single operands read as the canonical NaN */
    static const uint64_t unboxed[] = { 0x000000003f800000ULL, 0x7fffffff3f800000ULL, 0xfffffffe00000000ULL };
    for (int i = 0; i < COUNT(unboxed); i++) {
        uint64_t ops[2] = { unboxed[i], BOX(0x40000000) };
        struct res r = fadd_s_rne(ops[0], ops[1], 0);
        line("fadd.s-unboxed", "rne", 2, ops, W16, r.f, (int)r.fl);
        r = fsgnjn_s(ops[0], ops[0], 0);
        line("fsgnjn.s-unboxed", "-", 2, ops, W16, r.f, (int)r.fl);
        r = fclass_s(ops[0], 0, 0);
        line("fclass.s-unboxed", "-", 1, ops, W16, r.x, (int)r.fl);
        r = fcvt_d_s(ops[0], 0, 0);
        line("fcvt.d.s-unboxed", "-", 1, ops, W16, r.f, (int)r.fl);
    }

    /* FP loads and stores */
    static uint64_t fmem[2] __attribute__((aligned(8)));
    for (int i = 0; i < NFP; i += 3) {
        uint64_t got;
        fmem[0] = 0x5555555500000000ULL | sv[i];
        __asm__ volatile ("flw ft0, %1\n\tfmv.x.d %0, ft0" : "=r"(got) : "m"(fmem[0]) : "ft0");
        line("flw", "-", 1, &sv[i], W8, got, -1);
        fmem[1] = 0;
        __asm__ volatile ("fmv.d.x ft0, %1\n\tfsw ft0, %0" : "=m"(fmem[1]) : "r"(dv[i]) : "ft0");
        line("fsw", "-", 1, &dv[i], W16, fmem[1], -1);
        fmem[0] = dv[i];
        __asm__ volatile ("fld ft0, %1\n\tfmv.x.d %0, ft0" : "=r"(got) : "m"(fmem[0]) : "ft0");
        line("fld", "-", 1, &dv[i], W16, got, -1);
        __asm__ volatile ("fmv.d.x ft0, %1\n\tfsd ft0, %0" : "=m"(fmem[1]) : "r"(dv[i]) : "ft0");
        line("fsd", "-", 1, &dv[i], W16, fmem[1], -1);
    }
}

/* dynamic rounding: frm set with fsrm, instructions encoded with rm = dyn */
static void test_fp_dynamic(void)
{
    for (uint64_t m = 0; m < 5; m++) {
        uint64_t back;
        __asm__ volatile ("fsrm %0" :: "r"(m));
        __asm__ volatile ("frrm %0" : "=r"(back));
        line("frrm", "-", 1, &m, W16, back, -1);
        char rm[8] = "dyn=0";
        rm[4] = (char)('0' + m);
        for (int i = 0; i < COUNT(rm_set); i++)
            for (int j = 0; j < COUNT(rm_set); j++) {
                uint64_t so[2] = { sv[rm_set[i]], sv[rm_set[j]] };
                uint64_t dop[2] = { dv[rm_set[i]], dv[rm_set[j]] };
                fcase("fadd.s", rm, fadd_s[5], 2, so, W8, RES_F);
                fcase("fmul.d", rm, fmul_d[5], 2, dop, W16, RES_F);
            }
        for (int i = 0; i < NFP; i++) {
            fcase("fcvt.w.s", rm, fcvt_w_s[5], 1, &sv[i], W8, RES_X);
            fcase("fsqrt.d", rm, fsqrt_d[5], 1, &dv[i], W16, RES_F);
            fcase("fcvt.s.d", rm, fcvt_s_d[5], 1, &dv[i], W16, RES_F);
        }
        for (int i = 0; i < NINT; i++) {
            struct res r = fcvt_s_l[5](ints[i], 0, 0);
            line("fcvt.s.l", rm, 1, &ints[i], W16, r.f, (int)r.fl);
        }
    }
    __asm__ volatile ("fsrm zero");
}

/* Zicsr on the FP CSRs (fflags 0x001, frm 0x002, fcsr 0x003) */
static void test_csr(void)
{
    static const uint64_t vals[] = { 0, 0x1f, 0xe0, 0xff, 0x1ff, 0x3a, 0xffffffffffffffffULL };
    for (int i = 0; i < COUNT(vals); i++) {
        uint64_t old, now, ops[2];
#define CSR_RW(insn, name)                                                              \
        __asm__ volatile ("fscsr %2\n\t" insn "\n\tfrcsr %1"                            \
                          : "=&r"(old), "=&r"(now) : "r"(0x5aULL), "r"(vals[i]));       \
        ops[0] = 0x5a; ops[1] = vals[i];                                                \
        line(name, "old", 2, ops, W16, old, -1);                                        \
        line(name, "fcsr", 2, ops, W16, now, -1);
        CSR_RW("csrrw %0, fcsr, %3", "csrrw-fcsr")
        CSR_RW("csrrs %0, fcsr, %3", "csrrs-fcsr")
        CSR_RW("csrrc %0, fcsr, %3", "csrrc-fcsr")
        CSR_RW("csrrw %0, frm, %3", "csrrw-frm")
        CSR_RW("csrrs %0, fflags, %3", "csrrs-fflags")
        CSR_RW("csrrc %0, frm, %3", "csrrc-frm")
    }
    uint64_t old, now, ops[2] = { 0x5a, 0 };
#define CSR_I(insn, name, imm)                                                          \
    __asm__ volatile ("fscsr %2\n\t" insn "\n\tfrcsr %1"                                \
                      : "=&r"(old), "=&r"(now) : "r"(0x5aULL));                         \
    ops[1] = imm;                                                                       \
    line(name, "old", 2, ops, W16, old, -1);                                            \
    line(name, "fcsr", 2, ops, W16, now, -1);
    CSR_I("csrrwi %0, fflags, 0x1f", "csrrwi-fflags", 0x1f)
    CSR_I("csrrsi %0, fflags, 0x05", "csrrsi-fflags", 0x05)
    CSR_I("csrrci %0, fflags, 0x1b", "csrrci-fflags", 0x1b)
    CSR_I("csrrwi %0, frm, 4", "csrrwi-frm", 4)
    CSR_I("csrrsi %0, frm, 1", "csrrsi-frm", 1)
    CSR_I("csrrci %0, fcsr, 0x1f", "csrrci-fcsr", 0x1f)
    CSR_I("csrrs %0, fcsr, zero", "csrr-fcsr", 0)
    __asm__ volatile ("fscsr zero");
}

int main(void)
{
    init_values();
    out_s("isa_diff v1: mnemonic rm operands -> result flags\n");
    test_int_rr();
    test_int_ri();
    test_upper_and_jumps();
    test_loads_stores();
    test_atomics();
    test_compressed();
    test_fp_precision(0);
    test_fp_precision(1);
    test_fp_cross();
    test_fp_dynamic();
    test_csr();

    char tail[96];
    uint64_t h = ohash;
    unsigned long n = ncases;
    snprintf(tail, sizeof(tail), "isa_diff: %lu cases, fnv1a %016llx\n", n, (unsigned long long)h);
    out_s(tail);
    out_flush();
    fflush(stdout);
    return 0;
}
