//! Text that arrives in chunks (a file read a piece at a time, a pipe): checked as text and
//! estimated in several encodings at once, holding only a chunk and a short tail in memory.
//!
//! Each chunk is appended to a buffer. What ends in a whole character is validated (UTF-8
//! without NUL, as [`text::validate`]); an unfinished character at the end waits for the next
//! chunk. Once the validated part is [`FLUSH`] bytes or more, it is cut at the last position
//! where every pre-tokenizer starts a new piece (`units::safe_cut`), the part before the cut
//! is estimated and dropped, and the rest stays. Pieces never straddle such a cut, so the
//! counts are those of the whole text, whatever the chunks. A run with no cut (one piece: a
//! long base64 line) lets the buffer grow, doubling, up to `units::MAX_BUF`; past that it is
//! estimated as it is, as a `str` is ([`units`](crate::units)).
//!
//! Reading a file this way instead of mapping it costs a copy of each chunk, and spares the
//! process a `SIGBUS` when another process truncates the file while it is read (a log rotated
//! by `copytruncate`): the reads then just end early.

use crate::estimate::{Encoding, Estimator};
use crate::text::{self, TextError};
use crate::units::{safe_cut, MAX_BUF};

/// Validated bytes gathered before the buffer is cut and estimated.
pub const FLUSH: usize = 64 * 1024;

/// Bytes of the stream's start kept to name the type of a binary stream (see
/// [`text::detect_type`]) when its first bad byte comes in a later chunk.
const HEAD: usize = 4096;

/// A running check and estimate of text fed in chunks of any size (see the module docs).
#[derive(Debug, Clone)]
pub struct TextStream {
    estimators: Vec<Estimator>,
    /// Bytes fed and not yet estimated: validated ones, then `unchecked` more.
    buf: Vec<u8>,
    /// Bytes at the end of `buf` not validated yet: the start of a character that the next
    /// chunk finishes.
    unchecked: usize,
    /// Validated bytes in `buf` at which it is cut next.
    flush_at: usize,
    /// Bytes of the stream estimated and dropped from `buf`.
    dropped: usize,
    head: Vec<u8>,
    /// The first error met: the stream is not text, and feeding it more gives this error.
    failed: Option<TextError>,
}

/// What a finished stream counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    /// Bytes fed in all.
    pub bytes: usize,
    /// Tokens in each encoding, in the order given to [`TextStream::new`].
    pub tokens: Vec<u64>,
    /// Bytes of an unfinished UTF-8 character at the very end (text cut mid-character, as
    /// `head -c` does), counted as they are; 0 when the text ends whole.
    pub cut_character: usize,
}

impl TextStream {
    /// A stream estimated in each of `encodings`.
    #[must_use]
    pub fn new(encodings: &[Encoding]) -> Self {
        Self {
            estimators: encodings.iter().map(|&e| Estimator::new(e)).collect(),
            buf: Vec::new(),
            unchecked: 0,
            flush_at: FLUSH,
            dropped: 0,
            head: Vec::new(),
            failed: None,
        }
    }

    /// Adds `chunk`: validates what now ends in whole characters and estimates what can be
    /// cut off.
    ///
    /// # Errors
    ///
    /// The stream's first NUL or ill-formed UTF-8 byte, its offset counted from the start of
    /// the stream and the type named from the stream's first bytes; the same error for every
    /// later call.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), TextError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        let room = HEAD.saturating_sub(self.head.len()).min(chunk.len());
        self.head.extend_from_slice(&chunk[..room]);
        let start = self.buf.len() - self.unchecked;
        self.buf.extend_from_slice(chunk);
        let fresh = &self.buf[start..];
        let whole = fresh.len() - unfinished_char(fresh);
        if let Err(err) = text::validate(&fresh[..whole]) {
            let err = TextError {
                offset: self.dropped + start + err.offset,
                reason: err.reason,
                detected_type: text::detect_type(&self.head),
            };
            self.failed = Some(err.clone());
            return Err(err);
        }
        self.unchecked = fresh.len() - whole;
        if self.buf.len() - self.unchecked >= self.flush_at {
            self.flush();
        }
        Ok(())
    }

    /// The counts of everything fed, the unfinished character at the end included.
    ///
    /// # Errors
    ///
    /// The error [`TextStream::feed`] gave, if it gave one.
    pub fn finish(mut self) -> Result<Counted, TextError> {
        if let Some(err) = self.failed {
            return Err(err);
        }
        for est in &mut self.estimators {
            est.feed(&self.buf);
        }
        Ok(Counted {
            bytes: self.dropped + self.buf.len(),
            tokens: self.estimators.iter().map(Estimator::tokens).collect(),
            cut_character: self.unchecked,
        })
    }

    /// Estimates the validated bytes up to their last cut, and drops them.
    fn flush(&mut self) {
        let checked = self.buf.len() - self.unchecked;
        let cut = match safe_cut(&self.buf[..checked]) {
            Some(cut) => cut,
            None if checked < MAX_BUF => {
                self.flush_at = checked * 2;
                return;
            }
            // One piece of MAX_BUF: estimated as it is (see the module docs).
            None => checked,
        };
        for est in &mut self.estimators {
            est.feed(&self.buf[..cut]);
        }
        self.buf.drain(..cut);
        self.dropped += cut;
        self.flush_at = FLUSH;
    }
}

/// Bytes at the end of `b` that start a UTF-8 character the rest of `b` does not finish (a
/// lead byte and fewer continuation bytes than it announces); 0 otherwise, also for bytes
/// that are no such start (validation reports those).
fn unfinished_char(b: &[u8]) -> usize {
    let tail = &b[b.len().saturating_sub(3)..];
    let Some(lead) = tail.iter().rposition(|&c| c & 0xC0 != 0x80) else {
        return 0;
    };
    let needed = match tail[lead] {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return 0,
    };
    let have = tail.len() - lead;
    if have < needed {
        have
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::estimate_tokens;
    use crate::testing::XorShift;
    use crate::text::TextErrorReason;

    /// `text` fed in chunks cut at random places, `max_chunk` bytes at most.
    fn streamed(text: &[u8], max_chunk: usize, seed: u64) -> Result<Counted, TextError> {
        let mut rng = XorShift(seed);
        let mut stream = TextStream::new(&Encoding::ALL);
        let mut at = 0;
        while at < text.len() {
            let end = (at + 1 + rng.index(max_chunk)).min(text.len());
            stream.feed(&text[at..end])?;
            at = end;
        }
        stream.finish()
    }

    fn sample(len: usize) -> Vec<u8> {
        let parts = [
            "fn main() {\n    println!(\"héllo, 世界\");\n}\n",
            "The quick brown fox jumps over the lazy dog. ",
            "数据库连接失败，请稍后重试。",
            "2026-12-02T21:52:38Z INFO request id=4f2a9c latency_ms=18\n",
            "aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQ=",
            "Привет, мир! 🙂 ",
            "    \n\n\t",
        ];
        let mut rng = XorShift(7);
        let mut out = Vec::new();
        while out.len() < len {
            out.extend_from_slice(parts[rng.index(parts.len())].as_bytes());
        }
        out
    }

    #[test]
    fn counts_are_the_whole_texts_whatever_the_chunks() {
        for (len, max_chunk) in [
            (0, 1),
            (10, 3),
            (5_000, 7),
            (300_000, 100_000),
            (300_000, 9_000),
        ] {
            let text = sample(len);
            let want: Vec<u64> = Encoding::ALL
                .iter()
                .map(|&e| estimate_tokens(&text, e))
                .collect();
            for seed in 1..4 {
                let got = streamed(&text, max_chunk, seed).unwrap();
                assert_eq!(got.tokens, want, "{len} bytes, chunks <= {max_chunk}");
                assert_eq!(got.bytes, text.len());
                assert_eq!(got.cut_character, 0);
            }
        }
    }

    #[test]
    fn a_long_run_with_no_cut_is_still_counted_whole() {
        let mut text = b"x".repeat(3 * FLUSH + 17);
        text.extend_from_slice(" tail\n".as_bytes());
        let want: Vec<u64> = Encoding::ALL
            .iter()
            .map(|&e| estimate_tokens(&text, e))
            .collect();
        assert_eq!(streamed(&text, 5_000, 3).unwrap().tokens, want);
    }

    #[test]
    fn bad_bytes_are_reported_at_their_offset_in_the_stream() {
        let mut text = sample(200_000);
        let at = text.len() - 1_000;
        // Keep the bad byte off a character's middle: move it to the next character start.
        let at = (at..text.len()).find(|&i| text[i] & 0xC0 != 0x80).unwrap();
        text[at] = 0;
        for max_chunk in [1, 50, 70_000] {
            let err = streamed(&text, max_chunk, 5).unwrap_err();
            assert_eq!((err.offset, err.reason), (at, TextErrorReason::Nul));
        }
        // A zip's signature is valid UTF-8: its first bad byte comes in a later chunk, and
        // the type is still named from the stream's start.
        let mut zip = b"PK\x03\x04".to_vec();
        zip.extend_from_slice(&[b'a'; 100]);
        zip.push(0);
        let err = streamed(&zip, 10, 1).unwrap_err();
        assert_eq!((err.offset, err.detected_type), (104, Some("zip")));
    }

    #[test]
    fn a_character_split_between_chunks_is_text() {
        let text = "é世🙂".repeat(1_000).into_bytes();
        for max_chunk in [1, 2, 3, 5] {
            let got = streamed(&text, max_chunk, 11).unwrap();
            assert_eq!(got.tokens[0], estimate_tokens(&text, Encoding::ALL[0]));
        }
    }

    #[test]
    fn an_unfinished_last_character_is_counted_and_reported() {
        let mut text = "abc 世界".as_bytes().to_vec();
        text.pop();
        let got = streamed(&text, 2, 1).unwrap();
        assert_eq!(got.cut_character, 2);
        assert_eq!(got.tokens[1], estimate_tokens(&text, Encoding::ALL[1]));
        // A lead byte followed by ASCII is no unfinished character: an error.
        let err = streamed(b"ab\xe4cd", 1, 1).unwrap_err();
        assert_eq!((err.offset, err.reason), (2, TextErrorReason::InvalidUtf8));
    }

    #[test]
    fn an_error_sticks() {
        let mut stream = TextStream::new(&[Encoding::O200k]);
        let err = stream.feed(b"a\0b").unwrap_err();
        assert_eq!(stream.feed(b"more text").unwrap_err(), err);
        assert_eq!(stream.finish().unwrap_err(), err);
    }
}
