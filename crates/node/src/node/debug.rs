//! Running a node under a debugger, and the state access a debugger needs
//! (registers are the hart's: `nanopu_core::debug`).

use super::{HartState, Node, NodeError, RunEnd};
use nanopu_core::{Hart, Observer};

/// How [`Node::run_observed`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObservedEnd {
    /// The program exited through HTIF with this code.
    Exited(u64),
    /// Every hart reached the cycle limit.
    Limit,
    /// The observer stopped this hart before the instruction at its pc;
    /// the others are where the node's schedule left them.
    Stopped { hart: usize },
}

impl Node {
    /// Like [`run`](Node::run), calling `observer` around every instruction
    /// (instead of the node's own observer); it may stop a hart.
    pub fn run_observed(
        &mut self,
        limit: u64,
        observer: &mut dyn Observer,
    ) -> Result<ObservedEnd, NodeError> {
        self.observer_stop = None;
        let end = self.run_inner(limit, Some(observer))?;
        Ok(match (self.observer_stop.take(), end) {
            (Some(hart), _) => ObservedEnd::Stopped { hart },
            (None, RunEnd::Exited(code)) => ObservedEnd::Exited(code),
            (None, RunEnd::Limit) => ObservedEnd::Limit,
        })
    }

    /// Runs hart `h` alone, the others frozen where they are (a debugger's
    /// scheduler locking: stepping one thread), calling `observer` around
    /// each instruction, until the observer stops it, the program exits or
    /// the hart reaches cycle `limit`. A sleeping hart is advanced to when
    /// it wakes; one that never can is a deadlock.
    pub fn run_hart_observed(
        &mut self,
        h: usize,
        limit: u64,
        observer: &mut dyn Observer,
    ) -> Result<ObservedEnd, NodeError> {
        self.observer_stop = None;
        loop {
            if let Some((code, _)) = self.exit {
                return Ok(ObservedEnd::Exited(code));
            }
            if self.states[h] != HartState::Running && !self.can_wake(h) {
                match self.wake_cycle(h) {
                    Some(c) if c < limit => self.advance(h, c),
                    Some(_) => return Ok(ObservedEnd::Limit),
                    None => return Err(NodeError::Deadlock(self.describe_waits())),
                }
                continue;
            }
            self.set_state(h, HartState::Running);
            if self.harts[h].cycle() >= limit {
                return Ok(ObservedEnd::Limit);
            }
            self.update_mip(h);
            let mut end = limit;
            for (c, _) in self.bus.devices().next_interrupts(h) {
                if c > self.harts[h].cycle() {
                    end = end.min(c);
                }
            }
            if let Some(c) = self.harts[h].next_hts_event_cycle() {
                end = end.min(c);
            }
            let stop =
                self.harts[h].run_observed(&mut self.bus, &mut self.decode_cache, end, observer);
            self.end_slice(h, stop, true)?;
            if let Some(hart) = self.observer_stop.take() {
                return Ok(ObservedEnd::Stopped { hart });
            }
        }
    }

    /// Hart `h`, for a debugger to change its registers while the node is
    /// stopped.
    pub fn hart_mut(&mut self, h: usize) -> &mut Hart {
        self.forget_wakes();
        // A debugger may make it do anything, output included.
        self.may_have_output |= 1 << h;
        &mut self.harts[h]
    }

    /// Reads DRAM at `addr` into `buf` for a debugger; returns the number of
    /// bytes read (fewer than asked where DRAM ends; device registers are
    /// not read, as reads may have side effects).
    pub fn peek_memory(&self, addr: u64, buf: &mut [u8]) -> usize {
        let dram = self.bus.dram();
        let end = dram.base().saturating_add(dram.size());
        if addr < dram.base() || addr >= end {
            return 0;
        }
        let n = buf.len().min((end - addr) as usize);
        match dram.slice(addr, n as u64) {
            Some(s) => {
                buf[..n].copy_from_slice(s);
                n
            }
            None => 0,
        }
    }

    /// Writes `data` to DRAM at `addr` for a debugger, as a store would
    /// (other harts lose their reservations; decoded code is dropped).
    /// Returns false, writing nothing, if it is not all DRAM.
    pub fn poke_memory(&mut self, addr: u64, data: &[u8]) -> bool {
        self.forget_wakes();
        let Some(s) = self.bus.dram_mut().slice_mut(addr, data.len() as u64) else {
            return false;
        };
        s.copy_from_slice(data);
        self.bus.break_reservations(addr, data.len() as u64);
        self.decode_cache.invalidate();
        true
    }

    /// Flushes the node's observer (trace, commit log), if any.
    pub fn flush_observer(&mut self) -> std::io::Result<()> {
        match self.observer.as_deref_mut() {
            Some(o) => o.flush(),
            None => Ok(()),
        }
    }
}
