//! Who is wired to whom, and how a switch reaches each host.
//!
//! Switches and their ports are numbered so that routes are arithmetic (no
//! tables, whatever the size):
//!
//! - **direct**: hosts 0 and 1 on one cable, no switch.
//! - **single switch**: switch 0; port `i` goes to host `i`.
//! - **dumbbell** (NanoTransport §5.2): switch 0 has the `left_hosts` hosts
//!   0.. on ports 0.., then the fabric link to switch 1 on port
//!   `left_hosts`; switch 1 has hosts `left_hosts`.. on ports 0.., then the
//!   fabric link on port `right_hosts`.
//! - **leaf-spine**: leaves are switches `0..leaves`, spines
//!   `leaves..leaves + spines`. Leaf `l` has its hosts `l * hosts_per_leaf
//!   ..` on ports `0..hosts_per_leaf`, then spine `k` on port
//!   `hosts_per_leaf + k`. Spine `k` has leaf `l` on port `l`.
//!
//! The switch methods ([`Topology::attachment`], [`Topology::peer`],
//! [`Topology::route`]) answer `None` for a switch or port that does not
//! exist: every one on a direct link.
//!
//! Routing is by destination host. A leaf sends to a local host directly and
//! anything else up to one of the spines (which one: [`LocalRoute::Spread`],
//! see `crate::switch`); a spine sends down to the destination's leaf. No
//! path loops and no path is longer than leaf-spine-leaf.

use crate::config::TopologyConfig;
use crate::HostId;
use serde::{Deserialize, Serialize};

/// One output port of one switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PortRef {
    /// The switch.
    pub switch: usize,
    /// The port, numbered within the switch (see the module documentation).
    pub port: usize,
}

/// What a link leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Endpoint {
    /// A host's NIC.
    Host(HostId),
    /// A switch.
    Switch(usize),
}

/// Where a switch sends a frame for a host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalRoute {
    /// Out of this port.
    Port(usize),
    /// Out of one of the `count` ports from `first`, all equally good.
    Spread { first: usize, count: usize },
}

/// The shape of the network, with the counts of the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Topology {
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Direct,
    SingleSwitch {
        hosts: usize,
    },
    Dumbbell {
        left: usize,
        right: usize,
    },
    LeafSpine {
        leaves: usize,
        spines: usize,
        per_leaf: usize,
    },
}

impl Topology {
    /// The topology of a validated configuration.
    pub fn new(cfg: &TopologyConfig) -> Topology {
        let kind = match *cfg {
            TopologyConfig::Direct => Kind::Direct,
            TopologyConfig::SingleSwitch { hosts } => Kind::SingleSwitch { hosts },
            TopologyConfig::Dumbbell {
                left_hosts,
                right_hosts,
            } => Kind::Dumbbell {
                left: left_hosts,
                right: right_hosts,
            },
            TopologyConfig::LeafSpine {
                leaves,
                spines,
                hosts_per_leaf,
            } => Kind::LeafSpine {
                leaves,
                spines,
                per_leaf: hosts_per_leaf,
            },
        };
        Topology { kind }
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        match self.kind {
            Kind::Direct => 2,
            Kind::SingleSwitch { hosts } => hosts,
            Kind::Dumbbell { left, right } => left + right,
            Kind::LeafSpine {
                leaves, per_leaf, ..
            } => leaves * per_leaf,
        }
    }

    /// Number of switches.
    pub fn switches(&self) -> usize {
        match self.kind {
            Kind::Direct => 0,
            Kind::SingleSwitch { .. } => 1,
            Kind::Dumbbell { .. } => 2,
            Kind::LeafSpine { leaves, spines, .. } => leaves + spines,
        }
    }

    /// Number of ports of switch `s`.
    pub fn ports(&self, s: usize) -> usize {
        match self.kind {
            Kind::Direct => 0,
            Kind::SingleSwitch { hosts } => hosts,
            Kind::Dumbbell { left, right } => 1 + if s == 0 { left } else { right },
            Kind::LeafSpine {
                leaves,
                spines,
                per_leaf,
            } => {
                if s < leaves {
                    per_leaf + spines
                } else {
                    leaves
                }
            }
        }
    }

    /// What a host's uplink leads to: its switch, or (direct) the other host.
    pub fn uplink_peer(&self, h: HostId) -> Endpoint {
        match self.attachment(h) {
            Some(a) => Endpoint::Switch(a.switch),
            None => Endpoint::Host(1 - h),
        }
    }

    /// The switch port a host is attached to (its downlink); `None` on a
    /// direct link, where the other host's uplink feeds it (see
    /// [`Topology::uplink_peer`]).
    pub fn attachment(&self, h: HostId) -> Option<PortRef> {
        let (switch, port) = match self.kind {
            Kind::Direct => return None,
            Kind::SingleSwitch { .. } => (0, h),
            Kind::Dumbbell { left, .. } => {
                if h < left {
                    (0, h)
                } else {
                    (1, h - left)
                }
            }
            Kind::LeafSpine { per_leaf, .. } => (h / per_leaf, h % per_leaf),
        };
        Some(PortRef { switch, port })
    }

    /// What port `p` of switch `s` leads to; `None` if there is no such
    /// port (no switch at all on a direct link).
    pub fn peer(&self, s: usize, p: usize) -> Option<Endpoint> {
        if s >= self.switches() || p >= self.ports(s) {
            return None;
        }
        Some(match self.kind {
            Kind::Direct => return None,
            Kind::SingleSwitch { .. } => Endpoint::Host(p),
            Kind::Dumbbell { left, right } => match (s, p) {
                (0, p) if p < left => Endpoint::Host(p),
                (0, _) => Endpoint::Switch(1),
                (_, p) if p < right => Endpoint::Host(left + p),
                _ => Endpoint::Switch(0),
            },
            Kind::LeafSpine {
                leaves, per_leaf, ..
            } => {
                if s >= leaves {
                    Endpoint::Switch(p)
                } else if p < per_leaf {
                    Endpoint::Host(s * per_leaf + p)
                } else {
                    Endpoint::Switch(leaves + p - per_leaf)
                }
            }
        })
    }

    /// How switch `s` reaches host `dst` (which must exist); `None` if
    /// there is no switch `s` (none at all on a direct link).
    pub fn route(&self, s: usize, dst: HostId) -> Option<LocalRoute> {
        if s >= self.switches() {
            return None;
        }
        Some(match self.kind {
            Kind::Direct => return None,
            Kind::SingleSwitch { .. } => LocalRoute::Port(dst),
            Kind::Dumbbell { left, right } => LocalRoute::Port(match (s, dst < left) {
                (0, true) => dst,
                (0, false) => left,
                (_, true) => right,
                (_, false) => dst - left,
            }),
            Kind::LeafSpine {
                leaves,
                spines,
                per_leaf,
            } => {
                let leaf = dst / per_leaf;
                if s >= leaves {
                    LocalRoute::Port(leaf)
                } else if s == leaf {
                    LocalRoute::Port(dst % per_leaf)
                } else {
                    LocalRoute::Spread {
                        first: per_leaf,
                        count: spines,
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf_spine() -> Topology {
        Topology::new(&TopologyConfig::LeafSpine {
            leaves: 3,
            spines: 2,
            hosts_per_leaf: 4,
        })
    }

    /// Every port's peer links back to it, and every host's attachment
    /// leads to the host.
    fn check_wiring(t: &Topology) {
        for h in 0..t.hosts() {
            let a = t.attachment(h).unwrap();
            assert_eq!(t.peer(a.switch, a.port), Some(Endpoint::Host(h)));
            assert_eq!(t.route(a.switch, h), Some(LocalRoute::Port(a.port)));
        }
        for s in 0..t.switches() {
            for p in 0..t.ports(s) {
                if let Some(Endpoint::Switch(o)) = t.peer(s, p) {
                    let back = (0..t.ports(o))
                        .filter(|&q| t.peer(o, q) == Some(Endpoint::Switch(s)))
                        .count();
                    assert_eq!(back, 1, "switch {s} port {p} -> switch {o}");
                }
            }
        }
    }

    #[test]
    fn wiring_is_symmetric() {
        check_wiring(&leaf_spine());
        check_wiring(&Topology::new(&TopologyConfig::Dumbbell {
            left_hosts: 2,
            right_hosts: 3,
        }));
        check_wiring(&Topology::new(&TopologyConfig::SingleSwitch { hosts: 5 }));
    }

    #[test]
    fn a_direct_link_has_no_switch() {
        let t = Topology::new(&TopologyConfig::Direct);
        assert_eq!((t.hosts(), t.switches()), (2, 0));
        assert_eq!(t.uplink_peer(0), Endpoint::Host(1));
        assert_eq!(t.attachment(1), None);
        assert_eq!(t.peer(0, 0), None);
        assert_eq!(t.route(0, 1), None);
        // Nor has any topology a switch or port beyond its own.
        let one = Topology::new(&TopologyConfig::SingleSwitch { hosts: 3 });
        assert_eq!(
            (one.peer(1, 0), one.peer(0, 3), one.route(1, 0)),
            (None, None, None)
        );
    }

    #[test]
    fn leaf_spine_routes() {
        let t = leaf_spine();
        assert_eq!((t.hosts(), t.switches()), (12, 5));
        assert_eq!((t.ports(0), t.ports(3)), (6, 3));
        // Leaf 0 to a host of leaf 2: up to either spine.
        assert_eq!(
            t.route(0, 9),
            Some(LocalRoute::Spread { first: 4, count: 2 })
        );
        assert_eq!(t.peer(0, 4), Some(Endpoint::Switch(3)));
        assert_eq!(t.peer(0, 5), Some(Endpoint::Switch(4)));
        // Spine 1 (switch 4) down to leaf 2.
        assert_eq!(t.route(4, 9), Some(LocalRoute::Port(2)));
        assert_eq!(t.peer(4, 2), Some(Endpoint::Switch(2)));
        assert_eq!(t.route(2, 9), Some(LocalRoute::Port(1)));
    }

    #[test]
    fn dumbbell_routes() {
        let t = Topology::new(&TopologyConfig::Dumbbell {
            left_hosts: 2,
            right_hosts: 3,
        });
        assert_eq!(t.route(0, 4), Some(LocalRoute::Port(2)));
        assert_eq!(t.peer(0, 2), Some(Endpoint::Switch(1)));
        assert_eq!(t.route(1, 4), Some(LocalRoute::Port(2)));
        assert_eq!(t.peer(1, 2), Some(Endpoint::Host(4)));
        assert_eq!(t.route(1, 0), Some(LocalRoute::Port(3)));
        assert_eq!(t.peer(1, 3), Some(Endpoint::Switch(0)));
    }
}
