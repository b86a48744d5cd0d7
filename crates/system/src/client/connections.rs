//! The load generator's side of `[load] connections` (NEBULA's protocol,
//! [`crate::connections`]): NACKed requests sent again after a backoff,
//! and a finished request's connection handed to the next one waiting.

use super::{Client, ClientEvent, ClientIo, LoadMode, Outstanding};
use nanopu_sim::{SimDuration, SimTime};

impl Client {
    /// `frame`, if it is a NACK of a request in flight on a connection
    /// (`[load] connections`): the request is sent again after a backoff,
    /// or given up after `max_attempts` sends.
    pub(super) fn nack(&mut self, frame: &[u8], at: SimTime, out: &mut ClientIo) -> bool {
        let Ok((r, _)) = nanopu_wire::FrameRepr::parse(frame) else {
            return false;
        };
        if !r.nt.flags.contains(nanopu_wire::Flags::NACK) || r.ip.dst_addr.to_bits() != self.ip {
            return false;
        }
        let conns = self.conns.as_mut().expect("connections");
        let Some(key) = conns.request((r.nt.dst_context, r.nt.tx_msg_id)) else {
            self.report.unexpected_replies += 1;
            return true;
        };
        self.report.nacks += 1;
        let o = self.outstanding.get_mut(&key).expect("in flight");
        if o.seq >= self.cfg.warmup {
            self.measured_nacks += 1;
        }
        if o.attempts >= conns.cfg.max_attempts {
            let o = self.outstanding.remove(&key).expect("in flight");
            self.report.gave_up += 1;
            self.report.lost += 1;
            self.close_conn(&o, at, out);
            if let LoadMode::Closed { .. } = self.cfg.mode {
                self.send_next(at, out);
            }
            return true;
        }
        o.resending = true;
        let back = at + SimDuration::from_ns(conns.cfg.backoff_ns * o.attempts as u64);
        conns.resend_at(back, key);
        out.schedule(back, ClientEvent::Resend);
        true
    }

    /// Sends again the NACKed requests whose backoff is over by `now`.
    pub(super) fn resend_due(&mut self, now: SimTime, out: &mut ClientIo) {
        while let Some(key) = self.conns.as_mut().and_then(|c| c.due_resend(now)) {
            let Some(req) = self
                .outstanding
                .get_mut(&key)
                .and_then(|o| o.request.take())
            else {
                continue;
            };
            self.report.retries += 1;
            self.transmit(key, *req, now, out);
        }
    }

    /// Request `req` is done: its connection takes the next waiting one.
    pub(super) fn close_conn(&mut self, req: &Outstanding, now: SimTime, out: &mut ClientIo) {
        let (Some(conns), Some(id)) = (self.conns.as_mut(), req.conn) else {
            return;
        };
        if let Some((key, id)) = conns.close(id) {
            let Some(o) = self.outstanding.get_mut(&key) else {
                return;
            };
            o.conn = Some(id);
            if let Some(r) = o.request.take() {
                self.transmit(key, *r, now, out);
            }
        }
    }
}
