//! The packet classifier (`sdk/programs/classifier`, message format in its
//! README), as its clients see it: packet headers drawn from the rule set
//! (and some at random) and an oracle that classifies them by linear scan.
//!
//! The rule set is ClassBench-style and generated, not shipped:
//! [`Rule::generate`] makes rule `r` from `splitmix64(4r)`, `(4r + 1)`,
//! `(4r + 2)` with the program's integer arithmetic: source and destination
//! prefixes of length 32, 24, 16, 8 or 0 (weights 90, 90, 50, 20, 6 of 256),
//! protocol TCP (1/2), UDP (3/8) or any, source port any (3/4), 0-1023 or
//! 1024-65535, destination port one of 32 common ports (1/2), 1024-65535,
//! 0-1023 or any. The first (lowest-numbered) matching rule wins.
//!
//! Request `[tag, src_ip | dst_ip << 32, sport | dport << 16 | proto <<
//! 32]` (24 B). Reply `[tag, STATUS_OK, rule]` (24 B), `rule` the first
//! matching rule or [`NO_MATCH`]; or `[tag, STATUS_MALFORMED]` (16 B) for
//! another length or bits set above the protocol.

use crate::exact::expect_words;
use crate::{fractions, invalid, splitmix64, App, AppContext, AppError, AppRng, Request, Verdict};
use rand::Rng;
use serde::{Deserialize, Serialize};

pub const STATUS_OK: u64 = 0;
pub const STATUS_MALFORMED: u64 = 2;
pub const NO_MATCH: u64 = 0xffff_ffff;
/// The program's rule count.
pub const RULES: u32 = 100_000;
const PROTO_ANY: u8 = 0xff;
const PREFIX_LENS: [u32; 5] = [32, 24, 16, 8, 0];
const PREFIX_CUMULATIVE: [u64; 4] = [90, 180, 230, 250];
const COMMON_PORTS: [u16; 32] = [
    20, 21, 22, 23, 25, 53, 67, 69, 80, 110, 123, 137, 143, 161, 179, 389, 443, 445, 465, 514, 587,
    636, 993, 995, 1433, 1521, 3306, 3389, 5060, 5432, 8080, 8443,
];

/// The classifier workload (`[load] app = { kind = "classifier", ... }`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClassifierConfig {
    /// Rules in the set: the program's (100,000).
    pub rules: u32,
    /// Fraction of headers drawn uniformly at random (the rest are drawn
    /// inside a random rule, so they match it or an earlier one).
    pub random_fraction: f64,
    /// Fraction of requests that are malformed (reply `STATUS_MALFORMED`).
    pub malformed_fraction: f64,
    /// The context the program serves on.
    pub context: u16,
}

impl Default for ClassifierConfig {
    fn default() -> Self {
        ClassifierConfig {
            rules: RULES,
            random_fraction: 0.2,
            malformed_fraction: 0.0,
            context: 0,
        }
    }
}

impl ClassifierConfig {
    pub fn validate(&self) -> Result<(), AppError> {
        if self.rules == 0 || self.rules > 1_000_000 {
            return Err(invalid("rules", self.rules, "must be in 1..=1000000"));
        }
        fractions([
            ("random_fraction", self.random_fraction),
            ("malformed_fraction", self.malformed_fraction),
        ])
    }

    pub fn max_request_bytes(&self) -> u16 {
        24
    }
}

fn prefix_mask(len: u32) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len)
    }
}

/// One classification rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub src: u32,
    pub src_len: u32,
    pub dst: u32,
    pub dst_len: u32,
    /// 6, 17 or `0xff` (any).
    pub proto: u8,
    pub sport: (u16, u16),
    pub dport: (u16, u16),
}

impl Rule {
    /// Rule `r` of the generator (the program's `generate`).
    pub fn generate(r: u32) -> Rule {
        let r = r as u64;
        let (h0, h1, h2) = (
            splitmix64(4 * r),
            splitmix64(4 * r + 1),
            splitmix64(4 * r + 2),
        );
        let len = |byte: u64| PREFIX_LENS[PREFIX_CUMULATIVE.partition_point(|&c| c <= byte)];
        let (src_len, dst_len) = (len(h0 & 0xff), len((h0 >> 8) & 0xff));
        let proto = match (h0 >> 16) & 0xff {
            0..128 => 6,
            128..224 => 17,
            _ => PROTO_ANY,
        };
        let sport = match (h0 >> 24) & 0xff {
            0..192 => (0, 65535),
            192..224 => (0, 1023),
            _ => (1024, 65535),
        };
        let dport = match (h0 >> 32) & 0xff {
            0..128 => {
                let p = COMMON_PORTS[(h2 % 32) as usize];
                (p, p)
            }
            128..176 => (1024, 65535),
            176..208 => (0, 1023),
            _ => (0, 65535),
        };
        Rule {
            src: h1 as u32 & prefix_mask(src_len),
            src_len,
            dst: (h1 >> 32) as u32 & prefix_mask(dst_len),
            dst_len,
            proto,
            sport,
            dport,
        }
    }

    pub fn matches(&self, h: &Header) -> bool {
        h.src & prefix_mask(self.src_len) == self.src
            && h.dst & prefix_mask(self.dst_len) == self.dst
            && (self.proto == PROTO_ANY || self.proto == h.proto)
            && (self.sport.0..=self.sport.1).contains(&h.sport)
            && (self.dport.0..=self.dport.1).contains(&h.dport)
    }

    /// A random header inside the rule.
    fn sample(&self, rng: &mut AppRng) -> Header {
        let free = |len: u32| !prefix_mask(len);
        Header {
            src: self.src | (rng.random::<u32>() & free(self.src_len)),
            dst: self.dst | (rng.random::<u32>() & free(self.dst_len)),
            sport: rng.random_range(self.sport.0..=self.sport.1),
            dport: rng.random_range(self.dport.0..=self.dport.1),
            proto: if self.proto == PROTO_ANY {
                if rng.random() {
                    6
                } else {
                    17
                }
            } else {
                self.proto
            },
        }
    }
}

/// A packet's 5-tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
}

impl Header {
    pub fn words(&self) -> [u64; 2] {
        [
            self.src as u64 | (self.dst as u64) << 32,
            self.sport as u64 | (self.dport as u64) << 16 | (self.proto as u64) << 32,
        ]
    }

    fn from_words(w: &[u64]) -> Header {
        Header {
            src: w[0] as u32,
            dst: (w[0] >> 32) as u32,
            sport: w[1] as u16,
            dport: (w[1] >> 16) as u16,
            proto: (w[1] >> 32) as u8,
        }
    }
}

/// The rule set, classified by linear scan.
pub struct RuleSet {
    pub rules: Vec<Rule>,
}

impl RuleSet {
    pub fn new(n: u32) -> RuleSet {
        RuleSet {
            rules: (0..n).map(Rule::generate).collect(),
        }
    }

    /// The first rule matching `h`, or [`NO_MATCH`].
    pub fn classify(&self, h: &Header) -> u64 {
        self.rules
            .iter()
            .position(|r| r.matches(h))
            .map_or(NO_MATCH, |i| i as u64)
    }
}

/// The client side of the classifier with its oracle.
pub struct ClassifierClient {
    cfg: ClassifierConfig,
    ctx: AppContext,
    set: RuleSet,
}

impl ClassifierClient {
    pub fn new(cfg: ClassifierConfig, ctx: AppContext) -> ClassifierClient {
        let set = RuleSet::new(cfg.rules);
        ClassifierClient { cfg, ctx, set }
    }
}

impl App for ClassifierClient {
    fn name(&self) -> &'static str {
        "classifier"
    }

    fn next_request(&mut self, tag: u64, rng: &mut AppRng) -> Request {
        let server = rng.random_range(0..self.ctx.servers.max(1));
        let ctx = self.cfg.context;
        if rng.random::<f64>() < self.cfg.malformed_fraction {
            let p = if rng.random() {
                vec![tag, 0]
            } else {
                vec![tag, 0, 1 << 40]
            };
            return Request::words(server, ctx, p, 1);
        }
        let h = if rng.random::<f64>() < self.cfg.random_fraction {
            Header {
                src: rng.random(),
                dst: rng.random(),
                sport: rng.random(),
                dport: rng.random(),
                proto: [6, 17, 1][rng.random_range(0..3)],
            }
        } else {
            let r = rng.random_range(0..self.set.rules.len());
            self.set.rules[r].sample(rng)
        };
        let [a, b] = h.words();
        Request::words(server, ctx, vec![tag, a, b], 0)
    }

    fn check(&mut self, req: &Request, reply: &[u64], len: u16) -> Verdict {
        let p = &req.payload;
        let expected = if req.note == 1 {
            vec![p[0], STATUS_MALFORMED]
        } else {
            vec![
                p[0],
                STATUS_OK,
                self.set.classify(&Header::from_words(&p[1..])),
            ]
        };
        expect_words(
            "classifier",
            &format!("request {} (header {:x?})", p[0], &p[1..]),
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
    fn the_rule_set_has_the_intended_mix() {
        let set = RuleSet::new(20_000);
        let n = set.rules.len() as f64;
        let frac = |f: &dyn Fn(&Rule) -> bool| set.rules.iter().filter(|r| f(r)).count() as f64 / n;
        assert!((frac(&|r| r.src_len == 32) - 90.0 / 256.0).abs() < 0.02);
        assert!((frac(&|r| r.dport.0 == r.dport.1) - 0.5).abs() < 0.02);
        assert!(frac(&|r| r.src_len == 0 && r.dst_len == 0) < 0.002);
        assert!(set
            .rules
            .iter()
            .all(|r| r.src & !prefix_mask(r.src_len) == 0 && r.sport.0 <= r.sport.1));
    }

    #[test]
    fn headers_drawn_from_a_rule_match_it_or_an_earlier_one() {
        let mut app = ClassifierClient::new(
            ClassifierConfig {
                rules: 5_000,
                ..ClassifierConfig::default()
            },
            AppContext::SINGLE,
        );
        let mut rng = AppRng::seed_from_u64(6);
        let mut matched = 0;
        for tag in 0..500 {
            let r = app.next_request(tag, &mut rng);
            let h = Header::from_words(&r.payload[1..]);
            let id = app.set.classify(&h);
            matched += (id != NO_MATCH) as u32;
            assert_eq!(app.check(&r, &[tag, STATUS_OK, id], 24), Verdict::Ok);
            assert!(matches!(
                app.check(&r, &[tag, STATUS_OK, id.wrapping_add(1)], 24),
                Verdict::Wrong(_)
            ));
        }
        assert!(matched >= 380, "{matched}");
    }
}
