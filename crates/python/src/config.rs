//! Configurations: the one schema of `nanopu_system::Config`, read from TOML
//! text, a file or a JSON object (a Python dict), always through
//! `Config::parse`, so every key is checked as the command checks it. The
//! Python side keeps the effective configuration as TOML.

use crate::errors::config_error;
use nanopu_system::config::MAX_CONFIG_BYTES;
use nanopu_system::{Config, ConfigError};
use pyo3::prelude::*;
use std::path::{Path, PathBuf};

/// Parses TOML text; relative program paths are taken from `base_dir`.
pub fn parse(text: &str, base_dir: Option<&Path>) -> Result<Config, ConfigError> {
    let mut cfg = Config::parse(text)?;
    if let Some(dir) = base_dir {
        for p in &mut cfg.programs {
            if p.program.is_relative() {
                p.program = dir.join(&p.program);
            }
        }
    }
    Ok(cfg)
}

/// The effective configuration of TOML `text` (any subset of keys), as TOML.
#[pyfunction]
#[pyo3(signature = (text, base_dir=None))]
pub fn config_parse(text: &str, base_dir: Option<PathBuf>) -> PyResult<String> {
    // The limit of a configuration file holds for text given directly.
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(config_error(anyhow::anyhow!(
            "configuration text of {} bytes is larger than the limit of {MAX_CONFIG_BYTES} bytes \
             (1 MiB) for a configuration",
            text.len()
        )));
    }
    parse(text, base_dir.as_deref())
        .map(|c| c.to_toml())
        .map_err(config_error)
}

/// The effective configuration of a file, as TOML (what `nanopu config
/// --config FILE` prints; relative program paths from the file's directory).
#[pyfunction]
pub fn config_load(path: PathBuf) -> PyResult<String> {
    Config::load(&path)
        .map(|c| c.to_toml())
        .map_err(config_error)
}

/// The effective configuration of a JSON object (a dict), as TOML.
#[pyfunction]
#[pyo3(signature = (json, base_dir=None))]
pub fn config_from_json(json: &str, base_dir: Option<PathBuf>) -> PyResult<String> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| config_error(anyhow::anyhow!("{e}")))?;
    let table = toml::Table::try_from(value).map_err(|e| {
        config_error(anyhow::anyhow!(
            "not a configuration table (values must be tables, arrays, strings, numbers or booleans; None has no TOML form): {e}"
        ))
    })?;
    config_parse(&table.to_string(), base_dir)
}

/// The effective configuration (TOML) as JSON text.
#[pyfunction]
pub fn config_to_json(text: &str) -> PyResult<String> {
    let cfg = parse(text, None).map_err(config_error)?;
    serde_json::to_string(&cfg).map_err(|e| config_error(anyhow::anyhow!("{e}")))
}

/// An application spec (`mica:get_fraction=0.9`, as `--app`) as the JSON of
/// its `[load] app` table.
#[pyfunction]
pub fn app_spec(spec: &str) -> PyResult<String> {
    let app = nanopu_apps::AppConfig::from_spec(spec).map_err(config_error)?;
    serde_json::to_string(&app).map_err(|e| config_error(anyhow::anyhow!("{e}")))
}

/// Reads the effective configuration handed over by Python.
pub fn effective(text: &str) -> PyResult<Config> {
    parse(text, None).map_err(config_error)
}
