//! Where each experiment's model comes from: the prototype's RTL and
//! harness (l-nic/rocket-chip lnic-dev 33813784, l-nic/lnic cbfa155,
//! l-nic/chipyard tag nanoPU-artifact-v1.0, l-nic/firesim aac81913,
//! ucb-bar/icenet 512c87e as l-nic/icenet), the papers, or our own
//! assumptions. `docs/fidelity.md` has the parameter-by-parameter table;
//! this is the one-line summary the report prints per experiment.

/// The core and the register-file interface, shared by every nanoPU run.
const CORE: &str = "core: Rocket timing of the prototype's rocket-chip (lnic-dev 33813784: netRX read at \
                    decode, netTX written at writeback, RocketCore.scala:295,695,1002-1035; no flush after LNIC CSR \
                    writes, CSR.scala:696-697, the scheduler's interrupt 4 cycles after a done/idle report, \
                    LNICQueues.scala:534-544; blocking L1D, nMSHRs = 0, subsystem/Configs.scala:58)";

/// The source of the model behind experiment `id`, or `None` when none is
/// recorded (an experiment added since).
pub fn model_source(id: &str) -> Option<&'static str> {
    Some(match id {
        "w2w-8B" | "loopback-latency-vs-size" => {
            "core: see `loopback-tput-vs-size`; NIC stage latencies: NanoTransport Table 1 and nanoPU §5.2.1 \
             (papers); core dispatch and TX queue (1 NIC cycle each): assumption; traditional NIC: icenet \
             NIC.scala (WithIceNIC: 64-entry queues, 64-bit data path, 8 memory transactions), DMA setup \
             (20 cycles): assumption; timestamps first bit in, last bit out, as lnic SimUtils.scala:34-38"
        }
        "loopback-tput-vs-size" | "loopback-inc" | "dot-product" => {
            "core: Rocket timing of the prototype's rocket-chip (lnic-dev 33813784: netRX read at decode, netTX \
             written at writeback, RocketCore.scala:295,695,1002-1035; no flush after LNIC CSR writes, \
             CSR.scala:696-697; blocking L1D, Configs.scala:58); traditional NIC: icenet NIC.scala, its RX \
             packet buffer (14,400 B, NIC.scala:281, Buffer.scala); the traditional driver is ours (a ring of \
             30 buffers), not the artifact's batch programs (tests-icenic/*-batch.c, 20-40 buffers with a \
             barrier)"
        }
        "hts-vs-tis" | "bounded" => {
            "thread scheduler: nanoPU §3.4 and rocket-chip LNICQueues.scala (RX queues, msg_done, timers); \
             TIS: 5 RTC ticks (chipyard tests-lnic/lnic-scheduler.h:3); loads and service: firesim \
             deploy/workloads/lnic-evaluation/config_*_scheduling_runtime.ini (1600-cycle service, sweep from \
             3200 cycles between requests); arrivals: Poisson, timed at the node's wire (`prototype-flow` \
             measures the harness's way); core as `loopback-tput-vs-size`"
        }
        "prototype-flow" => {
            "the prototype's evaluation flow: lnic-evaluation.c's interface and the runs' parameters (firesim \
             deploy/workloads/lnic-evaluation/config_*_runtime.ini); arrivals as the FireSim load generator \
             sends them, on 140-cycle switch iterations, at most one per iteration (switch.cc:685-700, 1362); \
             switch-side timing given beside the wire-side one; scheduler and core as `hts-vs-tis`"
        }
        "jbsq-vs-rss" => {
            "service times and loads: firesim config_jbsq_runtime.ini / config_rss_runtime.ini drawn as \
             switch.cc:712-722 (normal 1600 +- 100 and 16000 +- 100 cycles, 0.5 % long, sweep from 900 cycles \
             between requests); JBSQ(2): nanoPU §3.3; RSS: a random core per request (switch.cc:1062, a \
             random context per core); core as `loopback-tput-vs-size`"
        }
        "incast-80" => {
            "network: firesim deploy/workloads/lnic-incast-single-core/config_90host_2xlarge_runtime.ini \
             (1218-cycle links, no switching latency, 81600 B per port and priority, timeout 38976 cycles, \
             rtt_pkts 2) and switch.cc:1123-1160 (trimming to the high-priority queue); 1 KB messages \
             (chipyard tests-lnic/lnic-incast-single-core.c); transport: NanoTransport (paper)"
        }
        "nt-latency" | "nt-line-rate" | "nt-incast" => {
            "NanoTransport paper (Table 1 stage latencies, §5-6 setups); timeouts from l-nic/nanoPU-sim \
             config.json; sizes of message tables and buffers, Homa overcommitment: assumptions; links carry \
             Ethernet's 20 B of preamble and gap (the paper's 380 Mrps does not count them)"
        }
        "mica" | "setalg" | "raft" | "chain" | "rdma" => {
            "application programs: ours, written from the papers (`artifact` runs the prototype's own MICA \
             beside ours); core as `loopback-tput-vs-size`; memory below the L1s: the 512 KB L2 with \
             rocket-chip InclusiveCache defaults, then the prototype's FireSim memory (`firesim-lnic`: FASED's \
             LLC model and DDR3 FR-FCFS, firesim config_build_recipes_lnic.ini:15; docs/memory.md; `rdma` \
             keeps the fluid model); network: nanoPU §5.3 (300 ns switch, 43 ns links)"
        }
        "memory-systems" => {
            "Table 1's memory-bound applications as their own experiments run them, under each memory \
             preset: `firesim-lnic` (FASED's 4 MiB LLC model and DDR3 FR-FCFS, firesim \
             config_build_recipes_lnic.ini:15, FASEDTargetConfigs.scala), `ddr4-3200` (Micron MT40A1G8 \
             -062E), `fluid` (assumption: 75 ns flat); docs/memory.md"
        }
        "artifact" => {
            "the prototype's own programs (chipyard tests-lnic/, built unmodified from the user's checkout by \
             scripts/build-lnic-tests.sh), driven in the request formats of firesim's switch model \
             (target-design/switch/switch.cc, MICA and EUCLIDEAN_DIST load types) with their runs' keys and \
             service word (deploy/workloads/lnic-multi-core-mica, lnic-euclidean-dist); measured as our \
             versions are; core and memory as `mica`"
        }
        "hdsearch" => {
            "application program: ours, with the prototype's HD search workload (chipyard \
             software/euclidean-dist: 10,000 vectors of 64 u16, 2-5 candidates a request from firesim \
             switch.cc's EUCLIDEAN_DIST load); core as `loopback-tput-vs-size`; memory: docs/memory.md"
        }
        "othello" | "nn" | "int" | "classifier" | "nbody" | "table1" => {
            "application programs: ours (the paper does not describe them: work per request is a guess); core \
             as `loopback-tput-vs-size`; memory: docs/memory.md"
        }
        "gopt" => {
            "G-Opt paper's kernels, ours; core as `loopback-tput-vs-size` but with 10 L1D MSHRs (the paper's \
             Xeon's line-fill buffers)"
        }
        _ => return None,
    })
}

/// The core's part of every nanoPU model, for the report's preamble.
pub fn core_source() -> &'static str {
    CORE
}
