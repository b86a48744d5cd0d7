//! The configuration file: TOML whose tables mirror the model parameter
//! structs. Unknown or ill-typed keys are errors that name the key.

use anyhow::{Context, Result};
use nanopu_node::NodeConfig;
use nanopu_system::SystemConfig;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Everything a run can be configured with.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimConfig {
    /// The nanoPU node: cores, memory hierarchy, timing.
    pub node: NodeConfig,
    /// Around the node: the NIC and the link.
    pub system: SystemConfig,
}

impl SimConfig {
    /// Reads a configuration file; missing keys keep their defaults.
    pub fn load(path: &Path) -> Result<SimConfig> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config file {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("config file {}", path.display()))
    }

    pub fn parse(text: &str) -> Result<SimConfig> {
        let cfg: SimConfig = toml::from_str(text).map_err(|e| {
            anyhow::anyhow!(
                "{}",
                e.message().trim().to_string() + &location(text, e.span())
            )
        })?;
        cfg.node
            .validate()
            .map_err(|e| anyhow::anyhow!("node.{e}"))?;
        Ok(cfg)
    }

    /// The effective configuration as TOML (written beside every result).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("configuration serializes")
    }
}

/// The file's configuration, or the defaults when no file is given.
pub fn load_or_default(path: Option<&Path>) -> Result<SimConfig> {
    match path {
        Some(p) => SimConfig::load(p),
        None => Ok(SimConfig::default()),
    }
}

fn location(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(r) => {
            let line = text[..r.start.min(text.len())].matches('\n').count() + 1;
            let snippet = text[r.start.min(text.len())..r.end.min(text.len())].trim();
            format!(" (line {line}: `{snippet}`)")
        }
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_round_trip() {
        let c = SimConfig::default();
        assert_eq!(SimConfig::parse(&c.to_toml()).unwrap(), c);
    }

    #[test]
    fn partial_file_keeps_defaults() {
        let c = SimConfig::parse("[node]\ncores = 2\n[node.core]\nmul_cycles = 4\n").unwrap();
        assert_eq!(c.node.cores, 2);
        assert_eq!(c.node.core.mul_cycles, 4);
        assert_eq!(c.node.core.div_cycles, 64);
    }

    #[test]
    fn unknown_key_is_named() {
        let e = SimConfig::parse("[node]\ncoers = 2\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("coers"), "{e}");
        let e = SimConfig::parse("[node.core]\nload_to_use = 2\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("load_to_use"), "{e}");
    }

    #[test]
    fn ill_typed_key_is_named() {
        let e = SimConfig::parse("[node]\ncores = \"four\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("cores") || e.contains("line 2"), "{e}");
    }

    #[test]
    fn invalid_value_is_named() {
        let e = SimConfig::parse("[node]\ncores = 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("cores"), "{e}");
    }
}
