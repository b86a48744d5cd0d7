//! Replays a DRAM access trace through the banked DRAM model, as DRAMsim3's
//! trace-driven front end (`dramsim3main -t`) does, so that
//! `scripts/dram-compare.sh` can put both side by side.
//!
//!     dram_replay STANDARD TRACE CYCLES     # prints the figures, one `key value` a line
//!     dram_replay --dramsim3-ini STANDARD   # prints the standard as a DRAMsim3 configuration
//!
//! A trace line is DRAMsim3's: `0xADDRESS READ|WRITE CLOCK` (clocks of the
//! DRAM's command clock). As DRAMsim3's `TraceBasedCPU`, at most one request
//! enters per clock, in trace order, and a read that finds the scheduler's
//! window full holds the trace until it enters; a read's latency runs from
//! then to its data (DRAMsim3's `read_latency`). Reads are queued and
//! scheduled first-ready first-come-first-served among those waiting
//! (`BankedDram::submit_read`), as DRAMsim3's controller schedules them. Run for CYCLES clocks: reads
//! done by then and writes accepted by then count (DRAMsim3's
//! `num_reads_done`, `num_writes_done`), and the bandwidth is their bytes
//! over CYCLES clocks (DRAMsim3's `average_bandwidth`).

use nanopu_node::memory::dram_banked::{BankedDram, ReadDone};
use nanopu_node::memory::dram_standard::{DramStandard, StandardName};
use std::process::ExitCode;

/// The standard as compared: with refreshes staggered over the ranks.
/// DRAMsim3's other rank-level policy, `RANK_LEVEL_SIMULTANEOUS`, refreshes
/// rank 0 only (`refresh.cc` `InsertRefresh` breaks after the first rank),
/// so FASED's all-at-once refresh has no counterpart there.
fn standard(name: &str) -> Result<DramStandard, String> {
    let n: StandardName = serde::Deserialize::deserialize(serde::de::value::StrDeserializer::<
        serde::de::value::Error,
    >::new(name))
    .map_err(|e| format!("standard {name:?}: {e}"))?;
    let mut s = n.standard();
    s.refresh_staggered = true;
    Ok(s)
}

/// The standard as a DRAMsim3 `.ini` (its `configs/DDR4_*.ini` layout).
fn dramsim3_ini(s: &DramStandard) -> String {
    // FASED's DDR3 runs at the core's clock: the nanoPU prototype's 3.2 GHz.
    let mhz = s.clock_mhz.unwrap_or(3200) as f64;
    let protocol = if s.bankgroups > 1 { "DDR4" } else { "DDR3" };
    let rank_mb = (s.rows * s.row_bytes() * (s.bankgroups * s.banks_per_group) as u64) >> 20;
    format!(
        "[dram_structure]\nprotocol = {protocol}\nbankgroups = {}\nbanks_per_group = {}\n\
         rows = {}\ncolumns = {}\ndevice_width = 8\nBL = {}\n\n\
         [timing]\ntCK = {:.6}\nAL = {}\nCL = {}\nCWL = {}\ntRCD = {}\ntRP = {}\ntRAS = {}\n\
         tRFC = {}\ntREFI = {}\ntRPRE = 0\ntWPRE = 0\ntRRD_S = {}\ntRRD_L = {}\ntWTR_S = {}\n\
         tWTR_L = {}\ntFAW = {}\ntWR = {}\ntRTP = {}\ntCCD_S = {}\ntCCD_L = {}\ntRTRS = {}\n\
         tRC = {}\ntCKE = 6\ntCKESR = 7\ntXS = 432\ntXP = 8\n\n\
         [power]\nVDD = 1.2\nIDD0 = 48\nIPP0 = 3.0\nIDD2P = 25\nIDD2N = 34\nIDD3P = 37\n\
         IDD3N = 43\nIDD4W = 123\nIDD4R = 135\nIDD5AB = 250\nIDD6x = 30\n\n\
         [system]\nchannel_size = {}\nchannels = 1\nbus_width = {}\naddress_mapping = {}\n\
         queue_structure = PER_BANK\nrefresh_policy = {}\nrow_buf_policy = OPEN_PAGE\n\
         cmd_queue_size = 8\ntrans_queue_size = {}\n\n[other]\nepoch_period = 100000000\n\
         output_level = 1\n",
        s.bankgroups,
        s.banks_per_group,
        s.rows,
        s.columns,
        s.bl,
        1000.0 / mhz,
        s.al,
        s.cl,
        s.cwl,
        s.trcd,
        s.trp,
        s.tras,
        s.trfc,
        s.trefi,
        s.trrd_s,
        s.trrd_l,
        s.twtr_s,
        s.twtr_l,
        s.tfaw,
        s.twr,
        s.trtp,
        s.tccd_s,
        s.tccd_l,
        s.trtrs,
        s.trc,
        rank_mb * s.ranks as u64,
        s.bus_bytes * 8,
        s.address_mapping,
        "RANK_LEVEL_STAGGERED",
        s.read_queue,
    )
}

fn parse_line(line: &str) -> Option<(u64, bool, u64)> {
    let mut it = line.split_whitespace();
    let addr = it.next()?;
    let addr =
        u64::from_str_radix(addr.trim_start_matches("0x").trim_start_matches("0X"), 16).ok()?;
    let write = match it.next()? {
        "READ" | "read" => false,
        "WRITE" | "write" => true,
        _ => return None,
    };
    let clock = it.next()?.parse().ok()?;
    Some((addr, write, clock))
}

fn replay(s: &DramStandard, trace: &str, cycles: u64) -> Result<String, String> {
    let text = std::fs::read_to_string(trace).map_err(|e| format!("{trace}: {e}"))?;
    let mut d = BankedDram::new(s, 1, s.address_mapping).map_err(|e| e.to_string())?;
    let mut latencies = Vec::new();
    let (mut writes_done, mut reads_issued) = (0u64, 0u64);
    let mut record = |r: ReadDone| {
        if r.data < cycles {
            latencies.push(r.data - r.admitted);
        }
    };
    let mut now = 0u64; // the clock the next request may enter at
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (addr, write, clock) = parse_line(line)
            .ok_or_else(|| format!("{trace}:{}: not `0xADDR READ|WRITE CLOCK`", i + 1))?;
        let t = clock.max(now);
        if t >= cycles {
            break;
        }
        if write {
            d.submit_write(addr, t, &mut record);
            writes_done += 1;
            now = t + 1;
        } else {
            let admit = d.submit_read(addr, t, reads_issued, &mut record);
            reads_issued += 1;
            now = admit + 1;
        }
    }
    d.finish(&mut record);
    latencies.sort_unstable();
    let n = latencies.len();
    let mean = latencies.iter().sum::<u64>() as f64 / n.max(1) as f64;
    // DRAMsim3's percentile convention does not exist (it dumps the
    // histogram); the script computes both sides' p99 the same way from
    // these: the smallest latency at or above 99 % of reads.
    let p99 = if n == 0 {
        0
    } else {
        latencies[((n * 99).div_ceil(100)).max(1) - 1]
    };
    let mhz = s.clock_mhz.unwrap_or(3200) as f64;
    let ns = cycles as f64 * 1000.0 / mhz;
    let bytes = (n as u64 + writes_done) * s.access_bytes() as u64;
    let st = &d.stats;
    Ok(format!(
        "reads_issued {reads_issued}\nreads_done {n}\nwrites_done {writes_done}\n\
         mean_read_latency {mean:.3}\np99_read_latency {p99}\nbandwidth_gb_s {:.4}\n\
         row_hits {}\nrow_misses {}\nrow_conflicts {}\nwrite_drains {}\nwrite_buffer_hits {}\n",
        bytes as f64 / ns,
        st.row_hits,
        st.row_misses,
        st.row_conflicts,
        st.write_drains,
        st.write_buffer_hits,
    ))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = match args.as_slice() {
        [flag, name] if flag == "--dramsim3-ini" => standard(name).map(|s| dramsim3_ini(&s)),
        [name, trace, cycles] => cycles
            .parse()
            .map_err(|_| format!("CYCLES {cycles:?}: not a number"))
            .and_then(|c| standard(name).and_then(|s| replay(&s, trace, c))),
        _ => Err("usage: dram_replay STANDARD TRACE CYCLES | --dramsim3-ini STANDARD".into()),
    };
    match out {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
