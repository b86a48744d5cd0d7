//! Host memory a simulation needs, estimated before anything is built, so
//! that a configuration too large for the machine is refused with a clear
//! error instead of being killed by the kernel halfway.

use crate::cluster::{ClusterConfig, MessageSpec};
use crate::LoadConfig;

/// Memory of a built-in host that sends and receives nothing: its NIC's
/// transport with empty tables (everything is allocated on first use) and
/// its two links' ports. Measured: about 3.7 KB (`nanopu net` with 4096
/// idle hosts: 19.9 MB peak); rounded up.
pub const IDLE_HOST_BYTES: u64 = 8 << 10;
/// Memory per workload message: its spec, its record, its send event.
pub const MESSAGE_BYTES: u64 = 160;
/// Memory of a nanoPU node beyond its decode cache, cores and DRAM pages:
/// the NIC, the program image, the basic blocks it has built (they grow
/// with the code it runs). Measured: `configs/incast-80-nodes.toml` (81
/// four-core nodes) peaks at 185 MB before the block engine and 213 MB
/// with it (2.6 MB a node), which these constants overestimate about
/// 1.6 times.
pub const NODE_BASE_BYTES: u64 = 1 << 20;
/// Memory of one core (caches' tags, predictor, FIFOs).
pub const CORE_BYTES: u64 = 256 << 10;
/// Memory of a node's DRAM a program touches. Assumption: the SDK's
/// programs touch well under this (DRAM is backed only where written).
pub const NODE_DRAM_TOUCHED_BYTES: u64 = 2 << 20;

/// The configuration needs more memory than the machine has.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what} needs about {} of host memory, more than the {} available (MemAvailable in /proc/meminfo); make it smaller",
    human(*needed),
    human(*available)
)]
pub struct MemoryError {
    pub what: String,
    pub needed: u64,
    pub available: u64,
}

/// Bytes as "12.3 GB".
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.1} KB", b / 1e3)
    }
}

/// Memory the machine can give without swapping (`MemAvailable` of
/// `/proc/meminfo`); `None` where that file does not exist.
pub fn available_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// Refuses `needed` bytes if the machine does not have them.
pub fn check(what: &str, needed: u64) -> Result<(), MemoryError> {
    check_against(what, needed, available_bytes())
}

fn check_against(what: &str, needed: u64, available: Option<u64>) -> Result<(), MemoryError> {
    match available {
        Some(available) if needed > available => Err(MemoryError {
            what: what.to_string(),
            needed,
            available,
        }),
        _ => Ok(()),
    }
}

/// Memory of `count` workload messages (before they are generated).
pub fn messages_estimate(count: u64) -> u64 {
    count.saturating_mul(MESSAGE_BYTES)
}

/// Memory of a cluster running `messages`: idle hosts cost
/// [`IDLE_HOST_BYTES`], hosts that send or receive a transport's full
/// tables and buffers, nodes their cores and memory.
pub fn cluster_estimate(cfg: &ClusterConfig, messages: &[MessageSpec], nodes: usize) -> u64 {
    let hosts = cfg.network.topology.hosts();
    let mut active = vec![false; hosts];
    for m in messages {
        for h in [m.from, m.to] {
            if let Some(a) = active.get_mut(h) {
                *a = true;
            }
        }
    }
    let active = active.iter().filter(|&&a| a).count().max(nodes.min(hosts)) as u64;
    let busy = cfg.nic.transport.busy_memory_estimate();
    let node = NODE_BASE_BYTES
        + NODE_DRAM_TOUCHED_BYTES
        + cfg.node.decode_cache_entries as u64 * 32
        + cfg.node.cores as u64 * CORE_BYTES;
    let switches = cfg.network.topology.switches() as u64;
    let network = (hosts as u64).saturating_mul(switches).saturating_mul(16)
        + (hosts as u64 + switches * switches) * cfg.network.switch.priority_bands as u64 * 64;
    (hosts as u64)
        .saturating_mul(IDLE_HOST_BYTES)
        .saturating_add(active.saturating_mul(busy))
        .saturating_add((nodes as u64).saturating_mul(node))
        .saturating_add(network)
        .saturating_add(messages_estimate(messages.len() as u64))
}

/// Memory of the built-in client's outstanding requests.
pub fn load_estimate(load: &LoadConfig) -> u64 {
    load.memory_estimate()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_does_not_fit_and_says_how_much() {
        assert!(check_against("x", 10, Some(20)).is_ok());
        assert!(check_against("x", 10, None).is_ok());
        let e = check_against("a network of 65536 hosts", 200_000_000_000, Some(1 << 30))
            .unwrap_err()
            .to_string();
        assert!(e.contains("200.0 GB"), "{e}");
        assert!(e.contains("65536 hosts"), "{e}");
    }

    #[test]
    fn idle_hosts_are_cheap_busy_ones_are_not() {
        let mut cfg = ClusterConfig::default();
        cfg.network.topology = nanopu_network::TopologyConfig::SingleSwitch { hosts: 4096 };
        let idle = cluster_estimate(&cfg, &[], 0);
        assert!(idle < 100 << 20, "{idle}");
        let msgs: Vec<MessageSpec> = (0..4096)
            .map(|h| MessageSpec {
                from: h,
                to: (h + 1) % 4096,
                len: 8,
                at_ns: 0,
            })
            .collect();
        assert!(cluster_estimate(&cfg, &msgs, 0) > 10 * idle);
    }
}
