//! The cluster's emulation (DESIGN §5, seed §6.1).
//!
//! `cluster.toml` describes the network and, in rank order, each kind of node: relative CPU
//! power, memory available to distributed data, disk bandwidths and per-call disk latency. It
//! is parsed into the format type `ClusterSpec` (one `NodeSpec` per rank, SI base units) by
//! `ClusterSpec::from_toml_str` / `ClusterSpec::load` (crate `mheta-format`). When no file is
//! given, the cluster is `ClusterSpec::this_machine`: P copies of this machine with unbounded
//! memory and an unthrottled disk and network.
//!
//! [`DiskModel`] is the emulated disk of one node: the out-of-core arrays charge the difference
//! between its cost and the real I/O time to the rank's clock.

mod disk;

pub use disk::DiskModel;
/// Parsing `cluster.toml` belongs to the file formats (crate `mheta-format`); re-exported here,
/// where the runtime has always had it.
pub use mheta_format::cluster::{units, ClusterError, MAX_COUNT, UNTHROTTLED_BPS};

/// Bytes of memory this process may use: the machine's physical memory, or less when an
/// address-space or data-segment limit (`ulimit -v`, `ulimit -d`) is set. `None` when the
/// system does not say. Allocations above it cannot succeed, or succeed only to be killed by the
/// kernel when touched, so sizes are checked against it before allocating.
pub fn machine_memory() -> Option<u64> {
    machine_memory_limit()
}

/// The memory the machine could give a process now without swapping (`MemAvailable` in
/// `/proc/meminfo`), bytes; `None` where the kernel does not say.
pub fn machine_available_memory() -> Option<u64> {
    parse_mem_available(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let rest = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemAvailable:"))?;
    let mut words = rest.split_whitespace();
    let amount: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => amount.checked_mul(1024),
        _ => None,
    }
}

fn machine_memory_limit() -> Option<u64> {
    // SAFETY: sysconf and getrlimit only read system values; `limit` is a valid out-pointer.
    let physical = unsafe {
        let pages = libc::sysconf(libc::_SC_PHYS_PAGES);
        let page = libc::sysconf(libc::_SC_PAGESIZE);
        (pages > 0 && page > 0).then(|| (pages as u64).saturating_mul(page as u64))
    };
    let limit = |resource| {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: as above.
        let ok = unsafe { libc::getrlimit(resource, &mut limit) } == 0;
        (ok && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
    };
    [physical, limit(libc::RLIMIT_AS), limit(libc::RLIMIT_DATA)]
        .into_iter()
        .flatten()
        .min()
}

#[cfg(test)]
mod tests {
    use super::parse_mem_available;

    #[test]
    fn available_memory_is_read_from_meminfo() {
        let meminfo = "MemTotal:       24683640 kB\nMemFree:        21735000 kB\nMemAvailable:   24186748 kB\n";
        assert_eq!(parse_mem_available(meminfo), Some(24_186_748 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
        assert_eq!(parse_mem_available("MemAvailable: lots\n"), None);
        assert_eq!(parse_mem_available("MemAvailable: 5 MB\n"), None);
    }
}
