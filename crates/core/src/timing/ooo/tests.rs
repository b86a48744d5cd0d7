//! The window's rules, one test each, on synthetic instruction streams
//! (the guest-program tests are in `crates/node/tests/ooo_core.rs`).

use super::*;
use crate::timing::{Class, CoreTimingConfig, Timing, NO_REG};

fn core(ooo: OooConfig) -> OooCore {
    let c = CoreTimingConfig {
        model: CoreModel::OutOfOrder,
        l1d_mshrs: 4,
        ooo,
        ..CoreTimingConfig::default()
    };
    c.validate().unwrap();
    OooCore::new(&c)
}

fn wide() -> OooConfig {
    OooConfig {
        width: 4,
        retire_width: 4,
        rob_entries: 192,
        lq_entries: 64,
        sq_entries: 64,
        issue_width: 8,
        alu_ports: 4,
        load_ports: 2,
        store_ports: 1,
        mem_ports: 3,
        mul_ports: 1,
        fp_ports: 2,
    }
}

fn inst(class: Class, dst: u8, src: u8) -> Timing {
    Timing {
        class,
        srcs: [src, 0, 0],
        dst,
    }
}

/// Times `t` as an instruction that completes `lat` cycles after issue.
fn run(o: &mut OooCore, t: Timing, lat: u64) -> u64 {
    let issue = o.dispatch(&t, false);
    o.retire(&t, issue + lat, false, false, false);
    issue
}

/// `n` ALU instructions in `chains` independent dependence chains.
fn alu_chains(o: &mut OooCore, n: u64, chains: u8) -> u64 {
    let start = o.drained();
    for i in 0..n {
        let r = 1 + (i % chains as u64) as u8;
        run(o, inst(Class::Alu, r, r), 1);
    }
    o.drained() - start
}

#[test]
fn independent_instructions_reach_the_width() {
    let cycles = alu_chains(&mut core(wide()), 4000, 8);
    assert!(
        (1000..1010).contains(&cycles),
        "{cycles} cycles for 4000 at width 4"
    );
    let two = alu_chains(
        &mut core(OooConfig {
            width: 2,
            retire_width: 2,
            ..wide()
        }),
        4000,
        8,
    );
    assert!((2000..2010).contains(&two), "{two} cycles at width 2");
}

#[test]
fn alu_ports_limit_issue() {
    let ports = OooConfig {
        alu_ports: 2,
        ..wide()
    };
    let cycles = alu_chains(&mut core(ports), 4000, 8);
    assert!(
        (2000..2010).contains(&cycles),
        "{cycles} cycles with 2 ALUs"
    );
}

#[test]
fn a_dependence_chain_runs_at_its_latency() {
    let cycles = alu_chains(&mut core(wide()), 4000, 1);
    assert!(
        (4000..4010).contains(&cycles),
        "{cycles} cycles for a chain of 4000"
    );
    // Chains of 3-cycle multiplies, pipelined: 4 chains overlap (100 x 3
    // cycles) on 4 ports; one port issues one per cycle.
    for (ports, expect) in [(4, 300), (1, 400)] {
        let mut o = core(OooConfig {
            mul_ports: ports,
            ..wide()
        });
        for i in 0..400u64 {
            let r = 1 + (i % 4) as u8;
            run(&mut o, inst(Class::Mul, r, r), 3);
        }
        let t = o.drained();
        assert!((expect..expect + 10).contains(&t), "{t} with {ports} ports");
    }
}

#[test]
fn a_full_rob_stops_dispatch_until_the_head_retires() {
    for (rob, expect_stall) in [(16, true), (256, false)] {
        let mut o = core(OooConfig {
            rob_entries: rob,
            ..wide()
        });
        // A load that misses for 300 cycles, then independent work.
        run(&mut o, inst(Class::Load, 10, 2), 300);
        let mut last_issue = 0;
        for i in 0..100u64 {
            let r = 1 + (i % 8) as u8;
            last_issue = run(&mut o, inst(Class::Alu, r, r), 1);
        }
        if expect_stall {
            assert!(o.stats.rob_full > 0);
            assert!(last_issue > 300, "issued at {last_issue} behind the miss");
        } else {
            assert_eq!(o.stats.rob_full, 0);
            assert!(last_issue < 40, "issued at {last_issue} under the miss");
        }
        // Either way nothing retires before the load.
        assert!(o.drained() > 300);
    }
}

#[test]
fn independent_misses_overlap_within_the_window_only() {
    // 64 loads, each missing for 200 cycles, with 3 ALU instructions
    // between them: a 32-entry ROB holds 8 loads at a time.
    let time = |rob| {
        let mut o = core(OooConfig {
            rob_entries: rob,
            ..wide()
        });
        for i in 0..64u8 {
            run(&mut o, inst(Class::Load, 10 + i % 16, 2), 200);
            for _ in 0..3 {
                run(&mut o, inst(Class::Alu, 5, 5), 1);
            }
        }
        o.drained()
    };
    let (small, large) = (time(32), time(256));
    // 8 groups of 8 misses vs 1 group of 64 (plus dispatch).
    assert!((1600..1700).contains(&small), "{small}");
    assert!((200..300).contains(&large), "{large}");
}

#[test]
fn the_load_queue_bounds_loads_in_flight() {
    let mut o = core(OooConfig {
        lq_entries: 4,
        ..wide()
    });
    for i in 0..8u8 {
        run(&mut o, inst(Class::Load, 10 + i, 2), 200);
    }
    assert!(o.stats.lq_full > 0);
    assert!(
        o.drained() >= 400,
        "two rounds of 4 misses: {}",
        o.drained()
    );
}

#[test]
fn a_mispredict_refetches_after_the_penalty() {
    let c = CoreTimingConfig {
        model: CoreModel::OutOfOrder,
        l1d_mshrs: 4,
        branch_mispredict_cycles: 15,
        ooo: wide(),
        ..CoreTimingConfig::default()
    };
    let mut o = OooCore::new(&c);
    let b = inst(Class::Branch, NO_REG, 5);
    let issue = o.dispatch(&b, false);
    o.retire(&b, issue + 1, true, true, false);
    assert_eq!(o.front_end(), issue + 1 + 15);
    // A correctly predicted taken branch only ends the fetch group.
    let fe = o.front_end();
    let issue = o.dispatch(&b, false);
    o.retire(&b, issue + 1, true, false, false);
    let next = o.dispatch(&inst(Class::Alu, 1, 1), false);
    assert_eq!(o.front_end(), fe + 1);
    assert!(next > issue);
}

#[test]
fn retirement_is_in_order_and_width_bound() {
    let mut o = core(OooConfig {
        retire_width: 1,
        ..wide()
    });
    let cycles = alu_chains(&mut o, 400, 8);
    assert!((400..410).contains(&cycles), "{cycles}");
}

#[test]
fn serialising_instructions_wait_for_the_window_to_drain() {
    let mut o = core(wide());
    run(&mut o, inst(Class::Load, 10, 2), 300);
    let csr = inst(Class::Csr, 11, 0);
    let issue = o.dispatch(&csr, true);
    assert!(issue >= 300, "{issue}");
    o.retire(&csr, issue + 1, false, false, true);
    assert!(o.front_end() > issue);
}

#[test]
fn a_load_waits_for_the_store_it_reads() {
    let mut o = core(wide());
    o.note_store(0x1000, 500);
    assert_eq!(o.load_done(0x1004, 10, 14), 500 + 3, "same word: forwarded");
    assert_eq!(o.load_done(0x1008, 10, 14), 14, "another word");
    assert_eq!(
        o.load_done(0x1000, 600, 604),
        604,
        "the store's data was ready"
    );
}
