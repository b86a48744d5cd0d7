//! The NIC designs (crate `nanopu_nics`, one folder per design), re-exported
//! here with the parts that need a whole [`crate::cluster::Cluster`]:
//! running RDMA's built-in clients ([`rdma::run`]) and NEBULA's load
//! ([`nebula::load`]).

pub use nanopu_nics::*;

pub mod nebula;
pub mod rdma;
