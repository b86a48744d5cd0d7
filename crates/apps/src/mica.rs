//! MICA, the key-value store (`sdk/programs/mica*`, message format in
//! `sdk/programs/mica/README.md`), as its clients see it.
//!
//! Requests (words of 8 bytes, little-endian):
//!
//! | word | GET (32 B) | SET (32 B + value) |
//! |---|---|---|
//! | 0 | tag | tag |
//! | 1 | [`OP_GET`] | [`OP_SET`] |
//! | 2, 3 | key (16 B) | key |
//! | 4.. | | value |
//!
//! Replies: `[tag, status]` (16 B) with status [`STATUS_OK`] (SET done),
//! [`STATUS_NOT_FOUND`] (GET of a missing key), [`STATUS_MALFORMED`] (an
//! unknown opcode or a length that does not fit the opcode) or
//! [`STATUS_FULL`] (SET of a new key with the log full); a GET that hits is
//! `[tag, STATUS_OK, value...]` (16 B + the value's length).
//!
//! The store holds `pairs` keys at start: key `i` is [`key_words`]`(i)`,
//! its value `value_bytes` of [`value_word`]`(i, 0, j)`. A SET writes
//! version `v >= 1` of the value (`value_word(i, v, j)`), so a GET's reply
//! names the version it returns in its first value word, and the oracle
//! checks it is one the store may hold: not older than the newest SET
//! acknowledged before the GET was sent, not newer than the newest SET
//! sent. Each client of a cluster uses its own keys (`i % clients ==
//! client`); with several servers, key `i` lives on server `i % servers`.

use crate::{fractions, invalid, App, AppContext, AppError, AppRng, Request, Verdict};
use rand::Rng;
use serde::{Deserialize, Serialize};

pub const OP_GET: u64 = 0;
pub const OP_SET: u64 = 1;
pub const STATUS_OK: u64 = 0;
pub const STATUS_NOT_FOUND: u64 = 1;
pub const STATUS_MALFORMED: u64 = 2;
pub const STATUS_FULL: u64 = 3;
/// Bytes of a request before the value: tag, opcode, 16-byte key.
pub const REQUEST_HEADER_BYTES: u16 = 32;
/// Bytes of a reply before the value: tag, status.
pub const REPLY_HEADER_BYTES: u16 = 16;
/// The longest value the programs store.
pub const MAX_VALUE_BYTES: u32 = 1024;

/// The 16-byte key number `i`.
pub const fn key_words(i: u64) -> [u64; 2] {
    [crate::splitmix64(2 * i), crate::splitmix64(2 * i + 1)]
}

/// Word `j` of version `version` of key `i`'s value: word 0 names the key
/// and the version (`i << 32 | version`), the others are derived from it.
pub const fn value_word(i: u64, version: u32, j: u64) -> u64 {
    let base = (i << 32) | version as u64;
    base.wrapping_add(j.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// MICA's workload (`[load] app = { kind = "mica", ... }`). `pairs` and
/// `value_bytes` must be the program's (10000 and 512 for
/// `sdk/programs/mica*`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MicaConfig {
    /// Keys the store holds at start (keys `0..pairs`).
    pub pairs: u32,
    /// Value length in bytes (a multiple of 8, at most [`MAX_VALUE_BYTES`]).
    pub value_bytes: u32,
    /// Fraction of requests that are GETs (the rest are SETs); keys uniform.
    pub get_fraction: f64,
    /// Fraction of GETs for keys the store does not hold (`pairs..2 pairs`):
    /// the reply must be [`STATUS_NOT_FOUND`].
    pub missing_fraction: f64,
    /// Fraction of requests that are malformed (an unknown opcode, a
    /// truncated GET, a SET without a value): the reply must be
    /// [`STATUS_MALFORMED`].
    pub malformed_fraction: f64,
    /// The context the program serves on.
    pub context: u16,
}

impl Default for MicaConfig {
    fn default() -> Self {
        MicaConfig {
            pairs: 10_000,
            value_bytes: 512,
            get_fraction: 0.5,
            missing_fraction: 0.0,
            malformed_fraction: 0.0,
            context: 0,
        }
    }
}

impl MicaConfig {
    pub fn validate(&self) -> Result<(), AppError> {
        if self.pairs == 0 || self.pairs > 1 << 24 {
            return Err(invalid("pairs", self.pairs, "must be in 1..=16777216"));
        }
        if self.value_bytes == 0
            || !self.value_bytes.is_multiple_of(8)
            || self.value_bytes > MAX_VALUE_BYTES
        {
            return Err(invalid(
                "value_bytes",
                self.value_bytes,
                "must be a positive multiple of 8, at most 1024",
            ));
        }
        fractions([
            ("get_fraction", self.get_fraction),
            ("missing_fraction", self.missing_fraction),
            ("malformed_fraction", self.malformed_fraction),
        ])
    }

    pub fn max_request_bytes(&self) -> u16 {
        REQUEST_HEADER_BYTES + self.value_bytes as u16
    }

    pub fn mean_request_bytes(&self) -> f64 {
        REQUEST_HEADER_BYTES as f64 + (1.0 - self.get_fraction) * self.value_bytes as f64
    }
}

/// The kinds of request, kept in the request's note (bits 62..64).
const KIND_GET: u64 = 0;
const KIND_SET: u64 = 1;
const KIND_MISSING: u64 = 2;
const KIND_MALFORMED: u64 = 3;

/// The client side of MICA with its oracle.
pub struct MicaClient {
    cfg: MicaConfig,
    ctx: AppContext,
    /// Per key this client owns (index `i / clients`): the newest version
    /// sent and the newest acknowledged.
    sent: Vec<u32>,
    acked: Vec<u32>,
}

impl MicaClient {
    pub fn new(cfg: MicaConfig, ctx: AppContext) -> MicaClient {
        let clients = ctx.clients.max(1) as u64;
        let owned = (cfg.pairs as u64)
            .saturating_sub(ctx.client as u64)
            .div_ceil(clients);
        MicaClient {
            cfg,
            ctx,
            sent: vec![0; owned as usize],
            acked: vec![0; owned as usize],
        }
    }

    fn clients(&self) -> u64 {
        self.ctx.clients.max(1) as u64
    }

    /// A key this client owns: `(global index, local slot)`.
    fn owned_key(&self, rng: &mut AppRng) -> (u64, usize) {
        let slot = rng.random_range(0..self.sent.len().max(1));
        (self.ctx.client as u64 + slot as u64 * self.clients(), slot)
    }

    fn server_of(&self, key: u64) -> usize {
        (key % self.ctx.servers.max(1) as u64) as usize
    }
}

fn note(kind: u64, slot: usize, version: u32) -> u64 {
    (kind << 62) | ((slot as u64) << 32) | version as u64
}

impl App for MicaClient {
    fn name(&self) -> &'static str {
        "mica"
    }

    fn next_request(&mut self, tag: u64, rng: &mut AppRng) -> Request {
        let ctx = self.cfg.context;
        if self.sent.is_empty() || rng.random::<f64>() < self.cfg.malformed_fraction {
            let key = key_words(rng.random_range(0..self.cfg.pairs as u64));
            let server = rng.random_range(0..self.ctx.servers.max(1));
            let n = note(KIND_MALFORMED, 0, 0);
            return match rng.random_range(0..3) {
                // An unknown opcode.
                0 => Request::words(server, ctx, vec![tag, 7, key[0], key[1]], n),
                // A GET cut short (no second key word).
                1 => Request::words(server, ctx, vec![tag, OP_GET, key[0]], n),
                // A SET without a value.
                _ => Request::words(server, ctx, vec![tag, OP_SET, key[0], key[1]], n),
            };
        }
        if rng.random::<f64>() < self.cfg.get_fraction {
            if rng.random::<f64>() < self.cfg.missing_fraction {
                let i = self.cfg.pairs as u64 + rng.random_range(0..self.cfg.pairs as u64);
                let k = key_words(i);
                let server = self.server_of(i);
                return Request::words(
                    server,
                    ctx,
                    vec![tag, OP_GET, k[0], k[1]],
                    note(KIND_MISSING, 0, 0),
                );
            }
            let (i, slot) = self.owned_key(rng);
            let k = key_words(i);
            Request::words(
                self.server_of(i),
                ctx,
                vec![tag, OP_GET, k[0], k[1]],
                note(KIND_GET, slot, self.acked[slot]),
            )
        } else {
            let (i, slot) = self.owned_key(rng);
            self.sent[slot] += 1;
            let v = self.sent[slot];
            let k = key_words(i);
            let words = self.cfg.value_bytes as u64 / 8;
            let mut p = Vec::with_capacity(4 + words as usize);
            p.extend_from_slice(&[tag, OP_SET, k[0], k[1]]);
            p.extend((0..words).map(|j| value_word(i, v, j)));
            Request::words(self.server_of(i), ctx, p, note(KIND_SET, slot, v))
        }
    }

    fn check(&mut self, req: &Request, reply: &[u64], len: u16) -> Verdict {
        let kind = req.note >> 62;
        let slot = ((req.note >> 32) & 0x3FFF_FFFF) as usize;
        let version = req.note as u32;
        let key = self.ctx.client as u64 + slot as u64 * self.clients();
        let tag = req.payload[0];
        let status_only = |want: u64, what: &str| {
            if len == REPLY_HEADER_BYTES && reply.len() == 2 && reply[1] == want {
                Verdict::Ok
            } else {
                Verdict::Wrong(format!(
                    "mica request {tag} ({what}): expected [tag, status {want}] (16 B), got {:x?} ({len} B)",
                    &reply[..reply.len().min(4)]
                ))
            }
        };
        match kind {
            KIND_MALFORMED => status_only(STATUS_MALFORMED, "malformed"),
            KIND_MISSING => status_only(STATUS_NOT_FOUND, "GET of a missing key"),
            KIND_SET => {
                let v = status_only(STATUS_OK, "SET");
                if v == Verdict::Ok {
                    self.acked[slot] = self.acked[slot].max(version);
                }
                v
            }
            _ => {
                let (lo, hi) = (version, self.sent[slot]);
                let want_len = REPLY_HEADER_BYTES as u32 + self.cfg.value_bytes;
                let wrong = |why: String| {
                    Verdict::Wrong(format!(
                        "mica request {tag} (GET key {key}, versions {lo}..={hi}): {why}; got {:x?} ({len} B)",
                        &reply[..reply.len().min(4)]
                    ))
                };
                if len as u32 != want_len || reply.len() as u32 != want_len / 8 {
                    return wrong(format!("expected {want_len} B"));
                }
                if reply[1] != STATUS_OK {
                    return wrong(format!("expected status {STATUS_OK}"));
                }
                let got = reply[2];
                let got_version = got as u32;
                if got >> 32 != key || got_version < lo || got_version > hi {
                    return wrong("a value of another key or a version it cannot hold".into());
                }
                match (0..self.cfg.value_bytes as u64 / 8)
                    .find(|&j| reply[2 + j as usize] != value_word(key, got_version, j))
                {
                    Some(j) => wrong(format!(
                        "value word {j} of version {got_version} is {:#x}, expected {:#x}",
                        reply[2 + j as usize],
                        value_word(key, got_version, j)
                    )),
                    None => Verdict::Ok,
                }
            }
        }
    }
}

/// The store the programs hold, natively: for tests of the oracle and as a
/// reference model (`reply` is what a correct server answers).
pub struct MicaModel {
    values: std::collections::HashMap<[u64; 2], Vec<u64>>,
}

impl MicaModel {
    /// The store as the programs preload it.
    pub fn preloaded(cfg: &MicaConfig) -> MicaModel {
        let words = cfg.value_bytes as u64 / 8;
        MicaModel {
            values: (0..cfg.pairs as u64)
                .map(|i| {
                    (
                        key_words(i),
                        (0..words).map(|j| value_word(i, 0, j)).collect(),
                    )
                })
                .collect(),
        }
    }

    /// The reply to `request` (`len` bytes), applying it; `(words, len)`.
    pub fn reply(&mut self, request: &[u64], len: u16) -> (Vec<u64>, u16) {
        let tag = request.first().copied().unwrap_or(0);
        let status = |s| (vec![tag, s], REPLY_HEADER_BYTES);
        if len < REQUEST_HEADER_BYTES || request.len() < 4 {
            return status(STATUS_MALFORMED);
        }
        let key = [request[2], request[3]];
        match request[1] {
            OP_GET if len == REQUEST_HEADER_BYTES => match self.values.get(&key) {
                Some(v) => {
                    let mut r = vec![tag, STATUS_OK];
                    r.extend_from_slice(v);
                    let n = r.len() as u16 * 8;
                    (r, n)
                }
                None => status(STATUS_NOT_FOUND),
            },
            OP_SET
                if len > REQUEST_HEADER_BYTES
                    && (len - REQUEST_HEADER_BYTES) as u32 <= MAX_VALUE_BYTES
                    && len.is_multiple_of(8) =>
            {
                self.values.insert(key, request[4..].to_vec());
                status(STATUS_OK)
            }
            _ => status(STATUS_MALFORMED),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn run(cfg: MicaConfig, n: u64, corrupt: Option<u64>) -> (u64, Option<String>) {
        let mut model = MicaModel::preloaded(&cfg);
        let mut app = MicaClient::new(cfg, AppContext::SINGLE);
        let mut rng = AppRng::seed_from_u64(3);
        let mut wrong = 0;
        let mut first = None;
        for tag in 0..n {
            let req = app.next_request(tag, &mut rng);
            let (mut r, len) = model.reply(&req.payload, req.len);
            if corrupt == Some(tag) {
                let last = r.len() - 1;
                r[last] ^= 1;
            }
            if let Verdict::Wrong(w) = app.check(&req, &r, len) {
                wrong += 1;
                first.get_or_insert(w);
            }
        }
        (wrong, first)
    }

    #[test]
    fn a_correct_store_passes_every_check() {
        let cfg = MicaConfig {
            pairs: 50,
            missing_fraction: 0.2,
            malformed_fraction: 0.1,
            ..MicaConfig::default()
        };
        assert_eq!(run(cfg, 5000, None), (0, None));
    }

    #[test]
    fn the_oracle_catches_a_wrong_reply() {
        let cfg = MicaConfig {
            pairs: 50,
            ..MicaConfig::default()
        };
        for bad in [0, 1, 7, 400] {
            let (wrong, first) = run(cfg.clone(), 500, Some(bad));
            assert_eq!(wrong, 1, "corrupting reply {bad}");
            assert!(first.unwrap().contains(&format!("request {bad} ")));
        }
    }

    #[test]
    fn a_stale_value_is_caught() {
        let cfg = MicaConfig {
            pairs: 1,
            ..MicaConfig::default()
        };
        let mut app = MicaClient::new(cfg.clone(), AppContext::SINGLE);
        let mut model = MicaModel::preloaded(&cfg);
        let stale = model.reply(&[0, OP_GET, key_words(0)[0], key_words(0)[1]], 32);
        let mut rng = AppRng::seed_from_u64(1);
        let mut tag = 0;
        // Find a SET, apply it, acknowledge it; a later GET must not see version 0.
        loop {
            let r = app.next_request(tag, &mut rng);
            tag += 1;
            if r.payload[1] == OP_SET {
                let (rep, len) = model.reply(&r.payload, r.len);
                assert_eq!(app.check(&r, &rep, len), Verdict::Ok);
                break;
            }
            let (rep, len) = model.reply(&r.payload, r.len);
            assert_eq!(app.check(&r, &rep, len), Verdict::Ok);
        }
        loop {
            let r = app.next_request(tag, &mut rng);
            tag += 1;
            if r.payload[1] == OP_GET {
                let mut rep = stale.0.clone();
                rep[0] = r.payload[0];
                assert!(matches!(app.check(&r, &rep, stale.1), Verdict::Wrong(_)));
                break;
            }
        }
    }

    #[test]
    fn clients_own_disjoint_keys_and_servers_shard_them() {
        let cfg = MicaConfig {
            pairs: 100,
            get_fraction: 0.0,
            ..MicaConfig::default()
        };
        let ctx = |client| AppContext {
            client,
            clients: 3,
            servers: 2,
        };
        let mut rng = AppRng::seed_from_u64(9);
        for c in 0..3 {
            let mut app = MicaClient::new(cfg.clone(), ctx(c));
            for tag in 0..200 {
                let r = app.next_request(tag, &mut rng);
                let i = r.payload[4] >> 32;
                assert_eq!(i % 3, c as u64);
                assert!(i < 100);
                assert_eq!(r.server, (i % 2) as usize);
            }
        }
    }
}
