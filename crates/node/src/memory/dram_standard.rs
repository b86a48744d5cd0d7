//! DRAM device standards for the banked DRAM model (`dram_banked.rs`): the
//! organisation of a channel (ranks, bank groups, banks, rows, columns) and
//! its timings in command-clock cycles (tCK), each with its source.
//!
//! Timings given in ns by a datasheet are converted to clocks the JEDEC way
//! (the rounding algorithm of the DDR4 SPD specification, JESD21-C 4.1.2.L-5:
//! `nCK = truncate(t / tCK * 1000 + 974) / 1000`, a 2.6 % guard band
//! against the rounding of tCK itself), taking the larger of a clock count
//! and a time where the datasheet says "greater of".

use serde::{Deserialize, Serialize};

/// A named standard (`[node.dram.banked] standard`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StandardName {
    /// DDR3 as FireSim's FASED models it (`ddr3-fased`).
    #[serde(rename = "ddr3-fased")]
    Ddr3Fased,
    /// DDR4-2400 (Micron -083E bin, 16-16-16), 8 Gb x8 devices.
    #[serde(rename = "ddr4-2400")]
    Ddr4_2400,
    /// DDR4-3200 (Micron -062E bin, 22-22-22), 8 Gb x8 devices.
    #[serde(rename = "ddr4-3200")]
    Ddr4_3200,
}

/// Organisation and timings of one DRAM channel. Times are in cycles of
/// the command clock (tCK).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DramStandard {
    pub name: &'static str,
    /// Command clock in MHz; `None`: the core's clock (FASED's models run at
    /// the target's clock, their timings counted in its cycles).
    pub clock_mhz: Option<u32>,
    pub ranks: u32,
    pub bankgroups: u32,
    pub banks_per_group: u32,
    /// Rows per bank.
    pub rows: u64,
    /// Columns per row (device columns; a row holds `columns * bus_bytes` bytes).
    pub columns: u32,
    /// Data bus width in bytes.
    pub bus_bytes: u32,
    /// Burst length in data beats (two per clock).
    pub bl: u32,
    pub cl: u32,
    pub cwl: u32,
    pub al: u32,
    pub trcd: u32,
    pub trp: u32,
    pub tras: u32,
    pub trc: u32,
    pub trrd_s: u32,
    pub trrd_l: u32,
    pub tfaw: u32,
    pub tccd_s: u32,
    pub tccd_l: u32,
    pub twtr_s: u32,
    pub twtr_l: u32,
    pub twr: u32,
    pub trtp: u32,
    pub trfc: u32,
    pub trefi: u32,
    /// Rank-to-rank switch (a controller's setting, not a device timing).
    pub trtrs: u32,
    /// Cycles a read's data takes after the device's CL + burst before it
    /// leaves the controller (FASED's `backendLatency`).
    pub backend: u32,
    /// Refreshes of the ranks spread evenly over tREFI (DRAMsim3's
    /// `RANK_LEVEL_STAGGERED`) or all at once (FASED: every rank's tREFI
    /// counter starts at reset).
    pub refresh_staggered: bool,
    /// Address bits from the most significant down, two letters a field:
    /// `ch` channel, `ra` rank, `bg` bank group, `ba` bank, `ro` row, `co`
    /// column (DRAMsim3's notation); below them the burst's bytes.
    pub address_mapping: &'static str,
    /// Writes the controller buffers before it drains them.
    pub write_queue: u32,
    /// Reads the controller may hold waiting for a column command (the
    /// scheduler's window); more wait outside.
    pub read_queue: u32,
}

impl StandardName {
    pub fn standard(self) -> DramStandard {
        match self {
            StandardName::Ddr3Fased => ddr3_fased(),
            StandardName::Ddr4_2400 => ddr4_2400(),
            StandardName::Ddr4_3200 => ddr4_3200(),
        }
    }
}

/// DDR3 as FireSim's FASED memory-timing model has it by default, as the
/// nanoPU prototype's runs used it (`DDR3FRFCFSLLC4MB`,
/// `customruntimeconfig=None`: the runtime configuration FASED generates
/// from its defaults, `FASEDMemoryTimingModel.scala` `getDefaultSettings`).
/// Sources, l-nic/firesim branch `lnic-dev` (c8d8279):
/// - timings: `sim/midas/src/main/scala/midas/models/dram/DramCommon.scala`
///   lines 67-85, "Defaults are set to sg093, x8, 2048Mb density (1GHz
///   clock)", in model cycles; FASED runs at the target's clock
///   (`FASEDTargetConfigs.scala` line 30: clock division 1), so one cycle
///   is one core cycle (3.2 GHz);
/// - tCWD 10 (write CAS latency), tAL 0, tRTRS 2, backendLatency 2
///   (`DramCommon.scala` lines 68, 71, 82, 155);
/// - organisation: 4 ranks, 8 banks, 16 GiB (`FASEDTargetConfigs.scala`
///   line 20: `DramOrganizationParams(maxBanks = 8, maxRanks = 4, dramSize
///   = 1 << 34)`); 8 KiB rows, bank bits from bit 13, rank bits above
///   them, row above (`DramCommon.scala` lines 119-139: open-page
///   "Baseline" map);
/// - FR-FCFS with an 8-reference window and an 8-deep transaction queue
///   (`FASEDTargetConfigs.scala` line 112: `WithDDR3FRFCFS(8, 8)`); FASED's
///   queue is unified, here both queues take its depth.
/// - BL8 (DDR3); burst of 4 clocks, FASED's tCCD = 4.
pub fn ddr3_fased() -> DramStandard {
    DramStandard {
        name: "ddr3-fased",
        clock_mhz: None,
        ranks: 4,
        bankgroups: 1,
        banks_per_group: 8,
        rows: 1 << 16, // 16 GiB / (4 ranks x 8 banks x 8 KiB)
        columns: 1024, // 8 KiB rows of a 64-bit bus
        bus_bytes: 8,
        bl: 8,
        cl: 14,
        cwl: 10,
        al: 0,
        trcd: 14,
        trp: 14,
        tras: 33,
        trc: 47,
        trrd_s: 8,
        trrd_l: 8,
        tfaw: 25,
        tccd_s: 4,
        tccd_l: 4,
        twtr_s: 8,
        twtr_l: 8,
        twr: 15,
        trtp: 8,
        trfc: 160,
        trefi: 7800,
        trtrs: 2,
        backend: 2,
        refresh_staggered: false,
        address_mapping: "rochrababgco",
        write_queue: 8,
        read_queue: 8,
    }
}

/// DDR4-2400, Micron 8Gb x8 DDR4 SDRAM (MT40A1G8) speed bin -083E
/// (16-16-16; datasheet "DDR4-2400 Speed Bins": tAA = tRCD = tRP = 13.32 ns,
/// tRAS 32 ns, tRC = tRAS + tRP) at tCK 0.833 ns (1200 MHz), CWL 12; AC
/// timings ("Electrical Characteristics and AC Timing Parameters",
/// DDR4-2400 column, 1 KB page of x8): tRRD_S greater of 4 CK or 3.3 ns,
/// tRRD_L greater of 4 CK or 4.9 ns, tFAW greater of 20 CK or 21 ns,
/// tCCD_S 4, tCCD_L greater of 4 CK or 5 ns, tWTR_S greater of 2 CK or
/// 2.5 ns, tWTR_L greater of 4 CK or 7.5 ns, tWR 15 ns, tRTP greater of 4 CK
/// or 7.5 ns, tRFC1 (8 Gb) 350 ns, tREFI 7.8 us. Organisation of an 8 Gb x8
/// device: 4 bank groups of 4 banks, 64 K rows, 1 K columns; one rank of 8
/// devices on a 64-bit bus (8 GiB). Controller settings (not in the
/// datasheet) as DRAMsim3's DDR4 configurations have them: tRTRS 1, a
/// 32-entry write buffer, the `rochrababgco` map.
pub fn ddr4_2400() -> DramStandard {
    DramStandard {
        name: "ddr4-2400",
        clock_mhz: Some(1200),
        ranks: 1,
        bankgroups: 4,
        banks_per_group: 4,
        rows: 1 << 16,
        columns: 1024,
        bus_bytes: 8,
        bl: 8,
        cl: 16,
        cwl: 12,
        al: 0,
        trcd: 16,
        trp: 16,
        tras: 39,  // 32 / 0.833 = 38.4
        trc: 55,   // 45.32 / 0.833 = 54.4
        trrd_s: 4, // 3.3 ns = 3.96 CK < 4
        trrd_l: 6, // 4.9 ns = 5.9
        tfaw: 26,  // 21 ns = 25.2
        tccd_s: 4,
        tccd_l: 6, // 5 ns = 6.0
        twtr_s: 3, // 2.5 ns = 3.0
        twtr_l: 9, // 7.5 ns = 9.0
        twr: 18,   // 15 ns = 18.0
        trtp: 9,
        trfc: 420,   // 350 ns = 420.2 (the datasheet's 420 nCK)
        trefi: 9360, // 7.8 us
        trtrs: 1,
        backend: 0,
        refresh_staggered: true,
        address_mapping: "rochrababgco",
        write_queue: 32,
        read_queue: 32,
    }
}

/// DDR4-3200, Micron 8Gb x8 DDR4 SDRAM (MT40A1G8) speed bin -062E
/// (22-22-22: tAA = tRCD = tRP = 13.75 ns, tRAS 32 ns, tRC 45.75 ns) at tCK
/// 0.625 ns (1600 MHz), CWL 16; AC timings as for DDR4-2400 above, in
/// DDR4-3200's clock: tRRD_S greater of 4 CK or 2.5 ns, tRRD_L greater of
/// 4 CK or 4.9 ns, tFAW greater of 20 CK or 21 ns (1 KB page), tCCD_L
/// greater of 4 CK or 5 ns, tWTR_S greater of 2 CK or 2.5 ns, tWTR_L
/// greater of 4 CK or 7.5 ns, tWR 15 ns, tRTP greater of 4 CK or 7.5 ns,
/// tRFC1 350 ns, tREFI 7.8 us. These are also the values of DRAMsim3's
/// `configs/DDR4_8Gb_x8_3200.ini`. Organisation and controller settings as
/// for DDR4-2400.
pub fn ddr4_3200() -> DramStandard {
    DramStandard {
        name: "ddr4-3200",
        clock_mhz: Some(1600),
        cl: 22,
        cwl: 16,
        trcd: 22,
        trp: 22,
        tras: 52,   // 32 / 0.625 = 51.2
        trc: 74,    // 45.75 / 0.625 = 73.2
        trrd_s: 4,  // 2.5 ns = 4.0
        trrd_l: 8,  // 4.9 ns = 7.84
        tfaw: 34,   // 21 ns = 33.6
        tccd_l: 8,  // 5 ns = 8.0
        twtr_s: 4,  // 2.5 ns = 4.0
        twtr_l: 12, // 7.5 ns = 12.0
        twr: 24,    // 15 ns = 24.0
        trtp: 12,
        trfc: 560,    // 350 ns = 560
        trefi: 12480, // 7.8 us
        ..ddr4_2400()
    }
}

impl DramStandard {
    /// Clock cycles a burst occupies the data bus.
    pub fn burst_cycles(&self) -> u32 {
        self.bl / 2
    }

    /// Bytes one column access moves (the line the controller serves).
    pub fn access_bytes(&self) -> u32 {
        self.bus_bytes * self.bl
    }

    /// Bytes in one row of a rank.
    pub fn row_bytes(&self) -> u64 {
        self.columns as u64 * self.bus_bytes as u64
    }

    /// Peak bandwidth of one channel in bytes per second at `clock_mhz`.
    pub fn peak_bytes_per_s(&self, clock_mhz: u32) -> u64 {
        // Two transfers a clock.
        2 * self.bus_bytes as u64 * clock_mhz as u64 * 1_000_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Clocks of `ps` at a tCK of `tck_fs` femtoseconds (JEDEC's rounding).
    fn ck(ps: u64, tck_fs: u64) -> u32 {
        ((ps * 1_000_000 / tck_fs + 974) / 1000) as u32
    }

    #[test]
    fn ddr4_timings_follow_from_the_datasheet_nanoseconds() {
        for (s, tck) in [(ddr4_2400(), 833_333), (ddr4_3200(), 625_000)] {
            let n = s.name;
            let taa = if n == "ddr4-2400" { 13_320 } else { 13_750 };
            assert_eq!(
                (s.cl, s.trcd, s.trp),
                (ck(taa, tck), ck(taa, tck), ck(taa, tck)),
                "{n}"
            );
            assert_eq!(s.tras, ck(32_000, tck), "{n} tRAS");
            assert_eq!(s.trc, ck(32_000 + taa, tck), "{n} tRC");
            assert_eq!(
                s.trrd_s,
                4.max(ck(if n == "ddr4-2400" { 3_300 } else { 2_500 }, tck)),
                "{n} tRRD_S"
            );
            assert_eq!(s.twtr_s, 2.max(ck(2_500, tck)), "{n} tWTR_S");
            assert_eq!(s.trfc, ck(350_000, tck), "{n} tRFC");
            assert_eq!(s.trrd_l, 4.max(ck(4_900, tck)), "{n} tRRD_L");
            assert_eq!(s.tfaw, 20.max(ck(21_000, tck)), "{n} tFAW");
            assert_eq!(s.tccd_l, 4.max(ck(5_000, tck)), "{n} tCCD_L");
            assert_eq!(s.twtr_l, 4.max(ck(7_500, tck)), "{n} tWTR_L");
            assert_eq!(s.twr, ck(15_000, tck), "{n} tWR");
            assert_eq!(s.trtp, 4.max(ck(7_500, tck)), "{n} tRTP");
            assert_eq!(s.trefi, ck(7_800_000, tck), "{n} tREFI");
            assert_eq!(s.row_bytes(), 8192);
        }
    }

    #[test]
    fn fased_ddr3_is_16_gib_of_8_kib_rows() {
        let s = ddr3_fased();
        let bytes = s.ranks as u64
            * s.bankgroups as u64
            * s.banks_per_group as u64
            * s.rows
            * s.row_bytes();
        assert_eq!(bytes, 16 << 30);
        assert_eq!(s.row_bytes(), 1 << 13);
    }
}
