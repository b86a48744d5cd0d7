//! IEEE 754 arithmetic for the RISC-V F and D extensions.
//!
//! Every function here takes and returns raw bit patterns (`u32` for single,
//! `u64` for double), takes an already-resolved RISC-V rounding mode where the
//! operation rounds, and ORs the exception flags it raises into `flags`, laid
//! out like `fcsr.fflags`. The results are exactly what the RISC-V
//! unprivileged spec requires: canonical NaNs (no NaN payload propagation),
//! tininess detected after rounding, RISC-V's saturating results for invalid
//! float-to-integer conversions, IEEE 754-2019 `minimumNumber`/`maximumNumber`
//! for `fmin`/`fmax`, and NaN boxing for singles held in 64-bit registers.
//!
//! The arithmetic itself is Berkeley SoftFloat 3 with its RISCV
//! specialization, through `softfloat-sys`. That is the same library and
//! specialization the Spike reference simulator uses, so results and flags
//! agree with Spike bit for bit, and it does not depend on the host FPU's
//! rounding-mode register, flag register, NaN encoding or FMA support. Its
//! rounding-mode and flag state are C `_Thread_local` variables, so harts
//! simulated on different host threads do not interfere.
//!
//! All FFI calls live in the private `sf` module (`fpu/sf.rs`). `fmin`/`fmax`,
//! `fclass` and NaN boxing are plain bit manipulation and never call into C.

/// fflags bit: inexact.
pub const NX: u8 = 1;
/// fflags bit: underflow.
pub const UF: u8 = 2;
/// fflags bit: overflow.
pub const OF: u8 = 4;
/// fflags bit: divide by zero.
pub const DZ: u8 = 8;
/// fflags bit: invalid operation.
pub const NV: u8 = 16;

/// The canonical single-precision NaN RISC-V produces for every NaN result.
pub const CANONICAL_NAN_F32: u32 = 0x7fc0_0000;
/// The canonical double-precision NaN RISC-V produces for every NaN result.
pub const CANONICAL_NAN_F64: u64 = 0x7ff8_0000_0000_0000;

const ALL_FLAGS: u8 = NX | UF | OF | DZ | NV;

// SoftFloat's flag bits must coincide with fcsr's: the flags are passed
// through unchanged.
const _: () = {
    assert!(softfloat_sys::softfloat_flag_inexact == NX);
    assert!(softfloat_sys::softfloat_flag_underflow == UF);
    assert!(softfloat_sys::softfloat_flag_overflow == OF);
    assert!(softfloat_sys::softfloat_flag_infinite == DZ);
    assert!(softfloat_sys::softfloat_flag_invalid == NV);
};

/// Maps a RISC-V rounding mode (0=RNE, 1=RTZ, 2=RDN, 3=RUP, 4=RMM) to
/// SoftFloat's encoding. The caller has already rejected the reserved
/// encodings 5 and 6 and resolved 7 (dynamic).
#[inline(always)]
fn softfloat_rm(rm: u8) -> u8 {
    use softfloat_sys::{
        softfloat_round_max, softfloat_round_min, softfloat_round_minMag,
        softfloat_round_near_even, softfloat_round_near_maxMag,
    };
    debug_assert!(rm <= 4, "unresolved or reserved rounding mode {rm}");
    match rm {
        1 => softfloat_round_minMag,
        2 => softfloat_round_min,
        3 => softfloat_round_max,
        4 => softfloat_round_near_maxMag,
        _ => softfloat_round_near_even,
    }
}

/// Runs `op` with the flag accumulator cleared and ORs what it raised into
/// `flags`.
#[inline(always)]
fn with_flags<T>(flags: &mut u8, op: impl FnOnce() -> T) -> T {
    sf::clear_flags();
    let result = op();
    *flags |= sf::flags() & ALL_FLAGS;
    result
}

/// Like [`with_flags`], with SoftFloat's global rounding mode set to `rm`
/// first (the arithmetic routines and int-to-float conversions read it).
#[inline(always)]
fn with_rm<T>(rm: u8, flags: &mut u8, op: impl FnOnce() -> T) -> T {
    sf::set_rounding_mode(softfloat_rm(rm));
    with_flags(flags, op)
}

// ---------------------------------------------------------------------------
// NaN boxing
// ---------------------------------------------------------------------------

/// NaN-boxing: a single held in a 64-bit f register is valid only if bits
/// 63..32 are all ones; otherwise it reads as the canonical NaN.
#[inline]
pub fn unbox_f32(reg: u64) -> u32 {
    if reg >> 32 == 0xffff_ffff {
        reg as u32
    } else {
        CANONICAL_NAN_F32
    }
}

/// NaN-boxes a single for writing into a 64-bit f register (bits 63..32 set).
#[inline]
pub fn box_f32(v: u32) -> u64 {
    0xffff_ffff_0000_0000 | u64::from(v)
}

// ---------------------------------------------------------------------------
// Bit-level helpers
// ---------------------------------------------------------------------------

const F32_SIGN: u32 = 0x8000_0000;
const F32_EXP: u32 = 0x7f80_0000;
const F32_FRAC: u32 = 0x007f_ffff;
const F32_QUIET: u32 = 0x0040_0000;
const F64_SIGN: u64 = 0x8000_0000_0000_0000;
const F64_EXP: u64 = 0x7ff0_0000_0000_0000;
const F64_FRAC: u64 = 0x000f_ffff_ffff_ffff;
const F64_QUIET: u64 = 0x0008_0000_0000_0000;

#[inline(always)]
fn f32_is_nan(a: u32) -> bool {
    a & !F32_SIGN > F32_EXP
}

#[inline(always)]
fn f32_is_snan(a: u32) -> bool {
    f32_is_nan(a) && a & F32_QUIET == 0
}

#[inline(always)]
fn f64_is_nan(a: u64) -> bool {
    a & !F64_SIGN > F64_EXP
}

#[inline(always)]
fn f64_is_snan(a: u64) -> bool {
    f64_is_nan(a) && a & F64_QUIET == 0
}

/// Maps a non-NaN single to an integer with the same order, -0.0 < +0.0.
#[inline(always)]
fn f32_order_key(a: u32) -> i32 {
    // Negative values: flipping the magnitude bits reverses their order and
    // the cleared sign bit keeps them below every non-negative value.
    if a & F32_SIGN != 0 {
        !(a as i32) | i32::MIN
    } else {
        a as i32
    }
}

/// Maps a non-NaN double to an integer with the same order, -0.0 < +0.0.
#[inline(always)]
fn f64_order_key(a: u64) -> i64 {
    if a & F64_SIGN != 0 {
        !(a as i64) | i64::MIN
    } else {
        a as i64
    }
}

/// Shared fmin/fmax logic: NV only for a signaling NaN, both NaN gives the
/// canonical NaN, one NaN gives the other operand.
#[inline(always)]
fn min_max_f32(a: u32, b: u32, want_max: bool, flags: &mut u8) -> u32 {
    if f32_is_snan(a) || f32_is_snan(b) {
        *flags |= NV;
    }
    match (f32_is_nan(a), f32_is_nan(b)) {
        (true, true) => CANONICAL_NAN_F32,
        (true, false) => b,
        (false, true) => a,
        (false, false) => {
            if (f32_order_key(a) < f32_order_key(b)) != want_max {
                a
            } else {
                b
            }
        }
    }
}

#[inline(always)]
fn min_max_f64(a: u64, b: u64, want_max: bool, flags: &mut u8) -> u64 {
    if f64_is_snan(a) || f64_is_snan(b) {
        *flags |= NV;
    }
    match (f64_is_nan(a), f64_is_nan(b)) {
        (true, true) => CANONICAL_NAN_F64,
        (true, false) => b,
        (false, true) => a,
        (false, false) => {
            if (f64_order_key(a) < f64_order_key(b)) != want_max {
                a
            } else {
                b
            }
        }
    }
}

/// The fclass mask from the sign and the decoded kind of the value.
#[inline(always)]
fn class_mask(
    negative: bool,
    exp_all_ones: bool,
    exp_zero: bool,
    frac_zero: bool,
    quiet: bool,
) -> u64 {
    let bit = if exp_all_ones {
        if frac_zero {
            // infinity
            if negative {
                0
            } else {
                7
            }
        } else if quiet {
            9
        } else {
            8
        }
    } else if exp_zero {
        match (negative, frac_zero) {
            (true, true) => 3,   // -0
            (true, false) => 2,  // negative subnormal
            (false, true) => 4,  // +0
            (false, false) => 5, // positive subnormal
        }
    } else if negative {
        1
    } else {
        6
    };
    1 << bit
}

// ---------------------------------------------------------------------------
// Single precision
// ---------------------------------------------------------------------------

/// fadd.s: `a + b` rounded per `rm`.
#[inline]
pub fn f32_add(a: u32, b: u32, rm: u8, flags: &mut u8) -> u32 {
    with_rm(rm, flags, || sf::f32_add(a, b))
}

/// fsub.s: `a - b` rounded per `rm`.
#[inline]
pub fn f32_sub(a: u32, b: u32, rm: u8, flags: &mut u8) -> u32 {
    with_rm(rm, flags, || sf::f32_sub(a, b))
}

/// fmul.s: `a * b` rounded per `rm`.
#[inline]
pub fn f32_mul(a: u32, b: u32, rm: u8, flags: &mut u8) -> u32 {
    with_rm(rm, flags, || sf::f32_mul(a, b))
}

/// fdiv.s: `a / b` rounded per `rm`.
#[inline]
pub fn f32_div(a: u32, b: u32, rm: u8, flags: &mut u8) -> u32 {
    with_rm(rm, flags, || sf::f32_div(a, b))
}

/// fsqrt.s: square root of `a` rounded per `rm`.
#[inline]
pub fn f32_sqrt(a: u32, rm: u8, flags: &mut u8) -> u32 {
    with_rm(rm, flags, || sf::f32_sqrt(a))
}

/// fused a*b+c, one rounding. The executor builds fmsub/fnmsub/fnmadd by
/// flipping sign bits of the inputs as Spike does. NV is raised for
/// infinity times zero even when `c` is a quiet NaN, as RISC-V requires.
#[inline]
pub fn f32_mul_add(a: u32, b: u32, c: u32, rm: u8, flags: &mut u8) -> u32 {
    with_rm(rm, flags, || sf::f32_mul_add(a, b, c))
}

/// fmin/fmax per RISC-V spec v2.2+ (IEEE 754-2019 minimumNumber/maximumNumber):
/// NV only for signaling NaN inputs; both NaN -> canonical NaN; one NaN -> the
/// other operand; -0.0 < +0.0.
#[inline]
pub fn f32_min(a: u32, b: u32, flags: &mut u8) -> u32 {
    min_max_f32(a, b, false, flags)
}

/// fmax.s; see [`f32_min`].
#[inline]
pub fn f32_max(a: u32, b: u32, flags: &mut u8) -> u32 {
    min_max_f32(a, b, true, flags)
}

/// feq is quiet (NV only on sNaN); flt/fle are signaling (NV on any NaN);
/// NaN compares false.
#[inline]
pub fn f32_eq(a: u32, b: u32, flags: &mut u8) -> bool {
    with_flags(flags, || sf::f32_eq(a, b))
}

/// flt.s; signaling: NV on any NaN operand. See [`f32_eq`].
#[inline]
pub fn f32_lt(a: u32, b: u32, flags: &mut u8) -> bool {
    with_flags(flags, || sf::f32_lt(a, b))
}

/// fle.s; signaling: NV on any NaN operand. See [`f32_eq`].
#[inline]
pub fn f32_le(a: u32, b: u32, flags: &mut u8) -> bool {
    with_flags(flags, || sf::f32_le(a, b))
}

/// fclass: the 10-bit one-hot mask.
#[inline]
pub fn f32_classify(a: u32) -> u64 {
    class_mask(
        a & F32_SIGN != 0,
        a & F32_EXP == F32_EXP,
        a & F32_EXP == 0,
        a & F32_FRAC == 0,
        a & F32_QUIET != 0,
    )
}

/// fcvt.w.s: the sign-extended 32-bit result; NaN and overflow saturate.
#[inline]
pub fn f32_to_i32(a: u32, rm: u8, flags: &mut u8) -> u64 {
    let r = with_flags(flags, || sf::f32_to_i32(a, softfloat_rm(rm)));
    r as i64 as u64
}

/// fcvt.wu.s: the 32-bit result, sign-extended to 64 bits as RV64 requires.
#[inline]
pub fn f32_to_u32(a: u32, rm: u8, flags: &mut u8) -> u64 {
    let r = with_flags(flags, || sf::f32_to_u32(a, softfloat_rm(rm)));
    r as i32 as i64 as u64
}

/// fcvt.l.s; NaN and overflow saturate.
#[inline]
pub fn f32_to_i64(a: u32, rm: u8, flags: &mut u8) -> u64 {
    let r = with_flags(flags, || sf::f32_to_i64(a, softfloat_rm(rm)));
    r as u64
}

/// fcvt.lu.s; NaN and overflow saturate.
#[inline]
pub fn f32_to_u64(a: u32, rm: u8, flags: &mut u8) -> u64 {
    with_flags(flags, || sf::f32_to_u64(a, softfloat_rm(rm)))
}

/// fcvt.s.w: the low 32 bits of `x` as an `i32`.
#[inline]
pub fn i32_to_f32(x: u64, rm: u8, flags: &mut u8) -> u32 {
    with_rm(rm, flags, || sf::i32_to_f32(x as u32 as i32))
}

/// fcvt.s.wu: the low 32 bits of `x` as a `u32`.
#[inline]
pub fn u32_to_f32(x: u64, rm: u8, flags: &mut u8) -> u32 {
    with_rm(rm, flags, || sf::u32_to_f32(x as u32))
}

/// fcvt.s.l.
#[inline]
pub fn i64_to_f32(x: u64, rm: u8, flags: &mut u8) -> u32 {
    with_rm(rm, flags, || sf::i64_to_f32(x as i64))
}

/// fcvt.s.lu.
#[inline]
pub fn u64_to_f32(x: u64, rm: u8, flags: &mut u8) -> u32 {
    with_rm(rm, flags, || sf::u64_to_f32(x))
}

/// fcvt.d.s (exact; NaNs become the canonical NaN, NV for a signaling one).
#[inline]
pub fn f32_to_f64(a: u32, flags: &mut u8) -> u64 {
    with_flags(flags, || sf::f32_to_f64(a))
}

// ---------------------------------------------------------------------------
// Double precision
// ---------------------------------------------------------------------------

/// fadd.d: `a + b` rounded per `rm`.
#[inline]
pub fn f64_add(a: u64, b: u64, rm: u8, flags: &mut u8) -> u64 {
    with_rm(rm, flags, || sf::f64_add(a, b))
}

/// fsub.d: `a - b` rounded per `rm`.
#[inline]
pub fn f64_sub(a: u64, b: u64, rm: u8, flags: &mut u8) -> u64 {
    with_rm(rm, flags, || sf::f64_sub(a, b))
}

/// fmul.d: `a * b` rounded per `rm`.
#[inline]
pub fn f64_mul(a: u64, b: u64, rm: u8, flags: &mut u8) -> u64 {
    with_rm(rm, flags, || sf::f64_mul(a, b))
}

/// fdiv.d: `a / b` rounded per `rm`.
#[inline]
pub fn f64_div(a: u64, b: u64, rm: u8, flags: &mut u8) -> u64 {
    with_rm(rm, flags, || sf::f64_div(a, b))
}

/// fsqrt.d: square root of `a` rounded per `rm`.
#[inline]
pub fn f64_sqrt(a: u64, rm: u8, flags: &mut u8) -> u64 {
    with_rm(rm, flags, || sf::f64_sqrt(a))
}

/// fused a*b+c, one rounding. The executor builds fmsub/fnmsub/fnmadd by
/// flipping sign bits of the inputs as Spike does. NV is raised for
/// infinity times zero even when `c` is a quiet NaN, as RISC-V requires.
#[inline]
pub fn f64_mul_add(a: u64, b: u64, c: u64, rm: u8, flags: &mut u8) -> u64 {
    with_rm(rm, flags, || sf::f64_mul_add(a, b, c))
}

/// fmin/fmax per RISC-V spec v2.2+ (IEEE 754-2019 minimumNumber/maximumNumber):
/// NV only for signaling NaN inputs; both NaN -> canonical NaN; one NaN -> the
/// other operand; -0.0 < +0.0.
#[inline]
pub fn f64_min(a: u64, b: u64, flags: &mut u8) -> u64 {
    min_max_f64(a, b, false, flags)
}

/// fmax.d; see [`f64_min`].
#[inline]
pub fn f64_max(a: u64, b: u64, flags: &mut u8) -> u64 {
    min_max_f64(a, b, true, flags)
}

/// feq is quiet (NV only on sNaN); flt/fle are signaling (NV on any NaN);
/// NaN compares false.
#[inline]
pub fn f64_eq(a: u64, b: u64, flags: &mut u8) -> bool {
    with_flags(flags, || sf::f64_eq(a, b))
}

/// flt.d; signaling: NV on any NaN operand. See [`f64_eq`].
#[inline]
pub fn f64_lt(a: u64, b: u64, flags: &mut u8) -> bool {
    with_flags(flags, || sf::f64_lt(a, b))
}

/// fle.d; signaling: NV on any NaN operand. See [`f64_eq`].
#[inline]
pub fn f64_le(a: u64, b: u64, flags: &mut u8) -> bool {
    with_flags(flags, || sf::f64_le(a, b))
}

/// fclass: the 10-bit one-hot mask.
#[inline]
pub fn f64_classify(a: u64) -> u64 {
    class_mask(
        a & F64_SIGN != 0,
        a & F64_EXP == F64_EXP,
        a & F64_EXP == 0,
        a & F64_FRAC == 0,
        a & F64_QUIET != 0,
    )
}

/// fcvt.w.d: the sign-extended 32-bit result; NaN and overflow saturate.
#[inline]
pub fn f64_to_i32(a: u64, rm: u8, flags: &mut u8) -> u64 {
    let r = with_flags(flags, || sf::f64_to_i32(a, softfloat_rm(rm)));
    r as i64 as u64
}

/// fcvt.wu.d: the 32-bit result, sign-extended to 64 bits as RV64 requires.
#[inline]
pub fn f64_to_u32(a: u64, rm: u8, flags: &mut u8) -> u64 {
    let r = with_flags(flags, || sf::f64_to_u32(a, softfloat_rm(rm)));
    r as i32 as i64 as u64
}

/// fcvt.l.d; NaN and overflow saturate.
#[inline]
pub fn f64_to_i64(a: u64, rm: u8, flags: &mut u8) -> u64 {
    let r = with_flags(flags, || sf::f64_to_i64(a, softfloat_rm(rm)));
    r as u64
}

/// fcvt.lu.d; NaN and overflow saturate.
#[inline]
pub fn f64_to_u64(a: u64, rm: u8, flags: &mut u8) -> u64 {
    with_flags(flags, || sf::f64_to_u64(a, softfloat_rm(rm)))
}

/// fcvt.d.w: the low 32 bits of `x` as an `i32` (always exact).
#[inline]
pub fn i32_to_f64(x: u64, rm: u8, flags: &mut u8) -> u64 {
    with_rm(rm, flags, || sf::i32_to_f64(x as u32 as i32))
}

/// fcvt.d.wu: the low 32 bits of `x` as a `u32` (always exact).
#[inline]
pub fn u32_to_f64(x: u64, rm: u8, flags: &mut u8) -> u64 {
    with_rm(rm, flags, || sf::u32_to_f64(x as u32))
}

/// fcvt.d.l.
#[inline]
pub fn i64_to_f64(x: u64, rm: u8, flags: &mut u8) -> u64 {
    with_rm(rm, flags, || sf::i64_to_f64(x as i64))
}

/// fcvt.d.lu.
#[inline]
pub fn u64_to_f64(x: u64, rm: u8, flags: &mut u8) -> u64 {
    with_rm(rm, flags, || sf::u64_to_f64(x))
}

/// fcvt.s.d: rounded per `rm`; NaNs become the canonical NaN.
#[inline]
pub fn f64_to_f32(a: u64, rm: u8, flags: &mut u8) -> u32 {
    with_rm(rm, flags, || sf::f64_to_f32(a))
}

// ---------------------------------------------------------------------------
// The SoftFloat boundary
// ---------------------------------------------------------------------------

/// Safe wrappers around SoftFloat: the only place with `unsafe`.
mod sf;

#[cfg(test)]
mod tests;
