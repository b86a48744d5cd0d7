//! An RDMA NIC (ConnectX-3-like, `[nic] kind = "rdma"`) as a
//! [`NicDesign`]: queue pairs of the RC, UC and UD transports, the verbs
//! WRITE, READ, SEND/RECV, compare-and-swap and fetch-and-add executed by
//! the NIC against the node's memory, behind a PCIe link.
//!
//! | module | what |
//! |---|---|
//! | [`params`] | every parameter, named and sourced |
//! | [`pcie`] | the PCIe link: doorbells, DMA reads and writes |
//! | [`packet`] | the wire format (RoCE v2; `docs/rdma-wire-format.md`) |
//! | [`verbs`] | WQE and CQE layouts in host memory (`sdk/include/verbs.h`) |
//! | [`engine`] | queue pairs, the verbs, RC reliability, the QP-context cache |
//! | [`client`] | built-in verbs clients (traffic hosts that post verbs from Rust) |
//! | [`kv_clients`] | HERD's client and a READ-based (Pilaf-style) store's client |
//! | [`run`] | running built-in clients in a cluster |
//!
//! A program rings the doorbell page (`doorbell.rs`) with
//! the address of a WQE; the NIC reads it by DMA, executes it, and writes
//! completions into the program's CQ ring by DMA. Times: every PCIe
//! crossing from [`pcie`], every memory access from the node's memory
//! system, the NIC's own processing from HERD §3's measured rates.

pub mod client;
pub mod doorbell;
pub mod engine;
pub mod kv_clients;
pub mod packet;
pub mod params;
pub mod pcie;
pub mod verbs;

pub use client::VerbsClient;
pub use engine::{RdmaEvent, RdmaNic, RdmaStats};
pub use params::{RdmaParams, RdmaParamsError};
