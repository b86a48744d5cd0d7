//! Which NIC design a node has (`[nic] kind`).

use serde::{Deserialize, Serialize};

/// A NIC design (`[nic] kind`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NicKind {
    /// The nanoPU NIC: the fast path into the register file.
    #[default]
    #[serde(alias = "nano-pu")]
    Nanopu,
    /// A traditional DMA NIC (IceNIC-like).
    #[serde(alias = "traditional")]
    Icenic,
    /// An RDMA NIC (ConnectX-3-like) behind PCIe: queue pairs, one-sided
    /// and messaging verbs (`nanopu_nics::rdma`).
    Rdma,
}

impl NicKind {
    pub fn name(self) -> &'static str {
        match self {
            NicKind::Nanopu => "nanopu",
            NicKind::Icenic => "icenic",
            NicKind::Rdma => "rdma",
        }
    }
}
