//! The register-file network interface: per-context RX and TX FIFOs behind
//! x30 (netRX) and x31 (netTX), and the LNIC CSRs (nanoPU §2.1, §3.1, §3.4;
//! `nanopu-abi.md`).
//!
//! A core runs up to [`MAX_CONTEXTS`] contexts (threads bound to a layer-4
//! port). netRX and netTX always map to the FIFOs of the running context
//! (`lcurcontext`), the paper's "inherent thread safety". Messages start with
//! the 8-byte application header (length in bits 15..0); the NIC delivers
//! whole messages into an RX FIFO and takes whole messages from a TX FIFO.
//!
//! Defined behaviours the prototype leaves undefined:
//! - Reading netRX with an empty RX FIFO stalls the hart until a word
//!   arrives (the hart sleeps at no host cost); the node reports a program
//!   error if nothing can ever arrive.
//! - Writing netTX when the TX FIFO is full stalls the hart until the NIC
//!   drains it.
//! - Writing x30 is ignored; reading x31 returns the last word written.
//!
//! The core's hardware thread scheduler ([`Hts`], `hts.rs`) lives here too:
//! it watches the same context table and FIFOs.

pub use crate::hts::MAX_CONTEXTS;
use crate::hts::{Hts, HtsEnv};
use std::collections::VecDeque;

/// Mask of the length field of an application header.
pub const LEN_MASK: u64 = 0xffff;

/// Parameters of the per-core interface.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetIfConfig {
    /// Local RX buffering per core, shared equally by the context slots.
    /// Source: nanoPU §3.2 ("allocate 16KB of buffer for the local RX queues").
    pub rx_buffer_bytes_per_core: u32,
    /// TX buffer per context: one maximum-size message plus its header.
    /// Source: nanoPU §3.2 (maximum message 2 KB on the evaluated build).
    pub tx_buffer_bytes_per_context: u32,
    /// Reset value of `lmsgcycles` (`nanopu-abi.md`: 3000, about 1 us).
    pub lmsgcycles_reset: u64,
    /// Reset value of `lidlecycles` (`nanopu-abi.md`: 3000).
    pub lidlecycles_reset: u64,
}

/// Default local RX buffering per core (nanoPU §3.2).
pub const RX_BUFFER_BYTES_PER_CORE: u32 = 16 * 1024;
/// Default maximum message size of the evaluated build (nanoPU §3.2).
pub use nanopu_wire::MAX_MESSAGE_BYTES;

impl Default for NetIfConfig {
    fn default() -> Self {
        NetIfConfig {
            rx_buffer_bytes_per_core: RX_BUFFER_BYTES_PER_CORE,
            tx_buffer_bytes_per_context: MAX_MESSAGE_BYTES + 8,
            lmsgcycles_reset: 3000,
            lidlecycles_reset: 3000,
        }
    }
}

/// A network interface setting no core can work with; names the key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{key} = {value}: {reason}")]
pub struct NetIfConfigError {
    pub key: &'static str,
    pub value: u32,
    pub reason: &'static str,
}

impl NetIfConfig {
    /// Checks the buffer sizes: each context slot needs room for at least a
    /// header and one word, or no message could ever arrive or leave.
    pub fn validate(&self) -> Result<(), NetIfConfigError> {
        if (self.rx_buffer_bytes_per_core as usize) < MAX_CONTEXTS * 16 {
            return Err(NetIfConfigError {
                key: "rx_buffer_bytes_per_core",
                value: self.rx_buffer_bytes_per_core,
                reason: "must be at least 64 (16 bytes, a header and a word, for each of the 4 context slots)",
            });
        }
        if self.tx_buffer_bytes_per_context < 16 {
            return Err(NetIfConfigError {
                key: "tx_buffer_bytes_per_context",
                value: self.tx_buffer_bytes_per_context,
                reason: "must be at least 16 (a header and a word)",
            });
        }
        Ok(())
    }
}

/// Something the core tells the NIC (through `lniccmd` / `lnicucmd`), with
/// the core cycle at which it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreToNic {
    /// A context was registered (or its priority changed).
    Registered {
        context: u16,
        priority: u8,
        cycle: u64,
    },
    /// `lnicucmd` bit 0: the running context finished a message.
    MessageDone { context: u16, cycle: u64 },
}

/// A transmit FIFO and the framing state of the message being written.
#[derive(Clone, Debug)]
struct TxFifo {
    words: VecDeque<u64>,
    /// Words still expected for the message being written (0 when the next
    /// word written is a header).
    remaining: u32,
    /// Complete messages at the front of `words`.
    complete: usize,
    /// Source context and completion cycle of each message in `words`,
    /// oldest first.
    messages: VecDeque<(u16, u64)>,
}

impl TxFifo {
    fn new(capacity_words: usize) -> TxFifo {
        TxFifo {
            words: VecDeque::with_capacity(capacity_words),
            remaining: 0,
            complete: 0,
            messages: VecDeque::with_capacity(4),
        }
    }

    fn push(&mut self, word: u64, context: u16, cycle: u64) {
        if self.remaining == 0 {
            self.remaining = (word & LEN_MASK).div_ceil(8) as u32;
            self.messages.push_back((context, cycle));
        } else {
            self.remaining -= 1;
        }
        self.words.push_back(word);
        if self.remaining == 0 {
            self.complete += 1;
            // The message is complete when its last word is written.
            if let Some(m) = self.messages.back_mut() {
                m.1 = cycle;
            }
        }
    }

    /// Words of the oldest message (header first).
    fn head_words(&self) -> usize {
        1 + (self.words[0] & LEN_MASK).div_ceil(8) as usize
    }

    /// Moves the oldest complete message into `out`.
    fn take(&mut self, out: &mut Vec<u64>) -> Option<(u16, u64)> {
        if self.complete == 0 {
            return None;
        }
        let words = self.head_words();
        out.clear();
        out.extend(self.words.drain(..words));
        self.complete -= 1;
        self.messages.pop_front()
    }
}

/// One registered context's FIFOs (its priority and scheduling state are
/// in [`Hts`], same index).
#[derive(Clone, Debug)]
struct Slot {
    context: u16,
    /// Received words with the core cycle from which each is visible
    /// (the NIC may deliver a message before the core reaches its arrival).
    rx: VecDeque<(u64, u64)>,
    tx: TxFifo,
}

/// Why a netTX write cannot complete now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxError {
    /// The header announces a message larger than the TX buffer (an exception).
    TooLarge,
    /// The TX FIFO is full: stall until the NIC drains it.
    Full,
}

/// A message taken from a core's TX FIFOs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxMessage {
    /// Source context (layer-4 port) of the sender.
    pub context: u16,
    /// Core cycle at which its last word was written.
    pub cycle: u64,
}

/// Why a message cannot be delivered into an RX FIFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxError {
    NotRegistered,
    /// The context's share of the local RX buffer cannot hold the message.
    Full,
}

/// The core's register-file network interface.
#[derive(Clone, Debug)]
pub struct NetIf {
    cfg: NetIfConfig,
    slots: Vec<Slot>,
    /// Index into `slots` of the running context, if registered.
    running: Option<usize>,
    /// Where unregistered contexts' netTX words go.
    unbound_tx: TxFifo,
    /// `lcurcontext`.
    pub current_context: u16,
    /// `lcurpriority`.
    pub current_priority: u8,
    pub lmsgcycles: u64,
    pub lidlecycles: u64,
    /// Commands for the NIC, oldest first; the node forwards them.
    pub outbox: VecDeque<CoreToNic>,
    /// Messages completed on netTX, by all contexts (statistics).
    pub tx_messages: u64,
    /// The core's hardware thread scheduler.
    pub hts: Hts,
}

impl NetIf {
    pub fn new(cfg: NetIfConfig) -> NetIf {
        NetIf {
            lmsgcycles: cfg.lmsgcycles_reset,
            lidlecycles: cfg.lidlecycles_reset,
            unbound_tx: TxFifo::new(cfg.tx_buffer_bytes_per_context as usize / 8),
            cfg,
            slots: Vec::with_capacity(MAX_CONTEXTS),
            running: None,
            current_context: 0,
            current_priority: 0,
            outbox: VecDeque::with_capacity(64),
            tx_messages: 0,
            hts: Hts::new(),
        }
    }

    fn rx_capacity_words(&self) -> usize {
        (self.cfg.rx_buffer_bytes_per_core as usize / MAX_CONTEXTS) / 8
    }

    fn tx_capacity_words(&self) -> usize {
        self.cfg.tx_buffer_bytes_per_context as usize / 8
    }

    fn slot_of(&self, context: u16) -> Option<usize> {
        self.slots.iter().position(|s| s.context == context)
    }

    /// `lcurcontext` write at core cycle `now`: switches netRX/netTX to that
    /// context's FIFOs (and tells the thread scheduler).
    pub fn set_current_context(&mut self, context: u16, now: u64) {
        let mut env = self.hts_env();
        let to = self.slot_of(context);
        self.hts
            .set_running(&mut env, to, context != self.current_context, now);
        self.current_priority = env.current_priority;
        self.current_context = context;
        self.running = to;
    }

    /// `lcurpriority` write at core cycle `now`.
    pub fn set_current_priority(&mut self, priority: u8, now: u64) {
        self.hts_advance(now);
        self.current_priority = priority;
        self.hts.invalidate();
    }

    /// `lmsgcycles` write at core cycle `now`.
    pub fn set_lmsgcycles(&mut self, cycles: u64, now: u64) {
        self.hts_advance(now);
        self.lmsgcycles = cycles;
        self.hts.invalidate();
    }

    /// `lidlecycles` write at core cycle `now`.
    pub fn set_lidlecycles(&mut self, cycles: u64, now: u64) {
        self.hts_advance(now);
        self.lidlecycles = cycles;
        self.hts.invalidate();
    }

    /// `lniccmd` bit 0: registers `lcurcontext` with `lcurpriority` at core
    /// cycle `cycle`. Returns false when all slots are taken.
    pub fn register_current(&mut self, cycle: u64) -> bool {
        let (context, priority) = (self.current_context, self.current_priority);
        let slot = match self.slot_of(context) {
            Some(i) => i,
            None if self.slots.len() < MAX_CONTEXTS => {
                let rx = VecDeque::with_capacity(self.rx_capacity_words());
                let tx = TxFifo::new(self.tx_capacity_words());
                self.slots.push(Slot { context, rx, tx });
                self.slots.len() - 1
            }
            None => return false,
        };
        let mut env = self.hts_env();
        self.hts.register(&mut env, slot, context, priority, cycle);
        self.hts.set_running(&mut env, Some(slot), false, cycle);
        self.current_priority = env.current_priority;
        self.running = Some(slot);
        self.outbox.push_back(CoreToNic::Registered {
            context,
            priority,
            cycle,
        });
        true
    }

    /// `lnicucmd` write at core cycle `cycle`. Returns whether the NIC was told.
    pub fn user_command(&mut self, value: u64, cycle: u64) -> bool {
        let context = self.current_context;
        let mut env = self.hts_env();
        self.hts.user_command(&mut env, value, cycle);
        self.current_priority = env.current_priority;
        if value & 1 != 0 {
            self.outbox
                .push_back(CoreToNic::MessageDone { context, cycle });
        }
        // Bit 1 (idle) concerns the core's thread scheduler, not the NIC.
        value & 1 != 0
    }

    /// `lniccmd` bit 2 at core cycle `now`: restarts the message timer.
    pub fn restart_message_timer(&mut self, now: u64) {
        let mut env = self.hts_env();
        self.hts.restart_timer(&mut env, now);
        self.current_priority = env.current_priority;
    }

    // ---- the thread scheduler's view ----

    /// What the thread scheduler needs to know about the FIFOs and CSRs.
    pub fn hts_env(&self) -> HtsEnv {
        let mut heads = [None; MAX_CONTEXTS];
        for (h, s) in heads.iter_mut().zip(&self.slots) {
            *h = s.rx.front().map(|&(_, at)| at);
        }
        HtsEnv {
            running: self.running,
            current_priority: self.current_priority,
            heads,
            lmsgcycles: self.lmsgcycles,
            lidlecycles: self.lidlecycles,
        }
    }

    /// Applies the scheduler's timed transitions due by core cycle `now`
    /// (arrivals, the idle timeout, a demotion).
    pub fn hts_advance(&mut self, now: u64) {
        if self.hts.in_use() {
            let mut env = self.hts_env();
            self.hts.advance(&mut env, now);
            self.current_priority = env.current_priority;
        }
    }

    /// Whether the thread scheduler's interrupt is pending at core cycle
    /// `now` (the value of mip bit 16).
    pub fn hts_pending(&mut self, now: u64) -> bool {
        if !self.hts.in_use() {
            return false;
        }
        let mut env = self.hts_env();
        let pending = self.hts.sync(&mut env, now);
        self.current_priority = env.current_priority;
        pending
    }

    /// `ltargetcontext` and `ltargetpriority` at core cycle `now`.
    pub fn hts_target(&mut self, now: u64) -> (u16, u8) {
        self.hts_advance(now);
        let env = self.hts_env();
        self.hts.target(&env, now, self.current_context)
    }

    /// The first cycle after `now` at which the scheduler's interrupt
    /// becomes pending if software does nothing (see [`Hts::next_interrupt`]).
    pub fn hts_next_interrupt(&self, now: u64) -> Option<u64> {
        if !self.hts.in_use() {
            return None;
        }
        self.hts.next_interrupt(&self.hts_env(), now)
    }

    /// The core cycle before which bringing the thread scheduler there (as
    /// [`hts_pending`](Self::hts_pending) does) changes nothing: `u64::MAX`
    /// if it is not in use, 0 if its last synchronisation no longer holds
    /// (see [`Hts::sync_current_until`]).
    pub fn hts_sync_current_until(&self) -> u64 {
        if !self.hts.in_use() {
            return u64::MAX;
        }
        self.hts.sync_current_until(&self.hts_env())
    }

    /// Whether the running context is registered, so that x30 is netRX.
    #[inline]
    pub fn rx_active(&self) -> bool {
        self.running.is_some()
    }

    fn tx_fifo(&self) -> &TxFifo {
        match self.running {
            Some(i) => &self.slots[i].tx,
            None => &self.unbound_tx,
        }
    }

    /// `lmsgsrdy` at core cycle `now`: whether the running context's RX FIFO
    /// holds message data that has arrived.
    #[inline]
    pub fn msgs_ready(&self, now: u64) -> bool {
        self.rx_peek(now).is_some()
    }

    /// The word the next netRX read at cycle `now` returns, without consuming it.
    #[inline]
    pub fn rx_peek(&self, now: u64) -> Option<u64> {
        let i = self.running?;
        match self.slots[i].rx.front() {
            Some(&(word, at)) if at <= now => Some(word),
            _ => None,
        }
    }

    /// The cycle at which the running context's next RX word arrives, if
    /// one has been delivered (what a stalled or polling core waits for).
    pub fn next_rx_cycle(&self) -> Option<u64> {
        let i = self.running?;
        self.slots[i].rx.front().map(|&(_, at)| at)
    }

    /// Consumes the word returned by [`rx_peek`](Self::rx_peek) at core
    /// cycle `now`; called only when the reading instruction commits, so a
    /// trap never loses a word.
    #[inline]
    pub fn rx_commit(&mut self, now: u64) {
        if let Some(i) = self.running {
            if self.hts.read_needs_advance(i) {
                self.hts_advance(now);
            }
            self.hts.rx_read(now);
            self.slots[i].rx.pop_front();
        }
    }

    /// Checks that `word` can be written to netTX now.
    pub fn tx_check(&self, word: u64) -> Result<(), TxError> {
        let tx = self.tx_fifo();
        if tx.remaining == 0 {
            let words = 1 + (word & LEN_MASK).div_ceil(8) as usize;
            if words > self.tx_capacity_words() {
                return Err(TxError::TooLarge);
            }
        }
        if tx.words.len() >= self.tx_capacity_words() {
            return Err(TxError::Full);
        }
        Ok(())
    }

    /// Pushes a word already accepted by [`tx_check`](Self::tx_check), at
    /// core cycle `cycle`.
    /// Returns whether the word completed a message.
    pub fn tx_commit(&mut self, word: u64, cycle: u64) -> bool {
        let context = self.current_context;
        let tx = match self.running {
            Some(i) => &mut self.slots[i].tx,
            None => &mut self.unbound_tx,
        };
        tx.push(word, context, cycle);
        if tx.remaining == 0 {
            self.tx_messages += 1;
        }
        tx.remaining == 0
    }

    /// NIC side: delivers a whole message (header first) to `context`,
    /// visible to the core from cycle `at`.
    pub fn deliver(&mut self, context: u16, words: &[u64], at: u64) -> Result<(), RxError> {
        let cap = self.rx_capacity_words();
        let i = self.slot_of(context).ok_or(RxError::NotRegistered)?;
        let rx = &mut self.slots[i].rx;
        if rx.len() + words.len() > cap {
            return Err(RxError::Full);
        }
        rx.extend(words.iter().map(|&w| (w, at)));
        self.hts.invalidate();
        Ok(())
    }

    /// NIC side: takes the oldest complete message of the first context (in
    /// registration order, then the unbound FIFO) that has one.
    pub fn take_tx_message(&mut self, out: &mut Vec<u64>) -> Option<TxMessage> {
        self.slots
            .iter_mut()
            .map(|s| &mut s.tx)
            .chain(std::iter::once(&mut self.unbound_tx))
            .find_map(|tx| tx.take(out))
            .map(|(context, cycle)| TxMessage { context, cycle })
    }

    /// NIC side: the message [`take_tx_message`](Self::take_tx_message)
    /// would take next, and its header, left in its FIFO: a NIC with no
    /// room for it leaves it there (and the core stalls once the FIFO is
    /// full).
    pub fn next_tx_message(&self) -> Option<(TxMessage, u64)> {
        self.slots
            .iter()
            .map(|s| &s.tx)
            .chain(std::iter::once(&self.unbound_tx))
            .find(|tx| tx.complete > 0)
            .and_then(|tx| {
                let &(context, cycle) = tx.messages.front()?;
                Some((TxMessage { context, cycle }, tx.words[0]))
            })
    }

    /// Whether the NIC has something to take: a complete message or a command.
    pub fn has_output(&self) -> bool {
        !self.outbox.is_empty() || self.tx_pending()
    }

    /// Whether any TX FIFO holds a complete message.
    pub fn tx_pending(&self) -> bool {
        self.unbound_tx.complete > 0 || self.slots.iter().any(|s| s.tx.complete > 0)
    }

    /// Registered contexts and their priorities.
    pub fn contexts(&self) -> impl Iterator<Item = (u16, u8)> + '_ {
        self.hts.contexts().iter().map(|c| (c.context, c.priority))
    }

    /// Words waiting in the RX FIFO of `context`.
    pub fn rx_len(&self, context: u16) -> usize {
        self.slot_of(context).map_or(0, |i| self.slots[i].rx.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn netif() -> NetIf {
        let mut n = NetIf::new(NetIfConfig::default());
        n.set_current_context(7, 0);
        n.current_priority = 1;
        assert!(n.register_current(0));
        n
    }

    #[test]
    fn rx_words_are_consumed_only_on_commit() {
        let mut n = netif();
        assert!(!n.msgs_ready(0));
        n.deliver(7, &[8, 42], 0).unwrap();
        assert!(n.msgs_ready(0));
        assert_eq!(n.rx_peek(0), Some(8));
        assert_eq!(n.rx_peek(0), Some(8));
        n.rx_commit(0);
        assert_eq!(n.rx_peek(0), Some(42));
        n.rx_commit(0);
        assert_eq!(n.rx_peek(0), None);
    }

    #[test]
    fn words_become_visible_at_their_arrival_cycle() {
        let mut n = netif();
        n.deliver(7, &[8, 42], 5).unwrap();
        assert!(!n.msgs_ready(4));
        assert_eq!(n.rx_peek(4), None);
        assert_eq!(n.next_rx_cycle(), Some(5));
        assert!(n.msgs_ready(5));
        assert_eq!(n.rx_peek(9), Some(8));
    }

    #[test]
    fn fifos_follow_the_running_context() {
        let mut n = netif();
        n.deliver(7, &[8, 1], 0).unwrap();
        n.set_current_context(9, 0);
        assert!(!n.msgs_ready(0));
        assert!(!n.rx_active());
        n.set_current_context(7, 0);
        assert!(n.msgs_ready(0));
        assert_eq!(n.deliver(3, &[8, 1], 0), Err(RxError::NotRegistered));
    }

    #[test]
    fn tx_messages_complete_after_header_and_payload() {
        let mut n = netif();
        let header = (0x0a00_0001u64 << 32) | (5 << 16) | 12; // 12 B: 2 words
        let mut out = Vec::new();
        for w in [header, 1, 2] {
            n.tx_check(w).unwrap();
            n.tx_commit(w, 0);
            if w != 2 {
                assert_eq!(n.take_tx_message(&mut out), None);
            }
        }
        assert_eq!(
            n.take_tx_message(&mut out),
            Some(TxMessage {
                context: 7,
                cycle: 0
            })
        );
        assert_eq!(out, vec![header, 1, 2]);
        assert_eq!(n.tx_messages, 1);
    }

    #[test]
    fn unregistered_contexts_send_through_the_unbound_fifo() {
        let mut n = NetIf::new(NetIfConfig::default());
        n.set_current_context(3, 0);
        assert!(!n.rx_active());
        for w in [8, 0] {
            n.tx_check(w).unwrap();
            n.tx_commit(w, 0);
        }
        let mut out = Vec::new();
        assert_eq!(
            n.take_tx_message(&mut out),
            Some(TxMessage {
                context: 3,
                cycle: 0
            })
        );
        assert_eq!(out, vec![8, 0]);
    }

    #[test]
    fn zero_length_messages_are_just_a_header() {
        let mut n = netif();
        n.tx_commit(0, 0);
        let mut out = Vec::new();
        assert!(n.tx_pending());
        assert!(n.take_tx_message(&mut out).is_some());
        assert_eq!(out, vec![0]);
        assert!(!n.tx_pending());
    }

    #[test]
    fn a_message_the_nic_leaves_stays_and_fills_the_fifo() {
        let mut n = netif();
        let mut out = Vec::new();
        // 2 KB + header fill the TX FIFO: one message of 257 words.
        let header = (0x0a00_0001u64 << 32) | 2048;
        for w in std::iter::once(header).chain(0..256) {
            n.tx_check(w).unwrap();
            n.tx_commit(w, 3);
        }
        let (m, h) = n.next_tx_message().unwrap();
        assert_eq!((m.context, m.cycle, h), (7, 3, header));
        // Left in the FIFO: the next write stalls.
        assert_eq!(n.tx_check(8), Err(TxError::Full));
        assert!(n.tx_pending());
        assert_eq!(n.take_tx_message(&mut out), Some(m));
        assert_eq!(out.len(), 257);
        assert!(!n.tx_pending());
        assert_eq!(n.tx_check(8), Ok(()));
        assert_eq!(n.next_tx_message(), None);
    }

    #[test]
    fn oversized_tx_header_is_rejected() {
        let n = netif();
        assert_eq!(n.tx_check(2049), Err(TxError::TooLarge));
        assert_eq!(n.tx_check(2048), Ok(()));
    }

    #[test]
    fn rx_share_bounds_delivery() {
        let mut n = netif();
        let words = vec![0u64; RX_BUFFER_BYTES_PER_CORE as usize / MAX_CONTEXTS / 8];
        n.deliver(7, &words, 0).unwrap();
        assert_eq!(n.deliver(7, &[8], 0), Err(RxError::Full));
    }

    #[test]
    fn at_most_four_contexts() {
        let mut n = netif();
        for c in 1..4 {
            n.set_current_context(c, 0);
            assert!(n.register_current(0));
        }
        n.set_current_context(100, 0);
        assert!(!n.register_current(0));
    }
}
