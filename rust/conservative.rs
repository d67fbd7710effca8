//! The `conservative` estimate in one pass: cl100k, qwen3 and o200k from one classification.
//!
//! `conservative` is the largest of the cl100k, qwen3 and o200k estimates. cl100k and qwen3
//! pre-tokenize alike; o200k does not (it splits camelCase words, keeps contractions on their
//! word, lets punctuation swallow `/`), so it needs pieces of its own. Two scans would classify
//! every window twice and hash every piece twice. Here one pass keeps the next piece start
//! of each dialect. Where the two meet, a 64-byte window is classified once and settled by both
//! dialects' rules up to the last piece start they share; when both settle the same pieces there
//! (most windows), each piece is hashed once and probed in all three filters, else each dialect's
//! pieces are costed apart. Elsewhere (non-ASCII text, a window with no shared piece start) the
//! byte scanner moves whichever dialect is behind by one piece. Windows and the byte scanner
//! give the same pieces, so the units are exactly those of two separate scans.

use crate::blocks::{self, Classified, Settled};
use crate::estimate::{piece_units, Memo, Model};
use crate::scan::{self, Dialect};
use crate::window_cost::window_units;

/// Table units of `text` in cl100k, qwen3 and o200k (`models`, in that order), with their
/// `memos`.
pub(crate) fn units_conservative(
    text: &[u8],
    models: &[Model; 3],
    memos: &mut [Option<&mut Memo>; 3],
) -> [u64; 3] {
    let [cl, qw, o2] = *models;
    let (pair, single) = ([cl, qw], [o2]);
    let mut acc = [0u64; 3];
    let len = text.len();
    // The next piece start in the cl100k dialect and in o200k's.
    let mut at = [0usize; 2];
    // Where windows are tried again after one settled nothing shared.
    let mut ascii_from = 0;
    while at[0] < len || at[1] < len {
        let level = at[0];
        if at[1] == level && level >= ascii_from && len - level >= blocks::MIN_TEXT {
            let mut pad = [0u8; blocks::WIDTH];
            let window = blocks::classify(text, level, &mut pad);
            if let Some((cl_win, o2_win)) = window.as_ref().and_then(|w| settle_shared(w, text)) {
                add(
                    &mut acc,
                    shared_units(&cl_win, &o2_win, text, models, memos),
                );
                at = [level + cl_win.end() as usize; 2];
                continue;
            }
            // Non-ASCII text ahead: the byte scanner goes on alone until ASCII resumes; no
            // shared piece start: windows are tried again where the dialects next meet.
            ascii_from = if window.is_none() {
                blocks::next_ascii(text, level)
            } else {
                level + 1
            };
        }
        advance(text, &mut at, &pair, &single, memos, &mut acc);
    }
    acc
}

/// Moves the dialect that is behind (cl100k when they are level) by one byte-scanner piece,
/// its units added to `acc`.
fn advance(
    text: &[u8],
    at: &mut [usize; 2],
    pair: &[Model; 2],
    single: &[Model; 1],
    memos: &mut [Option<&mut Memo>; 3],
    acc: &mut [u64; 3],
) {
    let [ma, mb, mc] = memos;
    if at[0] <= at[1] {
        let found = scan::found_at(text, at[0], Dialect::Cl100k);
        let mut two = [ma.as_deref_mut(), mb.as_deref_mut()];
        let [cl, qw] = piece_units(&found, text, pair, &mut two);
        add(acc, [cl, qw, 0]);
        at[0] = found.end;
    } else {
        let found = scan::found_at(text, at[1], Dialect::O200k);
        let [o2] = piece_units(&found, text, single, &mut [mc.as_deref_mut()]);
        add(acc, [0, 0, o2]);
        at[1] = found.end;
    }
}

/// The window settled by both dialects, each up to the last piece start they share; `None`
/// when they share none but the first.
fn settle_shared<'a>(window: &Classified<'a>, text: &[u8]) -> Option<(Settled<'a>, Settled<'a>)> {
    let mut cl_win = window.settle(text, Dialect::Cl100k)?;
    let mut o2_win = window.settle(text, Dialect::O200k)?;
    let shared = (cl_win.starts & o2_win.starts).checked_ilog2().unwrap_or(0);
    if shared == 0 {
        return None;
    }
    let keep = u64::MAX >> (63 - shared);
    cl_win.starts &= keep;
    o2_win.starts &= keep;
    Some((cl_win, o2_win))
}

/// Units of the pieces of a window settled by both dialects up to the same point: hashed once
/// for all three filters when they settle the same pieces, else each dialect's apart.
fn shared_units(
    cl_win: &Settled<'_>,
    o2_win: &Settled<'_>,
    text: &[u8],
    models: &[Model; 3],
    memos: &mut [Option<&mut Memo>; 3],
) -> [u64; 3] {
    let [ma, mb, mc] = memos;
    if cl_win.starts == o2_win.starts {
        let windows = [
            (cl_win, Dialect::Cl100k),
            (cl_win, Dialect::Cl100k),
            (o2_win, Dialect::O200k),
        ];
        let mut all = [ma.as_deref_mut(), mb.as_deref_mut(), mc.as_deref_mut()];
        return window_units(windows, text, models, &mut all);
    }
    let [cl, qw, o2] = *models;
    let mut two = [ma.as_deref_mut(), mb.as_deref_mut()];
    let [cl_units, qw_units] =
        window_units([(cl_win, Dialect::Cl100k); 2], text, &[cl, qw], &mut two);
    let [o2_units] = window_units(
        [(o2_win, Dialect::O200k)],
        text,
        &[o2],
        &mut [mc.as_deref_mut()],
    );
    [cl_units, qw_units, o2_units]
}

/// `acc += units`, element by element.
fn add(acc: &mut [u64; 3], units: [u64; 3]) {
    for (a, u) in acc.iter_mut().zip(units) {
        *a += u;
    }
}
