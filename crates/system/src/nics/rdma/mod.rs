//! The RDMA NIC ([`nanopu_nics::rdma`]) and running its built-in clients in
//! a cluster ([`run`]).

pub use nanopu_nics::rdma::*;

pub mod run;
