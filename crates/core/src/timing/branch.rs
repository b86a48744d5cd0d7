//! Branch prediction: a bimodal history table for conditional branches, a
//! return-address stack for returns and a direct-mapped target buffer for
//! other indirect jumps (Rocket's front end: BHT, RAS and BTB).

/// Predictor state of one core.
#[derive(Clone, Debug)]
pub struct BranchPredictor {
    /// 2-bit saturating counters; >= 2 predicts taken.
    bht: Vec<u8>,
    ras: Vec<u64>,
    /// Number of valid entries on the RAS (it wraps, losing the oldest).
    ras_len: usize,
    ras_top: usize,
    /// (pc, target) of recent indirect jumps.
    btb: Vec<(u64, u64)>,
    pub mispredicts: u64,
}

/// x1 (ra) and x5 (t0) are link registers for RAS hints (unprivileged spec,
/// JALR "return-address prediction stack" hints).
fn is_link(r: u8) -> bool {
    r == 1 || r == 5
}

impl BranchPredictor {
    pub fn new(bht_entries: u32, ras_entries: u32, btb_entries: u32) -> BranchPredictor {
        BranchPredictor {
            bht: vec![1; bht_entries as usize],
            ras: vec![0; ras_entries as usize],
            ras_len: 0,
            ras_top: 0,
            btb: vec![(u64::MAX, 0); btb_entries as usize],
            mispredicts: 0,
        }
    }

    /// A conditional branch at `pc` resolved as `taken`. Returns whether it
    /// was mispredicted.
    #[inline]
    pub fn branch(&mut self, pc: u64, taken: bool) -> bool {
        let i = ((pc >> 1) as usize) & (self.bht.len() - 1);
        let c = &mut self.bht[i];
        let predicted = *c >= 2;
        if taken {
            *c = (*c + 1).min(3);
        } else {
            *c = c.saturating_sub(1);
        }
        let miss = predicted != taken;
        self.mispredicts += miss as u64;
        miss
    }

    /// Whether the conditional branch at `pc` is predicted taken with a
    /// saturated counter: taking it again is predicted and changes nothing.
    #[inline]
    pub fn taken_saturated(&self, pc: u64) -> bool {
        self.bht[((pc >> 1) as usize) & (self.bht.len() - 1)] == 3
    }

    /// A `jal` at `pc` linking into `rd` (direct target: always predicted).
    #[inline]
    pub fn jal(&mut self, rd: u8, return_addr: u64) {
        if is_link(rd) {
            self.push(return_addr);
        }
    }

    /// A `jalr` at `pc` to `target`. Returns whether it was mispredicted.
    pub fn jalr(&mut self, pc: u64, rd: u8, rs1: u8, target: u64, return_addr: u64) -> bool {
        let is_return = is_link(rs1) && !is_link(rd);
        let predicted = if is_return {
            self.pop()
        } else {
            let e = self.btb[((pc >> 1) as usize) & (self.btb.len() - 1)];
            (e.0 == pc).then_some(e.1)
        };
        if !is_return {
            let n = self.btb.len();
            self.btb[((pc >> 1) as usize) & (n - 1)] = (pc, target);
        }
        if is_link(rd) {
            self.push(return_addr);
        }
        let miss = predicted != Some(target);
        self.mispredicts += miss as u64;
        miss
    }

    fn push(&mut self, addr: u64) {
        self.ras_top = (self.ras_top + 1) % self.ras.len();
        self.ras[self.ras_top] = addr;
        self.ras_len = (self.ras_len + 1).min(self.ras.len());
    }

    fn pop(&mut self) -> Option<u64> {
        if self.ras_len == 0 {
            return None;
        }
        let v = self.ras[self.ras_top];
        self.ras_top = (self.ras_top + self.ras.len() - 1) % self.ras.len();
        self.ras_len -= 1;
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_branch_is_learned() {
        let mut p = BranchPredictor::new(512, 6, 32);
        let misses: u32 = (0..100).map(|_| p.branch(0x8000_0010, true) as u32).sum();
        assert_eq!(misses, 1);
        assert!(p.branch(0x8000_0010, false));
    }

    #[test]
    fn returns_use_the_stack() {
        let mut p = BranchPredictor::new(512, 6, 32);
        p.jal(1, 0x104);
        p.jal(1, 0x204);
        assert!(!p.jalr(0x300, 0, 1, 0x204, 0));
        assert!(!p.jalr(0x310, 0, 1, 0x104, 0));
        assert!(p.jalr(0x320, 0, 1, 0x104, 0), "empty stack mispredicts");
    }

    #[test]
    fn indirect_jumps_use_the_target_buffer() {
        let mut p = BranchPredictor::new(512, 6, 32);
        assert!(p.jalr(0x400, 0, 10, 0x900, 0));
        assert!(!p.jalr(0x400, 0, 10, 0x900, 0));
        assert!(p.jalr(0x400, 0, 10, 0xa00, 0));
    }
}
