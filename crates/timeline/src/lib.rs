//! Timeline traces (`--timeline FILE`) in the Chrome trace-event JSON format
//! ("Trace Event Format", the JSON Object Format), which Perfetto
//! (ui.perfetto.dev) and chrome://tracing open.
//!
//! The models hold an `Option<Timeline>` and call it at their probe points
//! only when it is `Some`, so a run without a timeline pays one predictable
//! branch per probe and allocates nothing. A [`Timeline`] is a cheap handle
//! (`Arc<Mutex<..>>`) shared by every model of one run.
//!
//! What is recorded:
//! - **tracks** ([`Timeline::track`]): one per NIC stage, per core context,
//!   per switch port, grouped in processes (a host, a switch);
//! - **spans** ([`Timeline::span`]): a message's time in one stage, written
//!   as complete events (`ph: "X"`). Stages are pipelined, so spans on one
//!   track may overlap; the writer spreads overlapping spans over lanes
//!   (extra threads of the same name, "ingress #2") so every thread's
//!   slices nest, as the format requires;
//! - **flows**: every span carries the flow id of the request it belongs
//!   to; the writer links a flow's spans in time order with flow events
//!   (`s`, `t`, `f`), the arrows Perfetto draws from wire in to wire out;
//! - **instants** ([`Timeline::instant`]): thread-scheduler context
//!   switches and interrupts (`ph: "i"`, thread scope).
//!
//! A flow is named by the message it started as: its sender's address,
//! context and `tx_msg_id` ([`packet_key`]). The first component to see a
//! message allocates its flow ([`Timeline::flow_of_key`]), which decides
//! sampling (every Nth message, [`TimelineOptions::sample_every`]); a reply
//! takes its request's flow ([`Timeline::claim`]).
//!
//! Records are compact (48 bytes) and kept in one growing vector until
//! [`Timeline::finish`], which sorts them, assigns lanes, adds the flow
//! events and streams the JSON to the file. `max_records` bounds memory:
//! past it recording stops and the file says how much was left out
//! (`otherData.dropped_records`). Sampling and the time window keep long
//! runs small.

pub mod check;

use nanopu_sim::SimTime;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// What to record and where to write it (from the command line or the
/// Python API; never part of a model's configuration).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineOptions {
    /// The JSON file to write.
    pub path: PathBuf,
    /// Trace every Nth message (1: all).
    pub sample_every: u32,
    /// Only spans that start, and instants that happen, in
    /// `[start, end)`.
    pub window: Option<(SimTime, SimTime)>,
    /// Records kept at most (about 48 bytes each).
    pub max_records: usize,
}

impl TimelineOptions {
    /// Every message, no window, at most [`Self::DEFAULT_MAX_RECORDS`] records.
    pub fn new(path: impl Into<PathBuf>) -> TimelineOptions {
        TimelineOptions {
            path: path.into(),
            sample_every: 1,
            window: None,
            max_records: Self::DEFAULT_MAX_RECORDS,
        }
    }

    /// About 200 MB of records.
    pub const DEFAULT_MAX_RECORDS: usize = 4_000_000;
}

/// A timeline option that makes no sense.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TimelineError {
    #[error("--timeline-sample must be at least 1, got {0}")]
    ZeroSample(u32),
    #[error("--timeline-window {0:?}: expected START_US:END_US with START_US < END_US (microseconds, e.g. 10:20.5)")]
    BadWindow(String),
}

/// Parses `START_US:END_US` (microseconds, decimals allowed).
pub fn parse_window(s: &str) -> Result<(SimTime, SimTime), TimelineError> {
    let bad = || TimelineError::BadWindow(s.to_string());
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let us = |v: &str| -> Result<SimTime, TimelineError> {
        let x: f64 = v.trim().parse().map_err(|_| bad())?;
        // Femtoseconds; the time base holds about 5.1 hours.
        if !x.is_finite() || !(0.0..=1.8e10).contains(&x) {
            return Err(bad());
        }
        Ok(SimTime((x * 1e9).round() as u64))
    };
    let (start, end) = (us(a)?, us(b)?);
    if start >= end {
        return Err(bad());
    }
    Ok((start, end))
}

/// Checks the options (the sampling period).
pub fn validate(opts: &TimelineOptions) -> Result<(), TimelineError> {
    if opts.sample_every == 0 {
        return Err(TimelineError::ZeroSample(0));
    }
    Ok(())
}

/// The process (`pid`) of host `h`: hosts first, in order.
pub fn host_pid(h: usize) -> u32 {
    h as u32 + 1
}

/// The process of switch `s`: after every host.
pub fn switch_pid(s: usize) -> u32 {
    1_000_000 + s as u32
}

/// A track: a row in the viewer (a thread of a process in the format).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Track(u32);

/// A request's flow; 0 is "not traced" (not sampled, or outside what is
/// recorded), so probes skip it.
pub type FlowId = u32;

/// The name of a message (sender address, context and message id) as a
/// flow key, and whether the frame carries data, from a nanoPU frame.
pub fn packet_key(frame: &[u8]) -> Option<(u64, bool)> {
    let (repr, _) = nanopu_wire::FrameRepr::parse(frame).ok()?;
    let key = message_key(
        repr.ip.src_addr.to_bits(),
        repr.nt.src_context,
        repr.nt.tx_msg_id,
    );
    Some((
        key,
        repr.nt
            .flags
            .contains(nanopu_wire::nanotransport::Flags::DATA),
    ))
}

/// The flow key of message `tx_msg_id` sent by `src_ip` from `src_context`.
pub fn message_key(src_ip: u32, src_context: u16, tx_msg_id: u16) -> u64 {
    (src_ip as u64) << 32 | (src_context as u64) << 16 | tx_msg_id as u64
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Span,
    Instant,
}

/// One recorded span or instant (48 bytes).
#[derive(Clone, Copy, Debug)]
struct Record {
    ts: u64,
    dur: u64,
    arg: u64,
    name: &'static str,
    arg_name: &'static str,
    track: u32,
    flow: FlowId,
    kind: Kind,
}

#[derive(Debug)]
struct TrackInfo {
    pid: u32,
    name: String,
}

/// A key not seen for this long names a new message (ids are reused).
const KEY_STALE_FS: u64 = 500 * 1_000_000_000;

#[derive(Debug)]
struct Recorder {
    opts: TimelineOptions,
    processes: Vec<(u32, String)>,
    tracks: Vec<TrackInfo>,
    track_index: HashMap<(u32, String), u32>,
    records: Vec<Record>,
    dropped: u64,
    /// Message key -> (flow, last seen).
    keys: HashMap<u64, (FlowId, SimTime)>,
    messages: u64,
    next_flow: FlowId,
}

/// The shared timeline of one run. Cloning is cheap (a handle).
#[derive(Clone, Debug)]
pub struct Timeline {
    inner: Arc<Mutex<Recorder>>,
}

/// What [`Timeline::finish`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    pub events: u64,
    pub bytes: u64,
    pub flows: u64,
    pub dropped_records: u64,
}

impl Timeline {
    /// A timeline that will be written to `opts.path`.
    pub fn new(opts: TimelineOptions) -> Result<Timeline, TimelineError> {
        validate(&opts)?;
        Ok(Timeline {
            inner: Arc::new(Mutex::new(Recorder {
                records: Vec::with_capacity(opts.max_records.min(1 << 16)),
                opts,
                processes: Vec::new(),
                tracks: Vec::new(),
                track_index: HashMap::new(),
                dropped: 0,
                keys: HashMap::new(),
                messages: 0,
                next_flow: 1,
            })),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Recorder> {
        // A panic elsewhere while holding the lock leaves consistent data.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The file this timeline is written to.
    pub fn path(&self) -> PathBuf {
        self.lock().opts.path.clone()
    }

    /// Names process `pid` (a host, a switch); the first name given stays.
    pub fn process(&self, pid: u32, name: &str) {
        let mut r = self.lock();
        if !r.processes.iter().any(|(p, _)| *p == pid) {
            r.processes.push((pid, name.to_string()));
        }
    }

    /// The track `name` of process `pid`, made on first use. Tracks are
    /// shown in the order they were made.
    pub fn track(&self, pid: u32, name: &str) -> Track {
        let mut r = self.lock();
        if let Some(&t) = r.track_index.get(&(pid, name.to_string())) {
            return Track(t);
        }
        let t = r.tracks.len() as u32;
        r.tracks.push(TrackInfo {
            pid,
            name: name.to_string(),
        });
        r.track_index.insert((pid, name.to_string()), t);
        Track(t)
    }

    /// A new message starts here (not seen on the wire before): its flow,
    /// or 0 if sampling leaves it out.
    pub fn new_flow(&self) -> FlowId {
        self.lock().new_flow()
    }

    /// The flow of the message named `key`, seen at `now`: the one already
    /// given to it, or a new one (0 if sampling leaves it out).
    pub fn flow_of_key(&self, key: u64, now: SimTime) -> FlowId {
        let mut r = self.lock();
        match r.keys.get_mut(&key) {
            Some((flow, seen)) if now.fs().saturating_sub(seen.fs()) < KEY_STALE_FS => {
                *seen = now;
                *flow
            }
            _ => {
                let flow = r.new_flow();
                r.keys.insert(key, (flow, now));
                flow
            }
        }
    }

    /// The message named `key` belongs to `flow` from `now` on (a reply
    /// takes its request's flow).
    pub fn claim(&self, key: u64, flow: FlowId, now: SimTime) {
        self.lock().keys.insert(key, (flow, now));
    }

    /// The message named `key` reached its destination: a later message
    /// with the same key is a new one.
    pub fn forget(&self, key: u64) {
        self.lock().keys.remove(&key);
    }

    /// A span of flow `flow` on `track` from `start` to `end` (skipped for
    /// flow 0, or outside the window). `arg` is shown as `args.{arg_name}`
    /// unless `arg_name` is empty.
    #[allow(clippy::too_many_arguments)]
    pub fn span(
        &self,
        track: Track,
        name: &'static str,
        start: SimTime,
        end: SimTime,
        flow: FlowId,
        arg_name: &'static str,
        arg: u64,
    ) {
        if flow == 0 {
            return;
        }
        self.lock().push(Record {
            ts: start.fs(),
            dur: end.fs().saturating_sub(start.fs()),
            arg,
            name,
            arg_name,
            track: track.0,
            flow,
            kind: Kind::Span,
        });
    }

    /// An instant event on `track` at `at` (outside the window: skipped).
    pub fn instant(
        &self,
        track: Track,
        name: &'static str,
        at: SimTime,
        arg_name: &'static str,
        arg: u64,
    ) {
        self.lock().push(Record {
            ts: at.fs(),
            dur: 0,
            arg,
            name,
            arg_name,
            track: track.0,
            flow: 0,
            kind: Kind::Instant,
        });
    }

    /// Writes the JSON file: sorted, lanes assigned, flows linked.
    pub fn finish(&self) -> io::Result<Written> {
        let mut r = self.lock();
        let path = r.opts.path.clone();
        let file = File::create(&path).map_err(|e| with_path(e, &path))?;
        let mut counter = CountingWriter {
            inner: BufWriter::with_capacity(1 << 16, file),
            bytes: 0,
        };
        let mut w = r
            .write_json(&mut counter)
            .map_err(|e| with_path(e, &path))?;
        counter.flush().map_err(|e| with_path(e, &path))?;
        w.bytes = counter.bytes;
        // The records are written: free them.
        r.records = Vec::new();
        Ok(w)
    }
}

fn with_path(e: io::Error, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

struct CountingWriter<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// `v` in decimal (no `fmt` machinery: the writer's hot path).
fn write_u64(out: &mut impl Write, mut v: u64) -> io::Result<()> {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.write_all(&buf[i..])
}

/// `fs` femtoseconds as microseconds, exactly (the format's unit).
fn write_us(out: &mut impl Write, fs: u64) -> io::Result<()> {
    let (us, mut frac) = (fs / 1_000_000_000, fs % 1_000_000_000);
    write_u64(out, us)?;
    if frac == 0 {
        return Ok(());
    }
    let mut digits = [b'0'; 10];
    digits[0] = b'.';
    for d in digits[1..].iter_mut().rev() {
        *d = b'0' + (frac % 10) as u8;
        frac /= 10;
    }
    let end = 1 + digits[1..]
        .iter()
        .rposition(|&d| d != b'0')
        .map_or(0, |p| p + 1);
    out.write_all(&digits[..end])
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// Writes `s` as a JSON string; the probes' names need no escaping, but
/// any that does is escaped.
fn write_str(out: &mut impl Write, s: &str) -> io::Result<()> {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.write_all(b"\"")?;
        out.write_all(s.as_bytes())?;
        out.write_all(b"\"")
    } else {
        out.write_all(json_str(s).as_bytes())
    }
}

/// What an output event is (sorted after its time): a record, or a flow
/// event of a record (after the record: its slice opens first).
const OUT_RECORD: u8 = 0;
const OUT_FLOW_START: u8 = 1;
const OUT_FLOW_STEP: u8 = 2;
const OUT_FLOW_END: u8 = 3;

impl Recorder {
    fn new_flow(&mut self) -> FlowId {
        self.messages += 1;
        if !(self.messages - 1).is_multiple_of(self.opts.sample_every as u64) {
            return 0;
        }
        let f = self.next_flow;
        self.next_flow = self.next_flow.wrapping_add(1).max(1);
        f
    }

    fn push(&mut self, rec: Record) {
        if let Some((start, end)) = self.opts.window {
            if rec.ts < start.fs() || rec.ts >= end.fs() {
                return;
            }
        }
        if self.records.len() >= self.opts.max_records {
            self.dropped += 1;
            return;
        }
        self.records.push(rec);
    }

    fn write_json(&mut self, out: &mut impl Write) -> io::Result<Written> {
        let records = &self.records;
        // Spans and instants in time order per track, then lanes.
        let mut order: Vec<(u32, u64, u32)> = records
            .iter()
            .enumerate()
            .map(|(i, r)| (r.track, r.ts, i as u32))
            .collect();
        order.sort_unstable();
        let mut lane_of = vec![0u32; records.len()];
        let mut lanes: Vec<Vec<u64>> = vec![Vec::new(); self.tracks.len()];
        for &(track, _, i) in &order {
            let rec = &records[i as usize];
            let ends = &mut lanes[track as usize];
            if ends.is_empty() {
                ends.push(0);
            }
            // The first lane whose last slice has ended; instants take lane 0.
            let lane = match rec.kind {
                Kind::Instant => 0,
                Kind::Span => match ends.iter().position(|&e| e <= rec.ts) {
                    Some(l) => l,
                    None => {
                        ends.push(0);
                        ends.len() - 1
                    }
                },
            };
            if matches!(rec.kind, Kind::Span) {
                ends[lane] = rec.ts + rec.dur;
            }
            lane_of[i as usize] = lane as u32;
        }
        drop(order);
        // tids: tracks in creation order, each one's lanes after it.
        let mut tid_base = Vec::with_capacity(self.tracks.len());
        let mut next_tid = 1u32;
        for l in &lanes {
            tid_base.push(next_tid);
            next_tid += l.len().max(1) as u32;
        }
        let tid = |i: usize| tid_base[records[i].track as usize] + lane_of[i];

        // Flows: each flow's spans in time order.
        let mut by_flow: Vec<(FlowId, u64, u32)> = records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.flow != 0)
            .map(|(i, r)| (r.flow, r.ts, i as u32))
            .collect();
        by_flow.sort_unstable();
        // (ts, record, what): records, then their flow events.
        let mut events: Vec<(u64, u32, u8)> = records
            .iter()
            .enumerate()
            .map(|(i, r)| (r.ts, i as u32, OUT_RECORD))
            .collect();
        let mut flows = 0u64;
        for group in by_flow.chunk_by(|a, b| a.0 == b.0) {
            if group.len() < 2 {
                continue;
            }
            flows += 1;
            for (k, &(_, ts, i)) in group.iter().enumerate() {
                let what = if k == 0 {
                    OUT_FLOW_START
                } else if k + 1 == group.len() {
                    OUT_FLOW_END
                } else {
                    OUT_FLOW_STEP
                };
                // At its slice's start, on its thread, in its category:
                // chrome://tracing binds a flow event to the slice with
                // the same pid, tid, ts and cat, Perfetto to the slice
                // open there (the slice is written first).
                events.push((ts, i, what));
            }
        }
        drop(by_flow);
        events.sort_unstable();

        out.write_all(b"{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"nanopu\"")?;
        write!(
            out,
            ",\"sample_every\":{},\"messages_seen\":{},\"dropped_records\":{}",
            self.opts.sample_every, self.messages, self.dropped
        )?;
        if let Some((a, b)) = self.opts.window {
            out.write_all(b",\"window_us\":[")?;
            write_us(out, a.fs())?;
            out.write_all(b",")?;
            write_us(out, b.fs())?;
            out.write_all(b"]")?;
        }
        out.write_all(b"},\"traceEvents\":[\n")?;
        let mut n = 0u64;
        let sep = |out: &mut dyn Write, n: &mut u64| -> io::Result<()> {
            if *n > 0 {
                out.write_all(b",\n")?;
            }
            *n += 1;
            Ok(())
        };
        for (pid, name) in &self.processes {
            sep(out, &mut n)?;
            write!(
                out,
                "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":0,\"ts\":0,\"args\":{{\"name\":{}}}}}",
                json_str(name)
            )?;
            sep(out, &mut n)?;
            write!(
                out,
                "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{pid},\"tid\":0,\"ts\":0,\"args\":{{\"sort_index\":{pid}}}}}"
            )?;
        }
        for (t, info) in self.tracks.iter().enumerate() {
            for lane in 0..lanes[t].len().max(1) {
                let tid = tid_base[t] + lane as u32;
                let name = if lane == 0 {
                    info.name.clone()
                } else {
                    format!("{} #{}", info.name, lane + 1)
                };
                sep(out, &mut n)?;
                write!(
                    out,
                    "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{tid},\"ts\":0,\"args\":{{\"name\":{}}}}}",
                    info.pid,
                    json_str(&name)
                )?;
                sep(out, &mut n)?;
                write!(
                    out,
                    "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},\"tid\":{tid},\"ts\":0,\"args\":{{\"sort_index\":{tid}}}}}",
                    info.pid
                )?;
            }
        }
        for &(ts, i, what) in &events {
            let i = i as usize;
            let rec = &records[i];
            let pid = self.tracks[rec.track as usize].pid;
            sep(out, &mut n)?;
            let head: &[u8] = match (what, rec.kind) {
                (OUT_RECORD, Kind::Span) => b"{\"ph\":\"X\",\"cat\":\"nanopu\",\"name\":",
                (OUT_RECORD, Kind::Instant) => {
                    b"{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"nanopu\",\"name\":"
                }
                (OUT_FLOW_START, _) => b"{\"ph\":\"s\",\"cat\":\"nanopu\",\"name\":",
                (OUT_FLOW_STEP, _) => b"{\"ph\":\"t\",\"cat\":\"nanopu\",\"name\":",
                _ => b"{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"nanopu\",\"name\":",
            };
            out.write_all(head)?;
            if what == OUT_RECORD {
                write_str(out, rec.name)?;
            } else {
                out.write_all(b"\"request\",\"id\":")?;
                write_u64(out, rec.flow as u64)?;
            }
            out.write_all(b",\"pid\":")?;
            write_u64(out, pid as u64)?;
            out.write_all(b",\"tid\":")?;
            write_u64(out, tid(i) as u64)?;
            out.write_all(b",\"ts\":")?;
            write_us(out, ts)?;
            if what != OUT_RECORD {
                out.write_all(b"}")?;
                continue;
            }
            if matches!(rec.kind, Kind::Span) {
                out.write_all(b",\"dur\":")?;
                write_us(out, rec.dur)?;
                out.write_all(b",\"args\":{\"flow\":")?;
                write_u64(out, rec.flow as u64)?;
                if !rec.arg_name.is_empty() {
                    out.write_all(b",")?;
                }
            } else {
                out.write_all(b",\"args\":{")?;
            }
            if !rec.arg_name.is_empty() {
                write_str(out, rec.arg_name)?;
                out.write_all(b":")?;
                write_u64(out, rec.arg)?;
            }
            out.write_all(b"}}")?;
        }
        out.write_all(b"\n]}\n")?;
        Ok(Written {
            events: n,
            bytes: 0,
            flows,
            dropped_records: self.dropped,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ns: u64) -> SimTime {
        SimTime(ns * 1_000_000)
    }

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("nanopu-timeline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn microseconds_are_exact() {
        let mut v = Vec::new();
        write_us(&mut v, 1_500_000_000).unwrap();
        v.push(b' ');
        write_us(&mut v, 312_500).unwrap();
        v.push(b' ');
        write_us(&mut v, 7_000_000_000).unwrap();
        assert_eq!(String::from_utf8(v).unwrap(), "1.5 0.0003125 7");
    }

    #[test]
    fn window_parsing() {
        assert_eq!(parse_window("1:2.5").unwrap(), (t(1000), t(2500)));
        for bad in ["", "3", "2:1", "a:b", "-1:2", "1:1"] {
            assert!(parse_window(bad).is_err(), "{bad}");
        }
    }

    fn sample_timeline(path: &Path, sample_every: u32) -> Timeline {
        let mut opts = TimelineOptions::new(path);
        opts.sample_every = sample_every;
        let tl = Timeline::new(opts).unwrap();
        tl.process(1, "host 0");
        let ingress = tl.track(1, "ingress");
        let core = tl.track(1, "core 0 ctx 0");
        for m in 0..10u64 {
            let f = tl.flow_of_key(m, t(m * 2));
            // Overlapping ingress spans (pipelined): two lanes.
            tl.span(ingress, "ingress", t(m * 2), t(m * 2 + 5), f, "", 0);
            tl.span(core, "thread", t(m * 2 + 5), t(m * 2 + 6), f, "len", 8);
        }
        tl.instant(core, "context switch", t(3), "to", 1);
        tl
    }

    #[test]
    fn overlapping_spans_get_lanes_and_flows_link_spans() {
        let path = tmp("lanes.json");
        let w = sample_timeline(&path, 1).finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let s = check::check(&text).unwrap();
        assert_eq!(w.flows, 10);
        assert_eq!(s.flows, 10);
        assert_eq!(s.spans, 20);
        assert_eq!(s.instants, 1);
        assert!(
            text.contains("\"ingress #3\""),
            "ingress spans overlap 3 deep"
        );
        assert_eq!(w.bytes, text.len() as u64);
    }

    #[test]
    fn sampling_keeps_every_nth_message() {
        let path = tmp("sampled.json");
        let w = sample_timeline(&path, 5).finish().unwrap();
        let s = check::check(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!((w.flows, s.spans), (2, 4));
    }

    #[test]
    fn the_window_and_the_record_limit_drop_records() {
        let path = tmp("window.json");
        let mut opts = TimelineOptions::new(&path);
        opts.window = Some((t(10), t(20)));
        opts.max_records = 3;
        let tl = Timeline::new(opts).unwrap();
        let tr = tl.track(1, "x");
        for i in 0..30 {
            tl.span(tr, "s", t(i), t(i + 1), 1 + i as u32, "", 0);
        }
        let w = tl.finish().unwrap();
        assert_eq!(w.dropped_records, 7);
        let s = check::check(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(s.spans, 3);
    }

    #[test]
    fn keys_name_one_message_until_forgotten_or_stale() {
        let tl = Timeline::new(TimelineOptions::new(tmp("unused.json"))).unwrap();
        let a = tl.flow_of_key(7, t(0));
        assert_eq!(tl.flow_of_key(7, t(100)), a);
        tl.forget(7);
        let b = tl.flow_of_key(7, t(200));
        assert_ne!(a, b);
        // Not seen for longer than the staleness horizon: a new message.
        assert_ne!(tl.flow_of_key(7, t(200 + 600_000)), b);
        tl.claim(9, a, t(0));
        assert_eq!(tl.flow_of_key(9, t(1)), a);
    }

    #[test]
    fn zero_sampling_is_refused() {
        let mut o = TimelineOptions::new("x");
        o.sample_every = 0;
        assert_eq!(Timeline::new(o).unwrap_err(), TimelineError::ZeroSample(0));
    }
}
