//! The built-in client: a load generator attached to a node's wire.
//!
//! It sends request messages to one context of the node, open-loop
//! (Poisson arrivals at a rate) or closed-loop (a window of outstanding
//! requests), checks that each reply echoes or transforms its request as
//! the program under test should, and records response times at the node's
//! wire: from the first bit of a request entering the node to the last bit
//! of its reply leaving it.

use crate::connections::{ConnId, Connections, ConnectionsConfig};
use hdrhistogram::Histogram;
use nanopu_apps::{App, AppConfig, AppContext, Request, Verdict};
use nanopu_nics::nanopu::frames;
use nanopu_nics::nanopu::Message;
use nanopu_nics::nanopu::NicConfig;
use nanopu_sim::{SimDuration, SimTime};
use nanopu_transport::metadata::GetRxMsgInfoReq;
use nanopu_transport::reassembly::Reassembly;
use nanopu_transport::{OutMessageRef, TransportConfig, WholeMessages};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How requests are paced.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadMode {
    /// Keep `window` requests outstanding.
    Closed { window: u32 },
    /// Poisson arrivals at `rate_mrps` million requests per second.
    Open { rate_mrps: f64 },
    /// The nanoPU prototype's FireSim load generator: it runs once per
    /// switch iteration of `tick_ns` (the link latency, 140 cycles in its
    /// runs) and sends at most one request then; after each send it draws
    /// an exponential gap of mean `1 / rate_mrps` and sends at the first
    /// iteration at or after it (l-nic/firesim aac81913,
    /// target-design/switch/switch.cc:685-700, 1049-1075, 1362). So gaps
    /// are whole iterations, at least one, and the actual rate is below
    /// `rate_mrps`.
    OpenTicked { rate_mrps: f64, tick_ns: f64 },
}

impl LoadMode {
    /// The nominal arrival rate of an open loop.
    pub fn open_rate_mrps(&self) -> Option<f64> {
        match *self {
            LoadMode::Closed { .. } => None,
            LoadMode::Open { rate_mrps } | LoadMode::OpenTicked { rate_mrps, .. } => {
                Some(rate_mrps)
            }
        }
    }
}

/// What a request's payload words are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// Word 0 is the request number, word i is `(number << 16) | i`.
    Counter,
    /// Word 0 is the request number, the rest random.
    Random,
    /// All zero (replies are then matched in order).
    Zeros,
    /// A service-time request (`sdk/programs/service`): `[number, cycles]`,
    /// the core spins for `cycles` before answering; the cycles are drawn
    /// from `LoadConfig::service`.
    Service,
    /// A dot-product request (nanoPU Listing 2, `sdk/programs/dot_product`):
    /// `[1, n, index0, value0, ...]` with `n = (length - 16) / 16` random
    /// (index, value) pairs; replies are matched in order.
    DotProduct,
    /// The nanoPU prototype's evaluation requests (`lnic-evaluation.c`, the
    /// FireSim switch's load generator): 16 bytes, `[service_cycles,
    /// sent_cycle]`, the service time drawn from `LoadConfig::service` and the
    /// send time in core cycles, unique (at most one request per cycle, as the
    /// switch model sends). Replies are matched by the send time.
    LnicEval,
}

/// Weights the dot-product programs hold (`weights[i] = i + 1`, 2048 of them).
const DOT_WEIGHTS: u64 = 2048;

/// What a correct reply is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expect {
    /// The same payload (loopback).
    Echo,
    /// Every word plus one (loopback-increment).
    Increment,
    /// Anything; replies are matched to requests in order.
    Any,
    /// `[2, sum]` with the dot product of the request (`Pattern::DotProduct`).
    DotProduct,
    /// The prototype evaluation program's reply (`Pattern::LnicEval`): the send
    /// time echoed, and the service time or a multiple of it (a stalled
    /// request reports its service time multiplied by the stall factor).
    LnicEval,
}

/// When the client starts sending.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Start {
    /// When the program sends its boot message (a message to 0.0.0.0,
    /// `nanopu-abi.md`).
    Boot,
    /// At this simulated time, in nanoseconds.
    AtNs(u64),
    /// After this many start-up messages addressed to the client (the
    /// prototype's evaluation program sends one per thread before serving,
    /// and its load generator counts them).
    StartMessages(u32),
}

/// How long each request keeps a core busy (for `Pattern::Service`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServiceTime {
    Fixed {
        ns: f64,
    },
    Exponential {
        mean_ns: f64,
    },
    /// `long_ns` with probability `long_fraction`, else `short_ns`.
    Bimodal {
        short_ns: f64,
        long_ns: f64,
        long_fraction: f64,
    },
    /// The prototype load generator's bimodal distribution: a normal
    /// (`long_ns`, `long_sd_ns`) with probability `long_fraction`, else a
    /// normal (`short_ns`, `short_sd_ns`); clamped to [`min_ns`, `max_ns`].
    BimodalNormal {
        short_ns: f64,
        short_sd_ns: f64,
        long_ns: f64,
        long_sd_ns: f64,
        long_fraction: f64,
        min_ns: f64,
        max_ns: f64,
    },
}

impl ServiceTime {
    /// The mean service time in ns.
    pub fn mean_ns(&self) -> f64 {
        match *self {
            ServiceTime::Fixed { ns } => ns,
            ServiceTime::Exponential { mean_ns } => mean_ns,
            ServiceTime::Bimodal {
                short_ns,
                long_ns,
                long_fraction,
            } => short_ns * (1.0 - long_fraction) + long_ns * long_fraction,
            // The clamps cut only far tails (they are many deviations away in
            // the prototype's configurations): the mean of the normals.
            ServiceTime::BimodalNormal {
                short_ns,
                long_ns,
                long_fraction,
                ..
            } => short_ns * (1.0 - long_fraction) + long_ns * long_fraction,
        }
    }

    fn sample(&self, rng: &mut ChaCha8Rng) -> f64 {
        match *self {
            ServiceTime::Fixed { ns } => ns,
            ServiceTime::Exponential { mean_ns } => {
                Exp::new(1.0 / mean_ns).expect("positive mean").sample(rng)
            }
            ServiceTime::Bimodal {
                short_ns,
                long_ns,
                long_fraction,
            } => {
                if rng.random::<f64>() < long_fraction {
                    long_ns
                } else {
                    short_ns
                }
            }
            ServiceTime::BimodalNormal {
                short_ns,
                short_sd_ns,
                long_ns,
                long_sd_ns,
                long_fraction,
                min_ns,
                max_ns,
            } => {
                let (mean, sd) = if rng.random::<f64>() < long_fraction {
                    (long_ns, long_sd_ns)
                } else {
                    (short_ns, short_sd_ns)
                };
                let v = rand_distr::Normal::new(mean, sd).map_or(mean, |n| n.sample(rng));
                v.clamp(min_ns, max_ns.max(min_ns))
            }
        }
    }
}

/// The client's parameters (`[load]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadConfig {
    /// Payload bytes per request (the header's length field).
    pub message_bytes: u16,
    /// Requests to send in all.
    pub count: u64,
    /// Leading requests left out of the statistics.
    pub warmup: u64,
    pub mode: LoadMode,
    /// Destination context (layer-4 port) on the node.
    pub context: u16,
    pub pattern: Pattern,
    pub expect: Expect,
    pub start: Start,
    /// Seed of the arrival process and of random payloads.
    pub seed: u64,
    /// Service times of `Pattern::Service` requests.
    pub service: ServiceTime,
    /// More destination contexts: each request goes to one of `context` and
    /// these, uniformly at random (seeded). Statistics are kept per context.
    pub extra_contexts: Vec<u16>,
    /// Service times for particular contexts (overriding `service`).
    pub service_by_context: Vec<(u16, ServiceTime)>,
    /// A request unanswered for this long (ns) is counted as lost, and in
    /// closed loop its window slot is reused. There is no retransmission:
    /// a NIC without a transport (the traditional one) drops what it has no
    /// buffer for.
    pub timeout_ns: u64,
    /// Propagation delay of the cable between the client and the node in a
    /// one-node run (`nanopu run --load`). Response times are measured at
    /// the node's wire, so it only shifts when things happen (and, in
    /// closed loop, how soon the next request comes). Default: 0 (the
    /// client is on the wire).
    pub link_propagation_ps: u64,
    /// An application to drive instead of `pattern`/`expect`/`message_bytes`
    /// (`app = { kind = "mica", ... }`, see `nanopu_apps`): it makes the
    /// requests and checks every reply against its oracle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<AppConfig>,
    /// Many connections with NEBULA's protocol (`connections = {}` for
    /// NEBULA §VI's 1024 of 256 messages each; see
    /// [`crate::connections`]): application requests only. `None`: one
    /// connection, the client's context; NACKs are not answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<ConnectionsConfig>,
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            message_bytes: 8,
            count: 1000,
            warmup: 10,
            mode: LoadMode::Closed { window: 1 },
            context: 0,
            pattern: Pattern::Counter,
            expect: Expect::Echo,
            start: Start::Boot,
            seed: 1,
            service: ServiceTime::Fixed { ns: 500.0 },
            extra_contexts: Vec::new(),
            service_by_context: Vec::new(),
            timeout_ns: 1_000_000,
            link_propagation_ps: 0,
            app: None,
            connections: None,
        }
    }
}

/// Most requests the closed loop keeps outstanding: the client keeps state
/// for each. Assumption: far more than any NIC buffers (a node's cores hold
/// a few dozen messages), small enough that the state fits in memory.
pub const MAX_WINDOW: u32 = 1 << 20;

/// A value as a configuration file writes it (`"zeros"`, `{ fixed = { ns = 500.0 } }`).
fn toml_text(v: &impl Serialize) -> String {
    toml::Value::try_from(v).map_or_else(|e| e.to_string(), |v| v.to_string())
}

/// A setting of the load generator: an option of `nanopu run --load` and
/// a key of a `[load]` table (`[clients.load]` in a network), so that an
/// error names what the user wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadSetting {
    MessageBytes,
    Count,
    Window,
    RateMrps,
    TickedRateMrps,
    TickNs,
    Pattern,
    Expect,
    Context,
    StartNs,
    Service,
    ServiceByContext,
    TimeoutNs,
    App,
    Connections,
}

impl LoadSetting {
    /// The option of `nanopu run --load` that sets it.
    pub fn option(self) -> &'static str {
        match self {
            LoadSetting::MessageBytes => "--msg-bytes",
            LoadSetting::Count => "--count",
            LoadSetting::Window => "--window",
            LoadSetting::RateMrps | LoadSetting::TickedRateMrps => "--rate-mrps",
            LoadSetting::TickNs => "tick_ns",
            LoadSetting::Pattern => "--pattern",
            LoadSetting::Expect => "--expect",
            LoadSetting::Context => "--contexts",
            LoadSetting::StartNs => "--start-ns",
            LoadSetting::Service => "--service",
            LoadSetting::ServiceByContext => "service_by_context",
            LoadSetting::TimeoutNs => "--timeout-ns",
            LoadSetting::App => "--app",
            LoadSetting::Connections => "connections",
        }
    }

    /// Its key in a `[load]` table.
    pub fn key(self) -> &'static str {
        match self {
            LoadSetting::MessageBytes => "message_bytes",
            LoadSetting::Count => "count",
            LoadSetting::Window => "mode.closed.window",
            LoadSetting::RateMrps => "mode.open.rate_mrps",
            LoadSetting::TickedRateMrps => "mode.open-ticked.rate_mrps",
            LoadSetting::TickNs => "mode.open-ticked.tick_ns",
            LoadSetting::Pattern => "pattern",
            LoadSetting::Expect => "expect",
            LoadSetting::Context => "context",
            LoadSetting::StartNs => "start.at-ns",
            LoadSetting::Service => "service",
            LoadSetting::ServiceByContext => "service_by_context",
            LoadSetting::TimeoutNs => "timeout_ns",
            LoadSetting::App => "app",
            LoadSetting::Connections => "connections",
        }
    }
}

/// A load generator setting that cannot work. Displayed with the option's
/// name (`--count 0: ...`, as `nanopu run --load` takes it); [`Self::at_key`]
/// names the configuration key instead.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LoadConfigError {
    /// `setting = value` is out of its range.
    #[error("{} {value}: {reason}", setting.option())]
    Invalid {
        setting: LoadSetting,
        value: String,
        reason: String,
    },
}

impl LoadConfigError {
    /// The setting at fault.
    pub fn setting(&self) -> LoadSetting {
        match self {
            LoadConfigError::Invalid { setting, .. } => *setting,
        }
    }

    /// The error naming the key under `table` (`clients[0].load.count = 0:
    /// must be at least 1`).
    pub fn at_key(&self, table: &str) -> String {
        match self {
            LoadConfigError::Invalid {
                setting,
                value,
                reason,
            } => format!("{table}.{} = {value}: {reason}", setting.key()),
        }
    }
}

fn invalid(
    setting: LoadSetting,
    value: impl ToString,
    reason: impl Into<String>,
) -> LoadConfigError {
    LoadConfigError::Invalid {
        setting,
        value: value.to_string(),
        reason: reason.into(),
    }
}

const TOO_LONG: &str = "too long for the simulated time base (at most about 5 hours)";

impl ServiceTime {
    /// Checks that every time is a finite, non-negative number of ns that
    /// fits the time base and the fraction is a probability.
    pub fn validate(&self) -> Result<(), LoadConfigError> {
        let times: &[f64] = match self {
            ServiceTime::Fixed { ns } => &[*ns],
            ServiceTime::Exponential { mean_ns } => &[*mean_ns],
            ServiceTime::Bimodal {
                short_ns, long_ns, ..
            } => &[*short_ns, *long_ns],
            ServiceTime::BimodalNormal {
                short_ns,
                short_sd_ns,
                long_ns,
                long_sd_ns,
                min_ns,
                max_ns,
                ..
            } => &[
                *short_ns,
                *short_sd_ns,
                *long_ns,
                *long_sd_ns,
                *min_ns,
                *max_ns,
            ],
        };
        for &t in times {
            if SimDuration::try_from_ns_f64(t).is_err() {
                return Err(invalid(
                    LoadSetting::Service,
                    format!("{self:?}"),
                    format!("time {t} ns must be finite, non-negative and at most about 5 hours"),
                ));
            }
        }
        if let ServiceTime::BimodalNormal { min_ns, max_ns, .. } = *self {
            if max_ns < min_ns {
                return Err(invalid(
                    LoadSetting::Service,
                    format!("{self:?}"),
                    "bimodal-normal service times need min <= max",
                ));
            }
        }
        if let ServiceTime::Bimodal { long_fraction, .. }
        | ServiceTime::BimodalNormal { long_fraction, .. } = *self
        {
            if !(0.0..=1.0).contains(&long_fraction) {
                return Err(invalid(
                    LoadSetting::Service,
                    format!("{self:?}"),
                    format!("the long fraction {long_fraction} must be in [0, 1]"),
                ));
            }
        }
        Ok(())
    }
}

impl LoadConfig {
    /// The highest rate the link can carry these requests at, in million
    /// requests per second: one message's frames back to back (a 72-byte
    /// packet every 2.88 ns at 200 Gb/s for an 8-byte request).
    pub fn max_rate_mrps(&self, nic: &NicConfig, link_gbps: u64) -> f64 {
        if let Some(app) = &self.app {
            // The mean request: one packet each up to the MTU.
            let mean = app.mean_request_bytes();
            let packets = (mean / nic.mtu_payload_bytes.max(1) as f64).ceil().max(1.0);
            let bytes = packets * nanopu_wire::frame::HEADER_LEN as f64 + mean;
            let fs = bytes * 8.0 * 1e6 / link_gbps.max(1) as f64;
            return 1e9 / fs.max(1.0);
        }
        let packets = nic.packets_for(self.message_bytes as u32) as u64;
        let bytes = packets * nanopu_wire::frame::HEADER_LEN as u64 + self.message_bytes as u64;
        let fs = SimDuration::serialization(bytes, link_gbps.max(1)).fs();
        1e9 / fs.max(1) as f64
    }

    /// The longest request sent, in bytes.
    pub fn max_request_bytes(&self) -> u16 {
        self.app
            .as_ref()
            .map_or(self.message_bytes, |a| a.max_request_bytes())
    }

    /// Checks the client's settings against the NIC it drives; the error
    /// names the setting (see [`LoadConfigError`]).
    pub fn validate(&self, nic: &NicConfig, link_gbps: u64) -> Result<(), LoadConfigError> {
        let max_message_bytes = nic.max_message_bytes;
        if let Some(app) = &self.app {
            if let Some(setting) = self.unused_with_app() {
                return Err(invalid(
                    setting,
                    self.describe(setting),
                    format!(
                        "not used with an application (app = {}): the application makes the \
                         requests (their sizes, contexts, payloads and service times) and checks \
                         the replies; leave it out",
                        app.name()
                    ),
                ));
            }
            app.validate()
                .map_err(|e| invalid(LoadSetting::App, app.name(), e.to_string()))?;
            if app.max_request_bytes() as u32 > max_message_bytes {
                return Err(invalid(
                    LoadSetting::App,
                    app.name(),
                    format!(
                        "requests of {} B exceed the NIC's maximum message size {max_message_bytes} B (nic.max_message_bytes)",
                        app.max_request_bytes()
                    ),
                ));
            }
        } else if (self.pattern == Pattern::DotProduct || self.expect == Expect::DotProduct)
            && (self.message_bytes < 32
                || !self.message_bytes.is_multiple_of(16)
                || self.expect != Expect::DotProduct)
        {
            return Err(invalid(
                LoadSetting::MessageBytes,
                self.message_bytes,
                "dot-product requests need a length of 16 + 16n bytes (n >= 1), and dot-product replies expected (expect)",
            ));
        }
        if self.pattern == Pattern::Service && self.message_bytes != 16 {
            return Err(invalid(
                LoadSetting::MessageBytes,
                self.message_bytes,
                "service requests are 16 bytes (number, cycles)",
            ));
        }
        if self.pattern == Pattern::LnicEval && self.message_bytes != 16 {
            return Err(invalid(
                LoadSetting::MessageBytes,
                self.message_bytes,
                "lnic-eval requests are 16 bytes (service cycles, send cycle)",
            ));
        }
        if (self.pattern == Pattern::LnicEval) != (self.expect == Expect::LnicEval) {
            return Err(invalid(
                LoadSetting::Expect,
                toml_text(&self.expect),
                "the lnic-eval pattern and lnic-eval replies expected (expect) go together",
            ));
        }
        self.service.validate()?;
        for (_, s) in &self.service_by_context {
            s.validate().map_err(|e| match e {
                LoadConfigError::Invalid { value, reason, .. } => {
                    invalid(LoadSetting::ServiceByContext, value, reason)
                }
            })?;
        }
        if self.app.is_some() {
            // The application sets the requests' lengths.
        } else if self.message_bytes < 8 && self.pattern != Pattern::Zeros {
            return Err(invalid(
                LoadSetting::MessageBytes,
                self.message_bytes,
                "at least 8 bytes are needed to number requests (or use the zeros pattern)",
            ));
        }
        if self.app.is_none() && self.message_bytes as u32 > max_message_bytes {
            return Err(invalid(
                LoadSetting::MessageBytes,
                self.message_bytes,
                format!("exceeds the NIC's maximum message size {max_message_bytes} B (nic.max_message_bytes)"),
            ));
        }
        if nic.transport.protocol != nanopu_transport::Protocol::None {
            let unscheduled = nic.transport.bdp_packets as u32 * nic.mtu_payload_bytes;
            if self.message_bytes as u32 > unscheduled {
                return Err(invalid(
                    LoadSetting::MessageBytes,
                    self.message_bytes,
                    format!(
                        "with nic.transport.protocol = {}, the built-in client sends only what \
                         fits in the unscheduled window ({unscheduled} bytes); it answers no PULL \
                         or GRANT",
                        nic.transport.protocol.name()
                    ),
                ));
            }
        }
        if let Some(c) = &self.connections {
            if self.app.is_none() {
                return Err(invalid(
                    LoadSetting::Connections,
                    toml_text(c),
                    "connections carry application requests only: set an application (app)",
                ));
            }
            if let Some(why) = c.problem() {
                return Err(invalid(LoadSetting::Connections, toml_text(c), why));
            }
        }
        if self.count == 0 {
            return Err(invalid(LoadSetting::Count, 0, "must be at least 1"));
        }
        if self.timeout_ns == 0 {
            return Err(invalid(LoadSetting::TimeoutNs, 0, "must be positive"));
        }
        if SimDuration::try_from_ns(self.timeout_ns).is_err() {
            return Err(invalid(LoadSetting::TimeoutNs, self.timeout_ns, TOO_LONG));
        }
        if let Start::AtNs(ns) = self.start {
            if SimDuration::try_from_ns(ns).is_err() {
                return Err(invalid(LoadSetting::StartNs, ns, TOO_LONG));
            }
        }
        let rate = match self.mode {
            LoadMode::OpenTicked { .. } => LoadSetting::TickedRateMrps,
            _ => LoadSetting::RateMrps,
        };
        match self.mode {
            LoadMode::Closed { window } if window == 0 || window > MAX_WINDOW => Err(invalid(
                LoadSetting::Window,
                window,
                format!("must be between 1 and {MAX_WINDOW} (the client keeps state for every outstanding request)"),
            )),
            LoadMode::Open { rate_mrps } | LoadMode::OpenTicked { rate_mrps, .. }
                if !(rate_mrps > 0.0 && rate_mrps.is_finite()) =>
            {
                Err(invalid(rate, rate_mrps, "must be positive and finite"))
            }
            LoadMode::OpenTicked { tick_ns, .. }
                if !(tick_ns > 0.0 && tick_ns < 1e9) =>
            {
                Err(invalid(LoadSetting::TickNs, tick_ns, "must be positive and below one second"))
            }
            LoadMode::Open { rate_mrps } | LoadMode::OpenTicked { rate_mrps, .. }
                if rate_mrps > self.max_rate_mrps(nic, link_gbps) =>
            {
                Err(invalid(
                rate,
                rate_mrps,
                format!(
                    "more than the {} Gb/s link can carry: {:.1} Mrps of {}-byte requests",
                    link_gbps,
                    self.max_rate_mrps(nic, link_gbps),
                    self.app.as_ref().map_or(self.message_bytes as f64, |a| a.mean_request_bytes())
                ),
            ))
            }
            _ => Ok(()),
        }
    }

    /// A setting that differs from its default although an application
    /// (`app`), which ignores it, drives the requests.
    pub fn unused_with_app(&self) -> Option<LoadSetting> {
        let d = LoadConfig::default();
        [
            (
                self.message_bytes != d.message_bytes,
                LoadSetting::MessageBytes,
            ),
            (self.pattern != d.pattern, LoadSetting::Pattern),
            (self.expect != d.expect, LoadSetting::Expect),
            (
                self.context != d.context || !self.extra_contexts.is_empty(),
                LoadSetting::Context,
            ),
            (self.service != d.service, LoadSetting::Service),
            (
                !self.service_by_context.is_empty(),
                LoadSetting::ServiceByContext,
            ),
        ]
        .into_iter()
        .find_map(|(set, s)| set.then_some(s))
    }

    /// The value of `setting`, as an error shows it.
    fn describe(&self, setting: LoadSetting) -> String {
        match setting {
            LoadSetting::MessageBytes => self.message_bytes.to_string(),
            LoadSetting::Pattern => toml_text(&self.pattern),
            LoadSetting::Expect => toml_text(&self.expect),
            LoadSetting::Context => std::iter::once(self.context)
                .chain(self.extra_contexts.iter().copied())
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(","),
            LoadSetting::Service => toml_text(&self.service),
            _ => toml_text(&self.service_by_context),
        }
    }

    /// Requests that can be outstanding at once: the window, or (open loop)
    /// what arrives within one timeout; at most `count`.
    pub fn max_outstanding(&self) -> u64 {
        let bound = match self.mode {
            LoadMode::Closed { window } => window as u64,
            LoadMode::Open { rate_mrps } | LoadMode::OpenTicked { rate_mrps, .. } => {
                (rate_mrps * self.timeout_ns as f64 / 1e3)
                    .ceil()
                    .min(u64::MAX as f64) as u64
                    + 1
            }
        };
        bound.min(self.count)
    }

    /// Host memory the client needs at most, in bytes: the state of every
    /// outstanding request (its expected reply, a timeout event, its frames
    /// on the link).
    pub fn memory_estimate(&self) -> u64 {
        let per_request = 160 + 3 * (self.max_request_bytes() as u64).next_multiple_of(8);
        self.max_outstanding().saturating_mul(per_request)
    }
}

struct Outstanding {
    seq: u64,
    context: u16,
    /// When it was first sent (response times run from here).
    sent: SimTime,
    expected: Vec<u64>,
    /// The application's request (with an app), and its sends so far.
    request: Option<Box<Request>>,
    attempts: u32,
    /// When it was last sent, and to which server (index into `servers`).
    attempt_sent: SimTime,
    server: usize,
    /// Its connection and message id there (with `[load] connections`;
    /// `None`: the client's context, or waiting for a connection).
    conn: Option<ConnId>,
    /// NACKed: waiting to be sent again (see [`crate::connections`]).
    resending: bool,
}

/// What the client measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LoadReport {
    pub sent: u64,
    pub received: u64,
    /// Replies whose payload was not what the program should answer.
    pub wrong_replies: u64,
    /// Replies that matched no outstanding request.
    pub unexpected_replies: u64,
    /// Frames that reached the client but were no reply to it, dropped
    /// as a host drops them: addressed to another host (the node itself,
    /// broadcast, multicast, loopback, any other address), or not a
    /// nanoPU data packet.
    pub frames_not_for_client: u64,
    /// Requests that got no reply within the timeout.
    pub lost: u64,
    /// The first wrong reply, described.
    pub first_error: Option<String>,
    /// The application driven (`[load] app`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<&'static str>,
    /// Requests re-sent because the application said so (a reply asking
    /// for a retry, or a timeout it chose to retry).
    pub retries: u64,
    /// NACKs received (`[load] connections`); each NACK of a measured
    /// request counts as an infinite response time in the percentiles
    /// (NEBULA §VI), which are then infinite if there are enough of them.
    #[serde(skip_serializing_if = "is_zero")]
    pub nacks: u64,
    /// Requests given up after `connections.max_attempts` NACKed sends
    /// (also counted in `lost`).
    #[serde(skip_serializing_if = "is_zero")]
    pub gave_up: u64,
    /// Response time at the client: its request's first send to the last
    /// bit of the reply reaching it, in ns (after the warm-up).
    pub client_p50_ns: f64,
    pub client_p90_ns: f64,
    pub client_p99_ns: f64,
    pub client_p999_ns: f64,
    pub client_mean_ns: f64,
    /// Response time at the node's wire, in ns (after the warm-up): from
    /// the request's first bit reaching the server that answered to the
    /// reply's last bit leaving it.
    pub p50_ns: f64,
    pub p90_ns: f64,
    pub p99_ns: f64,
    pub p999_ns: f64,
    pub min_ns: f64,
    pub max_ns: f64,
    pub mean_ns: f64,
    /// Replies per second over the measured interval, in millions.
    pub throughput_mrps: f64,
    /// Reply payload throughput including packet headers, Gb/s.
    pub throughput_gbps: f64,
    /// Simulated time from the first measured request to the last reply, ns.
    pub measured_ns: f64,
    /// The same percentiles for each destination context.
    pub per_context: Vec<ContextReport>,
    /// Requests outstanding (sent, not yet answered) just after the request
    /// half-way through the measured ones was sent, and just after the last
    /// one was: the backlog check of a sustained load (a queue that keeps up
    /// holds about as many at both points).
    pub outstanding_at_midpoint: u64,
    pub outstanding_at_last_send: u64,
    /// Requests sent after the midpoint one (the backlog's growth is out of these).
    pub sent_after_midpoint: u64,
    /// Start-up messages the program sent to the client (`Start::StartMessages`).
    pub start_messages: u64,
}

impl LoadReport {
    /// How much the backlog grew over the second half of the sends.
    pub fn backlog_growth(&self) -> i64 {
        self.outstanding_at_last_send as i64 - self.outstanding_at_midpoint as i64
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Response times of the requests to one context.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ContextReport {
    pub context: u16,
    pub received: u64,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub max_ns: f64,
}

/// How many of the oldest outstanding requests a reply matched in order is
/// compared with (replies overtake lost requests, rarely many).
const IN_ORDER_LOOKAHEAD: usize = 64;

/// Spare frame buffers and word vectors a client keeps for reuse: a reply
/// frees what the next request needs, so a few suffice in steady state, and
/// clusters of many clients do not hold many idle buffers.
const SPARE_FRAMES: usize = 16;
const SPARE_WORDS: usize = 16;

/// The load generator.
pub struct Client {
    pub cfg: LoadConfig,
    pub ip: u32,
    pub context: u16,
    server_ip: u32,
    /// Every server the client may send to (`[0]` is `server_ip`): address
    /// and one-way propagation delay.
    servers: Vec<(u32, SimDuration)>,
    /// The application driven, if any (its requests, its oracle).
    app: Option<Box<dyn App>>,
    /// Response times at the client, ps.
    client_latencies: Histogram<u64>,
    /// Core clock, to turn service times into cycles.
    core_mhz: u32,
    /// Destination of the request being built.
    current_context: u16,
    rng: ChaCha8Rng,
    next_seq: u64,
    packetizer: WholeMessages,
    /// Spare frame buffers (handed over by the cluster: [`Client::recycle`])
    /// and word vectors (payloads and expected replies of answered
    /// requests), so that a steady load allocates nothing.
    spare_frames: Vec<Vec<u8>>,
    spare_words: Vec<Vec<u64>>,
    started: bool,
    /// Requests waiting for a reply, by key: their sequence number when
    /// replies are matched in order (so the first is the oldest), else the
    /// first word of the expected reply.
    outstanding: BTreeMap<u64, Outstanding>,
    reassembly: Reassembly,
    latencies: Histogram<u64>,
    /// Per destination context (in the order of `contexts()`).
    context_latencies: Vec<(u16, Histogram<u64>)>,
    first_measured_send: Option<SimTime>,
    last_reply: SimTime,
    measured_replies: u64,
    /// Frame bits of measured replies (for Gb/s).
    measured_bits: u64,
    reply_frame_bytes: u64,
    /// Acknowledge every data packet from the node, as a NanoTransport
    /// receiver would, and ignore the node's control packets: needed when
    /// the node's NIC runs a transport program (it retransmits what is not
    /// acknowledged). Requests must then fit in the unscheduled window: the
    /// client answers no PULL or GRANT.
    pub acknowledge: bool,
    /// Acknowledgements sent.
    pub acks_sent: u64,
    /// Send time (core cycle) of the last `Pattern::LnicEval` request.
    last_stamp: Option<u64>,
    pub report: LoadReport,
    /// When `Some`, every measured reply adds (its request's first send,
    /// its response time at the client): a latency series, to see a gap
    /// (a failover) over time. Off by default.
    pub series: Option<Vec<(SimTime, SimDuration)>>,
    /// `[load] connections`, and (open loop) when the next arrival is due,
    /// to tell it from a resend's wake-up.
    conns: Option<Connections>,
    next_arrival: Option<SimTime>,
    /// NACKs of measured requests (infinite response times).
    measured_nacks: u64,
}

/// Picoseconds, up to 10 s, 3 significant digits.
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 10_000_000_000_000, 3).expect("valid bounds")
}

/// What the client wants done.
pub enum ClientAction {
    /// Put `frame` on the link towards the node, ready at `ready`.
    Send { frame: Vec<u8>, ready: SimTime },
    /// Call [`Client::tick`] again at `at` (the next open-loop arrival).
    Wake { at: SimTime },
    /// Call [`Client::timeout`] with `key` at `at` (one timeout length
    /// after now: deadlines come in time order).
    Timeout { at: SimTime, key: u64 },
}

impl Client {
    pub fn new(
        cfg: LoadConfig,
        ip: u32,
        server_ip: u32,
        mtu_payload: u32,
        propagation: SimDuration,
    ) -> Client {
        Client {
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            conns: cfg.connections.clone().map(Connections::new),
            next_arrival: None,
            measured_nacks: 0,
            cfg,
            ip,
            context: 1,
            server_ip,
            servers: vec![(server_ip, propagation)],
            app: None,
            client_latencies: new_histogram(),
            core_mhz: 3200,
            current_context: 0,
            next_seq: 0,
            packetizer: WholeMessages::new(mtu_payload),
            spare_frames: Vec::new(),
            spare_words: Vec::new(),
            started: false,
            outstanding: BTreeMap::new(),
            reassembly: {
                let t = TransportConfig::default();
                Reassembly::lossless(t.max_rx_messages, &t.buffer_classes, mtu_payload)
                    .expect("the default buffer classes are valid")
            },
            // Picoseconds, up to 10 s, 3 significant digits.
            latencies: new_histogram(),
            context_latencies: Vec::new(),
            first_measured_send: None,
            last_reply: SimTime::ZERO,
            measured_replies: 0,
            measured_bits: 0,
            reply_frame_bytes: 0,
            acknowledge: false,
            acks_sent: 0,
            last_stamp: None,
            report: LoadReport::default(),
            series: None,
        }
    }

    /// Whether replies are matched to requests by order rather than content.
    fn in_order(&self) -> bool {
        matches!(self.cfg.pattern, Pattern::Zeros | Pattern::DotProduct)
            || self.cfg.expect == Expect::Any
    }

    /// Sets the core clock service times are converted with (default 3200 MHz).
    pub fn set_core_mhz(&mut self, mhz: u32) {
        self.core_mhz = mhz;
    }

    /// Whether every request has been answered.
    pub fn done(&self) -> bool {
        self.report.received + self.report.unexpected_replies + self.report.lost >= self.cfg.count
            && self.next_seq >= self.cfg.count
            && self.outstanding.is_empty()
    }

    pub fn started(&self) -> bool {
        self.started
    }

    /// Starts sending at `now`.
    pub fn start(&mut self, now: SimTime, out: &mut Vec<ClientAction>) {
        if self.started {
            return;
        }
        self.started = true;
        if let Some(app) = self.app.as_mut() {
            for req in app.preamble(now.fs() / 1000, &mut self.rng) {
                let server = self.servers[req.server.min(self.servers.len() - 1)].0;
                self.send_frames(server, &req, None, now, out);
            }
        }
        match self.cfg.mode {
            LoadMode::Closed { window } => {
                for _ in 0..window {
                    self.send_next(now, out);
                }
            }
            LoadMode::Open { .. } | LoadMode::OpenTicked { .. } => {
                self.next_arrival = Some(now);
                self.tick(now, out)
            }
        }
    }

    /// An open-loop arrival at `now` (with `[load] connections`, also the
    /// resends due then).
    pub fn tick(&mut self, now: SimTime, out: &mut Vec<ClientAction>) {
        if self.conns.is_some() {
            self.resend_due(now, out);
            if self.next_arrival != Some(now) {
                return; // a resend's wake-up
            }
            self.next_arrival = None;
        }
        let (rate_mrps, tick_fs) = match self.cfg.mode {
            LoadMode::Closed { .. } => return,
            LoadMode::Open { rate_mrps } => (rate_mrps, 0),
            LoadMode::OpenTicked { rate_mrps, tick_ns } => {
                (rate_mrps, (tick_ns * 1e6).round() as u64)
            }
        };
        self.send_next(now, out);
        if self.next_seq < self.cfg.count {
            // Exponential inter-arrival times, in femtoseconds.
            let exp = Exp::new(rate_mrps * 1e6 / 1e15).expect("positive rate");
            let mut gap = exp.sample(&mut self.rng).round() as u64;
            if tick_fs > 0 {
                // The next iteration at or after the gap, at least the next one.
                gap = gap.div_ceil(tick_fs).max(1) * tick_fs;
            }
            let at = now + SimDuration::from_fs(gap.max(1));
            if self.conns.is_some() {
                self.next_arrival = Some(at);
            }
            out.push(ClientAction::Wake { at });
        }
    }

    /// The payload word that identifies a reply's request (when not in order).
    fn key_word(&self) -> usize {
        match self.cfg.pattern {
            Pattern::LnicEval => 1,
            _ => 0,
        }
    }

    fn service_dist(&self) -> ServiceTime {
        self.cfg
            .service_by_context
            .iter()
            .find(|(c, _)| *c == self.current_context)
            .map_or(self.cfg.service, |&(_, d)| d)
    }

    /// The payload of request `seq` at `now`, written into `p` (emptied
    /// first).
    fn payload_into(&mut self, seq: u64, now: SimTime, p: &mut Vec<u64>) {
        p.clear();
        let words = (self.cfg.message_bytes as usize).div_ceil(8);
        match self.cfg.pattern {
            Pattern::Counter => p.extend((0..words as u64).map(|i| (seq << 16) | i)),
            Pattern::Random => p.extend((0..words).map(|_| self.rng.random::<u64>())),
            Pattern::Zeros => p.resize(words, 0),
            Pattern::Service => {
                let ns = self.service_dist().sample(&mut self.rng).max(0.0);
                let cycles = (ns * self.core_mhz as f64 / 1000.0).round() as u64;
                p.extend([seq, cycles]);
                return;
            }
            Pattern::LnicEval => {
                let ns = self.service_dist().sample(&mut self.rng).max(0.0);
                // A service time of 0 tells the prototype's program to exit.
                let cycles = ((ns * self.core_mhz as f64 / 1000.0).round() as u64).max(1);
                let cycle = now.fs() / (1_000_000_000 / self.core_mhz as u64);
                let stamp = self.last_stamp.map_or(cycle, |l| cycle.max(l + 1));
                self.last_stamp = Some(stamp);
                p.extend([cycles, stamp]);
                return;
            }
            Pattern::DotProduct => {
                let n = (words - 2) / 2;
                p.extend([1, n as u64]);
                for _ in 0..n {
                    p.push(self.rng.random_range(0..DOT_WEIGHTS));
                    p.push(self.rng.random_range(0..1u64 << 20));
                }
                return;
            }
        }
        if self.cfg.pattern != Pattern::Zeros {
            p[0] = seq;
        }
        // Bytes beyond the length are not sent: keep the expected words equal.
        let tail = self.cfg.message_bytes as usize % 8;
        if tail != 0 {
            let last = p.len() - 1;
            p[last] &= (1u64 << (8 * tail)) - 1;
        }
    }

    /// Keeps a word vector for the next request's payload or expected reply.
    fn recycle_words(&mut self, mut v: Vec<u64>) {
        if self.spare_words.len() < SPARE_WORDS && v.capacity() > 0 {
            v.clear();
            self.spare_words.push(v);
        }
    }

    /// Takes a consumed frame buffer for its next sends; returns it if it
    /// has enough.
    pub fn recycle(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        if self.spare_frames.len() < SPARE_FRAMES {
            self.spare_frames.push(frame);
            None
        } else {
            Some(frame)
        }
    }

    /// Drives the application of `cfg.app` as client `ctx.client` of
    /// `ctx.clients`, sending to `servers` (`[0]` must be the server given
    /// to [`Client::new`]; address and one-way propagation delay of each).
    /// `client_host` calls it for a single client and server; a cluster
    /// calls it again with its own context.
    pub fn use_app(
        &mut self,
        ctx: AppContext,
        servers: Vec<(u32, SimDuration)>,
    ) -> Result<(), nanopu_apps::AppError> {
        if !servers.is_empty() {
            self.servers = servers;
        }
        let ctx = AppContext {
            servers: self.servers.len(),
            ..ctx
        };
        self.app = match &self.cfg.app {
            Some(AppConfig::Script(s)) => {
                // Its "count" words are the number of requests sent.
                let s = nanopu_apps::script::ScriptConfig {
                    count: self.cfg.count,
                    ..s.clone()
                };
                Some(AppConfig::Script(s).build(ctx)?)
            }
            Some(a) => Some(a.build(ctx)?),
            None => None,
        };
        self.report.app = self.app.as_ref().map(|a| a.name());
        Ok(())
    }

    /// The application's next request (`seq` is its tag).
    fn send_app_request(&mut self, seq: u64, now: SimTime, out: &mut Vec<ClientAction>) {
        let app = self.app.as_mut().expect("called with an app");
        let req = app.next_request_at(seq, now.fs() / 1000, &mut self.rng);
        if req.server >= self.servers.len()
            || req.payload.len() != (req.len as usize).div_ceil(8)
            || req.len as usize > u16::MAX as usize
        {
            // The application broke its contract: count the request as
            // lost and say why, rather than send something malformed.
            self.report.lost += 1;
            self.report.wrong_replies += 1;
            self.report.first_error.get_or_insert_with(|| {
                format!(
                    "{} request {seq}: to server {} of {}, {} B in {} words: not a request the client can send",
                    app.name(),
                    req.server,
                    self.servers.len(),
                    req.len,
                    req.payload.len()
                )
            });
            return;
        }
        self.note_send(seq, now);
        self.outstanding.insert(
            seq,
            Outstanding {
                seq,
                context: req.context,
                sent: now,
                expected: Vec::new(),
                request: None,
                attempts: 0,
                attempt_sent: now,
                server: req.server,
                conn: None,
                resending: false,
            },
        );
        self.report.sent += 1;
        if let Some(conns) = self.conns.as_mut() {
            let o = self.outstanding.get_mut(&seq).expect("just inserted");
            match conns.open(seq, &mut self.rng) {
                Some(id) => o.conn = Some(id),
                None => {
                    // Sent when a connection has room (`close_conn`).
                    o.request = Some(Box::new(req));
                    return;
                }
            }
        }
        self.transmit(seq, req, now, out);
    }

    /// Puts the frames of application message `req` to `server` on the
    /// link, from connection `conn` (`None`: the client's context).
    fn send_frames(
        &mut self,
        server: u32,
        req: &Request,
        conn: Option<ConnId>,
        now: SimTime,
        out: &mut Vec<ClientAction>,
    ) {
        let msg = OutMessageRef {
            dst_ip: server,
            dst_port: req.context,
            src_port: conn.map_or(self.context, |c| c.0),
            len: req.len,
            payload: &req.payload,
            tag: 0,
        };
        self.put_on_link(&msg, conn.map(|c| c.1), now, out);
    }

    /// Puts the frames of `msg` on the link at `now`, in spare buffers,
    /// as message `id` (`None`: the next of the client's counter).
    fn put_on_link(
        &mut self,
        msg: &OutMessageRef<'_>,
        id: Option<u16>,
        now: SimTime,
        out: &mut Vec<ClientAction>,
    ) {
        let spare = &mut self.spare_frames;
        let buffer = || spare.pop().unwrap_or_default();
        let frame = |frame| out.push(ClientAction::Send { frame, ready: now });
        match id {
            Some(id) => self.packetizer.frames_as(id, self.ip, msg, buffer, frame),
            None => self.packetizer.frames(self.ip, msg, buffer, frame),
        }
    }

    /// Sends (or re-sends) application request `seq`, which is outstanding.
    fn transmit(&mut self, seq: u64, req: Request, now: SimTime, out: &mut Vec<ClientAction>) {
        let conn = self.outstanding.get(&seq).and_then(|o| o.conn);
        self.send_frames(self.servers[req.server].0, &req, conn, now, out);
        if let Some(o) = self.outstanding.get_mut(&seq) {
            o.attempts += 1;
            o.attempt_sent = now;
            o.resending = false;
            o.server = req.server;
            o.context = req.context;
            o.request = Some(Box::new(req));
        }
        out.push(ClientAction::Timeout {
            at: now + SimDuration::from_ns(self.cfg.timeout_ns),
            key: seq,
        });
    }

    /// Bookkeeping of the request numbered `seq`, sent at `now`.
    fn note_send(&mut self, seq: u64, now: SimTime) {
        if seq == self.cfg.warmup {
            self.first_measured_send = Some(now);
        }
        if seq == self.cfg.warmup + (self.cfg.count - self.cfg.warmup) / 2 {
            self.report.outstanding_at_midpoint = self.outstanding.len() as u64;
            self.report.sent_after_midpoint = self.cfg.count - 1 - seq;
        }
        if seq + 1 == self.cfg.count {
            self.report.outstanding_at_last_send = self.outstanding.len() as u64;
        }
    }

    fn send_next(&mut self, now: SimTime, out: &mut Vec<ClientAction>) {
        if self.next_seq >= self.cfg.count {
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        if self.app.is_some() {
            return self.send_app_request(seq, now, out);
        }
        let context = if self.cfg.extra_contexts.is_empty() {
            self.cfg.context
        } else {
            let i = self.rng.random_range(0..=self.cfg.extra_contexts.len());
            if i == 0 {
                self.cfg.context
            } else {
                self.cfg.extra_contexts[i - 1]
            }
        };
        self.current_context = context;
        let mut payload = self.spare_words.pop().unwrap_or_default();
        self.payload_into(seq, now, &mut payload);
        let mut expected = match self.cfg.expect {
            Expect::Any => Vec::new(),
            _ => self.spare_words.pop().unwrap_or_default(),
        };
        match self.cfg.expect {
            Expect::Echo | Expect::LnicEval => expected.extend_from_slice(&payload),
            Expect::Increment => expected.extend(payload.iter().map(|w| w.wrapping_add(1))),
            Expect::Any => {}
            Expect::DotProduct => {
                let sum = payload[2..].chunks(2).fold(0u64, |acc, p| {
                    acc.wrapping_add(p[1].wrapping_mul(p[0] % DOT_WEIGHTS + 1))
                });
                expected.extend([2, sum]);
            }
        }
        let key = if self.in_order() {
            seq
        } else {
            expected[self.key_word()]
        };
        self.outstanding.insert(
            key,
            Outstanding {
                seq,
                context,
                sent: now,
                expected,
                request: None,
                attempts: 1,
                attempt_sent: now,
                server: 0,
                conn: None,
                resending: false,
            },
        );
        self.note_send(seq, now);
        out.push(ClientAction::Timeout {
            at: now + SimDuration::from_ns(self.cfg.timeout_ns),
            key,
        });
        self.report.sent += 1;
        let msg = OutMessageRef {
            dst_ip: self.server_ip,
            dst_port: context,
            src_port: self.context,
            len: self.cfg.message_bytes,
            payload: &payload,
            tag: 0,
        };
        self.put_on_link(&msg, None, now, out);
        self.recycle_words(payload);
    }

    /// A frame from the node; `last_bit_in` is when its last bit arrived.
    /// Returns true if it was the program's boot message.
    pub fn frame_in(
        &mut self,
        frame: &[u8],
        last_bit_in: SimTime,
        out: &mut Vec<ClientAction>,
    ) -> bool {
        if self.conns.is_some() && self.nack(frame, last_bit_in, out) {
            return false;
        }
        let (info, payload) = match frames::decode(frame) {
            Ok(p) => p,
            // The node's ACKs, PULLs and GRANTs for our requests.
            Err(frames::DropReason::NotForUs) if self.acknowledge => return false,
            Err(_) => {
                self.report.frames_not_for_client += 1;
                return false;
            }
        };
        if info.dst_ip != 0 && frame.get(..6) != Some(&frames::mac_of(self.ip).0[..]) {
            // Not a reply: addressed to another host (the wire of `run
            // --load` is a cable, so the client sees it), broadcast,
            // multicast, loopback. A NIC goes by the Ethernet address (the
            // paper's traditional loopback swaps only that).
            self.report.frames_not_for_client += 1;
            return false;
        }
        if self.acknowledge {
            self.ack(frame, last_bit_in, out);
        }
        if info.dst_ip == 0 {
            if let Start::Boot = self.cfg.start {
                self.start(last_bit_in, out);
            }
            return true;
        }
        if let Start::StartMessages(n) = self.cfg.start {
            if !self.started {
                // A start-up message (one packet each: the prototype's are 16 B).
                self.report.start_messages += 1;
                if self.report.start_messages >= n as u64 {
                    self.start(last_bit_in, out);
                    return true;
                }
                return false;
            }
        }
        let req = GetRxMsgInfoReq {
            mark_received: true,
            src_ip: info.src_ip,
            src_port: info.src_context,
            tx_msg_id: info.tx_msg_id,
            msg_len: info.msg_len,
            pkt_offset: info.pkt_offset,
        };
        match self
            .reassembly
            .packet(req, info.dst_context, payload, last_bit_in)
        {
            Ok(Some(m)) => {
                let msg = Message {
                    peer_ip: m.src_ip,
                    peer_context: m.src_port,
                    local_context: m.dst_port,
                    len: m.len,
                    payload: m.payload,
                    flow: 0,
                };
                self.reply(msg, last_bit_in, frame.len() as u64, out)
            }
            Ok(None) => self.reply_frame_bytes += frame.len() as u64,
            Err(_) => self.report.unexpected_replies += 1,
        }
        false
    }

    /// An ACK for the data packet `frame` (its header fields mirrored).
    fn ack(&mut self, frame: &[u8], at: SimTime, out: &mut Vec<ClientAction>) {
        let Ok((r, _)) = nanopu_wire::FrameRepr::parse(frame) else {
            return;
        };
        let mut nt = r.nt;
        nt.flags = nanopu_wire::Flags::ACK;
        std::mem::swap(&mut nt.src_context, &mut nt.dst_context);
        let mut eth = r.eth;
        std::mem::swap(&mut eth.src_addr, &mut eth.dst_addr);
        let mut ip = r.ip;
        std::mem::swap(&mut ip.src_addr, &mut ip.dst_addr);
        // Control packets at the top priority, as the shipped programs do.
        ip.tos = nanopu_transport::protocols::CONTROL_PRIORITY;
        let repr = nanopu_wire::FrameRepr::new(eth, ip, nt, 0);
        let mut ack = self.spare_frames.pop().unwrap_or_default();
        ack.clear();
        ack.resize(repr.frame_len(), 0);
        if repr.emit(&[], &mut ack).is_ok() {
            self.acks_sent += 1;
            out.push(ClientAction::Send {
                frame: ack,
                ready: at,
            });
        }
    }

    fn reply(&mut self, msg: Message, at: SimTime, last_frame: u64, out: &mut Vec<ClientAction>) {
        let frame_bytes = std::mem::take(&mut self.reply_frame_bytes) + last_frame;
        let key = if let Some(app) = &self.app {
            app.reply_tag(&msg.payload, msg.len)
        } else if self.in_order() {
            // In order, but a reply may skip lost requests: take the oldest
            // request this reply answers among the oldest
            // `IN_ORDER_LOOKAHEAD` (the oldest at all if none does), so a
            // reply costs O(1) whatever the window.
            let oldest = self.outstanding.keys().next().copied();
            if self.cfg.expect == Expect::Any {
                oldest
            } else {
                self.outstanding
                    .iter()
                    .take(IN_ORDER_LOOKAHEAD)
                    .find(|(_, r)| r.expected == msg.payload)
                    .map(|(&k, _)| k)
                    .or(oldest)
            }
        } else {
            msg.payload.get(self.key_word()).copied()
        };
        let Some(req) = key.and_then(|k| self.outstanding.remove(&k)) else {
            self.report.unexpected_replies += 1;
            return;
        };
        let correct = match (self.app.as_mut(), req.request.as_deref()) {
            (Some(app), Some(request)) => match app.check(request, &msg.payload, msg.len) {
                Verdict::Ok => Ok(()),
                Verdict::Wrong(why) => Err(why),
                Verdict::Retry { server, context } => {
                    return self.retry(req, server, context, at, out);
                }
            },
            _ => self.check_pattern_reply(&req, &msg),
        };
        self.close_conn(&req, at, out);
        self.report.received += 1;
        if let Err(why) = correct {
            self.report.wrong_replies += 1;
            if self.report.first_error.is_none() {
                self.report.first_error = Some(why);
            }
        }
        if req.seq >= self.cfg.warmup {
            // At the node's wire: the request's first bit arrived one
            // propagation delay after it left; the reply's last bit left
            // one propagation delay before it arrived here.
            let propagation = self.servers[req.server].1;
            let at_node = req.attempt_sent + propagation;
            let left_node = SimTime(at.fs().saturating_sub(propagation.fs()));
            let ps = left_node.since(at_node).fs() / 1000;
            self.latencies.saturating_record(ps.max(1));
            self.client_latencies
                .saturating_record((at.since(req.sent).fs() / 1000).max(1));
            if let Some(series) = &mut self.series {
                series.push((req.sent, at.since(req.sent)));
            }
            let h = match self
                .context_latencies
                .iter()
                .position(|(c, _)| *c == req.context)
            {
                Some(i) => &mut self.context_latencies[i].1,
                None => {
                    self.context_latencies.push((req.context, new_histogram()));
                    &mut self.context_latencies.last_mut().expect("pushed").1
                }
            };
            h.saturating_record(ps.max(1));
            self.measured_replies += 1;
            self.last_reply = at;
            self.measured_bits += frame_bytes * 8;
        }
        self.recycle_words(req.expected);
        self.reassembly.recycle_payload(msg.payload);
        if let LoadMode::Closed { .. } = self.cfg.mode {
            self.send_next(at, out);
        }
    }

    /// Re-sends application request `req` to `server`, `context`.
    fn retry(
        &mut self,
        mut req: Outstanding,
        server: usize,
        context: u16,
        now: SimTime,
        out: &mut Vec<ClientAction>,
    ) {
        let mut request = *req.request.take().expect("an application request");
        if server >= self.servers.len() {
            self.report.received += 1;
            self.report.wrong_replies += 1;
            self.report.first_error.get_or_insert_with(|| {
                format!(
                    "request {}: retry asked for server {server}, but the client has {}",
                    req.seq,
                    self.servers.len()
                )
            });
            if let LoadMode::Closed { .. } = self.cfg.mode {
                self.send_next(now, out);
            }
            return;
        }
        self.report.retries += 1;
        request.server = server;
        request.context = context;
        let seq = req.seq;
        self.outstanding.insert(seq, req);
        self.transmit(seq, request, now, out);
    }

    /// Whether a reply of the built-in patterns is right (`Err` says how not).
    fn check_pattern_reply(&self, req: &Outstanding, msg: &Message) -> Result<(), String> {
        let correct = match self.cfg.expect {
            Expect::Any => true,
            // [service (or a multiple: a stalled request), send time]
            Expect::LnicEval => {
                msg.payload.len() == 2
                    && msg.payload[1] == req.expected[1]
                    && msg.payload[0] >= req.expected[0]
                    && msg.payload[0].is_multiple_of(req.expected[0])
            }
            _ => msg.payload == req.expected,
        };
        if correct {
            return Ok(());
        }
        Err(format!(
            "request {}: expected payload {:x?}, got {:x?} (length {})",
            req.seq,
            &req.expected[..req.expected.len().min(4)],
            &msg.payload[..msg.payload.len().min(4)],
            msg.len
        ))
    }

    /// The timeout of request `key` at `now`: if still unanswered, it is lost.
    pub fn timeout(&mut self, key: u64, now: SimTime, out: &mut Vec<ClientAction>) {
        let Some(req) = self.outstanding.get(&key) else {
            return;
        };
        if req.resending || now.since(req.attempt_sent) < SimDuration::from_ns(self.cfg.timeout_ns)
        {
            return; // the key was reused by a later request, or re-sent
        }
        let mut req = self.outstanding.remove(&key).expect("outstanding");
        if let (Some(app), Some(request)) = (self.app.as_mut(), req.request.as_deref()) {
            if let Some((server, context)) = app.on_timeout(request, req.attempts) {
                req.attempt_sent = now;
                return self.retry(req, server, context, now, out);
            }
        }
        self.close_conn(&req, now, out);
        self.report.lost += 1;
        if let LoadMode::Closed { .. } = self.cfg.mode {
            self.send_next(now, out);
        }
    }

    /// `frame`, if it is a NACK of a request in flight on a connection
    /// (`[load] connections`): the request is sent again after a backoff,
    /// or given up after `max_attempts` sends.
    fn nack(&mut self, frame: &[u8], at: SimTime, out: &mut Vec<ClientAction>) -> bool {
        let Ok((r, _)) = nanopu_wire::FrameRepr::parse(frame) else {
            return false;
        };
        if !r.nt.flags.contains(nanopu_wire::Flags::NACK) || r.ip.dst_addr.to_bits() != self.ip {
            return false;
        }
        let conns = self.conns.as_mut().expect("connections");
        let Some(key) = conns.request((r.nt.dst_context, r.nt.tx_msg_id)) else {
            self.report.unexpected_replies += 1;
            return true;
        };
        self.report.nacks += 1;
        let o = self.outstanding.get_mut(&key).expect("in flight");
        if o.seq >= self.cfg.warmup {
            self.measured_nacks += 1;
        }
        if o.attempts >= conns.cfg.max_attempts {
            let o = self.outstanding.remove(&key).expect("in flight");
            self.report.gave_up += 1;
            self.report.lost += 1;
            self.close_conn(&o, at, out);
            if let LoadMode::Closed { .. } = self.cfg.mode {
                self.send_next(at, out);
            }
            return true;
        }
        o.resending = true;
        let back = at + SimDuration::from_ns(conns.cfg.backoff_ns * o.attempts as u64);
        conns.resend_at(back, key);
        out.push(ClientAction::Wake { at: back });
        true
    }

    /// Sends again the NACKed requests whose backoff is over by `now`.
    fn resend_due(&mut self, now: SimTime, out: &mut Vec<ClientAction>) {
        while let Some(key) = self.conns.as_mut().and_then(|c| c.due_resend(now)) {
            let Some(req) = self
                .outstanding
                .get_mut(&key)
                .and_then(|o| o.request.take())
            else {
                continue;
            };
            self.report.retries += 1;
            self.transmit(key, *req, now, out);
        }
    }

    /// Request `req` is done: its connection takes the next waiting one.
    fn close_conn(&mut self, req: &Outstanding, now: SimTime, out: &mut Vec<ClientAction>) {
        let (Some(conns), Some(id)) = (self.conns.as_mut(), req.conn) else {
            return;
        };
        if let Some((key, id)) = conns.close(id) {
            let Some(o) = self.outstanding.get_mut(&key) else {
                return;
            };
            o.conn = Some(id);
            if let Some(r) = o.request.take() {
                self.transmit(key, *r, now, out);
            }
        }
    }

    /// Fills in the percentiles and throughput.
    pub fn finish(&mut self) -> &LoadReport {
        let h = &self.latencies;
        let r = &mut self.report;
        if !h.is_empty() {
            let ns = |ps: u64| ps as f64 / 1000.0;
            // NACKs of measured requests count as infinite (NEBULA §VI):
            // quantile q of all is quantile q (n + k) / n of the n finite.
            let (n, k) = (h.len() as f64, self.measured_nacks as f64);
            let at = |q: f64| match q * (n + k) / n {
                _ if k == 0.0 => ns(h.value_at_quantile(q)),
                q if q > 1.0 => f64::INFINITY,
                q => ns(h.value_at_quantile(q)),
            };
            r.p50_ns = at(0.5);
            r.p90_ns = at(0.9);
            r.p99_ns = at(0.99);
            r.p999_ns = at(0.999);
            r.min_ns = ns(h.min());
            r.max_ns = ns(h.max());
            r.mean_ns = h.mean() / 1000.0;
        }
        let c = &self.client_latencies;
        if !c.is_empty() {
            let ns = |ps: u64| ps as f64 / 1000.0;
            r.client_p50_ns = ns(c.value_at_quantile(0.5));
            r.client_p90_ns = ns(c.value_at_quantile(0.9));
            r.client_p99_ns = ns(c.value_at_quantile(0.99));
            r.client_p999_ns = ns(c.value_at_quantile(0.999));
            r.client_mean_ns = c.mean() / 1000.0;
        }
        let ns = |ps: u64| ps as f64 / 1000.0;
        let mut per_context: Vec<ContextReport> = self
            .context_latencies
            .iter()
            .map(|(c, h)| ContextReport {
                context: *c,
                received: h.len(),
                p50_ns: ns(h.value_at_quantile(0.5)),
                p99_ns: ns(h.value_at_quantile(0.99)),
                max_ns: ns(h.max()),
            })
            .collect();
        per_context.sort_by_key(|c| c.context);
        r.per_context = per_context;
        if let Some(first) = self.first_measured_send {
            let span = self.last_reply.since(first);
            if span.fs() > 0 {
                let s = span.fs() as f64 / 1e15;
                r.measured_ns = span.as_ns();
                r.throughput_mrps = self.measured_replies as f64 / s / 1e6;
                r.throughput_gbps = self.measured_bits as f64 / s / 1e9;
            }
        }
        &self.report
    }
}
