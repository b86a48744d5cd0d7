//! Raft (`sdk/programs/raft`, format in its README; nanoPU §5.3, Table 1),
//! as its client sees it: every request goes to the server it believes
//! leads; a server that does not lead answers `[tag, 4, leader IP, leader
//! index]` and the client re-sends the request there (or to the next
//! server when the leader is unknown); a request unanswered in time is
//! re-sent to the next server (the leader may have failed). The response
//! time runs from the first send, so a failover shows as a gap.
//!
//! The oracle is [`crate::replicated_kv::KvOracle`]: writes and reads go
//! through the log, so reads see every acknowledged write. A request
//! re-sent after a timeout may be applied twice (once from the failed
//! leader's log, once as re-sent); that is harmless while a key has one
//! write outstanding at a time, as with a closed-loop window of 1.
//!
//! The client's server list must be in the order of the servers' own
//! list (their arguments), so a leader index means the same to both.

use crate::chain::{mean_kv_request, validate_kv};
use crate::replicated_kv::{KvOracle, STATUS_WRONG_NODE, WRITE_BYTES};
use crate::{App, AppContext, AppError, AppRng, Request, Verdict};
use serde::{Deserialize, Serialize};

/// The Raft workload (`[load] app = { kind = "raft", ... }`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RaftConfig {
    /// Keys written and read (keys `0..keys`, uniformly).
    pub keys: u32,
    /// Fraction of requests that are reads (the rest are writes).
    pub read_fraction: f64,
    /// The context the program serves on.
    pub context: u16,
}

impl Default for RaftConfig {
    fn default() -> Self {
        RaftConfig {
            keys: 1000,
            read_fraction: 0.0,
            context: 0,
        }
    }
}

impl RaftConfig {
    pub fn validate(&self) -> Result<(), AppError> {
        validate_kv(self.keys, self.read_fraction)
    }

    pub fn max_request_bytes(&self) -> u16 {
        WRITE_BYTES
    }

    pub fn mean_request_bytes(&self) -> f64 {
        mean_kv_request(self.read_fraction)
    }
}

/// The client side of Raft with its oracle.
pub struct RaftClient {
    cfg: RaftConfig,
    servers: usize,
    /// The server believed to lead.
    leader: usize,
    oracle: KvOracle,
    /// Redirections and re-sends after a timeout (for reports).
    pub redirects: u64,
    pub timeouts: u64,
}

impl RaftClient {
    pub fn new(cfg: RaftConfig, ctx: AppContext) -> RaftClient {
        RaftClient {
            oracle: KvOracle::new(cfg.keys, cfg.read_fraction),
            servers: ctx.servers.max(1),
            leader: 0,
            cfg,
            redirects: 0,
            timeouts: 0,
        }
    }

    /// The server believed to lead.
    pub fn leader(&self) -> usize {
        self.leader
    }
}

impl App for RaftClient {
    fn name(&self) -> &'static str {
        "raft"
    }

    fn next_request(&mut self, tag: u64, rng: &mut AppRng) -> Request {
        self.oracle
            .next_request(tag, rng, self.leader, self.leader, self.cfg.context)
    }

    fn check(&mut self, req: &Request, reply: &[u64], len: u16) -> Verdict {
        if reply.get(1) == Some(&STATUS_WRONG_NODE) {
            if reply.len() != 4 || len != 32 {
                return Verdict::Wrong(format!(
                    "raft request {}: a redirection must be [tag, 4, leader ip, leader index], got {:x?}",
                    req.payload[0], reply
                ));
            }
            self.redirects += 1;
            self.leader = match usize::try_from(reply[3]) {
                Ok(i) if i < self.servers && i != req.server => i,
                // Unknown (an election is on), or itself: try the next.
                _ => (req.server + 1) % self.servers,
            };
            return Verdict::Retry {
                server: self.leader,
                context: self.cfg.context,
            };
        }
        self.leader = req.server;
        self.oracle.check("raft", req, reply, len)
    }

    fn on_timeout(&mut self, req: &Request, attempts: u32) -> Option<(usize, u16)> {
        // Every server, a few times over: the cluster is gone.
        if attempts as usize >= 4 * self.servers {
            return None;
        }
        self.timeouts += 1;
        self.leader = (req.server + 1) % self.servers;
        Some((self.leader, self.cfg.context))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replicated_kv::KvModel;
    use rand::SeedableRng;

    fn client() -> (RaftClient, AppRng) {
        let ctx = AppContext {
            servers: 3,
            ..AppContext::SINGLE
        };
        (
            RaftClient::new(RaftConfig::default(), ctx),
            AppRng::seed_from_u64(1),
        )
    }

    #[test]
    fn redirections_and_timeouts_lead_to_the_leader() {
        let (mut c, mut rng) = client();
        let req = c.next_request(0, &mut rng);
        assert_eq!(req.server, 0);
        // "Ask server 2."
        let v = c.check(&req, &[0, STATUS_WRONG_NODE, 0x0a00_0003, 2], 32);
        assert_eq!(
            v,
            Verdict::Retry {
                server: 2,
                context: 0
            }
        );
        // No leader known: the next one.
        let req2 = Request {
            server: 2,
            ..req.clone()
        };
        let v = c.check(&req2, &[0, STATUS_WRONG_NODE, 0, u64::MAX], 32);
        assert_eq!(
            v,
            Verdict::Retry {
                server: 0,
                context: 0
            }
        );
        // A timeout moves on too, and gives up after every server was
        // tried a few times.
        assert_eq!(c.on_timeout(&req2, 1), Some((0, 0)));
        assert_eq!(c.on_timeout(&req2, 12), None);
        // A malformed redirection is wrong.
        assert!(matches!(
            c.check(&req, &[0, STATUS_WRONG_NODE, 1], 24),
            Verdict::Wrong(_)
        ));
        // The answer of the leader is checked against the store.
        let mut store = KvModel::default();
        let reply = store.reply(&req.payload);
        assert_eq!(c.check(&req, &reply, 16), Verdict::Ok);
        assert_eq!(c.leader(), 0);
        assert!(matches!(c.check(&req, &[0, 3], 16), Verdict::Wrong(_)));
    }
}
