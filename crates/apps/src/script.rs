//! A scripted client for programs with their own message conventions: the
//! messages are described in the configuration, word by word.
//!
//! ```toml
//! [load]
//! count = 1000
//! [load.app]
//! kind = "script"
//! # sent once, in order, before the first request; no reply expected
//! first = [[0, "count", "start"]]
//! # every request's words
//! request = [1, "counter", "timestamp"]
//! # every reply's words ("echo": the request's word at that position)
//! reply = [1, "counter", "start"]
//! # the word of request and reply that holds "counter" (else replies are
//! # matched in order)
//! match_word = 1
//! ```
//!
//! This is the CONFIG/DATA exchange of the nanoPU artifact's
//! `lnic-loopback-throughput.c` (l-nic/chipyard, tag nanoPU-artifact-v1.0,
//! `tests-lnic/`): a CONFIG message `[0, number of messages, start
//! timestamp]`, then DATA messages `[1, ..., timestamp]` echoed with the
//! start timestamp in the last word (`sdk/programs/loopback_throughput`).
//!
//! Words of `first` and `request`: a number, or
//! - `"counter"`: the request's number (0, 1, ...; 0 in `first`),
//! - `"count"`: how many requests the client sends (`[load] count`),
//! - `"start"`: when the first message of `first` was sent (core cycles),
//! - `"timestamp"`: when this message is sent (core cycles at `core_mhz`),
//! - `"timestamp_ns"`: the same in nanoseconds,
//! - `"service"`: a service time in core cycles, drawn from `service`,
//! - `"random"`: a random word.
//!
//! Words of `reply`: a number, `"counter"`, `"count"`, `"start"`, `"echo"`
//! (the request's word at the same position) or `"any"`. A reply must have
//! exactly as many words.

use crate::{invalid, App, AppContext, AppError, AppRng, Request, Verdict};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// One word of a scripted message: a constant or a named field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Word {
    Const(u64),
    Field(String),
}

/// How a `"service"` word is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptService {
    /// Mean service time, ns.
    pub mean_ns: f64,
    /// Exponentially distributed (else fixed).
    pub exponential: bool,
}

impl Default for ScriptService {
    fn default() -> Self {
        ScriptService {
            mean_ns: 500.0,
            exponential: false,
        }
    }
}

/// The scripted client's messages (`[load] app = { kind = "script", ... }`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptConfig {
    /// Messages sent once, in order, before the first request; not answered.
    pub first: Vec<Vec<Word>>,
    /// The words of every request.
    pub request: Vec<Word>,
    /// The words of every reply; empty: the reply echoes the request.
    pub reply: Vec<Word>,
    /// The word (of request and reply) holding `"counter"`, to match replies
    /// with requests; none: replies come in order.
    pub match_word: Option<usize>,
    /// The context the program serves on.
    pub context: u16,
    /// The core clock timestamps and service times are counted in.
    pub core_mhz: u32,
    /// Service times of `"service"` words.
    pub service: ScriptService,
    /// How many requests the client sends: filled in from `[load] count`
    /// by the load generator (the value of `"count"` words).
    #[serde(skip)]
    pub count: u64,
}

impl Default for ScriptConfig {
    fn default() -> Self {
        ScriptConfig {
            first: Vec::new(),
            request: vec![Word::Field("counter".into())],
            reply: Vec::new(),
            match_word: None,
            context: 0,
            core_mhz: 3200,
            service: ScriptService::default(),
            count: 0,
        }
    }
}

const REQUEST_FIELDS: &[&str] = &[
    "counter",
    "count",
    "start",
    "timestamp",
    "timestamp_ns",
    "service",
    "random",
];
const REPLY_FIELDS: &[&str] = &["counter", "count", "start", "echo", "any"];

fn check_words(key: &'static str, words: &[Word], allowed: &[&str]) -> Result<(), AppError> {
    for w in words {
        if let Word::Field(f) = w {
            if !allowed.contains(&f.as_str()) {
                return Err(invalid(
                    key,
                    format!("{f:?}"),
                    &format!("not a number or one of {}", allowed.join(", ")),
                ));
            }
        }
    }
    Ok(())
}

impl ScriptConfig {
    pub fn validate(&self) -> Result<(), AppError> {
        for m in &self.first {
            if m.is_empty() || m.len() > 8191 {
                return Err(invalid("first", m.len(), "a message has 1 to 8191 words"));
            }
            check_words("first", m, REQUEST_FIELDS)?;
        }
        if self.request.is_empty() || self.request.len() > 8191 {
            return Err(invalid(
                "request",
                self.request.len(),
                "a request has 1 to 8191 words",
            ));
        }
        check_words("request", &self.request, REQUEST_FIELDS)?;
        check_words("reply", &self.reply, REPLY_FIELDS)?;
        if let Some(i) = self.match_word {
            let holds = |ws: &[Word]| matches!(ws.get(i), Some(Word::Field(f)) if f == "counter");
            let reply_holds = self.reply.is_empty() || holds(&self.reply);
            if !holds(&self.request) || !reply_holds {
                return Err(invalid(
                    "match_word",
                    i,
                    "request and reply must both hold \"counter\" at that word",
                ));
            }
        }
        if self.core_mhz == 0 {
            return Err(invalid("core_mhz", 0, "must be positive"));
        }
        if !(self.service.mean_ns >= 0.0 && self.service.mean_ns.is_finite()) {
            return Err(invalid(
                "service.mean_ns",
                self.service.mean_ns,
                "must be finite and non-negative",
            ));
        }
        Ok(())
    }

    pub fn max_request_bytes(&self) -> u16 {
        self.first
            .iter()
            .map(Vec::len)
            .chain([self.request.len()])
            .max()
            .unwrap_or(1) as u16
            * 8
    }
}

/// The scripted client.
pub struct ScriptClient {
    cfg: ScriptConfig,
    ctx: AppContext,
    /// When the first `first` message was sent, in core cycles.
    start_cycles: u64,
    /// Tags outstanding, oldest first (replies matched in order).
    in_order: VecDeque<u64>,
}

impl ScriptClient {
    pub fn new(cfg: ScriptConfig, ctx: AppContext) -> ScriptClient {
        ScriptClient {
            cfg,
            ctx,
            start_cycles: 0,
            in_order: VecDeque::new(),
        }
    }

    fn cycles(&self, now_ps: u64) -> u64 {
        (now_ps as u128 * self.cfg.core_mhz as u128 / 1_000_000) as u64
    }

    fn words(&self, ws: &[Word], counter: u64, now_ps: u64, rng: &mut AppRng) -> Vec<u64> {
        ws.iter()
            .map(|w| match w {
                Word::Const(c) => *c,
                Word::Field(f) => match f.as_str() {
                    "counter" => counter,
                    "count" => self.cfg.count,
                    "start" => self.start_cycles,
                    "timestamp" => self.cycles(now_ps),
                    "timestamp_ns" => now_ps / 1000,
                    "service" => {
                        let s = self.cfg.service;
                        let ns = if s.exponential && s.mean_ns > 0.0 {
                            -s.mean_ns * (1.0 - rng.random::<f64>()).ln()
                        } else {
                            s.mean_ns
                        };
                        (ns * self.cfg.core_mhz as f64 / 1000.0).round() as u64
                    }
                    _ => rng.random(),
                },
            })
            .collect()
    }
}

impl App for ScriptClient {
    fn name(&self) -> &'static str {
        "script"
    }

    fn preamble(&mut self, now_ps: u64, rng: &mut AppRng) -> Vec<Request> {
        self.start_cycles = self.cycles(now_ps);
        let server = 0;
        let first = std::mem::take(&mut self.cfg.first);
        let out = first
            .iter()
            .map(|m| Request::words(server, self.cfg.context, self.words(m, 0, now_ps, rng), 0))
            .collect();
        self.cfg.first = first;
        out
    }

    fn next_request(&mut self, tag: u64, rng: &mut AppRng) -> Request {
        self.next_request_at(tag, 0, rng)
    }

    fn next_request_at(&mut self, tag: u64, now_ps: u64, rng: &mut AppRng) -> Request {
        let payload = self.words(&self.cfg.request, tag, now_ps, rng);
        if self.cfg.match_word.is_none() {
            self.in_order.push_back(tag);
        }
        let server = (tag % self.ctx.servers.max(1) as u64) as usize;
        Request::words(server, self.cfg.context, payload, tag)
    }

    fn reply_tag(&self, reply: &[u64], _len: u16) -> Option<u64> {
        match self.cfg.match_word {
            Some(i) => reply.get(i).copied(),
            None => self.in_order.front().copied(),
        }
    }

    fn check(&mut self, req: &Request, reply: &[u64], len: u16) -> Verdict {
        if self.cfg.match_word.is_none() {
            self.in_order.pop_front();
        }
        let tag = req.note;
        let expected: Vec<Option<u64>> = if self.cfg.reply.is_empty() {
            req.payload.iter().map(|&w| Some(w)).collect()
        } else {
            self.cfg
                .reply
                .iter()
                .enumerate()
                .map(|(i, w)| match w {
                    Word::Const(c) => Some(*c),
                    Word::Field(f) => match f.as_str() {
                        "counter" => Some(tag),
                        "count" => Some(self.cfg.count),
                        "start" => Some(self.start_cycles),
                        "echo" => req.payload.get(i).copied(),
                        _ => None,
                    },
                })
                .collect()
        };
        let ok = len as usize == 8 * expected.len()
            && reply.len() == expected.len()
            && reply
                .iter()
                .zip(&expected)
                .all(|(r, e)| e.is_none_or(|e| *r == e));
        if ok {
            Verdict::Ok
        } else {
            Verdict::Wrong(format!(
                "script request {tag}: expected {:x?} ({} B; None = any), got {:x?} ({len} B)",
                &expected[..expected.len().min(6)],
                8 * expected.len(),
                &reply[..reply.len().min(6)]
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn loopback_throughput() -> ScriptConfig {
        let f = |s: &str| Word::Field(s.into());
        ScriptConfig {
            first: vec![vec![Word::Const(0), f("count"), f("start")]],
            request: vec![Word::Const(1), f("counter"), f("timestamp")],
            reply: vec![Word::Const(1), f("counter"), f("start")],
            match_word: Some(1),
            count: 10,
            ..ScriptConfig::default()
        }
    }

    #[test]
    fn messages_follow_the_script_and_replies_are_checked() {
        let mut app = ScriptClient::new(loopback_throughput(), AppContext::SINGLE);
        let mut rng = AppRng::seed_from_u64(1);
        let first = app.preamble(1_000_000, &mut rng); // 1 us: 3200 cycles
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].payload, vec![0, 10, 3200]);
        let r = app.next_request_at(4, 2_000_000, &mut rng);
        assert_eq!(r.payload, vec![1, 4, 6400]);
        assert_eq!(app.reply_tag(&[1, 4, 3200], 24), Some(4));
        assert_eq!(app.check(&r, &[1, 4, 3200], 24), Verdict::Ok);
        // The timestamp echoed instead of the start: wrong.
        assert!(matches!(
            app.check(&r, &[1, 4, 6400], 24),
            Verdict::Wrong(_)
        ));
        assert!(matches!(app.check(&r, &[1, 4], 16), Verdict::Wrong(_)));
    }

    #[test]
    fn bad_scripts_are_refused_naming_the_key() {
        let mut c = loopback_throughput();
        c.request.push(Word::Field("bogus".into()));
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("app.request"));
        let mut c = loopback_throughput();
        c.match_word = Some(0);
        assert!(c.validate().unwrap_err().to_string().contains("match_word"));
    }
}
