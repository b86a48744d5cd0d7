//! What can go wrong running an experiment.

use std::path::PathBuf;

/// An experiment's result, or why there is none.
pub type Result<T, E = ExperimentError> = std::result::Result<T, E>;

/// Why an experiment (or one of its points) failed.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error("{} is missing: build the guest programs first (`make -C sdk`)", .0.display())]
    MissingProgram(PathBuf),
    #[error("unknown experiment {id:?}; known: {known}")]
    Unknown { id: String, known: String },
    /// The cause is in the message, not a `source`: printed once in a chain.
    #[error("cannot create {}: {cause}", path.display())]
    CreateDir {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error(transparent)]
    Node(#[from] nanopu_node::NodeError),
    #[error(transparent)]
    System(#[from] nanopu_system::SystemError),
    #[error(transparent)]
    Config(#[from] nanopu_system::ConfigError),
    #[error(transparent)]
    Report(#[from] nanopu_report::ReportError),
    /// A transport could not be built from its parameters.
    #[error(transparent)]
    Transport(#[from] nanopu_transport::TransportConfigError),
    /// The configuration changes settings the experiment does not use.
    #[error("experiment {id} does not use {keys} of the configuration: {why}; leave them out")]
    UnusedSettings {
        id: &'static str,
        keys: String,
        why: &'static str,
    },
    /// The host would not start a thread for experiment `id`.
    #[error("cannot start a thread for experiment {id}: {cause}")]
    Thread {
        id: &'static str,
        cause: std::io::Error,
    },
    /// [`crate::Runner::stop`] was raised before the point started.
    #[error("interrupted")]
    Interrupted,
    /// A run went wrong in a way the experiment checks: a message lost,
    /// wrong replies, a measurement that cannot be right.
    #[error("{0}")]
    Failed(String),
    /// Some experiments of a run failed; the others' results were written.
    #[error("{} of {total} experiments failed (the others' results are written): {}", .failed.len(), .failed.join("; "))]
    SomeFailed { failed: Vec<String>, total: usize },
    /// `what` was running when `cause` happened (the cause is in the
    /// message, not a `source`: printed once in a chain).
    #[error("{what}: {cause}")]
    Run {
        what: String,
        cause: Box<ExperimentError>,
    },
}

impl ExperimentError {
    /// This error, saying what was running when it happened.
    pub fn during(self, what: impl Into<String>) -> ExperimentError {
        ExperimentError::Run {
            what: what.into(),
            cause: Box::new(self),
        }
    }
}

/// An [`ExperimentError::Failed`] with a formatted message.
#[macro_export]
#[doc(hidden)]
macro_rules! fail {
    ($($arg:tt)*) => {
        $crate::ExperimentError::Failed(format!($($arg)*))
    };
}

/// Returns [`ExperimentError::Failed`] unless the condition holds.
#[macro_export]
#[doc(hidden)]
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err($crate::fail!($($arg)*));
        }
    };
}
