//! HD search (`sdk/programs/hdsearch`, message format in its README), as
//! its clients see it: query vectors near the data set's points (and some
//! uniform) and a brute-force oracle.
//!
//! The data set: [`POINTS`] points of [`DIMS`] one-byte dimensions; point
//! `p` is in cluster `p % CLUSTERS`, dimension `d` its cluster's centre
//! `splitmix64(c * DIMS + d) % 256` plus noise `splitmix64(1 << 40 | p *
//! DIMS + d) % 41 - 20`, clamped to 0..=255 ([`point_coord`]).
//!
//! Request `[tag, q_0, ..., q_7]` (72 B): the query's 64 dimensions, eight
//! bytes to a word, dimension `8w + j` in byte `j` of word `w`. Reply
//! `[tag, STATUS_OK, id_1, ..., id_4]` (48 B): the [`K`] nearest points by
//! squared Euclidean distance, nearest first, ties to the lower id; or
//! `[tag, STATUS_MALFORMED]` (16 B) for another length.

use crate::exact::expect_words;
use crate::{fractions, splitmix64, App, AppContext, AppError, AppRng, Request, Verdict};
use rand::Rng;
use serde::{Deserialize, Serialize};

pub const STATUS_OK: u64 = 0;
pub const STATUS_MALFORMED: u64 = 2;
pub const POINTS: usize = 2048;
pub const DIMS: usize = 64;
pub const CLUSTERS: u64 = 64;
pub const K: usize = 4;

/// The HD search workload (`[load] app = { kind = "hdsearch", ... }`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HdSearchConfig {
    /// Fraction of queries drawn uniformly (the rest are a random point
    /// plus noise in -10..=10 per dimension). A uniform query is far from
    /// every cluster and makes the program scan most of them (about 15x
    /// the work).
    pub uniform_fraction: f64,
    /// Fraction of requests that are malformed (reply `STATUS_MALFORMED`).
    pub malformed_fraction: f64,
    /// The context the program serves on.
    pub context: u16,
}

impl Default for HdSearchConfig {
    fn default() -> Self {
        HdSearchConfig {
            uniform_fraction: 0.0,
            malformed_fraction: 0.0,
            context: 0,
        }
    }
}

impl HdSearchConfig {
    pub fn validate(&self) -> Result<(), AppError> {
        fractions([
            ("uniform_fraction", self.uniform_fraction),
            ("malformed_fraction", self.malformed_fraction),
        ])
    }

    pub fn max_request_bytes(&self) -> u16 {
        8 + DIMS as u16
    }
}

/// Dimension `d` of point `p` (the program's `point_coord`).
pub fn point_coord(p: u64, d: u64) -> u8 {
    let c = p % CLUSTERS;
    let centre = (splitmix64(c * DIMS as u64 + d) % 256) as i64;
    let noise = (splitmix64(1 << 40 | (p * DIMS as u64 + d)) % 41) as i64 - 20;
    (centre + noise).clamp(0, 255) as u8
}

/// The data set, searched by brute force.
pub struct DataSet {
    pub points: Vec<[u8; DIMS]>,
}

impl Default for DataSet {
    fn default() -> Self {
        DataSet::new()
    }
}

impl DataSet {
    pub fn new() -> DataSet {
        DataSet {
            points: (0..POINTS as u64)
                .map(|p| std::array::from_fn(|d| point_coord(p, d as u64)))
                .collect(),
        }
    }

    /// The [`K`] nearest points to `q`, nearest first, ties to the lower id.
    pub fn nearest(&self, q: &[u8; DIMS]) -> Vec<u64> {
        let mut d: Vec<(u32, u64)> = self
            .points
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let s = x
                    .iter()
                    .zip(q)
                    .map(|(&a, &b)| (a as i32 - b as i32).pow(2) as u32)
                    .sum();
                (s, i as u64)
            })
            .collect();
        d.sort_unstable();
        d[..K].iter().map(|&(_, i)| i).collect()
    }
}

fn pack(q: &[u8; DIMS]) -> Vec<u64> {
    q.chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

fn unpack(words: &[u64]) -> [u8; DIMS] {
    std::array::from_fn(|d| (words[d / 8] >> (8 * (d % 8))) as u8)
}

/// The client side of HD search with its oracle.
pub struct HdSearchClient {
    cfg: HdSearchConfig,
    ctx: AppContext,
    data: DataSet,
}

impl HdSearchClient {
    pub fn new(cfg: HdSearchConfig, ctx: AppContext) -> HdSearchClient {
        HdSearchClient {
            cfg,
            ctx,
            data: DataSet::new(),
        }
    }
}

impl App for HdSearchClient {
    fn name(&self) -> &'static str {
        "hdsearch"
    }

    fn next_request(&mut self, tag: u64, rng: &mut AppRng) -> Request {
        let server = rng.random_range(0..self.ctx.servers.max(1));
        let ctx = self.cfg.context;
        if rng.random::<f64>() < self.cfg.malformed_fraction {
            return Request::words(server, ctx, vec![tag, 1, 2], 1);
        }
        let q: [u8; DIMS] = if rng.random::<f64>() < self.cfg.uniform_fraction {
            std::array::from_fn(|_| rng.random())
        } else {
            let p = self.data.points[rng.random_range(0..POINTS)];
            std::array::from_fn(|d| (p[d] as i32 + rng.random_range(-10..=10)).clamp(0, 255) as u8)
        };
        let mut payload = vec![tag];
        payload.extend(pack(&q));
        Request::words(server, ctx, payload, 0)
    }

    fn check(&mut self, req: &Request, reply: &[u64], len: u16) -> Verdict {
        let tag = req.payload[0];
        let expected = if req.note == 1 {
            vec![tag, STATUS_MALFORMED]
        } else {
            let mut e = vec![tag, STATUS_OK];
            e.extend(self.data.nearest(&unpack(&req.payload[1..])));
            e
        };
        expect_words("hdsearch", &format!("query {tag}"), &expected, reply, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_point_is_its_own_nearest_and_its_neighbours_share_its_cluster() {
        let data = DataSet::new();
        for p in [0u64, 77, 2047] {
            let n = data.nearest(&data.points[p as usize]);
            assert_eq!(n[0], p);
            assert!(n.iter().all(|&i| i % CLUSTERS == p % CLUSTERS), "{n:?}");
        }
        let q: [u8; DIMS] = std::array::from_fn(|d| (d * 3) as u8);
        assert_eq!(unpack(&pack(&q)), q);
    }

    #[test]
    fn the_oracle_rejects_a_wrong_order() {
        let mut app = HdSearchClient::new(HdSearchConfig::default(), AppContext::SINGLE);
        let mut rng = AppRng::seed_from_u64(8);
        let r = app.next_request(1, &mut rng);
        let mut reply = vec![1, STATUS_OK];
        reply.extend(DataSet::new().nearest(&unpack(&r.payload[1..])));
        assert_eq!(app.check(&r, &reply, 48), Verdict::Ok);
        reply.swap(2, 3);
        assert!(matches!(app.check(&r, &reply, 48), Verdict::Wrong(_)));
    }
}
