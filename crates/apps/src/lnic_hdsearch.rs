//! The prototype's HD search server (l-nic/chipyard, tag
//! `nanoPU-artifact-v1.0`, `software/euclidean-dist/lnic-euclidean-dist.cc`)
//! as the prototype's own load generator drove it: the EUCLIDEAN_DIST load
//! type of l-nic/firesim's switch model (branch `lnic-dev`,
//! `target-design/switch/switch.cc`, `send_load_packet`) with the run
//! configuration of
//! `deploy/workloads/lnic-euclidean-dist/config_lnic_euclidean_dist_runtime.ini`.
//! This repository holds none of their code; the formats are read from them.
//!
//! Requests (words of 8 bytes):
//!
//! | word | |
//! |---|---|
//! | 0 | service time (cycles): the run's fixed 1600 |
//! | 1 | sent time: here the tag |
//! | 2..18 | the query vector, 64 `u16`: the switch model `memset`s it to bytes of 1 |
//! | 18 | `n`, the number of candidate vectors: `2 + (uniform key % 4)`, 2 to 5 |
//! | 19.. | `n` distinct vector ids, uniform in `1..=10000`, ascending (a `std::set`) |
//!
//! The reply is `[service time, tag, the id of the closest candidate]`
//! (24 B). The prototype's 10,000 vectors are all ones at boot, so every
//! candidate is as close as any other and the server keeps the first, the
//! smallest id: that is the oracle for `vectors = "ones"`. Our version of
//! the program (`sdk/programs/hd_distance`, `vectors = "generated"`) holds
//! generated vectors ([`vector_coord`]) and gets a random query, so the
//! oracle computes the distances.

use crate::exact::expect_words;
use crate::{invalid, App, AppContext, AppError, AppRng, Request, Verdict};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// `VECTOR_COUNT` of the server.
pub const VECTORS: u64 = 10_000;
/// The query vector: 64 `u16` of bytes 0x01, in 16 words.
pub const QUERY_WORDS: usize = 16;
/// The most candidates a request carries.
pub const MAX_CANDIDATES: usize = 5;
/// Dimensions of a vector (`u16` each).
pub const DIMS: usize = 64;

/// The server's vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Vectors {
    /// All ones, the query bytes of 1: the prototype's program and load
    /// generator.
    Ones,
    /// [`vector_coord`], a random query: `sdk/programs/hd_distance`.
    Generated,
}

/// Dimension `d` of vector `i` (0-based: id `i + 1`) of
/// `sdk/programs/hd_distance`: 0-255 in a 16-bit field, so the program's
/// int arithmetic (the prototype's) cannot overflow.
pub fn vector_coord(i: u64, d: u64) -> u16 {
    (crate::splitmix64(i * DIMS as u64 + d) & 0xff) as u16
}

/// A generated query's fields are 0-255 too.
const QUERY_FIELD_MASK: u64 = 0x00ff_00ff_00ff_00ff;

/// The squared distance from `query` (16 words of four `u16`, least
/// significant first) to generated vector `id`.
fn dist_squared(query: &[u64], id: u64) -> u64 {
    (0..DIMS as u64)
        .map(|d| {
            let q = (query[d as usize / 4] >> (16 * (d % 4))) as u16;
            let g = q as i64 - vector_coord(id - 1, d) as i64;
            (g * g) as u64
        })
        .sum()
}

/// The prototype's HD search workload (`--app lnic-hdsearch`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LnicHdSearchConfig {
    /// The service-time word (`fixed_dist_cycles=1600`); the server echoes it.
    pub service_cycles: u64,
    /// Candidate ids are drawn from `min_key..=max_key`
    /// (`min_service_key=1`, `max_service_key=10000`).
    pub min_key: u64,
    /// See `min_key`.
    pub max_key: u64,
    /// The context the server listens on (`ONE_CONTEXT_ONE_CORE`: 0).
    pub context: u16,
    /// The server's vectors: `ones` (the prototype's program) or
    /// `generated` (`sdk/programs/hd_distance`).
    pub vectors: Vectors,
}

impl Default for LnicHdSearchConfig {
    fn default() -> Self {
        LnicHdSearchConfig {
            service_cycles: 1600,
            min_key: 1,
            max_key: VECTORS,
            context: 0,
            vectors: Vectors::Ones,
        }
    }
}

impl LnicHdSearchConfig {
    pub fn validate(&self) -> Result<(), AppError> {
        if self.min_key == 0
            || self.max_key > VECTORS
            || self.max_key < self.min_key + MAX_CANDIDATES as u64
        {
            return Err(invalid(
                "min_key",
                format!("{}..={}", self.min_key, self.max_key),
                "ids must lie in 1..=10000, the server's vectors, with room for 5 distinct ones",
            ));
        }
        Ok(())
    }

    pub fn max_request_bytes(&self) -> u16 {
        ((3 + QUERY_WORDS + MAX_CANDIDATES) * 8) as u16
    }

    pub fn mean_request_bytes(&self) -> f64 {
        (3 + QUERY_WORDS) as f64 * 8.0 + 3.5 * 8.0
    }
}

/// The client side, with its oracle.
pub struct LnicHdSearchClient {
    cfg: LnicHdSearchConfig,
}

impl LnicHdSearchClient {
    pub fn new(cfg: LnicHdSearchConfig, _ctx: AppContext) -> LnicHdSearchClient {
        LnicHdSearchClient { cfg }
    }
}

impl App for LnicHdSearchClient {
    fn name(&self) -> &'static str {
        "lnic-hdsearch"
    }

    fn next_request(&mut self, tag: u64, rng: &mut AppRng) -> Request {
        let keys = self.cfg.min_key..=self.cfg.max_key;
        let n = 2 + rng.random_range(keys.clone()) % 4;
        let mut ids = [0u64; MAX_CANDIDATES];
        let mut have = 0;
        while have < n as usize {
            let id = rng.random_range(keys.clone());
            if !ids[..have].contains(&id) {
                ids[have] = id;
                have += 1;
            }
        }
        ids[..have].sort_unstable();
        let mut words = Vec::with_capacity(3 + QUERY_WORDS + have);
        words.extend_from_slice(&[self.cfg.service_cycles, tag]);
        match self.cfg.vectors {
            Vectors::Ones => words.extend_from_slice(&[0x0101_0101_0101_0101; QUERY_WORDS]),
            Vectors::Generated => {
                words.extend((0..QUERY_WORDS).map(|_| rng.random::<u64>() & QUERY_FIELD_MASK))
            }
        }
        words.push(n);
        words.extend_from_slice(&ids[..have]);
        // The oracle's answer: the first of the closest candidates (with
        // all-ones vectors, the first one).
        let closest = match self.cfg.vectors {
            Vectors::Ones => ids[0],
            Vectors::Generated => {
                let query = &words[2..2 + QUERY_WORDS];
                let mut best = (u64::MAX, 0);
                for &id in &ids[..have] {
                    let d = dist_squared(query, id);
                    if d < best.0 {
                        best = (d, id);
                    }
                }
                best.1
            }
        };
        Request::words(0, self.cfg.context, words, closest)
    }

    fn reply_tag(&self, reply: &[u64], len: u16) -> Option<u64> {
        crate::lnic_mica::sent_time_tag(reply, len)
    }

    fn check(&mut self, req: &Request, reply: &[u64], len: u16) -> Verdict {
        let expected = [self.cfg.service_cycles, req.payload[1], req.note];
        let what = format!("search of {:?}", &req.payload[3 + QUERY_WORDS..]);
        expect_words("lnic-hdsearch", &what, &expected, reply, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn requests_carry_two_to_five_distinct_ascending_ids() {
        let mut c = LnicHdSearchClient::new(LnicHdSearchConfig::default(), AppContext::SINGLE);
        let mut rng = AppRng::seed_from_u64(3);
        let mut counts = [0; 6];
        for tag in 0..400 {
            let r = c.next_request(tag, &mut rng);
            let n = r.payload[2 + QUERY_WORDS] as usize;
            let ids = &r.payload[3 + QUERY_WORDS..];
            assert_eq!(ids.len(), n);
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
            assert!(ids.iter().all(|&i| (1..=VECTORS).contains(&i)));
            assert_eq!(r.note, ids[0], "all-ones vectors: the first is the closest");
            assert_eq!(r.len as usize, 8 * (3 + QUERY_WORDS + n));
            counts[n] += 1;
        }
        assert!(counts[2..].iter().all(|&k| k > 50), "{counts:?}");
        let r = c.next_request(9, &mut rng);
        assert_eq!(c.check(&r, &[1600, 9, r.note], 24), Verdict::Ok);
        assert!(matches!(
            c.check(&r, &[1600, 9, r.note + 1], 24),
            Verdict::Wrong(_)
        ));
    }

    #[test]
    fn generated_vectors_make_the_oracle_search() {
        let cfg = LnicHdSearchConfig {
            vectors: Vectors::Generated,
            ..Default::default()
        };
        let mut c = LnicHdSearchClient::new(cfg, AppContext::SINGLE);
        let mut rng = AppRng::seed_from_u64(5);
        let mut not_first = 0;
        for tag in 0..200 {
            let r = c.next_request(tag, &mut rng);
            let query = &r.payload[2..2 + QUERY_WORDS];
            let ids = &r.payload[3 + QUERY_WORDS..];
            let best = ids.iter().map(|&id| dist_squared(query, id)).min().unwrap();
            let first_best = *ids
                .iter()
                .find(|&&id| dist_squared(query, id) == best)
                .unwrap();
            assert_eq!(r.note, first_best);
            not_first += usize::from(r.note != ids[0]);
        }
        assert!(
            not_first > 50,
            "the answer depends on the data: {not_first}"
        );
        // One dimension by hand: field j of word w is dimension 4w + j.
        let mut q = [0u64; QUERY_WORDS];
        q[0] = u64::from(vector_coord(6, 1)) << 16;
        let d: u64 = (0..DIMS as u64)
            .filter(|&d| d != 1)
            .map(|d| u64::from(vector_coord(6, d)).pow(2))
            .sum();
        assert_eq!(dist_squared(&q, 7), d);
    }

    #[test]
    fn ids_outside_the_servers_vectors_are_refused() {
        let with_max = |max_key| LnicHdSearchConfig {
            max_key,
            ..Default::default()
        };
        assert!(with_max(10_001).validate().is_err());
        assert!(with_max(3).validate().is_err());
        assert!(LnicHdSearchConfig::default().validate().is_ok());
    }
}
