//! Set algebra on an inverted index (`sdk/programs/setalg*`, message format
//! in `sdk/programs/setalg/README.md`), as its clients see it.
//!
//! The corpus: `docs` documents over `words` words; document `d` holds word
//! `w` iff `splitmix64(d * words + w) % 1_000_000 < threshold(w)` with
//! `threshold(w) = 900_000 / (w + 1)` (integer division): word frequencies
//! fall as 1/rank (Zipf), the commonest word is in about 90 % of the
//! documents. The programs build the same index at start-up with the same
//! integer arithmetic ([`Corpus`]).
//!
//! A query is `[tag, n, w_1, ..., w_n]` (16 + 8n bytes, 1 <= n <= 4, the
//! words distinct and drawn Zipf by frequency: word `w` with probability
//! proportional to 1/(w + 1)); the reply is `[tag, STATUS_OK, d_1, ...]`,
//! the documents holding every word, ascending (16 + 8k bytes), or
//! `[tag, STATUS_MALFORMED]` for a query with no words, more than
//! [`MAX_QUERY_WORDS`], a word out of range or a length that does not
//! match `n`.

use crate::{fractions, invalid, App, AppContext, AppError, AppRng, Request, Verdict};
use rand::Rng;
use serde::{Deserialize, Serialize};

pub const STATUS_OK: u64 = 0;
pub const STATUS_MALFORMED: u64 = 2;
/// Most words in a query the programs accept.
pub const MAX_QUERY_WORDS: u64 = 4;

/// Set algebra's workload (`[load] app = { kind = "setalg", ... }`).
/// `docs` and `words` must be the program's (100 and 200).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SetAlgConfig {
    pub docs: u32,
    pub words: u32,
    /// Queries have 1 to this many words (uniformly), at most 4.
    pub max_query_words: u32,
    /// Fraction of queries that are malformed (reply [`STATUS_MALFORMED`]).
    pub malformed_fraction: f64,
    /// The context the program serves on.
    pub context: u16,
}

impl Default for SetAlgConfig {
    fn default() -> Self {
        SetAlgConfig {
            docs: 100,
            words: 200,
            max_query_words: 4,
            malformed_fraction: 0.0,
            context: 0,
        }
    }
}

impl SetAlgConfig {
    pub fn validate(&self) -> Result<(), AppError> {
        if self.docs == 0 || self.docs > 4096 {
            return Err(invalid("docs", self.docs, "must be in 1..=4096"));
        }
        if self.words == 0 || self.words > 4096 {
            return Err(invalid("words", self.words, "must be in 1..=4096"));
        }
        if self.max_query_words == 0 || self.max_query_words as u64 > MAX_QUERY_WORDS {
            return Err(invalid(
                "max_query_words",
                self.max_query_words,
                "must be in 1..=4",
            ));
        }
        if self.max_query_words > self.words {
            return Err(invalid(
                "max_query_words",
                self.max_query_words,
                "exceeds words",
            ));
        }
        fractions([("malformed_fraction", self.malformed_fraction)])
    }

    pub fn max_request_bytes(&self) -> u16 {
        16 + 8 * self.max_query_words as u16
    }
}

/// The corpus's inverted index: for each word, the documents holding it.
pub struct Corpus {
    pub postings: Vec<Vec<u32>>,
}

impl Corpus {
    pub fn threshold(w: u64) -> u64 {
        900_000 / (w + 1)
    }

    pub fn new(docs: u32, words: u32) -> Corpus {
        let postings = (0..words as u64)
            .map(|w| {
                (0..docs as u64)
                    .filter(|&d| {
                        crate::splitmix64(d * words as u64 + w) % 1_000_000 < Corpus::threshold(w)
                    })
                    .map(|d| d as u32)
                    .collect()
            })
            .collect();
        Corpus { postings }
    }

    /// The documents holding every word of `query`.
    pub fn intersect(&self, query: &[u64]) -> Vec<u64> {
        let mut out: Vec<u64> = self.postings[query[0] as usize]
            .iter()
            .map(|&d| d as u64)
            .collect();
        for &w in &query[1..] {
            let p = &self.postings[w as usize];
            out.retain(|d| p.binary_search(&(*d as u32)).is_ok());
        }
        out
    }
}

/// The client side of set algebra with its oracle (the corpus).
pub struct SetAlgClient {
    cfg: SetAlgConfig,
    ctx: AppContext,
    corpus: Corpus,
    /// Cumulative Zipf weights of the words (1/(w+1)), for drawing them.
    cumulative: Vec<f64>,
}

impl SetAlgClient {
    pub fn new(cfg: SetAlgConfig, ctx: AppContext) -> SetAlgClient {
        let corpus = Corpus::new(cfg.docs, cfg.words);
        let mut acc = 0.0;
        let cumulative = (0..cfg.words)
            .map(|w| {
                acc += 1.0 / (w as f64 + 1.0);
                acc
            })
            .collect();
        SetAlgClient {
            cfg,
            ctx,
            corpus,
            cumulative,
        }
    }

    fn zipf_word(&self, rng: &mut AppRng) -> u64 {
        let total = *self.cumulative.last().expect("words >= 1");
        let x = rng.random::<f64>() * total;
        self.cumulative
            .partition_point(|&c| c <= x)
            .min(self.cumulative.len() - 1) as u64
    }
}

impl App for SetAlgClient {
    fn name(&self) -> &'static str {
        "setalg"
    }

    fn next_request(&mut self, tag: u64, rng: &mut AppRng) -> Request {
        let server = rng.random_range(0..self.ctx.servers.max(1));
        let ctx = self.cfg.context;
        if rng.random::<f64>() < self.cfg.malformed_fraction {
            let words = self.cfg.words as u64;
            let p = match rng.random_range(0..3) {
                0 => vec![tag, 0],
                1 => vec![tag, 1, words],
                _ => vec![tag, 3, 0, 1],
            };
            return Request::words(server, ctx, p, 1);
        }
        let n = rng.random_range(1..=self.cfg.max_query_words) as usize;
        let mut p = vec![tag, n as u64];
        while p.len() < 2 + n {
            let w = self.zipf_word(rng);
            if !p[2..].contains(&w) {
                p.push(w);
            }
        }
        Request::words(server, ctx, p, 0)
    }

    fn check(&mut self, req: &Request, reply: &[u64], len: u16) -> Verdict {
        let tag = req.payload[0];
        let expected: Vec<u64> = if req.note == 1 {
            vec![tag, STATUS_MALFORMED]
        } else {
            let mut e = vec![tag, STATUS_OK];
            e.extend(self.corpus.intersect(&req.payload[2..]));
            e
        };
        if reply == expected.as_slice() && len as usize == 8 * expected.len() {
            Verdict::Ok
        } else {
            Verdict::Wrong(format!(
                "setalg request {tag} (words {:?}): expected {:?} ({} B), got {:?} ({len} B)",
                &req.payload[2..],
                &expected[..expected.len().min(8)],
                8 * expected.len(),
                &reply[..reply.len().min(8)]
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn word_frequencies_fall_with_rank() {
        let c = Corpus::new(100, 200);
        let n = |w: usize| c.postings[w].len();
        assert!(n(0) > 80, "{}", n(0));
        assert!(n(0) > n(9) && n(9) > n(99));
        assert!(c.postings.iter().all(|p| p.windows(2).all(|x| x[0] < x[1])));
    }

    #[test]
    fn the_oracle_accepts_the_intersection_and_catches_a_wrong_one() {
        let cfg = SetAlgConfig {
            malformed_fraction: 0.1,
            ..SetAlgConfig::default()
        };
        let mut app = SetAlgClient::new(cfg, AppContext::SINGLE);
        let corpus = Corpus::new(100, 200);
        let mut rng = AppRng::seed_from_u64(5);
        let mut sizes = [0u32; 5];
        for tag in 0..2000 {
            let r = app.next_request(tag, &mut rng);
            let mut reply = vec![tag];
            if r.note == 1 {
                reply.push(STATUS_MALFORMED);
            } else {
                sizes[r.payload[1] as usize] += 1;
                reply.push(STATUS_OK);
                // An independent merge-based intersection.
                let mut acc: Vec<u32> = corpus.postings[r.payload[2] as usize].clone();
                for &w in &r.payload[3..] {
                    let p = &corpus.postings[w as usize];
                    let (mut i, mut j, mut out) = (0, 0, Vec::new());
                    while i < acc.len() && j < p.len() {
                        match acc[i].cmp(&p[j]) {
                            std::cmp::Ordering::Less => i += 1,
                            std::cmp::Ordering::Greater => j += 1,
                            std::cmp::Ordering::Equal => {
                                out.push(acc[i]);
                                i += 1;
                                j += 1;
                            }
                        }
                    }
                    acc = out;
                }
                reply.extend(acc.iter().map(|&d| d as u64));
            }
            let len = reply.len() as u16 * 8;
            assert_eq!(
                app.check(&r, &reply, len),
                Verdict::Ok,
                "query {:?}",
                r.payload
            );
            if reply.len() > 2 {
                reply.pop();
                assert!(matches!(app.check(&r, &reply, len - 8), Verdict::Wrong(_)));
            }
        }
        assert!(sizes[1..].iter().all(|&s| s > 300), "{sizes:?}");
    }
}
