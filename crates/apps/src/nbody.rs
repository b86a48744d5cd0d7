//! N-body forces (`sdk/programs/nbody`, message format in its README), as
//! its clients see it: seeded remote bodies and an oracle that computes the
//! same forces in the same order, so the doubles must match bit for bit
//! (the program is built without fused multiply-adds).
//!
//! The node holds [`LOCAL`] bodies: body `i` at `(2u(4i) - 1, 2u(4i+1) - 1,
//! 2u(4i+2) - 1)` with mass `1 + u(4i+3)`, `u(x) = (splitmix64(x) >> 44) /
//! 2^20`. Request `[tag, n, (x, y, z, m) * n]` (16 + 32n B, 1 <= n <=
//! [`MAX_REMOTE`], doubles as their bits); reply `[tag, STATUS_OK, (fx, fy,
//! fz) * n]` (16 + 24n B): on each remote body, the sum over the local
//! bodies `j` (in order) of `m m_j d / (|d|^2 + EPS2)^(3/2)`, `d` the vector
//! from it to body `j`; or `[tag, STATUS_MALFORMED]` (16 B) for a bad `n` or
//! length.

use crate::exact::expect_words;
use crate::{fractions, invalid, splitmix64, App, AppContext, AppError, AppRng, Request, Verdict};
use rand::Rng;
use serde::{Deserialize, Serialize};

pub const STATUS_OK: u64 = 0;
pub const STATUS_MALFORMED: u64 = 2;
pub const LOCAL: usize = 16;
pub const MAX_REMOTE: u32 = 4;
/// The softening term (squared), so that near bodies give finite forces.
pub const EPS2: f64 = 0.01;

/// The N-body workload (`[load] app = { kind = "nbody", ... }`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NbodyConfig {
    /// Remote bodies per request (1..=4).
    pub bodies: u32,
    /// Fraction of requests that are malformed (reply `STATUS_MALFORMED`).
    pub malformed_fraction: f64,
    /// The context the program serves on.
    pub context: u16,
}

impl Default for NbodyConfig {
    fn default() -> Self {
        NbodyConfig {
            bodies: 1,
            malformed_fraction: 0.0,
            context: 0,
        }
    }
}

impl NbodyConfig {
    pub fn validate(&self) -> Result<(), AppError> {
        if self.bodies == 0 || self.bodies > MAX_REMOTE {
            return Err(invalid("bodies", self.bodies, "must be in 1..=4"));
        }
        fractions([("malformed_fraction", self.malformed_fraction)])
    }

    pub fn max_request_bytes(&self) -> u16 {
        16 + 32 * self.bodies as u16
    }
}

fn unit(x: u64) -> f64 {
    (splitmix64(x) >> 44) as f64 / 1_048_576.0
}

/// A body: position and mass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Body {
    pub pos: [f64; 3],
    pub mass: f64,
}

/// The node's bodies (the program's `build`).
pub fn local_bodies() -> Vec<Body> {
    (0..LOCAL as u64)
        .map(|i| Body {
            pos: [
                2.0 * unit(4 * i) - 1.0,
                2.0 * unit(4 * i + 1) - 1.0,
                2.0 * unit(4 * i + 2) - 1.0,
            ],
            mass: 1.0 + unit(4 * i + 3),
        })
        .collect()
}

/// The force `locals` exert on `b`, in the program's order of operations.
pub fn force(locals: &[Body], b: &Body) -> [f64; 3] {
    let mut f = [0.0f64; 3];
    for l in locals {
        let d = [
            l.pos[0] - b.pos[0],
            l.pos[1] - b.pos[1],
            l.pos[2] - b.pos[2],
        ];
        let d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + EPS2;
        let s = b.mass * l.mass * (1.0 / (d2 * d2.sqrt()));
        for k in 0..3 {
            f[k] += s * d[k];
        }
    }
    f
}

/// The client side of N-body with its oracle.
pub struct NbodyClient {
    cfg: NbodyConfig,
    ctx: AppContext,
    locals: Vec<Body>,
}

impl NbodyClient {
    pub fn new(cfg: NbodyConfig, ctx: AppContext) -> NbodyClient {
        NbodyClient {
            cfg,
            ctx,
            locals: local_bodies(),
        }
    }
}

impl App for NbodyClient {
    fn name(&self) -> &'static str {
        "nbody"
    }

    fn next_request(&mut self, tag: u64, rng: &mut AppRng) -> Request {
        let server = rng.random_range(0..self.ctx.servers.max(1));
        let ctx = self.cfg.context;
        let n = self.cfg.bodies as u64;
        let mut p = vec![tag, n];
        for _ in 0..n {
            for _ in 0..3 {
                p.push((rng.random_range(-1.5f64..1.5)).to_bits());
            }
            p.push(rng.random_range(1.0f64..2.0).to_bits());
        }
        if rng.random::<f64>() < self.cfg.malformed_fraction {
            if rng.random() {
                p[1] = MAX_REMOTE as u64 + 1;
            } else {
                p.pop();
            }
            return Request::words(server, ctx, p, 1);
        }
        Request::words(server, ctx, p, 0)
    }

    fn check(&mut self, req: &Request, reply: &[u64], len: u16) -> Verdict {
        let tag = req.payload[0];
        let mut expected = vec![tag];
        if req.note == 1 {
            expected.push(STATUS_MALFORMED);
        } else {
            expected.push(STATUS_OK);
            for b in req.payload[2..].chunks(4) {
                let f = |i: usize| f64::from_bits(b[i]);
                let body = Body {
                    pos: [f(0), f(1), f(2)],
                    mass: f(3),
                };
                expected.extend(force(&self.locals, &body).map(f64::to_bits));
            }
        }
        expect_words("nbody", &format!("request {tag}"), &expected, reply, len)
    }
}

/// The time step of `sdk/programs/nbody_cluster`.
pub const CLUSTER_DT: f64 = 0.001;

/// What each node of an `nbody_cluster` run of `nodes` nodes prints after
/// `steps` steps: the checksum of its bodies' positions and velocities,
/// computed in the program's order of operations (node `k` owns 16 bodies
/// generated from `(k + 1) << 32`; each step the force on a body is its own
/// node's, then every other node's in node order; semi-implicit Euler).
pub fn cluster_checksums(nodes: usize, steps: u64) -> Vec<u64> {
    let mut bodies: Vec<Vec<Body>> = (0..nodes as u64)
        .map(|k| {
            let base = (k + 1) << 32;
            (0..LOCAL as u64)
                .map(|i| Body {
                    pos: [
                        2.0 * unit(base + 4 * i) - 1.0,
                        2.0 * unit(base + 4 * i + 1) - 1.0,
                        2.0 * unit(base + 4 * i + 2) - 1.0,
                    ],
                    mass: 1.0 + unit(base + 4 * i + 3),
                })
                .collect()
        })
        .collect();
    let mut vel = vec![[[0.0f64; 3]; LOCAL]; nodes];
    for _ in 0..steps {
        let forces: Vec<Vec<[f64; 3]>> = (0..nodes)
            .map(|k| {
                bodies[k]
                    .iter()
                    .map(|b| {
                        let mut f = force(&bodies[k], b);
                        for (p, other) in bodies.iter().enumerate() {
                            if p != k {
                                let e = force(other, b);
                                for d in 0..3 {
                                    f[d] += e[d];
                                }
                            }
                        }
                        f
                    })
                    .collect()
            })
            .collect();
        for k in 0..nodes {
            for (i, b) in bodies[k].iter_mut().enumerate() {
                for d in 0..3 {
                    vel[k][i][d] += (forces[k][i][d] / b.mass) * CLUSTER_DT;
                    b.pos[d] += vel[k][i][d] * CLUSTER_DT;
                }
            }
        }
    }
    (0..nodes)
        .map(|k| {
            let mut h = 0u64;
            for (b, v) in bodies[k].iter().zip(&vel[k]) {
                for x in b.pos.iter().chain(v.iter()) {
                    h = splitmix64(h ^ x.to_bits());
                }
            }
            h
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn forces_point_towards_the_mass_and_obey_newton_in_one_pair() {
        let one = [Body {
            pos: [1.0, 0.0, 0.0],
            mass: 2.0,
        }];
        let f = force(
            &one,
            &Body {
                pos: [0.0; 3],
                mass: 3.0,
            },
        );
        let expected = 6.0 / (1.01f64 * 1.01f64.sqrt());
        assert!((f[0] - expected).abs() < 1e-12 && f[1] == 0.0 && f[2] == 0.0);
        let l = local_bodies();
        assert!(l
            .iter()
            .all(|b| b.pos.iter().all(|x| (-1.0..1.0).contains(x))));
        assert!(l.iter().all(|b| (1.0..2.0).contains(&b.mass)));
    }

    #[test]
    fn the_oracle_rejects_a_force_off_by_one_ulp() {
        let mut app = NbodyClient::new(
            NbodyConfig {
                bodies: 2,
                ..NbodyConfig::default()
            },
            AppContext::SINGLE,
        );
        let mut rng = AppRng::seed_from_u64(3);
        let r = app.next_request(5, &mut rng);
        let mut reply = vec![5, STATUS_OK];
        for b in r.payload[2..].chunks(4) {
            let body = Body {
                pos: [
                    f64::from_bits(b[0]),
                    f64::from_bits(b[1]),
                    f64::from_bits(b[2]),
                ],
                mass: f64::from_bits(b[3]),
            };
            reply.extend(force(&local_bodies(), &body).map(f64::to_bits));
        }
        assert_eq!(app.check(&r, &reply, 64), Verdict::Ok);
        reply[4] += 1;
        assert!(matches!(app.check(&r, &reply, 64), Verdict::Wrong(_)));
    }
}
