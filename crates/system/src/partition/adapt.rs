//! Whether an epoch of the partitioned simulation runs on one thread or on
//! all: whichever has been faster lately on this host ([`Adapt`]).

use nanopu_sim::SimDuration;

/// Host time an epoch of [`Parallel::run`] aims at: long enough that
/// handing the partitions to the threads and back costs little, short
/// enough to follow a host whose load changes.
pub(super) const EPOCH_WALL_S: f64 = 0.002;
/// Every this many epochs at first, the other choice is measured again;
/// each probe it loses doubles the interval, up to [`EPOCH_PROBE_MAX`].
const EPOCH_PROBE: u32 = 8;
const EPOCH_PROBE_MAX: u32 = 32;
/// The longest simulated time an epoch spans (idle stretches grow it).
const EPOCH_MAX_SPAN: SimDuration = SimDuration(1_000_000_000_000);

/// Which thread count is faster now: one thread (`0`) or all (`1`).
///
/// A probe runs one epoch on the other choice and compares its events per
/// host second with the last few epochs before it: neighbouring epochs see
/// about the same traffic (an incast's burst, its tail), so the two rates
/// differ by the thread count more than by the workload's phase, which a
/// rate averaged over the whole run would mix in.
pub(super) struct Adapt {
    /// The choice taken between probes.
    best: usize,
    /// Events per host second of the last epochs on `best` (smoothed).
    last_rate: Option<f64>,
    /// Simulated time an epoch spans (adjusted towards [`EPOCH_WALL_S`]).
    pub(super) span: SimDuration,
    least_span: SimDuration,
    epochs: u32,
    /// Epochs between two probes of the other choice.
    probe_every: u32,
    /// Whether this epoch is a probe.
    probing: bool,
    /// Simulated time run with one thread and with all.
    pub(super) sim_fs: [u64; 2],
}

impl Adapt {
    pub(super) fn new(lookahead: SimDuration) -> Adapt {
        let least_span = SimDuration(lookahead.0.saturating_mul(4));
        Adapt {
            best: 1,
            last_rate: None,
            span: SimDuration(least_span.0.max(SimDuration::from_ns(2_000).0)),
            least_span,
            epochs: 0,
            probe_every: EPOCH_PROBE,
            probing: false,
            sim_fs: [0, 0],
        }
    }

    /// 0: one thread; 1: all. Threads first; every [`EPOCH_PROBE`]th
    /// epoch (or less often) the other choice.
    pub(super) fn choose(&mut self) -> usize {
        self.epochs += 1;
        self.probing = self.last_rate.is_some() && self.epochs.is_multiple_of(self.probe_every);
        if self.probing {
            1 - self.best
        } else {
            self.best
        }
    }

    pub(super) fn record(&mut self, k: usize, events: u64, wall: f64, sim_fs: u64) {
        self.sim_fs[k] += sim_fs;
        if events < 100 || wall <= 0.0 {
            // Too little to measure (an idle stretch): nothing learnt.
            if wall < EPOCH_WALL_S / 4.0 {
                self.span = SimDuration(self.span.0.saturating_mul(2)).min(EPOCH_MAX_SPAN);
            }
            return;
        }
        let rate = events as f64 / wall;
        if self.probing {
            if self.last_rate.is_some_and(|before| rate > before) {
                self.best = k;
                self.probe_every = EPOCH_PROBE;
                self.last_rate = Some(rate);
            } else {
                self.probe_every = (self.probe_every * 2).min(EPOCH_PROBE_MAX);
            }
        } else {
            self.last_rate = Some(self.last_rate.map_or(rate, |r| 0.5 * r + 0.5 * rate));
        }
        let scale = (EPOCH_WALL_S / wall).clamp(0.25, 4.0);
        let span = (self.span.0 as f64 * scale) as u64;
        self.span = SimDuration(span.max(self.least_span.0)).min(EPOCH_MAX_SPAN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs epochs of `Adapt` at the given rates (events per second) for
    /// one thread and for all; returns the choices made.
    fn choices(a: &mut Adapt, epochs: usize, rate: [f64; 2]) -> Vec<usize> {
        (0..epochs)
            .map(|_| {
                let k = a.choose();
                a.record(k, (rate[k] * EPOCH_WALL_S) as u64, EPOCH_WALL_S, 1_000);
                k
            })
            .collect()
    }

    #[test]
    fn threads_first_then_whichever_probes_faster() {
        let mut a = Adapt::new(SimDuration::from_ns(343));
        // Threads faster: one thread is only probed (epochs 8, 16, 32: each
        // lost probe doubles the interval).
        let c = choices(&mut a, 32, [1e6, 2e6]);
        assert_eq!(c.iter().filter(|&&k| k == 0).count(), 3, "{c:?}");
        assert!(a.probe_every > EPOCH_PROBE, "lost probes back off");
        // The host gets busy: the next probe of one thread wins, and
        // threads are then only probed.
        let c = choices(&mut a, 64, [1e6, 0.3e6]);
        let switched = c.iter().position(|&k| k == 0).expect("one thread probed");
        assert!(c[switched..].iter().filter(|&&k| k == 1).count() <= 64 / EPOCH_PROBE as usize);
        assert_eq!(a.best, 0);
        assert!(a.probe_every <= EPOCH_PROBE_MAX);
    }

    #[test]
    fn idle_epochs_teach_nothing_but_grow_the_span() {
        let mut a = Adapt::new(SimDuration::from_ns(343));
        let span = a.span;
        let k = a.choose();
        a.record(k, 10, EPOCH_WALL_S / 10.0, 1_000);
        assert_eq!(a.last_rate, None);
        assert_eq!(a.span.0, span.0 * 2);
    }
}
