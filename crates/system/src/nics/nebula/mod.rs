//! NEBULA's NIC ([`nanopu_nics::nebula`]). Nodes with it run in the
//! same loop as every other design (`nic.kind = "nebula..."`, see
//! [`crate::cluster::node_nic`]); `nb-mica` drives them with the built-in
//! load generator's connections ([`crate::connections`]).

pub use nanopu_nics::nebula::*;
