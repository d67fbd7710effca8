//! Helper for `benches/fit_estimator.py`; see that script. Commands:
//!
//! - `layout`: the table layout as JSON (groups with their features).
//! - `dump <encoding> <docs.bin>`: every piece of every document as little-endian `u32`
//!   records `(doc, start, end, cell, chars)`; digit runs split into groups; `cell` is
//!   `u32::MAX` for invalid bytes and `u32::MAX - 1` for pieces the vocabulary filter has.
//! - `filter <encoding> <tokens.bin>`: the vocabulary filter (raw bytes on stdout) of the
//!   vocabulary entries in `tokens.bin` that the encoding's scanner emits as one piece.
//! - `prefixes <encoding> <tokens.bin>`: the prefix filter of the same entries: each one's
//!   proper prefixes, cut at character boundaries.
//! - `estimate <docs.bin>`: per document, `cl100k o200k llama3 qwen3 conservative` estimates.
//! - `bench <file> <encoding> [seconds]`: single-thread throughput in MB/s.
//! - `bench-scan <file> [seconds]`: single-thread MB/s of the o200k pre-tokenizer alone:
//!   with 64-byte bit-mask windows finding the pieces only (`scan_found`, what the estimator
//!   runs: features are built for the pieces the vocabulary lacks), the same building every
//!   piece's features (`scan`), and the byte scanner alone (`scan_bytes`); alternating rounds
//!   on the same text.
//!
//! `docs.bin` is a sequence of `u32` little-endian length + UTF-8 bytes.

#![allow(dead_code)]

#[cfg(target_arch = "x86_64")]
#[path = "../../../rust/avx2.rs"]
mod avx2;
#[cfg(target_arch = "x86_64")]
#[path = "../../../rust/avx512.rs"]
mod avx512;
#[path = "../../../rust/blocks.rs"]
mod blocks;
#[path = "../../../rust/conservative.rs"]
mod conservative;
#[path = "../../../rust/estimate.rs"]
mod estimate;
#[path = "../../../rust/greedy.rs"]
mod greedy;
#[path = "../../../rust/nfc.rs"]
mod nfc;
#[path = "../../../rust/profiles.rs"]
mod profiles;
#[path = "../../../rust/scan.rs"]
mod scan;
#[cfg(test)]
#[path = "../../../rust/testing.rs"]
mod testing;
#[path = "../../../rust/vocab.rs"]
mod vocab;
#[path = "../../../rust/window_cost.rs"]
mod window_cost;
#[path = "../../../rust/window_hits.rs"]
mod window_hits;

use std::io::Write;
use std::time::Instant;

use estimate::Encoding;
use scan::{Dialect, Kind};

fn read_docs(path: &str) -> Vec<Vec<u8>> {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let mut docs = Vec::new();
    let mut i = 0;
    while i + 4 <= data.len() {
        let n = u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]) as usize;
        docs.push(data[i + 4..i + 4 + n].to_vec());
        i += 4 + n;
    }
    docs
}

fn layout() {
    let mut out = String::from("{\"len_buckets\": ");
    out += &estimate::LEN_BUCKETS.to_string();
    out += ", \"groups\": [";
    for g in 0..estimate::N_GROUPS {
        let (kind, a, b, c) = estimate::describe_group(g).expect("group in range");
        if g > 0 {
            out += ", ";
        }
        out += &format!("[\"{kind}\", {a}, {b}, {c}]");
    }
    out += "]}";
    println!("{out}");
}

fn model(name: &str) -> (estimate::Model, u32) {
    let enc = Encoding::from_name(name).expect("encoding name");
    let group = if enc == Encoding::Qwen3 { 1 } else { 3 };
    (estimate::model(enc).expect("a fitted encoding"), group)
}

/// The vocabulary entries of `tokens` that the encoding's scanner emits as one piece (and
/// looks up), with their hashes: what its filters are built from.
fn single_pieces<'t>(m: &estimate::Model, tokens: &'t [Vec<u8>]) -> Vec<(&'t [u8], u64)> {
    tokens
        .iter()
        .filter(|t| std::str::from_utf8(t).is_ok())
        .filter_map(|t| match scan::pieces(t, m.dialect).as_slice() {
            [p] => estimate::piece_hash(p, t).map(|h| (t.as_slice(), h)),
            _ => None,
        })
        .collect()
}

fn filter(name: &str, path: &str) {
    let (m, _) = model(name);
    let tokens = read_docs(path);
    let hashes: Vec<u64> = single_pieces(&m, &tokens).iter().map(|&(_, h)| h).collect();
    eprintln!(
        "{name}: {} of {} vocabulary entries are single pieces",
        hashes.len(),
        tokens.len()
    );
    std::io::stdout()
        .write_all(&vocab::build(hashes))
        .expect("stdout");
}

/// The prefix filter of the entries `filter` takes: each one's proper prefixes, cut where a
/// character starts (where the greedy split tries them).
fn prefixes(name: &str, path: &str) {
    let (m, _) = model(name);
    let tokens = read_docs(path);
    let mut hashes = Vec::new();
    for (t, _) in single_pieces(&m, &tokens) {
        for cut in 1..t.len() {
            if t[cut] & 0xC0 != 0x80 {
                hashes.push(vocab::hash(&t[..cut]));
            }
        }
    }
    hashes.sort_unstable();
    hashes.dedup();
    eprintln!("{name}: {} distinct prefixes of single-piece entries", hashes.len());
    std::io::stdout()
        .write_all(&vocab::build_prefixes(hashes))
        .expect("stdout");
}

fn dump(name: &str, path: &str) {
    let (m, digit_group) = model(name);
    let dialect: Dialect = m.dialect;
    let docs = read_docs(path);
    let mut out = Vec::new();
    let mut rec = |d: usize, s: usize, e: usize, cell: u32, chars: u32| {
        for v in [d as u32, s as u32, e as u32, cell, chars] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    };
    let lb = estimate::LEN_BUCKETS;
    for (d, doc) in docs.iter().enumerate() {
        scan::scan(doc, dialect, |p| {
            if estimate::piece_hash(&p, doc)
                .is_some_and(|h| estimate::is_whole(h, doc, (p.start, p.end), &m))
            {
                rec(d, p.start, p.end, u32::MAX - 1, p.chars.max(1));
                return;
            }
            let Some(g) = estimate::group(&p, doc) else {
                rec(d, p.start, p.end, u32::MAX, 1);
                return;
            };
            if let Some(tokens) = estimate::lone_char(&p, doc, &m) {
                rec(d, p.start, p.end, u32::MAX - 2, tokens);
                return;
            }
            if p.kind == Kind::Digits {
                // Split the run into groups by characters, as the real pre-tokenizer does.
                let text = std::str::from_utf8(&doc[p.start..p.end]).expect("digits are UTF-8");
                let idx: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
                let mut k = 0;
                while k < idx.len() {
                    let n = (idx.len() - k).min(digit_group as usize);
                    let s = p.start + idx[k];
                    let e = if k + n < idx.len() {
                        p.start + idx[k + n]
                    } else {
                        p.end
                    };
                    rec(d, s, e, (g * lb + n - 1) as u32, n as u32);
                    k += n;
                }
            } else {
                let len = estimate::piece_length(&p, doc, &m).max(1);
                let n = (len as usize).min(lb);
                rec(d, p.start, p.end, (g * lb + n - 1) as u32, len);
            }
        });
    }
    std::io::stdout().write_all(&out).expect("stdout");
}

fn estimate_docs(path: &str) {
    let docs = read_docs(path);
    let mut out = String::new();
    for doc in &docs {
        let v: Vec<String> = Encoding::ALL
            .iter()
            .map(|&e| estimate::estimate_tokens(doc, e).to_string())
            .collect();
        out += &v.join(" ");
        out.push('\n');
    }
    print!("{out}");
}

fn bench(path: &str, enc: &str, seconds: f64) {
    let data = std::fs::read(path).expect("bench file");
    let enc = Encoding::from_name(enc).expect("encoding name");
    let mut total = 0u64;
    let mut bytes = 0u64;
    let t0 = Instant::now();
    while t0.elapsed().as_secs_f64() < seconds {
        total = total.wrapping_add(estimate::estimate_tokens(std::hint::black_box(&data), enc));
        bytes += data.len() as u64;
    }
    let mbps = bytes as f64 / t0.elapsed().as_secs_f64() / 1e6;
    println!(
        "{mbps:.1} MB/s ({} tokens/pass)",
        estimate::estimate_tokens(&data, enc)
    );
    std::hint::black_box(total);
}

/// Seconds per pass of `f` over `data`, best of the passes within `seconds`.
fn best_pass(seconds: f64, mut f: impl FnMut() -> usize) -> f64 {
    let mut best = f64::MAX;
    let t0 = Instant::now();
    while t0.elapsed().as_secs_f64() < seconds || best == f64::MAX {
        let t = Instant::now();
        std::hint::black_box(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

fn bench_scan(path: &str, seconds: f64) {
    let data = std::fs::read(path).expect("bench file");
    let d = Dialect::O200k;
    let (mut found, mut masks, mut bytes) = (f64::MAX, f64::MAX, f64::MAX);
    for _ in 0..5 {
        found = found.min(best_pass(seconds / 15.0, || {
            let mut n = 0;
            scan::scan_found(&data, d, |f| n += f.end);
            n
        }));
        masks = masks.min(best_pass(seconds / 15.0, || {
            let mut n = 0;
            scan::scan(&data, d, |_| n += 1);
            n
        }));
        bytes = bytes.min(best_pass(seconds / 15.0, || {
            let mut n = 0;
            scan::scan_bytes(&data, d, |_| n += 1);
            n
        }));
    }
    let mbps = |s: f64| data.len() as f64 / s / 1e6;
    println!("{:.1} {:.1} {:.1}", mbps(found), mbps(masks), mbps(bytes));
}

/// The hit path of the window costing alone, over every window of the file's o200k scan:
/// milliseconds per pass with the vector path (where the processor has it) and one piece at a
/// time, and of the whole estimate.
fn bench_hits(path: &str) {
    let data = std::fs::read(path).expect("bench file");
    let models = [estimate::model(Encoding::O200k).expect("fitted")];
    let mut windows = Vec::new();
    scan::scan_steps(&data, Dialect::O200k, |step| {
        if let scan::Step::Window(s) = step {
            let mut pad = [0u8; window_cost::SPAN];
            windows.push((s.starts, *window_cost::span_at(&data, s.at, &mut pad)));
        }
    });
    let hits = |f: fn(u64, &[u8; window_cost::SPAN], &[estimate::Model; 1]) -> [u64; 1]| {
        best_pass(1.0, || {
            windows
                .iter()
                .map(|(starts, span)| f(*starts, span, &models)[0].count_ones() as usize)
                .sum()
        })
    };
    let (fast, one_by_one) = (
        hits(window_hits::window_hits),
        hits(window_hits::scalar_hits),
    );
    let all = best_pass(1.0, || {
        estimate::estimate_tokens(&data, Encoding::O200k) as usize
    });
    println!(
        "{} windows: hits {:.2} ms, one piece at a time {:.2} ms; whole estimate {:.2} ms",
        windows.len(),
        fast * 1e3,
        one_by_one * 1e3,
        all * 1e3
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let a = |i: usize| args.get(i).map_or("", String::as_str);
    match a(1) {
        "layout" => layout(),
        "dump" => dump(a(2), a(3)),
        "filter" => filter(a(2), a(3)),
        "prefixes" => prefixes(a(2), a(3)),
        "estimate" => estimate_docs(a(2)),
        "bench" => bench(a(2), a(3), a(4).parse().unwrap_or(1.0)),
        "bench-hits" => bench_hits(a(2)),
        "bench-scan" => bench_scan(a(2), a(3).parse().unwrap_or(1.0)),
        _ => {
            eprintln!(
                "usage: fit_helper layout | dump ENC DOCS | filter ENC TOKENS | prefixes ENC TOKENS | estimate DOCS | bench FILE ENC [S] | bench-scan FILE [S] | bench-hits FILE"
            );
            std::process::exit(2);
        }
    }
}
