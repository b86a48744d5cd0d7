//! [`Io`]: what a clock-free model asks of the world around it during one
//! call — frames to put on its link, its own events to be handed back later,
//! and notes for whoever keeps records — in one vocabulary for every model
//! (load generators, hosts, NICs). The caller drains it after the call; the
//! buffers stay with the `Io`, so a model in steady state allocates nothing.

use crate::SimTime;

/// Requests of a model: frames to transmit (with the time each is ready for
/// the wire), events of type `E` to schedule, notes of type `N`. Each kind
/// keeps the order it was given in.
#[derive(Debug)]
pub struct Io<E, N = ()> {
    transmit: Vec<(Vec<u8>, SimTime)>,
    schedule: Vec<(SimTime, E)>,
    notes: Vec<N>,
}

impl<E, N> Default for Io<E, N> {
    fn default() -> Self {
        Io {
            transmit: Vec::new(),
            schedule: Vec::new(),
            notes: Vec::new(),
        }
    }
}

impl<E, N> Io<E, N> {
    /// `frame` is ready to be serialized onto the link at `ready`.
    #[inline]
    pub fn transmit(&mut self, frame: Vec<u8>, ready: SimTime) {
        self.transmit.push((frame, ready));
    }

    /// Hand `event` back at `at`.
    #[inline]
    pub fn schedule(&mut self, at: SimTime, event: E) {
        self.schedule.push((at, event));
    }

    /// Something for the records (never changes what the model does).
    #[inline]
    pub fn note(&mut self, note: N) {
        self.notes.push(note);
    }

    /// Whether nothing was asked for.
    pub fn is_empty(&self) -> bool {
        self.transmit.is_empty() && self.schedule.is_empty() && self.notes.is_empty()
    }

    /// The frames asked for so far, in order.
    pub fn frames(&self) -> &[(Vec<u8>, SimTime)] {
        &self.transmit
    }

    /// The events asked for so far, in order.
    pub fn events(&self) -> &[(SimTime, E)] {
        &self.schedule
    }

    /// The notes so far, in order.
    pub fn notes(&self) -> &[N] {
        &self.notes
    }

    /// Everything asked for, each kind in the order given; what is not
    /// taken from the iterators is dropped, the buffers kept.
    pub fn drain(&mut self) -> Drain<'_, E, N> {
        Drain {
            transmit: self.transmit.drain(..),
            schedule: self.schedule.drain(..),
            notes: self.notes.drain(..),
        }
    }

    /// Drops everything asked for (the buffers are kept).
    pub fn clear(&mut self) {
        self.transmit.clear();
        self.schedule.clear();
        self.notes.clear();
    }

    /// Moves everything `inner` asked for into `self`, its events through
    /// `wrap` (a model made of parts, each with an `Io` of its own).
    pub fn absorb<F>(&mut self, inner: &mut Io<F, N>, wrap: impl Fn(F) -> E) {
        if inner.is_empty() {
            return;
        }
        self.transmit.append(&mut inner.transmit);
        self.schedule
            .extend(inner.schedule.drain(..).map(|(t, e)| (t, wrap(e))));
        self.notes.append(&mut inner.notes);
    }
}

/// What a model asked for, taken out of its [`Io`].
pub struct Drain<'a, E, N> {
    pub transmit: std::vec::Drain<'a, (Vec<u8>, SimTime)>,
    pub schedule: std::vec::Drain<'a, (SimTime, E)>,
    pub notes: std::vec::Drain<'a, N>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SimDuration;

    #[test]
    fn drains_in_order_and_keeps_its_buffers() {
        let t = |ns| SimTime::ZERO + SimDuration::from_ns(ns);
        let mut io: Io<u32, &str> = Io::default();
        assert!(io.is_empty());
        io.schedule(t(2), 7);
        io.transmit(vec![1, 2], t(1));
        io.schedule(t(1), 8);
        io.note("a");
        let cap = io.schedule.capacity();
        {
            let d = io.drain();
            assert_eq!(d.schedule.collect::<Vec<_>>(), vec![(t(2), 7), (t(1), 8)]);
            assert_eq!(d.transmit.collect::<Vec<_>>(), vec![(vec![1, 2], t(1))]);
            assert_eq!(d.notes.collect::<Vec<_>>(), vec!["a"]);
        }
        assert!(io.is_empty());
        assert_eq!(io.schedule.capacity(), cap, "the buffers stay");
        let mut inner: Io<u8, &str> = Io::default();
        inner.schedule(t(3), 1);
        inner.note("b");
        io.absorb(&mut inner, u32::from);
        assert!(inner.is_empty());
        assert_eq!(io.events(), &[(t(3), 1u32)]);
        assert_eq!(io.notes(), &["b"]);
    }
}
