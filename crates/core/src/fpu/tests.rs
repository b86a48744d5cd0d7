//! The FPU against riscv-tests' reference data and properties.
//!
//! The decimal literals are copied verbatim from riscv-tests, so that Rust
//! rounds them to binary exactly as the assembler did for the reference data.
#![allow(clippy::approx_constant, clippy::excessive_precision)]

use super::*;
use proptest::prelude::*;

const RNE: u8 = 0;
const RTZ: u8 = 1;
const RDN: u8 = 2;
const RUP: u8 = 3;
const RMM: u8 = 4;

/// riscv-tests' `sNaNf`, `qNaNf`, `sNaN`, `qNaN`.
const SNAN_F32: u32 = 0x7f80_0001;
const QNAN_F32: u32 = 0x7fc0_0000;
const SNAN_F64: u64 = 0x7ff0_0000_0000_0001;
const QNAN_F64: u64 = 0x7ff8_0000_0000_0000;
const INF_F32: u32 = 0x7f80_0000;
const NINF_F32: u32 = 0xff80_0000;
const INF_F64: u64 = 0x7ff0_0000_0000_0000;
const NINF_F64: u64 = 0xfff0_0000_0000_0000;

fn s(x: f32) -> u32 {
    x.to_bits()
}

fn d(x: f64) -> u64 {
    x.to_bits()
}

type Op1S = fn(u32, u8, &mut u8) -> u32;
type Op2S = fn(u32, u32, u8, &mut u8) -> u32;
type Op1D = fn(u64, u8, &mut u8) -> u64;
type Op2D = fn(u64, u64, u8, &mut u8) -> u64;

#[track_caller]
fn check<T: PartialEq + std::fmt::LowerHex>(got: (T, u8), want: T, want_flags: u8) {
    assert!(
        got.0 == want && got.1 == want_flags,
        "got {:#x} flags {:#04x}, want {:#x} flags {:#04x}",
        got.0,
        got.1,
        want,
        want_flags
    );
}

#[track_caller]
fn t1s(op: Op1S, rm: u8, a: u32, want: u32, want_flags: u8) {
    let mut fl = 0;
    check((op(a, rm, &mut fl), fl), want, want_flags);
}

#[track_caller]
fn t2s(op: Op2S, rm: u8, a: u32, b: u32, want: u32, want_flags: u8) {
    let mut fl = 0;
    check((op(a, b, rm, &mut fl), fl), want, want_flags);
}

#[track_caller]
fn t3s(rm: u8, a: u32, b: u32, c: u32, want: u32, want_flags: u8) {
    let mut fl = 0;
    check((f32_mul_add(a, b, c, rm, &mut fl), fl), want, want_flags);
}

#[track_caller]
fn t1d(op: Op1D, rm: u8, a: u64, want: u64, want_flags: u8) {
    let mut fl = 0;
    check((op(a, rm, &mut fl), fl), want, want_flags);
}

#[track_caller]
fn t2d(op: Op2D, rm: u8, a: u64, b: u64, want: u64, want_flags: u8) {
    let mut fl = 0;
    check((op(a, b, rm, &mut fl), fl), want, want_flags);
}

#[track_caller]
fn t3d(rm: u8, a: u64, b: u64, c: u64, want: u64, want_flags: u8) {
    let mut fl = 0;
    check((f64_mul_add(a, b, c, rm, &mut fl), fl), want, want_flags);
}

#[track_caller]
fn tcvt_s<R: PartialEq + std::fmt::LowerHex>(
    op: fn(u32, u8, &mut u8) -> R,
    rm: u8,
    a: u32,
    want: R,
    want_flags: u8,
) {
    let mut fl = 0;
    check((op(a, rm, &mut fl), fl), want, want_flags);
}

#[track_caller]
fn tcvt_d<R: PartialEq + std::fmt::LowerHex>(
    op: fn(u64, u8, &mut u8) -> R,
    rm: u8,
    a: u64,
    want: R,
    want_flags: u8,
) {
    let mut fl = 0;
    check((op(a, rm, &mut fl), fl), want, want_flags);
}

#[track_caller]
fn tcmp_s(op: fn(u32, u32, &mut u8) -> bool, a: u32, b: u32, want: bool, want_flags: u8) {
    let mut fl = 0;
    let got = op(a, b, &mut fl);
    assert_eq!((got, fl), (want, want_flags), "{a:#x} vs {b:#x}");
}

#[track_caller]
fn tcmp_d(op: fn(u64, u64, &mut u8) -> bool, a: u64, b: u64, want: bool, want_flags: u8) {
    let mut fl = 0;
    let got = op(a, b, &mut fl);
    assert_eq!((got, fl), (want, want_flags), "{a:#x} vs {b:#x}");
}

#[track_caller]
fn tmm_s(op: fn(u32, u32, &mut u8) -> u32, a: u32, b: u32, want: u32, want_flags: u8) {
    let mut fl = 0;
    check((op(a, b, &mut fl), fl), want, want_flags);
}

#[track_caller]
fn tmm_d(op: fn(u64, u64, &mut u8) -> u64, a: u64, b: u64, want: u64, want_flags: u8) {
    let mut fl = 0;
    check((op(a, b, &mut fl), fl), want, want_flags);
}

// -- environment -------------------------------------------------------

#[test]
fn softfloat_detects_tininess_after_rounding() {
    assert_eq!(
        sf::detect_tininess(),
        softfloat_sys::softfloat_tininess_afterRounding
    );
    // ... and on a fresh thread too (the state is thread-local).
    let t = std::thread::spawn(sf::detect_tininess).join().unwrap();
    assert_eq!(t, softfloat_sys::softfloat_tininess_afterRounding);
}

#[test]
fn flags_accumulate_and_are_not_stale() {
    let mut fl = DZ;
    // Inexact add: NX is ORed in, DZ is kept.
    f32_add(s(-1235.1), s(1.1), RNE, &mut fl);
    assert_eq!(fl, DZ | NX);
    // An exact op after an inexact one raises nothing of its own.
    let mut fl = 0;
    f32_add(s(1.0), s(2.0), RNE, &mut fl);
    assert_eq!(fl, 0);
    let mut fl = 0;
    assert!(f64_le(d(1.0), d(1.0), &mut fl));
    assert_eq!(fl, 0);
}

#[test]
fn rounding_mode_is_per_thread() {
    // 1 + 2^-24 is a tie between 1.0 and 1.0 + 2^-23.
    let handles: Vec<_> = (0..4u8)
        .map(|t| {
            std::thread::spawn(move || {
                let rm = if t % 2 == 0 { RNE } else { RUP };
                let want = if rm == RNE { 0x3f80_0000 } else { 0x3f80_0001 };
                for _ in 0..10_000 {
                    let mut fl = 0;
                    assert_eq!(f32_add(s(1.0), 0x3380_0000, rm, &mut fl), want);
                    assert_eq!(fl, NX);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

// -- NaN boxing --------------------------------------------------------

#[test]
fn nan_boxing() {
    assert_eq!(box_f32(0x3f80_0000), 0xffff_ffff_3f80_0000);
    assert_eq!(unbox_f32(0xffff_ffff_3f80_0000), 0x3f80_0000);
    assert_eq!(unbox_f32(box_f32(0)), 0);
    assert_eq!(unbox_f32(box_f32(SNAN_F32)), SNAN_F32);
    // Anything not fully boxed reads as the canonical NaN.
    assert_eq!(unbox_f32(0x0000_0000_3f80_0000), CANONICAL_NAN_F32);
    assert_eq!(unbox_f32(0x7fff_ffff_3f80_0000), CANONICAL_NAN_F32);
    assert_eq!(unbox_f32(0xffff_fffe_3f80_0000), CANONICAL_NAN_F32);
    assert_eq!(unbox_f32(d(1.0)), CANONICAL_NAN_F32);
}

// -- rv64uf/fadd.S, rv64ud/fadd.S ----------------------------------------

#[test]
fn riscv_tests_fadd() {
    t2s(f32_add, RNE, s(2.5), s(1.0), s(3.5), 0);
    t2s(f32_add, RNE, s(-1235.1), s(1.1), s(-1234.0), NX);
    t2s(
        f32_add,
        RNE,
        s(3.14159265),
        s(0.00000001),
        s(3.14159265),
        NX,
    );
    t2d(f64_add, RNE, d(2.5), d(1.0), d(3.5), 0);
    t2d(f64_add, RNE, d(-1235.1), d(1.1), d(-1234.0), NX);
    t2d(
        f64_add,
        RNE,
        d(3.14159265),
        d(0.00000001),
        d(3.14159266),
        NX,
    );

    t2s(f32_sub, RNE, s(2.5), s(1.0), s(1.5), 0);
    t2s(f32_sub, RNE, s(-1235.1), s(-1.1), s(-1234.0), NX);
    t2s(
        f32_sub,
        RNE,
        s(3.14159265),
        s(0.00000001),
        s(3.14159265),
        NX,
    );
    t2d(f64_sub, RNE, d(2.5), d(1.0), d(1.5), 0);
    t2d(f64_sub, RNE, d(-1235.1), d(-1.1), d(-1234.0), NX);
    t2d(
        f64_sub,
        RNE,
        d(3.14159265),
        d(0.00000001),
        d(3.1415926400000001),
        NX,
    );

    t2s(f32_mul, RNE, s(2.5), s(1.0), s(2.5), 0);
    t2s(f32_mul, RNE, s(-1235.1), s(-1.1), s(1358.61), NX);
    t2s(
        f32_mul,
        RNE,
        s(3.14159265),
        s(0.00000001),
        s(3.14159265e-8),
        NX,
    );
    t2d(f64_mul, RNE, d(2.5), d(1.0), d(2.5), 0);
    t2d(f64_mul, RNE, d(-1235.1), d(-1.1), d(1358.61), NX);
    t2d(
        f64_mul,
        RNE,
        d(3.14159265),
        d(0.00000001),
        d(3.14159265e-8),
        NX,
    );

    // Is the canonical NaN generated for Inf - Inf?
    t2s(f32_sub, RNE, INF_F32, INF_F32, CANONICAL_NAN_F32, NV);
    t2d(f64_sub, RNE, INF_F64, INF_F64, CANONICAL_NAN_F64, NV);
}

// -- rv64uf/fdiv.S, rv64ud/fdiv.S ----------------------------------------

#[test]
fn riscv_tests_fdiv() {
    t2s(
        f32_div,
        RNE,
        s(3.14159265),
        s(2.71828182),
        s(1.1557273520668288),
        NX,
    );
    t2s(
        f32_div,
        RNE,
        s(-1234.0),
        s(1235.1),
        s(-0.9991093838555584),
        NX,
    );
    t2s(f32_div, RNE, s(3.14159265), s(1.0), s(3.14159265), 0);
    t2d(
        f64_div,
        RNE,
        d(3.14159265),
        d(2.71828182),
        d(1.1557273520668288),
        NX,
    );
    t2d(
        f64_div,
        RNE,
        d(-1234.0),
        d(1235.1),
        d(-0.9991093838555584),
        NX,
    );
    t2d(f64_div, RNE, d(3.14159265), d(1.0), d(3.14159265), 0);

    t1s(f32_sqrt, RNE, s(3.14159265), s(1.7724538498928541), NX);
    t1s(f32_sqrt, RNE, s(10000.0), s(100.0), 0);
    t1d(f64_sqrt, RNE, d(3.14159265), d(1.7724538498928541), NX);
    t1d(f64_sqrt, RNE, d(10000.0), d(100.0), 0);
    t1s(f32_sqrt, RNE, s(-1.0), 0x7fc0_0000, NV);
    t1d(f64_sqrt, RNE, d(-1.0), 0x7ff8_0000_0000_0000, NV);
    t1s(f32_sqrt, RNE, s(171.0), s(13.076696), NX);
    t1d(f64_sqrt, RNE, d(171.0), d(13.076696830622021), NX);
    t1d(
        f64_sqrt,
        RNE,
        d(1.60795e-7),
        d(0.00040099251863345283320230749702),
        NX,
    );
}

// -- rv64uf/fmadd.S, rv64ud/fmadd.S --------------------------------------

#[test]
fn riscv_tests_fmadd() {
    // (a, b, c, fmadd, fnmadd, fmsub, fnmsub, flags)
    type Row<T> = (T, T, T, T, T, T, T, u8);
    let single: [Row<f32>; 3] = [
        (1.0, 2.5, 1.0, 3.5, -3.5, 1.5, -1.5, 0),
        (-1.0, -1235.1, 1.1, 1236.2, -1236.2, 1234.0, -1234.0, NX),
        (2.0, -5.0, -2.0, -12.0, 12.0, -8.0, 8.0, 0),
    ];
    for (a, b, c, madd, nmadd, msub, nmsub, fl) in single {
        let (a, b, c) = (s(a), s(b), s(c));
        let n = F32_SIGN;
        // The executor's sign flips (as Spike): fmsub = a*b + (-c),
        // fnmsub = (-a)*b + c, fnmadd = (-a)*b + (-c).
        t3s(RNE, a, b, c, s(madd), fl);
        t3s(RNE, a ^ n, b, c ^ n, s(nmadd), fl);
        t3s(RNE, a, b, c ^ n, s(msub), fl);
        t3s(RNE, a ^ n, b, c, s(nmsub), fl);
    }
    let double: [Row<f64>; 3] = [
        (1.0, 2.5, 1.0, 3.5, -3.5, 1.5, -1.5, 0),
        (
            -1.0,
            -1235.1,
            1.1,
            1236.1999999999999,
            -1236.1999999999999,
            1234.0,
            -1234.0,
            NX,
        ),
        (2.0, -5.0, -2.0, -12.0, 12.0, -8.0, 8.0, 0),
    ];
    for (a, b, c, madd, nmadd, msub, nmsub, fl) in double {
        let (a, b, c) = (d(a), d(b), d(c));
        let n = F64_SIGN;
        t3d(RNE, a, b, c, d(madd), fl);
        t3d(RNE, a ^ n, b, c ^ n, d(nmadd), fl);
        t3d(RNE, a, b, c ^ n, d(msub), fl);
        t3d(RNE, a ^ n, b, c, d(nmsub), fl);
    }
}

#[test]
fn fmadd_corner_cases() {
    // Inf * 0 + qNaN raises NV (RISC-V requires it even for a quiet addend).
    t3s(RNE, INF_F32, 0, QNAN_F32, CANONICAL_NAN_F32, NV);
    t3d(RNE, 0, NINF_F64, QNAN_F64, CANONICAL_NAN_F64, NV);
    // qNaN addend alone is quiet; sNaN operands signal.
    t3s(RNE, s(1.0), s(2.0), QNAN_F32, CANONICAL_NAN_F32, 0);
    t3s(RNE, SNAN_F32, s(2.0), s(1.0), CANONICAL_NAN_F32, NV);
    t3d(RNE, d(1.0), SNAN_F64, d(1.0), CANONICAL_NAN_F64, NV);
    // Inf*x - Inf is invalid.
    t3s(RNE, INF_F32, s(2.0), NINF_F32, CANONICAL_NAN_F32, NV);
    t3d(RNE, INF_F64, d(2.0), NINF_F64, CANONICAL_NAN_F64, NV);
    // Single rounding: (1 + 2^-23) * (1 - 2^-23) - 1 is exactly -2^-46; an
    // unfused multiply would round the product to 1.0 and give 0.
    t3s(
        RNE,
        0x3f80_0001,
        0x3f7f_fffe,
        s(-1.0),
        s(-(2f32.powi(-46))),
        0,
    );
    t3d(
        RNE,
        0x3ff0_0000_0000_0001,
        0x3fef_ffff_ffff_fffe,
        d(-1.0),
        d(-(2f64.powi(-104))),
        0,
    );
    // Exact zero sum: +0 in all modes but RDN, where it is -0.
    t3s(RNE, s(1.0), s(1.0), s(-1.0), 0, 0);
    t3s(RDN, s(1.0), s(1.0), s(-1.0), F32_SIGN, 0);
    t3d(RUP, d(2.0), d(3.0), d(-6.0), 0, 0);
    t3d(RDN, d(2.0), d(3.0), d(-6.0), F64_SIGN, 0);
}

// -- rv64uf/fmin.S, rv64ud/fmin.S ----------------------------------------

#[test]
fn riscv_tests_fmin() {
    tmm_s(f32_min, s(2.5), s(1.0), s(1.0), 0);
    tmm_s(f32_min, s(-1235.1), s(1.1), s(-1235.1), 0);
    tmm_s(f32_min, s(1.1), s(-1235.1), s(-1235.1), 0);
    tmm_s(f32_min, QNAN_F32, s(-1235.1), s(-1235.1), 0);
    tmm_s(f32_min, s(3.14159265), s(0.00000001), s(0.00000001), 0);
    tmm_s(f32_min, s(-1.0), s(-2.0), s(-2.0), 0);
    tmm_s(f32_max, s(2.5), s(1.0), s(2.5), 0);
    tmm_s(f32_max, s(-1235.1), s(1.1), s(1.1), 0);
    tmm_s(f32_max, s(1.1), s(-1235.1), s(1.1), 0);
    tmm_s(f32_max, QNAN_F32, s(-1235.1), s(-1235.1), 0);
    tmm_s(f32_max, s(3.14159265), s(0.00000001), s(3.14159265), 0);
    tmm_s(f32_max, s(-1.0), s(-2.0), s(-1.0), 0);
    // FMAX(sNaN, x) = x, with NV; FMAX(qNaN, qNaN) = canonical NaN.
    tmm_s(f32_max, SNAN_F32, s(1.0), s(1.0), NV);
    tmm_s(f32_max, QNAN_F32, QNAN_F32, QNAN_F32, 0);
    // -0.0 < +0.0
    tmm_s(f32_min, s(-0.0), s(0.0), s(-0.0), 0);
    tmm_s(f32_min, s(0.0), s(-0.0), s(-0.0), 0);
    tmm_s(f32_max, s(-0.0), s(0.0), s(0.0), 0);
    tmm_s(f32_max, s(0.0), s(-0.0), s(0.0), 0);

    tmm_d(f64_min, d(2.5), d(1.0), d(1.0), 0);
    tmm_d(f64_min, d(-1235.1), d(1.1), d(-1235.1), 0);
    tmm_d(f64_min, d(1.1), d(-1235.1), d(-1235.1), 0);
    tmm_d(f64_min, QNAN_F64, d(-1235.1), d(-1235.1), 0);
    tmm_d(f64_min, d(3.14159265), d(0.00000001), d(0.00000001), 0);
    tmm_d(f64_min, d(-1.0), d(-2.0), d(-2.0), 0);
    tmm_d(f64_max, d(2.5), d(1.0), d(2.5), 0);
    tmm_d(f64_max, d(-1235.1), d(1.1), d(1.1), 0);
    tmm_d(f64_max, d(1.1), d(-1235.1), d(1.1), 0);
    tmm_d(f64_max, QNAN_F64, d(-1235.1), d(-1235.1), 0);
    tmm_d(f64_max, d(3.14159265), d(0.00000001), d(3.14159265), 0);
    tmm_d(f64_max, d(-1.0), d(-2.0), d(-1.0), 0);
    tmm_d(f64_max, SNAN_F64, d(1.0), d(1.0), NV);
    tmm_d(f64_max, QNAN_F64, QNAN_F64, QNAN_F64, 0);
    tmm_d(f64_min, d(-0.0), d(0.0), d(-0.0), 0);
    tmm_d(f64_min, d(0.0), d(-0.0), d(-0.0), 0);
    tmm_d(f64_max, d(-0.0), d(0.0), d(0.0), 0);
    tmm_d(f64_max, d(0.0), d(-0.0), d(0.0), 0);
}

#[test]
fn fmin_fmax_nan_rules() {
    // One NaN (either side, either sign, any payload): the other operand.
    tmm_s(f32_min, s(3.0), 0xffc0_1234, s(3.0), 0);
    tmm_s(f32_max, 0x7fc0_0001, s(-3.0), s(-3.0), 0);
    tmm_s(f32_min, s(3.0), SNAN_F32, s(3.0), NV);
    tmm_s(f32_max, s(3.0), 0xff80_0001, s(3.0), NV);
    tmm_d(f64_min, d(3.0), 0xfff8_0000_0000_1234, d(3.0), 0);
    tmm_d(f64_min, SNAN_F64, d(-3.0), d(-3.0), NV);
    tmm_d(f64_max, d(-3.0), SNAN_F64, d(-3.0), NV);
    // Both NaN: canonical NaN (payloads dropped), NV iff one is signaling.
    tmm_s(f32_min, 0xffc0_1234, 0x7fc0_0001, CANONICAL_NAN_F32, 0);
    tmm_s(f32_max, SNAN_F32, QNAN_F32, CANONICAL_NAN_F32, NV);
    tmm_s(f32_min, QNAN_F32, SNAN_F32, CANONICAL_NAN_F32, NV);
    tmm_d(
        f64_min,
        0xfff8_0000_0000_1234,
        QNAN_F64,
        CANONICAL_NAN_F64,
        0,
    );
    tmm_d(f64_max, QNAN_F64, SNAN_F64, CANONICAL_NAN_F64, NV);
    // Infinities, subnormals, equal values.
    tmm_s(f32_min, NINF_F32, s(-1e30), NINF_F32, 0);
    tmm_s(f32_max, INF_F32, s(1e30), INF_F32, 0);
    tmm_s(f32_min, 0x0000_0001, 0x8000_0001, 0x8000_0001, 0);
    tmm_s(f32_max, 0x0000_0001, 0x0000_0002, 0x0000_0002, 0);
    tmm_s(f32_min, 0x8000_0001, 0x8000_0002, 0x8000_0002, 0);
    tmm_d(f64_max, NINF_F64, d(-1e300), d(-1e300), 0);
    tmm_d(
        f64_min,
        0x8000_0000_0000_0001,
        0x8000_0000_0000_0000,
        0x8000_0000_0000_0001,
        0,
    );
    tmm_d(f64_max, d(7.0), d(7.0), d(7.0), 0);
}

// -- rv64uf/fcmp.S, rv64ud/fcmp.S, rv64uf/recoding.S --------------------

#[test]
fn riscv_tests_fcmp() {
    tcmp_s(f32_eq, s(-1.36), s(-1.36), true, 0);
    tcmp_s(f32_le, s(-1.36), s(-1.36), true, 0);
    tcmp_s(f32_lt, s(-1.36), s(-1.36), false, 0);
    tcmp_s(f32_eq, s(-1.37), s(-1.36), false, 0);
    tcmp_s(f32_le, s(-1.37), s(-1.36), true, 0);
    tcmp_s(f32_lt, s(-1.37), s(-1.36), true, 0);
    // Only sNaN signals invalid for feq.
    tcmp_s(f32_eq, QNAN_F32, 0, false, 0);
    tcmp_s(f32_eq, QNAN_F32, QNAN_F32, false, 0);
    tcmp_s(f32_eq, SNAN_F32, 0, false, NV);
    // qNaN signals invalid for fle/flt.
    tcmp_s(f32_lt, QNAN_F32, 0, false, NV);
    tcmp_s(f32_lt, QNAN_F32, QNAN_F32, false, NV);
    tcmp_s(f32_lt, SNAN_F32, 0, false, NV);
    tcmp_s(f32_le, QNAN_F32, 0, false, NV);
    tcmp_s(f32_le, QNAN_F32, QNAN_F32, false, NV);
    tcmp_s(f32_le, SNAN_F32, 0, false, NV);

    tcmp_d(f64_eq, d(-1.36), d(-1.36), true, 0);
    tcmp_d(f64_le, d(-1.36), d(-1.36), true, 0);
    tcmp_d(f64_lt, d(-1.36), d(-1.36), false, 0);
    tcmp_d(f64_eq, d(-1.37), d(-1.36), false, 0);
    tcmp_d(f64_le, d(-1.37), d(-1.36), true, 0);
    tcmp_d(f64_lt, d(-1.37), d(-1.36), true, 0);
    tcmp_d(f64_eq, QNAN_F64, 0, false, 0);
    tcmp_d(f64_eq, QNAN_F64, QNAN_F64, false, 0);
    tcmp_d(f64_eq, SNAN_F64, 0, false, NV);
    tcmp_d(f64_lt, QNAN_F64, 0, false, NV);
    tcmp_d(f64_lt, QNAN_F64, QNAN_F64, false, NV);
    tcmp_d(f64_lt, SNAN_F64, 0, false, NV);
    tcmp_d(f64_le, QNAN_F64, 0, false, NV);
    tcmp_d(f64_le, QNAN_F64, QNAN_F64, false, NV);
    tcmp_d(f64_le, SNAN_F64, 0, false, NV);

    // NaN on the right, and signed zeros compare equal.
    tcmp_s(f32_eq, 0, SNAN_F32, false, NV);
    tcmp_d(f64_le, 0, QNAN_F64, false, NV);
    tcmp_s(f32_eq, s(-0.0), s(0.0), true, 0);
    tcmp_s(f32_lt, s(-0.0), s(0.0), false, 0);
    tcmp_d(f64_le, d(0.0), d(-0.0), true, 0);
}

#[test]
fn riscv_tests_recoding() {
    // -Inf * 3 compares equal to -Inf.
    let mut fl = 0;
    let minf3 = f32_mul(s(3.0), NINF_F32, RNE, &mut fl);
    assert_eq!((minf3, fl), (NINF_F32, 0));
    tcmp_s(f32_eq, NINF_F32, minf3, true, 0);
    tcmp_s(f32_le, NINF_F32, minf3, true, 0);
    tcmp_s(f32_lt, NINF_F32, minf3, false, 0);
    // Likewise for zeros (0 * 1 from fcvt).
    for (zero, one) in [
        (i32_to_f32(0, RNE, &mut fl), i32_to_f32(1, RNE, &mut fl)),
        (s(0.0), s(1.0)),
    ] {
        let z = f32_mul(one, zero, RNE, &mut fl);
        tcmp_s(f32_eq, zero, z, true, 0);
        tcmp_s(f32_le, zero, z, true, 0);
        tcmp_s(f32_lt, zero, z, false, 0);
    }
    let zero = i32_to_f64(0, RNE, &mut fl);
    let z = f64_mul(i32_to_f64(1, RNE, &mut fl), zero, RNE, &mut fl);
    assert_eq!(fl, 0);
    tcmp_d(f64_eq, zero, z, true, 0);
    tcmp_d(f64_le, zero, z, true, 0);
    tcmp_d(f64_lt, zero, z, false, 0);
    // Converting a small double to a single-precision subnormal discards
    // the extra precision.
    let mut fl = 0;
    let tiny = f64_to_f32(d(2.3860049081905093e-40), RNE, &mut fl);
    // (The double is exactly a single subnormal: no flags.)
    assert_eq!((tiny, fl), (0x0002_991f, 0));
    let r = f32_mul(s(1221.0), tiny, RNE, &mut fl);
    assert_eq!(r, s(2.9133121e-37));
    // Single values survive a 64-bit store/load while boxed.
    let six = f32_add(s(3.0), s(3.0), RNE, &mut fl);
    tcmp_s(f32_eq, unbox_f32(box_f32(six)), six, true, 0);
}

// -- rv64uf/fclass.S, rv64ud/fclass.S ------------------------------------

#[test]
fn riscv_tests_fclass() {
    let single = [
        0xff80_0000,
        0xbf80_0000,
        0x807f_ffff,
        0x8000_0000,
        0x0000_0000,
        0x007f_ffff,
        0x3f80_0000,
        0x7f80_0000,
        0x7f80_0001,
        0x7fc0_0000,
    ];
    for (bit, v) in single.into_iter().enumerate() {
        assert_eq!(f32_classify(v), 1 << bit, "{v:#x}");
    }
    let double = [
        0xfff0_0000_0000_0000,
        0xbff0_0000_0000_0000,
        0x800f_ffff_ffff_ffff,
        0x8000_0000_0000_0000,
        0x0000_0000_0000_0000,
        0x000f_ffff_ffff_ffff,
        0x3ff0_0000_0000_0000,
        0x7ff0_0000_0000_0000,
        0x7ff0_0000_0000_0001,
        0x7ff8_0000_0000_0000,
    ];
    for (bit, v) in double.into_iter().enumerate() {
        assert_eq!(f64_classify(v), 1 << bit, "{v:#x}");
    }
    // Sign of a NaN does not matter; smallest subnormal / normal edges.
    assert_eq!(f32_classify(0xffbf_ffff), 1 << 8);
    assert_eq!(f32_classify(0xffc0_0000), 1 << 9);
    assert_eq!(f32_classify(0x8000_0001), 1 << 2);
    assert_eq!(f32_classify(0x0080_0000), 1 << 6);
    assert_eq!(f32_classify(0xff7f_ffff), 1 << 1);
    assert_eq!(f64_classify(0xfff7_ffff_ffff_ffff), 1 << 8);
    assert_eq!(f64_classify(0xfff8_0000_0000_0001), 1 << 9);
    assert_eq!(f64_classify(0x0000_0000_0000_0001), 1 << 5);
    assert_eq!(f64_classify(0x0010_0000_0000_0000), 1 << 6);
    // The canonical NaN read from an unboxed register is a quiet NaN.
    assert_eq!(f32_classify(unbox_f32(0x3ff0_0000_0000_0000)), 1 << 9);
}

// -- rv64uf/fcvt.S, rv64ud/fcvt.S ----------------------------------------

#[test]
fn riscv_tests_fcvt() {
    let m2 = -2i64 as u64;
    tcvt_d(i32_to_f32, RNE, 2, s(2.0), 0);
    tcvt_d(i32_to_f32, RNE, m2, s(-2.0), 0);
    tcvt_d(u32_to_f32, RNE, 2, s(2.0), 0);
    tcvt_d(u32_to_f32, RNE, m2, s(4.2949673e9), NX);
    tcvt_d(i64_to_f32, RNE, 2, s(2.0), 0);
    tcvt_d(i64_to_f32, RNE, m2, s(-2.0), 0);
    tcvt_d(u64_to_f32, RNE, 2, s(2.0), 0);
    tcvt_d(u64_to_f32, RNE, m2, s(1.8446744e19), NX);

    tcvt_d(i32_to_f64, RNE, 2, d(2.0), 0);
    tcvt_d(i32_to_f64, RNE, m2, d(-2.0), 0);
    tcvt_d(u32_to_f64, RNE, 2, d(2.0), 0);
    tcvt_d(u32_to_f64, RNE, m2, d(4294967294.0), 0);
    tcvt_d(i64_to_f64, RNE, 2, d(2.0), 0);
    tcvt_d(i64_to_f64, RNE, m2, d(-2.0), 0);
    tcvt_d(u64_to_f64, RNE, 2, d(2.0), 0);
    tcvt_d(u64_to_f64, RNE, m2, d(1.8446744073709552e19), NX);

    tcvt_d(f64_to_f32, RNE, d(-1.5), s(-1.5), 0);
    let mut fl = 0;
    assert_eq!((f32_to_f64(s(-1.5), &mut fl), fl), (d(-1.5), 0));

    // A double NaN with a payload narrows and widens to the canonical NaN.
    let mut fl = 0;
    let narrowed = f64_to_f32(0x7ffc_ffff_ffff_8004, RNE, &mut fl);
    assert_eq!(narrowed, CANONICAL_NAN_F32);
    assert_eq!(f32_to_f64(narrowed, &mut fl), 0x7ff8_0000_0000_0000);
    assert_eq!(fl, 0);
}

#[test]
fn conversions_between_formats() {
    // Signaling NaNs signal and become canonical.
    tcvt_d(f64_to_f32, RNE, SNAN_F64, CANONICAL_NAN_F32, NV);
    let mut fl = 0;
    assert_eq!(f32_to_f64(SNAN_F32, &mut fl), CANONICAL_NAN_F64);
    assert_eq!(fl, NV);
    let mut fl = 0;
    assert_eq!(f32_to_f64(0xffc0_0001, &mut fl), CANONICAL_NAN_F64);
    assert_eq!(fl, 0);
    // Infinities and signed zeros pass through.
    tcvt_d(f64_to_f32, RNE, NINF_F64, NINF_F32, 0);
    tcvt_d(f64_to_f32, RNE, d(-0.0), s(-0.0), 0);
    let mut fl = 0;
    assert_eq!(
        f32_to_f64(0x0000_0001, &mut fl),
        d(f32::from_bits(1).into())
    );
    assert_eq!(fl, 0);
    // Rounding: 1 + 2^-24 is a tie in single precision.
    let tie = d(1.0 + 2f64.powi(-24));
    tcvt_d(f64_to_f32, RNE, tie, 0x3f80_0000, NX);
    tcvt_d(f64_to_f32, RMM, tie, 0x3f80_0001, NX);
    tcvt_d(f64_to_f32, RUP, tie, 0x3f80_0001, NX);
    tcvt_d(f64_to_f32, RDN, tie, 0x3f80_0000, NX);
    tcvt_d(f64_to_f32, RTZ, tie, 0x3f80_0000, NX);
    tcvt_d(f64_to_f32, RDN, tie | F64_SIGN, 0xbf80_0001, NX);
    // Overflow honours the rounding direction.
    tcvt_d(f64_to_f32, RNE, d(1e300), INF_F32, OF | NX);
    tcvt_d(f64_to_f32, RTZ, d(1e300), s(f32::MAX), OF | NX);
    tcvt_d(f64_to_f32, RDN, d(1e300), s(f32::MAX), OF | NX);
    tcvt_d(f64_to_f32, RUP, d(-1e300), s(f32::MIN), OF | NX);
    tcvt_d(f64_to_f32, RDN, d(-1e300), NINF_F32, OF | NX);
    // Underflow to zero / to the smallest subnormal.
    tcvt_d(f64_to_f32, RNE, d(1e-300), 0, UF | NX);
    tcvt_d(f64_to_f32, RUP, d(1e-300), 1, UF | NX);
    tcvt_d(f64_to_f32, RDN, d(-1e-300), 0x8000_0001, UF | NX);
    // Exactly representable subnormal: no flags at all.
    tcvt_d(f64_to_f32, RNE, d(f64::from(f32::from_bits(3))), 3, 0);
}

#[test]
fn int_to_float_rounding() {
    // 2^24 + 1 is a tie in single precision.
    let x = (1u64 << 24) + 1;
    tcvt_d(u32_to_f32, RNE, x, s(16777216.0), NX);
    tcvt_d(u32_to_f32, RUP, x, s(16777218.0), NX);
    tcvt_d(u32_to_f32, RMM, x, s(16777218.0), NX);
    tcvt_d(u32_to_f32, RTZ, x, s(16777216.0), NX);
    tcvt_d(i32_to_f32, RDN, (-(x as i64)) as u64, s(-16777218.0), NX);
    tcvt_d(i32_to_f32, RUP, (-(x as i64)) as u64, s(-16777216.0), NX);
    // W forms use only the low 32 bits of the register.
    tcvt_d(i32_to_f32, RNE, 0x1234_5678_ffff_ffff, s(-1.0), 0);
    tcvt_d(u32_to_f32, RNE, 0xffff_ffff_0000_0003, s(3.0), 0);
    tcvt_d(i32_to_f64, RNE, 0x0000_0001_8000_0000, d(-2147483648.0), 0);
    tcvt_d(u32_to_f64, RNE, 0xffff_ffff_8000_0000, d(2147483648.0), 0);
    // 64-bit extremes.
    tcvt_d(
        i64_to_f64,
        RNE,
        i64::MIN as u64,
        d(-9223372036854775808.0),
        0,
    );
    tcvt_d(
        i64_to_f64,
        RNE,
        i64::MAX as u64,
        d(9223372036854775808.0),
        NX,
    );
    tcvt_d(
        i64_to_f64,
        RTZ,
        i64::MAX as u64,
        d(9223372036854774784.0),
        NX,
    );
    tcvt_d(u64_to_f64, RNE, u64::MAX, d(18446744073709551616.0), NX);
    tcvt_d(u64_to_f64, RDN, u64::MAX, d(18446744073709549568.0), NX);
    tcvt_d(
        i64_to_f32,
        RNE,
        i64::MIN as u64,
        s(-9223372036854775808.0),
        0,
    );
    tcvt_d(u64_to_f32, RTZ, u64::MAX, 0x5f7f_ffff, NX);
    tcvt_d(i32_to_f32, RNE, 0, 0, 0);
    tcvt_d(u64_to_f64, RDN, 0, 0, 0);
}

// -- rv64uf/fcvt_w.S, rv64ud/fcvt_w.S -------------------------------------

#[test]
fn riscv_tests_fcvt_w_single() {
    let neg = |x: i64| x as u64;
    tcvt_s(f32_to_i32, RTZ, s(-1.1), neg(-1), NX);
    tcvt_s(f32_to_i32, RTZ, s(-1.0), neg(-1), 0);
    tcvt_s(f32_to_i32, RTZ, s(-0.9), 0, NX);
    tcvt_s(f32_to_i32, RTZ, s(0.9), 0, NX);
    tcvt_s(f32_to_i32, RTZ, s(1.0), 1, 0);
    tcvt_s(f32_to_i32, RTZ, s(1.1), 1, NX);
    tcvt_s(f32_to_i32, RTZ, s(-3e9), neg(-1 << 31), NV);
    tcvt_s(f32_to_i32, RTZ, s(3e9), (1 << 31) - 1, NV);

    tcvt_s(f32_to_u32, RTZ, s(-3.0), 0, NV);
    tcvt_s(f32_to_u32, RTZ, s(-1.0), 0, NV);
    tcvt_s(f32_to_u32, RTZ, s(-0.9), 0, NX);
    tcvt_s(f32_to_u32, RTZ, s(0.9), 0, NX);
    tcvt_s(f32_to_u32, RTZ, s(1.0), 1, 0);
    tcvt_s(f32_to_u32, RTZ, s(1.1), 1, NX);
    tcvt_s(f32_to_u32, RTZ, s(-3e9), 0, NV);
    // fcvt.wu sign-extends its 32-bit result on RV64.
    tcvt_s(f32_to_u32, RTZ, s(3e9), 0xffff_ffff_b2d0_5e00, 0);

    tcvt_s(f32_to_i64, RTZ, s(-1.1), neg(-1), NX);
    tcvt_s(f32_to_i64, RTZ, s(-1.0), neg(-1), 0);
    tcvt_s(f32_to_i64, RTZ, s(-0.9), 0, NX);
    tcvt_s(f32_to_i64, RTZ, s(0.9), 0, NX);
    tcvt_s(f32_to_i64, RTZ, s(1.0), 1, 0);
    tcvt_s(f32_to_i64, RTZ, s(1.1), 1, NX);

    tcvt_s(f32_to_u64, RTZ, s(-3.0), 0, NV);
    tcvt_s(f32_to_u64, RTZ, s(-1.0), 0, NV);
    tcvt_s(f32_to_u64, RTZ, s(-0.9), 0, NX);
    tcvt_s(f32_to_u64, RTZ, s(0.9), 0, NX);
    tcvt_s(f32_to_u64, RTZ, s(1.0), 1, 0);
    tcvt_s(f32_to_u64, RTZ, s(1.1), 1, NX);
    tcvt_s(f32_to_u64, RTZ, s(-3e9), 0, NV);

    // -NaN, NaN, -inf, +inf (the rm of these tests is the default, RNE).
    let (nnan, pnan) = (0xffff_ffffu32, 0x7fff_ffffu32);
    tcvt_s(f32_to_i32, RNE, nnan, 0x0000_0000_7fff_ffff, NV);
    tcvt_s(f32_to_i64, RNE, nnan, 0x7fff_ffff_ffff_ffff, NV);
    tcvt_s(f32_to_i32, RNE, NINF_F32, 0xffff_ffff_8000_0000, NV);
    tcvt_s(f32_to_i64, RNE, NINF_F32, 0x8000_0000_0000_0000, NV);
    tcvt_s(f32_to_i32, RNE, pnan, 0x0000_0000_7fff_ffff, NV);
    tcvt_s(f32_to_i64, RNE, pnan, 0x7fff_ffff_ffff_ffff, NV);
    tcvt_s(f32_to_i32, RNE, INF_F32, 0x0000_0000_7fff_ffff, NV);
    tcvt_s(f32_to_i64, RNE, INF_F32, 0x7fff_ffff_ffff_ffff, NV);
    tcvt_s(f32_to_u32, RNE, nnan, u64::MAX, NV);
    tcvt_s(f32_to_u32, RNE, pnan, u64::MAX, NV);
    tcvt_s(f32_to_u32, RNE, NINF_F32, 0, NV);
    tcvt_s(f32_to_u32, RNE, INF_F32, u64::MAX, NV);
    tcvt_s(f32_to_u64, RNE, nnan, u64::MAX, NV);
    tcvt_s(f32_to_u64, RNE, pnan, u64::MAX, NV);
    tcvt_s(f32_to_u64, RNE, NINF_F32, 0, NV);
    tcvt_s(f32_to_u64, RNE, INF_F32, u64::MAX, NV);
}

#[test]
fn riscv_tests_fcvt_w_double() {
    let neg = |x: i64| x as u64;
    tcvt_d(f64_to_i32, RTZ, d(-1.1), neg(-1), NX);
    tcvt_d(f64_to_i32, RTZ, d(-1.0), neg(-1), 0);
    tcvt_d(f64_to_i32, RTZ, d(-0.9), 0, NX);
    tcvt_d(f64_to_i32, RTZ, d(0.9), 0, NX);
    tcvt_d(f64_to_i32, RTZ, d(1.0), 1, 0);
    tcvt_d(f64_to_i32, RTZ, d(1.1), 1, NX);
    tcvt_d(f64_to_i32, RTZ, d(-3e9), neg(-1 << 31), NV);
    tcvt_d(f64_to_i32, RTZ, d(3e9), (1 << 31) - 1, NV);

    tcvt_d(f64_to_u32, RTZ, d(-3.0), 0, NV);
    tcvt_d(f64_to_u32, RTZ, d(-1.0), 0, NV);
    tcvt_d(f64_to_u32, RTZ, d(-0.9), 0, NX);
    tcvt_d(f64_to_u32, RTZ, d(0.9), 0, NX);
    tcvt_d(f64_to_u32, RTZ, d(1.0), 1, 0);
    tcvt_d(f64_to_u32, RTZ, d(1.1), 1, NX);
    tcvt_d(f64_to_u32, RTZ, d(-3e9), 0, NV);
    tcvt_d(f64_to_u32, RTZ, d(3e9), 0xffff_ffff_b2d0_5e00, 0);

    tcvt_d(f64_to_i64, RTZ, d(-1.1), neg(-1), NX);
    tcvt_d(f64_to_i64, RTZ, d(-1.0), neg(-1), 0);
    tcvt_d(f64_to_i64, RTZ, d(-0.9), 0, NX);
    tcvt_d(f64_to_i64, RTZ, d(0.9), 0, NX);
    tcvt_d(f64_to_i64, RTZ, d(1.0), 1, 0);
    tcvt_d(f64_to_i64, RTZ, d(1.1), 1, NX);
    tcvt_d(f64_to_i64, RTZ, d(-3e9), neg(-3_000_000_000), 0);
    tcvt_d(f64_to_i64, RTZ, d(3e9), 3_000_000_000, 0);
    tcvt_d(f64_to_i64, RTZ, d(-3e19), 1 << 63, NV);
    tcvt_d(f64_to_i64, RTZ, d(3e19), (1 << 63) - 1, NV);

    tcvt_d(f64_to_u64, RTZ, d(-3.0), 0, NV);
    tcvt_d(f64_to_u64, RTZ, d(-1.0), 0, NV);
    tcvt_d(f64_to_u64, RTZ, d(-0.9), 0, NX);
    tcvt_d(f64_to_u64, RTZ, d(0.9), 0, NX);
    tcvt_d(f64_to_u64, RTZ, d(1.0), 1, 0);
    tcvt_d(f64_to_u64, RTZ, d(1.1), 1, NX);
    tcvt_d(f64_to_u64, RTZ, d(-3e9), 0, NV);
    tcvt_d(f64_to_u64, RTZ, d(3e9), 3_000_000_000, 0);

    let (nnan, pnan) = (u64::MAX, 0x7fff_ffff_ffff_ffffu64);
    tcvt_d(f64_to_i32, RNE, nnan, 0x0000_0000_7fff_ffff, NV);
    tcvt_d(f64_to_i64, RNE, nnan, 0x7fff_ffff_ffff_ffff, NV);
    tcvt_d(f64_to_i32, RNE, NINF_F64, 0xffff_ffff_8000_0000, NV);
    tcvt_d(f64_to_i64, RNE, NINF_F64, 0x8000_0000_0000_0000, NV);
    tcvt_d(f64_to_i32, RNE, pnan, 0x0000_0000_7fff_ffff, NV);
    tcvt_d(f64_to_i64, RNE, pnan, 0x7fff_ffff_ffff_ffff, NV);
    tcvt_d(f64_to_i32, RNE, INF_F64, 0x0000_0000_7fff_ffff, NV);
    tcvt_d(f64_to_i64, RNE, INF_F64, 0x7fff_ffff_ffff_ffff, NV);
    tcvt_d(f64_to_u32, RNE, nnan, u64::MAX, NV);
    tcvt_d(f64_to_u32, RNE, pnan, u64::MAX, NV);
    tcvt_d(f64_to_u32, RNE, NINF_F64, 0, NV);
    tcvt_d(f64_to_u32, RNE, INF_F64, u64::MAX, NV);
    tcvt_d(f64_to_u64, RNE, nnan, u64::MAX, NV);
    tcvt_d(f64_to_u64, RNE, pnan, u64::MAX, NV);
    tcvt_d(f64_to_u64, RNE, NINF_F64, 0, NV);
    tcvt_d(f64_to_u64, RNE, INF_F64, u64::MAX, NV);
}

#[test]
fn float_to_int_rounding_modes() {
    let neg = |x: i64| x as u64;
    // (value, RNE, RTZ, RDN, RUP, RMM)
    let cases: [(f64, i64, i64, i64, i64, i64); 8] = [
        (2.5, 2, 2, 2, 3, 3),
        (-2.5, -2, -2, -3, -2, -3),
        (3.5, 4, 3, 3, 4, 4),
        (-0.5, 0, 0, -1, 0, -1),
        (0.5, 0, 0, 0, 1, 1),
        (1.75, 2, 1, 1, 2, 2),
        (-1.25, -1, -1, -2, -1, -1),
        (7.0, 7, 7, 7, 7, 7),
    ];
    for (v, rne, rtz, rdn, rup, rmm) in cases {
        let fl = if v.fract() == 0.0 { 0 } else { NX };
        for (rm, want) in [(RNE, rne), (RTZ, rtz), (RDN, rdn), (RUP, rup), (RMM, rmm)] {
            tcvt_d(f64_to_i32, rm, d(v), neg(want), fl);
            tcvt_d(f64_to_i64, rm, d(v), neg(want), fl);
            tcvt_s(f32_to_i32, rm, s(v as f32), neg(want), fl);
            tcvt_s(f32_to_i64, rm, s(v as f32), neg(want), fl);
            // Unsigned: a negative result is invalid (0, NV only), a
            // negative input rounding to 0 is just inexact.
            let (uwant, ufl) = if want < 0 { (0, NV) } else { (want as u64, fl) };
            tcvt_d(f64_to_u32, rm, d(v), uwant, ufl);
            tcvt_d(f64_to_u64, rm, d(v), uwant, ufl);
            tcvt_s(f32_to_u32, rm, s(v as f32), uwant, ufl);
            tcvt_s(f32_to_u64, rm, s(v as f32), uwant, ufl);
        }
    }
    // Range edges: -2^31 - 0.5 truncates into range, rounds down out of it.
    tcvt_d(f64_to_i32, RTZ, d(-2147483648.5), neg(-2147483648), NX);
    tcvt_d(f64_to_i32, RDN, d(-2147483648.5), neg(i32::MIN.into()), NV);
    tcvt_d(f64_to_i32, RNE, d(2147483647.4), 2147483647, NX);
    tcvt_d(f64_to_i32, RNE, d(2147483647.5), 2147483647, NV);
    tcvt_d(f64_to_u32, RNE, d(4294967295.4), u64::MAX, NX);
    tcvt_d(f64_to_u32, RNE, d(4294967295.5), u64::MAX, NV);
    tcvt_d(f64_to_u32, RNE, d(2147483648.0), 0xffff_ffff_8000_0000, 0);
    tcvt_s(f32_to_i64, RNE, s(-9.223372e18), neg(i64::MIN), 0);
    tcvt_s(f32_to_i64, RNE, s(9.223372e18), i64::MAX as u64, NV);
    tcvt_s(f32_to_u64, RNE, s(1.8446743e19), 0xffff_ff00_0000_0000, 0);
    tcvt_s(f32_to_u64, RNE, s(1.8446744e19), u64::MAX, NV);
    tcvt_d(f64_to_u64, RNE, d(-0.0), 0, 0);
    tcvt_s(f32_to_u32, RDN, s(-0.0), 0, 0);
    tcvt_s(f32_to_i32, RNE, 0x0000_0001, 0, NX);
    tcvt_s(f32_to_i32, RDN, 0x8000_0001, neg(-1), NX);
    tcvt_s(f32_to_u32, RDN, 0x8000_0001, 0, NV);
    tcvt_s(f32_to_i32, RNE, SNAN_F32, 0x7fff_ffff, NV);
}

// -- arithmetic corner cases ----------------------------------------------

#[test]
fn nan_results_are_canonical() {
    let payload32 = 0x7fc1_2345;
    let payload64 = 0xfff8_0000_dead_beef;
    t2s(f32_add, RNE, payload32, s(1.0), CANONICAL_NAN_F32, 0);
    t2s(f32_mul, RNE, s(1.0), 0xffc0_0001, CANONICAL_NAN_F32, 0);
    t2s(f32_sub, RNE, SNAN_F32, s(1.0), CANONICAL_NAN_F32, NV);
    t2s(f32_div, RNE, s(1.0), 0xff80_0001, CANONICAL_NAN_F32, NV);
    t1s(f32_sqrt, RNE, payload32, CANONICAL_NAN_F32, 0);
    t1s(f32_sqrt, RNE, SNAN_F32, CANONICAL_NAN_F32, NV);
    t2d(f64_add, RNE, payload64, d(1.0), CANONICAL_NAN_F64, 0);
    t2d(f64_mul, RNE, SNAN_F64, payload64, CANONICAL_NAN_F64, NV);
    t2d(f64_div, RNE, payload64, d(0.0), CANONICAL_NAN_F64, 0);
    t1d(f64_sqrt, RNE, SNAN_F64, CANONICAL_NAN_F64, NV);
    // Invalid operations.
    t2s(f32_mul, RNE, INF_F32, 0x8000_0000, CANONICAL_NAN_F32, NV);
    t2s(f32_div, RNE, 0, 0x8000_0000, CANONICAL_NAN_F32, NV);
    t2s(f32_div, RNE, INF_F32, NINF_F32, CANONICAL_NAN_F32, NV);
    t2d(f64_add, RNE, INF_F64, NINF_F64, CANONICAL_NAN_F64, NV);
    t2d(f64_mul, RNE, 0, INF_F64, CANONICAL_NAN_F64, NV);
    t2d(f64_div, RNE, 0, 0, CANONICAL_NAN_F64, NV);
    t1d(f64_sqrt, RNE, NINF_F64, CANONICAL_NAN_F64, NV);
    t1s(f32_sqrt, RNE, 0x8000_0001, CANONICAL_NAN_F32, NV);
}

#[test]
fn division_by_zero_and_infinities() {
    t2s(f32_div, RNE, s(1.0), 0, INF_F32, DZ);
    t2s(f32_div, RNE, s(-1.0), 0, NINF_F32, DZ);
    t2s(f32_div, RTZ, s(1.0), 0x8000_0000, NINF_F32, DZ);
    t2d(f64_div, RNE, d(1.0), 0, INF_F64, DZ);
    t2d(f64_div, RDN, d(-5.0), 0x8000_0000_0000_0000, INF_F64, DZ);
    // Inf / 0 is exact infinity, not DZ.
    t2s(f32_div, RNE, INF_F32, 0, INF_F32, 0);
    t2d(f64_div, RNE, NINF_F64, 0, NINF_F64, 0);
    t2s(f32_div, RNE, s(1.0), INF_F32, 0, 0);
    t1s(f32_sqrt, RNE, INF_F32, INF_F32, 0);
    t1s(f32_sqrt, RNE, 0x8000_0000, 0x8000_0000, 0);
    t1d(
        f64_sqrt,
        RNE,
        0x8000_0000_0000_0000,
        0x8000_0000_0000_0000,
        0,
    );
    t1d(f64_sqrt, RNE, INF_F64, INF_F64, 0);
}

#[test]
fn rounding_modes() {
    // 1 + 2^-24: a tie between 1.0 and the next single up.
    let half_ulp = 0x3380_0000;
    for (rm, pos, negr) in [
        (RNE, 0x3f80_0000, 0xbf80_0000),
        (RTZ, 0x3f80_0000, 0xbf80_0000),
        (RDN, 0x3f80_0000, 0xbf80_0001),
        (RUP, 0x3f80_0001, 0xbf80_0000),
        (RMM, 0x3f80_0001, 0xbf80_0001),
    ] {
        t2s(f32_add, rm, s(1.0), half_ulp, pos, NX);
        t2s(f32_sub, rm, s(-1.0), half_ulp, negr, NX);
    }
    // 1 + 3*2^-25 is above the tie: nearest modes round up.
    t2s(f32_add, RNE, s(1.0), 0x33c0_0000, 0x3f80_0001, NX);
    t2s(f32_add, RTZ, s(1.0), 0x33c0_0000, 0x3f80_0000, NX);
    // A tie rounding to even upward: 1 + 3*2^-24.
    t2s(f32_add, RNE, 0x3f80_0001, half_ulp, 0x3f80_0002, NX);
    t2s(f32_add, RMM, 0x3f80_0001, half_ulp, 0x3f80_0002, NX);
    t2s(f32_add, RTZ, 0x3f80_0001, half_ulp, 0x3f80_0001, NX);
    // Double: 1 + 2^-53.
    let half_ulp64 = d(2f64.powi(-53));
    for (rm, want) in [
        (RNE, d(1.0)),
        (RTZ, d(1.0)),
        (RDN, d(1.0)),
        (RUP, d(1.0) + 1),
        (RMM, d(1.0) + 1),
    ] {
        t2d(f64_add, rm, d(1.0), half_ulp64, want, NX);
    }
    // Division and sqrt honour rm too: 1/3 and sqrt(2).
    t2s(f32_div, RNE, s(1.0), s(3.0), 0x3eaa_aaab, NX);
    t2s(f32_div, RTZ, s(1.0), s(3.0), 0x3eaa_aaaa, NX);
    t2s(f32_div, RDN, s(-1.0), s(3.0), 0xbeaa_aaab, NX);
    t2d(f64_div, RUP, d(1.0), d(3.0), 0x3fd5_5555_5555_5556, NX);
    t2d(f64_div, RTZ, d(1.0), d(3.0), 0x3fd5_5555_5555_5555, NX);
    t1s(f32_sqrt, RNE, s(2.0), 0x3fb5_04f3, NX);
    t1s(f32_sqrt, RTZ, s(2.0), 0x3fb5_04f3, NX);
    t1s(f32_sqrt, RUP, s(2.0), 0x3fb5_04f4, NX);
    t1d(f64_sqrt, RNE, d(2.0), 0x3ff6_a09e_667f_3bcd, NX);
    t1d(f64_sqrt, RDN, d(2.0), 0x3ff6_a09e_667f_3bcc, NX);
    t1d(f64_sqrt, RUP, d(2.0), 0x3ff6_a09e_667f_3bcd, NX);
    // x - x is +0, except -0 when rounding down.
    t2s(f32_sub, RNE, s(5.0), s(5.0), 0, 0);
    t2s(f32_sub, RDN, s(5.0), s(5.0), 0x8000_0000, 0);
    t2d(f64_add, RUP, d(-5.0), d(5.0), 0, 0);
    t2d(f64_add, RDN, d(-5.0), d(5.0), F64_SIGN, 0);
    t2s(f32_add, RNE, 0x8000_0000, 0x8000_0000, 0x8000_0000, 0);
}

#[test]
fn overflow() {
    let max32 = s(f32::MAX);
    for (rm, pos, negr) in [
        (RNE, INF_F32, NINF_F32),
        (RTZ, max32, max32 | F32_SIGN),
        (RDN, max32, NINF_F32),
        (RUP, INF_F32, max32 | F32_SIGN),
        (RMM, INF_F32, NINF_F32),
    ] {
        t2s(f32_mul, rm, max32, s(2.0), pos, OF | NX);
        t2s(f32_mul, rm, max32, s(-2.0), negr, OF | NX);
        t2s(f32_add, rm, max32, max32, pos, OF | NX);
    }
    let max64 = d(f64::MAX);
    for (rm, pos, negr) in [
        (RNE, INF_F64, NINF_F64),
        (RTZ, max64, max64 | F64_SIGN),
        (RDN, max64, NINF_F64),
        (RUP, INF_F64, max64 | F64_SIGN),
        (RMM, INF_F64, NINF_F64),
    ] {
        t2d(f64_mul, rm, max64, d(2.0), pos, OF | NX);
        t2d(f64_mul, rm, max64, d(-2.0), negr, OF | NX);
        t3d(rm, max64, d(1.5), max64, pos, OF | NX);
    }
    // Just below the overflow threshold in RNE: MAX + half ulp - tiny.
    t2s(f32_add, RNE, max32, s(1.0), max32, NX);
    // Division by a tiny number.
    t2s(f32_div, RNE, s(1.0), 0x0000_0001, INF_F32, OF | NX);
    t2d(f64_div, RNE, d(1e300), d(1e-300), INF_F64, OF | NX);
}

#[test]
fn underflow_tininess_after_rounding() {
    // (1 - 2^-23) * 2^-126 (1 + 2^-23) = 2^-126 (1 - 2^-46): tiny before
    // rounding, but rounds to 2^-126 with an unbounded exponent, so
    // RISC-V (tininess after rounding) raises only NX, not UF.
    t2s(f32_mul, RNE, 0x3f7f_fffe, 0x0080_0001, 0x0080_0000, NX);
    t2d(
        f64_mul,
        RNE,
        0x3fef_ffff_ffff_fffe,
        0x0010_0000_0000_0001,
        0x0010_0000_0000_0000,
        NX,
    );
    // Rounding toward zero it stays tiny: UF.
    t2s(f32_mul, RTZ, 0x3f7f_fffe, 0x0080_0001, 0x007f_ffff, UF | NX);
    t2d(
        f64_mul,
        RTZ,
        0x3fef_ffff_ffff_fffe,
        0x0010_0000_0000_0001,
        0x000f_ffff_ffff_ffff,
        UF | NX,
    );
    // (1 - 2^-24) * 2^-126 is tiny even after rounding to 24 bits, and
    // inexact as a subnormal: UF | NX, rounds (tie, to even) to 2^-126.
    t2s(f32_mul, RNE, 0x3f7f_ffff, 0x0080_0000, 0x0080_0000, UF | NX);
    // Exact subnormal results raise nothing.
    t2s(f32_mul, RNE, s(0.5), 0x0000_0002, 0x0000_0001, 0);
    t2d(f64_mul, RNE, d(0.5), 0x0000_0000_0000_0002, 1, 0);
    t2s(f32_sub, RNE, 0x0080_0000, 0x0000_0001, 0x007f_ffff, 0);
    // Inexact subnormal / zero results raise UF | NX.
    t2s(f32_mul, RNE, s(0.5), 0x0000_0003, 0x0000_0002, UF | NX);
    t2s(f32_mul, RNE, s(0.5), 0x0000_0001, 0, UF | NX);
    t2s(f32_mul, RUP, s(0.5), 0x0000_0001, 1, UF | NX);
    t2s(f32_mul, RMM, s(0.5), 0x0000_0001, 1, UF | NX);
    t2s(f32_mul, RDN, s(-0.5), 0x0000_0001, 0x8000_0001, UF | NX);
    t2d(f64_div, RNE, 1, d(3.0), 0, UF | NX);
    t2d(f64_mul, RNE, d(1e-200), d(1e-200), 0, UF | NX);
    t1s(f32_sqrt, RNE, 0x0000_0001, 0x1a35_04f3, NX);
    t3s(RNE, 0x0080_0000, s(0.75), 0x0000_0001, 0x0060_0001, 0);
    t3s(RNE, 0x0080_0000, s(0.5), 0x8000_0001, 0x003f_ffff, 0);
    t3s(RNE, 0x0000_0001, s(0.5), 0, 0, UF | NX);
}

// -- property tests against the host FPU ----------------------------------

fn finite_f32() -> impl Strategy<Value = u32> {
    prop_oneof![
        any::<u32>().prop_filter("finite", |b| f32::from_bits(*b).is_finite()),
        // Operands with nearby exponents exercise cancellation and rounding.
        (any::<bool>(), 100u32..155, 0u32..0x80_0000)
            .prop_map(|(sg, e, m)| (u32::from(sg) << 31) | (e << 23) | m),
        // Subnormals and values around the normal/subnormal boundary.
        (any::<bool>(), 0u32..3, 0u32..0x80_0000)
            .prop_map(|(sg, e, m)| (u32::from(sg) << 31) | (e << 23) | m),
    ]
}

fn finite_f64() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>().prop_filter("finite", |b| f64::from_bits(*b).is_finite()),
        (any::<bool>(), 1000u64..1050, 0u64..(1 << 52))
            .prop_map(|(sg, e, m)| (u64::from(sg) << 63) | (e << 52) | m),
        (any::<bool>(), 0u64..3, 0u64..(1 << 52))
            .prop_map(|(sg, e, m)| (u64::from(sg) << 63) | (e << 52) | m),
    ]
}

#[track_caller]
fn agree32(ours: u32, host: f32) {
    if !host.is_nan() {
        assert_eq!(
            ours,
            host.to_bits(),
            "ours {ours:#x}, host {:#x}",
            host.to_bits()
        );
    }
}

#[track_caller]
fn agree64(ours: u64, host: f64) {
    if !host.is_nan() {
        assert_eq!(
            ours,
            host.to_bits(),
            "ours {ours:#x}, host {:#x}",
            host.to_bits()
        );
    }
}

/// Checks `[to_i32, to_u32, to_i64, to_u64]` results of `v` in RTZ.
fn check_rtz(v: f64, got: [(u64, u8); 4]) -> Result<(), TestCaseError> {
    let nx = if v.trunc() == v { 0 } else { NX };
    let want = [
        (
            v as i32 as i64 as u64,
            v > -2147483649.0 && v < 2147483648.0,
        ),
        (v as u32 as i32 as i64 as u64, v > -1.0 && v < 4294967296.0),
        (
            v as i64 as u64,
            (-9223372036854775808.0..9223372036854775808.0).contains(&v),
        ),
        (v as u64, v > -1.0 && v < 18446744073709551616.0),
    ];
    for ((value, in_range), g) in want.into_iter().zip(got) {
        prop_assert_eq!(g, (value, if in_range { nx } else { NV }), "v = {}", v);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn f32_arith_matches_host(a in finite_f32(), b in finite_f32(), c in finite_f32()) {
        let (x, y, z) = (f32::from_bits(a), f32::from_bits(b), f32::from_bits(c));
        let mut fl = 0;
        agree32(f32_add(a, b, RNE, &mut fl), x + y);
        agree32(f32_sub(a, b, RNE, &mut fl), x - y);
        agree32(f32_mul(a, b, RNE, &mut fl), x * y);
        agree32(f32_div(a, b, RNE, &mut fl), x / y);
        agree32(f32_sqrt(a, RNE, &mut fl), x.sqrt());
        agree32(f32_mul_add(a, b, c, RNE, &mut fl), x.mul_add(y, z));
    }

    #[test]
    fn f64_arith_matches_host(a in finite_f64(), b in finite_f64(), c in finite_f64()) {
        let (x, y, z) = (f64::from_bits(a), f64::from_bits(b), f64::from_bits(c));
        let mut fl = 0;
        agree64(f64_add(a, b, RNE, &mut fl), x + y);
        agree64(f64_sub(a, b, RNE, &mut fl), x - y);
        agree64(f64_mul(a, b, RNE, &mut fl), x * y);
        agree64(f64_div(a, b, RNE, &mut fl), x / y);
        agree64(f64_sqrt(a, RNE, &mut fl), x.sqrt());
        agree64(f64_mul_add(a, b, c, RNE, &mut fl), x.mul_add(y, z));
    }

    /// NX is raised exactly when the result is not exact; checked in
    /// double precision, where single products and quotient checks are exact.
    #[test]
    fn f32_inexact_flag_is_exact(a in finite_f32(), b in finite_f32()) {
        let (x, y) = (f64::from(f32::from_bits(a)), f64::from(f32::from_bits(b)));
        let mut fl = 0;
        let r = f64::from(f32::from_bits(f32_mul(a, b, RNE, &mut fl)));
        prop_assert_eq!(fl & NX != 0, r != x * y);
        prop_assert_eq!(fl & NV, 0);
        if y != 0.0 {
            let mut fl = 0;
            let q = f64::from(f32::from_bits(f32_div(a, b, RNE, &mut fl)));
            prop_assert_eq!(fl & NX != 0, q * y != x);
            prop_assert_eq!(fl & (NV | DZ), 0);
        }
        if x >= 0.0 {
            let mut fl = 0;
            let r = f64::from(f32::from_bits(f32_sqrt(a, RNE, &mut fl)));
            prop_assert_eq!(fl & NX != 0, r * r != x);
            prop_assert_eq!(fl & !NX, 0);
        }
    }

    #[test]
    fn compare_matches_host(a in finite_f32(), b in finite_f32(), c in finite_f64(), e in finite_f64()) {
        let (x, y) = (f32::from_bits(a), f32::from_bits(b));
        let mut fl = 0;
        prop_assert_eq!(f32_eq(a, b, &mut fl), x == y);
        prop_assert_eq!(f32_lt(a, b, &mut fl), x < y);
        prop_assert_eq!(f32_le(a, b, &mut fl), x <= y);
        let (x, y) = (f64::from_bits(c), f64::from_bits(e));
        prop_assert_eq!(f64_eq(c, e, &mut fl), x == y);
        prop_assert_eq!(f64_lt(c, e, &mut fl), x < y);
        prop_assert_eq!(f64_le(c, e, &mut fl), x <= y);
        prop_assert_eq!(fl, 0);
    }

    #[test]
    fn min_max_match_host(a in finite_f32(), b in finite_f32(), c in finite_f64(), e in finite_f64()) {
        let mut fl = 0;
        let (x, y) = (f32::from_bits(a), f32::from_bits(b));
        if x != y {
            prop_assert_eq!(f32_min(a, b, &mut fl), x.min(y).to_bits());
            prop_assert_eq!(f32_max(a, b, &mut fl), x.max(y).to_bits());
        }
        let (x, y) = (f64::from_bits(c), f64::from_bits(e));
        if x != y {
            prop_assert_eq!(f64_min(c, e, &mut fl), x.min(y).to_bits());
            prop_assert_eq!(f64_max(c, e, &mut fl), x.max(y).to_bits());
        }
        prop_assert_eq!(fl, 0);
    }

    #[test]
    fn classify_is_one_hot(a in any::<u32>(), b in any::<u64>()) {
        let m = f32_classify(a);
        prop_assert!(m.count_ones() == 1 && m < 1 << 10);
        prop_assert_eq!(m & 0x300 != 0, f32::from_bits(a).is_nan());
        let m = f64_classify(b);
        prop_assert!(m.count_ones() == 1 && m < 1 << 10);
        prop_assert_eq!(m & 0x300 != 0, f64::from_bits(b).is_nan());
    }

    #[test]
    fn format_conversions_match_host(a in finite_f32(), b in finite_f64()) {
        let mut fl = 0;
        prop_assert_eq!(f32_to_f64(a, &mut fl), f64::from(f32::from_bits(a)).to_bits());
        prop_assert_eq!(fl, 0);
        agree32(f64_to_f32(b, RNE, &mut fl), f64::from_bits(b) as f32);
    }

    #[test]
    fn int_to_float_matches_host(x in any::<u64>()) {
        let mut fl = 0;
        agree32(i32_to_f32(x, RNE, &mut fl), x as u32 as i32 as f32);
        agree32(u32_to_f32(x, RNE, &mut fl), x as u32 as f32);
        agree32(i64_to_f32(x, RNE, &mut fl), x as i64 as f32);
        agree32(u64_to_f32(x, RNE, &mut fl), x as f32);
        let mut fl = 0;
        agree64(i32_to_f64(x, RNE, &mut fl), f64::from(x as u32 as i32));
        agree64(u32_to_f64(x, RNE, &mut fl), f64::from(x as u32));
        prop_assert_eq!(fl, 0);
        agree64(i64_to_f64(x, RNE, &mut fl), x as i64 as f64);
        agree64(u64_to_f64(x, RNE, &mut fl), x as f64);
    }

    /// RTZ conversion is the host's saturating truncating cast, with NX
    /// exactly when an in-range value has a fraction, and NV alone out
    /// of range.
    #[test]
    fn float_to_int_rtz_matches_host(a in finite_f32(), b in finite_f64()) {
        let mut got = [(0, 0); 4];
        let convs: [fn(u32, u8, &mut u8) -> u64; 4] =
            [f32_to_i32, f32_to_u32, f32_to_i64, f32_to_u64];
        for (g, conv) in got.iter_mut().zip(convs) {
            g.0 = conv(a, RTZ, &mut g.1);
        }
        check_rtz(f64::from(f32::from_bits(a)), got)?;
        let convs: [fn(u64, u8, &mut u8) -> u64; 4] =
            [f64_to_i32, f64_to_u32, f64_to_i64, f64_to_u64];
        for (g, conv) in got.iter_mut().zip(convs) {
            *g = (0, 0);
            g.0 = conv(b, RTZ, &mut g.1);
        }
        check_rtz(f64::from_bits(b), got)?;
    }
}
