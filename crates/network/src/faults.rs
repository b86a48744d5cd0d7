//! Faults injected on a link direction, in the spirit of smoltcp's
//! `FaultInjector`: every frame that starts on a faulty link direction may
//! be lost, trimmed, truncated, duplicated or delayed, each with its own
//! probability ([`FaultConfig`]), independently.
//!
//! Each link direction draws from its own `ChaCha8Rng`, seeded with the
//! network's seed and the direction's index as the ChaCha stream, so a run
//! is a function of the seed alone, whatever the order in which events on
//! different links are handled. Draws happen in a fixed order (loss, trim,
//! truncate, duplicate, reorder), one per fault whose probability is not
//! zero, so a zero probability draws nothing and changes nothing.
//!
//! What each fault means (the serializer is busy for the frame as sent, in
//! every case; the faults happen on the wire or in the receiver's MAC):
//! - **loss**: the frame never arrives.
//! - **trim**: a nanoPU DATA frame not already trimmed arrives as its
//!   64-byte header with CHOP set, as an NDP switch would forward it
//!   ([`crate::switch::trim_frame`]); other frames are left alone.
//! - **truncate**: the frame is cut to a random length from 1 byte to one
//!   byte short of its Ethernet header plus IPv4 total length (its whole
//!   length if that is unreadable), so the receiver cannot parse it.
//! - **duplicate**: a copy arrives one frame time (the frame's wire time)
//!   after the original.
//! - **reorder**: the frame (and its copy) arrive `reorder_delay_ps` late,
//!   so frames sent after it can overtake it.
//!
//! Besides these, a host may **stop** at a given time
//! ([`crate::config::HostStop`]): a crash as the rest of the network sees
//! it. Frames whose first bit would leave it, or reach it, at or after
//! that time are lost (counted in [`FaultStats::stopped`]).

use crate::config::FaultConfig;
use crate::switch::trim_frame;
use nanopu_sim::SimDuration;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Frames each fault hit, over the whole network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FaultStats {
    pub lost: u64,
    pub trimmed: u64,
    pub truncated: u64,
    pub duplicated: u64,
    pub reordered: u64,
    /// Frames a stopped host did not send or receive.
    pub stopped: u64,
}

/// What becomes of a frame on a faulty link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    Lost,
    Arrives {
        /// A copy follows one frame time later.
        duplicate: bool,
        /// Added to the propagation delay.
        extra_delay: SimDuration,
    },
}

/// The random stream of link direction `index`.
pub(crate) fn rng(seed: u64, index: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index as u64);
    rng
}

fn hit(rng: &mut ChaCha8Rng, p: f64) -> bool {
    p > 0.0 && rng.random::<f64>() < p
}

/// Decides the fate of `frame` and applies the faults that change its bytes.
pub(crate) fn apply(
    rng: &mut ChaCha8Rng,
    cfg: &FaultConfig,
    frame: &mut Vec<u8>,
    stats: &mut FaultStats,
) -> Fate {
    if hit(rng, cfg.loss) {
        stats.lost += 1;
        return Fate::Lost;
    }
    if hit(rng, cfg.trim) && trim_frame(frame) {
        stats.trimmed += 1;
    }
    if hit(rng, cfg.truncate) {
        let whole = meaningful_len(frame);
        if whole > 1 {
            let len = rng.random_range(1..whole);
            frame.truncate(len);
            stats.truncated += 1;
        }
    }
    let duplicate = hit(rng, cfg.duplicate);
    stats.duplicated += u64::from(duplicate);
    let extra_delay = if hit(rng, cfg.reorder) {
        stats.reordered += 1;
        SimDuration::from_ps(cfg.reorder_delay_ps)
    } else {
        SimDuration::ZERO
    };
    Fate::Arrives {
        duplicate,
        extra_delay,
    }
}

/// Ethernet header plus IPv4 total length, if readable and within the
/// frame; else the frame's length.
fn meaningful_len(frame: &[u8]) -> usize {
    use nanopu_wire::frame::IPV4_OFFSET;
    let total = frame
        .get(IPV4_OFFSET + 2..IPV4_OFFSET + 4)
        .map(|b| IPV4_OFFSET + usize::from(u16::from_be_bytes([b[0], b[1]])));
    match total {
        Some(t) if t <= frame.len() => t,
        _ => frame.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_draws_nothing_one_always_hits() {
        let cfg = FaultConfig::default();
        let mut r = rng(1, 0);
        let before = r.clone();
        let mut f = vec![1u8; 100];
        let mut s = FaultStats::default();
        assert_eq!(
            apply(&mut r, &cfg, &mut f, &mut s),
            Fate::Arrives {
                duplicate: false,
                extra_delay: SimDuration::ZERO
            }
        );
        assert_eq!(r, before, "no draw at probability 0");
        assert_eq!(f, vec![1u8; 100]);

        let cfg = FaultConfig {
            truncate: 1.0,
            duplicate: 1.0,
            reorder: 1.0,
            reorder_delay_ps: 5,
            ..FaultConfig::default()
        };
        for _ in 0..100 {
            let mut f = vec![1u8; 100];
            let fate = apply(&mut r, &cfg, &mut f, &mut s);
            assert!((1..100).contains(&f.len()));
            assert_eq!(
                fate,
                Fate::Arrives {
                    duplicate: true,
                    extra_delay: SimDuration::from_ps(5)
                }
            );
        }
        assert_eq!((s.truncated, s.duplicated, s.reordered), (100, 100, 100));
        let cfg = FaultConfig {
            loss: 1.0,
            ..FaultConfig::default()
        };
        assert_eq!(apply(&mut r, &cfg, &mut f, &mut s), Fate::Lost);
    }

    #[test]
    fn streams_differ_by_index_and_seed() {
        let draw = |seed, i| rng(seed, i).random::<u64>();
        assert_eq!(draw(1, 0), draw(1, 0));
        assert_ne!(draw(1, 0), draw(1, 1));
        assert_ne!(draw(1, 0), draw(2, 0));
    }

    #[test]
    fn meaningful_length_ignores_padding() {
        let mut f = vec![0u8; 80];
        f[16..18].copy_from_slice(&50u16.to_be_bytes());
        assert_eq!(meaningful_len(&f), 64);
        f[16..18].copy_from_slice(&500u16.to_be_bytes());
        assert_eq!(meaningful_len(&f), 80);
        assert_eq!(meaningful_len(&f[..10]), 10);
    }
}
