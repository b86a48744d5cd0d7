//! Sleeping harts: when each may wake, the wake memos that spare the
//! scheduler from asking again (the module documentation of `node.rs`
//! says what they remember and when they are dropped), and moving
//! sleepers forward in time.

use super::{harts_in, HartState, Node};

impl Node {
    /// Every hart, as a mask.
    pub(super) fn all_harts(&self) -> u64 {
        u64::MAX >> (64 - self.harts.len())
    }

    /// Sets the interrupt bits devices drive (the CLINT's timer and software
    /// interrupts) of hart `h`, and the thread scheduler's bit from its HTS.
    pub(super) fn update_mip(&mut self, h: usize) {
        let hart = &mut self.harts[h];
        let devices = self.bus.devices();
        let raised = devices.interrupts(h, hart.cycle());
        hart.set_interrupt_lines(devices.interrupt_lines(), raised);
    }

    /// Before a slice of hart `h`: its device interrupt lines in `mip`, as
    /// [`update_mip`](Self::update_mip) sets them. Its thread scheduler is
    /// brought to the hart's cycle only if a line changed: otherwise the
    /// hart's run does it first thing, at the same cycle (it takes a pending
    /// interrupt before executing anything), and the scheduler's next event,
    /// read in between to end the slice, is the same either way.
    pub(super) fn update_lines_for_slice(&mut self, h: usize) {
        let hart = &mut self.harts[h];
        let devices = self.bus.devices();
        let lines = devices.interrupt_lines();
        let raised = devices.interrupts(h, hart.cycle()) & lines;
        if hart.csr().mip & lines != raised {
            hart.set_interrupt_lines(lines, raised);
        }
    }

    /// Brings hart `h`'s `mip` up to date with the devices and its thread
    /// scheduler, as the run loop does before every slice (for inspecting
    /// a stopped node).
    pub fn update_interrupts(&mut self, h: usize) {
        self.forget_wake(h);
        self.update_mip(h);
    }

    /// Whether sleeping hart `h` can continue now.
    pub(super) fn can_wake(&mut self, h: usize) -> bool {
        self.update_mip(h);
        let hart = &mut self.harts[h];
        // A stalled netRX/netTX access has not executed yet: an enabled
        // interrupt (the thread scheduler's, say) is taken before it.
        match self.states[h] {
            HartState::Running => true,
            HartState::Wfi => hart.interrupt_waiting(),
            HartState::Poll { period_cycles, .. } => {
                // The loop's inputs as its last iteration read them (from
                // its start: a device register may change within it).
                let since = hart.cycle().saturating_sub(period_cycles);
                hart.pending_interrupt().is_some()
                    || hart.net().msgs_ready(hart.cycle())
                    || self.watched_words_changed(h, since)
            }
            HartState::RxEmpty => {
                hart.pending_interrupt().is_some() || hart.net().msgs_ready(hart.cycle())
            }
            HartState::TxFull => {
                hart.pending_interrupt().is_some() || hart.net().tx_check(0).is_ok()
            }
        }
    }

    /// Gives the bus the memory words the sleeping pollers read: a store to
    /// one ends the storing hart's slice, and the wake check after it wakes
    /// the poller at the store's cycle.
    pub(super) fn watch_polled_words(&mut self) {
        self.watched_stale = false;
        let states = &self.states;
        let pollers =
            harts_in(self.sleeping).filter(|&h| matches!(states[h], HartState::Poll { .. }));
        let words = pollers.flat_map(|h| self.watches[h].iter().map(|&(word, _)| word));
        self.bus.watch_words(words);
    }

    /// Whether a word polling hart `h`'s loop reads differs from the value
    /// it read, as of `since` (the start of its last iteration).
    pub(super) fn watched_words_changed(&self, h: usize, since: u64) -> bool {
        self.watches[h]
            .iter()
            .any(|&(word, v)| self.bus.peek_word(word, since) != v)
    }

    /// [`watched_words_changed`](Self::watched_words_changed) for a hart
    /// in a polling loop, from the start of its last iteration.
    pub(super) fn poll_words_changed(&self, h: usize) -> bool {
        match self.states[h] {
            HartState::Poll { period_cycles, .. } => {
                self.watched_words_changed(h, self.harts[h].cycle().saturating_sub(period_cycles))
            }
            _ => false,
        }
    }

    /// The earliest cycle at which sleeping hart `h` may wake, if any.
    pub(super) fn wake_cycle(&self, h: usize) -> Option<u64> {
        let hart = &self.harts[h];
        let cycle = hart.cycle();
        // Interrupts wake a sleeper in wfi when enabled in mie, a poller or
        // a stalled access when also enabled globally (they are then taken).
        let irq_wakes = match self.states[h] {
            HartState::Running => return Some(cycle),
            HartState::Wfi => true,
            _ => hart.interrupts_enabled(),
        };
        // A device interrupt (the CLINT's timer) enabled in mie.
        let timer = if irq_wakes {
            self.bus
                .devices()
                .next_interrupts(h)
                .filter(|&(_, line)| hart.interrupt_enabled(line))
                .map(|(c, _)| c.max(cycle))
                .min()
        } else {
            None
        };
        // The thread scheduler's interrupt (a message for another context,
        // a demotion, an idle timeout), if enabled in mie.
        let hts = if irq_wakes {
            hart.next_hts_event_cycle().map(|c| c.max(cycle))
        } else {
            None
        };
        // A message already delivered but not yet arrived wakes a poller or
        // a core stalled on netRX when it arrives; a core stalled on netTX
        // goes on as soon as its NIC has taken a message from the FIFO.
        let message = match self.states[h] {
            HartState::Poll { .. } | HartState::RxEmpty => hart.net().next_rx_cycle(),
            HartState::TxFull if hart.net().tx_check(0).is_ok() => Some(cycle),
            _ => None,
        };
        // A device status register the loop reads changes by itself.
        let device = match self.states[h] {
            HartState::Poll { period_cycles, .. } => {
                let since = cycle.saturating_sub(period_cycles);
                self.watches[h]
                    .iter()
                    .filter(|&&(word, _)| self.bus.dram().offset(word, 8).is_none())
                    .filter_map(|&(word, _)| self.bus.devices().next_change_after(word, since))
                    .min()
                    .map(|c| c.max(cycle))
            }
            _ => None,
        };
        [timer, message, hts, device].into_iter().flatten().min()
    }

    /// Sets hart `h`'s scheduling state (and the `sleeping` mask); its
    /// wake memo, if any, no longer holds.
    pub(super) fn set_state(&mut self, h: usize, state: HartState) {
        self.watched_stale |= matches!(self.states[h], HartState::Poll { .. })
            || matches!(state, HartState::Poll { .. });
        self.states[h] = state;
        self.forget_wake(h);
        if state == HartState::Running {
            self.sleeping &= !(1 << h);
        } else {
            self.sleeping |= 1 << h;
        }
    }

    /// The harts that run, as a mask.
    pub(super) fn running(&self) -> u64 {
        self.all_harts() & !self.sleeping
    }

    /// Forgets what the scheduler worked out for every sleeping hart:
    /// something outside the run (a NIC, a debugger) may have changed what
    /// wakes them.
    pub(super) fn forget_wakes(&mut self) {
        self.memo_valid = 0;
    }

    /// Forgets what the scheduler worked out for hart `h`.
    pub(super) fn forget_wake(&mut self, h: usize) {
        self.memo_valid &= !(1 << h);
    }

    /// The harts whose wake memo holds: none if a hart touched a device
    /// since the memos were made.
    pub(super) fn memos_valid(&self) -> u64 {
        if self.bus.device_accesses() == self.memo_device_accesses {
            self.memo_valid
        } else {
            0
        }
    }

    /// Drops the memos if a hart touched a device since they were made.
    pub(super) fn check_wake_memos(&mut self) {
        let n = self.bus.device_accesses();
        if n != self.memo_device_accesses {
            self.memo_device_accesses = n;
            self.forget_wakes();
        }
    }

    /// Right after a wake check of sleeping hart `h` that left it asleep:
    /// the first cycle after the hart's at which another check would have
    /// effects (its `mip` and thread scheduler are up to date until then):
    /// one of its device interrupt lines rises (enabled or not), or its
    /// thread scheduler would change when brought there (a timed
    /// transition, an arrival, a rising interrupt counted at that cycle).
    pub(super) fn recheck_cycle(&self, h: usize) -> u64 {
        let cycle = self.harts[h].cycle();
        let line_rise = (self.bus.devices().next_interrupts(h))
            .map(|(c, _)| c)
            .filter(|&c| c > cycle)
            .min()
            .unwrap_or(u64::MAX);
        line_rise.min(self.harts[h].net().hts_sync_current_until())
    }

    /// [`can_wake`](Self::can_wake) for a sleeping hart `h` with no valid
    /// memo: if it cannot continue, remembers so with its wake cycle. Device
    /// status registers a loop polls change only by a device access that
    /// changes state (which drops the memos), by the NIC (which drops them
    /// too) or with time (its wake cycle covers it: `next_change_after`).
    /// Memory words it polls may change with any store: the memo marks
    /// them, and every wake check reads them again.
    pub(super) fn can_wake_memo(&mut self, h: usize) -> bool {
        if self.can_wake(h) {
            return true;
        }
        let watches_memory = matches!(self.states[h], HartState::Poll { .. })
            && self.watches[h]
                .iter()
                .any(|&(word, _)| self.bus.dram().offset(word, 8).is_some());
        if watches_memory {
            self.memo_reads_memory |= 1 << h;
        } else {
            self.memo_reads_memory &= !(1 << h);
        }
        self.wake_memo[h] = self.wake_cycle(h);
        self.memo_recheck_at[h] = self.recheck_cycle(h);
        self.memo_valid |= 1 << h;
        self.memo_gen = self.memo_gen.wrapping_add(1);
        false
    }

    /// The earliest wake-up of the sleeping harts, `(cycle, hart)`, through
    /// the memos (their minimum is cached while they hold).
    pub(super) fn next_wake(&self) -> Option<(u64, usize)> {
        let memoed = self.memos_valid() & self.sleeping;
        let known = match self.wake_cache.get() {
            Some((mask, gen, known)) if mask == memoed && gen == self.memo_gen => known,
            _ => {
                let known = harts_in(memoed)
                    .filter_map(|h| self.wake_memo[h].map(|c| (c, h)))
                    .min();
                self.wake_cache.set(Some((memoed, self.memo_gen, known)));
                known
            }
        };
        #[cfg(debug_assertions)]
        for h in harts_in(memoed) {
            debug_assert_eq!(self.wake_memo[h], self.wake_cycle(h), "hart {h}");
        }
        let rest = harts_in(self.sleeping & !memoed)
            .filter_map(|h| self.wake_cycle(h).map(|c| (c, h)))
            .min();
        match (known, rest) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The running hart furthest behind (the lowest-numbered one of those
    /// at the same cycle), and the cycle of the one next behind it, if any.
    pub(super) fn two_furthest_behind(&self) -> Option<(usize, Option<u64>)> {
        let mut first: Option<(u64, usize)> = None;
        let mut second: Option<u64> = None;
        for h in harts_in(self.running()) {
            let c = self.harts[h].cycle();
            match first {
                Some((f, _)) if c >= f => {
                    second = Some(second.map_or(c, |s| s.min(c)));
                }
                _ => {
                    second = first.map(|(f, _)| second.map_or(f, |s| s.min(f)));
                    first = Some((c, h));
                }
            }
        }
        first.map(|(_, h)| (h, second))
    }

    /// Advances sleeping hart `h` to cycle `to` (not past it) and marks it running.
    pub(super) fn advance(&mut self, h: usize, to: u64) {
        self.advance_rounding(h, to, false);
    }

    /// Like [`advance`](Self::advance); with `round_up`, a hart in an idle
    /// loop goes to the first loop head at or after `to`.
    pub(super) fn advance_rounding(&mut self, h: usize, to: u64, round_up: bool) {
        self.move_sleeper(h, to, round_up);
        self.set_state(h, HartState::Running);
    }

    /// Moves sleeping hart `h` forward in time towards `to` without waking
    /// it: a stall to `to`, or whole iterations of its idle loop up to `to`
    /// (with `round_up`, to the first loop head at or after it).
    pub(super) fn move_sleeper(&mut self, h: usize, to: u64, round_up: bool) {
        let hart = &mut self.harts[h];
        match self.states[h] {
            HartState::Poll {
                period_cycles,
                period_instret,
            } => {
                if to > hart.cycle() {
                    let span = to - hart.cycle();
                    let k = if round_up {
                        span.div_ceil(period_cycles)
                    } else {
                        span / period_cycles
                    };
                    hart.skip_idle_iterations(period_cycles, period_instret, k);
                }
            }
            HartState::Running => {}
            _ => hart.stall_until(to),
        }
    }

    /// Moves every sleeping hart forward to `limit`.
    ///
    /// A sleeper stays asleep (its state, watches and `sleeping` bit are
    /// untouched); only its cycle and counters move, as one stall or whole
    /// loop iterations, which is the same as moving it in several steps.
    pub(super) fn idle_until(&mut self, limit: u64) {
        let valid = self.memos_valid();
        let (mut owed, mut dropped) = (0u64, 0u64);
        for h in harts_in(self.sleeping) {
            let hart = &mut self.harts[h];
            let cycle = hart.cycle();
            if cycle >= limit {
                continue;
            }
            let now = match self.states[h] {
                HartState::Poll {
                    period_cycles,
                    period_instret,
                } => {
                    // A loop polling for messages stays at or before the
                    // limit, so a message due just after it finds the loop
                    // where step-by-step execution would; a spin on memory
                    // goes to the first loop head past it (callers then see
                    // the hart reach the limit; see the README on its one
                    // inexactness).
                    let span = limit - cycle;
                    let k = if self.watches[h].is_empty() {
                        span / period_cycles
                    } else {
                        span.div_ceil(period_cycles)
                    };
                    hart.skip_idle_iterations(period_cycles, period_instret, k);
                    cycle + k * period_cycles
                }
                // Not in `sleeping` (kept in step by `set_state`).
                HartState::Running => continue,
                _ => {
                    hart.stall_until(limit);
                    limit
                }
            };
            let bit = 1 << h;
            // Time alone wakes the hart at its wake cycle and nothing else
            // changed: its memo still holds before that cycle.
            if valid & bit != 0 && self.wake_memo[h].is_none_or(|w| now < w) {
                // A wake check at `now` still has effects (on `mip`, on
                // the thread scheduler's state and counters): owed.
                if self.memo_recheck_at[h] <= now {
                    owed |= bit;
                }
                debug_assert_eq!(self.wake_memo[h], self.wake_cycle(h), "hart {h} at {now}");
            } else {
                dropped |= bit;
            }
        }
        self.owed_check |= owed;
        self.memo_valid &= !dropped;
    }
}
