//! The network's timeline probes (`--timeline`): one track per switch
//! port (and per host uplink), a span for each data frame's wait in the
//! port's queue and its serialization onto the link.

use nanopu_sim::{SimDuration, SimTime};
use nanopu_timeline::{host_pid, packet_key, switch_pid, Timeline, Track};

use crate::topology::Endpoint;

/// The ports' tracks.
#[derive(Debug)]
pub(crate) struct NetTimeline {
    tl: Timeline,
    /// By port index (host uplinks first): (serialization, queue). Frames
    /// serialize one at a time; their waits overlap.
    tracks: Vec<(Track, Track)>,
}

impl NetTimeline {
    /// `ports`: for each port, its switch and index there (`None`: the
    /// uplink of the host of that index) and where it leads.
    pub(crate) fn new(
        tl: Timeline,
        ports: impl Iterator<Item = (usize, Option<(usize, usize)>, Endpoint)>,
    ) -> NetTimeline {
        let tracks = ports
            .map(|(p, owner, peer)| {
                let to = match peer {
                    Endpoint::Host(h) => format!("host {h}"),
                    Endpoint::Switch(s) => format!("switch {s}"),
                };
                let (pid, name) = match owner {
                    None => (host_pid(p), format!("link to {to}")),
                    Some((s, k)) => {
                        tl.process(switch_pid(s), &format!("switch {s}"));
                        (switch_pid(s), format!("port {k} to {to}"))
                    }
                };
                (
                    tl.track(pid, &name),
                    tl.track(pid, &format!("{name}: queue")),
                )
            })
            .collect();
        NetTimeline { tl, tracks }
    }

    /// Port `p` starts sending `frame` at `at`, for `wire` (it was queued
    /// from `since`).
    pub(crate) fn depart(
        &self,
        p: usize,
        frame: &[u8],
        since: SimTime,
        at: SimTime,
        wire: SimDuration,
    ) {
        let Some((key, true)) = packet_key(frame) else {
            return;
        };
        let flow = self.tl.flow_of_key(key, since);
        let (wire_track, queue_track) = self.tracks[p];
        if since < at {
            self.tl.span(queue_track, "queued", since, at, flow, "", 0);
        }
        self.tl.span(
            wire_track,
            "on the wire",
            at,
            at + wire,
            flow,
            "bytes",
            frame.len() as u64,
        );
    }
}
