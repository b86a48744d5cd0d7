//! The keys that making the nanoPU prototype's memory system the nanoPU
//! experiments' default moved (issue #49: `[node.memory] preset =
//! "firesim-lnic"`, FASED's 4 MiB LLC model in front of its DDR3 FR-FCFS
//! model, where the fluid model's flat 75 ns DRAM was), each with its value
//! before and why it moved. report.md puts each beside the value this run
//! measured; `memory-systems`, which runs the memory-bound applications under
//! the fluid model too, checks the `before` of its keys against that run.
//! `docs/memory.md` explains each at length.

/// A key the change moved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MovedKey {
    /// The `summary.json` key.
    pub key: &'static str,
    /// Measured by `nanopu reproduce` (full scale, default seed) on the
    /// fluid model: main before branch `mem` was merged (7e19c43).
    pub before: f64,
    /// Why it moved.
    pub why: &'static str,
}

const APP_MISSES: &str = "each request misses the 512 KB L2 several times; FASED's LLC model \
    answers most of those misses (`memory-systems` gives the share) in tens of cycles, where the \
    fluid model charged 75 ns";
const START_UP: &str = "touches memory only at start-up (program and data misses), or its \
    service times change by a few cycles: within 2 %";
const SETALG: &str = "set algebra's posting lists fit in the L2: only its start-up misses get \
    cheaper (within 0.2 %)";

/// The moved keys, in the order of report.md's table.
pub const MEMORY_SYSTEM_MOVES: &[MovedKey] = &[
    MovedKey {
        key: "mica-p50-us",
        before: 0.997375,
        why: APP_MISSES,
    },
    MovedKey {
        key: "mica-p99-us",
        before: 1.884159,
        why: APP_MISSES,
    },
    MovedKey {
        key: "mica-opt-vs-naive-tput",
        before: 1.0949750135259324,
        why: "the misses both variants share get cheaper, so the optimized variant's saved \
              instructions weigh more",
    },
    MovedKey {
        key: "classifier-p50-us",
        before: 2.461695,
        why: APP_MISSES,
    },
    MovedKey {
        key: "classifier-p99-us",
        before: 4.968447,
        why: APP_MISSES,
    },
    MovedKey {
        key: "hdsearch-p50-us",
        before: 1.069055,
        why: APP_MISSES,
    },
    MovedKey {
        key: "hdsearch-p99-us",
        before: 2.168831,
        why: APP_MISSES,
    },
    MovedKey {
        key: "raft-p50-us",
        before: 2.467839,
        why: "the replicas' log and MICA store miss the L2",
    },
    MovedKey {
        key: "raft-p99-us",
        before: 2.543615,
        why: "the replicas' log and MICA store miss the L2",
    },
    MovedKey {
        key: "proto-loopback-tput-8B",
        before: 89.7675661234304,
        why: "a burst of 21 messages timed from a cold start: the program's first instruction \
              and data misses go to memory, cheaper under the LLC model and DDR3 at the core's \
              clock than at 75 ns each (the steady-state `loopback-tput-8B` does not move)",
    },
    MovedKey {
        key: "proto-trad-loopback-tput-8B",
        before: 25.333634924225287,
        why: "as `proto-loopback-tput-8B`",
    },
    MovedKey {
        key: "hts-vs-tis-p99-ratio-high",
        before: 4.4797581346075654,
        why: "taken at the highest load both schedulers keep up with, a test at its threshold \
              at 20-40 % load: slightly different service times move that load from 40 % to 10 %",
    },
    MovedKey {
        key: "hts-vs-tis-p99-ratio-low",
        before: 4.0722744963641855,
        why: START_UP,
    },
    MovedKey {
        key: "ctx-switch-cycles",
        before: 133.63509006004003,
        why: START_UP,
    },
    MovedKey {
        key: "dot-product-speedup-small",
        before: 7.900461658502752,
        why: START_UP,
    },
    MovedKey {
        key: "loopback-inc-speedup-max",
        before: 10.141018067247577,
        why: START_UP,
    },
    MovedKey {
        key: "othello-p50-us",
        before: 6.025215,
        why: START_UP,
    },
    MovedKey {
        key: "setalg-p50-us",
        before: 0.186751,
        why: SETALG,
    },
    MovedKey {
        key: "setalg-p99-us",
        before: 1.076223,
        why: SETALG,
    },
    MovedKey {
        key: "setalg-jbsq4-max-mrps",
        before: 17.341261576779708,
        why: SETALG,
    },
    MovedKey {
        key: "setalg-trad-vs-nanopu-p99-low",
        before: 1.1722170962709402,
        why: SETALG,
    },
    MovedKey {
        key: "trad-loopback-tput-8B",
        before: 21.424331196355485,
        why: START_UP,
    },
];

/// The recorded `before` of `key`, if the change moved it.
pub fn moved_before(key: &str) -> Option<f64> {
    MEMORY_SYSTEM_MOVES
        .iter()
        .find(|m| m.key == key)
        .map(|m| m.before)
}
