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

//!
//! [`reserve_huge`] asks the kernel to back the large buffers the runtime owns (an out-of-core
//! array's in-core data and its block buffer) with transparent huge pages. On a virtual machine
//! every TLB miss is a two-level page walk, and the page-table entries it reads are evicted from
//! the shared caches whenever the node waits: a wall-clock run emulating a slow CPU waits
//! `1/c − 1` times each compute region's length after it. The rna fixture's tiles read 4,000
//! rows of 256 bytes, one 4 KiB page each; alone at CPU power 0.25 its compute regions took
//! 0.38 s in 20 iterations where at 0.5 they took 0.20 s (the same work), and two-rank runs at
//! 4,000 + 4,000 rows on `dc-2` varied from 0.049 to 0.085 s per iteration between processes.
//! With huge pages the same runs took 0.046 to 0.062 s. `MHETA_MALLOC=system` leaves the pages
//! alone too.

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

/// Buffers of at least this many bytes are offered to transparent huge pages
/// ([`reserve_huge`]).
pub const HUGE_PAGE_MIN: usize = 4 << 20;

/// The size of a transparent huge page on x86-64 and (with 4 KiB base pages) AArch64.
const HUGE_PAGE: usize = 2 << 20;

/// Make `v` hold room for `len` elements. When that room is a new allocation of at least
/// [`HUGE_PAGE_MIN`] bytes, first ask the kernel to back its huge-page-aligned interior with
/// transparent huge pages (`madvise(MADV_HUGEPAGE)`, which works only on pages not yet touched),
/// unless `MHETA_MALLOC=system`. Where the kernel offers none the advice is ignored.
pub(crate) fn reserve_huge<T>(v: &mut Vec<T>, len: usize) {
    if v.capacity() >= len {
        return;
    }
    v.reserve_exact(len - v.len());
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < HUGE_PAGE_MIN || !huge_pages_wanted() {
        return;
    }
    if let Some((start, length)) = huge_interior(v.as_ptr() as usize, bytes) {
        advise_huge(start, length);
    }
}

/// The part of `[start, start + bytes)` that whole huge pages cover: `(first byte, length)`.
fn huge_interior(start: usize, bytes: usize) -> Option<(usize, usize)> {
    let first = start.checked_add(HUGE_PAGE - 1)? & !(HUGE_PAGE - 1);
    let end = start.checked_add(bytes)? & !(HUGE_PAGE - 1);
    (end > first).then(|| (first, end - first))
}

fn huge_pages_wanted() -> bool {
    static WANTED: OnceLock<bool> = OnceLock::new();
    *WANTED.get_or_init(|| std::env::var_os(ENV).map_or(true, |v| v != "system"))
}

#[cfg(target_os = "linux")]
fn advise_huge(start: usize, length: usize) {
    // SAFETY: the range lies inside a live allocation of the caller's vector; MADV_HUGEPAGE only
    // changes how the kernel backs it, never its contents. A refusal (no THP support) is ignored.
    unsafe { libc::madvise(start as *mut libc::c_void, length, libc::MADV_HUGEPAGE) };
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_start: usize, _length: usize) {}

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

    #[test]
    fn only_whole_huge_pages_inside_the_buffer_are_advised() {
        const MIB: usize = 1 << 20;
        assert_eq!(huge_interior(0, 4 * MIB), Some((0, 4 * MIB)));
        // Starting 4 KiB in: the first whole page starts at 2 MiB, the last ends at 4 MiB.
        assert_eq!(huge_interior(4096, 5 * MIB), Some((2 * MIB, 2 * MIB)));
        assert_eq!(huge_interior(4096, 4 * MIB), Some((2 * MIB, 2 * MIB)));
        assert_eq!(huge_interior(4096, 4 * MIB - 8192), None);
        assert_eq!(huge_interior(usize::MAX - MIB, 4 * MIB), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_large_buffer_is_offered_to_huge_pages() {
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
        if std::env::var_os(ENV).is_some() || !thp.is_ok_and(|t| !t.contains("[never]")) {
            return; // No transparent huge pages here, or the test runs opted out.
        }
        let mut v: Vec<u64> = Vec::new();
        reserve_huge(&mut v, (16 * 1024 * 1024) / 8);
        v.resize(v.capacity(), 7);
        let address = v.as_ptr() as usize + 4 * 1024 * 1024;
        // The mapping holding the buffer's interior says it may have huge pages.
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        let mut eligible = None;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((a, b)) = range.split_once('-') {
                    if let (Ok(a), Ok(b)) =
                        (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                    {
                        inside = (a..b).contains(&address);
                        continue;
                    }
                }
            }
            if inside && line.starts_with("THPeligible:") {
                eligible = Some(line.split_whitespace().nth(1) == Some("1"));
            }
        }
        assert_eq!(
            eligible,
            Some(true),
            "the buffer's mapping is not eligible for huge pages"
        );
        assert!(v.iter().all(|&x| x == 7));
    }
}
