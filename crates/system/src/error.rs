//! Why a simulation of hosts failed: one error type for the loops, their
//! building and the one-node system.

use nanopu_node::NodeError;

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum SystemError {
    #[error(transparent)]
    Node(#[from] NodeError),
    /// A node of a network failed (a guest fault, ...).
    #[error("host {host} (a node): {error}")]
    Host { host: usize, error: NodeError },
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("cannot write the packet trace: {0}")]
    Pcap(std::io::Error),
    #[error(
        "the simulation stopped making progress: no event is pending and every core waits\n{0}"
    )]
    Stalled(String),
}
