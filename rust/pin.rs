//! Keeping each thread of the estimator's pool on a processor of its own.
//!
//! A parallel estimate wakes the pool's threads, the first from the caller's processor, the
//! second from the first's. On the 2-core virtual machines here the kernel often queued the
//! second behind the first on the same processor, for a millisecond or more, although the
//! other processor was idle (a virtual processor the hypervisor has parked may not count as
//! idle to it): after a pause, the second thread mostly never ran before the first had done
//! every part, and a parallel estimate of a few milliseconds took longer than one on a single
//! thread. A thread pinned to a processor of its own runs there as soon as it wakes.
//!
//! Threads are pinned only where the pool has one for each processor it may run on (the
//! affinity mask of the thread that builds it: `taskset`, a container's cpuset): thread `i` to
//! the `i`-th of them. A smaller pool (`RAYON_NUM_THREADS`, a container's CPU quota seen by
//! [`std::thread::available_parallelism`]) is left to the kernel: pinned, every process
//! configured alike would crowd the first processors. `CTXBUDGET_NO_PIN` in the environment
//! (any value) leaves the threads to the kernel too. Linux only; elsewhere nothing is pinned.

/// The processors this thread may run on, in order; empty where that is not known.
#[cfg(target_os = "linux")]
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is a plain bit set the call fills; its size is passed with it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect()
    }
}

/// The processors this thread may run on: not known here.
#[cfg(not(target_os = "linux"))]
fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}

/// Pins the calling thread to `cpu`; best effort (a failure leaves it where it may run).
#[cfg(target_os = "linux")]
pub(crate) fn pin_to(cpu: usize) {
    // SAFETY: as in `allowed_cpus`; `cpu` is one of its processors, below `CPU_SETSIZE`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw const set);
    }
}

/// Pins nothing where processors are not known.
#[cfg(not(target_os = "linux"))]
pub(crate) fn pin_to(_cpu: usize) {}

/// The processors to pin a pool of `threads` threads to, thread `i` to the `i`-th: the ones
/// this thread may run on when there are exactly as many and pinning is not turned off
/// (`CTXBUDGET_NO_PIN`); else none.
pub(crate) fn plan(threads: usize) -> Vec<usize> {
    if std::env::var_os("CTXBUDGET_NO_PIN").is_some() {
        return Vec::new();
    }
    let cpus = allowed_cpus();
    if cpus.len() == threads {
        cpus
    } else {
        Vec::new()
    }
}
