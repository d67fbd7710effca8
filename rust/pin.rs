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
//! Thread `i` is pinned to the `i`-th processor the process may run on when the pool is built
//! (its affinity mask: `taskset`, a container's cpuset). `CTXBUDGET_NO_PIN` in the environment
//! (any value) leaves the threads to the kernel. Linux only; elsewhere nothing is pinned.

/// The processors this thread may run on, in order; empty where that is not known.
#[cfg(target_os = "linux")]
pub(crate) fn allowed_cpus() -> Vec<usize> {
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
pub(crate) fn allowed_cpus() -> Vec<usize> {
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

/// What the pool's thread `index` should be pinned to: a processor of `cpus` of its own while
/// there are as many, none when pinning is turned off (`CTXBUDGET_NO_PIN`) or `cpus` is empty.
pub(crate) fn cpu_for(index: usize, cpus: &[usize]) -> Option<usize> {
    if std::env::var_os("CTXBUDGET_NO_PIN").is_some() || cpus.is_empty() {
        return None;
    }
    Some(cpus[index % cpus.len()])
}
