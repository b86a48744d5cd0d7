//! What can go wrong while writing results.

use std::io;
use std::path::PathBuf;

/// An error of [`ExperimentResult::write`](crate::ExperimentResult::write) or
/// [`write_report`](crate::write_report). Each variant names the file or the
/// name at fault.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Creating the directory or writing (or encoding) the file failed.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file or directory that could not be written.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// plotters could not draw the figure.
    #[error("cannot draw {}: {message}", path.display())]
    Plot {
        /// The SVG file being drawn.
        path: PathBuf,
        /// plotters' message.
        message: String,
    },
    /// An experiment id or figure name that cannot be used as a file name.
    #[error("{what} name {name:?} cannot be used as a file name: {reason}")]
    InvalidName {
        /// `"experiment"` or `"figure"`.
        what: &'static str,
        /// The offending name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two figures would write the same files, or two targets share a
    /// `summary.json` key.
    #[error("{what} {name:?} appears twice (in {first} and in {second})")]
    Duplicate {
        /// `"figure"`, `"experiment"` or `"summary.json key"`.
        what: &'static str,
        /// The repeated name.
        name: String,
        /// The experiment id of the first occurrence.
        first: String,
        /// The experiment id of the second occurrence.
        second: String,
    },
}

impl ReportError {
    pub(crate) fn write(path: impl Into<PathBuf>, source: impl Into<io::Error>) -> Self {
        ReportError::Write {
            path: path.into(),
            source: source.into(),
        }
    }
}
