//! Host memory a simulation needs, estimated before anything is built, so
//! that a configuration too large for the machine is refused with a clear
//! error instead of being killed by the kernel halfway.

use crate::config::Config as ClusterConfig;
use crate::host_set::parse_hosts;
use crate::records::MessageSpec;
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

/// Memory of one latency histogram of a load generator: picoseconds up to
/// 10 s at three significant digits: hdrhistogram's (34 + 1) x 1,024
/// 64-bit counters.
pub const HISTOGRAM_BYTES: u64 = 35_840 * 8;
/// Memory of a load generator host beyond its histograms and outstanding
/// requests: its reassembly tables, spare buffers, events. Measured with
/// `nanopu net`, one `loopback` node and N default clients (window 1):
/// 585 KB per client at 30 us (two histograms), 930 KB at 3 ms (a third,
/// for the one context, from the first measured reply); rounded up.
pub const CLIENT_BASE_BYTES: u64 = 128 << 10;

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

/// Refuses a cluster running `messages` if the machine does not have the
/// memory it needs ([`cluster_estimate`]), saying what it holds.
pub fn check_cluster(cfg: &ClusterConfig, messages: &[MessageSpec]) -> Result<(), MemoryError> {
    let hosts = cfg.network.topology.hosts();
    let count = |specs: &mut dyn Iterator<Item = &str>| -> usize {
        specs
            .map(|s| parse_hosts(s, hosts).map_or(0, |v| v.len()))
            .sum()
    };
    let nodes = count(&mut cfg.programs.iter().map(|p| p.hosts.as_str()));
    let clients = count(&mut cfg.clients.iter().map(|c| c.hosts.as_str()));
    check(
        &format!(
            "a network of {hosts} hosts ({nodes} nodes, {clients} load generators) with {} messages",
            messages.len()
        ),
        cluster_estimate(cfg, messages),
    )
}

/// Memory of a cluster running `messages`, every kind of host counted:
/// idle built-in hosts cost [`IDLE_HOST_BYTES`], hosts that send or
/// receive a transport's full tables and buffers, nodes their cores,
/// memory and program image ([`node_estimate`]), load generators their
/// state ([`client_estimate`]). Hosts the configuration gives no valid
/// role count as built-in hosts (building the cluster refuses them).
pub fn cluster_estimate(cfg: &ClusterConfig, messages: &[MessageSpec]) -> u64 {
    let hosts = cfg.network.topology.hosts();
    let mut active = vec![false; hosts];
    for m in messages {
        for h in [m.from, m.to] {
            if let Some(a) = active.get_mut(h) {
                *a = true;
            }
        }
    }
    let mut nodes = 0u64;
    let mut node_hosts = 0u64;
    for p in &cfg.programs {
        let n = parse_hosts(&p.hosts, hosts).map_or(0, |v| v.len()) as u64;
        // Each node loads the whole image into its DRAM.
        let image = program_file_bytes(&p.program);
        nodes = nodes.saturating_add(
            n.saturating_mul(node_estimate(cfg).saturating_add(image))
                .saturating_add(image),
        );
        node_hosts += n;
    }
    let mut clients = 0u64;
    for c in &cfg.clients {
        let n = parse_hosts(&c.hosts, hosts).map_or(0, |v| v.len()) as u64;
        clients = clients.saturating_add(n.saturating_mul(client_estimate(&c.load)));
    }
    let active = (active.iter().filter(|&&a| a).count() as u64).max(node_hosts.min(hosts as u64));
    let busy = cfg.nic.transport.busy_memory_estimate();
    let switches = cfg.network.topology.switches() as u64;
    let network = (hosts as u64).saturating_mul(switches).saturating_mul(16)
        + (hosts as u64 + switches * switches) * cfg.network.switch.priority_bands as u64 * 64;
    (hosts as u64)
        .saturating_mul(IDLE_HOST_BYTES)
        .saturating_add(active.saturating_mul(busy))
        .saturating_add(nodes)
        .saturating_add(clients)
        .saturating_add(network)
        .saturating_add(messages_estimate(messages.len() as u64))
}

/// Memory of one nanoPU node of `cfg` beyond its program image.
pub fn node_estimate(cfg: &ClusterConfig) -> u64 {
    NODE_BASE_BYTES
        + NODE_DRAM_TOUCHED_BYTES
        + cfg.node.decode_cache_entries as u64 * 32
        + cfg.node.cores as u64 * CORE_BYTES
}

/// Memory of one load generator host running `load`: its state
/// ([`CLIENT_BASE_BYTES`]), a histogram of response times at the server's
/// wire, one at the client and one per destination context, and its
/// outstanding requests.
pub fn client_estimate(load: &LoadConfig) -> u64 {
    let histograms = 2 + 1 + load.extra_contexts.len() as u64;
    CLIENT_BASE_BYTES
        .saturating_add(histograms.saturating_mul(HISTOGRAM_BYTES))
        .saturating_add(load_estimate(load))
}

/// Bytes of the program file at `path` (0 if it is not a regular file:
/// the loader refuses it before anything is read).
fn program_file_bytes(path: &std::path::Path) -> u64 {
    std::fs::metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map_or(0, |m| m.len().min(nanopu_node::loader::MAX_ELF_BYTES))
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

    fn one_node(hosts: usize, program: &str) -> ClusterConfig {
        let mut cfg = ClusterConfig::default();
        cfg.network.topology = nanopu_network::TopologyConfig::SingleSwitch { hosts };
        cfg.programs = vec![crate::config::HostProgram {
            hosts: "0".into(),
            program: program.into(),
            nic: None,
            args: Vec::new(),
        }];
        cfg
    }

    #[test]
    fn load_generators_count_like_nodes() {
        let mut cfg = one_node(40_000, "x.elf");
        let without = cluster_estimate(&cfg, &[]);
        cfg.clients = vec![crate::config::ClientSpec {
            hosts: "1-39999".into(),
            server: 0,
            ..Default::default()
        }];
        let with = cluster_estimate(&cfg, &[]);
        let each = client_estimate(&LoadConfig::default());
        assert!(each >= CLIENT_BASE_BYTES + 3 * HISTOGRAM_BYTES);
        assert!(with >= without + 39_999 * each, "{without} then {with}");
        // A wider window costs more.
        cfg.clients[0].load.mode = crate::LoadMode::Closed { window: 1024 };
        assert!(cluster_estimate(&cfg, &[]) > with);
    }

    #[test]
    fn every_node_holds_its_program_image() {
        let dir = std::env::temp_dir().join(format!("nanopu-memory-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let image = dir.join("big.elf");
        // Sparse: no disk is used.
        std::fs::File::create(&image)
            .unwrap()
            .set_len(100 << 20)
            .unwrap();
        let mut small = one_node(64, "/nonexistent.elf");
        small.programs[0].hosts = "0-9".into();
        let mut big = small.clone();
        big.programs[0].program = image.clone();
        let grew = cluster_estimate(&big, &[]) - cluster_estimate(&small, &[]);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(grew >= 10 * (100 << 20), "{grew}");
    }

    #[test]
    fn idle_hosts_are_cheap_busy_ones_are_not() {
        let mut cfg = ClusterConfig::default();
        cfg.network.topology = nanopu_network::TopologyConfig::SingleSwitch { hosts: 4096 };
        let idle = cluster_estimate(&cfg, &[]);
        assert!(idle < 100 << 20, "{idle}");
        let msgs: Vec<MessageSpec> = (0..4096)
            .map(|h| MessageSpec {
                from: h,
                to: (h + 1) % 4096,
                len: 8,
                at_ns: 0,
            })
            .collect();
        assert!(cluster_estimate(&cfg, &msgs) > 10 * idle);
    }
}
