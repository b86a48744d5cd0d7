//! The per-core hardware thread scheduler (HTS, nanoPU §2.2 and §3.2;
//! `nanopu-abi.md`, "Hardware thread scheduler").
//!
//! Every core has one. It knows the contexts registered on the core (the
//! [`NetIf`](crate::netif::NetIf) slots: at most [`MAX_CONTEXTS`]), each with
//! an 8-bit priority (0 is the highest) and a state, **active** or **idle**,
//! and the running context (`lcurcontext`, with the running thread's priority
//! in `lcurpriority`). It publishes the context it wants to run in
//! `ltargetcontext` / `ltargetpriority` and raises machine interrupt 16
//! (mip bit 16, enabled by mie bit 16) when that is not the running one. The
//! trap handler (the SDK's `nk_entry.S`) saves the running thread, copies
//! `ltargetcontext` / `ltargetpriority` to `lcurcontext` / `lcurpriority`,
//! writes 4 to `lniccmd` (restart the message timer), restores the target
//! thread and returns with `mret`; once `lcurcontext` is the target, the
//! interrupt is no longer pending.
//!
//! # The policy
//!
//! - **Active / idle** (§2.2): a context becomes active when a message for
//!   it *arrives* (the RX words carry the cycle from which they are visible;
//!   a message delivered early activates its context at its arrival cycle,
//!   not before). It stays active until it reports idle (`lnicucmd` bit 1,
//!   which `lnic_wait()` writes while polling) with its RX FIFO empty; an
//!   idle report while a message is waiting is ignored.
//! - **Target** (`ltargetcontext`): the highest-priority active context.
//!   The running context takes part with `lcurpriority` as its priority;
//!   every other context with its registered priority. Among equal
//!   priorities the running context keeps the core; the others are ordered
//!   by the arrival cycle of the head of their RX FIFO (the prototype breaks
//!   ties by the head message's timestamp), then by registration order. With
//!   no active context (or only the running one) the target is the running
//!   context.
//! - **Interrupt 16** is pending exactly when the target is not the running
//!   context, which happens when (a) an active context has a strictly
//!   higher priority than `lcurpriority`; (b) the running context is idle
//!   and another context is active (any priority: "a core never sits on an
//!   idle thread when another thread with a pending message could run");
//!   (c) the running context has reported its message done (`lnicucmd`
//!   bit 0), already has its next message waiting, and an equal-priority
//!   context's head message arrived earlier. (c) makes equal priorities
//!   take turns in arrival (FIFO) order at message boundaries; a new message
//!   for an equal- or lower-priority context never preempts (it is queued).
//!
//! # Decisions where the paper and the ABI are silent
//!
//! - **Registration**: a context is active from its registration until it
//!   first reports idle, as the paper's "remains active until it explicitly
//!   indicates that it is idle" reads for a thread that has never said so.
//!   Every thread therefore gets to run its start-up code (a nanokernel
//!   thread is switched in when the running one goes idle, even before its
//!   first message), and a thread preempted before its first `lnic_wait()`
//!   is resumed. Re-registering a registered context (`lniccmd` bit 0 again)
//!   only changes its priority, which also undoes a demotion.
//! - **Unregistered running context** (e.g. the nanokernel's 0xffff, or a
//!   program that has not registered its current context): it has no RX
//!   FIFO, so it is idle by definition and any active context is the target.
//! - **The running context's priority** is `lcurpriority` (the register the
//!   handler loads from `ltargetpriority`); the priority a context was
//!   registered with is what HTS reports in `ltargetpriority` when it picks
//!   it. Writing `lcurpriority` does not change the registered priority.
//! - **Equal priorities after msg_done**: if the running context has nothing
//!   waiting after `lnicucmd` bit 0 it keeps the core (it normally reports
//!   idle a few instructions later, in `lnic_wait()`, which is condition (b));
//!   switching at once would cost two switches to let it say so. Its
//!   precedence returns when it reads netRX again (it started its next
//!   message) or when it is switched out.
//! - **Ordering key of a context that is active with an empty RX FIFO** (it
//!   was preempted after reading its message): the cycle it became active,
//!   which is older than any message that arrived since.
//! - **Bounded priority** (§2.2 "Bounded response time": "if a priority 0
//!   thread takes longer than t0 to *process* a message"): one message
//!   timer per core. It restarts on `lnicucmd` bit 0 (done), on an idle
//!   report, on `lniccmd` bit 2 (the handler writes it after every switch)
//!   and on registration, and it counts only while the running context has
//!   a message in progress: from its first netRX read after a done or idle
//!   report (or its registration), or from a later restart, until it
//!   reports done or idle. The time a message waits unread (queued behind
//!   another thread, or while a core starts up with cold caches) is not
//!   processing time; counting it demoted the SDK's well-behaved threads on
//!   their first message. When the running context is registered, has
//!   `lcurpriority` 0 and a message in progress for `lmsgcycles` cycles, it
//!   is demoted to priority 1 at exactly that cycle: its registered
//!   priority and `lcurpriority` both become 1, permanently (as on the
//!   prototype's RTL) until software re-registers it. If another priority-0
//!   context is active, interrupt 16 becomes pending by rule (a).
//!   `lmsgcycles` = `u64::MAX` disables it. The timer is not saved per
//!   context: a kernel that switches threads without writing `lniccmd`
//!   bit 2 hands the elapsed time to the thread it resumes.
//! - **Idle timeout** (`lidlecycles`, the ABI's "idle timeout in cycles";
//!   §3.4: "the scheduler uses the idle signal to evict idle threads"):
//!   idle reports are what evicts a thread, at once; the timeout covers a
//!   thread that finished a message and then neither reads netRX nor
//!   reports idle (a program that polls without `lnic_idle()`). `lidlecycles`
//!   cycles after the running context reported done, if it has not read
//!   netRX, reported idle or been switched out since, and no message is
//!   waiting for it, it is marked idle, which lets rule (b) evict it.
//! - **What a switch is**: a write of a *different* value to `lcurcontext`.
//!   It clears the done mark and the idle timeout of the outgoing context.
//!   Writing the same value changes nothing.
//!
//! # Timing
//!
//! State changes only at CSR writes, netRX reads, message deliveries and
//! the timed transitions above (arrivals, the message timer, the idle
//! timeout), which are evaluated lazily at the cycle they happen: whenever
//! the state is observed (a CSR read or write, an interrupt check at a slice
//! start or after a pipeline flush, `wfi`) everything due up to the current
//! cycle is applied first, in time order. The node ends a hart's slice at
//! [`Hts::next_interrupt`] (see `Hart::next_hts_event_cycle`), so the
//! interrupt is taken at the cycle it becomes pending, give or take the
//! instruction in flight. A done or idle report counts for rules (b) and
//! (c) [`REPORT_TO_INTERRUPT_CYCLES`] after the write, as on the
//! prototype, whose core does not flush after LNIC CSR writes: the
//! instructions that follow the report run until then.
//!
//! The prototype's interrupt is a one-cycle pulse (`LNICQueues.scala:
//! 522-550`: two cycles after an arrival of higher priority, after a done
//! or idle report, or one after a demotion or idle timeout), taken only if
//! the instruction in decode can take it then; a missed pulse is not
//! repeated until the next such event (`lnic_wait()` reports idle on every
//! iteration, which repeats it). Here interrupt 16 is a level, pending
//! until the switch: the same as the pulse whenever the pulse is taken.

/// Cycles from a done or idle report (`lnicucmd`, at the cycle the core
/// model executes the CSR write) until the interrupt it leads to is raised,
/// and taken by the instruction then entering execution. On the prototype
/// (l-nic/rocket-chip lnic-dev 33813784): the CSR file is written when the
/// instruction is in writeback, two cycles after execute
/// (`RocketCore.scala:719-720`, `csr.io.rw.cmd` from the `wb_` registers);
/// the report is a one-cycle pulse (`CSR.scala:882-884`) that the RX queues
/// register twice, for their `reg_top_context` to take it into account,
/// before raising the interrupt (`LNICQueues.scala:534-544`, `reg_check`,
/// `reg_reg_check`); `mip.lnip` is that output, unregistered
/// (`CSR.scala:484`), and decode tags the instruction it holds in that
/// cycle with the interrupt (`RocketCore.scala:346-347,439`), which is
/// taken when it reaches writeback. So 2 + 2 cycles, and no pipeline flush
/// (`CSR.scala:696-697`): the instructions already past decode complete.
pub const REPORT_TO_INTERRUPT_CYCLES: u64 = 4;

/// Contexts per core (`MAX_NUM_CONTEXTS` of the prototype, nanoPU §3.2):
/// the scheduler's table has a slot for each, and so has the register-file
/// interface (`crate::netif`, which uses this scheduler).
pub const MAX_CONTEXTS: usize = 4;
use std::cell::Cell;

/// The HTS view of one registered context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextState {
    /// Context id (layer-4 port).
    pub context: u16,
    /// Registered priority (0 is the highest), lowered to 1 by a demotion.
    pub priority: u8,
    /// `Some(c)`: idle since cycle `c`; `None`: active.
    pub idle_since: Option<u64>,
    /// The cycle at which the context last became active.
    pub active_from: u64,
    /// Between messages: registered, reported done or idle, and has not
    /// read netRX since (its message timer waits for a message).
    pub between: bool,
    /// Cycles it has been the running context, up to the last switch.
    cycles_running: u64,
}

/// HTS counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HtsStats {
    /// Times interrupt 16 became pending (rising edges of mip bit 16).
    pub interrupts_raised: u64,
    /// Times the hart took interrupt 16.
    pub interrupts_taken: u64,
    /// Priority-0 contexts demoted for exceeding `lmsgcycles`.
    pub demotions: u64,
    /// Running contexts marked idle by the `lidlecycles` timeout.
    pub idle_timeouts: u64,
    /// Writes of a new value to `lcurcontext`.
    pub switches: u64,
}

/// A scheduler event for the timeline (`--timeline`), at a core cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HtsNote {
    /// `lcurcontext` changed to `to` (0xffff: no registered context).
    Switch { to: u16 },
    /// Interrupt 16 became pending.
    InterruptRaised,
    /// The hart took interrupt 16.
    InterruptTaken,
    /// The running priority-0 context was demoted (`lmsgcycles`).
    Demoted,
    /// The running context was marked idle by `lidlecycles`.
    IdleTimeout,
}

/// What HTS needs from the network interface: the running slot, the
/// running priority (`lcurpriority`, lowered by a demotion), the arrival
/// cycle of the head word of every slot's RX FIFO, and the two timer CSRs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HtsEnv {
    /// Index of the running context's slot, if it is registered.
    pub running: Option<usize>,
    /// `lcurpriority`.
    pub current_priority: u8,
    /// Arrival cycle of the head word of each slot's RX FIFO.
    pub heads: [Option<u64>; MAX_CONTEXTS],
    /// `lmsgcycles`.
    pub lmsgcycles: u64,
    /// `lidlecycles`.
    pub lidlecycles: u64,
}

impl HtsEnv {
    /// Whether slot `i` holds a word visible at cycle `t`.
    fn visible(&self, i: usize, t: u64) -> bool {
        self.heads[i].is_some_and(|a| a <= t)
    }
}

/// A timed transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Transition {
    /// A message arrives for an idle context.
    Activate(usize),
    /// The running context's idle timeout expires.
    IdleTimeout,
    /// The running priority-0 context exceeds `lmsgcycles`.
    Demote,
}

/// A remembered [`Hts::next_interrupt`] answer: (epoch, env, asked at, answer).
type BoundCache = (u64, HtsEnv, u64, Option<u64>);

/// The per-core hardware thread scheduler. Slot indices are those of the
/// network interface's context table.
#[derive(Clone, Debug)]
pub struct Hts {
    ctx: [ContextState; MAX_CONTEXTS],
    n: usize,
    /// The running slot as HTS last saw it (for the cycle accounting).
    running: Option<usize>,
    /// Last restart of the message timer.
    msg_timer_start: u64,
    /// Cycle of the running context's last done report, while its idle
    /// timeout runs.
    idle_timer_start: Option<u64>,
    /// The running context reported done and has not read netRX since.
    done: bool,
    /// The cycle from which the running context's last done or idle report
    /// counts for the decision ([`REPORT_TO_INTERRUPT_CYCLES`] after it).
    report_visible_at: u64,
    /// Cycle of the last switch (cycle accounting).
    switched_at: u64,
    /// Cycles run by unregistered contexts, up to the last switch.
    unregistered_cycles: u64,
    /// The value of mip bit 16 at the last synchronisation.
    raised: bool,
    /// Bumped by every change of state; keys the caches below.
    epoch: u64,
    /// (epoch, env, cycle up to which `raised` stays valid).
    synced: Option<(u64, HtsEnv, u64)>,
    /// The last [`next_interrupt`](Self::next_interrupt) answer.
    bound: Cell<Option<BoundCache>>,
    /// Deadlines may have moved: the hart re-bounds its slice.
    pub(crate) dirty: bool,
    pub stats: HtsStats,
    /// Scheduler events (cycle, what) for the timeline, when it records
    /// them; `None` costs one branch per event.
    pub notes: Option<Vec<(u64, HtsNote)>>,
}

impl Default for Hts {
    fn default() -> Self {
        Hts::new()
    }
}

const EMPTY: ContextState = ContextState {
    context: 0,
    priority: 0,
    idle_since: None,
    active_from: 0,
    between: true,
    cycles_running: 0,
};

impl Hts {
    pub fn new() -> Hts {
        Hts {
            ctx: [EMPTY; MAX_CONTEXTS],
            n: 0,
            running: None,
            msg_timer_start: 0,
            idle_timer_start: None,
            done: false,
            report_visible_at: 0,
            switched_at: 0,
            unregistered_cycles: 0,
            raised: false,
            epoch: 0,
            synced: None,
            bound: Cell::new(None),
            dirty: false,
            stats: HtsStats::default(),
            notes: None,
        }
    }

    /// Records `note` at `cycle` if notes are kept.
    pub fn note(&mut self, cycle: u64, note: HtsNote) {
        if let Some(n) = &mut self.notes {
            n.push((cycle, note));
        }
    }

    /// The registered contexts, in slot order.
    pub fn contexts(&self) -> &[ContextState] {
        &self.ctx[..self.n]
    }

    /// Whether any context is registered (otherwise HTS never interrupts).
    #[inline]
    pub fn in_use(&self) -> bool {
        self.n > 0 || self.raised
    }

    /// mip bit 16 as last synchronised.
    pub fn raised(&self) -> bool {
        self.raised
    }

    /// Cycles each registered context has been running up to cycle `now`,
    /// and (context `None`) the cycles run by unregistered contexts.
    pub fn cycles_running(&self, now: u64) -> Vec<(Option<u16>, u64)> {
        let extra = now.saturating_sub(self.switched_at);
        let mut out: Vec<_> = (0..self.n)
            .map(|i| {
                let c = &self.ctx[i];
                let run = if self.running == Some(i) { extra } else { 0 };
                (Some(c.context), c.cycles_running + run)
            })
            .collect();
        let run = if self.running.is_none() { extra } else { 0 };
        out.push((None, self.unregistered_cycles + run));
        out
    }

    fn touch(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        self.dirty = true;
    }

    /// Something HTS depends on changed outside its hooks (an RX FIFO, a
    /// timer CSR): drop the cached decisions.
    pub(crate) fn invalidate(&mut self) {
        self.touch();
    }

    // ---- hooks: the network interface calls these as things happen ----

    /// `lniccmd` bit 0 for slot `slot` (a new slot is the next index) with
    /// `priority`, at cycle `now`, while it is the running context.
    pub(crate) fn register(
        &mut self,
        env: &mut HtsEnv,
        slot: usize,
        context: u16,
        priority: u8,
        now: u64,
    ) {
        self.advance(env, now);
        if slot == self.n {
            self.ctx[slot] = ContextState {
                context,
                priority,
                active_from: now,
                ..EMPTY
            };
            self.n += 1;
        }
        self.ctx[slot].priority = priority;
        self.msg_timer_start = now;
        self.touch();
    }

    /// The running slot changes to `to` at cycle `now`; `switch` says
    /// whether `lcurcontext` changed (a registration does not switch).
    pub(crate) fn set_running(
        &mut self,
        env: &mut HtsEnv,
        to: Option<usize>,
        switch: bool,
        now: u64,
    ) {
        self.advance(env, now);
        let ran = now.saturating_sub(self.switched_at);
        match self.running {
            Some(i) => self.ctx[i].cycles_running += ran,
            None => self.unregistered_cycles += ran,
        }
        self.switched_at = now;
        self.running = to;
        env.running = to;
        if switch {
            self.done = false;
            self.report_visible_at = 0;
            self.idle_timer_start = None;
            self.stats.switches += 1;
            let to = to.map_or(0xffff, |i| self.ctx[i].context);
            self.note(now, HtsNote::Switch { to });
        }
        self.touch();
    }

    /// `lnicucmd` write of `value` at cycle `now`.
    pub(crate) fn user_command(&mut self, env: &mut HtsEnv, value: u64, now: u64) {
        if value & 3 == 0 {
            return;
        }
        self.advance(env, now);
        self.msg_timer_start = now;
        let was_idle = env.running.is_none_or(|i| self.ctx[i].idle_since.is_some());
        if value & 1 != 0 || !was_idle {
            // A new report (a repeated idle report of an idle context
            // changes nothing the decision sees: no delay again).
            self.report_visible_at = now + REPORT_TO_INTERRUPT_CYCLES;
        }
        if value & 1 != 0 {
            self.done = true;
            self.idle_timer_start = env.running.map(|_| now);
        }
        if let Some(i) = env.running {
            self.ctx[i].between = true;
        }
        if value & 2 != 0 {
            self.idle_timer_start = None;
            if let Some(i) = env.running {
                if !env.visible(i, now) && self.ctx[i].idle_since.is_none() {
                    self.ctx[i].idle_since = Some(now);
                }
            }
        }
        self.touch();
    }

    /// `lniccmd` bit 2 at cycle `now`.
    pub(crate) fn restart_timer(&mut self, env: &mut HtsEnv, now: u64) {
        self.advance(env, now);
        self.msg_timer_start = now;
        self.touch();
    }

    /// Whether a netRX read by the context in slot `running` must first bring
    /// the state up to date (it may have an arrival or a timeout pending).
    #[inline]
    pub(crate) fn read_needs_advance(&self, running: usize) -> bool {
        self.idle_timer_start.is_some() || self.ctx[running].idle_since.is_some()
    }

    /// The running context reads a word from netRX at cycle `now` (the
    /// network interface calls this when it consumes it, after
    /// [`advance`](Self::advance) if
    /// [`read_needs_advance`](Self::read_needs_advance)). The first read
    /// after a done or idle report starts a message: the message timer
    /// counts from then (or from a later restart).
    #[inline]
    pub(crate) fn rx_read(&mut self, now: u64) {
        let mut changed = false;
        if let Some(i) = self.running {
            let c = &mut self.ctx[i];
            if c.between {
                c.between = false;
                self.msg_timer_start = self.msg_timer_start.max(now);
                // The message timer starts: the node must end the slice at
                // the demotion it may lead to.
                self.dirty = true;
                changed = true;
            }
        }
        if self.done {
            // Its pending rule-(c) interrupt, if any, is withdrawn.
            self.dirty = true;
            self.done = false;
            changed = true;
        }
        if self.idle_timer_start.take().is_some() {
            changed = true;
        }
        // Most reads are in the middle of a message and change nothing
        // here: the last decision (`synced`, `bound`) still holds for them
        // (nine reads in ten on the node16 benchmark).
        if changed {
            self.epoch = self.epoch.wrapping_add(1);
        }
    }

    // ---- the timed transitions ----

    /// The earliest timed transition from the current state, whenever it is.
    fn next_transition(&self, env: &HtsEnv) -> Option<(u64, Transition)> {
        let mut best: Option<(u64, Transition)> = None;
        let mut consider = |t: u64, tr: Transition| {
            if best.is_none_or(|b| (t, tr) < b) {
                best = Some((t, tr));
            }
        };
        for i in 0..self.n {
            if let (Some(s), Some(a)) = (self.ctx[i].idle_since, env.heads[i]) {
                consider(a.max(s), Transition::Activate(i));
            }
        }
        if let Some(d) = self.idle_timer_start {
            if let Some(t) = d.checked_add(env.lidlecycles) {
                consider(t, Transition::IdleTimeout);
            }
        }
        if let Some(i) = env.running {
            let c = &self.ctx[i];
            // Only while a message is in progress: between messages the
            // timer waits for the first netRX read of the next one.
            if env.current_priority == 0 && c.idle_since.is_none() && !c.between {
                if let Some(t) = self.msg_timer_start.checked_add(env.lmsgcycles) {
                    if t != u64::MAX {
                        consider(t, Transition::Demote);
                    }
                }
            }
        }
        best
    }

    fn apply(&mut self, env: &mut HtsEnv, t: u64, tr: Transition) {
        match tr {
            Transition::Activate(i) => {
                self.ctx[i].idle_since = None;
                self.ctx[i].active_from = t;
            }
            Transition::IdleTimeout => {
                self.idle_timer_start = None;
                if let Some(i) = env.running {
                    if self.ctx[i].idle_since.is_none() && !env.visible(i, t) {
                        self.ctx[i].between = true;
                        self.ctx[i].idle_since = Some(t);
                        self.msg_timer_start = t;
                        self.stats.idle_timeouts += 1;
                        self.note(t, HtsNote::IdleTimeout);
                    }
                }
            }
            Transition::Demote => {
                if let Some(i) = env.running {
                    self.ctx[i].priority = 1;
                }
                env.current_priority = 1;
                self.stats.demotions += 1;
                self.note(t, HtsNote::Demoted);
            }
        }
    }

    /// Applies every timed transition due at or before cycle `now`, in time
    /// order. `env.current_priority` drops to 1 if the running context is
    /// demoted. Returns whether anything changed.
    pub fn advance(&mut self, env: &mut HtsEnv, now: u64) -> bool {
        let mut changed = false;
        while let Some((t, tr)) = self.next_transition(env) {
            if t > now {
                break;
            }
            self.apply(env, t, tr);
            changed = true;
        }
        if changed {
            self.touch();
        }
        changed
    }

    // ---- the decision ----

    /// The slot HTS wants to switch to at cycle `now`, or `None` to keep the
    /// running context. Expects [`advance`](Self::advance)`(env, now)` done.
    pub fn choose(&self, env: &HtsEnv, now: u64) -> Option<usize> {
        let mut best: Option<(u8, u64, usize)> = None;
        for i in 0..self.n {
            let c = &self.ctx[i];
            if Some(i) == env.running || c.idle_since.is_some() {
                continue;
            }
            let key = match env.heads[i] {
                Some(a) if a <= now => a.max(c.active_from),
                _ => c.active_from,
            };
            let cand = (c.priority, key, i);
            if best.is_none_or(|b| cand < b) {
                best = Some(cand);
            }
        }
        let (prio, key, slot) = best?;
        let Some(r) = env.running else {
            return Some(slot); // an unregistered context is idle
        };
        if prio < env.current_priority {
            return Some(slot); // (a)
        }
        if now < self.report_visible_at {
            // (b) and (c) follow a report: not yet raised.
            return None;
        }
        if self.ctx[r].idle_since.is_some() {
            return Some(slot); // (b)
        }
        if prio == env.current_priority && self.done {
            // (c): only if the running context has its next message waiting.
            if let Some(a) = env.heads[r].filter(|&a| a <= now) {
                if key < a {
                    return Some(slot);
                }
            }
        }
        None
    }

    /// Brings the state to cycle `now` and returns whether interrupt 16 is
    /// pending (the new value of mip bit 16), counting rising edges.
    pub fn sync(&mut self, env: &mut HtsEnv, now: u64) -> bool {
        if let Some((epoch, e, until)) = self.synced {
            if epoch == self.epoch && e == *env && now < until {
                return self.raised;
            }
        }
        self.advance(env, now);
        let pending = self.choose(env, now).is_some();
        if pending && !self.raised {
            self.stats.interrupts_raised += 1;
            self.note(now, HtsNote::InterruptRaised);
        }
        self.raised = pending;
        // Valid until the next thing that can change the decision.
        let until = self.next_check(env, now).unwrap_or(u64::MAX);
        self.synced = Some((self.epoch, *env, until));
        pending
    }

    /// The cycle before which [`sync`](Self::sync)`(env, now)` would change
    /// nothing: the last synchronisation still holds (no state change since,
    /// the same environment, nothing due before then), so it would return
    /// [`raised`](Self::raised) without touching the state or the counters;
    /// 0 if it no longer holds. The node uses it to skip wake checks of
    /// sleeping harts.
    pub fn sync_current_until(&self, env: &HtsEnv) -> u64 {
        match self.synced {
            Some((epoch, e, until)) if epoch == self.epoch && e == *env => until,
            _ => 0,
        }
    }

    /// The next cycle after `now` at which the decision may change with no
    /// software action: a timed transition or a head word becoming visible.
    fn next_check(&self, env: &HtsEnv, now: u64) -> Option<u64> {
        let tr = self.next_transition(env).map(|(t, _)| t);
        let head = (0..self.n)
            .filter_map(|i| env.heads[i])
            .filter(|&a| a > now)
            .min();
        let report = Some(self.report_visible_at);
        [tr, head, report]
            .into_iter()
            .flatten()
            .filter(|&t| t > now)
            .min()
    }

    /// The first cycle after `now` at which interrupt 16 becomes pending if
    /// software does nothing; `None` if it never does, or if it already is
    /// pending at `now` (then nothing new can happen until software acts).
    pub fn next_interrupt(&self, env: &HtsEnv, now: u64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        if let Some((epoch, e, at, result)) = self.bound.get() {
            if epoch == self.epoch && e == *env && at <= now && result.is_none_or(|r| r > now) {
                return result;
            }
        }
        let mut h = self.clone();
        let mut e = *env;
        h.advance(&mut e, now);
        let mut result = None;
        if h.choose(&e, now).is_none() {
            let mut t = now;
            // Each step applies a transition or passes an arrival: a few suffice.
            for _ in 0..4 * MAX_CONTEXTS + 8 {
                let Some(next) = h.next_check(&e, t) else {
                    break;
                };
                t = next;
                h.advance(&mut e, t);
                if h.choose(&e, t).is_some() {
                    result = Some(t);
                    break;
                }
            }
        }
        self.bound.set(Some((self.epoch, *env, now, result)));
        result
    }

    /// `ltargetcontext` / `ltargetpriority` at cycle `now` (after
    /// [`advance`](Self::advance)), given the running context's id.
    pub fn target(&self, env: &HtsEnv, now: u64, current_context: u16) -> (u16, u8) {
        match self.choose(env, now) {
            Some(i) => (self.ctx[i].context, self.ctx[i].priority),
            None => (current_context, env.current_priority),
        }
    }

    /// Registered priority of slot `i`.
    pub fn priority(&self, i: usize) -> u8 {
        self.ctx[i].priority
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted core: the HTS plus the inputs the network interface gives it.
    struct Script {
        h: Hts,
        env: HtsEnv,
    }

    impl Script {
        /// Registers `prios.len()` contexts (ids 10, 11, ...) at cycle 0; the
        /// first is running with `lcurpriority` = its priority; every
        /// context reports idle at cycle 0.
        fn new(prios: &[u8]) -> Script {
            let mut s = Script {
                h: Hts::new(),
                env: HtsEnv {
                    running: None,
                    current_priority: 0,
                    heads: [None; MAX_CONTEXTS],
                    lmsgcycles: 3000,
                    lidlecycles: 3000,
                },
            };
            for (i, &p) in prios.iter().enumerate() {
                s.h.set_running(&mut s.env, None, true, 0);
                s.h.register(&mut s.env, i, 10 + i as u16, p, 0);
                s.h.set_running(&mut s.env, Some(i), false, 0);
                s.h.user_command(&mut s.env, 2, 0);
            }
            s.switch(0, 0);
            s
        }
        fn switch(&mut self, slot: usize, now: u64) {
            self.h.set_running(&mut self.env, Some(slot), true, now);
            self.env.current_priority = self.h.priority(slot);
            self.h.restart_timer(&mut self.env, now);
        }
        fn deliver(&mut self, slot: usize, at: u64) {
            if self.env.heads[slot].is_none() {
                self.env.heads[slot] = Some(at);
            }
            self.h.invalidate();
        }
        /// The running context reads its whole FIFO at `now`.
        fn drain(&mut self, now: u64) {
            let r = self.env.running.unwrap();
            self.h.advance(&mut self.env, now);
            self.h.rx_read(now);
            self.env.heads[r] = None;
        }
        fn pending(&mut self, now: u64) -> bool {
            self.h.sync(&mut self.env, now)
        }
        fn target(&mut self, now: u64) -> (u16, u8) {
            self.h.advance(&mut self.env, now);
            self.h
                .target(&self.env, now, 10 + self.env.running.unwrap() as u16)
        }
    }

    #[test]
    fn a_higher_priority_arrival_preempts_at_its_arrival_cycle() {
        let mut s = Script::new(&[1, 0]);
        s.deliver(0, 100);
        s.drain(100); // context 10 (priority 1) busy with a message
        s.deliver(1, 500);
        assert!(!s.pending(499));
        assert_eq!(s.h.next_interrupt(&s.env, 200), Some(500));
        assert!(s.pending(500));
        assert_eq!(s.target(500), (11, 0));
        assert_eq!(s.h.stats.interrupts_raised, 1);
        // The handler switches: nothing pending any more.
        s.switch(1, 520);
        assert!(!s.pending(520));
        assert_eq!(s.target(520), (11, 0));
    }

    #[test]
    fn equal_or_lower_priority_arrivals_queue() {
        let mut s = Script::new(&[1, 1, 2]);
        s.deliver(0, 10);
        s.drain(10);
        s.deliver(1, 20);
        s.deliver(2, 30);
        assert!(!s.pending(1000));
        assert_eq!(s.target(1000), (10, 1));
        assert_eq!(s.h.next_interrupt(&s.env, 1000), None);
        // The running context finishes and goes idle: the older equal
        // priority message goes first.
        s.h.user_command(&mut s.env, 1, 1100);
        assert!(
            !s.pending(1100),
            "nothing waiting for it: it keeps the core"
        );
        s.h.user_command(&mut s.env, 2, 1110);
        assert!(!s.pending(1110 + REPORT_TO_INTERRUPT_CYCLES - 1));
        assert_eq!(
            s.h.next_interrupt(&s.env, 1110),
            Some(1110 + REPORT_TO_INTERRUPT_CYCLES),
            "raised two cycles after the report reaches the CSR file"
        );
        assert!(s.pending(1110 + REPORT_TO_INTERRUPT_CYCLES));
        assert_eq!(s.target(1110 + REPORT_TO_INTERRUPT_CYCLES), (11, 1));
    }

    #[test]
    fn done_with_a_newer_message_waiting_rotates_equal_priorities() {
        let mut s = Script::new(&[0, 0]);
        s.deliver(0, 10);
        s.drain(10);
        s.deliver(1, 50); // the other context's message is older ...
        s.deliver(0, 60); // ... than the running one's next message
        assert!(!s.pending(100), "no preemption by an equal priority");
        s.h.user_command(&mut s.env, 1, 200);
        assert!(!s.pending(200));
        assert!(s.pending(200 + REPORT_TO_INTERRUPT_CYCLES));
        assert_eq!(s.target(200 + REPORT_TO_INTERRUPT_CYCLES), (11, 0));
        // Had the running context's next message been older, it would keep
        // the core.
        let mut s = Script::new(&[0, 0]);
        s.deliver(0, 10);
        s.drain(10);
        s.deliver(0, 40);
        s.deliver(1, 50);
        s.h.user_command(&mut s.env, 1, 200);
        assert!(!s.pending(200 + REPORT_TO_INTERRUPT_CYCLES));
        // Reading netRX (its next message) clears the done mark.
        s.h.rx_read(210);
        assert!(!s.pending(210));
    }

    #[test]
    fn an_idle_report_yields_only_with_an_empty_fifo() {
        let mut s = Script::new(&[0, 3]);
        s.deliver(0, 10);
        s.deliver(1, 20);
        assert!(!s.pending(30), "running context has priority");
        s.h.user_command(&mut s.env, 2, 30);
        assert!(
            !s.pending(30),
            "idle report with a message waiting is ignored"
        );
        s.drain(40);
        s.h.user_command(&mut s.env, 3, 50);
        assert!(
            s.pending(50 + REPORT_TO_INTERRUPT_CYCLES),
            "idle with an empty FIFO: the lower priority runs"
        );
        assert_eq!(s.target(50 + REPORT_TO_INTERRUPT_CYCLES), (11, 3));
    }

    #[test]
    fn idle_running_context_with_nothing_else_active_keeps_the_core() {
        let mut s = Script::new(&[0, 1]);
        assert!(!s.pending(10));
        assert_eq!(s.target(10), (10, 0));
        assert_eq!(s.h.next_interrupt(&s.env, 10), None);
        s.deliver(1, 1000);
        assert_eq!(s.h.next_interrupt(&s.env, 10), Some(1000));
        assert!(s.pending(1000));
    }

    #[test]
    fn a_fresh_context_is_active_until_it_reports_idle() {
        let mut h = Hts::new();
        let mut env = HtsEnv {
            running: None,
            current_priority: 0,
            heads: [None; MAX_CONTEXTS],
            lmsgcycles: 3000,
            lidlecycles: 3000,
        };
        for (i, p) in [(0, 2), (1, 1)] {
            h.set_running(&mut env, None, true, 0);
            env.current_priority = p;
            h.register(&mut env, i, i as u16, p, 0);
            h.set_running(&mut env, Some(i), false, 0);
        }
        // Running: slot 1 (priority 1); slot 0 (priority 2) is lower.
        assert!(!h.sync(&mut env, 10));
        h.user_command(&mut env, 2, 20);
        assert!(
            h.sync(&mut env, 20 + REPORT_TO_INTERRUPT_CYCLES),
            "slot 0 has not run its start-up yet"
        );
        // An unregistered running context is idle: any active context wins.
        h.set_running(&mut env, None, true, 30);
        env.current_priority = 0;
        assert!(h.sync(&mut env, 30));
    }

    #[test]
    fn demotion_after_lmsgcycles_preempts_for_another_priority_0_context() {
        let mut s = Script::new(&[0, 0]);
        s.deliver(0, 100);
        s.drain(100); // processing starts at 100
        s.deliver(1, 200);
        assert!(!s.pending(3099));
        assert_eq!(s.h.next_interrupt(&s.env, 150), Some(3100));
        assert!(s.pending(3100));
        assert_eq!(s.env.current_priority, 1);
        assert_eq!(s.h.priority(0), 1);
        assert_eq!(s.target(3100), (11, 0));
        assert_eq!(s.h.stats.demotions, 1);
        // Permanent: switched back later, it is still priority 1.
        s.switch(1, 3200);
        s.drain(3300);
        s.h.user_command(&mut s.env, 3, 3310);
        assert_eq!(s.target(3310 + REPORT_TO_INTERRUPT_CYCLES), (10, 1));
    }

    #[test]
    fn the_message_timer_restarts_on_done_idle_and_lniccmd() {
        let mut s = Script::new(&[0, 0]);
        s.deliver(0, 0);
        s.drain(0);
        s.deliver(1, 10);
        s.h.restart_timer(&mut s.env, 2000);
        assert!(!s.pending(4999));
        assert!(s.pending(5000));
        // Time spent idle or with the message still unread does not count:
        // the first netRX read of the message starts it.
        let mut s = Script::new(&[0, 0]);
        s.deliver(0, 10_000);
        s.deliver(1, 10_500);
        assert_eq!(s.h.next_interrupt(&s.env, 0), None);
        assert!(!s.pending(12_000));
        s.drain(12_000);
        assert_eq!(s.h.next_interrupt(&s.env, 12_000), Some(15_000));
        assert!(!s.pending(14_999));
        assert!(s.pending(15_000));
    }

    #[test]
    fn the_message_timer_counts_only_while_a_message_is_in_progress() {
        // A fresh priority-0 context running start-up code has no message:
        // it is not demoted however long that takes.
        let mut h = Hts::new();
        let mut env = HtsEnv {
            running: None,
            current_priority: 0,
            heads: [None; MAX_CONTEXTS],
            lmsgcycles: 3000,
            lidlecycles: u64::MAX,
        };
        for i in [0, 1] {
            h.set_running(&mut env, None, true, 0);
            h.register(&mut env, i, i as u16, 0, 0);
            h.set_running(&mut env, Some(i), false, 0);
        }
        h.user_command(&mut env, 2, 0); // context 1 waits for messages
        h.set_running(&mut env, Some(0), true, 0);
        assert_eq!(h.next_interrupt(&env, 0), None);
        assert!(!h.sync(&mut env, 1_000_000));
        assert_eq!(h.stats.demotions, 0);
        // Its first message arrives at 2,000,000 and is read at 2,001,000:
        // the timer counts from the read.
        env.heads[0] = Some(2_000_000);
        env.heads[1] = Some(2_000_100);
        h.invalidate();
        assert_eq!(h.next_interrupt(&env, 1_000_000), None, "nothing read yet");
        h.advance(&mut env, 2_001_000);
        h.rx_read(2_001_000);
        env.heads[0] = None;
        assert_eq!(h.next_interrupt(&env, 2_001_000), Some(2_004_000));
        // Done before the bound: after it, no message in progress, no timer.
        h.user_command(&mut env, 1, 2_003_000);
        assert_eq!(h.next_interrupt(&env, 2_003_000), None);
        assert!(!h.sync(&mut env, 3_000_000));
        assert_eq!(h.stats.demotions, 0);
    }

    #[test]
    fn priority_1_contexts_are_never_demoted() {
        let mut s = Script::new(&[1, 1]);
        s.deliver(0, 0);
        s.drain(0);
        s.deliver(1, 10);
        assert!(!s.pending(1_000_000));
        assert_eq!(s.h.stats.demotions, 0);
    }

    #[test]
    fn idle_timeout_marks_a_done_context_idle() {
        let mut s = Script::new(&[1, 2]);
        s.deliver(0, 0);
        s.drain(0);
        s.deliver(1, 100);
        s.h.user_command(&mut s.env, 1, 500); // done, never reports idle
        assert!(!s.pending(3499));
        assert_eq!(s.h.next_interrupt(&s.env, 600), Some(3500));
        assert!(s.pending(3500));
        assert_eq!(s.h.stats.idle_timeouts, 1);
        // A message waiting at the deadline keeps it busy instead.
        let mut s = Script::new(&[1, 2]);
        s.deliver(0, 0);
        s.drain(0);
        s.deliver(1, 100);
        s.h.user_command(&mut s.env, 1, 500);
        s.deliver(0, 3000);
        assert!(!s.pending(10_000));
    }

    #[test]
    fn ties_go_to_the_oldest_head_message() {
        let mut s = Script::new(&[0, 2, 2, 2]);
        s.deliver(2, 300);
        s.deliver(1, 400);
        s.deliver(3, 200);
        assert_eq!(s.target(100), (10, 0), "nothing has arrived yet");
        assert_eq!(s.target(250), (13, 2));
        assert_eq!(s.target(1000), (13, 2));
        assert!(s.pending(1000));
    }

    #[test]
    fn cycles_running_are_accounted_per_context() {
        let mut s = Script::new(&[0, 1]);
        s.switch(1, 100);
        s.switch(0, 350);
        let c = s.h.cycles_running(400);
        assert_eq!(c[0], (Some(10), 100 + 50));
        assert_eq!(c[1], (Some(11), 250));
        assert_eq!(c[2], (None, 0));
    }

    #[test]
    fn a_sync_is_current_until_something_it_depends_on_changes() {
        let mut s = Script::new(&[0, 0]);
        assert_eq!(s.h.sync_current_until(&s.env), 0, "never synchronised");
        assert!(!s.pending(10));
        assert_eq!(s.h.sync_current_until(&s.env), u64::MAX, "nothing is due");
        // A message for the other context arriving at 500: current only
        // before it arrives.
        s.deliver(1, 500);
        assert_eq!(s.h.sync_current_until(&s.env), 0, "a delivery invalidates");
        assert!(!s.pending(20));
        assert_eq!(s.h.sync_current_until(&s.env), 500);
        let raised = s.h.stats.interrupts_raised;
        assert!(s.pending(500));
        assert_eq!(s.h.stats.interrupts_raised, raised + 1);
        assert!(s.h.sync_current_until(&s.env) > 500);
    }
}
