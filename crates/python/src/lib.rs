//! `nanopu._native`: the Python package's native module. Each function is a
//! thin layer over the library the `nanopu` command uses (`nanopu_system`,
//! `nanopu_node`, `nanopu_experiments`): it takes the effective configuration
//! as TOML, runs with the GIL released, and returns plain Python values
//! (numbers, strings, lists, JSON text) that `python/nanopu` turns into
//! results and DataFrames. Errors become the exceptions of [`errors`], with
//! the messages the command prints after `error:`.

mod config;
mod errors;
mod experiment;
mod net;
mod progress;
mod run;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_function(wrap_pyfunction!(config::config_parse, m)?)?;
    m.add_function(wrap_pyfunction!(config::config_load, m)?)?;
    m.add_function(wrap_pyfunction!(config::config_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(config::config_to_json, m)?)?;
    m.add_function(wrap_pyfunction!(config::app_spec, m)?)?;
    m.add_function(wrap_pyfunction!(run::run, m)?)?;
    m.add_function(wrap_pyfunction!(run::load, m)?)?;
    m.add_function(wrap_pyfunction!(net::net, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::experiments, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::experiment, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::write_experiments, m)?)?;
    m.add_function(wrap_pyfunction!(experiment::sdk_build_dir, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
