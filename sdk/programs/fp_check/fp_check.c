/*
 * fp_check: self-checks of the F and D extensions against values fixed by
 * IEEE 754-2008 and the RISC-V spec: arithmetic with every static rounding
 * mode, fused multiply-add, conversions (with RV64 sign extension and the
 * saturating invalid results), fmin/fmax with NaN and signed zero, compares,
 * fclass, sign injection, NaN boxing, the fflags/frm/fcsr CSRs and every
 * dynamic rounding mode set with fsrm.
 *
 * Every check runs one instruction inside an asm block that clears fflags,
 * loads the operands from integer registers, executes it and reads fflags,
 * so the compiler cannot fold or reorder anything.  Single-precision results
 * are read back as 64 bits (fmv.x.d), which also checks NaN boxing.
 *
 * Exit: 0 when all pass, else the 1-based number of the first failing check
 * (capped at 255), after printing every failure by name.
 * Portable C: also built for Linux (build/fp_check.linux).
 */
#include <stdint.h>
#include <stdio.h>

#define NV 0x10
#define DZ 0x08
#define OF 0x04
#define UF 0x02
#define NX 0x01

#define BOX(x) (0xffffffff00000000ULL | (uint32_t)(x))

/* single */
#define S_ZERO   0x00000000u
#define S_NZERO  0x80000000u
#define S_ONE    0x3f800000u
#define S_NONE   0xbf800000u
#define S_TWO    0x40000000u
#define S_NTWO   0xc0000000u
#define S_THREE  0x40400000u
#define S_FOUR   0x40800000u
#define S_FIVE   0x40a00000u
#define S_SEVEN  0x40e00000u
#define S_HALF   0x3f000000u
#define S_NHALF  0xbf000000u
#define S_2P5    0x40200000u
#define S_N2P5   0xc0200000u
#define S_EPS24  0x33800000u /* 2^-24: half an ulp of 1.0 */
#define S_NEPS24 0xb3800000u
#define S_PINF   0x7f800000u
#define S_NINF   0xff800000u
#define S_QNAN   0x7fc00000u
#define S_SNAN   0x7f800001u
#define S_MAXN   0x7f7fffffu
#define S_MINN   0x00800000u
#define S_MINSUB 0x00000001u
#define S_MAXSUB 0x007fffffu
#define S_NMAXSUB 0x807fffffu
#define S_NMINN  0x80800000u
#define S_3E9    0x4f32d05eu /* 3000000000 */
#define S_2P31   0x4f000000u
#define S_N2P31  0xcf000000u
#define S_2P63   0x5f000000u
#define S_N2P63  0xdf000000u
#define S_2P64   0x5f800000u

/* double */
#define D_ZERO   0x0000000000000000ULL
#define D_NZERO  0x8000000000000000ULL
#define D_ONE    0x3ff0000000000000ULL
#define D_NONE   0xbff0000000000000ULL
#define D_TWO    0x4000000000000000ULL
#define D_THREE  0x4008000000000000ULL
#define D_2P5    0x4004000000000000ULL
#define D_0P1    0x3fb999999999999aULL
#define D_0P2    0x3fc999999999999aULL
#define D_PINF   0x7ff0000000000000ULL
#define D_NINF   0xfff0000000000000ULL
#define D_QNAN   0x7ff8000000000000ULL
#define D_SNAN   0x7ff0000000000001ULL
#define D_MAXN   0x7fefffffffffffffULL
#define D_MINN   0x0010000000000000ULL
#define D_MINSUB 0x0000000000000001ULL
#define D_2P63   0x43e0000000000000ULL
#define D_1E300  0x7e37e43c8800759cULL
#define D_1EM50  0x358dee7a4ad4b81fULL
#define D_X30    0x3ff0000000400000ULL /* 1 + 2^-30 */
#define D_X30SQ  0x3ff0000000800000ULL /* (1 + 2^-30)^2 rounded = 1 + 2^-29 */

struct res {
    uint64_t f;  /* ft3 after the instruction (fmv.x.d) */
    uint64_t x;  /* integer result register */
    unsigned fl; /* fflags */
};

/*
 * Run `insn` with ft0/ft1/ft2 = a/b/c (raw 64-bit patterns) and integer
 * input %[ia] = a; the instruction writes ft3 or %[x].
 */
#define FPX(insn, a, b, c) ({                                              \
    struct res __r;                                                        \
    uint64_t __a = (a), __b = (b), __c = (c);                              \
    __asm__ volatile (                                                     \
        "fmv.d.x ft0, %[ia]\n\t"                                           \
        "fmv.d.x ft1, %[ib]\n\t"                                           \
        "fmv.d.x ft2, %[ic]\n\t"                                           \
        "fmv.d.x ft3, zero\n\t"                                            \
        "li %[x], 0\n\t"                                                   \
        "csrwi fflags, 0\n\t"                                              \
        insn "\n\t"                                                        \
        "frflags %[fl]\n\t"                                                \
        "fmv.x.d %[f], ft3"                                                \
        : [f] "=&r"(__r.f), [x] "=&r"(__r.x), [fl] "=&r"(__r.fl)           \
        : [ia] "r"(__a), [ib] "r"(__b), [ic] "r"(__c)                      \
        : "ft0", "ft1", "ft2", "ft3");                                     \
    __r; })

static int nchecks, nfailed, first_failed;

static void check(const char *name, uint64_t got, uint64_t want, unsigned gotfl, unsigned wantfl)
{
    nchecks++;
    if (got == want && gotfl == wantfl)
        return;
    nfailed++;
    if (!first_failed)
        first_failed = nchecks;
    printf("FAIL %d %s: got %016llx flags %02x, want %016llx flags %02x\n", nchecks, name,
           (unsigned long long)got, gotfl, (unsigned long long)want, wantfl);
}

/* FP result (ft3) */
#define CF(name, insn, a, b, c, want, wantfl) do { \
    struct res _r = FPX(insn, a, b, c); check(name, _r.f, want, _r.fl, wantfl); } while (0)
/* integer result (%[x]) */
#define CX(name, insn, a, b, c, want, wantfl) do { \
    struct res _r = FPX(insn, a, b, c); check(name, _r.x, want, _r.fl, wantfl); } while (0)

static void arithmetic(void)
{
    CF("fadd.s 1+2", "fadd.s ft3, ft0, ft1, rne", BOX(S_ONE), BOX(S_TWO), 0, BOX(S_THREE), 0);
    CF("fadd.s 1+2^-24 rne", "fadd.s ft3, ft0, ft1, rne", BOX(S_ONE), BOX(S_EPS24), 0, BOX(S_ONE), NX);
    CF("fadd.s 1+2^-24 rtz", "fadd.s ft3, ft0, ft1, rtz", BOX(S_ONE), BOX(S_EPS24), 0, BOX(S_ONE), NX);
    CF("fadd.s 1+2^-24 rdn", "fadd.s ft3, ft0, ft1, rdn", BOX(S_ONE), BOX(S_EPS24), 0, BOX(S_ONE), NX);
    CF("fadd.s 1+2^-24 rup", "fadd.s ft3, ft0, ft1, rup", BOX(S_ONE), BOX(S_EPS24), 0, BOX(0x3f800001), NX);
    CF("fadd.s 1+2^-24 rmm", "fadd.s ft3, ft0, ft1, rmm", BOX(S_ONE), BOX(S_EPS24), 0, BOX(0x3f800001), NX);
    CF("fadd.s -1-2^-24 rdn", "fadd.s ft3, ft0, ft1, rdn", BOX(S_NONE), BOX(S_NEPS24), 0, BOX(0xbf800001), NX);
    CF("fadd.s -1-2^-24 rup", "fadd.s ft3, ft0, ft1, rup", BOX(S_NONE), BOX(S_NEPS24), 0, BOX(S_NONE), NX);
    CF("fadd.s -1-2^-24 rtz", "fadd.s ft3, ft0, ft1, rtz", BOX(S_NONE), BOX(S_NEPS24), 0, BOX(S_NONE), NX);
    CF("fsub.s inf-inf", "fsub.s ft3, ft0, ft1, rne", BOX(S_PINF), BOX(S_PINF), 0, BOX(S_QNAN), NV);
    CF("fsub.s 1-1 rne = +0", "fsub.s ft3, ft0, ft1, rne", BOX(S_ONE), BOX(S_ONE), 0, BOX(S_ZERO), 0);
    CF("fsub.s 1-1 rdn = -0", "fsub.s ft3, ft0, ft1, rdn", BOX(S_ONE), BOX(S_ONE), 0, BOX(S_NZERO), 0);
    CF("fadd.s -0+-0", "fadd.s ft3, ft0, ft1, rne", BOX(S_NZERO), BOX(S_NZERO), 0, BOX(S_NZERO), 0);
    CF("fadd.s sNaN+1", "fadd.s ft3, ft0, ft1, rne", BOX(S_SNAN), BOX(S_ONE), 0, BOX(S_QNAN), NV);
    CF("fadd.s qNaN+1", "fadd.s ft3, ft0, ft1, rne", BOX(0x7fc12345), BOX(S_ONE), 0, BOX(S_QNAN), 0);
    CF("fmul.s 0*inf", "fmul.s ft3, ft0, ft1, rne", BOX(S_ZERO), BOX(S_PINF), 0, BOX(S_QNAN), NV);
    CF("fmul.s max*2 rne", "fmul.s ft3, ft0, ft1, rne", BOX(S_MAXN), BOX(S_TWO), 0, BOX(S_PINF), OF | NX);
    CF("fmul.s max*2 rtz", "fmul.s ft3, ft0, ft1, rtz", BOX(S_MAXN), BOX(S_TWO), 0, BOX(S_MAXN), OF | NX);
    CF("fmul.s max*2 rdn", "fmul.s ft3, ft0, ft1, rdn", BOX(S_MAXN), BOX(S_TWO), 0, BOX(S_MAXN), OF | NX);
    CF("fmul.s max*2 rup", "fmul.s ft3, ft0, ft1, rup", BOX(S_MAXN), BOX(S_TWO), 0, BOX(S_PINF), OF | NX);
    CF("fmul.s -max*2 rup", "fmul.s ft3, ft0, ft1, rup", BOX(S_MAXN | 0x80000000u), BOX(S_TWO), 0,
       BOX(0xff7fffff), OF | NX);
    CF("fmul.s minnormal/2 exact", "fmul.s ft3, ft0, ft1, rne", BOX(S_MINN), BOX(S_HALF), 0, BOX(0x00400000), 0);
    CF("fmul.s minsub/2 rne", "fmul.s ft3, ft0, ft1, rne", BOX(S_MINSUB), BOX(S_HALF), 0, BOX(S_ZERO), UF | NX);
    CF("fmul.s minsub/2 rup", "fmul.s ft3, ft0, ft1, rup", BOX(S_MINSUB), BOX(S_HALF), 0, BOX(S_MINSUB), UF | NX);
    CF("fmul.s maxsub*1", "fmul.s ft3, ft0, ft1, rne", BOX(S_MAXSUB), BOX(S_ONE), 0, BOX(S_MAXSUB), 0);
    CF("fdiv.s 1/0", "fdiv.s ft3, ft0, ft1, rne", BOX(S_ONE), BOX(S_ZERO), 0, BOX(S_PINF), DZ);
    CF("fdiv.s -1/0", "fdiv.s ft3, ft0, ft1, rne", BOX(S_NONE), BOX(S_ZERO), 0, BOX(S_NINF), DZ);
    CF("fdiv.s 1/-0", "fdiv.s ft3, ft0, ft1, rne", BOX(S_ONE), BOX(S_NZERO), 0, BOX(S_NINF), DZ);
    CF("fdiv.s 0/0", "fdiv.s ft3, ft0, ft1, rne", BOX(S_ZERO), BOX(S_ZERO), 0, BOX(S_QNAN), NV);
    CF("fdiv.s inf/inf", "fdiv.s ft3, ft0, ft1, rne", BOX(S_PINF), BOX(S_PINF), 0, BOX(S_QNAN), NV);
    CF("fdiv.s 1/3 rne", "fdiv.s ft3, ft0, ft1, rne", BOX(S_ONE), BOX(S_THREE), 0, BOX(0x3eaaaaab), NX);
    CF("fdiv.s 1/3 rtz", "fdiv.s ft3, ft0, ft1, rtz", BOX(S_ONE), BOX(S_THREE), 0, BOX(0x3eaaaaaa), NX);
    CF("fsqrt.s 4", "fsqrt.s ft3, ft0, rne", BOX(S_FOUR), 0, 0, BOX(S_TWO), 0);
    CF("fsqrt.s 2 rne", "fsqrt.s ft3, ft0, rne", BOX(S_TWO), 0, 0, BOX(0x3fb504f3), NX);
    CF("fsqrt.s 2 rup", "fsqrt.s ft3, ft0, rup", BOX(S_TWO), 0, 0, BOX(0x3fb504f4), NX);
    CF("fsqrt.s -1", "fsqrt.s ft3, ft0, rne", BOX(S_NONE), 0, 0, BOX(S_QNAN), NV);
    CF("fsqrt.s -0", "fsqrt.s ft3, ft0, rne", BOX(S_NZERO), 0, 0, BOX(S_NZERO), 0);
    CF("fsqrt.s +inf", "fsqrt.s ft3, ft0, rne", BOX(S_PINF), 0, 0, BOX(S_PINF), 0);

    CF("fadd.d 0.1+0.2", "fadd.d ft3, ft0, ft1, rne", D_0P1, D_0P2, 0, 0x3fd3333333333334ULL, NX);
    CF("fadd.d 0.1+0.2 rtz", "fadd.d ft3, ft0, ft1, rtz", D_0P1, D_0P2, 0, 0x3fd3333333333333ULL, NX);
    CF("fdiv.d 1/3", "fdiv.d ft3, ft0, ft1, rne", D_ONE, D_THREE, 0, 0x3fd5555555555555ULL, NX);
    CF("fdiv.d 1/3 rup", "fdiv.d ft3, ft0, ft1, rup", D_ONE, D_THREE, 0, 0x3fd5555555555556ULL, NX);
    CF("fdiv.d 1/0", "fdiv.d ft3, ft0, ft1, rne", D_ONE, D_ZERO, 0, D_PINF, DZ);
    CF("fsqrt.d 2", "fsqrt.d ft3, ft0, rne", D_TWO, 0, 0, 0x3ff6a09e667f3bcdULL, NX);
    CF("fsqrt.d -inf", "fsqrt.d ft3, ft0, rne", D_NINF, 0, 0, D_QNAN, NV);
    CF("fmul.d max*2", "fmul.d ft3, ft0, ft1, rne", D_MAXN, D_TWO, 0, D_PINF, OF | NX);
    CF("fmul.d minsub*0.5 rne", "fmul.d ft3, ft0, ft1, rne", D_MINSUB, 0x3fe0000000000000ULL, 0, D_ZERO, UF | NX);
    CF("fmul.d minnormal*0.5", "fmul.d ft3, ft0, ft1, rne", D_MINN, 0x3fe0000000000000ULL, 0,
       0x0008000000000000ULL, 0);
    CF("fsub.d inf-inf", "fsub.d ft3, ft0, ft1, rne", D_PINF, D_PINF, 0, D_QNAN, NV);
    CF("fadd.d sNaN+1", "fadd.d ft3, ft0, ft1, rne", D_SNAN, D_ONE, 0, D_QNAN, NV);
}

static void fused(void)
{
    CF("fmadd.s 2*3+1", "fmadd.s ft3, ft0, ft1, ft2, rne", BOX(S_TWO), BOX(S_THREE), BOX(S_ONE), BOX(S_SEVEN), 0);
    CF("fmsub.s 2*3-1", "fmsub.s ft3, ft0, ft1, ft2, rne", BOX(S_TWO), BOX(S_THREE), BOX(S_ONE), BOX(S_FIVE), 0);
    CF("fnmsub.s -(2*3)+1", "fnmsub.s ft3, ft0, ft1, ft2, rne", BOX(S_TWO), BOX(S_THREE), BOX(S_ONE),
       BOX(0xc0a00000), 0);
    CF("fnmadd.s -(2*3)-1", "fnmadd.s ft3, ft0, ft1, ft2, rne", BOX(S_TWO), BOX(S_THREE), BOX(S_ONE),
       BOX(0xc0e00000), 0);
    CF("fmadd.s 0*inf+qNaN", "fmadd.s ft3, ft0, ft1, ft2, rne", BOX(S_ZERO), BOX(S_PINF), BOX(S_QNAN),
       BOX(S_QNAN), NV);
    CF("fmadd.s inf*1-inf", "fmadd.s ft3, ft0, ft1, ft2, rne", BOX(S_PINF), BOX(S_ONE), BOX(S_NINF),
       BOX(S_QNAN), NV);
    CF("fmadd.s 1*1+sNaN", "fmadd.s ft3, ft0, ft1, ft2, rne", BOX(S_ONE), BOX(S_ONE), BOX(S_SNAN),
       BOX(S_QNAN), NV);
    CF("fmsub.d fused residual", "fmsub.d ft3, ft0, ft1, ft2, rne", D_X30, D_X30, D_X30SQ,
       0x3c30000000000000ULL, 0);
    CF("fnmadd.d fused residual", "fnmadd.d ft3, ft0, ft1, ft2, rne", D_X30, D_X30, 0xbff0000000800000ULL,
       0xbc30000000000000ULL, 0);
    CF("fmadd.d 1*1+(-1) = +0", "fmadd.d ft3, ft0, ft1, ft2, rne", D_ONE, D_ONE, D_NONE, D_ZERO, 0);
    CF("fmadd.d 1*1+(-1) rdn = -0", "fmadd.d ft3, ft0, ft1, ft2, rdn", D_ONE, D_ONE, D_NONE, D_NZERO, 0);
    CF("fmadd.d max*2-max", "fmadd.d ft3, ft0, ft1, ft2, rne", D_MAXN, D_TWO, D_MAXN | D_NZERO, D_MAXN, 0);
}

static void minmax_compare(void)
{
    CF("fmin.s -0,+0", "fmin.s ft3, ft0, ft1", BOX(S_NZERO), BOX(S_ZERO), 0, BOX(S_NZERO), 0);
    CF("fmin.s +0,-0", "fmin.s ft3, ft0, ft1", BOX(S_ZERO), BOX(S_NZERO), 0, BOX(S_NZERO), 0);
    CF("fmax.s -0,+0", "fmax.s ft3, ft0, ft1", BOX(S_NZERO), BOX(S_ZERO), 0, BOX(S_ZERO), 0);
    CF("fmax.s +0,-0", "fmax.s ft3, ft0, ft1", BOX(S_ZERO), BOX(S_NZERO), 0, BOX(S_ZERO), 0);
    CF("fmin.s qNaN,1", "fmin.s ft3, ft0, ft1", BOX(S_QNAN), BOX(S_ONE), 0, BOX(S_ONE), 0);
    CF("fmax.s 1,qNaN", "fmax.s ft3, ft0, ft1", BOX(S_ONE), BOX(S_QNAN), 0, BOX(S_ONE), 0);
    CF("fmin.s sNaN,1", "fmin.s ft3, ft0, ft1", BOX(S_SNAN), BOX(S_ONE), 0, BOX(S_ONE), NV);
    CF("fmax.s qNaN,qNaN", "fmax.s ft3, ft0, ft1", BOX(0x7fc00005), BOX(S_QNAN), 0, BOX(S_QNAN), 0);
    CF("fmin.s sNaN,qNaN", "fmin.s ft3, ft0, ft1", BOX(S_SNAN), BOX(S_QNAN), 0, BOX(S_QNAN), NV);
    CF("fmin.s -inf,1", "fmin.s ft3, ft0, ft1", BOX(S_NINF), BOX(S_ONE), 0, BOX(S_NINF), 0);
    CF("fmin.d -0,+0", "fmin.d ft3, ft0, ft1", D_NZERO, D_ZERO, 0, D_NZERO, 0);
    CF("fmax.d -0,+0", "fmax.d ft3, ft0, ft1", D_NZERO, D_ZERO, 0, D_ZERO, 0);
    CF("fmax.d sNaN,2", "fmax.d ft3, ft0, ft1", D_SNAN, D_TWO, 0, D_TWO, NV);
    CF("fmin.d qNaN,qNaN", "fmin.d ft3, ft0, ft1", D_QNAN | 7, D_QNAN, 0, D_QNAN, 0);

    CX("feq.s qNaN,qNaN", "feq.s %[x], ft0, ft1", BOX(S_QNAN), BOX(S_QNAN), 0, 0, 0);
    CX("feq.s sNaN,1", "feq.s %[x], ft0, ft1", BOX(S_SNAN), BOX(S_ONE), 0, 0, NV);
    CX("flt.s qNaN,1", "flt.s %[x], ft0, ft1", BOX(S_QNAN), BOX(S_ONE), 0, 0, NV);
    CX("fle.s 1,qNaN", "fle.s %[x], ft0, ft1", BOX(S_ONE), BOX(S_QNAN), 0, 0, NV);
    CX("feq.s -0,+0", "feq.s %[x], ft0, ft1", BOX(S_NZERO), BOX(S_ZERO), 0, 1, 0);
    CX("fle.s -0,+0", "fle.s %[x], ft0, ft1", BOX(S_NZERO), BOX(S_ZERO), 0, 1, 0);
    CX("flt.s -0,+0", "flt.s %[x], ft0, ft1", BOX(S_NZERO), BOX(S_ZERO), 0, 0, 0);
    CX("flt.s 1,2", "flt.s %[x], ft0, ft1", BOX(S_ONE), BOX(S_TWO), 0, 1, 0);
    CX("fle.s 2,1", "fle.s %[x], ft0, ft1", BOX(S_TWO), BOX(S_ONE), 0, 0, 0);
    CX("flt.s -inf,-max", "flt.s %[x], ft0, ft1", BOX(S_NINF), BOX(0xff7fffff), 0, 1, 0);
    CX("feq.d qNaN,1", "feq.d %[x], ft0, ft1", D_QNAN, D_ONE, 0, 0, 0);
    CX("flt.d qNaN,1", "flt.d %[x], ft0, ft1", D_QNAN, D_ONE, 0, 0, NV);
    CX("fle.d -0,+0", "fle.d %[x], ft0, ft1", D_NZERO, D_ZERO, 0, 1, 0);
    CX("feq.d +0,-0", "feq.d %[x], ft0, ft1", D_ZERO, D_NZERO, 0, 1, 0);
}

static void classify_sign(void)
{
    static const struct { const char *name; uint32_t s; uint64_t d; unsigned cls; } cases[] = {
        { "-inf", S_NINF, D_NINF, 1u << 0 },
        { "-normal", S_NONE, D_NONE, 1u << 1 },
        { "-subnormal", S_NMAXSUB, 0x800fffffffffffffULL, 1u << 2 },
        { "-0", S_NZERO, D_NZERO, 1u << 3 },
        { "+0", S_ZERO, D_ZERO, 1u << 4 },
        { "+subnormal", S_MINSUB, D_MINSUB, 1u << 5 },
        { "+normal", S_MINN, D_MINN, 1u << 6 },
        { "+inf", S_PINF, D_PINF, 1u << 7 },
        { "sNaN", S_SNAN, D_SNAN, 1u << 8 },
        { "qNaN", S_QNAN, D_QNAN, 1u << 9 },
    };
    char name[48];
    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(name, sizeof(name), "fclass.s %s", cases[i].name);
        CX(name, "fclass.s %[x], ft0", BOX(cases[i].s), 0, 0, cases[i].cls, 0);
        snprintf(name, sizeof(name), "fclass.d %s", cases[i].name);
        CX(name, "fclass.d %[x], ft0", cases[i].d, 0, 0, cases[i].cls, 0);
    }
    CX("fclass.s sNaN 0xff800001", "fclass.s %[x], ft0", BOX(0xff800001), 0, 0, 1u << 8, 0);

    CF("fsgnj.s 1,-2", "fsgnj.s ft3, ft0, ft1", BOX(S_ONE), BOX(S_NTWO), 0, BOX(S_NONE), 0);
    CF("fsgnjn.s 1,-2", "fsgnjn.s ft3, ft0, ft1", BOX(S_ONE), BOX(S_NTWO), 0, BOX(S_ONE), 0);
    CF("fsgnjx.s -1,-2", "fsgnjx.s ft3, ft0, ft1", BOX(S_NONE), BOX(S_NTWO), 0, BOX(S_ONE), 0);
    CF("fsgnj.s qNaN,-1 keeps payload", "fsgnj.s ft3, ft0, ft1", BOX(0x7fc00123), BOX(S_NONE), 0,
       BOX(0xffc00123), 0);
    CF("fsgnjn.s sNaN,sNaN no flags", "fsgnjn.s ft3, ft0, ft1", BOX(S_SNAN), BOX(S_SNAN), 0, BOX(0xff800001), 0);
    CF("fsgnj.d 1,-0", "fsgnj.d ft3, ft0, ft1", D_ONE, D_NZERO, 0, D_NONE, 0);
    CF("fsgnjx.d -1,-1", "fsgnjx.d ft3, ft0, ft1", D_NONE, D_NONE, 0, D_ONE, 0);
    CF("fsgnjn.d sNaN", "fsgnjn.d ft3, ft0, ft1", D_SNAN, D_SNAN, 0, D_SNAN | D_NZERO, 0);
}

static void conversions(void)
{
    static const struct { const char *rm; int64_t p25, n25; } rnd[] = {
        /* fcvt.w.s of +2.5 and -2.5 under each rounding mode */
        { "rne", 2, -2 }, { "rtz", 2, -2 }, { "rdn", 2, -3 }, { "rup", 3, -2 }, { "rmm", 3, -3 },
    };
    struct res r;
#define CVT_RM(rmstr, idx) \
    r = FPX("fcvt.w.s %[x], ft0, " rmstr, BOX(S_2P5), 0, 0); \
    check("fcvt.w.s 2.5 " rmstr, r.x, (uint64_t)rnd[idx].p25, r.fl, NX); \
    r = FPX("fcvt.w.s %[x], ft0, " rmstr, BOX(S_N2P5), 0, 0); \
    check("fcvt.w.s -2.5 " rmstr, r.x, (uint64_t)rnd[idx].n25, r.fl, NX); \
    r = FPX("fcvt.l.d %[x], ft0, " rmstr, D_2P5, 0, 0); \
    check("fcvt.l.d 2.5 " rmstr, r.x, (uint64_t)rnd[idx].p25, r.fl, NX);
    CVT_RM("rne", 0)
    CVT_RM("rtz", 1)
    CVT_RM("rdn", 2)
    CVT_RM("rup", 3)
    CVT_RM("rmm", 4)
#undef CVT_RM

    CX("fcvt.w.s qNaN", "fcvt.w.s %[x], ft0, rtz", BOX(S_QNAN), 0, 0, 0x7fffffffULL, NV);
    CX("fcvt.w.s -qNaN", "fcvt.w.s %[x], ft0, rtz", BOX(0xffc00000), 0, 0, 0x7fffffffULL, NV);
    CX("fcvt.w.s +inf", "fcvt.w.s %[x], ft0, rtz", BOX(S_PINF), 0, 0, 0x7fffffffULL, NV);
    CX("fcvt.w.s -inf", "fcvt.w.s %[x], ft0, rtz", BOX(S_NINF), 0, 0, 0xffffffff80000000ULL, NV);
    CX("fcvt.w.s 3e9", "fcvt.w.s %[x], ft0, rtz", BOX(S_3E9), 0, 0, 0x7fffffffULL, NV);
    CX("fcvt.w.s -2^31", "fcvt.w.s %[x], ft0, rtz", BOX(S_N2P31), 0, 0, 0xffffffff80000000ULL, 0);
    CX("fcvt.w.s -0.5 rtz", "fcvt.w.s %[x], ft0, rtz", BOX(S_NHALF), 0, 0, 0, NX);
    CX("fcvt.wu.s 3e9 sign-extends", "fcvt.wu.s %[x], ft0, rtz", BOX(S_3E9), 0, 0, 0xffffffffb2d05e00ULL, 0);
    CX("fcvt.wu.s -1", "fcvt.wu.s %[x], ft0, rtz", BOX(S_NONE), 0, 0, 0, NV);
    CX("fcvt.wu.s -0.5 rtz", "fcvt.wu.s %[x], ft0, rtz", BOX(S_NHALF), 0, 0, 0, NX);
    CX("fcvt.wu.s qNaN", "fcvt.wu.s %[x], ft0, rtz", BOX(S_QNAN), 0, 0, 0xffffffffffffffffULL, NV);
    CX("fcvt.wu.s 2^32", "fcvt.wu.s %[x], ft0, rtz", BOX(0x4f800000), 0, 0, 0xffffffffffffffffULL, NV);
    CX("fcvt.l.s 2^63", "fcvt.l.s %[x], ft0, rtz", BOX(S_2P63), 0, 0, 0x7fffffffffffffffULL, NV);
    CX("fcvt.l.s -2^63", "fcvt.l.s %[x], ft0, rtz", BOX(S_N2P63), 0, 0, 0x8000000000000000ULL, 0);
    CX("fcvt.l.s qNaN", "fcvt.l.s %[x], ft0, rtz", BOX(S_QNAN), 0, 0, 0x7fffffffffffffffULL, NV);
    CX("fcvt.l.s -inf", "fcvt.l.s %[x], ft0, rtz", BOX(S_NINF), 0, 0, 0x8000000000000000ULL, NV);
    CX("fcvt.lu.s -0", "fcvt.lu.s %[x], ft0, rtz", BOX(S_NZERO), 0, 0, 0, 0);
    CX("fcvt.lu.s 2^64", "fcvt.lu.s %[x], ft0, rtz", BOX(S_2P64), 0, 0, 0xffffffffffffffffULL, NV);
    CX("fcvt.lu.s 2^63", "fcvt.lu.s %[x], ft0, rtz", BOX(S_2P63), 0, 0, 0x8000000000000000ULL, 0);
    CX("fcvt.w.d 2^31-0.5 rdn", "fcvt.w.d %[x], ft0, rdn", 0x41dfffffffe00000ULL, 0, 0, 0x7fffffffULL, NX);
    CX("fcvt.w.d 2^31-0.5 rne overflows", "fcvt.w.d %[x], ft0, rne", 0x41dfffffffe00000ULL, 0, 0, 0x7fffffffULL, NV);
    CX("fcvt.w.d 2^31 rtz", "fcvt.w.d %[x], ft0, rtz", 0x41e0000000000000ULL, 0, 0, 0x7fffffffULL, NV);
    CX("fcvt.wu.d 4294967295.5 rdn", "fcvt.wu.d %[x], ft0, rdn", 0x41effffffff00000ULL, 0, 0,
       0xffffffffffffffffULL, NX);
    CX("fcvt.l.d 2^63", "fcvt.l.d %[x], ft0, rtz", D_2P63, 0, 0, 0x7fffffffffffffffULL, NV);
    CX("fcvt.lu.d -1", "fcvt.lu.d %[x], ft0, rtz", D_NONE, 0, 0, 0, NV);
    CX("fcvt.lu.d sNaN", "fcvt.lu.d %[x], ft0, rtz", D_SNAN, 0, 0, 0xffffffffffffffffULL, NV);

    CF("fcvt.s.w 2^31-1 rne", "fcvt.s.w ft3, %[ia], rne", 0x7fffffffULL, 0, 0, BOX(S_2P31), NX);
    CF("fcvt.s.w 2^31-1 rtz", "fcvt.s.w ft3, %[ia], rtz", 0x7fffffffULL, 0, 0, BOX(0x4effffff), NX);
    CF("fcvt.s.w -1", "fcvt.s.w ft3, %[ia], rne", 0xffffffffffffffffULL, 0, 0, BOX(S_NONE), 0);
    CF("fcvt.s.w uses low 32 bits", "fcvt.s.w ft3, %[ia], rne", 0x1234567800000003ULL, 0, 0, BOX(S_THREE), 0);
    CF("fcvt.s.wu 2^32-1", "fcvt.s.wu ft3, %[ia], rne", 0xffffffffffffffffULL, 0, 0, BOX(0x4f800000), NX);
    CF("fcvt.s.l INT64_MIN", "fcvt.s.l ft3, %[ia], rne", 0x8000000000000000ULL, 0, 0, BOX(S_N2P63), 0);
    CF("fcvt.s.lu 2^64-1", "fcvt.s.lu ft3, %[ia], rne", 0xffffffffffffffffULL, 0, 0, BOX(S_2P64), NX);
    CF("fcvt.s.lu 2^64-1 rtz", "fcvt.s.lu ft3, %[ia], rtz", 0xffffffffffffffffULL, 0, 0, BOX(0x5f7fffff), NX);
    CF("fcvt.d.w -2^31", "fcvt.d.w ft3, %[ia]", 0xffffffff80000000ULL, 0, 0, 0xc1e0000000000000ULL, 0);
    CF("fcvt.d.wu 2^32-1", "fcvt.d.wu ft3, %[ia]", 0xffffffffULL, 0, 0, 0x41efffffffe00000ULL, 0);
    CF("fcvt.d.l 2^63-1 rne", "fcvt.d.l ft3, %[ia], rne", 0x7fffffffffffffffULL, 0, 0, D_2P63, NX);
    CF("fcvt.d.l 2^63-1 rtz", "fcvt.d.l ft3, %[ia], rtz", 0x7fffffffffffffffULL, 0, 0, 0x43dfffffffffffffULL, NX);
    CF("fcvt.d.lu 2^64-1", "fcvt.d.lu ft3, %[ia], rne", 0xffffffffffffffffULL, 0, 0, 0x43f0000000000000ULL, NX);

    CF("fcvt.s.d 0.1 rne", "fcvt.s.d ft3, ft0, rne", D_0P1, 0, 0, BOX(0x3dcccccd), NX);
    CF("fcvt.s.d 0.1 rtz", "fcvt.s.d ft3, ft0, rtz", D_0P1, 0, 0, BOX(0x3dcccccc), NX);
    CF("fcvt.s.d 1e300", "fcvt.s.d ft3, ft0, rne", D_1E300, 0, 0, BOX(S_PINF), OF | NX);
    CF("fcvt.s.d 1e300 rtz", "fcvt.s.d ft3, ft0, rtz", D_1E300, 0, 0, BOX(S_MAXN), OF | NX);
    CF("fcvt.s.d 1e-50", "fcvt.s.d ft3, ft0, rne", D_1EM50, 0, 0, BOX(S_ZERO), UF | NX);
    CF("fcvt.s.d sNaN", "fcvt.s.d ft3, ft0, rne", D_SNAN, 0, 0, BOX(S_QNAN), NV);
    CF("fcvt.s.d -inf", "fcvt.s.d ft3, ft0, rne", D_NINF, 0, 0, BOX(S_NINF), 0);
    CF("fcvt.d.s sNaN", "fcvt.d.s ft3, ft0", BOX(S_SNAN), 0, 0, D_QNAN, NV);
    CF("fcvt.d.s qNaN payload", "fcvt.d.s ft3, ft0", BOX(0x7fc00001), 0, 0, D_QNAN, 0);
    CF("fcvt.d.s min subnormal", "fcvt.d.s ft3, ft0", BOX(S_MINSUB), 0, 0, 0x36a0000000000000ULL, 0);
    CF("fcvt.d.s -0", "fcvt.d.s ft3, ft0", BOX(S_NZERO), 0, 0, D_NZERO, 0);
}

static void nan_boxing_and_moves(void)
{
    /* an improperly boxed single is read as the canonical NaN */
    CF("fadd.s unboxed input", "fadd.s ft3, ft0, ft1, rne", 0x000000003f800000ULL, BOX(S_ONE), 0, BOX(S_QNAN), 0);
    CF("fsgnj.s unboxed input", "fsgnj.s ft3, ft0, ft1", 0x000000003f800000ULL, 0x00000000bf800000ULL, 0,
       BOX(S_QNAN), 0);
    CF("fmv.w.x boxes", "fmv.w.x ft3, %[ia]", 0x123456783f800000ULL, 0, 0, BOX(S_ONE), 0);
    CX("fmv.x.w sign-extends", "fmv.x.w %[x], ft0", BOX(S_NONE), 0, 0, 0xffffffffbf800000ULL, 0);
    CX("fmv.x.w unboxed low bits", "fmv.x.w %[x], ft0", 0x000000003f800000ULL, 0, 0, 0x3f800000ULL, 0);
    CX("fmv.x.d", "fmv.x.d %[x], ft0", D_SNAN, 0, 0, D_SNAN, 0);
    CF("fmv.d.x", "fmv.d.x ft3, %[ia]", D_SNAN, 0, 0, D_SNAN, 0);
    CF("fsgnj.d moves sNaN quietly", "fsgnj.d ft3, ft0, ft0", D_SNAN, 0, 0, D_SNAN, 0);

    volatile uint32_t word = S_NTWO;
    volatile uint64_t dword = D_1E300;
    uint64_t got, got2;
    __asm__ volatile ("flw ft0, %1\n\tfmv.x.d %0, ft0" : "=r"(got) : "m"(word) : "ft0");
    check("flw boxes", got, BOX(S_NTWO), 0, 0);
    __asm__ volatile ("fld ft0, %1\n\tfmv.x.d %0, ft0" : "=r"(got) : "m"(dword) : "ft0");
    check("fld", got, D_1E300, 0, 0);
    uint32_t out32 = 0;
    uint64_t out64 = 0;
    __asm__ volatile ("fmv.d.x ft0, %2\n\tfsw ft0, %0\n\tfsd ft0, %1" : "=m"(out32), "=m"(out64)
                      : "r"(0x00000000c0490fdbULL) : "ft0");
    check("fsw stores low 32 bits of unboxed", out32, 0xc0490fdbULL, 0, 0);
    check("fsd", out64, 0x00000000c0490fdbULL, 0, 0);
    (void)got2;
}

static void csrs_and_dynamic_rounding(void)
{
    uint64_t v, old;
    __asm__ volatile ("fscsr zero");
    __asm__ volatile ("fscsr %0" :: "r"(0xfffUL));
    __asm__ volatile ("frcsr %0" : "=r"(v));
    check("fcsr keeps 8 bits", v, 0xff, 0, 0);
    __asm__ volatile ("frrm %0" : "=r"(v));
    check("frm field of fcsr", v, 7, 0, 0);
    __asm__ volatile ("frflags %0" : "=r"(v));
    check("fflags field of fcsr", v, 0x1f, 0, 0);
    __asm__ volatile ("fsflagsi %0, 0x05" : "=r"(old));
    check("fsflagsi returns old flags", old, 0x1f, 0, 0);
    __asm__ volatile ("csrrsi %0, fflags, 0x08" : "=r"(old));
    check("csrrsi fflags old", old, 0x05, 0, 0);
    __asm__ volatile ("csrrci %0, fflags, 0x01" : "=r"(old));
    check("csrrci fflags old", old, 0x0d, 0, 0);
    __asm__ volatile ("frcsr %0" : "=r"(v));
    check("fcsr after flag ops", v, 0xec, 0, 0);
    __asm__ volatile ("fsrmi %0, 2" : "=r"(old));
    check("fsrmi returns old frm", old, 7, 0, 0);
    __asm__ volatile ("frcsr %0" : "=r"(v));
    check("fcsr after fsrmi", v, 0x4c, 0, 0);
    __asm__ volatile ("fscsr zero");

    /* accrued flags */
    __asm__ volatile (
        "csrwi fflags, 0\n\t"
        "fmv.w.x ft0, %1\n\t"
        "fmv.w.x ft1, %2\n\t"
        "fdiv.s ft2, ft0, ft1, rne\n\t" /* 1/3: NX */
        "fmv.w.x ft1, zero\n\t"
        "fdiv.s ft2, ft0, ft1, rne\n\t" /* 1/0: DZ */
        "frflags %0"
        : "=r"(v) : "r"(S_ONE), "r"(S_THREE) : "ft0", "ft1", "ft2");
    check("flags accrue NX|DZ", v, NX | DZ, 0, 0);

    /* every dynamic rounding mode via fsrm */
    static const uint32_t want_pos[5] = { S_ONE, S_ONE, S_ONE, 0x3f800001, 0x3f800001 };
    static const uint32_t want_neg[5] = { S_NONE, S_NONE, 0xbf800001, S_NONE, 0xbf800001 };
    static const char *const names[5][2] = {
        { "dyn rne 1+2^-24", "dyn rne -1-2^-24" }, { "dyn rtz 1+2^-24", "dyn rtz -1-2^-24" },
        { "dyn rdn 1+2^-24", "dyn rdn -1-2^-24" }, { "dyn rup 1+2^-24", "dyn rup -1-2^-24" },
        { "dyn rmm 1+2^-24", "dyn rmm -1-2^-24" },
    };
    for (unsigned m = 0; m < 5; m++) {
        __asm__ volatile ("fsrm %0" :: "r"((uint64_t)m));
        __asm__ volatile ("frrm %0" : "=r"(v));
        check("frrm after fsrm", v, m, 0, 0);
        struct res r = FPX("fadd.s ft3, ft0, ft1", BOX(S_ONE), BOX(S_EPS24), 0);
        check(names[m][0], r.f, BOX(want_pos[m]), r.fl, NX);
        r = FPX("fadd.s ft3, ft0, ft1, dyn", BOX(S_NONE), BOX(S_NEPS24), 0);
        check(names[m][1], r.f, BOX(want_neg[m]), r.fl, NX);
        r = FPX("fcvt.w.d %[x], ft0", D_2P5, 0, 0);
        static const uint64_t cvt[5] = { 2, 2, 2, 3, 3 };
        check("fcvt.w.d 2.5 dyn", r.x, cvt[m], r.fl, NX);
    }
    __asm__ volatile ("fscsr zero");
}

int main(void)
{
    arithmetic();
    fused();
    minmax_compare();
    classify_sign();
    conversions();
    nan_boxing_and_moves();
    csrs_and_dynamic_rounding();
    printf("fp_check: %d checks, %d failed\n", nchecks, nfailed);
    if (nfailed)
        return first_failed > 255 ? 255 : first_failed;
    printf("fp_check: OK\n");
    return 0;
}
