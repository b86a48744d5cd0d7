//! Chain replication (`sdk/programs/chain_server`, format in its README;
//! nanoPU Table 1), as its client sees it: writes go to the head (server
//! 0), reads to the tail (the last server); the tail answers both. The
//! oracle is [`crate::replicated_kv::KvOracle`].
//!
//! The client's server list must be the chain in order, head first
//! (`[[clients]] server = HEAD`, `servers = [MIDDLE..., TAIL]`).

use crate::replicated_kv::{KvOracle, READ_BYTES, STATUS_WRONG_NODE, WRITE_BYTES};
use crate::{invalid, App, AppContext, AppError, AppRng, Request, Verdict};
use serde::{Deserialize, Serialize};

/// The chain workload (`[load] app = { kind = "chain", ... }`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChainConfig {
    /// Keys written and read (keys `0..keys`, uniformly).
    pub keys: u32,
    /// Fraction of requests that are reads (the rest are writes).
    pub read_fraction: f64,
    /// The context the program serves on.
    pub context: u16,
}

impl Default for ChainConfig {
    fn default() -> Self {
        ChainConfig {
            keys: 1000,
            read_fraction: 0.0,
            context: 0,
        }
    }
}

impl ChainConfig {
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

pub(crate) fn validate_kv(keys: u32, read_fraction: f64) -> Result<(), AppError> {
    if keys == 0 || keys > crate::replicated_kv::MAX_KEYS {
        return Err(invalid(
            "keys",
            keys,
            "must be in 1..=2048 (what the programs hold)",
        ));
    }
    crate::fractions([("read_fraction", read_fraction)])?;
    Ok(())
}

pub(crate) fn mean_kv_request(read_fraction: f64) -> f64 {
    read_fraction * READ_BYTES as f64 + (1.0 - read_fraction) * WRITE_BYTES as f64
}

/// The client side of chain replication with its oracle.
pub struct ChainClient {
    cfg: ChainConfig,
    tail: usize,
    oracle: KvOracle,
}

impl ChainClient {
    pub fn new(cfg: ChainConfig, ctx: AppContext) -> ChainClient {
        ChainClient {
            oracle: KvOracle::new(cfg.keys, cfg.read_fraction),
            tail: ctx.servers.max(1) - 1,
            cfg,
        }
    }
}

impl App for ChainClient {
    fn name(&self) -> &'static str {
        "chain"
    }

    fn next_request(&mut self, tag: u64, rng: &mut AppRng) -> Request {
        self.oracle
            .next_request(tag, rng, 0, self.tail, self.cfg.context)
    }

    fn check(&mut self, req: &Request, reply: &[u64], len: u16) -> Verdict {
        if reply.get(1) == Some(&STATUS_WRONG_NODE) {
            // The client knows the roles: a redirection means the server
            // list is not the chain in order.
            return Verdict::Wrong(format!(
                "chain request {}: server {} says ask {:?} (is the client's server list the chain, head first?)",
                req.payload[0],
                req.server,
                reply.get(2).map(|ip| std::net::Ipv4Addr::from(*ip as u32))
            ));
        }
        self.oracle.check("chain", req, reply, len)
    }
}
