//! Parameters of the network: topology, links, switches, fault injection.
//!
//! Every default is a named constant whose doc comment gives its source (a
//! paper section) or says that it is an assumption. Experiments set their
//! own values; the defaults describe the nanoPU paper's evaluation network
//! (nanoPU §5.3: "The switch has a forwarding latency of 300ns (typical of
//! modern cut-through commercial switch ASICs) and all links have a latency
//! of 43ns"), with 200 Gb/s links (nanoPU §3).
//!
//! In TOML (every key optional; enum values are kebab-case):
//!
//! ```toml
//! seed = 1
//! [topology]
//! kind = "leaf-spine"        # or "single-switch" (hosts), "dumbbell" (left_hosts, right_hosts)
//! leaves = 4
//! spines = 2
//! hosts_per_leaf = 16
//! [link]
//! gbps = 200
//! host_propagation_ps = 43000
//! fabric_propagation_ps = 43000
//! [switch]
//! forwarding_latency_ps = 300000
//! priority_bands = 8
//! buffer = "per-port"        # or "shared"
//! buffer_bytes = 1048576
//! trimming = true
//! trim_queue_bytes = 8192
//! load_balancing = "ecmp"    # or "spray"
//! [faults]
//! loss = 0.0
//! scope = "all-links"        # or "host-links"
//! ```

use nanopu_sim::SimDuration;
use serde::{Deserialize, Serialize};

/// A network configuration value no network can be built from; names the key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// `key = value` is out of its range.
    #[error("{key} = {value}: {reason}")]
    Invalid {
        key: &'static str,
        value: String,
        reason: String,
    },
    /// The topology has more hosts than host addresses allow.
    #[error("topology: {hosts} hosts: must be at most {MAX_HOSTS}")]
    TooManyHosts { hosts: usize },
}

fn invalid(key: &'static str, value: impl ToString, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key,
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// A time in picoseconds that must fit the femtosecond time base.
fn check_ps(key: &'static str, ps: u64) -> Result<(), ConfigError> {
    SimDuration::try_from_ps(ps).map(|_| ()).map_err(|_| {
        invalid(
            key,
            ps,
            "too long for the simulated time base (at most about 5 hours)",
        )
    })
}

/// Hosts on the default single switch: the smallest network that carries
/// a request and its reply. Assumption.
pub const DEFAULT_HOSTS: usize = 2;
/// Largest number of hosts a topology may have: host addresses are
/// 10.0.0.1 upwards ([`crate::host_ip`]); the limit keeps route tables
/// (one entry per host per switch) small. Assumption.
pub const MAX_HOSTS: usize = 65_536;

/// Line rate of every link (and of every NIC's MAC: the one setting).
pub const DEFAULT_LINK_GBPS: u64 = nanopu_wire::frame::DEFAULT_LINK_GBPS;
/// Fastest link: 100 Tb/s. Assumption: far beyond any link the papers
/// model, and it keeps a 64-byte frame's serialization time above one
/// femtosecond.
pub const MAX_LINK_GBPS: u64 = 100_000;
/// Propagation delay of a host link (host to its switch). Source: nanoPU
/// §5.3 (Raft): "all links have a latency of 43ns".
pub const DEFAULT_HOST_PROPAGATION_PS: u64 = 43_000;
/// Propagation delay of a fabric link (switch to switch). Assumption: the
/// same 43 ns as a host link (nanoPU §5.3 gives one figure for all links).
pub const DEFAULT_FABRIC_PROPAGATION_PS: u64 = 43_000;

/// Forwarding latency of a switch, first bit in to first bit out on an idle
/// port. Source: nanoPU §5.3: "a forwarding latency of 300ns (typical of
/// modern cut-through commercial switch ASICs)".
pub const DEFAULT_FORWARDING_LATENCY_PS: u64 = 300_000;
/// Strict-priority queues per output port. Source: Homa (Montazeri et al.,
/// SIGCOMM 2018) uses the 8 priority levels of commodity switches.
pub const DEFAULT_PRIORITY_BANDS: usize = 8;
/// Largest number of priority bands: a frame's band comes from its 8-bit
/// IPv4 ToS byte, so more than 256 could never be used.
pub const MAX_PRIORITY_BANDS: usize = 256;
/// Data buffer, per port or per switch (see [`BufferKind`]). Assumption:
/// 1 MiB, large enough that no default run overflows. NanoTransport §5.2
/// runs its incast with a "large" bottleneck buffer and with half of it,
/// 54 KB; buffer-pressure experiments set this themselves.
pub const DEFAULT_BUFFER_BYTES: u64 = 1 << 20;
/// Trim packets instead of dropping them when the buffer is full. Source:
/// NDP (Handley et al., SIGCOMM 2017, §3.2), which the nanoPU's transport
/// relies on (nanoPU §5.2.3, NanoTransport §4.3).
pub const DEFAULT_TRIMMING: bool = true;
/// Space reserved for trimmed headers, beyond `buffer_bytes`. Assumption:
/// 128 headers of 64 bytes; NDP (§3.2) gives its header queue no size.
pub const DEFAULT_TRIM_QUEUE_BYTES: u64 = 128 * 64;
/// Extra delay of a reordered frame. Assumption: 1 us, long enough for
/// about 20 MTU frames (1088 B) to overtake it at 200 Gb/s.
pub const DEFAULT_REORDER_DELAY_PS: u64 = 1_000_000;
/// Seed of the fault injectors. Assumption: any fixed value.
pub const DEFAULT_SEED: u64 = 1;

/// The whole network.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkConfig {
    /// Which switches and hosts, wired how.
    pub topology: TopologyConfig,
    /// Rate and propagation delays of the links.
    pub link: LinkConfig,
    /// Every switch's forwarding latency, queues and buffer.
    pub switch: SwitchConfig,
    /// Faults injected on the links.
    pub faults: FaultConfig,
    /// Seed of the fault injectors (and nothing else: without faults a run
    /// does not depend on it).
    pub seed: u64,
}

/// Which switches and hosts, wired how. Hosts are numbered from 0: left
/// then right for the dumbbell, leaf by leaf for the leaf-spine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TopologyConfig {
    /// Two hosts joined by one cable, no switch: the one-node setting of
    /// `nanopu run --load` (a node and its load generator).
    Direct,
    /// All hosts on one switch (the nanoPU paper's evaluation topology,
    /// nanoPU §5.2.3 and §5.3).
    SingleSwitch {
        #[serde(default = "default_hosts")]
        hosts: usize,
    },
    /// Two switches joined by one fabric link, `left_hosts` on the first and
    /// `right_hosts` on the second (NanoTransport §5.2's incast topology).
    Dumbbell {
        #[serde(default = "one")]
        left_hosts: usize,
        #[serde(default = "one")]
        right_hosts: usize,
    },
    /// Two tiers: every leaf connects to `hosts_per_leaf` hosts and to every
    /// spine; traffic between leaves is spread over the spines.
    LeafSpine {
        #[serde(default = "one")]
        leaves: usize,
        #[serde(default = "one")]
        spines: usize,
        #[serde(default = "one")]
        hosts_per_leaf: usize,
    },
}

fn default_hosts() -> usize {
    DEFAULT_HOSTS
}

fn one() -> usize {
    1
}

impl Default for TopologyConfig {
    fn default() -> Self {
        TopologyConfig::SingleSwitch {
            hosts: DEFAULT_HOSTS,
        }
    }
}

impl TopologyConfig {
    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        match *self {
            TopologyConfig::Direct => 2,
            TopologyConfig::SingleSwitch { hosts } => hosts,
            TopologyConfig::Dumbbell {
                left_hosts,
                right_hosts,
            } => left_hosts.saturating_add(right_hosts),
            TopologyConfig::LeafSpine {
                leaves,
                hosts_per_leaf,
                ..
            } => leaves.saturating_mul(hosts_per_leaf),
        }
    }

    /// Number of switches.
    pub fn switches(&self) -> usize {
        match *self {
            TopologyConfig::Direct => 0,
            TopologyConfig::SingleSwitch { .. } => 1,
            TopologyConfig::Dumbbell { .. } => 2,
            TopologyConfig::LeafSpine { leaves, spines, .. } => leaves.saturating_add(spines),
        }
    }
}

/// Links. A host link joins a host to its switch; a fabric link joins two
/// switches. Every link is full duplex at the same rate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinkConfig {
    /// Line rate, Gb/s.
    pub gbps: u64,
    /// Line rate of fabric (switch-to-switch) links, Gb/s; 0 = `gbps`.
    /// An incast experiment that wants the receiver's downlink to be the
    /// bottleneck of a dumbbell sets it higher.
    pub fabric_gbps: u64,
    /// Propagation delay of a host link, ps.
    pub host_propagation_ps: u64,
    /// Propagation delay of a fabric link, ps.
    pub fabric_propagation_ps: u64,
}

impl LinkConfig {
    /// The rate of fabric links.
    pub fn fabric_gbps(&self) -> u64 {
        if self.fabric_gbps == 0 {
            self.gbps
        } else {
            self.fabric_gbps
        }
    }
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            gbps: DEFAULT_LINK_GBPS,
            fabric_gbps: 0,
            host_propagation_ps: DEFAULT_HOST_PROPAGATION_PS,
            fabric_propagation_ps: DEFAULT_FABRIC_PROPAGATION_PS,
        }
    }
}

/// How a switch's buffer is divided among its output ports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BufferKind {
    /// Every output port has `buffer_bytes` (and `trim_queue_bytes`) of its own.
    #[default]
    PerPort,
    /// All output ports of a switch share `buffer_bytes` (and
    /// `trim_queue_bytes`), first come first served.
    Shared,
}

/// How a switch chooses among equal-cost uplinks (leaf to spine).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadBalancing {
    /// Per message: a hash of (source and destination IPv4 address,
    /// transport source and destination context, `tx_msg_id`), so the
    /// packets of a message keep their order.
    #[default]
    Ecmp,
    /// Per packet: round robin over the uplinks (NDP §3.1's packet spraying).
    Spray,
}

/// Every switch of the network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SwitchConfig {
    /// First bit in to first bit out on an idle port (cut-through), ps.
    pub forwarding_latency_ps: u64,
    /// Strict-priority queues per output port; a frame's band is its IPv4
    /// ToS byte, capped at `priority_bands - 1`.
    pub priority_bands: usize,
    /// Per-port or shared buffer.
    pub buffer: BufferKind,
    /// Data buffer (per port or per switch, see `buffer`), bytes.
    pub buffer_bytes: u64,
    /// Trim (NDP) instead of drop when the buffer is full.
    pub trimming: bool,
    /// Buffer for trimmed headers beyond `buffer_bytes` (per port or per
    /// switch, as `buffer`), bytes.
    pub trim_queue_bytes: u64,
    /// Choice among equal-cost uplinks.
    pub load_balancing: LoadBalancing,
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            forwarding_latency_ps: DEFAULT_FORWARDING_LATENCY_PS,
            priority_bands: DEFAULT_PRIORITY_BANDS,
            buffer: BufferKind::PerPort,
            buffer_bytes: DEFAULT_BUFFER_BYTES,
            trimming: DEFAULT_TRIMMING,
            trim_queue_bytes: DEFAULT_TRIM_QUEUE_BYTES,
            load_balancing: LoadBalancing::Ecmp,
        }
    }
}

/// Which links inject faults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultScope {
    /// Every direction of every link.
    #[default]
    AllLinks,
    /// Host links only (both directions), not switch-to-switch links.
    HostLinks,
}

/// Faults, each a probability applied independently to every frame on every
/// link direction in `scope`. All zero by default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FaultConfig {
    /// The frame is lost on the wire.
    pub loss: f64,
    /// A copy follows the frame, one frame time later.
    pub duplicate: f64,
    /// The frame arrives `reorder_delay_ps` late, so later frames overtake it.
    pub reorder: f64,
    /// Extra delay of a reordered frame, ps.
    pub reorder_delay_ps: u64,
    /// A nanoPU DATA frame is trimmed to its header, as a congested NDP
    /// switch would.
    pub trim: f64,
    /// The frame is cut short (the receiver sees a malformed frame).
    pub truncate: f64,
    /// Which links.
    pub scope: FaultScope,
    /// Hosts that stop (crash) at a given time: from then on nothing they
    /// send leaves them and nothing reaches them (`[[network.faults.stops]]
    /// host = 0, at_ns = 50000`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stops: Vec<HostStop>,
}

/// A host that stops at `at_ns` (see [`FaultConfig::stops`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostStop {
    pub host: usize,
    pub at_ns: u64,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_delay_ps: DEFAULT_REORDER_DELAY_PS,
            trim: 0.0,
            truncate: 0.0,
            scope: FaultScope::AllLinks,
            stops: Vec::new(),
        }
    }
}

impl FaultConfig {
    /// Whether any fault can happen.
    pub fn any(&self) -> bool {
        self.loss > 0.0
            || self.duplicate > 0.0
            || self.reorder > 0.0
            || self.trim > 0.0
            || self.truncate > 0.0
    }

    fn validate(&self) -> Result<(), ConfigError> {
        for (name, p) in [
            ("faults.loss", self.loss),
            ("faults.duplicate", self.duplicate),
            ("faults.reorder", self.reorder),
            ("faults.trim", self.trim),
            ("faults.truncate", self.truncate),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(invalid(name, p, "must be a probability in [0, 1]"));
            }
        }
        check_ps("faults.reorder_delay_ps", self.reorder_delay_ps)?;
        for s in &self.stops {
            if SimDuration::try_from_ns(s.at_ns).is_err() {
                return Err(invalid(
                    "faults.stops.at_ns",
                    s.at_ns,
                    "too long for the simulated time base (at most about 5 hours)",
                ));
            }
        }
        Ok(())
    }
}

impl NetworkConfig {
    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_topology()?;
        let l = &self.link;
        for (key, gbps) in [("link.gbps", l.gbps), ("link.fabric_gbps", l.fabric_gbps)] {
            if gbps > MAX_LINK_GBPS || (gbps == 0 && key == "link.gbps") {
                return Err(invalid(
                    key,
                    gbps,
                    format!("must be between 1 and {MAX_LINK_GBPS} Gb/s"),
                ));
            }
        }
        check_ps("link.host_propagation_ps", l.host_propagation_ps)?;
        check_ps("link.fabric_propagation_ps", l.fabric_propagation_ps)?;
        let s = &self.switch;
        check_ps("switch.forwarding_latency_ps", s.forwarding_latency_ps)?;
        if s.priority_bands == 0 || s.priority_bands > MAX_PRIORITY_BANDS {
            return Err(invalid(
                "switch.priority_bands",
                s.priority_bands,
                format!("must be between 1 and {MAX_PRIORITY_BANDS}"),
            ));
        }
        if s.buffer_bytes == 0 {
            return Err(invalid("switch.buffer_bytes", 0, "must be positive"));
        }
        if s.trimming && s.trim_queue_bytes < nanopu_wire::frame::HEADER_LEN as u64 {
            return Err(invalid(
                "switch.trim_queue_bytes",
                s.trim_queue_bytes,
                format!(
                    "must hold at least one {}-byte header when trimming is on",
                    nanopu_wire::frame::HEADER_LEN
                ),
            ));
        }
        self.faults.validate()
    }

    fn validate_topology(&self) -> Result<(), ConfigError> {
        let positive = |name: &'static str, v: usize| {
            if v == 0 {
                Err(invalid(name, 0, "must be at least 1"))
            } else {
                Ok(())
            }
        };
        match self.topology {
            TopologyConfig::Direct => {}
            TopologyConfig::SingleSwitch { hosts } => positive("topology.hosts", hosts)?,
            TopologyConfig::Dumbbell {
                left_hosts,
                right_hosts,
            } => {
                positive("topology.left_hosts", left_hosts)?;
                positive("topology.right_hosts", right_hosts)?;
            }
            TopologyConfig::LeafSpine {
                leaves,
                spines,
                hosts_per_leaf,
            } => {
                positive("topology.leaves", leaves)?;
                positive("topology.spines", spines)?;
                positive("topology.hosts_per_leaf", hosts_per_leaf)?;
                if spines > MAX_HOSTS {
                    return Err(invalid(
                        "topology.spines",
                        spines,
                        format!("must be at most {MAX_HOSTS}"),
                    ));
                }
            }
        }
        let hosts = self.topology.hosts();
        if hosts > MAX_HOSTS {
            return Err(ConfigError::TooManyHosts { hosts });
        }
        if let Some(s) = self.faults.stops.iter().find(|s| s.host >= hosts) {
            return Err(invalid(
                "faults.stops.host",
                s.host,
                format!("the topology has hosts 0..{}", hosts - 1),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        let c = NetworkConfig::default();
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(c.topology.hosts(), 2);
        assert_eq!(c.topology.switches(), 1);
        assert!(!c.faults.any());
    }

    #[test]
    fn counts() {
        let t = TopologyConfig::LeafSpine {
            leaves: 4,
            spines: 2,
            hosts_per_leaf: 16,
        };
        assert_eq!((t.hosts(), t.switches()), (64, 6));
        let t = TopologyConfig::Dumbbell {
            left_hosts: 3,
            right_hosts: 5,
        };
        assert_eq!((t.hosts(), t.switches()), (8, 2));
    }

    #[test]
    fn errors_name_the_field() {
        let bad = |f: &dyn Fn(&mut NetworkConfig)| {
            let mut c = NetworkConfig::default();
            f(&mut c);
            c.validate().unwrap_err().to_string()
        };
        assert_eq!(
            bad(&|c| c.switch.buffer_bytes = 0),
            "switch.buffer_bytes = 0: must be positive"
        );
        assert!(bad(&|c| c.link.gbps = 0).starts_with("link.gbps"));
        assert!(bad(&|c| c.switch.priority_bands = 0).starts_with("switch.priority_bands = 0"));
        assert!(bad(&|c| c.switch.priority_bands = 257).starts_with("switch.priority_bands"));
        assert!(bad(&|c| c.switch.trim_queue_bytes = 10).starts_with("switch.trim_queue_bytes"));
        assert!(bad(&|c| c.faults.loss = 1.5).starts_with("faults.loss = 1.5"));
        assert!(bad(&|c| c.faults.truncate = f64::NAN).starts_with("faults.truncate"));
        assert!(bad(&|c| c.faults.reorder = -0.1).starts_with("faults.reorder"));
        assert!(bad(&|c| c.link.gbps = 1 << 40).starts_with("link.gbps"));
        assert!(bad(&|c| c.link.fabric_gbps = 1 << 40).starts_with("link.fabric_gbps"));
        assert!(
            bad(&|c| c.link.host_propagation_ps = u64::MAX).starts_with("link.host_propagation_ps")
        );
        assert!(bad(&|c| c.switch.forwarding_latency_ps = u64::MAX)
            .starts_with("switch.forwarding_latency_ps"));
        assert!(
            bad(&|c| c.faults.reorder_delay_ps = u64::MAX).starts_with("faults.reorder_delay_ps")
        );
        assert!(
            bad(&|c| c.topology = TopologyConfig::SingleSwitch { hosts: 0 })
                .starts_with("topology.hosts = 0")
        );
        let e = bad(&|c| {
            c.topology = TopologyConfig::LeafSpine {
                leaves: 2,
                spines: 0,
                hosts_per_leaf: 1,
            }
        });
        assert!(e.starts_with("topology.spines = 0"), "{e}");
        let e = bad(&|c| {
            c.topology = TopologyConfig::SingleSwitch {
                hosts: MAX_HOSTS + 1,
            }
        });
        assert!(e.starts_with("topology: 65537 hosts"), "{e}");
        // Trimming off: no trim allowance needed.
        let mut c = NetworkConfig::default();
        c.switch.trimming = false;
        c.switch.trim_queue_bytes = 0;
        assert_eq!(c.validate(), Ok(()));
    }
}
