//! Which configuration settings an experiment uses. `--config` (and the
//! Python package's `config=`) may change those; a setting an experiment
//! does not use is refused, named, rather than silently ignored.

use crate::{Experiment, ExperimentError, Result};
use nanopu_system::Config;

/// Configuration keys (tables or key paths) an experiment sets itself,
/// whatever the configuration says, and why.
#[derive(Clone, Copy, Debug)]
pub struct Fixed {
    pub keys: &'static [&'static str],
    pub why: &'static str,
}

impl Fixed {
    /// An experiment that uses every setting it is given (but [`NEVER_USED`]).
    pub const NONE: Fixed = Fixed { keys: &[], why: "" };
}

/// The application experiments (`mica`, `setalg`, Table 1's part 2): each
/// design of the comparison sets its own cores and NIC.
pub const DESIGN_CORES_AND_NIC: Fixed = Fixed {
    keys: &["node.cores", "nic.kind"],
    why: "each design of the comparison sets its own number of cores and its NIC (one core for \
          Table 1's rows)",
};

/// The node experiments whose points each name the NIC they run on (the
/// nanoPU or the traditional NIC, as the figure compares them).
pub const NIC_PER_POINT: Fixed = Fixed {
    keys: &["nic.kind"],
    why: "each point runs on the NIC the figure compares (the nanoPU NIC or the traditional one)",
};

/// What no experiment uses: each makes the loads and hosts of its points.
pub const NEVER_USED: Fixed = Fixed {
    keys: &["load", "workload", "programs", "clients"],
    why: "experiments make the loads and hosts of their points themselves ([load] is \
          `nanopu run --load`'s; [workload], [[programs]] and [[clients]] are `nanopu net`'s)",
};

/// The value at `key` (`network.link.gbps`) of `v`, if any.
fn at<'a>(v: &'a toml::Value, key: &str) -> Option<&'a toml::Value> {
    key.split('.').try_fold(v, |v, k| v.get(k))
}

/// Adds to `out` the key paths under `path` where `a` and `b` differ.
fn diff(path: &str, a: Option<&toml::Value>, b: Option<&toml::Value>, out: &mut Vec<String>) {
    match (a, b) {
        (Some(toml::Value::Table(x)), Some(toml::Value::Table(y))) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                diff(&format!("{path}.{k}"), x.get(k), y.get(k), out);
            }
        }
        // Seeds: an experiment's seed is `--seed` (`seed=` in Python),
        // which every point's seeds come from.
        _ if path.ends_with("seed") => {}
        (a, b) if a != b => out.push(path.to_string()),
        _ => {}
    }
}

/// Settings of `cfg` under `keys` that differ from the defaults.
fn changed(cfg: &Config, keys: &[&str]) -> Vec<String> {
    let (Ok(user), Ok(default)) = (
        toml::Value::try_from(cfg),
        toml::Value::try_from(Config::default()),
    ) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for key in keys {
        diff(key, at(&user, key), at(&default, key), &mut out);
    }
    out
}

impl Experiment {
    /// Settings of `cfg` changed from the defaults that this experiment
    /// does not use, each with why.
    pub fn unused_settings(&self, cfg: &Config) -> Vec<(String, &'static str)> {
        [self.fixed, NEVER_USED]
            .iter()
            .flat_map(|f| changed(cfg, f.keys).into_iter().map(|k| (k, f.why)))
            .collect()
    }

    /// Refuses a configuration that changes a setting this experiment does
    /// not use, naming it.
    pub fn check_config(&self, cfg: &Config) -> Result<()> {
        let unused = self.unused_settings(cfg);
        let Some(&(_, why)) = unused.first() else {
            return Ok(());
        };
        let keys: Vec<&str> = unused
            .iter()
            .filter(|(_, w)| *w == why)
            .map(|(k, _)| k.as_str())
            .collect();
        Err(ExperimentError::UnusedSettings {
            id: self.id,
            keys: keys.join(", "),
            why,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::all;
    use nanopu_system::Config;

    fn experiment(id: &str) -> crate::Experiment {
        all().into_iter().find(|e| e.id == id).expect("exists")
    }

    #[test]
    fn nb_mica_refuses_the_server_it_does_not_use() {
        let e = experiment("nb-mica");
        assert!(e.check_config(&Config::default()).is_ok());
        for (text, key) in [
            ("[node]\ncores = 8\n", "node.cores"),
            ("[network.link]\ngbps = 100\n", "network.link.gbps"),
            ("[node.l2]\nsize_bytes = 1048576\n", "node.l2.size_bytes"),
            ("[nic]\nkind = \"icenic\"\n", "nic.kind"),
        ] {
            let cfg = Config::parse(text).unwrap();
            let err = e.check_config(&cfg).unwrap_err().to_string();
            assert!(
                err.contains(key) && err.contains("nb-mica"),
                "{text}: {err}"
            );
        }
        // Seeds come from --seed; the nanoPU line uses the NIC's stages.
        let cfg = Config::parse("[load]\nseed = 5\n[nic]\nmac_serial_rx_ps = 1000\n").unwrap();
        assert!(e.check_config(&cfg).is_ok());
    }

    #[test]
    fn application_experiments_refuse_cores_and_nic_they_set_per_design() {
        for id in ["mica", "setalg", "othello", "hdsearch", "nbody"] {
            let cfg = Config::parse("[node]\ncores = 8\n").unwrap();
            let err = experiment(id).check_config(&cfg).unwrap_err().to_string();
            assert!(err.contains("node.cores"), "{id}: {err}");
        }
    }

    #[test]
    fn no_experiment_uses_the_tables_of_other_commands() {
        let cfg = Config::parse("[load]\ncount = 5\n").unwrap();
        let err = experiment("w2w-8B")
            .check_config(&cfg)
            .unwrap_err()
            .to_string();
        assert!(err.contains("load.count"), "{err}");
        let cfg = Config::parse("[node]\ncores = 2\n").unwrap();
        assert!(experiment("w2w-8B").check_config(&cfg).is_ok());
        let cfg = Config::parse("[nic]\nkind = \"icenic\"\n").unwrap();
        for id in ["w2w-8B", "hts-vs-tis", "prototype-flow"] {
            let err = experiment(id).check_config(&cfg).unwrap_err().to_string();
            assert!(err.contains("nic.kind"), "{id}: {err}");
        }
    }
}
