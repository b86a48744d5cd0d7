//! The load generator's parameters (`[load]`): how requests are paced,
//! what they carry, what a correct reply is, when sending starts, and the
//! checks that name the setting a user got wrong.

use crate::connections::ConnectionsConfig;
use nanopu_apps::AppConfig;
use nanopu_nics::nanopu::NicConfig;
use nanopu_sim::SimDuration;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use serde::{Deserialize, Serialize};

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
pub(super) const DOT_WEIGHTS: u64 = 2048;

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

    pub(super) fn sample(&self, rng: &mut ChaCha8Rng) -> f64 {
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
