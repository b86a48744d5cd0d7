//! NN inference (`sdk/programs/nn` on the nanoPU NIC, `trad_nn` on the
//! traditional one; message format in `sdk/programs/nn/README.md`), as its
//! clients see it: seeded input vectors and an oracle that runs the same
//! integer network.
//!
//! The network: [`INPUTS`] -> [`HIDDEN1`] -> [`HIDDEN2`] (ReLU, then an
//! arithmetic shift right by [`SHIFT`]) -> [`OUTPUTS`] raw sums. Weight `i`
//! of layer `l` (numbered unit-major: `i = unit * inputs + input`) is
//! `splitmix64(l << 32 | i) % 255 - 127`; bias `j` is
//! `splitmix64(l << 32 | 0x10000 | j) % 2047 - 1023` ([`Network::new`]).
//!
//! Request `[tag, x_0, ..., x_15]` (136 B), each input an `i64` in
//! -128..=127. Reply `[tag, STATUS_OK, argmax, y_0, ..., y_7]` (88 B), the
//! outputs as `i64` and `argmax` the first largest; or `[tag,
//! STATUS_MALFORMED]` (16 B) for another length or an input out of range.

use crate::exact::expect_words;
use crate::{fractions, splitmix64, App, AppContext, AppError, AppRng, Request, Verdict};
use rand::Rng;
use serde::{Deserialize, Serialize};

pub const STATUS_OK: u64 = 0;
pub const STATUS_MALFORMED: u64 = 2;
pub const INPUTS: usize = 16;
pub const HIDDEN1: usize = 32;
pub const HIDDEN2: usize = 32;
pub const OUTPUTS: usize = 8;
pub const SHIFT: u32 = 7;

/// The NN workload (`[load] app = { kind = "nn", ... }`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NnConfig {
    /// Fraction of requests that are malformed (reply `STATUS_MALFORMED`).
    pub malformed_fraction: f64,
    /// The context the program serves on.
    pub context: u16,
}

impl Default for NnConfig {
    fn default() -> Self {
        NnConfig {
            malformed_fraction: 0.0,
            context: 0,
        }
    }
}

impl NnConfig {
    pub fn validate(&self) -> Result<(), AppError> {
        fractions([("malformed_fraction", self.malformed_fraction)])
    }

    pub fn max_request_bytes(&self) -> u16 {
        8 * (1 + INPUTS as u16)
    }
}

/// One fully-connected layer: `weights[unit][input]`.
struct Layer {
    weights: Vec<Vec<i64>>,
    bias: Vec<i64>,
}

impl Layer {
    fn new(layer: u64, inputs: usize, units: usize) -> Layer {
        let weights = (0..units)
            .map(|j| {
                (0..inputs)
                    .map(|i| (splitmix64(layer << 32 | (j * inputs + i) as u64) % 255) as i64 - 127)
                    .collect()
            })
            .collect();
        let bias = (0..units)
            .map(|j| (splitmix64(layer << 32 | 0x10000 | j as u64) % 2047) as i64 - 1023)
            .collect();
        Layer { weights, bias }
    }

    fn apply(&self, x: &[i64]) -> Vec<i64> {
        self.weights
            .iter()
            .zip(&self.bias)
            .map(|(w, b)| b + w.iter().zip(x).map(|(w, x)| w * x).sum::<i64>())
            .collect()
    }
}

fn relu_shift(v: Vec<i64>) -> Vec<i64> {
    v.into_iter().map(|s| s.max(0) >> SHIFT).collect()
}

/// The network the programs generate at start.
pub struct Network {
    layers: [Layer; 3],
}

impl Default for Network {
    fn default() -> Self {
        Network::new()
    }
}

impl Network {
    pub fn new() -> Network {
        Network {
            layers: [
                Layer::new(1, INPUTS, HIDDEN1),
                Layer::new(2, HIDDEN1, HIDDEN2),
                Layer::new(3, HIDDEN2, OUTPUTS),
            ],
        }
    }

    /// The outputs for input `x` and the index of the first largest.
    pub fn infer(&self, x: &[i64]) -> (usize, Vec<i64>) {
        let h1 = relu_shift(self.layers[0].apply(x));
        let h2 = relu_shift(self.layers[1].apply(&h1));
        let out = self.layers[2].apply(&h2);
        let best = (0..out.len()).fold(0, |b, j| if out[j] > out[b] { j } else { b });
        (best, out)
    }
}

/// The client side of NN inference with its oracle.
pub struct NnClient {
    cfg: NnConfig,
    ctx: AppContext,
    net: Network,
}

impl NnClient {
    pub fn new(cfg: NnConfig, ctx: AppContext) -> NnClient {
        NnClient {
            cfg,
            ctx,
            net: Network::new(),
        }
    }
}

impl App for NnClient {
    fn name(&self) -> &'static str {
        "nn"
    }

    fn next_request(&mut self, tag: u64, rng: &mut AppRng) -> Request {
        let server = rng.random_range(0..self.ctx.servers.max(1));
        let ctx = self.cfg.context;
        let mut p = vec![tag];
        p.extend((0..INPUTS).map(|_| rng.random_range(-128i64..=127) as u64));
        if rng.random::<f64>() < self.cfg.malformed_fraction {
            if rng.random::<bool>() {
                p.pop();
            } else {
                let i = rng.random_range(1..p.len());
                p[i] = 128;
            }
            return Request::words(server, ctx, p, 1);
        }
        Request::words(server, ctx, p, 0)
    }

    fn check(&mut self, req: &Request, reply: &[u64], len: u16) -> Verdict {
        let tag = req.payload[0];
        let expected = if req.note == 1 {
            vec![tag, STATUS_MALFORMED]
        } else {
            let x: Vec<i64> = req.payload[1..].iter().map(|&w| w as i64).collect();
            let (best, out) = self.net.infer(&x);
            let mut e = vec![tag, STATUS_OK, best as u64];
            e.extend(out.iter().map(|&y| y as u64));
            e
        };
        expect_words("nn", &format!("request {tag}"), &expected, reply, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn weights_are_in_range_and_outputs_vary_with_the_input() {
        let net = Network::new();
        for l in &net.layers {
            assert!(l.weights.iter().flatten().all(|w| (-127..=127).contains(w)));
            assert!(l.bias.iter().all(|b| (-1023..=1023).contains(b)));
        }
        let mut rng = AppRng::seed_from_u64(1);
        let mut winners = [0u32; OUTPUTS];
        for _ in 0..500 {
            let x: Vec<i64> = (0..INPUTS).map(|_| rng.random_range(-128..=127)).collect();
            let (best, out) = net.infer(&x);
            assert!(out.iter().all(|&y| y <= out[best]));
            winners[best] += 1;
        }
        // A network that always answers the same is no test of the program.
        assert!(
            winners.iter().filter(|&&n| n > 0).count() >= 3,
            "{winners:?}"
        );
    }

    #[test]
    fn the_oracle_rejects_a_changed_output() {
        let mut app = NnClient::new(NnConfig::default(), AppContext::SINGLE);
        let mut rng = AppRng::seed_from_u64(2);
        let r = app.next_request(3, &mut rng);
        let x: Vec<i64> = r.payload[1..].iter().map(|&w| w as i64).collect();
        let (best, out) = Network::new().infer(&x);
        let mut reply = vec![3, STATUS_OK, best as u64];
        reply.extend(out.iter().map(|&y| y as u64));
        assert_eq!(app.check(&r, &reply, 88), Verdict::Ok);
        reply[5] ^= 1;
        assert!(matches!(app.check(&r, &reply, 88), Verdict::Wrong(_)));
    }
}
