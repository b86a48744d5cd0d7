//! The stub's connection: packets framed and checked here, handed to
//! `gdbstub`'s state machine one whole packet at a time, its answers sent
//! only once the packet was handled.
//!
//! A debugger stub answers what it does not support with an empty reply and
//! carries on (GDB remote protocol, "Overview"); `gdbstub` instead ends the
//! session on a bad checksum, a `-`, a stray byte, an over-long packet or a
//! packet it cannot parse. So: a bad checksum gets a NAK (`-`) and is
//! dropped, a `-` from gdb resends our last packet, bytes outside packets
//! are skipped, an over-long packet gets an empty reply, and a packet
//! `gdbstub` fails on gets an empty reply while the stub is rebuilt with the
//! session's settings (`qSupported`, no-ack mode, the `H` threads) replayed
//! into it. Ctrl-C (SIGINT) here ends the session wherever it is waiting.

use super::{GdbTarget, SessionEnd};
use anyhow::{bail, Result};
use gdbstub::common::Signal;
use gdbstub::conn::Connection;
use gdbstub::stub::state_machine::GdbStubStateMachine;
use gdbstub::stub::{DisconnectReason, GdbStub, GdbStubBuilder, MultiThreadStopReason};
use nanopu_node::NodeError;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// `gdbstub`'s packet buffer: the largest packet (`$`, body, `#`, checksum).
const PACKET_BUFFER: usize = 4096;
/// The largest body we take.
pub const MAX_BODY: usize = PACKET_BUFFER - 4;
/// How often a stopped target looks at Ctrl-C while it waits for gdb.
const IDLE_POLL: Duration = Duration::from_millis(50);

/// What `gdbstub` writes, held until the packet it answers was handled
/// (what it wrote for a packet it then failed on is dropped).
#[derive(Default)]
pub struct Outbox(Vec<u8>);

impl Connection for Outbox {
    type Error = std::convert::Infallible;

    fn write(&mut self, byte: u8) -> Result<(), Self::Error> {
        self.0.push(byte);
        Ok(())
    }

    fn write_all(&mut self, buf: &[u8]) -> Result<(), Self::Error> {
        self.0.extend_from_slice(buf);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// What the framer made of the bytes from gdb.
#[derive(Debug, PartialEq, Eq)]
pub enum Incoming {
    /// A whole packet with a good checksum: `$body#xx`.
    Packet(Vec<u8>),
    /// A packet whose checksum is wrong or not hex.
    BadChecksum,
    /// A packet longer than [`MAX_BODY`].
    TooLong,
    /// `-`: gdb asks for our last packet again.
    Nack,
    /// 0x03: gdb's Ctrl-C.
    Interrupt,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FrameState {
    Between,
    Body,
    Checksum1,
    Checksum2(u8),
}

/// Splits gdb's bytes into packets (bounded: a body over [`MAX_BODY`] is
/// counted, not kept).
pub struct Framer {
    state: FrameState,
    body: Vec<u8>,
    overflow: bool,
}

impl Default for Framer {
    fn default() -> Framer {
        Framer {
            state: FrameState::Between,
            body: Vec::with_capacity(MAX_BODY),
            overflow: false,
        }
    }
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

impl Framer {
    /// Takes one byte; returns what it completes, if anything.
    pub fn push(&mut self, b: u8) -> Option<Incoming> {
        match self.state {
            FrameState::Between => match b {
                b'$' => self.start(),
                b'-' => return Some(Incoming::Nack),
                0x03 => return Some(Incoming::Interrupt),
                // `+` acks, and anything else, are skipped.
                _ => {}
            },
            FrameState::Body => match b {
                b'#' => self.state = FrameState::Checksum1,
                // A packet cut short: the new one counts.
                b'$' => self.start(),
                _ if self.body.len() < MAX_BODY => self.body.push(b),
                _ => self.overflow = true,
            },
            FrameState::Checksum1 => self.state = FrameState::Checksum2(b),
            FrameState::Checksum2(first) => {
                self.state = FrameState::Between;
                if self.overflow {
                    return Some(Incoming::TooLong);
                }
                let sum = self.body.iter().fold(0u8, |a, &c| a.wrapping_add(c));
                return Some(match (hex(first), hex(b)) {
                    (Some(h), Some(l)) if h << 4 | l == sum => {
                        let mut frame = Vec::with_capacity(self.body.len() + 4);
                        frame.push(b'$');
                        frame.extend_from_slice(&self.body);
                        frame.extend_from_slice(&[b'#', first, b]);
                        Incoming::Packet(frame)
                    }
                    _ => Incoming::BadChecksum,
                });
            }
        }
        None
    }

    fn start(&mut self) {
        self.state = FrameState::Body;
        self.body.clear();
        self.overflow = false;
    }
}

type Stub<'a, 'n> = GdbStubStateMachine<'a, GdbTarget<'n>, Outbox>;

/// Why a packet could not be handed on: the target failed (the session
/// ends) or `gdbstub` did (the packet gets an empty reply).
enum Failure {
    Target(NodeError),
    Protocol(String),
}

/// A stub state machine, fresh (stopped, idle).
fn fresh<'a, 'n>(target: &mut GdbTarget<'n>) -> Result<Stub<'a, 'n>> {
    let stub: GdbStub<'a, GdbTarget<'n>, Outbox> = GdbStubBuilder::new(Outbox::default())
        .packet_buffer_size(PACKET_BUFFER)
        .build()
        .map_err(|e| anyhow::anyhow!("gdb stub: {e}"))?;
    stub.run_state_machine(target)
        .map_err(|e| anyhow::anyhow!("gdb stub: {e}"))
}

/// Feeds one whole packet to the stub; returns its next state.
fn feed<'a, 'n>(
    stub: Stub<'a, 'n>,
    target: &mut GdbTarget<'n>,
    frame: &[u8],
) -> Result<Stub<'a, 'n>, Failure> {
    let mut stub = stub;
    for &b in frame {
        let next = match stub {
            GdbStubStateMachine::Idle(g) => g.incoming_data(target, b),
            GdbStubStateMachine::Running(g) => g.incoming_data(target, b),
            // A packet ended the session or was a Ctrl-C: nothing more to feed.
            other => return Ok(other),
        };
        stub = next.map_err(|e| {
            if e.is_target_error() {
                Failure::Target(e.into_target_error().expect("a target error"))
            } else {
                Failure::Protocol(e.to_string())
            }
        })?;
    }
    Ok(stub)
}

fn outbox<'s, 'a, 'n>(stub: &'s mut Stub<'a, 'n>) -> &'s mut Outbox {
    match stub {
        GdbStubStateMachine::Idle(g) => g.borrow_conn(),
        GdbStubStateMachine::Running(g) => g.borrow_conn(),
        GdbStubStateMachine::CtrlCInterrupt(g) => g.borrow_conn(),
        GdbStubStateMachine::Disconnected(g) => g.borrow_conn(),
    }
}

/// One gdb connection.
pub struct Session<'s> {
    stream: TcpStream,
    framer: Framer,
    incoming: std::collections::VecDeque<Incoming>,
    /// Whether reads are non-blocking (while the target runs).
    nonblocking: bool,
    interrupt: &'s AtomicBool,
    /// Our last packet, for gdb's `-`.
    last_packet: Vec<u8>,
    no_ack: bool,
    /// The packets that set up the session, replayed into a rebuilt stub.
    settings: Vec<Vec<u8>>,
}

/// The body of a frame (`$body#xx`).
fn body(frame: &[u8]) -> &[u8] {
    &frame[1..frame.len() - 3]
}

impl<'s> Session<'s> {
    pub fn new(stream: TcpStream, interrupt: &'s AtomicBool) -> Result<Session<'s>> {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(IDLE_POLL))?;
        stream.set_write_timeout(Some(IDLE_POLL))?;
        Ok(Session {
            stream,
            framer: Framer::default(),
            incoming: Default::default(),
            nonblocking: false,
            interrupt,
            last_packet: Vec::new(),
            no_ack: false,
            settings: Vec::new(),
        })
    }

    /// Sends what the stub wrote; remembers its last packet.
    fn send_from(&mut self, stub: &mut Stub<'_, '_>) -> Result<()> {
        let out = std::mem::take(&mut outbox(stub).0);
        self.send(&out)
    }

    fn send(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        if let Some(start) = bytes.iter().rposition(|&b| b == b'$') {
            self.last_packet = bytes[start..].to_vec();
        }
        // Bounded waits (a gdb that does not read must not block Ctrl-C).
        let mut rest = bytes;
        while !rest.is_empty() && !self.interrupt.load(Ordering::Relaxed) {
            match Write::write(&mut self.stream, rest) {
                Ok(0) => break,
                Ok(n) => rest = &rest[n..],
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) =>
                {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(e) => {
                    // gdb went away; the next read says so.
                    eprintln!("gdb: cannot write to the connection: {e}");
                    break;
                }
            }
        }
        Ok(())
    }

    /// An empty reply: "not supported".
    fn unsupported(&mut self) -> Result<()> {
        let ack: &[u8] = if self.no_ack { b"" } else { b"+" };
        self.send(&[ack, b"$#00"].concat())
    }

    /// Reads what gdb sent into `incoming`: waits up to [`IDLE_POLL`] if
    /// `wait`, else takes only what is there. Returns false at end of file.
    fn receive(&mut self, wait: bool) -> Result<bool> {
        if self.nonblocking == wait {
            self.stream.set_nonblocking(!wait)?;
            self.nonblocking = !wait;
        }
        let mut buf = [0u8; 4096];
        match self.stream.read(&mut buf) {
            Ok(0) => Ok(false),
            Ok(n) => {
                for &b in &buf[..n] {
                    if let Some(event) = self.framer.push(b) {
                        self.incoming.push_back(event);
                    }
                }
                Ok(true)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::ConnectionReset => Ok(false),
            Err(e) => bail!("gdb connection: {e}"),
        }
    }

    /// A rebuilt stub with the session's settings replayed (their answers
    /// were sent already).
    fn rebuild<'a, 'n>(&mut self, target: &mut GdbTarget<'n>) -> Result<Stub<'a, 'n>> {
        let mut stub = fresh(target)?;
        for frame in self.settings.clone() {
            stub = match feed(stub, target, &frame) {
                Ok(s) => s,
                Err(Failure::Target(e)) => return Err(e.into()),
                Err(Failure::Protocol(_)) => fresh(target)?,
            };
            outbox(&mut stub).0.clear();
        }
        Ok(stub)
    }

    /// Remembers a packet that sets up the session, once it was handled.
    fn remember(&mut self, frame: &[u8]) {
        let b = body(frame);
        let key: &[u8] = if b.starts_with(b"qSupported") {
            b"qSupported"
        } else if b == b"QStartNoAckMode" {
            self.no_ack = true;
            b"QStartNoAckMode"
        } else if b.starts_with(b"Hg") || b.starts_with(b"Hc") {
            &b[..2]
        } else {
            return;
        };
        let key = key.to_vec();
        self.settings.retain(|f| !body(f).starts_with(&key));
        self.settings.push(frame.to_vec());
    }

    /// Serves gdb until the program exits, gdb detaches, kills or goes
    /// away, or Ctrl-C.
    pub fn serve(mut self, target: &mut GdbTarget<'_>) -> Result<SessionEnd> {
        let mut stub = fresh(target)?;
        loop {
            if self.interrupt.load(Ordering::Relaxed) {
                return Ok(SessionEnd::Interrupted(target.node.describe_harts()));
            }
            stub = match stub {
                GdbStubStateMachine::Disconnected(g) => {
                    return Ok(match g.get_reason() {
                        DisconnectReason::TargetExited(code) => SessionEnd::Exited(code),
                        DisconnectReason::Disconnect => SessionEnd::Detached,
                        DisconnectReason::Kill | DisconnectReason::TargetTerminated(_) => {
                            SessionEnd::Killed
                        }
                    });
                }
                GdbStubStateMachine::CtrlCInterrupt(g) => {
                    let reason = MultiThreadStopReason::SignalWithThread {
                        tid: super::tid_of(target.last_hart),
                        signal: Signal::SIGINT,
                    };
                    let mut next = g
                        .interrupt_handled(target, Some(reason))
                        .map_err(|e| anyhow::anyhow!("gdb stub: {e}"))?;
                    self.send_from(&mut next)?;
                    next
                }
                GdbStubStateMachine::Running(g) => {
                    let running = GdbStubStateMachine::Running(g);
                    if self.incoming.is_empty() && !self.receive(false)? {
                        return Ok(SessionEnd::Lost);
                    }
                    match self.incoming.pop_front() {
                        Some(event) => self.handle(running, target, event, true)?,
                        None => match target.run() {
                            Ok(None) => running,
                            Ok(Some(stop)) => {
                                let GdbStubStateMachine::Running(g) = running else {
                                    unreachable!("running")
                                };
                                let mut next = g
                                    .report_stop(target, stop)
                                    .map_err(|e| anyhow::anyhow!("gdb stub: {e}"))?;
                                self.send_from(&mut next)?;
                                next
                            }
                            Err(NodeError::Interrupted(harts)) => {
                                return Ok(SessionEnd::Interrupted(harts))
                            }
                            Err(e) => return Err(e.into()),
                        },
                    }
                }
                idle @ GdbStubStateMachine::Idle(_) => match self.incoming.pop_front() {
                    Some(event) => self.handle(idle, target, event, false)?,
                    None => {
                        if !self.receive(true)? {
                            return Ok(SessionEnd::Lost);
                        }
                        idle
                    }
                },
            };
        }
    }

    /// Handles one event from gdb.
    fn handle<'a, 'n>(
        &mut self,
        stub: Stub<'a, 'n>,
        target: &mut GdbTarget<'n>,
        event: Incoming,
        running: bool,
    ) -> Result<Stub<'a, 'n>> {
        match event {
            Incoming::BadChecksum => {
                self.send(b"-")?;
                Ok(stub)
            }
            Incoming::Nack => {
                let last = self.last_packet.clone();
                self.send(&last)?;
                Ok(stub)
            }
            Incoming::TooLong => {
                self.unsupported()?;
                Ok(stub)
            }
            // In all-stop mode gdb sends nothing but Ctrl-C while the
            // target runs; anything else is not supported then.
            Incoming::Packet(_) if running => {
                self.unsupported()?;
                Ok(stub)
            }
            Incoming::Interrupt => self.feed_packet(stub, target, &[0x03]),
            Incoming::Packet(frame) => self.feed_packet(stub, target, &frame),
        }
    }

    fn feed_packet<'a, 'n>(
        &mut self,
        stub: Stub<'a, 'n>,
        target: &mut GdbTarget<'n>,
        frame: &[u8],
    ) -> Result<Stub<'a, 'n>> {
        match feed(stub, target, frame) {
            Ok(mut next) => {
                self.send_from(&mut next)?;
                if frame.len() > 4 {
                    self.remember(frame);
                }
                Ok(next)
            }
            Err(Failure::Target(e)) => Err(e.into()),
            Err(Failure::Protocol(why)) => {
                let shown = String::from_utf8_lossy(&frame[..frame.len().min(64)]).into_owned();
                // gdbstub's first sentence (what follows asks for bug reports).
                let why = why.split(['.', '!']).next().unwrap_or_default();
                eprintln!("gdb: packet {shown:?} not supported ({why}); answered empty");
                self.unsupported()?;
                self.rebuild(target)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(bytes: &[u8]) -> Vec<Incoming> {
        let mut f = Framer::default();
        bytes.iter().filter_map(|&b| f.push(b)).collect()
    }

    #[test]
    fn the_framer_checks_and_bounds_packets() {
        assert_eq!(frames(b"$g#67"), vec![Incoming::Packet(b"$g#67".to_vec())]);
        assert_eq!(frames(b"$g#68"), vec![Incoming::BadChecksum]);
        assert_eq!(frames(b"$g#zz"), vec![Incoming::BadChecksum]);
        assert_eq!(
            frames(b"junk+-\x03"),
            vec![Incoming::Nack, Incoming::Interrupt]
        );
        // A packet cut short by a new one: the new one counts.
        assert_eq!(
            frames(b"$qSup$g#67"),
            vec![Incoming::Packet(b"$g#67".to_vec())]
        );
        let mut long = vec![b'$'];
        long.extend(std::iter::repeat_n(b'a', MAX_BODY + 10));
        long.extend_from_slice(b"#00$g#67");
        assert_eq!(
            frames(&long),
            vec![Incoming::TooLong, Incoming::Packet(b"$g#67".to_vec())]
        );
    }
}
