//! The out-of-order core model (`crates/core/src/timing/ooo/`) on the
//! microbenchmarks with known answers (`sdk/programs/ooo_micro`): width,
//! dependence chains, memory-level parallelism up to the MSHRs or the ROB,
//! the mispredict penalty; and the presets' configuration.

mod common;

use common::*;
use nanopu_core::{CoreModel, CorePreset, CoreTimingConfig};
use nanopu_node::NodeConfig;

/// What `ooo_micro` printed (x100 values).
#[derive(Debug)]
struct Micro {
    ipc: u64,
    dep: u64,
    /// Cycles per load with 1, 2, 4, 8 and 16 chains.
    chase: [u64; 5],
    alternating: u64,
    taken: u64,
}

fn field(out: &str, line_start: &str, key: &str) -> u64 {
    let line = out
        .lines()
        .find(|l| l.starts_with(line_start))
        .unwrap_or_else(|| panic!("no `{line_start}` in:\n{out}"));
    let v = line.split(&format!("{key}=")).nth(1).expect(key);
    v.split_whitespace().next().unwrap().parse().unwrap()
}

fn micro(core: CoreTimingConfig) -> Micro {
    let cfg = NodeConfig {
        cores: 1,
        core,
        ..NodeConfig::default()
    };
    let (code, out, _) = run_program("ooo_micro", cfg);
    assert_eq!(code, 0, "{out}");
    let chase = [1, 2, 4, 8, 16].map(|k| {
        field(
            &out,
            &format!("ooo_micro: chase k={k} "),
            "cycles_per_load_x100",
        )
    });
    Micro {
        ipc: field(&out, "ooo_micro: alu_indep", "ipc_x100"),
        dep: field(&out, "ooo_micro: alu_dep", "cycles_per_add_x100"),
        chase,
        alternating: field(&out, "ooo_micro: branch", "alternating_x100"),
        taken: field(&out, "ooo_micro: branch", "taken_x100"),
    }
}

fn broadwell() -> CoreTimingConfig {
    CorePreset::Broadwell.config()
}

#[test]
fn width_chains_and_misses_in_the_window() {
    let m = micro(broadwell());
    // 4-wide: 34 instructions per loop iteration, the taken branch ends
    // its fetch group (9 cycles): IPC 3.78; a chain runs at 1 per cycle.
    assert!((360..=400).contains(&m.ipc), "{m:?}");
    assert!((100..=102).contains(&m.dep), "{m:?}");
    // Misses overlap: each doubling of the chains halves the time per
    // load until the 10 MSHRs are all busy.
    let [k1, k2, k4, k8, k16] = m.chase;
    for (a, b) in [(k1, k2), (k2, k4), (k4, k8)] {
        assert!(b * 100 < a * 55 && b * 100 > a * 45, "{m:?}");
    }
    assert!(
        k16 * 10 > k1 * 9 / 10 && k16 * 10 < k1 * 11 / 10,
        "10 MSHRs: {m:?}"
    );
    // The in-order core with its blocking L1D overlaps none and issues one
    // instruction per cycle.
    let rocket = micro(CoreTimingConfig::default());
    assert!(rocket.ipc <= 100, "{rocket:?}");
    let [r1, .., r16] = rocket.chase;
    assert!(r16 * 100 > r1 * 95, "{rocket:?}");
}

#[test]
fn the_mshrs_bound_memory_level_parallelism() {
    for mshrs in [2u64, 4] {
        let m = micro(CoreTimingConfig {
            l1d_mshrs: mshrs as u32,
            ..broadwell()
        });
        let [k1, _, k4, k8, k16] = m.chase;
        // At most `mshrs` misses in flight: k chains >= mshrs run at k1 / mshrs.
        for k in [k8, k16] {
            assert!(
                k * mshrs * 100 > k1 * 90 && k * mshrs * 100 < k1 * 110,
                "{mshrs} MSHRs: {m:?}"
            );
        }
        if mshrs == 4 {
            assert!(k4 * 4 * 100 < k1 * 110, "{m:?}");
        }
    }
}

#[test]
fn the_rob_bounds_memory_level_parallelism() {
    // 32 MSHRs, so the window is what limits the misses in flight: a
    // 16-chain loop iteration is 18 instructions (16 loads, a decrement,
    // a branch), and loads retire in order behind the oldest miss.
    let k16 = |rob| {
        let mut c = broadwell();
        c.l1d_mshrs = 32;
        c.ooo.rob_entries = rob;
        let m = micro(c);
        (m.chase[0], m.chase[4])
    };
    let (a1, a) = k16(8);
    let (b1, b) = k16(24);
    let (c1, c) = k16(64);
    // One chain never has two misses in flight: the ROB does not matter.
    assert!(a1 == b1 && b1 == c1, "{a1} {b1} {c1}");
    // At most 8 instructions in the window: at most 8 misses in flight.
    assert!(a * 8 >= a1, "{a} {a1}");
    // More entries, more misses in flight.
    assert!(a * 100 > b * 150 && b * 100 > c * 115, "{a} {b} {c}");
}

#[test]
fn a_mispredict_costs_the_penalty() {
    // With the counter saturated taken, the alternating branch mispredicts
    // on every other iteration: twice the difference per iteration is one
    // mispredict's cost. Doubling the penalty adds exactly the difference.
    let cost = |penalty| {
        let m = micro(CoreTimingConfig {
            branch_mispredict_cycles: penalty,
            ..broadwell()
        });
        2 * (m.alternating - m.taken)
    };
    let (c15, c30) = (cost(15), cost(30));
    assert!((1500..=2000).contains(&c15), "{c15}");
    assert!((c30 - c15).abs_diff(1500) <= 20, "{c15} {c30}");
}

#[test]
fn presets_are_out_of_order_and_valid() {
    for p in [
        CorePreset::Broadwell,
        CorePreset::SandyBridge,
        CorePreset::CortexA57,
        CorePreset::Boom,
    ] {
        let c = p.config();
        assert_eq!(c.model, CoreModel::OutOfOrder, "{p:?}");
        assert_eq!(c.preset, Some(p));
        c.validate().unwrap_or_else(|e| panic!("{p:?}: {e}"));
    }
    // NEBULA Table II.
    let a57 = CorePreset::CortexA57.config();
    assert_eq!(
        (
            a57.clock_mhz,
            a57.ooo.width,
            a57.ooo.rob_entries,
            a57.l1d_mshrs
        ),
        (2000, 3, 128, 32)
    );
    // The out-of-order model needs MSHRs.
    let blocking = CoreTimingConfig {
        l1d_mshrs: 0,
        ..a57
    };
    let e = blocking.validate().unwrap_err().to_string();
    assert!(e.contains("l1d_mshrs"), "{e}");
}
