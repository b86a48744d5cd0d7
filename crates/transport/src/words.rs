//! Message payloads as the cores see them (little-endian 64-bit words) and
//! as packets carry them (bytes): bulk copies between the two, so that a
//! payload is copied once per packet and never converted whole.

/// Appends bytes `start..end` of the little-endian `words` to `out`; bytes
/// past the words' end are zeros. Nothing is appended if `end <= start`.
pub(crate) fn append_le_bytes(words: &[u64], start: usize, end: usize, out: &mut Vec<u8>) {
    if end <= start {
        return;
    }
    let have = (words.len() * 8).clamp(start, end);
    if have > start {
        #[cfg(target_endian = "little")]
        out.extend_from_slice(&zerocopy::IntoBytes::as_bytes(words)[start..have]);
        #[cfg(not(target_endian = "little"))]
        out.extend((start..have).map(|i| words[i / 8].to_le_bytes()[i % 8]));
    }
    out.resize(out.len() + (end - have), 0);
}

/// Writes `bytes` at byte `at` of the little-endian `words`, growing them
/// with zero words as needed to hold the bytes written.
pub(crate) fn write_le_bytes(words: &mut Vec<u64>, at: usize, bytes: &[u8]) {
    let end = at + bytes.len();
    #[cfg(target_endian = "little")]
    if at == words.len() * 8 {
        // Right after the last word (packets in order): appended as they
        // are, without zeroing the words first.
        let (body, tail) = bytes.split_at(bytes.len() / 8 * 8);
        match <[u64] as zerocopy::FromBytes>::ref_from_bytes(body) {
            Ok(body) => words.extend_from_slice(body),
            // Not 8-byte aligned in memory.
            Err(_) => words.extend(
                body.chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))),
            ),
        }
        if !tail.is_empty() {
            let mut last = [0u8; 8];
            last[..tail.len()].copy_from_slice(tail);
            words.push(u64::from_le_bytes(last));
        }
        return;
    }
    let need = end.div_ceil(8);
    if words.len() < need {
        words.resize(need, 0);
    }
    #[cfg(target_endian = "little")]
    zerocopy::IntoBytes::as_mut_bytes(&mut words[..])[at..end].copy_from_slice(bytes);
    #[cfg(not(target_endian = "little"))]
    for (i, &b) in bytes.iter().enumerate() {
        let p = at + i;
        let mut w = words[p / 8].to_le_bytes();
        w[p % 8] = b;
        words[p / 8] = u64::from_le_bytes(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-at-a-time definitions the bulk copies must equal.
    fn bytes_of(words: &[u64], start: usize, end: usize) -> Vec<u8> {
        (start..end)
            .map(|i| words.get(i / 8).map_or(0, |w| w.to_le_bytes()[i % 8]))
            .collect()
    }

    proptest::proptest! {
        #[test]
        fn appended_bytes_are_the_bytes_of_the_words(
            words in proptest::collection::vec(proptest::num::u64::ANY, 0..12),
            start in 0usize..100,
            len in 0usize..100,
        ) {
            let mut out = vec![0xaa; 3];
            append_le_bytes(&words, start, start + len, &mut out);
            let mut want = vec![0xaa; 3];
            want.extend(bytes_of(&words, start, start + len));
            proptest::prop_assert_eq!(out, want);
        }

        #[test]
        fn appending_in_order_is_writing(
            words in proptest::collection::vec(proptest::num::u64::ANY, 0..4),
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
            skew in 0usize..8,
        ) {
            // `bytes` at any alignment in memory.
            let mut buf = vec![0u8; skew];
            buf.extend_from_slice(&bytes);
            let mut fast = words.clone();
            write_le_bytes(&mut fast, words.len() * 8, &buf[skew..]);
            let mut want = words.clone();
            want.resize((words.len() * 8 + bytes.len()).div_ceil(8), 0);
            for (i, &b) in bytes.iter().enumerate() {
                let p = words.len() * 8 + i;
                want[p / 8] |= u64::from(b) << (8 * (p % 8));
            }
            proptest::prop_assert_eq!(fast, want);
        }

        #[test]
        fn written_bytes_read_back_and_leave_the_rest(
            words in proptest::collection::vec(proptest::num::u64::ANY, 0..12),
            at in 0usize..100,
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
        ) {
            let mut w = words.clone();
            write_le_bytes(&mut w, at, &bytes);
            let end = at + bytes.len();
            proptest::prop_assert_eq!(w.len(), words.len().max(end.div_ceil(8)));
            let all = bytes_of(&w, 0, w.len() * 8);
            let old = bytes_of(&words, 0, w.len() * 8);
            for (i, &b) in all.iter().enumerate() {
                let want = if (at..end).contains(&i) { bytes[i - at] } else { old[i] };
                proptest::prop_assert_eq!(b, want, "byte {}", i);
            }
        }
    }
}
