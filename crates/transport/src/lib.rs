//! NanoTransport (Arslan et al., SOSR'21): the nanoPU NIC's programmable
//! transport layer, block by block as in the paper's Figure 1.
//!
//! - [`program`]: how a transport program is written — the events and
//!   externs it may use; [`protocols`]: NDP, Homa, Homa-Tr and the
//!   lossless program (`protocol = "none"`, a lossless wire).
//! - [`metadata`]: Listings 1-3.
//! - Fixed modules: [`reassembly`] (`receivedBitmap`, `rx_msg_id_table`),
//!   [`packetization`] (retransmission storage, Algorithms 1-3),
//!   [`timer`] (per-message timers, sequential scan), [`buffers`] (size
//!   classes with free lists).
//! - Externs for programs: [`state`] (RW, RAW, PRAW, ifElseRAW, dual-ported
//!   memory), [`scheduler`] (the 16-slot priority scheduler).
//! - [`nanotransport`]: the modules put together with their timing, the
//!   packet generator and the arbiter.
//! - [`config`]: every parameter, with its source.

pub mod buffers;
pub mod config;
pub mod ids;
pub mod metadata;
pub mod nanotransport;
pub mod packetization;
pub mod program;
pub mod protocols;
pub mod reassembly;
pub mod scheduler;
pub mod state;
pub mod timer;
mod words;

pub use config::{Protocol, StageLatencies, TransportConfig, TransportConfigError};
pub use nanotransport::{
    NanoTransport, Occupancy, TransportAction, TransportEvent, TransportStats, TxLink,
};
pub use packetization::{OutMessage, OutMessageRef, TxOutcome, WholeMessages};
pub use program::{Delivery, Refusal};
pub use reassembly::RxMessage;
