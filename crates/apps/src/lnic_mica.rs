//! The prototype's MICA server (l-nic/chipyard, tag `nanoPU-artifact-v1.0`,
//! `tests-lnic/lnic-multi-core-mica.cc`) as the prototype's own load
//! generator drove it: the MICA load type of l-nic/firesim's switch model
//! (branch `lnic-dev`, `target-design/switch/switch.cc`,
//! `send_load_packet`) with the run configuration of
//! `deploy/workloads/lnic-multi-core-mica/config_lnic_mica_runtime.ini`.
//! This repository holds none of their code; the formats below are read
//! from them.
//!
//! Requests (words of 8 bytes; the switch model's `AppLayer` then its
//! `mica_hdr_t`):
//!
//! | word | GET (48 B) | SET (560 B) |
//! |---|---|---|
//! | 0 | service time (cycles) | service time |
//! | 1 | sent time: here the tag | tag |
//! | 2 | [`MICA_R_TYPE`] | [`MICA_W_TYPE`] |
//! | 3, 4 | key `[k, 0]` | key |
//! | 5 | [`cityhash`] of the key, computed by the client | hash |
//! | 6..70 | | value: `[k, k + 1, k + 2, 0, ...]` |
//!
//! Replies: a GET gets `[service time, tag, value (64 words)]` (528 B), a
//! SET `[service time, tag, 1]` (24 B). The server stops the whole run on a
//! request whose service time is 0, so it must not be.
//!
//! The server inserts keys `1..=10000` (`itemCount`) with value
//! `[k, k + 1, k + 2, 0, ...]` at boot and then sends one start message
//! (`[core, context]`, 16 B) to the load generator; run the client after it
//! (`--start-messages 1`). The switch model writes only the first three
//! words of a SET's value (the rest is its stack); this client writes
//! zeros there, so a key's value never changes and every GET has one right
//! answer.

use crate::exact::expect_words;
use crate::{invalid, App, AppContext, AppError, AppRng, Request, Verdict};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// `MICA_R_TYPE` (switch.cc and the server).
pub const MICA_R_TYPE: u64 = 1;
/// `MICA_W_TYPE`.
pub const MICA_W_TYPE: u64 = 2;
/// `MICA_VALUE_SIZE_WORDS`: 512 B values.
pub const VALUE_WORDS: usize = 64;
/// The server's `MyFixedTableConfig::itemCount`.
pub const ITEMS: u64 = 10_000;
/// The switch model's transmit message ids wrap at `MAX_TX_MSG_ID`; even
/// ids are SETs, odd ones GETs.
pub const MAX_TX_MSG_ID: u64 = 127;

/// The prototype's MICA workload (`--app lnic-mica`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LnicMicaConfig {
    /// The service-time word of every request, in cycles: the run's
    /// `service_dist_type=FIXED`, `fixed_dist_cycles=1600`. The server
    /// only checks it is not 0.
    pub service_cycles: u64,
    /// Keys are drawn uniformly from `min_key..=max_key` (the run's
    /// `min_service_key=1`, `max_service_key=10000`).
    pub min_key: u64,
    /// See `min_key`.
    pub max_key: u64,
    /// The context the server listens on (`ONE_CONTEXT_ONE_CORE`: 0).
    pub context: u16,
}

impl Default for LnicMicaConfig {
    fn default() -> Self {
        LnicMicaConfig {
            service_cycles: 1600,
            min_key: 1,
            max_key: ITEMS,
            context: 0,
        }
    }
}

impl LnicMicaConfig {
    pub fn validate(&self) -> Result<(), AppError> {
        if self.service_cycles == 0 {
            return Err(invalid(
                "service_cycles",
                0,
                "must not be 0: the prototype's server ends the run on a service time of 0",
            ));
        }
        if self.min_key == 0 || self.min_key > self.max_key || self.max_key > ITEMS {
            return Err(invalid(
                "min_key",
                format!("{}..={}", self.min_key, self.max_key),
                "keys must lie in 1..=10000, the keys the server inserts",
            ));
        }
        Ok(())
    }

    pub fn max_request_bytes(&self) -> u16 {
        (6 + VALUE_WORDS as u16) * 8
    }

    pub fn mean_request_bytes(&self) -> f64 {
        (self.max_request_bytes() as f64 + 48.0) / 2.0
    }
}

fn fetch64(s: &[u8; 16], at: usize) -> u64 {
    u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"))
}

fn hash_len16(u: u64, v: u64, mul: u64) -> u64 {
    let mut a = (u ^ v).wrapping_mul(mul);
    a ^= a >> 47;
    let mut b = (v ^ a).wrapping_mul(mul);
    b ^= b >> 47;
    b.wrapping_mul(mul)
}

/// The key hash the prototype's client computes and its server checks:
/// CityHash64 (v1.1) of the 16-byte key, as `cityhash` in switch.cc and in
/// the server.
pub fn cityhash(key: [u64; 2]) -> u64 {
    const K2: u64 = 0x9ae1_6a3b_2f90_404f;
    let mut s = [0u8; 16];
    s[..8].copy_from_slice(&key[0].to_le_bytes());
    s[8..].copy_from_slice(&key[1].to_le_bytes());
    let mul = K2.wrapping_add(16 * 2);
    let a = fetch64(&s, 0).wrapping_add(K2);
    let b = fetch64(&s, 8);
    let c = b.rotate_right(37).wrapping_mul(mul).wrapping_add(a);
    let d = a.rotate_right(25).wrapping_add(b).wrapping_mul(mul);
    hash_len16(c, d, mul)
}

/// The tag of a reply of the prototype's servers, which echo the switch
/// model's `[service time, sent time]` header: the sent-time word, where
/// the clients put the tag. A server's 16 B start message is no reply.
pub fn sent_time_tag(reply: &[u64], len: u16) -> Option<u64> {
    (len >= 24).then(|| reply.get(1).copied()).flatten()
}

/// Key `k`'s value as the server stores it.
pub fn value(k: u64) -> [u64; VALUE_WORDS] {
    let mut v = [0; VALUE_WORDS];
    v[..3].copy_from_slice(&[k, k + 1, k + 2]);
    v
}

/// The client side, with its oracle.
pub struct LnicMicaClient {
    cfg: LnicMicaConfig,
}

impl LnicMicaClient {
    pub fn new(cfg: LnicMicaConfig, _ctx: AppContext) -> LnicMicaClient {
        LnicMicaClient { cfg }
    }
}

impl App for LnicMicaClient {
    fn name(&self) -> &'static str {
        "lnic-mica"
    }

    fn next_request(&mut self, tag: u64, rng: &mut AppRng) -> Request {
        let k = rng.random_range(self.cfg.min_key..=self.cfg.max_key);
        let set = (tag % MAX_TX_MSG_ID).is_multiple_of(2);
        let mut words = Vec::with_capacity(6 + VALUE_WORDS);
        words.extend_from_slice(&[
            self.cfg.service_cycles,
            tag,
            if set { MICA_W_TYPE } else { MICA_R_TYPE },
            k,
            0,
            cityhash([k, 0]),
        ]);
        if set {
            words.extend_from_slice(&value(k));
        }
        Request::words(0, self.cfg.context, words, k)
    }

    fn reply_tag(&self, reply: &[u64], len: u16) -> Option<u64> {
        sent_time_tag(reply, len)
    }

    fn check(&mut self, req: &Request, reply: &[u64], len: u16) -> Verdict {
        let (k, tag) = (req.note, req.payload[1]);
        let mut expected = vec![self.cfg.service_cycles, tag];
        let what = if req.payload[2] == MICA_W_TYPE {
            expected.push(1);
            format!("SET key {k}")
        } else {
            expected.extend_from_slice(&value(k));
            format!("GET key {k}")
        };
        expect_words("lnic-mica", &what, &expected, reply, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn cityhash_is_cityhash64_of_the_16_byte_key() {
        // CityHash64 v1.1 of 16 zero bytes (the reference implementation's
        // HashLen0to16 path for len 16).
        let k2: u64 = 0x9ae1_6a3b_2f90_404f;
        let mul = k2.wrapping_add(32);
        let c = k2; // rotate(0, 37) * mul + (0 + k2)
        let d = k2.rotate_right(25).wrapping_mul(mul);
        assert_eq!(cityhash([0, 0]), hash_len16(c, d, mul));
        assert_ne!(cityhash([1, 0]), cityhash([2, 0]));
    }

    #[test]
    fn requests_alternate_set_and_get_as_the_switch_model_does() {
        let mut c = LnicMicaClient::new(LnicMicaConfig::default(), AppContext::SINGLE);
        let mut rng = AppRng::seed_from_u64(1);
        let set = c.next_request(0, &mut rng);
        let get = c.next_request(1, &mut rng);
        assert_eq!((set.len, set.payload[2]), (560, MICA_W_TYPE));
        assert_eq!((get.len, get.payload[2]), (48, MICA_R_TYPE));
        assert_eq!(get.payload[5], cityhash([get.note, 0]));
        // Ids wrap at 127: 126 and then 127 (id 0) are both SETs.
        assert_eq!(c.next_request(127, &mut rng).payload[2], MICA_W_TYPE);
        let mut reply = vec![1600, 1];
        reply.extend_from_slice(&value(get.note));
        assert_eq!(c.check(&get, &reply, 528), Verdict::Ok);
        reply[4] = 7;
        assert!(matches!(c.check(&get, &reply, 528), Verdict::Wrong(_)));
        assert_eq!(c.check(&set, &[1600, 0, 1], 24), Verdict::Ok);
        assert_eq!(c.reply_tag(&[0, 0], 16), None);
    }

    #[test]
    fn a_zero_service_time_or_keys_the_server_lacks_are_refused() {
        let bad = |f: fn(&mut LnicMicaConfig)| {
            let mut c = LnicMicaConfig::default();
            f(&mut c);
            c.validate().is_err()
        };
        assert!(bad(|c| c.service_cycles = 0));
        assert!(bad(|c| c.min_key = 0));
        assert!(bad(|c| c.max_key = 10_001));
        assert!(LnicMicaConfig::default().validate().is_ok());
    }
}
