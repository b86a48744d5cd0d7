//! The load generator's connections, as NEBULA's protocol has them (NEBULA
//! §V-D and §VI): the client stands for many client nodes, each a
//! connection (a source context) with its own message ids and at most
//! `window` requests outstanding ("256 outstanding messages per node
//! pair"); a server out of receive buffer NACKs a request, and the client
//! sends it again after a backoff.
//!
//! [`Connections`] is the bookkeeping; [`crate::client::Client`] drives it
//! when `[load] connections` is set.

use nanopu_sim::{SimDuration, SimTime};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

/// `[load] connections`: see the module documentation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConnectionsConfig {
    /// Connections, source contexts `0..count`; each request picks one
    /// with room uniformly (NEBULA §VI: "a cluster size of 1024 servers").
    pub count: u32,
    /// Requests outstanding per connection at most (§VI: "256 outstanding
    /// messages per node pair"); a request finding no connection with
    /// room waits for one.
    pub window: u32,
    /// A NACKed request is sent again `backoff_ns` times its sends so far
    /// later (an assumption: the paper gives no client policy).
    pub backoff_ns: u64,
    /// Sends of a request before the client gives up on it (counted in
    /// the report's `gave_up` and `lost`).
    pub max_attempts: u32,
}

impl Default for ConnectionsConfig {
    fn default() -> Self {
        ConnectionsConfig {
            count: 1024,
            window: 256,
            backoff_ns: 1_000,
            max_attempts: 50,
        }
    }
}

impl ConnectionsConfig {
    /// Why the settings cannot work, if they cannot.
    pub fn problem(&self) -> Option<String> {
        if self.count == 0 || self.count > u16::MAX as u32 + 1 {
            return Some(format!(
                "count = {}: must be in 1..=65536 (source contexts)",
                self.count
            ));
        }
        if self.window == 0 || self.window > u16::MAX as u32 + 1 {
            return Some(format!(
                "window = {}: must be in 1..=65536 (message ids per connection)",
                self.window
            ));
        }
        if self.max_attempts == 0 {
            return Some("max_attempts = 0: must be at least 1".into());
        }
        if SimDuration::try_from_ns(self.backoff_ns.saturating_mul(self.max_attempts as u64))
            .is_err()
        {
            return Some(format!(
                "backoff_ns = {}: times max_attempts, too long for the simulated time base",
                self.backoff_ns
            ));
        }
        None
    }
}

/// A request's connection and its message id there.
pub type ConnId = (u16, u16);

/// The state of the connections. Requests are named by the client's keys.
pub(crate) struct Connections {
    pub cfg: ConnectionsConfig,
    next_tid: Vec<u16>,
    outstanding: Vec<u32>,
    /// The request on each (connection, message id) in flight.
    by_id: HashMap<ConnId, u64>,
    /// Requests waiting for a connection with room, oldest first.
    backlog: VecDeque<u64>,
    /// NACKed requests to send again, earliest first.
    resends: BinaryHeap<Reverse<(SimTime, u64)>>,
}

impl Connections {
    pub fn new(cfg: ConnectionsConfig) -> Connections {
        let n = cfg.count as usize;
        Connections {
            cfg,
            next_tid: vec![0; n],
            outstanding: vec![0; n],
            by_id: HashMap::new(),
            backlog: VecDeque::new(),
            resends: BinaryHeap::new(),
        }
    }

    /// A connection with room for request `key`, picked uniformly (a few
    /// tries), and its next message id; `None`: the request waits
    /// ([`Connections::next_waiting`]).
    pub fn open(&mut self, key: u64, rng: &mut ChaCha8Rng) -> Option<ConnId> {
        let n = self.cfg.count;
        for _ in 0..n.min(64) {
            let c = rng.random_range(0..n) as usize;
            if self.outstanding[c] < self.cfg.window {
                return Some(self.open_on(c as u16, key));
            }
        }
        self.backlog.push_back(key);
        None
    }

    fn open_on(&mut self, conn: u16, key: u64) -> ConnId {
        let c = conn as usize;
        let tid = self.next_tid[c];
        self.next_tid[c] = tid.wrapping_add(1);
        self.outstanding[c] += 1;
        self.by_id.insert((conn, tid), key);
        (conn, tid)
    }

    /// The request in flight as `id`.
    pub fn request(&self, id: ConnId) -> Option<u64> {
        self.by_id.get(&id).copied()
    }

    /// Request `id` is done (answered, lost or given up): its connection
    /// has room, taken by the oldest waiting request if there is one
    /// (returned with its id there).
    pub fn close(&mut self, id: ConnId) -> Option<(u64, ConnId)> {
        self.by_id.remove(&id)?;
        self.outstanding[id.0 as usize] -= 1;
        let key = self.backlog.pop_front()?;
        Some((key, self.open_on(id.0, key)))
    }

    /// Request `key`'s resend is due at `at`.
    pub fn resend_at(&mut self, at: SimTime, key: u64) {
        self.resends.push(Reverse((at, key)));
    }

    /// A request whose resend is due by `now`.
    pub fn due_resend(&mut self, now: SimTime) -> Option<u64> {
        match self.resends.peek() {
            Some(Reverse((at, _))) if *at <= now => self.resends.pop().map(|Reverse((_, k))| k),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_full_connection_takes_the_next_request_when_one_finishes() {
        let mut c = Connections::new(ConnectionsConfig {
            count: 1,
            window: 2,
            ..ConnectionsConfig::default()
        });
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        assert_eq!(c.open(10, &mut rng), Some((0, 0)));
        assert_eq!(c.open(11, &mut rng), Some((0, 1)));
        assert_eq!(c.open(12, &mut rng), None);
        assert_eq!(c.request((0, 1)), Some(11));
        assert_eq!(c.close((0, 0)), Some((12, (0, 2))));
        assert_eq!(c.request((0, 2)), Some(12));
        assert_eq!(c.close((0, 0)), None, "closed twice");
        assert_eq!(c.close((0, 1)), None, "nothing waits");
    }

    #[test]
    fn resends_come_due_in_time_order() {
        let mut c = Connections::new(ConnectionsConfig::default());
        let t = |ns| SimTime::ZERO + SimDuration::from_ns(ns);
        c.resend_at(t(30), 3);
        c.resend_at(t(10), 1);
        assert_eq!(c.due_resend(t(5)), None);
        assert_eq!(c.due_resend(t(30)), Some(1));
        assert_eq!(c.due_resend(t(30)), Some(3));
        assert_eq!(c.due_resend(t(40)), None);
    }

    #[test]
    fn settings_out_of_range_are_named() {
        let bad = |f: fn(&mut ConnectionsConfig)| {
            let mut c = ConnectionsConfig::default();
            f(&mut c);
            c.problem().expect("refused")
        };
        assert!(bad(|c| c.count = 0).starts_with("count = 0"));
        assert!(bad(|c| c.window = 0).starts_with("window = 0"));
        assert!(bad(|c| c.max_attempts = 0).starts_with("max_attempts = 0"));
        assert!(ConnectionsConfig::default().problem().is_none());
    }
}
