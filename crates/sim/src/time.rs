//! Simulated time in femtoseconds.
//!
//! Femtoseconds make every period in the model exact: a 3.2 GHz cycle is
//! 312,500 fs and one bit at 200 Gb/s is 5,000 fs. A u64 of femtoseconds
//! lasts 5 hours of simulated time. Conversions live here and nowhere else;
//! simulated time is never a float.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

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
    fn cycles_round_up_to_the_next_edge() {
        let p = SimDuration::clock_period_mhz(3200);
        assert_eq!(SimTime(0).to_cycle_ceil(p), 0);
        assert_eq!(SimTime(1).to_cycle_ceil(p), 1);
        assert_eq!(SimTime(312_500).to_cycle_ceil(p), 1);
        assert_eq!(SimTime::from_cycle(3, p), SimTime(937_500));
    }
}
