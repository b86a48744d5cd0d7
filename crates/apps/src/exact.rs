//! The check the part-2 applications share: the reply must be exactly the
//! oracle's words.

use crate::Verdict;

/// `Ok` if `reply` (`len` bytes) is exactly `expected`, else `Wrong` naming
/// the application, the request and both replies (their first 8 words).
pub fn expect_words(app: &str, what: &str, expected: &[u64], reply: &[u64], len: u16) -> Verdict {
    if reply == expected && len as usize == 8 * expected.len() {
        Verdict::Ok
    } else {
        Verdict::Wrong(format!(
            "{app} {what}: expected {:?} ({} B), got {:?} ({len} B)",
            &expected[..expected.len().min(8)],
            8 * expected.len(),
            &reply[..reply.len().min(8)]
        ))
    }
}
