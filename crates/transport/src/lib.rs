//! NanoTransport (Arslan et al., SOSR'21): the nanoPU NIC's programmable
//! transport layer.

pub mod buffers;
pub mod scheduler;
pub mod state;
pub mod timer;
