//! Estimating many texts at once, in parallel across cores when the batch is large.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, TryLockError};

use rayon::ThreadPool;

use crate::estimate::{Encoding, Estimator};
use crate::pin;
use crate::units::{Surrogate, Text};

/// Batches with fewer bytes than this run on the calling thread: spreading them costs more
/// than it saves.
pub const PARALLEL_THRESHOLD: usize = 256 * 1024;

/// The estimate of every text, in order; in parallel (this process's `pool`) when the batch holds
/// at least [`PARALLEL_THRESHOLD`] bytes and more than one text.
///
/// # Errors
///
/// The index of the first text (in order) that has no UTF-8 form, with the unit position.
pub fn estimate_batch(
    texts: &[Text<'_>],
    encoding: Encoding,
) -> Result<Vec<u64>, (usize, Surrogate)> {
    let total: usize = texts.iter().map(Text::size).sum();
    // The texts of a batch share the memo of split costs (a conversation repeats its words
    // from message to message); each is counted and rounded on its own.
    let one = |est: &mut Estimator, (i, t): (usize, &Text<'_>)| {
        let fed = t.feed(est).map_err(|e| (i, e));
        let tokens = est.take_tokens();
        fed.map(|()| tokens)
    };
    let parallel = texts.len() > 1 && total >= PARALLEL_THRESHOLD;
    let Some(pool) = parallel.then(pool).flatten() else {
        let mut est = Estimator::for_bytes(encoding, total);
        return texts
            .iter()
            .enumerate()
            .map(|item| one(&mut est, item))
            .collect();
    };
    // Runs of consecutive texts, each thread taking the next run as it finishes one, with one
    // estimator (and one memo) for all the runs it takes: a memo per scheduled job would be
    // set up anew, and start cold, every few texts.
    let threads = pool.current_num_threads();
    let runs = runs_of(texts, threads * RUNS_PER_THREAD);
    let new = || Estimator::for_bytes(encoding, total / threads);
    let (done, _) = on_threads(&pool, runs.len(), new, |r, est| {
        runs[r]
            .clone()
            .map(|i| one(est, (i, &texts[i])))
            .collect::<Result<Vec<u64>, _>>()
    });
    // In order, so that the error is the first text's that has one.
    let mut counts = Vec::with_capacity(texts.len());
    for run in done {
        counts.extend(run?);
    }
    Ok(counts)
}

/// What one thread of [`on_threads`] did: its jobs' results, by job, and its estimator.
type ThreadDone<R> = (Vec<(usize, R)>, Estimator);

/// `work(job, estimator)` for each job below `jobs` on the threads of `pool`: each thread
/// takes the next job as it finishes one (uneven jobs even out), with one estimator made by
/// `new` for all the jobs it takes, so that its memo of split costs serves them all. The
/// results in job order, and the threads' estimators (what `work` added to them).
fn on_threads<R: Send>(
    pool: &ThreadPool,
    jobs: usize,
    new: impl Fn() -> Estimator + Sync,
    work: impl Fn(usize, &mut Estimator) -> R + Sync,
) -> (Vec<R>, Vec<Estimator>) {
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<ThreadDone<R>>> = Mutex::new(Vec::new());
    pool.scope(|scope| {
        for _ in 0..pool.current_num_threads().min(jobs) {
            scope.spawn(|_| {
                let mut est = new();
                let mut mine = Vec::new();
                loop {
                    let job = next.fetch_add(1, Ordering::Relaxed);
                    if job >= jobs {
                        break;
                    }
                    mine.push((job, work(job, &mut est)));
                }
                done.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((mine, est));
            });
        }
    });
    let done = done.into_inner().unwrap_or_else(PoisonError::into_inner);
    let mut results: Vec<(usize, R)> = Vec::with_capacity(jobs);
    let mut estimators = Vec::with_capacity(done.len());
    for (mine, est) in done {
        results.extend(mine);
        estimators.push(est);
    }
    results.sort_unstable_by_key(|&(job, _)| job);
    (results.into_iter().map(|(_, r)| r).collect(), estimators)
}

/// Runs of consecutive texts a parallel batch is cut into, per thread (uneven runs even out).
const RUNS_PER_THREAD: usize = 2;

/// `texts` cut into at most `n` ranges of consecutive indices, of about equal bytes.
fn runs_of(texts: &[Text<'_>], n: usize) -> Vec<std::ops::Range<usize>> {
    let total: usize = texts.iter().map(Text::size).sum();
    let share = total.div_ceil(n.max(1)).max(1);
    let mut runs = Vec::with_capacity(n);
    let (mut start, mut bytes) = (0, 0);
    for (i, t) in texts.iter().enumerate() {
        bytes += t.size();
        if bytes >= share {
            runs.push(start..i + 1);
            (start, bytes) = (i + 1, 0);
        }
    }
    if start < texts.len() {
        let full = runs.len() >= n;
        match runs.last_mut() {
            // Only empty texts are left past `n` runs of the share.
            Some(last) if full => last.end = texts.len(),
            _ => runs.push(start..texts.len()),
        }
    }
    runs
}

/// The thread pool parallel estimates run on, built by this process.
///
/// A child made by `fork()` inherits a pool without its threads: work sent to it would wait
/// forever (`multiprocessing` with `fork`, gunicorn `--preload`, Celery prefork). So the pool
/// is tagged with the id of the process that built it, and a process that finds another id
/// builds its own. `None` (run on the calling thread) when the pool is being set up by another
/// thread, or by a thread that did not survive a fork, or when no pool can be built.
fn pool() -> Option<Arc<ThreadPool>> {
    static POOL: Mutex<Option<(u32, Arc<ThreadPool>)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut slot = match POOL.try_lock() {
        Ok(slot) => slot,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(TryLockError::WouldBlock) => return None,
    };
    match slot.take() {
        Some((owner, pool)) if owner == pid => {
            *slot = Some((owner, Arc::clone(&pool)));
            return Some(pool);
        }
        // The parent's pool: its threads are not in this process, and dropping it would
        // signal them; leave it be.
        Some(inherited) => std::mem::forget(inherited),
        None => {}
    }
    let threads = pool_threads();
    let cpus = pin::plan(threads);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|index| format!("ctxbudget-{index}"))
        .start_handler(move |index| {
            if let Some(&cpu) = cpus.get(index) {
                pin::pin_to(cpu);
            }
        })
        .build()
        .ok()?;
    let pool = Arc::new(pool);
    *slot = Some((pid, Arc::clone(&pool)));
    Some(pool)
}

/// The pool's size as rayon would choose it: `RAYON_NUM_THREADS` when it is a positive
/// number, the processors this process may use when it is 0
/// ([`std::thread::available_parallelism`]); when it is not set (or not a number), the
/// deprecated `RAYON_RS_NUM_CPUS` when positive, else those processors.
fn pool_threads() -> usize {
    let number = |name: &str| std::env::var(name).ok()?.parse::<usize>().ok();
    let processors = || std::thread::available_parallelism().map_or(1, usize::from);
    match number("RAYON_NUM_THREADS") {
        Some(0) => processors(),
        Some(n) => n,
        None => number("RAYON_RS_NUM_CPUS")
            .filter(|&n| n > 0)
            .unwrap_or_else(processors),
    }
}

/// Texts smaller than this are estimated on the calling thread by [`estimate_parallel`].
pub const PARALLEL_TEXT_THRESHOLD: usize = 1024 * 1024;

/// Parts per thread of a text estimated in parallel (uneven parts even out).
const PARTS_PER_THREAD: usize = 4;

/// The estimate of one large text with its parts estimated in parallel (this process's `pool`):
/// the same number as [`Text::estimate`], since the parts are cut where every pre-tokenizer
/// starts a new piece ([`Text::split`]) and their table units are summed before rounding.
///
/// # Errors
///
/// [`Surrogate`] when the text has no UTF-8 form (some offending position, not necessarily
/// the first).
pub fn estimate_parallel(text: &Text<'_>, encoding: Encoding) -> Result<u64, Surrogate> {
    let large = text.size() >= PARALLEL_TEXT_THRESHOLD;
    let Some(pool) = large.then(pool).flatten() else {
        return text.estimate(encoding);
    };
    let parts = text.split(pool.current_num_threads() * PARTS_PER_THREAD);
    // Each thread adds the parts it takes to its own estimator (and memo).
    let (fed, estimates) = on_threads(
        &pool,
        parts.len(),
        || Estimator::new(encoding),
        |k, est| {
            let (offset, part) = &parts[k];
            part.feed(est)
                .map_err(|Surrogate(at)| Surrogate(offset + at))
        },
    );
    fed.into_iter().collect::<Result<(), Surrogate>>()?;
    let mut total = Estimator::new(encoding);
    for est in &estimates {
        total.merge(est);
    }
    Ok(total.tokens())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_matches_single_in_order() {
        let owned: Vec<String> = (0..200)
            .map(|i| format!("item {i}: some text, 日本語 {} ", "x".repeat(i * 37)))
            .collect();
        let big = "lorem ipsum dolor sit amet ".repeat(20_000);
        let mut texts: Vec<Text<'_>> = owned.iter().map(|s| Text::Utf8(s.as_bytes())).collect();
        texts.push(Text::Utf8(big.as_bytes()));
        for e in Encoding::ALL {
            let want: Vec<u64> = texts.iter().map(|t| t.estimate(e).unwrap_or(0)).collect();
            assert_eq!(estimate_batch(&texts, e), Ok(want));
            assert_eq!(estimate_batch(&texts[..3], e).map(|v| v.len()), Ok(3));
        }
        assert_eq!(estimate_batch(&[], Encoding::O200k), Ok(vec![]));
    }

    #[test]
    fn parallel_matches_sequential() {
        let parts = [
            "fn main() {\n    println!(\"{}\", 42);\n}\n",
            "2024-05-01 INFO request id=9f8e latency=12ms\n",
            "日本語のテキスト。中文文本。\n",
            "Привет мир, 🎉 ",
            "x\n/path/to\n  indented\n",
            // No piece starts before the `、`/`。`/vertical tab here (see `units::is_cut`).
            "\u{304b}\u{3099}\u{3001}\u{30fb}\u{3002}\n\u{b}\n",
        ];
        let mut s = String::new();
        let mut i = 0usize;
        while s.len() < 3 * PARALLEL_TEXT_THRESHOLD {
            s.push_str(parts[(i * 7 + i / 3) % parts.len()]);
            i += 1;
        }
        let u32s: Vec<u32> = s.chars().map(|c| c as u32).collect();
        let no_newline = "word ".repeat(PARALLEL_TEXT_THRESHOLD / 4);
        for e in Encoding::ALL {
            for t in [
                Text::Utf8(s.as_bytes()),
                Text::Ucs4(&u32s),
                Text::Utf8(no_newline.as_bytes()),
            ] {
                assert_eq!(estimate_parallel(&t, e), t.estimate(e), "{e:?}");
                assert!(t.split(8).len() <= 8);
            }
        }
        let parts = Text::Utf8(s.as_bytes()).split(8);
        assert_eq!(parts.len(), 8);
        assert_eq!(parts.iter().map(|(_, t)| t.units()).sum::<usize>(), s.len());
        let bad: Vec<u16> = (0..PARALLEL_TEXT_THRESHOLD)
            .map(|i| if i == 1000 { 0xD800 } else { 10 })
            .collect();
        assert_eq!(
            estimate_parallel(&Text::Ucs2(&bad), Encoding::O200k),
            Err(Surrogate(1000))
        );
    }

    #[test]
    fn first_bad_text_is_reported() {
        let bad = [0xD800u16];
        let texts = [Text::Utf8(b"ok"), Text::Ucs2(&bad)];
        assert_eq!(
            estimate_batch(&texts, Encoding::Cl100k),
            Err((1, Surrogate(0)))
        );
        // A batch large enough to go parallel: the first bad text in order, whichever run
        // finishes first.
        let good = "some words here ".repeat(4096);
        let bad_late = [0x41u16, 0x42, 0xDC00];
        let mut many: Vec<Text<'_>> = (0..40).map(|_| Text::Utf8(good.as_bytes())).collect();
        many[7] = Text::Ucs2(&bad);
        many[33] = Text::Ucs2(&bad_late);
        assert!(many.iter().map(Text::size).sum::<usize>() >= PARALLEL_THRESHOLD);
        assert_eq!(
            estimate_batch(&many, Encoding::O200k),
            Err((7, Surrogate(0)))
        );
        many[7] = Text::Utf8(b"fine");
        assert_eq!(
            estimate_batch(&many, Encoding::O200k),
            Err((33, Surrogate(2)))
        );
    }

    #[test]
    fn every_job_runs_once_and_results_come_in_job_order() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .expect("pool");
        let texts: Vec<String> = (0..25).map(|i| "word ".repeat(1 + i * 13)).collect();
        for jobs in [0, 1, 2, 25] {
            let (results, estimators) = on_threads(
                &pool,
                jobs,
                || Estimator::new(Encoding::Cl100k),
                |job, est| {
                    est.feed(texts[job].as_bytes());
                    job * 10
                },
            );
            assert_eq!(results, (0..jobs).map(|j| j * 10).collect::<Vec<_>>());
            // One estimator per thread that ran, holding what its jobs fed it.
            assert!(estimators.len() <= 3.min(jobs.max(1)));
            let mut total = Estimator::new(Encoding::Cl100k);
            for est in &estimators {
                total.merge(est);
            }
            let mut one = Estimator::new(Encoding::Cl100k);
            for t in &texts[..jobs] {
                one.feed(t.as_bytes());
            }
            assert_eq!(total.tokens(), one.tokens(), "{jobs} jobs");
        }
    }

    #[test]
    fn runs_cover_every_text_once_in_order() {
        let sizes = [0usize, 5, 1000, 3, 0, 70_000, 12, 12, 9000, 1, 0, 0];
        let owned: Vec<String> = sizes.iter().map(|&n| "a".repeat(n)).collect();
        let texts: Vec<Text<'_>> = owned.iter().map(|s| Text::Utf8(s.as_bytes())).collect();
        for n in 1..=12 {
            let runs = runs_of(&texts, n);
            assert!(runs.len() <= n, "{n}: {runs:?}");
            let flat: Vec<usize> = runs.iter().flat_map(Clone::clone).collect();
            assert_eq!(flat, (0..texts.len()).collect::<Vec<_>>(), "{n}");
            assert!(runs.iter().all(|r| !r.is_empty()));
        }
        assert!(runs_of(&[], 4).is_empty());
    }
}
