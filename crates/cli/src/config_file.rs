//! The configuration file: TOML whose tables mirror the model parameter
//! structs. Unknown or ill-typed keys are errors that name the key.

use anyhow::{bail, Context, Result};
use nanopu_node::NodeConfig;
use nanopu_system::SystemConfig;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::Path;

/// Largest configuration file read: far beyond any real one, small enough
/// that a wrong path (a disk image, /dev/zero) is refused at once.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads a configuration file of at most [`MAX_CONFIG_BYTES`].
pub fn read_limited(path: &Path) -> Result<String> {
    let f = std::fs::File::open(path)
        .with_context(|| format!("cannot read config file {}", path.display()))?;
    let mut bytes = Vec::new();
    f.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read config file {}", path.display()))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        bail!(
            "config file {} is larger than the limit of {} bytes (1 MiB) for a configuration file",
            path.display(),
            MAX_CONFIG_BYTES
        );
    }
    String::from_utf8(bytes)
        .map_err(|e| anyhow::anyhow!("config file {}: not UTF-8 text ({e})", path.display()))
}

/// Parses TOML into `T`: a table may set any subset of its keys, the rest
/// keep `T::default()`'s values (nested tables too, so
/// `[node.core.l1d] size_bytes = 65536` keeps the L1's other defaults). A
/// table whose `kind` differs from the default's is taken whole (a tagged
/// choice such as the topology). Errors name the key and its line.
pub fn parse_partial<T: DeserializeOwned + Serialize + Default>(text: &str) -> Result<T> {
    let user: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let message = e.message().trim().replace('\n', "; ");
        anyhow::anyhow!("{message}{}", location(text, e.span()))
    })?;
    let defaults = toml::Table::try_from(T::default()).context("the defaults serialize")?;
    let merged = merge(defaults, user);
    serde_path_to_error::deserialize(toml::Value::Table(merged)).map_err(|e| {
        let path = e.path().to_string();
        let message = e.inner().message().trim().to_string();
        anyhow::anyhow!("{path}: {message}{}", line_of_key(text, &path))
    })
}

/// `user` over `defaults`, table by table.
fn merge(mut defaults: toml::Table, user: toml::Table) -> toml::Table {
    for (k, v) in user {
        let merged = match (defaults.remove(&k), v) {
            (Some(toml::Value::Table(d)), toml::Value::Table(u))
                if d.get("kind")
                    .is_none_or(|kind| u.get("kind").is_none_or(|uk| uk == kind)) =>
            {
                toml::Value::Table(merge(d, u))
            }
            (_, u) => u,
        };
        defaults.insert(k, merged);
    }
    defaults
}

/// " (line N)" of the line that sets the last key of `path`, if one does.
fn line_of_key(text: &str, path: &str) -> String {
    let key = path.rsplit('.').next().unwrap_or(path);
    let key = key.split('[').next().unwrap_or(key);
    if key.is_empty() || key == "?" {
        return String::new();
    }
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
                || (l.starts_with('[') && l.trim_end_matches(']').ends_with(key))
        })
        .map_or(String::new(), |i| format!(" (line {})", i + 1))
}

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
        let text = read_limited(path)?;
        Self::parse(&text).with_context(|| format!("config file {}", path.display()))
    }

    pub fn parse(text: &str) -> Result<SimConfig> {
        let cfg: SimConfig = parse_partial(text)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks every part; the error names the key.
    pub fn validate(&self) -> Result<()> {
        self.node
            .validate()
            .map_err(|e| anyhow::anyhow!("node.{e}"))?;
        self.system.validate()?;
        Ok(())
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

pub fn location(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(r) => {
            let line = text[..r.start.min(text.len())].matches('\n').count() + 1;
            let snippet = text[r.start.min(text.len())..r.end.min(text.len())].trim();
            if snippet.is_empty() || snippet.contains('\n') {
                format!(" (line {line})")
            } else {
                format!(" (line {line}: `{snippet}`)")
            }
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
    fn partial_nested_tables_keep_their_own_defaults() {
        let c = SimConfig::parse("[node.core.l1d]\nsize_bytes = 65536\n").unwrap();
        let d = SimConfig::default();
        assert_eq!(c.node.core.l1d.size_bytes, 65536);
        assert_eq!(c.node.core.l1d.ways, d.node.core.l1d.ways);
        let c = SimConfig::parse("[node.l2]\nways = 16\n").unwrap();
        assert_eq!(c.node.l2.size_bytes, d.node.l2.size_bytes);
        assert_eq!(c.node.l2.ways, 16);
    }

    #[test]
    fn nic_settings_are_checked_by_config_too() {
        let e = SimConfig::parse("[system.nic]\nlink_gbps = 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("system.nic.link_gbps = 0"), "{e}");
        let e = SimConfig::parse("[node.core]\nmul_cycles = \"x\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("node.core.mul_cycles") && e.contains("line 2"),
            "{e}"
        );
    }

    #[test]
    fn invalid_value_is_named() {
        let e = SimConfig::parse("[node]\ncores = 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("cores"), "{e}");
    }
}
