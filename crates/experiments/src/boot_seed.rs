//! One boot for several points: points that run the same program on the
//! same node and differ only in their load (an offered-load sweep) spend
//! the same host time booting it, a store's preload for instance, before
//! the client sends anything. The first such point keeps a fork of its node
//! from the last moment only the node's cores had run
//! ([`System::only_cores_ran`]); the others start from copies of that fork
//! behind a new NIC, link and client, and run on exactly as their own boot
//! would have (the NIC, link and client were as built, and nothing the node
//! did depended on the load).

use crate::Result;
use nanopu_node::{FrozenNode, Node};
use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::{Config, System, SystemEnd, SystemError};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::Mutex;

/// How often (simulated time) a seeding point stops to look whether only
/// the node's cores have run, and forks the node if so. Each fork copies
/// the memory the program touched (~0.05 s of host time for 100 MB; from
/// the second copy on, only what changed since the one before), and a
/// point started from the seed still runs the boot's last stretch (up to
/// this long): 5 ms balances the two for nb-mica's 62 ms preload.
pub const SEED_PAUSE: SimDuration = SimDuration::from_us(5_000);

/// What a node's boot depends on: points share a seed only if all of it
/// is equal.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SeedKey {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub addresses: Option<(Ipv4Addr, Ipv4Addr)>,
    /// The system's configuration as the point builds it (node, NIC design
    /// and core selection with its seed, network).
    pub cfg: Config,
    /// The link's propagation delay (set by the load).
    pub link_propagation_ps: u64,
}

/// A booted node kept for the points after the first (see the module).
/// Threads may share one: each point locks it only to copy the node (or,
/// the first, to keep it). Points that find it empty at the same time each
/// boot and keep their own node, the last one stays: the same node, as
/// their boots are the same.
#[derive(Default)]
pub struct BootSeed {
    booted: Mutex<Option<(SeedKey, FrozenNode)>>,
    /// When the seeding point's load generator started (the boot message
    /// reached it): the same for every point from the seed.
    started: Mutex<Option<SimTime>>,
}

impl BootSeed {
    pub fn new() -> BootSeed {
        BootSeed::default()
    }

    /// Whether a booted node is kept.
    pub fn is_empty(&self) -> bool {
        self.booted.lock().expect("no panics").is_none()
    }

    /// A copy of the kept node, if it was booted for `key`: it shares the
    /// kept node's memory until it writes it ([`FrozenNode::fork`]).
    pub(crate) fn fork_for(&self, key: &SeedKey) -> Result<Option<Node>> {
        match &*self.booted.lock().expect("no panics") {
            Some((k, node)) if k == key => Ok(Some(node.fork()?)),
            _ => Ok(None),
        }
    }

    fn keep(&self, key: SeedKey, node: Node) {
        *self.booted.lock().expect("no panics") = Some((key, node.freeze()));
    }

    /// When the load generator of a point from this seed starts, once the
    /// seeding point has told ([`BootSeed::note_start`]).
    pub(crate) fn client_start(&self) -> Option<SimTime> {
        *self.started.lock().expect("no panics")
    }

    pub(crate) fn note_start(&self, at: SimTime) {
        *self.started.lock().expect("no panics") = Some(at);
    }
}

/// [`System::run`] towards `until`, stopping every [`SEED_PAUSE`] while
/// only the node's cores have run to keep a fork of the node in `seed`
/// (the last one, taken as late as possible), and returning (`None`) at
/// the first pause after that for the caller to run on; `Some` if the run
/// ended first. Pausing changes nothing in the run. Nothing is kept if the
/// client or NIC acted before the first pause, or the node cannot be
/// forked (an observer attached); the run is the same.
pub(crate) fn run_seeding(
    sys: &mut System,
    until: SimTime,
    seed: &BootSeed,
    key: SeedKey,
) -> std::result::Result<Option<SystemEnd>, SystemError> {
    let mut kept = None;
    let mut pause = SimTime::ZERO + SEED_PAUSE;
    let mut ended = None;
    while pause < until {
        match sys.run_pausing(until, Some(pause))? {
            Some(end) => {
                ended = Some(end);
                break;
            }
            // Each copy after the first reuses the one before it and
            // writes only the pages that changed since.
            None if sys.only_cores_ran() => match match kept.take() {
                Some(old) => sys.node().fork_into(old),
                None => sys.node().fork(),
            } {
                Ok(node) => kept = Some(node),
                Err(_) => break,
            },
            None => break,
        }
        pause += SEED_PAUSE;
    }
    if let Some(node) = kept {
        seed.keep(key, node);
    }
    Ok(ended)
}
