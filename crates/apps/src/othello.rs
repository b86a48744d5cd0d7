//! The Othello player (`sdk/programs/othello`, message format in its
//! README), as its clients see it: positions from seeded random games, and
//! an oracle that searches them with a plain negamax (no pruning) to the
//! same depth with the same evaluation, so it must pick the program's move
//! (the lowest square among the best, which alpha-beta preserves).
//!
//! Request `[tag, own, opp, depth]` (32 B): bitboards of the side to move
//! and of its opponent (bit `8 * row + file`), search depth 1..=6. Reply
//! `[tag, STATUS_OK, square]` (24 B), square 0..63 or [`PASS`]; or
//! `[tag, STATUS_MALFORMED]` (16 B) for a wrong length, overlapping boards
//! or a depth out of range.

use crate::exact::expect_words;
use crate::{fractions, invalid, App, AppContext, AppError, AppRng, Request, Verdict};
use rand::Rng;
use serde::{Deserialize, Serialize};

pub const STATUS_OK: u64 = 0;
pub const STATUS_MALFORMED: u64 = 2;
/// The reply's square when the side to move has no legal move.
pub const PASS: u64 = 64;
/// The deepest search the program accepts.
pub const MAX_DEPTH: u32 = 6;

/// The Othello workload (`[load] app = { kind = "othello", ... }`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OthelloConfig {
    /// Search depth in plies (1..=6); the cost grows about tenfold a ply.
    pub depth: u32,
    /// Positions come from games of this many random plies at least ...
    pub min_plies: u32,
    /// ... and at most (uniformly), from the initial position.
    pub max_plies: u32,
    /// Fraction of requests that are malformed (reply `STATUS_MALFORMED`).
    pub malformed_fraction: f64,
    /// The context the program serves on.
    pub context: u16,
}

impl Default for OthelloConfig {
    fn default() -> Self {
        OthelloConfig {
            depth: 2,
            min_plies: 4,
            max_plies: 50,
            malformed_fraction: 0.0,
            context: 0,
        }
    }
}

impl OthelloConfig {
    pub fn validate(&self) -> Result<(), AppError> {
        if self.depth == 0 || self.depth > MAX_DEPTH {
            return Err(invalid("depth", self.depth, "must be in 1..=6"));
        }
        if self.min_plies > self.max_plies || self.max_plies > 60 {
            return Err(invalid(
                "max_plies",
                self.max_plies,
                "must be at least min_plies and at most 60",
            ));
        }
        fractions([("malformed_fraction", self.malformed_fraction)])
    }

    pub fn max_request_bytes(&self) -> u16 {
        32
    }
}

/// The classic weighted-square table (the program's `square_weight`).
const SQUARE_WEIGHT: [i64; 64] = [
    100, -20, 10, 5, 5, 10, -20, 100, //
    -20, -50, -2, -2, -2, -2, -50, -20, //
    10, -2, -1, -1, -1, -1, -2, 10, //
    5, -2, -1, -1, -1, -1, -2, 5, //
    5, -2, -1, -1, -1, -1, -2, 5, //
    10, -2, -1, -1, -1, -1, -2, 10, //
    -20, -50, -2, -2, -2, -2, -50, -20, //
    100, -20, 10, 5, 5, 10, -20, 100,
];

/// The eight directions as (row step, file step).
const DIRECTIONS: [(i32, i32); 8] = [
    (0, 1),
    (0, -1),
    (1, 0),
    (-1, 0),
    (1, 1),
    (1, -1),
    (-1, 1),
    (-1, -1),
];

/// The discs `own` flips by playing `sq` (0 if none: not a legal move),
/// walked square by square (an implementation independent of the program's
/// bitboard shifts).
pub fn flips(own: u64, opp: u64, sq: u32) -> u64 {
    if (own | opp) >> sq & 1 == 1 {
        return 0;
    }
    let (r0, f0) = ((sq / 8) as i32, (sq % 8) as i32);
    let mut out = 0;
    for (dr, df) in DIRECTIONS {
        let (mut r, mut f, mut line) = (r0 + dr, f0 + df, 0u64);
        while (0..8).contains(&r) && (0..8).contains(&f) {
            let bit = 1u64 << (8 * r + f);
            if opp & bit != 0 {
                line |= bit;
            } else {
                if own & bit != 0 {
                    out |= line;
                }
                break;
            }
            r += dr;
            f += df;
        }
    }
    out
}

/// The legal moves of `own` (a bit per square): the squares where
/// [`flips`] flips something. Only an empty square next to an opponent's
/// disc can, so only those are walked (the oracle checks every reply, and
/// walking all 64 squares at every node of its search was a quarter of the
/// `othello` experiment's host time).
pub fn legal_moves(own: u64, opp: u64) -> u64 {
    let mut candidates = neighbours(opp) & !(own | opp);
    let mut moves = 0;
    while candidates != 0 {
        let sq = candidates.trailing_zeros();
        if flips(own, opp, sq) != 0 {
            moves |= 1 << sq;
        }
        candidates &= candidates - 1;
    }
    moves
}

/// The squares next to (one of the eight neighbours of) a disc of `b`.
fn neighbours(b: u64) -> u64 {
    const FILE_0: u64 = 0x0101_0101_0101_0101;
    const FILE_7: u64 = 0x8080_8080_8080_8080;
    // Square 8 * row + file: a file step must not wrap into the next row.
    let east = (b << 1) & !FILE_0;
    let west = (b >> 1) & !FILE_7;
    let row = b | east | west;
    east | west | row << 8 | row >> 8
}

fn evaluate(own: u64, opp: u64) -> i64 {
    // Over the discs only (the leaves of every search the oracle runs).
    let weight = |mut b: u64| {
        let mut sum = 0;
        while b != 0 {
            sum += SQUARE_WEIGHT[b.trailing_zeros() as usize];
            b &= b - 1;
        }
        sum
    };
    weight(own) - weight(opp & !own)
}

fn negamax(own: u64, opp: u64, depth: u32) -> i64 {
    if depth == 0 {
        return evaluate(own, opp);
    }
    let moves = legal_moves(own, opp);
    if moves == 0 {
        if legal_moves(opp, own) == 0 {
            return 1000 * (own.count_ones() as i64 - opp.count_ones() as i64);
        }
        return -negamax(opp, own, depth - 1);
    }
    (0..64)
        .filter(|sq| moves >> sq & 1 == 1)
        .map(|sq| {
            let f = flips(own, opp, sq);
            -negamax(opp & !f, own | f | 1 << sq, depth - 1)
        })
        .max()
        .expect("a legal move")
}

/// The move the program must choose: the lowest square of the highest
/// negamax value at `depth`, or [`PASS`].
pub fn best_move(own: u64, opp: u64, depth: u32) -> u64 {
    let moves = legal_moves(own, opp);
    let mut best: Option<(i64, u64)> = None;
    for sq in (0..64).filter(|sq| moves >> sq & 1 == 1) {
        let f = flips(own, opp, sq);
        let v = -negamax(opp & !f, own | f | 1 << sq, depth - 1);
        if best.is_none_or(|(b, _)| v > b) {
            best = Some((v, sq as u64));
        }
    }
    best.map_or(PASS, |(_, sq)| sq)
}

/// The initial position, Black to move: (Black, White).
pub const START: (u64, u64) = ((1 << 28) | (1 << 35), (1 << 27) | (1 << 36));

/// A position after `plies` random legal plies from [`START`] (passing when
/// the side to move cannot move; stopping early when neither can), as
/// (side to move, opponent).
pub fn random_position(plies: u32, rng: &mut AppRng) -> (u64, u64) {
    let (mut own, mut opp) = START;
    for _ in 0..plies {
        let moves = legal_moves(own, opp);
        if moves == 0 {
            if legal_moves(opp, own) == 0 {
                break;
            }
        } else {
            let k = rng.random_range(0..moves.count_ones());
            let mut m = moves;
            for _ in 0..k {
                m &= m - 1;
            }
            let sq = m.trailing_zeros();
            let f = flips(own, opp, sq);
            own |= f | 1 << sq;
            opp &= !f;
        }
        (own, opp) = (opp, own);
    }
    (own, opp)
}

/// The client side of the Othello player with its oracle.
pub struct OthelloClient {
    cfg: OthelloConfig,
    ctx: AppContext,
}

impl OthelloClient {
    pub fn new(cfg: OthelloConfig, ctx: AppContext) -> OthelloClient {
        OthelloClient { cfg, ctx }
    }
}

impl App for OthelloClient {
    fn name(&self) -> &'static str {
        "othello"
    }

    fn next_request(&mut self, tag: u64, rng: &mut AppRng) -> Request {
        let server = rng.random_range(0..self.ctx.servers.max(1));
        let ctx = self.cfg.context;
        if rng.random::<f64>() < self.cfg.malformed_fraction {
            let p = match rng.random_range(0..3) {
                0 => vec![tag, 1, 1, 2],
                1 => vec![tag, START.0, START.1, MAX_DEPTH as u64 + 1],
                _ => vec![tag, START.0, START.1],
            };
            return Request::words(server, ctx, p, 1);
        }
        let plies = rng.random_range(self.cfg.min_plies..=self.cfg.max_plies);
        let (own, opp) = random_position(plies, rng);
        Request::words(server, ctx, vec![tag, own, opp, self.cfg.depth as u64], 0)
    }

    fn check(&mut self, req: &Request, reply: &[u64], len: u16) -> Verdict {
        let p = &req.payload;
        let expected = if req.note == 1 {
            vec![p[0], STATUS_MALFORMED]
        } else {
            vec![p[0], STATUS_OK, best_move(p[1], p[2], p[3] as u32)]
        };
        expect_words(
            "othello",
            &format!("request {} (own {:#x}, opp {:#x})", p[0], p[1], p[2]),
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
    fn the_opening_has_four_moves_and_flips_one_disc() {
        let (b, w) = START;
        let m = legal_moves(b, w);
        assert_eq!(m.count_ones(), 4);
        for sq in [19, 26, 37, 44] {
            assert_eq!(m >> sq & 1, 1, "square {sq}");
            assert_eq!(flips(b, w, sq).count_ones(), 1);
        }
        // Symmetric opening: every move is worth the same at depth 1, so
        // the lowest square wins.
        assert_eq!(best_move(b, w, 1), 19);
    }

    #[test]
    fn legal_moves_and_evaluation_match_their_square_by_square_definitions() {
        let mut rng = AppRng::seed_from_u64(11);
        for plies in (0..64).cycle().take(2000) {
            let (own, opp) = random_position(plies, &mut rng);
            for (a, b) in [(own, opp), (opp, own)] {
                let every_square = (0..64)
                    .filter(|&sq| flips(a, b, sq) != 0)
                    .fold(0u64, |m, sq| m | 1 << sq);
                assert_eq!(legal_moves(a, b), every_square, "{a:#x} {b:#x}");
                let square_by_square: i64 = (0..64)
                    .map(|sq| match (a >> sq & 1, b >> sq & 1) {
                        (1, _) => SQUARE_WEIGHT[sq],
                        (_, 1) => -SQUARE_WEIGHT[sq],
                        _ => 0,
                    })
                    .sum();
                assert_eq!(evaluate(a, b), square_by_square);
            }
        }
    }

    #[test]
    fn random_games_keep_disc_counts_consistent() {
        let mut rng = AppRng::seed_from_u64(3);
        for plies in [0, 10, 30, 60] {
            let (own, opp) = random_position(plies, &mut rng);
            assert_eq!(own & opp, 0);
            assert!((own | opp).count_ones() <= 4 + plies);
        }
        // A full board (or a dead one) passes.
        assert_eq!(best_move(u64::MAX, 0, 2), PASS);
    }

    #[test]
    fn the_oracle_rejects_another_move() {
        let mut app = OthelloClient::new(OthelloConfig::default(), AppContext::SINGLE);
        let mut rng = AppRng::seed_from_u64(9);
        let r = app.next_request(7, &mut rng);
        let m = best_move(r.payload[1], r.payload[2], 2);
        assert_eq!(app.check(&r, &[7, STATUS_OK, m], 24), Verdict::Ok);
        assert!(matches!(
            app.check(&r, &[7, STATUS_OK, (m + 1) % 65], 24),
            Verdict::Wrong(_)
        ));
    }
}
