//! The configuration file: the one schema of `nanopu_system::Config`
//! (`[node]`, `[nic]`, `[network]`, `[load]`, `[workload]`, `[[programs]]`,
//! `[[clients]]`). Unknown or ill-typed keys are errors that name the key.

use anyhow::Result;
use nanopu_system::Config;
use std::path::Path;

/// The file's configuration, or the defaults when no file is given.
pub fn load_or_default(path: Option<&Path>) -> Result<Config> {
    match path {
        Some(p) => Ok(Config::load(p)?),
        None => Ok(Config::default()),
    }
}
