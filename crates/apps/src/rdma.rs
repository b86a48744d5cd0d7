//! One-sided RDMA in software (`sdk/programs/rdma_server`, message format
//! in its README), as its client sees it: read, write, compare-and-swap,
//! fetch-and-add and indirect read on the server's 32 KB region (nanoPU
//! §4.1, §5.3, Table 2).
//!
//! The oracle is a copy of the region ([`RdmaModel`]). The server is one
//! core serving requests in arrival order, and requests reach it in the
//! order they are sent (one link, one switch, no loss), so the model
//! applies each request when it is made and keeps the reply it expects
//! until the reply comes.

use crate::{fractions, invalid, App, AppContext, AppError, AppRng, Request, Verdict};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

pub const OP_READ: u64 = 1;
pub const OP_WRITE: u64 = 2;
pub const OP_CAS: u64 = 3;
pub const OP_FAA: u64 = 4;
pub const OP_INDIRECT_READ: u64 = 5;
pub const STATUS_OK: u64 = 0;
pub const STATUS_BAD_ADDRESS: u64 = 1;
pub const STATUS_MALFORMED: u64 = 2;

/// Words of the server's region (32 KB).
pub const REGION_WORDS: u64 = 4096;
/// Words `0..POINTER_WORDS` hold pointers at start (for indirect reads).
pub const POINTER_WORDS: u64 = 256;
/// Most words one read or write moves (512 B).
pub const MAX_WORDS: u64 = 64;

/// Word `i` of the region as the server initializes it.
pub const fn initial_word(i: u64) -> u64 {
    if i < POINTER_WORDS {
        (POINTER_WORDS + (i * 97) % (REGION_WORDS - POINTER_WORDS - MAX_WORDS)) * 8
    } else {
        i.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

/// Which operations a client issues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RdmaOps {
    Read,
    Write,
    Cas,
    Faa,
    IndirectRead,
    /// All five, uniformly.
    Mix,
}

impl RdmaOps {
    pub const EACH: [RdmaOps; 5] = [
        RdmaOps::Read,
        RdmaOps::Write,
        RdmaOps::Cas,
        RdmaOps::Faa,
        RdmaOps::IndirectRead,
    ];

    /// The name in reports and summary keys (`rdma-read-p50-ns`, ...).
    pub fn name(self) -> &'static str {
        match self {
            RdmaOps::Read => "read",
            RdmaOps::Write => "write",
            RdmaOps::Cas => "cas",
            RdmaOps::Faa => "faa",
            RdmaOps::IndirectRead => "indirect",
            RdmaOps::Mix => "mix",
        }
    }
}

/// The RDMA workload (`[load] app = { kind = "rdma", ops = "read" }`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RdmaConfig {
    pub ops: RdmaOps,
    /// Words a read, indirect read or write moves (1..=64).
    pub words: u64,
    /// Fraction of requests that are wrong on purpose (an unknown op, an
    /// address outside the region, a length that does not fit the op):
    /// the reply must be the error status.
    pub malformed_fraction: f64,
    /// The context the program serves on.
    pub context: u16,
}

impl Default for RdmaConfig {
    fn default() -> Self {
        RdmaConfig {
            ops: RdmaOps::Mix,
            words: 1,
            malformed_fraction: 0.0,
            context: 0,
        }
    }
}

impl RdmaConfig {
    pub fn validate(&self) -> Result<(), AppError> {
        if !(1..=MAX_WORDS).contains(&self.words) {
            return Err(invalid("words", self.words, "must be in 1..=64"));
        }
        fractions([("malformed_fraction", self.malformed_fraction)])
    }

    pub fn max_request_bytes(&self) -> u16 {
        (8 * (4 + self.words)).max(40) as u16
    }

    pub fn mean_request_bytes(&self) -> f64 {
        match self.ops {
            RdmaOps::Write => (8 * (4 + self.words)) as f64,
            RdmaOps::Cas => 40.0,
            RdmaOps::Mix => (32.0 * 3.0 + 40.0 + (8 * (4 + self.words)) as f64) / 5.0,
            _ => 32.0,
        }
    }
}

/// The server's region, natively.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RdmaModel {
    pub region: Vec<u64>,
}

impl Default for RdmaModel {
    fn default() -> Self {
        RdmaModel {
            region: (0..REGION_WORDS).map(initial_word).collect(),
        }
    }
}

impl RdmaModel {
    /// Index of the first of `n` aligned words at byte offset `addr`.
    fn index(addr: u64, n: u64) -> Option<usize> {
        let i = addr / 8;
        (addr.is_multiple_of(8)
            && (1..=MAX_WORDS).contains(&n)
            && i < REGION_WORDS
            && n <= REGION_WORDS - i)
            .then_some(i as usize)
    }

    /// What the server answers to `request` (all its words sent), applying it.
    pub fn reply(&mut self, request: &[u64]) -> Vec<u64> {
        let id = request.first().copied().unwrap_or(0);
        if request.len() < 4 {
            return vec![id, STATUS_MALFORMED];
        }
        let (op, addr, arg, rest) = (request[1], request[2], request[3], &request[4..]);
        let status = |s| vec![id, s];
        match op {
            OP_READ | OP_INDIRECT_READ if rest.is_empty() => {
                let start = match Self::index(addr, 1) {
                    Some(p) if op == OP_INDIRECT_READ => Self::index(self.region[p], arg),
                    Some(_) => Self::index(addr, arg),
                    None => None,
                };
                match start {
                    Some(i) => {
                        let mut r = vec![id, STATUS_OK];
                        r.extend_from_slice(&self.region[i..i + arg as usize]);
                        r
                    }
                    None => status(STATUS_BAD_ADDRESS),
                }
            }
            OP_WRITE if arg != 0 && rest.len() as u64 == arg => match Self::index(addr, arg) {
                Some(i) => {
                    self.region[i..i + arg as usize].copy_from_slice(rest);
                    status(STATUS_OK)
                }
                None => status(STATUS_BAD_ADDRESS),
            },
            OP_CAS if rest.len() == 1 => match Self::index(addr, 1) {
                Some(i) => {
                    let old = self.region[i];
                    if old == arg {
                        self.region[i] = rest[0];
                    }
                    vec![id, STATUS_OK, old]
                }
                None => status(STATUS_BAD_ADDRESS),
            },
            OP_FAA if rest.is_empty() => match Self::index(addr, 1) {
                Some(i) => {
                    let old = self.region[i];
                    self.region[i] = old.wrapping_add(arg);
                    vec![id, STATUS_OK, old]
                }
                None => status(STATUS_BAD_ADDRESS),
            },
            _ => status(STATUS_MALFORMED),
        }
    }
}

/// The client side of the RDMA server with its oracle.
pub struct RdmaClient {
    cfg: RdmaConfig,
    model: RdmaModel,
    /// The reply each outstanding request must get, by tag.
    expected: HashMap<u64, Vec<u64>>,
}

impl RdmaClient {
    pub fn new(cfg: RdmaConfig, _ctx: AppContext) -> RdmaClient {
        RdmaClient {
            cfg,
            model: RdmaModel::default(),
            expected: HashMap::new(),
        }
    }

    fn data_addr(&self, rng: &mut AppRng, n: u64) -> u64 {
        8 * rng.random_range(POINTER_WORDS..=REGION_WORDS - n)
    }

    fn request(&self, op: RdmaOps, tag: u64, rng: &mut AppRng) -> Vec<u64> {
        let n = self.cfg.words;
        match op {
            RdmaOps::Read => vec![tag, OP_READ, 8 * rng.random_range(0..=REGION_WORDS - n), n],
            RdmaOps::Write => {
                let mut p = vec![tag, OP_WRITE, self.data_addr(rng, n), n];
                p.extend((0..n).map(|_| rng.random::<u64>()));
                p
            }
            RdmaOps::Cas => {
                let addr = self.data_addr(rng, 1);
                let current = self.model.region[addr as usize / 8];
                // Half of them succeed.
                let expected = if rng.random::<bool>() {
                    current
                } else {
                    current ^ 1
                };
                vec![tag, OP_CAS, addr, expected, rng.random()]
            }
            RdmaOps::Faa => vec![
                tag,
                OP_FAA,
                self.data_addr(rng, 1),
                rng.random_range(1..1 << 20),
            ],
            RdmaOps::IndirectRead => {
                vec![
                    tag,
                    OP_INDIRECT_READ,
                    8 * rng.random_range(0..POINTER_WORDS),
                    n,
                ]
            }
            RdmaOps::Mix => unreachable!("mix picks an op"),
        }
    }

    fn malformed(tag: u64, rng: &mut AppRng) -> Vec<u64> {
        match rng.random_range(0..4) {
            0 => vec![tag, 9, 0, 1],
            1 => vec![tag, OP_READ, 8 * REGION_WORDS, 1],
            2 => vec![tag, OP_WRITE, 8 * POINTER_WORDS, 2, 5],
            _ => vec![tag, OP_FAA, 3, 1],
        }
    }
}

impl App for RdmaClient {
    fn name(&self) -> &'static str {
        "rdma"
    }

    fn next_request(&mut self, tag: u64, rng: &mut AppRng) -> Request {
        let payload = if rng.random::<f64>() < self.cfg.malformed_fraction {
            Self::malformed(tag, rng)
        } else {
            let op = match self.cfg.ops {
                RdmaOps::Mix => RdmaOps::EACH[rng.random_range(0..RdmaOps::EACH.len())],
                op => op,
            };
            self.request(op, tag, rng)
        };
        self.expected.insert(tag, self.model.reply(&payload));
        Request::words(0, self.cfg.context, payload, 0)
    }

    fn check(&mut self, req: &Request, reply: &[u64], len: u16) -> Verdict {
        let tag = req.payload[0];
        let Some(want) = self.expected.remove(&tag) else {
            return Verdict::Wrong(format!("rdma request {tag}: a second reply"));
        };
        if reply == want.as_slice() && len as usize == 8 * want.len() {
            Verdict::Ok
        } else {
            Verdict::Wrong(format!(
                "rdma request {tag} (op {}, addr {:#x}): expected {:x?}, got {:x?} ({len} B)",
                req.payload[1],
                req.payload[2],
                &want[..want.len().min(4)],
                &reply[..reply.len().min(4)]
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn run(cfg: RdmaConfig, n: u64, corrupt: Option<u64>) -> u64 {
        let mut server = RdmaModel::default();
        let mut app = RdmaClient::new(cfg, AppContext::SINGLE);
        let mut rng = AppRng::seed_from_u64(5);
        let mut wrong = 0;
        for tag in 0..n {
            let req = app.next_request(tag, &mut rng);
            let mut r = server.reply(&req.payload);
            if corrupt == Some(tag) {
                let last = r.len() - 1;
                r[last] ^= 1 << 40;
            }
            let len = 8 * r.len() as u16;
            if let Verdict::Wrong(_) = app.check(&req, &r, len) {
                wrong += 1;
            }
        }
        wrong
    }

    #[test]
    fn a_correct_server_passes_and_a_wrong_reply_is_caught() {
        let cfg = RdmaConfig {
            malformed_fraction: 0.1,
            words: 2,
            ..RdmaConfig::default()
        };
        assert_eq!(run(cfg.clone(), 3000, None), 0);
        for bad in [0, 3, 999] {
            assert_eq!(
                run(cfg.clone(), 1000, Some(bad)),
                1,
                "corrupting reply {bad}"
            );
        }
    }

    #[test]
    fn the_model_follows_the_readme() {
        let mut m = RdmaModel::default();
        assert_eq!(m.reply(&[1, OP_FAA, 8 * 300, 5]), [1, 0, initial_word(300)]);
        assert_eq!(
            m.reply(&[2, OP_READ, 8 * 300, 1]),
            [2, 0, initial_word(300) + 5]
        );
        let cur = initial_word(300) + 5;
        assert_eq!(m.reply(&[3, OP_CAS, 8 * 300, cur, 7]), [3, 0, cur]);
        assert_eq!(m.reply(&[4, OP_CAS, 8 * 300, cur, 9]), [4, 0, 7]);
        let p = initial_word(0);
        assert_eq!(
            m.reply(&[5, OP_INDIRECT_READ, 0, 1]),
            [5, 0, m.region[p as usize / 8]]
        );
        assert_eq!(
            m.reply(&[6, OP_READ, 8 * REGION_WORDS, 1]),
            [6, STATUS_BAD_ADDRESS]
        );
        assert_eq!(m.reply(&[7, OP_WRITE, 0, 2, 1]), [7, STATUS_MALFORMED]);
        assert_eq!(m.reply(&[8, 42, 0, 0]), [8, STATUS_MALFORMED]);
        assert_eq!(m.reply(&[9]), [9, STATUS_MALFORMED]);
    }
}
