//! NEBULA's NIC ([`nanopu_nics::nebula`]) and the loop that drives a node
//! with it from a built-in client ([`load`]).

pub use nanopu_nics::nebula::*;

pub mod load;
