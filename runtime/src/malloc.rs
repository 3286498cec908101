//! Pinning the C allocator's thresholds, so that what one run of a program measures is what
//! every run of it does.
//!
//! glibc's malloc moves two thresholds as a program runs: a freed block that had been mapped
//! raises the size above which blocks are mapped (`M_MMAP_THRESHOLD`), and with it the free
//! space at the top of a heap above which that space goes back to the system
//! (`M_TRIM_THRESHOLD`). Where they end up depends on the order of earlier allocations — the
//! runtime's own buffers among them, whose sizes follow the iteration count and whether the run
//! is instrumented. An iterative solver that allocates and frees a block of some megabytes every
//! iteration then either reuses the same pages or hands them back and faults them in again, one
//! page at a time, in every iteration. Jacobi with prefetching on 400 + 1,600 rows makes 62,875
//! page faults in 18 iterations and 31,647 in 31 (each 12.8 MB copy faulted again, or not), and
//! a short instrumented sample then measures a rank at three times the computation of the
//! longer uninstrumented runs it is meant to predict.
//!
//! The same happens across a thread's heaps: the ranks of the threads backend allocate from
//! per-thread arenas, each a chain of heaps of at most 64 MiB, and a heap that becomes empty is
//! unmapped whatever the trim threshold. Five live blocks of 12.8 MB, one of them replaced every
//! iteration, then fault 3,125 pages in every other iteration.
//!
//! [`pin`] fixes this at the start of a run: blocks of [`MMAP_THRESHOLD`] bytes or more are
//! always mapped (and so faulted in at every allocation, in every run alike), smaller ones always
//! come from a heap, heaps are not trimmed, and no heap is unmapped ([`TOP_PAD`]). A process whose environment sets the allocator
//! itself (`GLIBC_TUNABLES` with a `glibc.malloc.` tunable, or a `MALLOC_*_` variable) keeps
//! its settings, as does one run with `MHETA_MALLOC=system`. Other allocators and C libraries
//! are left alone.

use std::sync::OnceLock;

/// Blocks at least this large are mapped, smaller ones come from a heap: glibc's largest
/// threshold on 64-bit systems (half its per-thread heap size).
pub const MMAP_THRESHOLD: usize = 32 << 20;

/// Padding every heap keeps at its top: a thread's heap (glibc's per-thread arenas are heaps of
/// at most 64 MiB) that has become empty is unmapped unless the heap before it lacks this much
/// room, so with a whole heap's size as padding none is unmapped. The padding is address space,
/// not memory: its pages are not touched until used.
pub const TOP_PAD: usize = 64 << 20;

/// The variable that opts out (`MHETA_MALLOC=system`).
pub const ENV: &str = "MHETA_MALLOC";

/// What [`pin`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pinned {
    /// The thresholds are fixed.
    Yes,
    /// The environment configures the allocator (or says `MHETA_MALLOC=system`).
    LeftToEnvironment,
    /// Not glibc: nothing to do.
    NotGlibc,
    /// glibc refused a setting.
    Refused,
}

/// Fixes the allocator's thresholds once per process (see the module documentation); later
/// calls return the first call's answer.
pub fn pin() -> Pinned {
    static RESULT: OnceLock<Pinned> = OnceLock::new();
    *RESULT.get_or_init(|| decide(|name| std::env::var_os(name)))
}

fn decide(get: impl Fn(&str) -> Option<std::ffi::OsString>) -> Pinned {
    if environment_configures(&get) {
        return Pinned::LeftToEnvironment;
    }
    apply()
}

/// Whether the environment sets the allocator itself, or opts out.
fn environment_configures(get: &impl Fn(&str) -> Option<std::ffi::OsString>) -> bool {
    const GLIBC_VARIABLES: [&str; 6] = [
        "MALLOC_TRIM_THRESHOLD_",
        "MALLOC_MMAP_THRESHOLD_",
        "MALLOC_TOP_PAD_",
        "MALLOC_MMAP_MAX_",
        "MALLOC_ARENA_MAX",
        "MALLOC_ARENA_TEST",
    ];
    if get(ENV).is_some_and(|v| v == "system") {
        return true;
    }
    if get("GLIBC_TUNABLES").is_some_and(|v| v.to_string_lossy().contains("glibc.malloc.")) {
        return true;
    }
    GLIBC_VARIABLES.iter().any(|name| get(name).is_some())
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn apply() -> Pinned {
    // SAFETY: `mallopt` only sets allocator parameters; it is safe to call at any time.
    // -1 disables trimming (mallopt(3)).
    let mmap = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) };
    let trim = unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, -1) };
    let pad = unsafe { libc::mallopt(libc::M_TOP_PAD, TOP_PAD as libc::c_int) };
    if mmap == 1 && trim == 1 && pad == 1 {
        Pinned::Yes
    } else {
        Pinned::Refused
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn apply() -> Pinned {
    Pinned::NotGlibc
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn configures(vars: &[(&str, &str)]) -> bool {
        environment_configures(&|name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn the_environment_keeps_its_own_allocator_settings() {
        assert!(!configures(&[]));
        assert!(!configures(&[("GLIBC_TUNABLES", "glibc.pthread.rseq=0")]));
        assert!(!configures(&[("MHETA_MALLOC", "pinned")]));
        assert!(configures(&[("MHETA_MALLOC", "system")]));
        assert!(configures(&[(
            "GLIBC_TUNABLES",
            "glibc.pthread.rseq=0:glibc.malloc.trim_threshold=1"
        )]));
        assert!(configures(&[("MALLOC_TRIM_THRESHOLD_", "0")]));
        assert!(configures(&[("MALLOC_ARENA_MAX", "2")]));
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn a_block_copied_every_iteration_is_not_faulted_in_again() {
        // The pattern of the module documentation, as the Jacobi fixture with prefetching has
        // it: every iteration copies a 12.8 MB block into a new vector (the previous one freed
        // once replaced), relaxes it into a kept output vector, collects that in a kept
        // pending vector, and appends to a log that grows a little (the runtime's records).
        // Unpinned, glibc hands the copy's pages back in every other iteration here (31,260
        // faults in 20 iterations of the second and third thread, measured without `pin`).
        if std::env::var_os("GLIBC_TUNABLES").is_some() || std::env::var_os(ENV).is_some() {
            return;
        }
        assert_eq!(pin(), Pinned::Yes);
        fn faults() -> i64 {
            // SAFETY: getrusage only writes into the struct it is given.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
            usage.ru_minflt
        }
        let workload = || {
            let source = vec![1.0f64; 1_600_000];
            let (mut current, mut out, mut pending) = (Vec::new(), Vec::new(), Vec::new());
            let mut log: Vec<u64> = Vec::new();
            let mut steady = 0;
            for iteration in 0..24 {
                let before = faults();
                current = source.to_vec();
                out.resize(current.len(), 0.0);
                for (o, c) in out.iter_mut().zip(&current) {
                    *o = c * 0.5;
                }
                pending.extend_from_slice(&out);
                pending.clear();
                log.extend(std::iter::repeat(iteration).take(1000));
                if iteration >= 4 {
                    steady += faults() - before;
                }
            }
            std::hint::black_box((&current, &log));
            steady
        };
        // Three ranks one after another, as a process's threads reuse each other's arenas.
        let faults: Vec<i64> = (0..3)
            .map(|_| std::thread::spawn(workload).join().unwrap())
            .collect();
        // One 12.8 MB copy faulted in again is 3,125 faults of 4 KiB pages.
        assert!(
            faults.iter().sum::<i64>() < 3_125,
            "page faults in the 20 steady iterations of each of three threads: {faults:?}"
        );
    }
}
