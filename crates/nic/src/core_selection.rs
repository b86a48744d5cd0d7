//! Core selection (nanoPU §2.3, §3.3): per application, JBSQ(n) over the
//! cores running it. A message goes to the core holding the fewest of that
//! application's messages, if that is fewer than n; otherwise it waits in the
//! application's global RX queue until a core reports it finished one.

use crate::message::Message;
use std::collections::{BTreeMap, VecDeque};

#[derive(Default)]
struct App {
    /// (core, messages of this app it holds), in registration order.
    cores: Vec<(usize, u32)>,
    /// The global RX queue of this application.
    waiting: VecDeque<Message>,
}

/// JBSQ(n) core selection for every application (context).
pub struct CoreSelector {
    depth: u32,
    apps: BTreeMap<u16, App>,
    /// Deepest any global RX queue has been (statistics).
    pub max_waiting: usize,
}

impl CoreSelector {
    pub fn new(depth: u32) -> CoreSelector {
        CoreSelector {
            depth,
            apps: BTreeMap::new(),
            max_waiting: 0,
        }
    }

    /// `core` runs a thread of application `context`.
    pub fn register(&mut self, context: u16, core: usize) {
        let app = self.apps.entry(context).or_default();
        if !app.cores.iter().any(|&(c, _)| c == core) {
            app.cores.push((core, 0));
        }
    }

    /// Whether any core runs `context` (the port match table's entries).
    pub fn has_context(&self, context: u16) -> bool {
        self.apps.get(&context).is_some_and(|a| !a.cores.is_empty())
    }

    /// A message for `msg.local_context` is ready: returns the core to send
    /// it to now, or queues it.
    pub fn message(&mut self, msg: Message) -> Option<(usize, Message)> {
        let depth = self.depth;
        let app = self.apps.get_mut(&msg.local_context)?;
        match pick(&mut app.cores, depth) {
            Some(core) => Some((core, msg)),
            None => {
                app.waiting.push_back(msg);
                self.max_waiting = self.max_waiting.max(app.waiting.len());
                None
            }
        }
    }

    /// `core` finished a message of `context`: returns the next message to
    /// send it, if one waits.
    pub fn done(&mut self, context: u16, core: usize) -> Option<(usize, Message)> {
        let depth = self.depth;
        let app = self.apps.get_mut(&context)?;
        if let Some(slot) = app.cores.iter_mut().find(|(c, _)| *c == core) {
            slot.1 = slot.1.saturating_sub(1);
        }
        if app.waiting.is_empty() {
            return None;
        }
        let core = pick(&mut app.cores, depth)?;
        app.waiting.pop_front().map(|m| (core, m))
    }

    /// Messages of `context` that `core` holds.
    pub fn outstanding(&self, context: u16, core: usize) -> u32 {
        self.apps
            .get(&context)
            .and_then(|a| a.cores.iter().find(|(c, _)| *c == core))
            .map_or(0, |&(_, n)| n)
    }
}

/// The core with the fewest outstanding messages, if below `depth` (ties go
/// to the earliest registered core); counts the new message against it.
fn pick(cores: &mut [(usize, u32)], depth: u32) -> Option<usize> {
    let (core, n) = cores
        .iter_mut()
        .filter(|(_, n)| *n < depth)
        .min_by_key(|(_, n)| *n)?;
    *n += 1;
    Some(*core)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(ctx: u16, tag: u64) -> Message {
        Message {
            peer_ip: 1,
            peer_context: 1,
            local_context: ctx,
            len: 8,
            payload: vec![tag],
        }
    }

    #[test]
    fn jbsq_never_exceeds_the_bound_and_balances() {
        let mut s = CoreSelector::new(2);
        s.register(7, 0);
        s.register(7, 1);
        let cores: Vec<_> = (0..4).map(|i| s.message(msg(7, i)).unwrap().0).collect();
        assert_eq!(cores, vec![0, 1, 0, 1]);
        assert!(s.message(msg(7, 4)).is_none(), "both cores hold 2: queued");
        assert!(s.message(msg(7, 5)).is_none());
        assert_eq!(s.outstanding(7, 0), 2);
        let (core, m) = s.done(7, 1).unwrap();
        assert_eq!(
            (core, m.payload[0]),
            (1, 4),
            "FIFO order from the global queue"
        );
        assert_eq!(s.outstanding(7, 1), 2);
        assert_eq!(s.max_waiting, 2);
    }

    #[test]
    fn unregistered_context_has_no_core() {
        let mut s = CoreSelector::new(2);
        assert!(!s.has_context(3));
        assert!(s.message(msg(3, 0)).is_none());
    }
}
