//! Applications as the load generator sees them.
//!
//! An application here is the client half of a guest program that serves
//! requests (MICA, set algebra, ...): it makes seeded requests and checks
//! every reply against a native Rust model of the application, the
//! *oracle*. The built-in load generator (`nanopu_system::client::Client`)
//! drives an [`App`] when its `[load]` table has an `app`:
//!
//! ```toml
//! [load]
//! count = 2000
//! mode = { open = { rate_mrps = 1.0 } }
//! app = { kind = "mica", get_fraction = 0.5 }
//! ```
//!
//! or `nanopu run PROGRAM.elf --load --app mica` (`--app mica:get_fraction=0.9`
//! sets parameters the same way, `key=value` separated by commas).
//!
//! # The contract between the harness and an application
//!
//! - **Tags.** The harness numbers requests (`tag`, 0, 1, 2, ...; unique for
//!   the client) and passes the number to [`App::next_request`]. The
//!   application must put it in the request so that the server echoes it
//!   and [`App::reply_tag`] finds it in the reply (by default, word 0 of
//!   request and reply: every application here starts its messages with
//!   it). A reply whose tag matches no outstanding request is counted as
//!   unexpected.
//! - **Checking.** Every reply of an outstanding request goes to
//!   [`App::check`] with the request as it was made. The answer is a
//!   [`Verdict`]: `Ok`, `Wrong(description)` (counted in the report's
//!   `wrong_replies`, the first description kept in `first_error`; the run
//!   fails), or `Retry { server, context }`: the client re-sends the same
//!   request (same tag, same payload) to that server and context, and the
//!   request's response time keeps running from its first send (for a
//!   client that must find a leader: "not leader, try server X").
//! - **Timeouts.** A request unanswered for `[load] timeout_ns` goes to
//!   [`App::on_timeout`]: return `Some((server, context))` to re-send it
//!   there, or `None` (the default) to count it as lost.
//! - **Servers.** A request names its server by index into the client's
//!   server list: 0 is the host the client serves (`[[clients]] server`, or
//!   the node of `nanopu run --load`), `i >= 1` is `[[clients]] servers[i - 1]`.
//!   [`AppContext::servers`] says how many there are.
//! - **Several clients.** In a cluster each client host builds its own
//!   application with [`AppConfig::build`]; [`AppContext::client`] and
//!   [`AppContext::clients`] let applications with state keep clients
//!   apart (MICA gives each client its own keys, so every client's oracle
//!   is exact).
//! - **Time and preambles.** The harness calls [`App::next_request_at`]
//!   (the send time in picoseconds; it defaults to `next_request`) and,
//!   when the client starts, sends the messages of [`App::preamble`]
//!   (default none), which expect no reply.
//! - **Cost.** The harness makes one virtual call per request made and per
//!   reply; nothing per instruction or per packet.
//!
//! # Adding an application
//!
//! Write a module with a parameter struct (serde, `#[serde(default,
//! deny_unknown_fields)]`, each field documented) and a type implementing
//! [`App`]; add a variant to [`AppConfig`] and arms to its `build`,
//! `validate`, `max_request_bytes` and `name`. The guest program goes in
//! `sdk/programs/NAME/` with a README of its message format.

pub mod chain;
pub mod classifier;
mod exact;
pub mod hdsearch;
pub mod int_proc;
pub mod lnic_hdsearch;
pub mod lnic_mica;
pub mod mica;
pub mod nbody;
pub mod nn;
pub mod othello;
pub mod raft;
pub mod rdma;
pub mod replicated_kv;
pub mod script;
pub mod setalg;

use serde::{Deserialize, Serialize};

/// The random number generator the harness hands to applications: seeded
/// from `[load] seed` (plus the client's host number in a cluster), so a
/// run repeats bit for bit.
pub type AppRng = rand_chacha::ChaCha8Rng;

/// One request, as an application makes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Which server: an index into the client's server list (0: the
    /// client's `server`; `i >= 1`: `servers[i - 1]`).
    pub server: usize,
    /// The destination context (layer-4 port) on that server.
    pub context: u16,
    /// Message length in bytes (the header's length field, at most the
    /// NIC's `max_message_bytes`); `payload` holds `len.div_ceil(8)` words,
    /// the bytes of the last word beyond `len` zero.
    pub len: u16,
    pub payload: Vec<u64>,
    /// The application's own note about this request, returned with it
    /// to [`App::check`] (e.g. what the oracle knew when it was made).
    pub note: u64,
}

impl Request {
    /// A request of `payload`, all of its words sent.
    pub fn words(server: usize, context: u16, payload: Vec<u64>, note: u64) -> Request {
        Request {
            server,
            context,
            len: (payload.len() * 8) as u16,
            payload,
            note,
        }
    }
}

/// What a reply means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The request is done and the reply is what the oracle expects.
    Ok,
    /// The request is done and the reply is wrong; the text says how
    /// (request, expected, got).
    Wrong(String),
    /// Not done: send the same request again to this server (an index into
    /// the client's server list) and context.
    Retry { server: usize, context: u16 },
}

/// Who is building an application (see the crate docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppContext {
    /// This client among the clients driving the same application, 0-based.
    pub client: usize,
    /// How many clients drive it (at least 1).
    pub clients: usize,
    /// How many servers this client may send to (at least 1).
    pub servers: usize,
}

impl AppContext {
    /// One client, one server (`nanopu run --load`).
    pub const SINGLE: AppContext = AppContext {
        client: 0,
        clients: 1,
        servers: 1,
    };
}

/// An application as the client sees it: a request generator and a reply
/// checker backed by the application's oracle. Implementations must be
/// deterministic given the `rng` they are handed.
pub trait App: Send {
    /// The application's name (`mica`, ...), for reports.
    fn name(&self) -> &'static str;

    /// The next request, numbered `tag` (the application puts the tag
    /// where [`App::reply_tag`] finds it in the reply). Called when the
    /// request is sent, so the oracle can note what is in flight.
    fn next_request(&mut self, tag: u64, rng: &mut AppRng) -> Request;

    /// [`App::next_request`] for applications that need the time: `now_ps`
    /// is the simulated time of the send, in picoseconds. The harness calls
    /// this one; the default ignores the time.
    fn next_request_at(&mut self, tag: u64, _now_ps: u64, rng: &mut AppRng) -> Request {
        self.next_request(tag, rng)
    }

    /// Messages sent once when the client starts (at `now_ps`), in order,
    /// before the first request, expecting no reply (e.g. a CONFIG
    /// message). Default: none.
    fn preamble(&mut self, _now_ps: u64, _rng: &mut AppRng) -> Vec<Request> {
        Vec::new()
    }

    /// The tag of a reply (`None`: the reply carries none and is counted
    /// as unexpected). Default: word 0.
    fn reply_tag(&self, reply: &[u64], _len: u16) -> Option<u64> {
        reply.first().copied()
    }

    /// Checks `reply` (`len` bytes) to `request` against the oracle, and
    /// updates the oracle with what the reply shows happened.
    fn check(&mut self, request: &Request, reply: &[u64], len: u16) -> Verdict;

    /// `request` got no reply in time (`attempts` sends so far): re-send it
    /// to `Some((server, context))`, or give it up as lost (`None`, the
    /// default).
    fn on_timeout(&mut self, _request: &Request, _attempts: u32) -> Option<(usize, u16)> {
        None
    }
}

/// An application and its parameters (`[load] app`, tagged by `kind`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum AppConfig {
    /// The MICA key-value store (`sdk/programs/mica*`).
    Mica(mica::MicaConfig),
    /// Set algebra on an inverted index (`sdk/programs/setalg*`).
    #[serde(rename = "setalg")]
    SetAlgebra(setalg::SetAlgConfig),
    /// One-sided RDMA operations served in software (`sdk/programs/rdma_server`).
    Rdma(rdma::RdmaConfig),
    /// Chain replication (`sdk/programs/chain_server`).
    Chain(chain::ChainConfig),
    /// Raft (`sdk/programs/raft`).
    Raft(raft::RaftConfig),
    /// A scripted message sequence for programs with their own conventions.
    Script(script::ScriptConfig),
    /// An Othello player (`sdk/programs/othello`).
    Othello(othello::OthelloConfig),
    /// NN inference (`sdk/programs/nn`, `trad_nn`).
    Nn(nn::NnConfig),
    /// INT processing (`sdk/programs/int_proc`).
    Int(int_proc::IntConfig),
    /// A 5-tuple packet classifier (`sdk/programs/classifier`).
    Classifier(classifier::ClassifierConfig),
    /// k-nearest-neighbour search (`sdk/programs/hdsearch`).
    #[serde(rename = "hdsearch")]
    HdSearch(hdsearch::HdSearchConfig),
    /// N-body forces (`sdk/programs/nbody`).
    Nbody(nbody::NbodyConfig),
    /// The prototype's own MICA server, driven as its load generator drove
    /// it (`lnic-multi-core-mica`, built by `scripts/build-lnic-tests.sh`).
    LnicMica(lnic_mica::LnicMicaConfig),
    /// The prototype's own HD search server (`lnic-euclidean-dist`).
    LnicHdsearch(lnic_hdsearch::LnicHdSearchConfig),
}

/// Parameters an application cannot work with; the message names the key.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AppError {
    #[error("app.{key} = {value}: {reason}")]
    Invalid {
        key: &'static str,
        value: String,
        reason: String,
    },
    /// `--app KIND:k=v,...` could not be read.
    #[error("--app {spec:?}: {reason}")]
    Spec { spec: String, reason: String },
}

pub(crate) fn invalid(key: &'static str, value: impl ToString, reason: &str) -> AppError {
    AppError::Invalid {
        key,
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

/// Checks that each `(key, value)` is a fraction in [0, 1]; the error names
/// the first that is not.
pub(crate) fn fractions<const N: usize>(fields: [(&'static str, f64); N]) -> Result<(), AppError> {
    match fields.into_iter().find(|(_, v)| !(0.0..=1.0).contains(v)) {
        Some((key, v)) => Err(invalid(key, v, "must be a fraction in [0, 1]")),
        None => Ok(()),
    }
}

impl AppConfig {
    /// The application's name.
    pub fn name(&self) -> &'static str {
        match self {
            AppConfig::Mica(_) => "mica",
            AppConfig::SetAlgebra(_) => "setalg",
            AppConfig::Rdma(_) => "rdma",
            AppConfig::Chain(_) => "chain",
            AppConfig::Raft(_) => "raft",
            AppConfig::Script(_) => "script",
            AppConfig::Othello(_) => "othello",
            AppConfig::Nn(_) => "nn",
            AppConfig::Int(_) => "int",
            AppConfig::Classifier(_) => "classifier",
            AppConfig::HdSearch(_) => "hdsearch",
            AppConfig::Nbody(_) => "nbody",
            AppConfig::LnicMica(_) => "lnic-mica",
            AppConfig::LnicHdsearch(_) => "lnic-hdsearch",
        }
    }

    /// Checks the parameters; the error names the key.
    pub fn validate(&self) -> Result<(), AppError> {
        match self {
            AppConfig::Mica(c) => c.validate(),
            AppConfig::SetAlgebra(c) => c.validate(),
            AppConfig::Rdma(c) => c.validate(),
            AppConfig::Chain(c) => c.validate(),
            AppConfig::Raft(c) => c.validate(),
            AppConfig::Script(c) => c.validate(),
            AppConfig::Othello(c) => c.validate(),
            AppConfig::Nn(c) => c.validate(),
            AppConfig::Int(c) => c.validate(),
            AppConfig::Classifier(c) => c.validate(),
            AppConfig::HdSearch(c) => c.validate(),
            AppConfig::Nbody(c) => c.validate(),
            AppConfig::LnicMica(c) => c.validate(),
            AppConfig::LnicHdsearch(c) => c.validate(),
        }
    }

    /// The longest request it makes, in bytes (for the link-rate and
    /// transport-window checks).
    pub fn max_request_bytes(&self) -> u16 {
        match self {
            AppConfig::Mica(c) => c.max_request_bytes(),
            AppConfig::SetAlgebra(c) => c.max_request_bytes(),
            AppConfig::Rdma(c) => c.max_request_bytes(),
            AppConfig::Chain(c) => c.max_request_bytes(),
            AppConfig::Raft(c) => c.max_request_bytes(),
            AppConfig::Script(c) => c.max_request_bytes(),
            AppConfig::Othello(c) => c.max_request_bytes(),
            AppConfig::Nn(c) => c.max_request_bytes(),
            AppConfig::Int(c) => c.max_request_bytes(),
            AppConfig::Classifier(c) => c.max_request_bytes(),
            AppConfig::HdSearch(c) => c.max_request_bytes(),
            AppConfig::Nbody(c) => c.max_request_bytes(),
            AppConfig::LnicMica(c) => c.max_request_bytes(),
            AppConfig::LnicHdsearch(c) => c.max_request_bytes(),
        }
    }

    /// The mean request length in bytes (for the highest rate the link
    /// carries).
    pub fn mean_request_bytes(&self) -> f64 {
        match self {
            AppConfig::Mica(c) => c.mean_request_bytes(),
            AppConfig::SetAlgebra(c) => c.max_request_bytes() as f64,
            AppConfig::Rdma(c) => c.mean_request_bytes(),
            AppConfig::Chain(c) => c.mean_request_bytes(),
            AppConfig::Raft(c) => c.mean_request_bytes(),
            AppConfig::Script(c) => c.request.len() as f64 * 8.0,
            AppConfig::Othello(c) => c.max_request_bytes() as f64,
            AppConfig::Nn(c) => c.max_request_bytes() as f64,
            AppConfig::Int(_) => 24.0 + 8.0 * 3.5,
            AppConfig::Classifier(c) => c.max_request_bytes() as f64,
            AppConfig::HdSearch(c) => c.max_request_bytes() as f64,
            AppConfig::Nbody(c) => c.max_request_bytes() as f64,
            AppConfig::LnicMica(c) => c.mean_request_bytes(),
            AppConfig::LnicHdsearch(c) => c.mean_request_bytes(),
        }
    }

    /// The client-side application for client `ctx.client`.
    pub fn build(&self, ctx: AppContext) -> Result<Box<dyn App>, AppError> {
        self.validate()?;
        Ok(match self {
            AppConfig::Mica(c) => Box::new(mica::MicaClient::new(c.clone(), ctx)),
            AppConfig::SetAlgebra(c) => Box::new(setalg::SetAlgClient::new(c.clone(), ctx)),
            AppConfig::Rdma(c) => Box::new(rdma::RdmaClient::new(c.clone(), ctx)),
            AppConfig::Chain(c) => Box::new(chain::ChainClient::new(c.clone(), ctx)),
            AppConfig::Raft(c) => Box::new(raft::RaftClient::new(c.clone(), ctx)),
            AppConfig::Script(c) => Box::new(script::ScriptClient::new(c.clone(), ctx)),
            AppConfig::Othello(c) => Box::new(othello::OthelloClient::new(c.clone(), ctx)),
            AppConfig::Nn(c) => Box::new(nn::NnClient::new(c.clone(), ctx)),
            AppConfig::Int(c) => Box::new(int_proc::IntClient::new(c.clone(), ctx)),
            AppConfig::Classifier(c) => Box::new(classifier::ClassifierClient::new(c.clone(), ctx)),
            AppConfig::HdSearch(c) => Box::new(hdsearch::HdSearchClient::new(c.clone(), ctx)),
            AppConfig::Nbody(c) => Box::new(nbody::NbodyClient::new(c.clone(), ctx)),
            AppConfig::LnicMica(c) => Box::new(lnic_mica::LnicMicaClient::new(c.clone(), ctx)),
            AppConfig::LnicHdsearch(c) => {
                Box::new(lnic_hdsearch::LnicHdSearchClient::new(c.clone(), ctx))
            }
        })
    }

    /// Reads `KIND` or `KIND:key=value,key=value` (values in TOML syntax:
    /// `mica:get_fraction=0.9,context=1`), the command line's `--app`.
    pub fn from_spec(spec: &str) -> Result<AppConfig, AppError> {
        let err = |reason: String| AppError::Spec {
            spec: spec.to_string(),
            reason,
        };
        let (kind, params) = spec.split_once(':').unwrap_or((spec, ""));
        let mut text = format!("kind = {:?}\n", kind.trim());
        for kv in split_top_level(params)
            .into_iter()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| err(format!("{kv:?} is not key=value")))?;
            text.push_str(&format!("{} = {}\n", k.trim(), v.trim()));
        }
        let cfg: AppConfig =
            toml::from_str(&text).map_err(|e| err(e.message().trim().replace('\n', "; ")))?;
        cfg.validate()?;
        Ok(cfg)
    }
}

/// `s` split at the commas outside brackets and quotes (`a=1,b=[1,2]`).
fn split_top_level(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut quoted, mut from) = (Vec::new(), 0i32, false, 0);
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '[' | '{' if !quoted => depth += 1,
            ']' | '}' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                out.push(&s[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[from..]);
    out
}

/// SplitMix64: the mixing function the guest programs and the oracles
/// share to derive keys and values from numbers (cheap in C, exact in Rust).
pub const fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_sets_parameters_and_names_bad_keys() {
        let c = AppConfig::from_spec("mica:get_fraction=0.9,pairs=100").unwrap();
        let AppConfig::Mica(m) = c else {
            panic!("not mica")
        };
        assert_eq!(m.get_fraction, 0.9);
        assert_eq!(m.pairs, 100);
        assert!(AppConfig::from_spec("mica:nope=1")
            .unwrap_err()
            .to_string()
            .contains("nope"));
        assert!(AppConfig::from_spec("nosuchapp").is_err());
        let c = AppConfig::from_spec(
            r#"script:first=[[0,"count","start"]],request=[1,"counter"],match_word=1"#,
        )
        .unwrap();
        let AppConfig::Script(s) = c else {
            panic!("not a script")
        };
        assert_eq!(s.first.len(), 1);
        assert_eq!(s.first[0].len(), 3);
        assert_eq!(s.match_word, Some(1));
        assert!(AppConfig::from_spec("mica:get_fraction=2")
            .unwrap_err()
            .to_string()
            .contains("get_fraction"));
    }

    #[test]
    fn toml_table_round_trips() {
        let c = AppConfig::from_spec("mica").unwrap();
        let text = toml::to_string(&c).unwrap();
        assert!(text.contains("kind = \"mica\""), "{text}");
        let back: AppConfig = toml::from_str(&text).unwrap();
        assert_eq!(back, c);
    }
}
