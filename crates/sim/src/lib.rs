//! The simulation kernel: simulated time ([`SimTime`], [`SimDuration`]), a
//! deterministic event queue ([`EventQueue`]) and the one vocabulary a
//! model answers in ([`Io`]). No dependencies, no models.

mod io;
mod queue;
mod time;

pub use io::{Drain, Io};
pub use queue::{EventQueue, Reserved};
pub use time::{SimDuration, SimTime, TimeRangeError, MAX_NS};
