//! The verbs interface in host memory, as `sdk/include/verbs.h` lays it
//! out: the 64-byte work-queue element (WQE) a program builds and rings the
//! doorbell with, and the 32-byte completion-queue entry (CQE) the NIC
//! writes. All fields little-endian (the cores are RISC-V).

/// Bytes of a WQE; an inline payload follows it.
pub const WQE_BYTES: usize = 64;
/// Bytes of a CQE.
pub const CQE_BYTES: usize = 32;

/// WQE opcodes (`VERBS_OP_*`).
pub mod op {
    pub const WRITE: u8 = 1;
    pub const READ: u8 = 2;
    pub const SEND: u8 = 3;
    pub const CAS: u8 = 4;
    pub const FAA: u8 = 5;
    /// Post a receive buffer to a QP's receive queue.
    pub const RECV: u8 = 6;
    /// Control: register memory (`local_addr`, length in `remote_addr`,
    /// key in `rkey`).
    pub const REG_MR: u8 = 0x10;
    /// Control: create CQ `qpn` with a ring of `len` entries at
    /// `local_addr` (its consumer index, a u64 the program advances, right
    /// after the ring).
    pub const CREATE_CQ: u8 = 0x11;
    /// Control: create QP `qpn` of transport `lkey` (0 RC, 1 UC, 2 UD) on
    /// CQ `rkey`, connected (RC, UC) to `ud_qpn` at `ud_ip`.
    pub const CREATE_QP: u8 = 0x12;
}

/// WQE flags (`VERBS_F_*`).
pub const F_SIGNALED: u8 = 1;
pub const F_INLINE: u8 = 2;

/// CQE status (`VERBS_WC_*`).
pub mod status {
    pub const SUCCESS: u8 = 0;
    /// The responder refused the access (key, bounds, alignment).
    pub const REMOTE_ACCESS: u8 = 1;
    /// RC: no acknowledgement after `rc_retry_count` retransmissions.
    pub const RETRY_EXCEEDED: u8 = 2;
    /// A local buffer outside memory, or a malformed WQE.
    pub const LOCAL_ERROR: u8 = 3;
    /// A message longer than the receive buffer or the MTU.
    pub const LENGTH: u8 = 4;
    /// Flushed: the QP went into the error state before this completed.
    pub const FLUSHED: u8 = 5;
}

/// Errors the NIC reports through the doorbell page (`VERBS_ERR_*`).
pub mod error_code {
    pub const CQ_OVERFLOW: u64 = 1;
    pub const BAD_WQE: u64 = 2;
    pub const NO_SUCH_QP: u64 = 3;
    pub const NO_SUCH_CQ: u64 = 4;
}

/// QP transports (the `lkey` field of `CREATE_QP`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Transport {
    Rc,
    Uc,
    Ud,
}

impl Transport {
    pub fn from_code(c: u32) -> Option<Transport> {
        match c {
            0 => Some(Transport::Rc),
            1 => Some(Transport::Uc),
            2 => Some(Transport::Ud),
            _ => None,
        }
    }

    pub fn code(self) -> u32 {
        self as u32
    }
}

/// A work-queue element.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wqe {
    pub opcode: u8,
    pub flags: u8,
    pub len: u32,
    pub qpn: u32,
    pub wr_id: u64,
    pub local_addr: u64,
    pub remote_addr: u64,
    pub rkey: u32,
    pub lkey: u32,
    pub compare_add: u64,
    pub swap: u64,
    pub ud_ip: u32,
    pub ud_qpn: u32,
}

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0, |a, &x| (a << 8) | x as u64)
}

impl Wqe {
    /// Reads a WQE (`verbs.h`: opcode u8, flags u8, len u16, qpn u32,
    /// wr_id, local_addr, remote_addr u64, rkey, lkey u32, compare_add,
    /// swap u64, ud_ip, ud_qpn u32).
    pub fn parse(b: &[u8; WQE_BYTES]) -> Wqe {
        Wqe {
            opcode: b[0],
            flags: b[1],
            len: le(&b[2..4]) as u32,
            qpn: le(&b[4..8]) as u32,
            wr_id: le(&b[8..16]),
            local_addr: le(&b[16..24]),
            remote_addr: le(&b[24..32]),
            rkey: le(&b[32..36]) as u32,
            lkey: le(&b[36..40]) as u32,
            compare_add: le(&b[40..48]),
            swap: le(&b[48..56]),
            ud_ip: le(&b[56..60]) as u32,
            ud_qpn: le(&b[60..64]) as u32,
        }
    }

    /// The inverse of [`Wqe::parse`] (the built-in clients and tests).
    pub fn to_bytes(&self) -> [u8; WQE_BYTES] {
        let mut b = [0u8; WQE_BYTES];
        b[0] = self.opcode;
        b[1] = self.flags;
        b[2..4].copy_from_slice(&(self.len as u16).to_le_bytes());
        b[4..8].copy_from_slice(&self.qpn.to_le_bytes());
        b[8..16].copy_from_slice(&self.wr_id.to_le_bytes());
        b[16..24].copy_from_slice(&self.local_addr.to_le_bytes());
        b[24..32].copy_from_slice(&self.remote_addr.to_le_bytes());
        b[32..36].copy_from_slice(&self.rkey.to_le_bytes());
        b[36..40].copy_from_slice(&self.lkey.to_le_bytes());
        b[40..48].copy_from_slice(&self.compare_add.to_le_bytes());
        b[48..56].copy_from_slice(&self.swap.to_le_bytes());
        b[56..60].copy_from_slice(&self.ud_ip.to_le_bytes());
        b[60..64].copy_from_slice(&self.ud_qpn.to_le_bytes());
        b
    }

    pub fn signaled(&self) -> bool {
        self.flags & F_SIGNALED != 0
    }

    pub fn inline(&self) -> bool {
        self.flags & F_INLINE != 0
    }
}

/// A completion-queue entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cqe {
    pub wr_id: u64,
    pub byte_len: u32,
    pub opcode: u8,
    pub status: u8,
    pub qpn: u32,
    pub src_qpn: u32,
    pub src_ip: u32,
    /// The completion's number on its CQ plus one (never 0: a program polls
    /// this word, written last within the entry's one DMA).
    pub seq: u32,
}

impl Cqe {
    /// `verbs.h`: wr_id u64, byte_len u32, opcode u8, status u8, pad u16,
    /// qpn, src_qpn, src_ip, seq u32.
    pub fn to_bytes(&self) -> [u8; CQE_BYTES] {
        let mut b = [0u8; CQE_BYTES];
        b[0..8].copy_from_slice(&self.wr_id.to_le_bytes());
        b[8..12].copy_from_slice(&self.byte_len.to_le_bytes());
        b[12] = self.opcode;
        b[13] = self.status;
        b[16..20].copy_from_slice(&self.qpn.to_le_bytes());
        b[20..24].copy_from_slice(&self.src_qpn.to_le_bytes());
        b[24..28].copy_from_slice(&self.src_ip.to_le_bytes());
        b[28..32].copy_from_slice(&self.seq.to_le_bytes());
        b
    }
}
