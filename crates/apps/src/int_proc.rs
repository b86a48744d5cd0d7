//! INT processing (`sdk/programs/int_proc`, message format in its README),
//! as its clients see it: seeded in-band telemetry reports and an oracle
//! that replays the program's state machine.
//!
//! A report is `[tag, path, n, hop_1, ..., hop_n]` (24 + 8n bytes, 1 <= n
//! <= [`MAX_HOPS`]), each hop `switch | queue_depth << 16 | latency_ns <<
//! 32`. The program keeps, per path, an EWMA of the path's total latency
//! (`avg = (7 avg + total) >> 3`) and, per switch, the queue depth
//! accumulated since its last heavy-hitter alert. Reply: `[tag, ACK]`
//! (16 B); or `[tag, ALERT, flags, avg, switch]` (40 B) when the path's
//! average crossed [`LATENCY_THRESHOLD_NS`] upwards (flag
//! [`ALERT_LATENCY`]) or a switch's counter reached [`HEAVY_QUEUE`] (flag
//! [`ALERT_HEAVY`], `switch` the first such hop's, its counter reset; else
//! [`NO_SWITCH`]); or `[tag, MALFORMED]` for a bad length, path, hop count
//! or switch (no state changes).
//!
//! The state is the server's, so the oracle replays each report when it is
//! sent: one client and one serving core keep send order and processing
//! order the same. Each client of a cluster uses its own paths and
//! switches (`id % clients == client`).

use crate::exact::expect_words;
use crate::{fractions, invalid, splitmix64, App, AppContext, AppError, AppRng, Request, Verdict};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

pub const ACK: u64 = 0;
pub const ALERT: u64 = 1;
pub const MALFORMED: u64 = 2;
pub const ALERT_LATENCY: u64 = 1;
pub const ALERT_HEAVY: u64 = 2;
pub const NO_SWITCH: u64 = 0xffff;
/// The program's table sizes.
pub const PATHS: u64 = 256;
pub const SWITCHES: u64 = 64;
pub const MAX_HOPS: u64 = 8;
pub const LATENCY_THRESHOLD_NS: u64 = 3000;
pub const HEAVY_QUEUE: u64 = 1000;

/// The INT workload (`[load] app = { kind = "int", ... }`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntConfig {
    /// Paths reported on (at most 256, split among the clients).
    pub paths: u32,
    /// Probability that a hop is congested: its latency 1-4 us and its
    /// queue 50-200 packets (else 100-800 ns and 0-20 packets).
    pub congestion: f64,
    /// Fraction of reports that are malformed (reply `MALFORMED`).
    pub malformed_fraction: f64,
    /// The context the program serves on.
    pub context: u16,
}

impl Default for IntConfig {
    fn default() -> Self {
        IntConfig {
            paths: 256,
            congestion: 0.05,
            malformed_fraction: 0.0,
            context: 0,
        }
    }
}

impl IntConfig {
    pub fn validate(&self) -> Result<(), AppError> {
        if self.paths == 0 || self.paths as u64 > PATHS {
            return Err(invalid("paths", self.paths, "must be in 1..=256"));
        }
        fractions([
            ("congestion", self.congestion),
            ("malformed_fraction", self.malformed_fraction),
        ])
    }

    pub fn max_request_bytes(&self) -> u16 {
        24 + 8 * MAX_HOPS as u16
    }
}

/// The switches of `path`'s hops (2 to 5 of them; a path of client `c` of
/// `clients` crosses only switches `s` with `s % clients == c`).
pub fn path_switches(path: u64, client: usize, clients: usize) -> Vec<u64> {
    let mine = SWITCHES / clients as u64;
    let hops = 2 + path % 4;
    (0..hops)
        .map(|h| (splitmix64(path * 8 + h) % mine.max(1)) * clients as u64 + client as u64)
        .collect()
}

/// The program's state machine.
#[derive(Clone, Debug)]
pub struct IntState {
    path_latency: Vec<u64>,
    switch_queue: Vec<u64>,
}

impl Default for IntState {
    fn default() -> Self {
        IntState {
            path_latency: vec![0; PATHS as usize],
            switch_queue: vec![0; SWITCHES as usize],
        }
    }
}

impl IntState {
    /// Processes a well-formed report: the reply's words after the tag.
    pub fn report(&mut self, path: u64, hops: &[u64]) -> Vec<u64> {
        let total: u64 = hops.iter().map(|h| h >> 32).sum();
        let old = self.path_latency[path as usize];
        let avg = (7 * old + total) >> 3;
        self.path_latency[path as usize] = avg;
        let mut flags = 0;
        let mut heavy = NO_SWITCH;
        if old <= LATENCY_THRESHOLD_NS && avg > LATENCY_THRESHOLD_NS {
            flags |= ALERT_LATENCY;
        }
        for h in hops {
            let s = h & 0xffff;
            let q = &mut self.switch_queue[s as usize];
            *q += (h >> 16) & 0xffff;
            if *q >= HEAVY_QUEUE {
                *q = 0;
                if flags & ALERT_HEAVY == 0 {
                    flags |= ALERT_HEAVY;
                    heavy = s;
                }
            }
        }
        if flags == 0 {
            vec![ACK]
        } else {
            vec![ALERT, flags, avg, heavy]
        }
    }
}

/// The client side of INT processing with its oracle.
pub struct IntClient {
    cfg: IntConfig,
    ctx: AppContext,
    state: IntState,
    /// The reply each outstanding report must get, by tag.
    expected: HashMap<u64, Vec<u64>>,
    /// Reports answered with an alert so far (for tests).
    pub alerts: u64,
}

impl IntClient {
    pub fn new(cfg: IntConfig, ctx: AppContext) -> IntClient {
        IntClient {
            cfg,
            ctx,
            state: IntState::default(),
            expected: HashMap::new(),
            alerts: 0,
        }
    }

    fn hop(&self, switch: u64, rng: &mut AppRng) -> u64 {
        let (queue, latency) = if rng.random::<f64>() < self.cfg.congestion {
            (
                rng.random_range(50..=200u64),
                rng.random_range(1000..=4000u64),
            )
        } else {
            (rng.random_range(0..=20u64), rng.random_range(100..=800u64))
        };
        switch | queue << 16 | latency << 32
    }
}

impl App for IntClient {
    fn name(&self) -> &'static str {
        "int"
    }

    fn next_request(&mut self, tag: u64, rng: &mut AppRng) -> Request {
        let ctx = self.cfg.context;
        let clients = self.ctx.clients.max(1);
        let mine = (self.cfg.paths as usize / clients).max(1);
        let path = (rng.random_range(0..mine) * clients + self.ctx.client) as u64;
        let switches = path_switches(path, self.ctx.client, clients);
        let mut p = vec![tag, path, switches.len() as u64];
        p.extend(switches.iter().map(|&s| self.hop(s, rng)));
        if rng.random::<f64>() < self.cfg.malformed_fraction {
            match rng.random_range(0..3) {
                0 => p[1] = PATHS,
                1 => p[3] |= 0xffff,
                _ => p[2] += 1,
            }
            self.expected.insert(tag, vec![tag, MALFORMED]);
            return Request::words(0, ctx, p, 1);
        }
        let mut reply = vec![tag];
        reply.extend(self.state.report(path, &p[3..]));
        self.expected.insert(tag, reply);
        Request::words(0, ctx, p, 0)
    }

    fn check(&mut self, req: &Request, reply: &[u64], len: u16) -> Verdict {
        let tag = req.payload[0];
        let Some(expected) = self.expected.remove(&tag) else {
            return Verdict::Wrong(format!("int request {tag}: answered twice"));
        };
        if expected.get(1) == Some(&ALERT) {
            self.alerts += 1;
        }
        expect_words(
            "int",
            &format!("report {tag} (path {})", req.payload[1]),
            &expected,
            reply,
            len,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn the_state_machine_alerts_on_crossings_and_heavy_hitters() {
        let mut s = IntState::default();
        let hop = |sw: u64, q: u64, lat: u64| sw | q << 16 | lat << 32;
        // 4000 ns: the average goes 0 -> 500, no alert.
        assert_eq!(s.report(3, &[hop(1, 10, 4000)]), vec![ACK]);
        // Enough slow reports cross 3000 once; staying above is quiet.
        let mut crossings = 0;
        for _ in 0..40 {
            let r = s.report(3, &[hop(1, 0, 9000)]);
            if r[0] == ALERT {
                assert_eq!(r[1], ALERT_LATENCY);
                crossings += 1;
            }
        }
        assert_eq!(crossings, 1);
        // Switch 2 reaches 1000 queued packets on the fifth report of 200.
        let alerts: Vec<u64> = (0..5).map(|_| s.report(9, &[hop(2, 200, 1)])[0]).collect();
        assert_eq!(alerts, vec![ACK, ACK, ACK, ACK, ALERT]);
    }

    #[test]
    fn clients_use_disjoint_switches_and_a_wrong_reply_is_caught() {
        for p in 0..64 {
            assert!(path_switches(p, 1, 3)
                .iter()
                .all(|s| s % 3 == 1 && *s < SWITCHES));
        }
        let mut app = IntClient::new(IntConfig::default(), AppContext::SINGLE);
        let mut rng = AppRng::seed_from_u64(4);
        let mut oracle = IntState::default();
        let mut alerts = 0;
        for tag in 0..2000 {
            let r = app.next_request(tag, &mut rng);
            let mut reply = vec![tag];
            reply.extend(oracle.report(r.payload[1], &r.payload[3..]));
            alerts += (reply[1] == ALERT) as u32;
            let len = 8 * reply.len() as u16;
            if tag % 2 == 0 {
                assert_eq!(app.check(&r, &reply, len), Verdict::Ok);
            } else {
                reply[1] ^= 1;
                assert!(matches!(app.check(&r, &reply, len), Verdict::Wrong(_)));
            }
        }
        // The default workload alerts now and then, not always.
        assert!((20..1000).contains(&alerts), "{alerts}");
    }
}
