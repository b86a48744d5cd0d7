//! Between slices of a run (with the GIL released), at most every
//! [`INTERVAL`] of host time: take the GIL, let Python run its signal
//! handlers (Ctrl-C raises `KeyboardInterrupt`, which ends the run), call the
//! progress callback and copy new guest output to Python's `sys.stdout`.

use pyo3::prelude::*;
use std::time::{Duration, Instant};

/// How often a run looks at signals and reports progress.
pub const INTERVAL: Duration = Duration::from_millis(100);

pub struct Ticker {
    callback: Option<PyObject>,
    echo: bool,
    echoed: usize,
    last: Instant,
}

impl Ticker {
    pub fn new(callback: Option<PyObject>, echo: bool) -> Ticker {
        Ticker {
            callback,
            echo,
            echoed: 0,
            last: Instant::now(),
        }
    }

    /// Called after each slice: `done` of `total` (units of the caller's
    /// choosing; `total` 0 if unknown), `output` what the guest printed so far. Errors (a
    /// `KeyboardInterrupt`, an exception in the callback) end the run.
    pub fn tick(&mut self, done: u64, total: u64, output: &[u8]) -> PyResult<()> {
        if self.last.elapsed() < INTERVAL {
            return Ok(());
        }
        self.last = Instant::now();
        self.report(done, total, output)
    }

    /// Reports now (the end of a run: the bar shows where it stopped).
    pub fn finish(&mut self, done: u64, total: u64, output: &[u8]) -> PyResult<()> {
        self.report(done, total, output)
    }

    fn report(&mut self, done: u64, total: u64, output: &[u8]) -> PyResult<()> {
        Python::with_gil(|py| {
            py.check_signals()?;
            if self.echo && output.len() > self.echoed {
                let text = String::from_utf8_lossy(&output[self.echoed..]).into_owned();
                self.echoed = output.len();
                let stdout = py.import("sys")?.getattr("stdout")?;
                stdout.call_method1("write", (text,))?;
                stdout.call_method0("flush")?;
            }
            if let Some(cb) = &self.callback {
                cb.call1(py, (done, total))?;
            }
            Ok(())
        })
    }
}

/// Lets a value that is not `Send` (a cluster: its NIC designs are trait
/// objects without a `Send` bound) into `Python::allow_threads`, whose
/// `Send` bound only keeps GIL-bound references out.
pub struct SameThread<T>(pub T);

// SAFETY: `allow_threads` runs its closure on the calling thread, so the
// value never changes threads; it holds no Python references.
unsafe impl<T> Send for SameThread<T> {}

impl<T> SameThread<T> {
    /// The value (a method, so that a closure captures the wrapper whole,
    /// not its field).
    pub fn get(&mut self) -> &mut T {
        &mut self.0
    }
}
