//! Writing results to standard output: a write error (a full disk,
//! `> /dev/full`) is an error of the run, not a panic or a silent loss.

use anyhow::{Context, Result};
use std::io::{ErrorKind, Write};

/// Writes `text` to standard output and flushes it. A closed pipe (`| head`)
/// is not an error: the reader wanted no more.
pub fn write_stdout(text: &str) -> Result<()> {
    let mut o = std::io::stdout().lock();
    match o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => {
            Err(e).context("cannot write to standard output")
        }
        _ => Ok(()),
    }
}
