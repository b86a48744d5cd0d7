//! The NIC designs (crate `nanopu_nics`, one folder per design), re-exported
//! here with the part that needs a whole [`crate::cluster::Cluster`]:
//! running RDMA's built-in clients ([`rdma::run`]).

pub use nanopu_nics::*;

pub mod nebula;
pub mod rdma;
