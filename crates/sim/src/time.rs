//! Simulated time in femtoseconds.
//!
//! Femtoseconds make every period in the model exact: a 3.2 GHz cycle is
//! 312,500 fs and one bit at 200 Gb/s is 5,000 fs. A u64 of femtoseconds
//! lasts 5 hours of simulated time. Conversions live here and nowhere else;
//! simulated time is never a float.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// The largest time the femtosecond time base holds, in whole units.
pub const MAX_NS: u64 = u64::MAX / 1_000_000;

/// A user-given time that does not fit the femtosecond time base (a u64 of
/// femtoseconds: about 5.1 hours), or is negative or not a number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeRangeError {
    /// The value as given.
    pub value: String,
    /// Its unit.
    pub unit: &'static str,
}

impl fmt::Display for TimeRangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} is out of range: simulated time is at most {} ns (about 5.1 hours) and not negative",
            self.value, self.unit, MAX_NS
        )
    }
}

impl std::error::Error for TimeRangeError {}

/// An instant of simulated time, in femtoseconds since the start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// A span of simulated time, in femtoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub fn fs(self) -> u64 {
        self.0
    }

    /// Nanoseconds, for reporting only.
    pub fn as_ns(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// The first clock edge at or after this instant, for a clock of period
    /// `period` starting at time zero (cycle numbers of the cores).
    pub fn to_cycle_ceil(self, period: SimDuration) -> u64 {
        self.0.div_ceil(period.0)
    }

    /// The instant of clock edge `cycle`.
    pub fn from_cycle(cycle: u64, period: SimDuration) -> SimTime {
        SimTime(cycle.saturating_mul(period.0))
    }

    /// The span from `earlier` to `self` (zero if `earlier` is later).
    pub fn since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);

    pub const fn from_fs(fs: u64) -> SimDuration {
        SimDuration(fs)
    }

    pub const fn from_ps(ps: u64) -> SimDuration {
        SimDuration(ps * 1_000)
    }

    pub const fn from_ns(ns: u64) -> SimDuration {
        SimDuration(ns * 1_000_000)
    }

    pub const fn from_us(us: u64) -> SimDuration {
        SimDuration(us * 1_000_000_000)
    }

    /// The period of a clock of `mhz` MHz (exact when it divides 10^9).
    pub const fn clock_period_mhz(mhz: u64) -> SimDuration {
        SimDuration(1_000_000_000 / mhz)
    }

    /// `ps` picoseconds, or an error if that does not fit the time base
    /// (about 5 hours); for values a user gives (configs, options).
    pub fn try_from_ps(ps: u64) -> Result<SimDuration, TimeRangeError> {
        Self::scaled(ps, 1_000, "ps")
    }

    /// `ns` nanoseconds, or an error if that does not fit the time base.
    pub fn try_from_ns(ns: u64) -> Result<SimDuration, TimeRangeError> {
        Self::scaled(ns, 1_000_000, "ns")
    }

    /// `us` microseconds, or an error if that does not fit the time base.
    pub fn try_from_us(us: u64) -> Result<SimDuration, TimeRangeError> {
        Self::scaled(us, 1_000_000_000, "us")
    }

    /// `ms` milliseconds, or an error if that does not fit the time base.
    pub fn try_from_ms(ms: u64) -> Result<SimDuration, TimeRangeError> {
        Self::scaled(ms, 1_000_000_000_000, "ms")
    }

    /// `ns` nanoseconds given as a float (a mean, a service time), rounded
    /// to a femtosecond; an error if negative, not finite or too large.
    pub fn try_from_ns_f64(ns: f64) -> Result<SimDuration, TimeRangeError> {
        let fs = ns * 1e6;
        if !fs.is_finite() || fs < 0.0 || fs >= u64::MAX as f64 {
            return Err(TimeRangeError {
                value: ns.to_string(),
                unit: "ns",
            });
        }
        Ok(SimDuration(fs.round() as u64))
    }

    fn scaled(v: u64, fs_per_unit: u64, unit: &'static str) -> Result<SimDuration, TimeRangeError> {
        // `ok_or_else`: the message is only written for an error.
        v.checked_mul(fs_per_unit)
            .map(SimDuration)
            .ok_or_else(|| TimeRangeError {
                value: v.to_string(),
                unit,
            })
    }

    /// Time to serialize `bytes` at `gbps` Gb/s, or an error if the rate is
    /// zero or the time does not fit (for values a user gives).
    pub fn try_serialization(bytes: u64, gbps: u64) -> Result<SimDuration, TimeRangeError> {
        let err = || TimeRangeError {
            value: format!("{bytes} bytes at {gbps} Gb/s"),
            unit: "serialization time",
        };
        if gbps == 0 {
            return Err(err());
        }
        bytes
            .checked_mul(8_000_000)
            .map(|b| SimDuration(b.div_ceil(gbps)))
            .ok_or_else(err)
    }

    /// Time to serialize `bytes` at `gbps` Gb/s (rounded up to a femtosecond).
    pub fn serialization(bytes: u64, gbps: u64) -> SimDuration {
        // bits * 10^6 fs/us / (gbps * 10^3 bits/us)
        SimDuration((bytes * 8 * 1_000_000).div_ceil(gbps))
    }

    pub fn fs(self) -> u64 {
        self.0
    }

    /// Nanoseconds, for reporting only.
    pub fn as_ns(self) -> f64 {
        self.0 as f64 / 1e6
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}

impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, d: SimDuration) {
        *self = *self + d;
    }
}

impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, d: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(d.0))
    }
}

impl Sub for SimTime {
    type Output = SimDuration;
    fn sub(self, earlier: SimTime) -> SimDuration {
        self.since(earlier)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} ns", self.as_ns())
    }
}

impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} ns", self.as_ns())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_are_exact() {
        let cycle = SimDuration::clock_period_mhz(3200);
        assert_eq!(cycle.fs(), 312_500);
        assert_eq!(SimDuration::serialization(1, 200).fs(), 40_000);
        // A 72-byte packet at 200 Gb/s: 2.88 ns.
        assert_eq!(
            SimDuration::serialization(72, 200),
            SimDuration::from_ps(2880)
        );
    }

    #[test]
    fn checked_conversions_refuse_what_does_not_fit() {
        assert_eq!(SimDuration::try_from_ns(5), Ok(SimDuration::from_ns(5)));
        assert_eq!(SimDuration::try_from_ps(7), Ok(SimDuration::from_ps(7)));
        assert_eq!(SimDuration::try_from_us(3), Ok(SimDuration::from_us(3)));
        assert_eq!(
            SimDuration::try_from_ms(2),
            Ok(SimDuration::from_ns(2_000_000))
        );
        assert!(SimDuration::try_from_ns(MAX_NS).is_ok());
        assert!(SimDuration::try_from_ns(MAX_NS + 1).is_err());
        // `--max-sim-ms 18446745` is more than 2^64 fs.
        let e = SimDuration::try_from_ms(18_446_745).unwrap_err();
        assert!(e.to_string().contains("18446745 ms"), "{e}");
        assert!(SimDuration::try_from_us(u64::MAX).is_err());
        assert!(SimDuration::try_from_ps(u64::MAX).is_err());
        assert!(SimDuration::try_from_ns_f64(f64::INFINITY).is_err());
        assert!(SimDuration::try_from_ns_f64(f64::NAN).is_err());
        assert!(SimDuration::try_from_ns_f64(-1.0).is_err());
        assert_eq!(
            SimDuration::try_from_ns_f64(1.5),
            Ok(SimDuration(1_500_000))
        );
        assert!(SimDuration::try_serialization(72, 0).is_err());
        assert!(SimDuration::try_serialization(u64::MAX, 1).is_err());
        assert_eq!(
            SimDuration::try_serialization(72, 200),
            Ok(SimDuration::from_ps(2880))
        );
    }

    #[test]
    fn cycles_round_up_to_the_next_edge() {
        let p = SimDuration::clock_period_mhz(3200);
        assert_eq!(SimTime(0).to_cycle_ceil(p), 0);
        assert_eq!(SimTime(1).to_cycle_ceil(p), 1);
        assert_eq!(SimTime(312_500).to_cycle_ceil(p), 1);
        assert_eq!(SimTime::from_cycle(3, p), SimTime(937_500));
    }
}
