//! The exceptions: `NanopuError`, and under it `ConfigError` (a
//! configuration or argument that cannot work), `SimulationError` (the run
//! itself went wrong: a guest fault, a deadlock, a limit, a program that is
//! not a RISC-V ELF) and `ExperimentError`. Messages are the command's
//! `error:` lines (the error and its causes, joined by ": ").

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    _native,
    NanopuError,
    PyException,
    "An error of the simulator itself (the CLI's exit status 125)."
);
create_exception!(
    _native,
    ConfigError,
    NanopuError,
    "A configuration or argument that cannot work; the message names the key."
);
create_exception!(
    _native,
    SimulationError,
    NanopuError,
    "The run failed: a guest fault, a deadlock, a cycle or time limit, an unreadable program."
);
create_exception!(
    _native,
    ExperimentError,
    NanopuError,
    "An experiment failed or does not exist."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("NanopuError", py.get_type::<NanopuError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("SimulationError", py.get_type::<SimulationError>())?;
    m.add("ExperimentError", py.get_type::<ExperimentError>())?;
    // Where pickle finds them (a worker process or a Ray task raised one).
    for t in [
        py.get_type::<NanopuError>(),
        py.get_type::<ConfigError>(),
        py.get_type::<SimulationError>(),
        py.get_type::<ExperimentError>(),
    ] {
        t.setattr("__module__", "nanopu._native")?;
    }
    Ok(())
}

/// The message the command prints after `error: ` (`{:#}` of anyhow: the
/// error, then each cause).
pub fn message(e: impl Into<anyhow::Error>) -> String {
    format!("{:#}", e.into())
}

pub fn config_error(e: impl Into<anyhow::Error>) -> PyErr {
    ConfigError::new_err(message(e))
}

pub fn simulation_error(e: impl Into<anyhow::Error>) -> PyErr {
    SimulationError::new_err(message(e))
}

pub fn experiment_error(e: impl Into<anyhow::Error>) -> PyErr {
    ExperimentError::new_err(message(e))
}

/// A node's error: a bad node configuration is a `ConfigError`, the rest
/// (fault, deadlock, unreadable program) a `SimulationError`.
pub fn node_error(e: nanopu_node::NodeError) -> PyErr {
    match e {
        nanopu_node::NodeError::Config(_) => config_error(e),
        e => simulation_error(e),
    }
}
