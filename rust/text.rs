//! Binary/text guard for tool outputs: is this buffer UTF-8 text without NUL bytes, and if not,
//! where does it stop being text and what does it look like?
//!
//! Tool outputs reach the model as text; a PNG, a gzip stream or a UTF-16 log pasted into a
//! prompt wastes the budget and confuses the model. [`validate`] finds the first offending byte
//! at memory speed, and [`detect_type`] names the likely format from its magic bytes so the
//! caller can say what it refused.

use std::fmt;

/// Why a buffer is not text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextErrorReason {
    /// A NUL (`0x00`) byte: valid UTF-8, but never in text meant for a model.
    Nul,
    /// A byte sequence that is not well-formed UTF-8 (stray continuation byte, overlong form,
    /// surrogate, code point above U+10FFFF, or a sequence cut off by the end of the buffer).
    InvalidUtf8,
}

impl TextErrorReason {
    /// Stable short name for the reason: `"nul"` or `"invalid_utf8"`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Nul => "nul",
            Self::InvalidUtf8 => "invalid_utf8",
        }
    }
}

/// The first place where a buffer stops being text, and what the buffer appears to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextError {
    /// Byte offset of the first bad byte: the NUL, or the start of the first ill-formed UTF-8
    /// sequence, whichever comes first.
    pub offset: usize,
    /// What is wrong at `offset`.
    pub reason: TextErrorReason,
    /// The buffer's format guessed from its magic bytes (see [`detect_type`]), if recognised.
    pub detected_type: Option<&'static str>,
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            TextErrorReason::Nul => write!(f, "not text: NUL byte at offset {}", self.offset)?,
            TextErrorReason::InvalidUtf8 => {
                write!(f, "not text: invalid UTF-8 at byte offset {}", self.offset)?;
            }
        }
        if let Some(kind) = self.detected_type {
            write!(f, " (looks like {})", describe(kind))?;
        }
        Ok(())
    }
}

impl std::error::Error for TextError {}

/// Bytes handed to the general validator at a time once the ASCII fast path stops: small enough
/// that the NUL scan and the UTF-8 check of one block both read it from L1/L2, large enough that
/// per-call overhead vanishes.
const BLOCK: usize = 32 * 1024;

/// Checks that `data` is UTF-8 without NUL bytes.
///
/// # Errors
/// Returns the first offending byte (see [`TextError`]), with the detected file type.
pub fn validate(data: &[u8]) -> Result<(), TextError> {
    match first_bad_byte(data) {
        None => Ok(()),
        Some((offset, reason)) => Err(TextError {
            offset,
            reason,
            detected_type: detect_type(data),
        }),
    }
}

/// Like [`validate`], and returns the same bytes as `&str` without copying.
///
/// # Errors
/// Returns the first offending byte (see [`TextError`]), with the detected file type.
pub fn check(data: &[u8]) -> Result<&str, TextError> {
    validate(data)?;
    debug_assert!(std::str::from_utf8(data).is_ok());
    // SAFETY: `validate` returned `Ok`, so `first_bad_byte` covered `data` with pieces that each
    // end on a character boundary and are UTF-8: 128-byte runs of ASCII, blocks accepted by
    // `simdutf8::basic`, or a tail accepted by `simdutf8::compat`. Re-validating would cost a
    // second pass over the buffer.
    Ok(unsafe { std::str::from_utf8_unchecked(data) })
}

/// Whether `data` holds a NUL byte: the cheap half of [`validate`], for callers that decode
/// UTF-8 with another decoder anyway and call [`validate`] only to explain a failure.
#[must_use]
pub fn has_nul(data: &[u8]) -> bool {
    memchr::memchr(0, data).is_some()
}

/// Number of `\n` bytes in `data`. Each 32-byte chunk's compares are added up in byte-wide
/// counters, emptied every 255 chunks, which compiles to a few vector instructions a chunk:
/// `memchr` restarts at every hit, slow on text of short lines.
#[must_use]
pub fn count_newlines(data: &[u8]) -> usize {
    const LANES: usize = 32;
    let mut total = 0;
    let mut chunks = data.chunks_exact(LANES);
    loop {
        let mut counts = [0u8; LANES];
        let mut taken = 0;
        for chunk in chunks.by_ref().take(255) {
            for (c, &b) in counts.iter_mut().zip(chunk) {
                *c += u8::from(b == b'\n');
            }
            taken += 1;
        }
        total += counts.iter().map(|&c| usize::from(c)).sum::<usize>();
        if taken < 255 {
            break;
        }
    }
    let rest = chunks.remainder();
    total + rest.iter().map(|&b| usize::from(b == b'\n')).sum::<usize>()
}

/// Offset and reason of the first NUL or ill-formed UTF-8 byte, or `None` for clean text.
///
/// Alternates two scanners: a one-pass SIMD skip over runs of non-NUL ASCII (most tool output),
/// and, from the first chunk that is not, one block through `memchr` and `simdutf8`.
fn first_bad_byte(data: &[u8]) -> Option<(usize, TextErrorReason)> {
    first_bad_byte_with(data, ascii::clean_prefix)
}

/// [`first_bad_byte`] with the ASCII fast path as a parameter, so tests can cover both the SIMD
/// path and the block validator alone (as on CPUs without AVX2).
#[inline]
fn first_bad_byte_with(
    data: &[u8],
    clean_prefix: fn(&[u8]) -> usize,
) -> Option<(usize, TextErrorReason)> {
    let mut start = 0;
    loop {
        start += clean_prefix(&data[start..]);
        if start == data.len() {
            return None;
        }
        // `start` follows only ASCII or a block that validated whole, so it is a character
        // boundary and the stream's first error is the first error of `data[start..]`.
        let end = block_end(data, start);
        let block = &data[start..end];
        if simdutf8::basic::from_utf8(block).is_err() {
            // `compat` stops at the error, which lies in the block or (if the block end had to
            // cut an over-long run of continuation bytes) at most three bytes past it.
            let bad = match simdutf8::compat::from_utf8(&data[start..]) {
                Ok(_) => data.len(),
                Err(e) => start + e.valid_up_to(),
            };
            return match memchr::memchr(0, &data[start..bad]) {
                Some(i) => Some((start + i, TextErrorReason::Nul)),
                None if bad < data.len() => Some((bad, TextErrorReason::InvalidUtf8)),
                None => None,
            };
        }
        if let Some(i) = memchr::memchr(0, block) {
            return Some((start + i, TextErrorReason::Nul));
        }
        start = end;
    }
}

/// End of the block starting at `start`, backed up (at most 3 bytes) so that it does not split
/// a UTF-8 sequence.
fn block_end(data: &[u8], start: usize) -> usize {
    let mut end = start.saturating_add(BLOCK);
    if end >= data.len() {
        return data.len();
    }
    for _ in 0..3 {
        if is_continuation(data[end]) {
            end -= 1;
        } else {
            break;
        }
    }
    end
}

/// `0b10xx_xxxx`: a byte that can only continue a multi-byte sequence.
fn is_continuation(b: u8) -> bool {
    (b as i8) < -64
}

/// The ASCII fast path: one pass that checks "no NUL, no byte >= 0x80" at once.
mod ascii {
    /// Length of the longest prefix of `data` made of whole 128-byte chunks of bytes in
    /// `1..=0x7F`; 0 when the CPU has no AVX2 (the block validator then does all the work).
    pub(super) fn clean_prefix(data: &[u8]) -> usize {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2, checked just above.
                return unsafe { avx2::clean_prefix(data) };
            }
        }
        let _ = data;
        0
    }

    #[cfg(target_arch = "x86_64")]
    mod avx2 {
        use std::arch::x86_64::{
            __m256i, _mm256_cmpgt_epi8, _mm256_loadu_si256, _mm256_min_epi8, _mm256_movemask_epi8,
            _mm256_setzero_si256,
        };

        /// See [`super::clean_prefix`].
        ///
        /// # Safety
        /// The CPU must support AVX2.
        #[target_feature(enable = "avx2")]
        pub(super) unsafe fn clean_prefix(data: &[u8]) -> usize {
            let mut clean = 0;
            for chunk in data.chunks_exact(128) {
                // Unaligned loads (`loadu`), so the pointer's alignment does not matter.
                #[allow(clippy::cast_ptr_alignment)]
                let ptr = chunk.as_ptr().cast::<__m256i>();
                // SAFETY: `chunk` is 128 bytes, so these are four in-bounds 32-byte loads.
                let min = unsafe {
                    _mm256_min_epi8(
                        _mm256_min_epi8(_mm256_loadu_si256(ptr), _mm256_loadu_si256(ptr.add(1))),
                        _mm256_min_epi8(
                            _mm256_loadu_si256(ptr.add(2)),
                            _mm256_loadu_si256(ptr.add(3)),
                        ),
                    )
                };
                // As signed bytes, exactly 1..=0x7F are > 0: NUL and non-ASCII both fail.
                if _mm256_movemask_epi8(_mm256_cmpgt_epi8(min, _mm256_setzero_si256())) != -1 {
                    break;
                }
                clean += 128;
            }
            clean
        }
    }
}

/// Guesses a binary format from magic bytes: `"pdf"`, `"zip"`, `"png"`, `"jpeg"`, `"gif"`,
/// `"gzip"`, `"elf"`, `"wasm"`, `"bzip2"`, `"xz"`, `"zstd"`, `"7z"`, `"rar"`, `"tar"`, `"sqlite"`,
/// `"webp"`, `"wav"`, `"mp3"`, `"ogg"`, `"flac"`, `"mp4"`, `"class"`, `"macho"`, `"pe"`, `"ico"`,
/// `"bmp"`, or `"utf16"` (a UTF-16 byte order mark).
///
/// Signatures shorter than four bytes or made of printable characters are confirmed by further
/// header fields, so ordinary text beginning with `MZ`, `BM` or `PK` is not reported.
/// Office documents (docx, xlsx, pptx), jars and epubs are reported as `"zip"`.
#[must_use]
pub fn detect_type(data: &[u8]) -> Option<&'static str> {
    const PREFIXES: &[(&[u8], &str)] = &[
        (b"%PDF-", "pdf"),
        (b"PK\x03\x04", "zip"),
        (b"PK\x05\x06", "zip"),
        (b"PK\x07\x08", "zip"),
        (b"\x89PNG\r\n\x1a\n", "png"),
        (b"\xff\xd8\xff", "jpeg"),
        (b"GIF87a", "gif"),
        (b"GIF89a", "gif"),
        (b"\x1f\x8b\x08", "gzip"),
        (b"\x7fELF", "elf"),
        (b"\0asm", "wasm"),
        (b"\xfd7zXZ\0", "xz"),
        (b"\x28\xb5\x2f\xfd", "zstd"),
        (b"7z\xbc\xaf\x27\x1c", "7z"),
        (b"Rar!\x1a\x07", "rar"),
        (b"SQLite format 3\0", "sqlite"),
        (b"OggS\0", "ogg"),
        (b"\xfe\xed\xfa\xce", "macho"),
        (b"\xfe\xed\xfa\xcf", "macho"),
        (b"\xce\xfa\xed\xfe", "macho"),
        (b"\xcf\xfa\xed\xfe", "macho"),
        (b"\xca\xfe\xba\xbf", "macho"),
        // Compound File Binary: .doc/.xls/.ppt, .msg, and any password-protected .docx/.xlsx.
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "ole2"),
        // UTF-32 byte order marks (the little-endian one starts like UTF-16's).
        (b"\xff\xfe\0\0", "utf32"),
        (b"\0\0\xfe\xff", "utf32"),
    ];
    if let Some(&(_, kind)) = PREFIXES.iter().find(|(magic, _)| data.starts_with(magic)) {
        return Some(kind);
    }
    if data.starts_with(b"\xca\xfe\xba\xbe") {
        // Shared by Java classes (minor, major >= 45) and fat Mach-O (a small arch count).
        return Some(if be_u32(data, 4).is_some_and(|n| n < 45) {
            "macho"
        } else {
            "class"
        });
    }
    if data.starts_with(b"RIFF") {
        return match data.get(8..12) {
            Some(b"WEBP") => Some("webp"),
            Some(b"WAVE") => Some("wav"),
            _ => None,
        };
    }
    if is_bzip2(data) {
        return Some("bzip2");
    }
    if is_flac(data) {
        return Some("flac");
    }
    if is_mp3(data) {
        return Some("mp3");
    }
    if is_tar(data) {
        return Some("tar");
    }
    if is_iso_bmff(data) {
        return Some("mp4");
    }
    if is_pe(data) {
        return Some("pe");
    }
    if is_bmp(data) {
        return Some("bmp");
    }
    if is_ico(data) {
        return Some("ico");
    }
    if data.starts_with(b"\xff\xfe") || data.starts_with(b"\xfe\xff") {
        return Some("utf16");
    }
    None
}

/// Human wording for a [`detect_type`] name, for error messages.
fn describe(kind: &str) -> &'static str {
    match kind {
        "pdf" => "a PDF document",
        "zip" => "a ZIP archive or Office document",
        "png" => "a PNG image",
        "jpeg" => "a JPEG image",
        "gif" => "a GIF image",
        "gzip" => "gzip-compressed data",
        "elf" => "an ELF executable",
        "wasm" => "a WebAssembly (wasm) module",
        "bzip2" => "bzip2-compressed data",
        "xz" => "xz-compressed data",
        "zstd" => "zstd-compressed data",
        "7z" => "a 7z archive",
        "rar" => "a RAR archive",
        "tar" => "a tar archive",
        "sqlite" => "an SQLite database",
        "webp" => "a WebP image",
        "wav" => "a WAV audio file",
        "mp3" => "an MP3 audio file",
        "ogg" => "an Ogg media file",
        "flac" => "a FLAC audio file",
        "mp4" => "an MP4/QuickTime media file",
        "class" => "a Java class file",
        "macho" => "a Mach-O (macho) binary",
        "pe" => "a Windows PE executable",
        "ico" => "an ICO icon",
        "bmp" => "a BMP image",
        "utf16" => "UTF-16 (utf16) text",
        "utf32" => "UTF-32 (utf32) text",
        "ole2" => "a legacy or password-protected Office document (ole2)",
        _ => "binary data",
    }
}

fn le_u16(data: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(data.get(at..at + 2)?.try_into().ok()?))
}

fn le_u32(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

fn be_u32(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

/// `BZh1`..`BZh9` followed by the block magic (pi) or the end-of-stream magic (sqrt pi).
fn is_bzip2(data: &[u8]) -> bool {
    data.starts_with(b"BZh")
        && data.get(3).is_some_and(|b| (b'1'..=b'9').contains(b))
        && matches!(
            data.get(4..10),
            Some(b"\x31\x41\x59\x26\x53\x59" | b"\x17\x72\x45\x38\x50\x90")
        )
}

/// `fLaC` followed by the mandatory STREAMINFO metadata block header (type 0, length 34).
fn is_flac(data: &[u8]) -> bool {
    data.starts_with(b"fLaC")
        && matches!(data.get(4), Some(0 | 0x80))
        && data.get(5..8) == Some(b"\0\0\x22")
}

/// An `ID3v2` tag with a known version, or a bare MPEG audio Layer III frame header.
fn is_mp3(data: &[u8]) -> bool {
    if data.starts_with(b"ID3") {
        return data.get(3).is_some_and(|v| (2..=4).contains(v)) && data.get(4) == Some(&0);
    }
    match data {
        // Frame sync, MPEG 1/2/2.5 Layer III; bitrate index not "bad", sample rate not reserved.
        [0xff, b1, b2, ..] => {
            matches!(b1, 0xfa | 0xfb | 0xf2 | 0xf3 | 0xe2 | 0xe3)
                && b2 >> 4 != 0x0f
                && (b2 >> 2) & 0x03 != 0x03
        }
        _ => false,
    }
}

/// POSIX or GNU tar: `ustar` magic at offset 257 of the first header.
fn is_tar(data: &[u8]) -> bool {
    data.get(257..262) == Some(b"ustar") && matches!(data.get(262), Some(0 | b' '))
}

/// ISO base media (MP4, MOV, M4A, HEIF...): a plausible box size, then `ftyp` and a printable
/// four-character brand.
fn is_iso_bmff(data: &[u8]) -> bool {
    data.get(4..8) == Some(b"ftyp")
        && be_u32(data, 0).is_some_and(|size| (8..=4096).contains(&size))
        && data
            .get(8..12)
            .is_some_and(|brand| brand.iter().all(|b| (0x20..0x7f).contains(b)))
}

/// `MZ` with a DOS header whose `e_lfanew` points at `PE\0\0`; when the buffer ends before the
/// PE header, a plausible DOS header instead.
fn is_pe(data: &[u8]) -> bool {
    if !data.starts_with(b"MZ") {
        return false;
    }
    // Bytes on the last page (< 512) and header size in paragraphs (>= 4, as e_lfanew is at 0x3C).
    let dos_header_ok =
        le_u16(data, 2).is_some_and(|n| n < 512) && le_u16(data, 8).is_some_and(|n| n >= 4);
    match le_u32(data, 0x3c) {
        Some(lfanew) => {
            let lfanew = lfanew as usize;
            match data.get(lfanew..lfanew.saturating_add(4)) {
                Some(sig) => sig == b"PE\0\0",
                None => dos_header_ok && (0x40..0x10000).contains(&lfanew),
            }
        }
        None => dos_header_ok && data.get(2..10).is_some_and(|h| h.contains(&0)),
    }
}

/// `BM`, reserved fields zero, a known DIB header size and a pixel offset past the headers.
fn is_bmp(data: &[u8]) -> bool {
    if !data.starts_with(b"BM") || le_u32(data, 6) != Some(0) {
        return false;
    }
    match (le_u32(data, 10), le_u32(data, 14)) {
        (Some(pixels), Some(dib)) => {
            matches!(dib, 12 | 40 | 52 | 56 | 64 | 108 | 124) && pixels >= 14 + dib
        }
        _ => false,
    }
}

/// ICONDIR (reserved 0, type 1, at least one image) and a sane first directory entry.
fn is_ico(data: &[u8]) -> bool {
    data.starts_with(b"\0\0\x01\0")
        && le_u16(data, 4).is_some_and(|n| n > 0)
        && data.get(9) == Some(&0)
        && le_u16(data, 10).is_some_and(|planes| planes <= 1)
        && le_u16(data, 12).is_some_and(|bpp| matches!(bpp, 0 | 1 | 4 | 8 | 16 | 24 | 32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::XorShift;

    #[test]
    fn count_newlines_counts_every_newline() {
        let mut rng = XorShift(0x0A0A);
        // Lengths around the 32-byte chunks and the 255-chunk counter spans.
        for len in [0, 1, 31, 32, 33, 8159, 8160, 8161, 16_320, 16_321, 40_000] {
            for density in [0, 1, 3, 64] {
                let data: Vec<u8> = (0..len)
                    .map(|_| {
                        if density > 0 && rng.below(density) == 0 {
                            b'\n'
                        } else {
                            rng.below(256) as u8
                        }
                    })
                    .collect();
                // The plain loop the function stands in for.
                let mut want = 0;
                for &b in &data {
                    want += usize::from(b == b'\n');
                }
                assert_eq!(count_newlines(&data), want, "{len} {density}");
            }
        }
        // Every byte a newline: each counter takes its full 255 before it is emptied.
        assert_eq!(count_newlines(&vec![b'\n'; 100_000]), 100_000);
    }

    /// The obviously-correct reference: first NUL vs `std`'s first invalid UTF-8 byte.
    fn reference(data: &[u8]) -> Option<(usize, TextErrorReason)> {
        let nul = data.iter().position(|&b| b == 0);
        let bad = std::str::from_utf8(data).err().map(|e| e.valid_up_to());
        match (nul, bad) {
            (Some(n), Some(b)) if b < n => Some((b, TextErrorReason::InvalidUtf8)),
            (Some(n), _) => Some((n, TextErrorReason::Nul)),
            (None, Some(b)) => Some((b, TextErrorReason::InvalidUtf8)),
            (None, None) => None,
        }
    }

    fn no_fast_path(_: &[u8]) -> usize {
        0
    }

    /// Checks every entry point and both scanners against the reference.
    fn assert_agrees(data: &[u8]) {
        let want = reference(data);
        assert_eq!(first_bad_byte(data), want, "fast path, len {}", data.len());
        assert_eq!(
            first_bad_byte_with(data, no_fast_path),
            want,
            "block path, len {}",
            data.len()
        );
        match want {
            None => {
                assert_eq!(validate(data), Ok(()));
                let text = check(data).map(str::as_bytes);
                assert_eq!(text, Ok(data));
                assert_eq!(
                    text.map(<[u8]>::as_ptr),
                    Ok(data.as_ptr()),
                    "check must not copy"
                );
            }
            Some((offset, reason)) => {
                let err = TextError {
                    offset,
                    reason,
                    detected_type: detect_type(data),
                };
                assert_eq!(validate(data), Err(err.clone()));
                assert_eq!(check(data), Err(err));
            }
        }
    }

    fn err_at(data: &[u8]) -> Option<(usize, TextErrorReason)> {
        validate(data).err().map(|e| (e.offset, e.reason))
    }

    const NUL: TextErrorReason = TextErrorReason::Nul;
    const BAD: TextErrorReason = TextErrorReason::InvalidUtf8;

    #[test]
    fn clean_text_passes() {
        for text in [
            "",
            "a",
            "hello, world\n",
            "héllo wörld — “quoted” 日本語 한국어 😀𝄞",
            &"plain ascii line\n".repeat(10_000),
            &"混合 text ✓ ".repeat(20_000),
            &"\u{7f}\u{1}\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}\u{10ffff}".repeat(999),
        ] {
            assert_eq!(check(text.as_bytes()), Ok(text));
            assert_agrees(text.as_bytes());
        }
    }

    #[test]
    fn nul_positions() {
        for len in [
            1,
            2,
            127,
            128,
            129,
            255,
            256,
            1000,
            BLOCK - 1,
            BLOCK,
            BLOCK + 1,
            3 * BLOCK,
        ] {
            for at in [0, len / 2, len - 1] {
                let mut data = vec![b'x'; len];
                data[at] = 0;
                assert_eq!(err_at(&data), Some((at, NUL)), "len {len} at {at}");
                assert_agrees(&data);
            }
        }
        // A NUL in a later block of non-ASCII text (the block validator, not the fast path).
        let mut data = "é".repeat(3 * BLOCK).into_bytes();
        data[2 * BLOCK + 10] = 0;
        assert_eq!(err_at(&data), Some((2 * BLOCK + 10, NUL)));
        assert_agrees(&data);
    }

    #[test]
    fn invalid_utf8_positions() {
        for (bytes, what) in [
            (&b"\x80"[..], "stray continuation"),
            (b"\xbf", "stray continuation"),
            (b"\xc0\x80", "overlong NUL"),
            (b"\xc1\xbf", "overlong 2-byte"),
            (b"\xe0\x80\x80", "overlong 3-byte"),
            (b"\xe0\x9f\xbf", "overlong 3-byte"),
            (b"\xf0\x80\x80\x80", "overlong 4-byte"),
            (b"\xf0\x8f\xbf\xbf", "overlong 4-byte"),
            (b"\xed\xa0\x80", "surrogate D800"),
            (b"\xed\xbf\xbf", "surrogate DFFF"),
            (b"\xf4\x90\x80\x80", "above U+10FFFF"),
            (b"\xf5\x80\x80\x80", "lead F5"),
            (b"\xff", "byte FF"),
            (b"\xc3x", "2-byte cut by ASCII"),
            (b"\xe2\x82x", "3-byte cut by ASCII"),
            (b"\xf0\x9f\x98x", "4-byte cut by ASCII"),
        ] {
            for at in [0, 1, 5, 127, 128, 129, 1000, BLOCK - 1, BLOCK, BLOCK + 1] {
                let mut data = vec![b'a'; at];
                data.extend_from_slice(bytes);
                data.extend_from_slice(b"tail text");
                assert_eq!(err_at(&data), Some((at, BAD)), "{what} at {at}");
                assert_agrees(&data);
            }
        }
    }

    #[test]
    fn truncated_sequence_at_end_is_invalid_where_it_starts() {
        for tail in [
            &b"\xc3"[..],
            b"\xe2\x82",
            b"\xe2",
            b"\xf0\x9f\x98",
            b"\xf0\x9f",
            b"\xf0",
        ] {
            for prefix in [0, 3, 200, BLOCK - 2, 2 * BLOCK + 7] {
                let mut data = vec![b'z'; prefix];
                data.extend_from_slice(tail);
                assert_eq!(err_at(&data), Some((prefix, BAD)));
                assert_agrees(&data);
            }
        }
    }

    #[test]
    fn multibyte_sequences_straddling_block_boundaries() {
        // Fill with 2-byte characters so the fast path stops at once and the block validator
        // sees every boundary; then put a 1..4-byte character (valid or not) across it.
        let seqs: [&[u8]; 8] = [
            "é".as_bytes(),
            "€".as_bytes(),
            "😀".as_bytes(),
            b"\xe2\x82\xe2\x82\xac",
            b"\xf0\x9f\x98\x80\x80",
            b"\x80\x80\x80\x80\x80",
            b"\xf0\x9f\x98\x80\x80\x80\x80\x80",
            b"\xed\xa0\x80",
        ];
        for boundary in [BLOCK, 2 * BLOCK] {
            for seq in seqs {
                for shift in 0..=seq.len() + 1 {
                    for filler in ["é", "x", "€"] {
                        let mut data = Vec::new();
                        while data.len() + shift < boundary {
                            data.extend_from_slice(filler.as_bytes());
                        }
                        data.extend_from_slice(seq);
                        data.extend_from_slice("ü tail".as_bytes());
                        assert_agrees(&data);
                    }
                }
            }
        }
    }

    #[test]
    fn first_problem_wins() {
        assert_eq!(err_at(b"ab\0cd\xffef"), Some((2, NUL)));
        assert_eq!(err_at(b"ab\xffcd\0ef"), Some((2, BAD)));
        assert_eq!(err_at(b"\xe2\x82\0"), Some((0, BAD)));
        assert_eq!(err_at(b"\xe2\0\x82"), Some((0, BAD)));
        let mut far = "ж".repeat(BLOCK).into_bytes();
        far[BLOCK + 1] = 0xff;
        far[BLOCK + 5] = 0;
        assert_eq!(err_at(&far), Some((BLOCK, BAD)));
        far[BLOCK - 4] = 0;
        assert_eq!(err_at(&far), Some((BLOCK - 4, NUL)));
    }

    #[test]
    fn random_buffers_agree_with_reference() {
        const PIECES: [&[u8]; 12] = [
            b"a",
            b"text ",
            b"\n",
            "é".as_bytes(),
            "€".as_bytes(),
            "中文".as_bytes(),
            "😀".as_bytes(),
            "\u{10ffff}".as_bytes(),
            "\u{ffff}".as_bytes(),
            b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            b"\x7f",
            "\u{80}".as_bytes(),
        ];
        const BAD_BYTES: [&[u8]; 10] = [
            b"\0",
            b"\x80",
            b"\xc3",
            b"\xe2\x82",
            b"\xf0\x9f\x98",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80",
            b"\xc0\xaf",
            b"\xff",
            b"\xfe",
        ];
        let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
        for round in 0..3000 {
            let len = match round % 10 {
                0 => rng.index(3 * BLOCK + 200),
                1..=3 => rng.index(2000),
                _ => rng.index(300),
            };
            let mut data = Vec::with_capacity(len + 8);
            let mut ascii_run = rng.index(2) == 0;
            while data.len() < len {
                if rng.index(50) == 0 {
                    ascii_run = !ascii_run;
                }
                if ascii_run {
                    data.extend_from_slice(PIECES[rng.index(3)]);
                } else {
                    data.extend_from_slice(PIECES[rng.index(PIECES.len())]);
                }
            }
            for _ in 0..rng.index(4) {
                if data.is_empty() {
                    break;
                }
                let at = rng.index(data.len());
                let bad = BAD_BYTES[rng.index(BAD_BYTES.len())];
                if rng.index(2) == 0 {
                    data.splice(at..at, bad.iter().copied());
                } else {
                    data[at] = bad[0];
                }
            }
            if rng.index(8) == 0 {
                data.truncate(rng.index(data.len() + 1));
            }
            assert_agrees(&data);
        }
    }

    #[test]
    fn magic_types() {
        fn with_tail(head: &[u8]) -> Vec<u8> {
            let mut v = head.to_vec();
            v.extend_from_slice(&[0, 0xff, 0x10, 0x80, 0, 0, 7, 9]);
            v
        }
        let mut tar = vec![0u8; 512];
        tar[..8].copy_from_slice(b"file.txt");
        tar[257..265].copy_from_slice(b"ustar\x0000");
        let mut gnu_tar = tar.clone();
        gnu_tar[257..265].copy_from_slice(b"ustar  \0");
        let mut pe = vec![0u8; 0x100];
        pe[..16].copy_from_slice(b"MZ\x90\0\x03\0\0\0\x04\0\0\0\xff\xff\0\0");
        pe[0x3c] = 0x80;
        pe[0x80..0x84].copy_from_slice(b"PE\0\0");
        let pe_truncated = with_tail(b"MZ\x90\0\x03\0\0\0\x04\0\0\0\xff\xff\0\0");
        let mut pe_cut_before_header = pe.clone();
        pe_cut_before_header.truncate(0x70);
        let mut bmp =
            b"BM\x36\x00\x0c\x00\x00\x00\x00\x00\x36\x00\x00\x00\x28\x00\x00\x00".to_vec();
        bmp.extend_from_slice(&[0x10, 0, 0, 0, 0x10, 0, 0, 0, 1, 0, 24, 0]);
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (with_tail(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3"), "pdf"),
            (with_tail(b"PK\x03\x04\x14\0\x06\0"), "zip"),
            (
                with_tail(b"PK\x03\x04\x14\0\0\0\x08\0[Content_Types].xml"),
                "zip",
            ),
            (
                b"PK\x05\x06\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0".to_vec(),
                "zip",
            ),
            (with_tail(b"PK\x07\x08"), "zip"),
            (with_tail(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), "png"),
            (with_tail(b"\xff\xd8\xff\xe0\0\x10JFIF\0"), "jpeg"),
            (with_tail(b"GIF89a\x01\0\x01\0"), "gif"),
            (with_tail(b"GIF87a"), "gif"),
            (with_tail(b"\x1f\x8b\x08\0\0\0\0\0"), "gzip"),
            (with_tail(b"\x7fELF\x02\x01\x01"), "elf"),
            (with_tail(b"\0asm\x01\0\0\0"), "wasm"),
            (with_tail(b"BZh91AY&SY"), "bzip2"),
            (with_tail(b"BZh9\x17\x72\x45\x38\x50\x90"), "bzip2"),
            (with_tail(b"\xfd7zXZ\0\0\x04"), "xz"),
            (with_tail(b"\x28\xb5\x2f\xfd\x24\x05"), "zstd"),
            (with_tail(b"7z\xbc\xaf\x27\x1c\0\x04"), "7z"),
            (with_tail(b"Rar!\x1a\x07\0"), "rar"),
            (with_tail(b"Rar!\x1a\x07\x01\0"), "rar"),
            (tar, "tar"),
            (gnu_tar, "tar"),
            (with_tail(b"SQLite format 3\0\x10\0"), "sqlite"),
            (with_tail(b"RIFF\x24\x08\0\0WEBPVP8 "), "webp"),
            (with_tail(b"RIFF\x24\x08\0\0WAVEfmt "), "wav"),
            (with_tail(b"ID3\x04\0\0\0\0\x0f\x76"), "mp3"),
            (with_tail(b"\xff\xfb\x90\x64"), "mp3"),
            (with_tail(b"OggS\0\x02\0\0"), "ogg"),
            (with_tail(b"fLaC\0\0\0\x22\x10\0"), "flac"),
            (with_tail(b"fLaC\x80\0\0\x22\x10\0"), "flac"),
            (with_tail(b"\0\0\0\x20ftypisom\0\0\x02\0"), "mp4"),
            (with_tail(b"\0\0\0\x14ftypqt  "), "mp4"),
            (with_tail(b"\xca\xfe\xba\xbe\0\0\0\x34"), "class"),
            (
                with_tail(b"\xca\xfe\xba\xbe\0\0\0\x02\x01\0\0\x07"),
                "macho",
            ),
            (with_tail(b"\xcf\xfa\xed\xfe\x07\0\0\x01"), "macho"),
            (with_tail(b"\xfe\xed\xfa\xce"), "macho"),
            (pe, "pe"),
            (pe_truncated, "pe"),
            (pe_cut_before_header, "pe"),
            (bmp, "bmp"),
            (
                with_tail(b"\0\0\x01\0\x01\0\x10\x10\0\0\x01\0\x20\0"),
                "ico",
            ),
            (with_tail(b"\xff\xfeh\0i\0"), "utf16"),
            (with_tail(b"\xfe\xff\0h\0i"), "utf16"),
            (with_tail(b"\xff\xfe\0\0h\0\0\0"), "utf32"),
            (with_tail(b"\0\0\xfe\xff\0\0\0h"), "utf32"),
            (with_tail(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\0\0"), "ole2"),
        ];
        for (data, kind) in cases {
            assert_eq!(detect_type(&data), Some(kind), "{kind}: {data:?}");
            let err = validate(&data).expect_err(kind);
            assert_eq!(err.detected_type, Some(kind));
            // The message names the type by its short name too (Python tests rely on it).
            let message = err.to_string().to_lowercase();
            assert!(message.contains(kind), "{message}");
            assert_ne!(describe(kind), "binary data", "{kind} has no description");
        }
    }

    #[test]
    fn text_that_starts_like_a_signature_is_text() {
        for text in [
            "MZ is a postal code prefix\n",
            "MZ",
            "MZ\u{90}",
            "BM",
            "BMW announced a new model; the quarterly numbers follow below.\n",
            "PK",
            "PKG_CONFIG_PATH=/usr/lib/pkgconfig\n",
            "ID3 tags are metadata",
            "fLaC is the FLAC magic",
            "RIFF chunks",
            "BZh9 looks like bzip2 but is not",
            "GIF is pronounced with a hard g",
            "Rar! says the lion",
            "OggS",
            "%PDF",
            "\u{feff}BOM-prefixed UTF-8 is fine",
        ] {
            let long = format!("{text}{}", " and more words".repeat(40));
            for candidate in [text, long.as_str()] {
                assert_eq!(check(candidate.as_bytes()), Ok(candidate));
                assert_eq!(detect_type(candidate.as_bytes()), None, "{candidate:?}");
            }
        }
        // Binary-looking but unrecognised: no guess, and no panic on short or odd headers.
        for data in [
            &b"MZ\0"[..],
            b"MZ\xff\xff\0\0",
            b"BM\0\0\0\0\0\0\0\0",
            b"\0\0\x01\0",
            b"\0\0\0\x08ftyp",
            b"\xca\xfe\xba",
            b"RIFF",
            b"\xff",
            b"\0",
        ] {
            assert_eq!(detect_type(data), None, "{data:?}");
        }
        let mut mz = vec![0u8; 0x100];
        mz[..2].copy_from_slice(b"MZ");
        mz[0x3c] = 0x80;
        mz[0x80..0x84].copy_from_slice(b"NE\0\0");
        assert_eq!(detect_type(&mz), None);
        mz[0x3c..0x40].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(detect_type(&mz), None);
    }

    #[test]
    fn messages_and_reason_names() {
        let png = validate(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").expect_err("png");
        assert_eq!(
            png.to_string(),
            "not text: invalid UTF-8 at byte offset 0 (looks like a PNG image)"
        );
        let nul = validate(b"abc\0").expect_err("nul");
        assert_eq!(nul.to_string(), "not text: NUL byte at offset 3");
        assert_eq!(nul.reason.as_str(), "nul");
        assert_eq!(TextErrorReason::InvalidUtf8.as_str(), "invalid_utf8");
        let pdf = validate(b"%PDF-1.7\n\x00\x01").expect_err("pdf");
        assert_eq!(
            pdf.to_string(),
            "not text: NUL byte at offset 9 (looks like a PDF document)"
        );
        assert!(has_nul(b"a\0") && !has_nul(b"abc") && !has_nul(b""));
        let boxed: Box<dyn std::error::Error> = Box::new(nul);
        assert!(boxed.to_string().starts_with("not text:"));
    }
}
