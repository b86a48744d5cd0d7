//! Workloads for the built-in hosts of a [`crate::cluster::Cluster`]:
//! explicit messages, incasts, and random traffic, from a configuration
//! file. Generated deterministically from a seed.

use crate::cluster::{parse_hosts, MessageSpec};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// What the built-in hosts send.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Workload {
    /// Seed of the random traffic.
    pub seed: u64,
    /// Individual messages.
    pub messages: Vec<MessageSpec>,
    /// Many-to-one bursts.
    pub incast: Vec<Incast>,
    /// Random sources and destinations.
    pub random: Vec<RandomTraffic>,
}

/// Every sender sends one message (or `count`) to `receiver` at `at_ns`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Incast {
    /// Host set, e.g. `"1-10"`.
    pub senders: String,
    pub receiver: usize,
    /// Message sizes in bytes, one per sender in order (cycled if fewer).
    pub sizes: Vec<u16>,
    #[serde(default)]
    pub at_ns: u64,
    /// Messages per sender (default 1), `interval_ns` apart.
    #[serde(default = "one")]
    pub count: u32,
    #[serde(default)]
    pub interval_ns: u64,
}

fn one() -> u32 {
    1
}

/// Each host of `hosts` sends `count` messages to random other hosts of
/// `hosts` (or all to host `to`, when given), with sizes uniform in
/// `[min_bytes, max_bytes]` and exponentially distributed gaps of mean
/// `mean_interval_ns`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomTraffic {
    pub hosts: String,
    pub count: u32,
    pub min_bytes: u16,
    pub max_bytes: u16,
    pub mean_interval_ns: f64,
    #[serde(default)]
    pub start_ns: u64,
    /// Every message to this host (clients and one server).
    #[serde(default)]
    pub to: Option<usize>,
}

impl Workload {
    /// The messages, for a network of `hosts`; the error names the entry.
    pub fn generate(&self, hosts: usize) -> Result<Vec<MessageSpec>, String> {
        let mut out = self.messages.clone();
        for (i, inc) in self.incast.iter().enumerate() {
            let senders =
                parse_hosts(&inc.senders, hosts).map_err(|e| format!("incast[{i}].{e}"))?;
            if inc.sizes.is_empty() {
                return Err(format!("incast[{i}].sizes: at least one size"));
            }
            for k in 0..inc.count as u64 {
                for (j, &from) in senders.iter().enumerate() {
                    out.push(MessageSpec {
                        from,
                        to: inc.receiver,
                        len: inc.sizes[j % inc.sizes.len()],
                        at_ns: inc.at_ns + k * inc.interval_ns,
                    });
                }
            }
        }
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        for (i, r) in self.random.iter().enumerate() {
            let set = parse_hosts(&r.hosts, hosts).map_err(|e| format!("random[{i}].{e}"))?;
            if let Some(to) = r.to {
                if to >= hosts || set.contains(&to) {
                    return Err(format!(
                        "random[{i}].to = {to}: must be a host (0..{}) not in `hosts`",
                        hosts.saturating_sub(1)
                    ));
                }
            } else if set.len() < 2 {
                return Err(format!("random[{i}].hosts: at least two hosts"));
            }
            if r.min_bytes > r.max_bytes || r.mean_interval_ns.is_nan() || r.mean_interval_ns < 0.0
            {
                return Err(format!(
                    "random[{i}]: min_bytes <= max_bytes and mean_interval_ns >= 0 required"
                ));
            }
            for &from in &set {
                let mut t = r.start_ns as f64;
                for _ in 0..r.count {
                    let to = match r.to {
                        Some(to) => to,
                        None => loop {
                            let to = set[rng.random_range(0..set.len())];
                            if to != from {
                                break to;
                            }
                        },
                    };
                    let len = rng.random_range(r.min_bytes..=r.max_bytes);
                    out.push(MessageSpec {
                        from,
                        to,
                        len,
                        at_ns: t as u64,
                    });
                    let u: f64 = rng.random();
                    t += -r.mean_interval_ns * (1.0 - u).ln();
                }
            }
        }
        Ok(out)
    }
}
