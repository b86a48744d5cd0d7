//! Workloads for the built-in hosts of a [`crate::cluster::Cluster`]:
//! explicit messages, incasts, and random traffic, from a configuration
//! file. Generated deterministically from a seed.

use crate::host_set::parse_hosts;
use crate::records::MessageSpec;
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

/// Shortest workload message: its first word carries the message's index,
/// which is how a delivery is matched to its send.
pub const MIN_MESSAGE_BYTES: u16 = 8;

/// A workload entry that cannot be generated; names the entry and key.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum WorkloadError {
    /// `entry.key`: what is wrong.
    #[error("workload.{entry}: {reason}")]
    Invalid { entry: String, reason: String },
}

fn invalid(entry: impl Into<String>, reason: impl Into<String>) -> WorkloadError {
    WorkloadError::Invalid {
        entry: entry.into(),
        reason: reason.into(),
    }
}

/// A message length must number the message and fit the NIC.
fn check_len(entry: &str, len: u16, max_bytes: u32) -> Result<(), WorkloadError> {
    if len < MIN_MESSAGE_BYTES {
        return Err(invalid(
            entry,
            format!(
                "{len} bytes: a workload message needs at least {MIN_MESSAGE_BYTES} bytes (its first word numbers it)"
            ),
        ));
    }
    if len as u32 > max_bytes {
        return Err(invalid(
            entry,
            format!("{len} bytes: more than the NIC's largest message ({max_bytes} bytes, nic.max_message_bytes and the transport's buffers)"),
        ));
    }
    Ok(())
}

/// A send time that fits the simulated time base.
fn check_at(entry: &str, at_ns: Option<u64>) -> Result<u64, WorkloadError> {
    at_ns
        .filter(|&t| nanopu_sim::SimDuration::try_from_ns(t).is_ok())
        .ok_or_else(|| {
            invalid(
                entry,
                format!(
                    "send time beyond the simulated time base (at most {} ns, about 5 hours)",
                    nanopu_sim::MAX_NS
                ),
            )
        })
}

impl Workload {
    /// How many messages [`Workload::generate`] makes for a network of
    /// `hosts` (saturating; host sets that do not parse count as empty).
    pub fn message_count(&self, hosts: usize) -> u64 {
        let set = |s: &str| parse_hosts(s, hosts).map_or(0, |v| v.len()) as u64;
        let incast = self
            .incast
            .iter()
            .map(|i| set(&i.senders).saturating_mul(i.count as u64));
        let random = self
            .random
            .iter()
            .map(|r| set(&r.hosts).saturating_mul(r.count as u64));
        incast
            .chain(random)
            .fold(self.messages.len() as u64, u64::saturating_add)
    }

    /// The messages, for a network of `hosts` whose NICs carry messages of
    /// at most `max_message_bytes`; the error names the entry.
    pub fn generate(
        &self,
        hosts: usize,
        max_message_bytes: u32,
    ) -> Result<Vec<MessageSpec>, WorkloadError> {
        for (i, m) in self.messages.iter().enumerate() {
            let entry = format!("messages[{i}]");
            check_len(&format!("{entry}.len"), m.len, max_message_bytes)?;
            check_at(&format!("{entry}.at_ns"), Some(m.at_ns))?;
            if m.from >= hosts || m.to >= hosts {
                return Err(invalid(
                    entry,
                    format!(
                        "from {} to {}: the network has hosts 0..{}",
                        m.from,
                        m.to,
                        hosts.saturating_sub(1)
                    ),
                ));
            }
        }
        let mut out = self.messages.clone();
        for (i, inc) in self.incast.iter().enumerate() {
            let senders = parse_hosts(&inc.senders, hosts)
                .map_err(|e| invalid(format!("incast[{i}].senders"), e))?;
            if inc.sizes.is_empty() {
                return Err(invalid(format!("incast[{i}].sizes"), "at least one size"));
            }
            if inc.receiver >= hosts {
                return Err(invalid(
                    format!("incast[{i}].receiver"),
                    format!("{}: the network has hosts 0..{}", inc.receiver, hosts - 1),
                ));
            }
            for &len in &inc.sizes {
                check_len(&format!("incast[{i}].sizes"), len, max_message_bytes)?;
            }
            let last = (inc.count as u64)
                .saturating_sub(1)
                .checked_mul(inc.interval_ns)
                .and_then(|d| inc.at_ns.checked_add(d));
            check_at(&format!("incast[{i}].at_ns"), last)?;
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
            let set = parse_hosts(&r.hosts, hosts)
                .map_err(|e| invalid(format!("random[{i}].hosts"), e))?;
            if let Some(to) = r.to {
                if to >= hosts || set.contains(&to) {
                    return Err(invalid(
                        format!("random[{i}].to"),
                        format!(
                            "{to}: must be a host (0..{}) not in `hosts`",
                            hosts.saturating_sub(1)
                        ),
                    ));
                }
            } else if set.len() < 2 {
                return Err(invalid(format!("random[{i}].hosts"), "at least two hosts"));
            }
            if r.min_bytes > r.max_bytes {
                return Err(invalid(
                    format!("random[{i}]"),
                    format!(
                        "min_bytes = {} is above max_bytes = {}",
                        r.min_bytes, r.max_bytes
                    ),
                ));
            }
            check_len(
                &format!("random[{i}].min_bytes"),
                r.min_bytes,
                max_message_bytes,
            )?;
            check_len(
                &format!("random[{i}].max_bytes"),
                r.max_bytes,
                max_message_bytes,
            )?;
            if !(r.mean_interval_ns.is_finite() && r.mean_interval_ns >= 0.0) {
                return Err(invalid(
                    format!("random[{i}].mean_interval_ns"),
                    format!("{}: must be a finite number >= 0", r.mean_interval_ns),
                ));
            }
            check_at(&format!("random[{i}].start_ns"), Some(r.start_ns))?;
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
                    if t > nanopu_sim::MAX_NS as f64 {
                        return Err(invalid(
                            format!("random[{i}]"),
                            format!(
                                "{} messages {} ns apart on average run past the simulated time base (at most {} ns)",
                                r.count,
                                r.mean_interval_ns,
                                nanopu_sim::MAX_NS
                            ),
                        ));
                    }
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
