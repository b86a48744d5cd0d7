//! Safe wrappers around the SoftFloat routines this module uses; the only
//! place with `unsafe`.
//!
//! Soundness: every SoftFloat routine called here is a pure function of its
//! by-value arguments plus SoftFloat's thread-local rounding mode, tininess
//! mode and flag accumulator. No pointers cross the boundary, every bit
//! pattern is a valid input, and the `repr(C)` value types and `c99`
//! integer aliases of `softfloat-sys` match the C ABI of this target. The
//! thread-local state is only touched through the helper functions
//! `softfloat-sys` compiles for that purpose.

use softfloat_sys as c;

#[inline(always)]
fn s(v: u32) -> c::float32_t {
    c::float32_t { v }
}

#[inline(always)]
fn d(v: u64) -> c::float64_t {
    c::float64_t { v }
}

/// Sets the rounding mode used by the arithmetic routines and the
/// integer-to-float conversions (SoftFloat encoding).
#[inline(always)]
pub(super) fn set_rounding_mode(mode: u8) {
    // SAFETY: writes this thread's `softfloat_roundingMode`; see module doc.
    unsafe { c::softfloat_roundingMode_write_helper(mode) }
}

/// Clears this thread's accrued SoftFloat exception flags.
#[inline(always)]
pub(super) fn clear_flags() {
    // SAFETY: writes this thread's `softfloat_exceptionFlags`.
    unsafe { c::softfloat_exceptionFlags_write_helper(0) }
}

/// This thread's accrued SoftFloat exception flags.
#[inline(always)]
pub(super) fn flags() -> u8 {
    // SAFETY: reads this thread's `softfloat_exceptionFlags`.
    unsafe { c::softfloat_exceptionFlags_read_helper() }
}

/// This thread's tininess-detection mode. The RISCV specialization
/// initialises it to `softfloat_tininess_afterRounding` (as RISC-V
/// requires) and nothing in this crate writes it.
#[cfg(test)]
pub(super) fn detect_tininess() -> u8 {
    // SAFETY: reads this thread's `softfloat_detectTininess`.
    unsafe { c::softfloat_detectTininess_read_helper() }
}

// The arithmetic below: each call is a pure SoftFloat routine on plain
// values (see the module doc), so every `unsafe` block is sound.

#[inline(always)]
pub(super) fn f32_add(a: u32, b: u32) -> u32 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f32_add(s(a), s(b)) }.v
}

#[inline(always)]
pub(super) fn f32_sub(a: u32, b: u32) -> u32 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f32_sub(s(a), s(b)) }.v
}

#[inline(always)]
pub(super) fn f32_mul(a: u32, b: u32) -> u32 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f32_mul(s(a), s(b)) }.v
}

#[inline(always)]
pub(super) fn f32_div(a: u32, b: u32) -> u32 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f32_div(s(a), s(b)) }.v
}

#[inline(always)]
pub(super) fn f32_sqrt(a: u32) -> u32 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f32_sqrt(s(a)) }.v
}

#[inline(always)]
pub(super) fn f32_mul_add(a: u32, b: u32, c: u32) -> u32 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f32_mulAdd(s(a), s(b), s(c)) }.v
}

#[inline(always)]
pub(super) fn f32_eq(a: u32, b: u32) -> bool {
    // SAFETY: pure SoftFloat routine on plain values (quiet compare).
    unsafe { c::f32_eq(s(a), s(b)) }
}

#[inline(always)]
pub(super) fn f32_lt(a: u32, b: u32) -> bool {
    // SAFETY: pure SoftFloat routine on plain values (signaling compare).
    unsafe { c::f32_lt(s(a), s(b)) }
}

#[inline(always)]
pub(super) fn f32_le(a: u32, b: u32) -> bool {
    // SAFETY: pure SoftFloat routine on plain values (signaling compare).
    unsafe { c::f32_le(s(a), s(b)) }
}

// Float-to-integer conversions take the rounding mode as an argument;
// `exact = true` makes them raise inexact.

#[inline(always)]
pub(super) fn f32_to_i32(a: u32, mode: u8) -> i32 {
    // SAFETY: pure SoftFloat routine on plain values.
    let r = unsafe { c::f32_to_i32(s(a), mode, true) };
    // `int_fast32_t` may be wider than 32 bits; the value always fits.
    r as i32
}

#[inline(always)]
pub(super) fn f32_to_u32(a: u32, mode: u8) -> u32 {
    // SAFETY: pure SoftFloat routine on plain values.
    let r = unsafe { c::f32_to_ui32(s(a), mode, true) };
    // `uint_fast32_t` may be wider than 32 bits; the value always fits.
    r as u32
}

#[inline(always)]
pub(super) fn f32_to_i64(a: u32, mode: u8) -> i64 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f32_to_i64(s(a), mode, true) }
}

#[inline(always)]
pub(super) fn f32_to_u64(a: u32, mode: u8) -> u64 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f32_to_ui64(s(a), mode, true) }
}

#[inline(always)]
pub(super) fn i32_to_f32(x: i32) -> u32 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::i32_to_f32(x) }.v
}

#[inline(always)]
pub(super) fn u32_to_f32(x: u32) -> u32 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::ui32_to_f32(x) }.v
}

#[inline(always)]
pub(super) fn i64_to_f32(x: i64) -> u32 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::i64_to_f32(x) }.v
}

#[inline(always)]
pub(super) fn u64_to_f32(x: u64) -> u32 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::ui64_to_f32(x) }.v
}

#[inline(always)]
pub(super) fn f32_to_f64(a: u32) -> u64 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f32_to_f64(s(a)) }.v
}

#[inline(always)]
pub(super) fn f64_add(a: u64, b: u64) -> u64 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f64_add(d(a), d(b)) }.v
}

#[inline(always)]
pub(super) fn f64_sub(a: u64, b: u64) -> u64 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f64_sub(d(a), d(b)) }.v
}

#[inline(always)]
pub(super) fn f64_mul(a: u64, b: u64) -> u64 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f64_mul(d(a), d(b)) }.v
}

#[inline(always)]
pub(super) fn f64_div(a: u64, b: u64) -> u64 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f64_div(d(a), d(b)) }.v
}

#[inline(always)]
pub(super) fn f64_sqrt(a: u64) -> u64 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f64_sqrt(d(a)) }.v
}

#[inline(always)]
pub(super) fn f64_mul_add(a: u64, b: u64, c: u64) -> u64 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f64_mulAdd(d(a), d(b), d(c)) }.v
}

#[inline(always)]
pub(super) fn f64_eq(a: u64, b: u64) -> bool {
    // SAFETY: pure SoftFloat routine on plain values (quiet compare).
    unsafe { c::f64_eq(d(a), d(b)) }
}

#[inline(always)]
pub(super) fn f64_lt(a: u64, b: u64) -> bool {
    // SAFETY: pure SoftFloat routine on plain values (signaling compare).
    unsafe { c::f64_lt(d(a), d(b)) }
}

#[inline(always)]
pub(super) fn f64_le(a: u64, b: u64) -> bool {
    // SAFETY: pure SoftFloat routine on plain values (signaling compare).
    unsafe { c::f64_le(d(a), d(b)) }
}

#[inline(always)]
pub(super) fn f64_to_i32(a: u64, mode: u8) -> i32 {
    // SAFETY: pure SoftFloat routine on plain values.
    let r = unsafe { c::f64_to_i32(d(a), mode, true) };
    // `int_fast32_t` may be wider than 32 bits; the value always fits.
    r as i32
}

#[inline(always)]
pub(super) fn f64_to_u32(a: u64, mode: u8) -> u32 {
    // SAFETY: pure SoftFloat routine on plain values.
    let r = unsafe { c::f64_to_ui32(d(a), mode, true) };
    // `uint_fast32_t` may be wider than 32 bits; the value always fits.
    r as u32
}

#[inline(always)]
pub(super) fn f64_to_i64(a: u64, mode: u8) -> i64 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f64_to_i64(d(a), mode, true) }
}

#[inline(always)]
pub(super) fn f64_to_u64(a: u64, mode: u8) -> u64 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f64_to_ui64(d(a), mode, true) }
}

#[inline(always)]
pub(super) fn i32_to_f64(x: i32) -> u64 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::i32_to_f64(x) }.v
}

#[inline(always)]
pub(super) fn u32_to_f64(x: u32) -> u64 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::ui32_to_f64(x) }.v
}

#[inline(always)]
pub(super) fn i64_to_f64(x: i64) -> u64 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::i64_to_f64(x) }.v
}

#[inline(always)]
pub(super) fn u64_to_f64(x: u64) -> u64 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::ui64_to_f64(x) }.v
}

#[inline(always)]
pub(super) fn f64_to_f32(a: u64) -> u32 {
    // SAFETY: pure SoftFloat routine on plain values.
    unsafe { c::f64_to_f32(d(a)) }.v
}
