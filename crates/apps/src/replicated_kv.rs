//! What the replicated key-value services (`sdk/programs/chain_server`,
//! `sdk/programs/raft`; `sdk/include/replica.h`) have in common as their
//! clients see them: the operations, the status codes, the keys and
//! values, and the oracle of the store.
//!
//! Requests: write `[tag, 1, k0, k1, v0..v8]` (96 B) answered `[tag, 0]`;
//! read `[tag, 2, k0, k1]` (32 B) answered `[tag, 0, v0..v8]` or
//! `[tag, 1]` (no such key). `[tag, 4, ip, ...]`: ask another server.
//!
//! The store starts empty. Write number `v` (from 1) of key `i` stores
//! [`value_word`]`(i, v, j)`, so a read's reply names the version it
//! returns; the oracle checks that it is one the store may hold: not older
//! than the newest write acknowledged before the read was sent, not newer
//! than the newest write sent (reads and writes may be outstanding at
//! once).

use crate::{AppRng, Request, Verdict};
use rand::Rng;

pub const OP_WRITE: u64 = 1;
pub const OP_READ: u64 = 2;
pub const STATUS_OK: u64 = 0;
pub const STATUS_NOT_FOUND: u64 = 1;
pub const STATUS_MALFORMED: u64 = 2;
pub const STATUS_FULL: u64 = 3;
pub const STATUS_WRONG_NODE: u64 = 4;
/// Words of a value (64 B).
pub const VALUE_WORDS: u64 = 8;
/// Bytes of a write request and of a read request.
pub const WRITE_BYTES: u16 = 8 * (4 + VALUE_WORDS as u16);
pub const READ_BYTES: u16 = 32;
/// Keys the programs hold at most (`kv_table.h`).
pub const MAX_KEYS: u32 = 2048;

/// The 16-byte key number `i`.
pub const fn key_words(i: u64) -> [u64; 2] {
    [
        crate::splitmix64(0x5EED_0000 + 2 * i),
        crate::splitmix64(0x5EED_0000 + 2 * i + 1),
    ]
}

/// Word `j` of version `version` of key `i`'s value: word 0 names the key
/// and the version (`i << 32 | version`).
pub const fn value_word(i: u64, version: u32, j: u64) -> u64 {
    let base = (i << 32) | version as u64;
    base.wrapping_add(j.wrapping_mul(0xD6E8_FEB8_6659_FD93))
}

/// A request's note: read or write, the key, the version written (a
/// write) or the newest acknowledged when it was sent (a read).
fn note(write: bool, key: u64, version: u32) -> u64 {
    ((write as u64) << 63) | (key << 32) | version as u64
}

/// The client's view of the store: for each key, the newest version sent
/// and the newest acknowledged.
pub struct KvOracle {
    sent: Vec<u32>,
    acked: Vec<u32>,
    read_fraction: f64,
}

impl KvOracle {
    pub fn new(keys: u32, read_fraction: f64) -> KvOracle {
        KvOracle {
            sent: vec![0; keys as usize],
            acked: vec![0; keys as usize],
            read_fraction,
        }
    }

    /// The next request (to `server`, `context`).
    pub fn next_request(
        &mut self,
        tag: u64,
        rng: &mut AppRng,
        write_to: usize,
        read_from: usize,
        context: u16,
    ) -> Request {
        let i = rng.random_range(0..self.sent.len()) as u64;
        let k = key_words(i);
        if rng.random::<f64>() < self.read_fraction {
            let n = note(false, i, self.acked[i as usize]);
            return Request::words(read_from, context, vec![tag, OP_READ, k[0], k[1]], n);
        }
        self.sent[i as usize] += 1;
        let v = self.sent[i as usize];
        let mut p = vec![tag, OP_WRITE, k[0], k[1]];
        p.extend((0..VALUE_WORDS).map(|j| value_word(i, v, j)));
        Request::words(write_to, context, p, note(true, i, v))
    }

    /// Checks a final reply (`[tag, status, ...]`, not a redirection).
    pub fn check(&mut self, app: &str, req: &Request, reply: &[u64], len: u16) -> Verdict {
        let write = req.note >> 63 == 1;
        let key = (req.note >> 32) & 0x7FFF_FFFF;
        let version = req.note as u32;
        let tag = req.payload[0];
        let wrong = |why: String| {
            Verdict::Wrong(format!(
                "{app} request {tag} ({} key {key} version {version}): {why}; got {:x?} ({len} B)",
                if write { "write" } else { "read" },
                &reply[..reply.len().min(4)]
            ))
        };
        if reply.len() < 2 || len as usize != 8 * reply.len() {
            return wrong("expected at least [tag, status]".into());
        }
        if write {
            if reply.len() != 2 || reply[1] != STATUS_OK {
                return wrong(format!("expected [tag, {STATUS_OK}]"));
            }
            let a = &mut self.acked[key as usize];
            *a = (*a).max(version);
            return Verdict::Ok;
        }
        let newest = self.sent[key as usize];
        if reply[1] == STATUS_NOT_FOUND {
            return if reply.len() == 2 && version == 0 {
                Verdict::Ok
            } else {
                wrong(format!("not found, but version {version} was acknowledged"))
            };
        }
        if reply[1] != STATUS_OK || reply.len() as u64 != 2 + VALUE_WORDS {
            return wrong("expected [tag, 0, value] or [tag, 1]".into());
        }
        let got = reply[2] as u32;
        if reply[2] >> 32 != key || got < version.max(1) || got > newest {
            return wrong(format!(
                "a version outside {version}..={newest} or of another key"
            ));
        }
        match (0..VALUE_WORDS).find(|&j| reply[2 + j as usize] != value_word(key, got, j)) {
            Some(j) => wrong(format!("value word {j} of version {got} is wrong")),
            None => Verdict::Ok,
        }
    }
}

/// The store natively: what a correct server answers (for tests).
#[derive(Default)]
pub struct KvModel {
    values: std::collections::HashMap<[u64; 2], Vec<u64>>,
}

impl KvModel {
    pub fn reply(&mut self, req: &[u64]) -> Vec<u64> {
        let tag = req.first().copied().unwrap_or(0);
        match req.get(1) {
            Some(&OP_WRITE) if req.len() as u64 == 4 + VALUE_WORDS => {
                self.values.insert([req[2], req[3]], req[4..].to_vec());
                vec![tag, STATUS_OK]
            }
            Some(&OP_READ) if req.len() == 4 => match self.values.get(&[req[2], req[3]]) {
                Some(v) => [&[tag, STATUS_OK][..], v].concat(),
                None => vec![tag, STATUS_NOT_FOUND],
            },
            _ => vec![tag, STATUS_MALFORMED],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_correct_store_passes_and_stale_or_corrupt_reads_are_caught() {
        let mut oracle = KvOracle::new(20, 0.5);
        let mut model = KvModel::default();
        let mut rng = AppRng::seed_from_u64(9);
        let mut caught = 0;
        for tag in 0..4000 {
            let req = oracle.next_request(tag, &mut rng, 0, 0, 0);
            let mut r = model.reply(&req.payload);
            let corrupt = tag % 500 == 499 && r.len() > 2;
            if corrupt {
                r[5] ^= 1;
            }
            let len = 8 * r.len() as u16;
            match oracle.check("kv", &req, &r, len) {
                Verdict::Ok => assert!(!corrupt, "corrupt reply {tag} passed"),
                v => {
                    assert!(corrupt, "reply {tag}: {v:?}");
                    caught += 1;
                }
            }
        }
        assert!(caught > 0);
        // A read answering an older version than one acknowledged.
        let mut oracle = KvOracle::new(1, 0.0);
        let w1 = oracle.next_request(0, &mut rng, 0, 0, 0);
        let w2 = oracle.next_request(1, &mut rng, 0, 0, 0);
        assert_eq!(oracle.check("kv", &w1, &[0, 0], 16), Verdict::Ok);
        assert_eq!(oracle.check("kv", &w2, &[1, 0], 16), Verdict::Ok);
        oracle.read_fraction = 1.0;
        let r = oracle.next_request(2, &mut rng, 0, 0, 0);
        let stale: Vec<u64> = [2, 0]
            .into_iter()
            .chain((0..VALUE_WORDS).map(|j| value_word(0, 1, j)))
            .collect();
        assert!(matches!(
            oracle.check("kv", &r, &stale, 80),
            Verdict::Wrong(_)
        ));
        assert!(matches!(
            oracle.check("kv", &r, &[2, 1], 16),
            Verdict::Wrong(_)
        ));
    }
}
