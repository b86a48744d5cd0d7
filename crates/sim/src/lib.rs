//! The simulation kernel: simulated time ([`SimTime`], [`SimDuration`]) and a
//! deterministic event queue ([`EventQueue`]). No dependencies, no models.

mod queue;
mod time;

pub use queue::{EventQueue, Reserved};
pub use time::{SimDuration, SimTime, TimeRangeError, MAX_NS};
