//! The one configuration schema: what `nanopu run --config`, `nanopu net`
//! and the experiments read, and what `nanopu config` prints. Each table is
//! the parameter struct of the crate that owns the model, so a key's doc
//! comment (and the source of its default) sits beside the code it sets.
//!
//! ```toml
//! [node]          # cores, caches, memory, the register-file interface (nanopu-node)
//! [nic]           # kind = "nanopu" | "icenic", MTU, stage latencies, [nic.transport]
//! [network]       # topology, [network.link] (the one link rate), switches, faults
//! [load]          # the load generator of `nanopu run --load` (options override)
//! [workload]      # what the built-in traffic hosts of `nanopu net` send
//! [[programs]]    # hosts that are nodes, the program each runs (and its NIC)
//! [[clients]]     # hosts that are load generators, and their server
//! ```

use crate::client::LoadConfig;
use crate::host_set::parse_hosts;
use crate::nics::NicKind;
pub use crate::node_table::NodeTable;
use crate::workload::Workload;
use nanopu_network::NetworkConfig;
use nanopu_nics::nanopu::NicConfig;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Largest configuration file read, bytes (1 MiB): far beyond any real
/// one, small enough that a wrong path is refused at once.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Everything a run can be configured with; any subset of keys may be set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The nodes: cores, memory hierarchy, timing, and the parameters of
    /// the devices NIC designs attach to them (`[node.icenic]`).
    pub node: NodeTable,
    /// Every node's NIC (and the built-in hosts' transport).
    pub nic: NicConfig,
    /// Links and switches. `nanopu run --load` puts the node and its load
    /// generator on one cable of `[network.link] gbps` (the topology is
    /// ignored there).
    pub network: NetworkConfig,
    /// The load generator of `nanopu run --load`; its command-line options
    /// override these.
    pub load: LoadConfig,
    /// What the built-in traffic hosts of `nanopu net` send.
    pub workload: Workload,
    /// Hosts that are nodes, and the program each runs.
    pub programs: Vec<HostProgram>,
    /// Hosts that are load generators.
    pub clients: Vec<ClientSpec>,
    /// Host threads simulating a network of built-in hosts: set, the
    /// network runs partitioned (docs/parallel-network.md), with the same
    /// results for any number; unset, in the single event loop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// With `threads`: the most partitions the leaves of a network with
    /// several switches are grouped into (default 4), each with its hosts,
    /// and likewise its spines (and a single switch's hosts); 1 runs the
    /// single event loop
    /// (docs/parallel-network.md). More let more threads work at once;
    /// fewer cost less per event. Events at the same femtosecond are
    /// ordered by partition, so results may depend on this, never on
    /// `threads`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitions: Option<usize>,
}

/// Why a configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("config file {path} is larger than the limit of {MAX_CONFIG_BYTES} bytes (1 MiB) for a configuration file")]
    TooLarge { path: String },
    #[error("config file {path} is a FIFO or a socket, not a file: reading it could wait forever for a writer")]
    NotAFile { path: String },
    /// A key is unknown, ill-typed or missing; the message names it and its line.
    #[error("{0}")]
    Syntax(String),
    /// A value cannot work; the message names the key.
    #[error("{0}")]
    Invalid(String),
}

impl Config {
    /// Reads a configuration file (relative program paths are taken from
    /// the file's directory); missing keys keep their defaults.
    pub fn load(path: &std::path::Path) -> Result<Config, ConfigError> {
        let name = path.display().to_string();
        let text = read_limited(path)?;
        let mut cfg = Self::parse(&text).map_err(|e| match e {
            ConfigError::Syntax(m) => ConfigError::Syntax(format!("{name}: {m}")),
            ConfigError::Invalid(m) => ConfigError::Invalid(format!("{name}: {m}")),
            e => e,
        })?;
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        for p in &mut cfg.programs {
            if p.program.is_relative() {
                p.program = dir.join(&p.program);
            }
        }
        Ok(cfg)
    }

    /// Parses and validates a configuration: a table may set any subset of
    /// its keys, nested tables too (`[node.core.l1d] size_bytes = 65536`
    /// keeps the L1's other defaults); errors name the key and its line.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let user: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let message = e.message().trim().replace('\n', "; ");
            ConfigError::Syntax(format!("{message}{}", location(text, e.span())))
        })?;
        if user.contains_key("system") {
            return Err(ConfigError::Syntax(
                "the [system] table is gone: [system.nic] is now [nic] (and `nic_kind` its \
                 `kind`), `link_propagation_ps` is [load] `link_propagation_ps`, the link \
                 rate is [network.link] `gbps`"
                    .into(),
            ));
        }
        let cfg: Config = parse_partial(user, text)?;
        cfg.validate().map_err(|e| match e {
            // Messages of invalid values start with the key's path.
            ConfigError::Invalid(m) => {
                let path = m.split([' ', ':']).next().unwrap_or_default();
                ConfigError::Invalid(format!("{m}{}", line_of_key(text, path)))
            }
            e => e,
        })?;
        Ok(cfg)
    }

    /// Checks every table; the error names the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid =
            |table: &str, e: &dyn std::fmt::Display| ConfigError::Invalid(format!("{table}.{e}"));
        self.node.validate().map_err(|e| invalid("node", &e))?;
        self.node
            .icenic
            .validate()
            .map_err(|e| invalid("node", &format_args!("icenic.{e}")))?;
        self.nic.validate().map_err(|e| invalid("nic", &e))?;
        self.network
            .validate()
            .map_err(|e| invalid("network", &e))?;
        if self.partitions == Some(0) {
            return Err(ConfigError::Invalid(
                "partitions = 0: a network is at least one partition".into(),
            ));
        }
        // Who is what, before any program is read.
        let hosts = self.network.topology.hosts();
        let mut role: Vec<Option<&str>> = vec![None; hosts];
        for (i, p) in self.programs.iter().enumerate() {
            let set = parse_hosts(&p.hosts, hosts)
                .map_err(|e| ConfigError::Invalid(format!("programs[{i}].{e}")))?;
            for h in set {
                if role[h].replace("program").is_some() {
                    return Err(ConfigError::Invalid(format!(
                        "programs[{i}].hosts = {:?}: host {h} already runs another program; \
                         host ranges must not overlap",
                        p.hosts
                    )));
                }
            }
        }
        for (i, c) in self.clients.iter().enumerate() {
            let set = parse_hosts(&c.hosts, hosts)
                .map_err(|e| ConfigError::Invalid(format!("clients[{i}].{e}")))?;
            for h in set {
                if let Some(r) = role[h].replace("client") {
                    return Err(ConfigError::Invalid(format!(
                        "clients[{i}].hosts = {:?}: host {h} is already a {r}",
                        c.hosts
                    )));
                }
            }
            if c.server >= hosts || role[c.server] != Some("program") {
                return Err(ConfigError::Invalid(format!(
                    "clients[{i}].server = {}: not a host that runs a program",
                    c.server
                )));
            }
            if let Some(s) = c
                .servers
                .iter()
                .find(|&&s| s >= hosts || role[s] != Some("program"))
            {
                return Err(ConfigError::Invalid(format!(
                    "clients[{i}].servers: {s} is not a host that runs a program"
                )));
            }
            c.load
                .validate(&self.nic, self.network.link.gbps)
                .map_err(|e| ConfigError::Invalid(e.at_key(&format!("clients[{i}].load"))))?;
        }
        Ok(())
    }

    /// Refuses what a run of one node (`nanopu run`, with or without
    /// `--load`) would ignore: the hosts of a network (`[[programs]]`,
    /// `[[clients]]`) and the built-in hosts' traffic (`[workload]`), which
    /// only `nanopu net` builds. `command` names the run in the message.
    pub fn check_one_node(&self, command: &str) -> Result<(), ConfigError> {
        let ignored = [
            (!self.programs.is_empty(), "[[programs]]"),
            (!self.clients.is_empty(), "[[clients]]"),
            (
                !(self.workload.messages.is_empty()
                    && self.workload.incast.is_empty()
                    && self.workload.random.is_empty()),
                "[workload]",
            ),
        ];
        match ignored.iter().find(|(set, _)| *set) {
            Some((_, table)) => Err(ConfigError::Invalid(format!(
                "{table}: describes hosts of a network, which {command} does not build (it runs \
                 one node, its program given on the command line); run the network with \
                 `nanopu net FILE`, or leave {table} out"
            ))),
            None => Ok(()),
        }
    }

    /// The effective configuration as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("configuration serializes")
    }
}

/// " (line N)" of the key at `key_path` (`load.count`) in the configuration
/// file at `path`, if the file sets it; empty otherwise.
pub fn line_in_file(path: &std::path::Path, key_path: &str) -> String {
    read_limited(path).map_or(String::new(), |text| line_of_key(&text, key_path))
}

/// Reads a file of at most [`MAX_CONFIG_BYTES`] (a wrong path, a disk
/// image or /dev/zero, is refused at once).
fn read_limited(path: &std::path::Path) -> Result<String, ConfigError> {
    use std::io::Read;
    let name = path.display().to_string();
    let read = |error| ConfigError::Read {
        path: name.clone(),
        error,
    };
    // Opening a FIFO waits for a writer, which may never come; devices
    // (`/dev/zero`) are read up to the limit.
    #[cfg(unix)]
    if let Ok(meta) = std::fs::metadata(path) {
        use std::os::unix::fs::FileTypeExt;
        if meta.file_type().is_fifo() || meta.file_type().is_socket() {
            return Err(ConfigError::NotAFile { path: name });
        }
    }
    let f = std::fs::File::open(path).map_err(read)?;
    let mut bytes = Vec::new();
    f.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(ConfigError::TooLarge { path: name });
    }
    String::from_utf8(bytes)
        .map_err(|e| ConfigError::Syntax(format!("{name}: not UTF-8 text ({e})")))
}

/// `user` over `T::default()`, table by table, then deserialized: a table
/// whose `kind` differs from the default's is taken whole (a tagged choice
/// such as the topology). Errors name the key path and its line.
fn parse_partial<T>(user: toml::Table, text: &str) -> Result<T, ConfigError>
where
    T: serde::de::DeserializeOwned + Serialize + Default,
{
    let defaults = toml::Table::try_from(T::default()).expect("the defaults serialize");
    let merged = merge(defaults, user);
    serde_path_to_error::deserialize(toml::Value::Table(merged)).map_err(|e| {
        let path = e.path().to_string();
        let message = e.inner().message().trim().to_string();
        // An unknown key's line is the key's own, if serde's path stops at
        // its table.
        let unknown = message
            .strip_prefix("unknown field `")
            .and_then(|m| m.split('`').next())
            .filter(|k| !path.ends_with(&format!(".{k}")))
            .map(|k| match path.as_str() {
                "" | "." => k.to_string(),
                p => format!("{p}.{k}"),
            });
        let line = unknown
            .map(|p| line_of_key(text, &p))
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| line_of_key(text, &path));
        ConfigError::Syntax(format!("{path}: {message}{line}"))
    })
}

/// Whether `d` and `u` are enum values of different variants: serde's
/// one-key tables (`mode = { closed = {...} }` vs `{ open = {...} }`), which
/// replace each other rather than merge.
fn other_variant(d: &toml::Table, u: &toml::Table) -> bool {
    d.len() == 1 && u.len() == 1 && d.keys().next() != u.keys().next()
}

/// `user` over `defaults`, table by table.
fn merge(mut defaults: toml::Table, user: toml::Table) -> toml::Table {
    for (k, v) in user {
        let merged = match (defaults.remove(&k), v) {
            (Some(toml::Value::Table(d)), toml::Value::Table(u))
                if d.get("kind")
                    .is_none_or(|kind| u.get("kind").is_none_or(|uk| uk == kind))
                    && !other_variant(&d, &u) =>
            {
                toml::Value::Table(merge(d, u))
            }
            (_, u) => u,
        };
        defaults.insert(k, merged);
    }
    defaults
}

/// " (line N)" of the line that sets the key at `path` (`clients[1].load.count`,
/// as serde names it), if the text sets it; for a table, the line of its
/// header.
fn line_of_key(text: &str, path: &str) -> String {
    key_span(text, path).map_or(String::new(), |start| {
        format!(
            " (line {})",
            text[..start.min(text.len())].matches('\n').count() + 1
        )
    })
}

/// A step of a key path: a key, or an index into an array.
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// `a.b[2].c` as steps; `None` if it is not such a path (serde's `?`).
fn steps(path: &str) -> Option<Vec<Step<'_>>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if key.is_empty() || key == "?" {
            return None;
        }
        out.push(Step::Key(key));
        while let Some(r) = rest.strip_prefix('[') {
            let (i, after) = r.split_once(']')?;
            out.push(Step::Index(i.parse().ok()?));
            rest = after;
        }
    }
    Some(out)
}

/// Where the key at `path` starts in `text` (byte offset), found by
/// walking the parsed document: each entry of an array of tables
/// (`[[clients]]`) is a table of its own, so a key is found in its own
/// entry, not at the first line that sets a key of the same name.
fn key_span(text: &str, path: &str) -> Option<usize> {
    use toml_edit::{Item, TableLike, Value};
    /// Where the walk is: something with keys, an array of either kind, a leaf.
    enum At<'a> {
        Table(&'a dyn TableLike),
        Tables(&'a toml_edit::ArrayOfTables),
        Array(&'a toml_edit::Array),
        Leaf,
    }
    fn of_item(item: &Item) -> At<'_> {
        match item {
            Item::ArrayOfTables(a) => At::Tables(a),
            Item::Value(v) => of_value(v),
            _ => item.as_table_like().map_or(At::Leaf, At::Table),
        }
    }
    fn of_value(v: &Value) -> At<'_> {
        match v {
            Value::InlineTable(t) => At::Table(t),
            Value::Array(a) => At::Array(a),
            _ => At::Leaf,
        }
    }
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let mut at = of_item(doc.as_item());
    let mut start = None;
    for step in steps(path)? {
        let span;
        (at, span) = match (step, at) {
            (Step::Key(k), At::Table(t)) => {
                let (key, item) = t.get_key_value(k)?;
                (of_item(item), key.span().or_else(|| item.span()))
            }
            (Step::Index(i), At::Tables(a)) => {
                let t = a.get(i)?;
                (At::Table(t), t.span())
            }
            (Step::Index(i), At::Array(a)) => {
                let v = a.get(i)?;
                (of_value(v), v.span())
            }
            _ => return None,
        };
        start = span.map(|r| r.start).or(start);
    }
    start
}

fn location(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(r) => {
            let start = r.start.min(text.len());
            let line = text[..start].matches('\n').count() + 1;
            let snippet = text[start..r.end.min(text.len())].trim();
            if snippet.is_empty() || snippet.contains('\n') {
                format!(" (line {line})")
            } else {
                format!(" (line {line}: `{snippet}`)")
            }
        }
        None => String::new(),
    }
}

/// Hosts that run a program.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostProgram {
    /// Which hosts: `"0"`, `"1-80"`, `"0,2,5-7"`.
    pub hosts: String,
    /// The program (a RISC-V ELF).
    pub program: PathBuf,
    /// Their NIC design, if not `nic.kind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic: Option<NicKind>,
    /// Arguments after the program's name (its `argv[1..]`). `{ip}` in an
    /// argument becomes the host's own IPv4 address (dotted) and `{host}`
    /// its number, so one entry can serve several hosts that need to know
    /// who they are (the replicated services of `sdk/programs/raft`,
    /// `chain_server`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
}

/// Hosts that are built-in load generators (`nanopu run --load`'s client).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientSpec {
    /// Which hosts: `"2"`, `"2-5"`.
    pub hosts: String,
    /// The host they send requests to (a node). Clients waiting for its
    /// boot message start when it boots.
    pub server: usize,
    /// What they send; each client's seed is `load.seed` plus its host
    /// number, so clients differ but runs repeat.
    #[serde(default)]
    pub load: LoadConfig,
    /// More hosts an application (`load.app`) may send to: its server
    /// index `i >= 1` is `servers[i - 1]` (index 0 is `server`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_round_trip() {
        let c = Config::default();
        assert_eq!(Config::parse(&c.to_toml()).unwrap(), c);
    }

    #[test]
    fn partial_file_keeps_defaults() {
        let c = Config::parse("[node]\ncores = 2\n[node.core]\nmul_cycles = 4\n").unwrap();
        assert_eq!(c.node.cores, 2);
        assert_eq!(c.node.core.mul_cycles, 4);
        assert_eq!(c.node.core.div_cycles, 64);
    }

    #[test]
    fn one_schema_for_every_table() {
        let c = Config::parse(
            "[nic]\nkind = \"icenic\"\n[network.link]\ngbps = 100\n[load]\ncount = 7\n\
             [[programs]]\nhosts = \"0\"\nprogram = \"x.elf\"\n",
        )
        .unwrap();
        assert_eq!(c.nic.kind, crate::NicKind::Icenic);
        assert_eq!(c.network.link.gbps, 100);
        assert_eq!(c.load.count, 7);
        assert_eq!(c.programs.len(), 1);
    }

    #[test]
    fn errors_name_the_key() {
        let e = Config::parse("[node]\ncoers = 2\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("coers"), "{e}");
        let e = Config::parse("[node]\ncores = \"four\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
        let e = Config::parse("[node]\ncores = 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("node.cores"), "{e}");
        let e = Config::parse("[network.link]\ngbps = 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("network.link.gbps"), "{e}");
    }

    #[test]
    fn rdma_parameters_are_read_and_checked() {
        let c =
            Config::parse("[nic]\nkind = \"rdma\"\n[nic.rdma]\nqp_cache_entries = 64\n").unwrap();
        assert_eq!(c.nic.rdma.qp_cache_entries, 64);
        assert_eq!(c.nic.rdma.max_rd_atomic, 16);
        let e = Config::parse("[nic.rdma]\nmax_rd_atomic = 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("nic.rdma.max_rd_atomic"), "{e}");
        let e = Config::parse("[nic.rdma]\npcie_gbps = -1.0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("nic.rdma.pcie_gbps"), "{e}");
        let e = Config::parse("[nic.rdma]\nqp_cache = 3\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("qp_cache"), "{e}");
    }

    #[test]
    fn partial_nested_tables_keep_their_own_defaults() {
        let c = Config::parse("[node.core.l1d]\nsize_bytes = 65536\n").unwrap();
        let d = Config::default();
        assert_eq!(c.node.core.l1d.size_bytes, 65536);
        assert_eq!(c.node.core.l1d.ways, d.node.core.l1d.ways);
        let e = Config::parse("[node.core]\nmul_cycles = \"x\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("node.core.mul_cycles") && e.contains("line 2"),
            "{e}"
        );
    }

    #[test]
    fn an_enum_table_of_another_variant_replaces_the_default() {
        let c = Config::parse("[load.mode.open]\nrate_mrps = 5.0\n").unwrap();
        assert_eq!(c.load.mode, crate::LoadMode::Open { rate_mrps: 5.0 });
        let c = Config::parse("[load.service.exponential]\nmean_ns = 300.0\n").unwrap();
        assert_eq!(
            c.load.service,
            crate::ServiceTime::Exponential { mean_ns: 300.0 }
        );
        // the same variant still merges key by key
        let c = Config::parse("[load.mode.closed]\nwindow = 4\n").unwrap();
        assert_eq!(c.load.mode, crate::LoadMode::Closed { window: 4 });
    }

    #[test]
    fn errors_in_arrays_of_tables_name_their_own_line() {
        // A key set in an earlier entry too: the line is the entry's own.
        let text = "[network.topology]\nhosts = 4\n\
                    [[programs]]\nhosts = \"0\"\nprogram = \"a.elf\"\n\
                    [[programs]]\nhosts = 1\nprogram = \"b.elf\"\n";
        let e = Config::parse(text).unwrap_err().to_string();
        assert!(
            e.contains("programs[1].hosts") && e.ends_with("(line 7)"),
            "{e}"
        );
        let text = "[network.topology]\nhosts = 4\n\
                    [[programs]]\nhosts = \"0\"\nprogram = \"a.elf\"\n\
                    [[clients]]\nhosts = \"1\"\nserver = 0\n[clients.load]\ncount = 5\n\
                    [[clients]]\nhosts = \"2\"\nserver = 0\n[clients.load]\ncount = 0\n";
        let e = Config::parse(text).unwrap_err().to_string();
        assert!(
            e.contains("clients[1].load.count = 0: must be at least 1") && e.ends_with("(line 15)"),
            "{e}"
        );
        // An unknown key in the second entry.
        let text = "[[programs]]\nhosts = \"0\"\nprogram = \"a.elf\"\n\
                    [[programs]]\nhosts = \"1\"\nprogram = \"b.elf\"\nprogam = 1\n";
        let e = Config::parse(text).unwrap_err().to_string();
        assert!(e.contains("prog") && e.ends_with("(line 7)"), "{e}");
        // Inline tables and arrays: the element's line.
        let text = "[[programs]]\nhosts = \"0\"\nprogram = \"a.elf\"\n\
                    [[clients]]\nhosts = \"1\"\nserver = 0\n\
                    load = { count = 3, mode = { closed = { window = 0 } } }\n";
        let e = Config::parse(text).unwrap_err().to_string();
        assert!(
            e.contains("clients[0].load.mode.closed.window = 0") && e.ends_with("(line 7)"),
            "{e}"
        );
    }

    #[test]
    fn load_generator_errors_name_the_key_not_an_option() {
        let text = "[network.topology]\nhosts = 3\n\
                    [[programs]]\nhosts = \"0\"\nprogram = \"a.elf\"\n\
                    [[clients]]\nhosts = \"1-2\"\nserver = 0\n\
                    [clients.load]\nmode = { open = { rate_mrps = -1.0 } }\n";
        let e = Config::parse(text).unwrap_err().to_string();
        assert!(
            e.starts_with("clients[0].load.mode.open.rate_mrps = -1: must be positive")
                && e.ends_with("(line 10)")
                && !e.contains("--"),
            "{e}"
        );
        // An application ignores the request's own settings: refused.
        let text = "[network.topology]\nhosts = 3\n\
                    [[programs]]\nhosts = \"0\"\nprogram = \"a.elf\"\n\
                    [[clients]]\nhosts = \"1\"\nserver = 0\n\
                    [clients.load]\napp = { kind = \"mica\" }\nmessage_bytes = 64\n";
        let e = Config::parse(text).unwrap_err().to_string();
        assert!(
            e.contains("clients[0].load.message_bytes = 64: not used with an application")
                && e.ends_with("(line 11)"),
            "{e}"
        );
    }

    #[test]
    fn invalid_values_name_their_line() {
        let e = Config::parse("[node]\n\ncores = 0\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("node.cores = 0") && e.ends_with("(line 3)"),
            "{e}"
        );
    }

    #[test]
    fn one_node_runs_refuse_the_hosts_of_a_network() {
        assert!(Config::default().check_one_node("run").is_ok());
        for (text, table) in [
            (
                "[[programs]]\nhosts = \"0\"\nprogram = \"a.elf\"\n",
                "[[programs]]",
            ),
            (
                "[[workload.messages]]\nfrom = 0\nto = 1\nlen = 64\nat_ns = 0\n",
                "[workload]",
            ),
        ] {
            let e = Config::parse(text)
                .unwrap()
                .check_one_node("`nanopu run`")
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(table) && e.contains("nanopu net"), "{e}");
        }
        // A seed alone is not traffic.
        let c = Config::parse("[workload]\nseed = 3\n").unwrap();
        assert!(c.check_one_node("run").is_ok());
    }

    #[test]
    fn the_old_system_table_gets_a_hint() {
        let e = Config::parse("[system]\nnic_kind = \"traditional\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("[nic]"), "{e}");
    }
}
