//! The cluster description and its emulation (DESIGN §5, seed §6.1).
//!
//! `cluster.toml` describes the network and, in rank order, each kind of node: relative CPU
//! power, memory available to distributed data, disk bandwidths and per-call disk latency. It
//! is parsed into the shared format type [`ClusterSpec`] (one [`NodeSpec`] per rank, SI base
//! units) by [`ClusterSpec::from_toml_str`] / [`ClusterSpec::load`]. When no file is given, the
//! cluster is [`ClusterSpec::this_machine`]: P copies of this machine with unbounded memory and
//! an unthrottled disk and network.
//!
//! [`DiskModel`] is the emulated disk of one node: the out-of-core arrays charge the difference
//! between its cost and the real I/O time to the rank's clock.

mod disk;
mod parse;
pub mod units;

use std::path::{Path, PathBuf};

pub use disk::DiskModel;
pub use parse::MAX_COUNT;

use crate::format::{ClusterSpec, NetworkSpec, NodeSpec};

/// A problem with a cluster description. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("cannot read cluster file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{}:{line}:{column}: {}{message}",
        path.display(),
        field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default()
    )]
    Invalid {
        path: PathBuf,
        /// 1-based line of the offending text.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// The field concerned (`node.memory`, `network.latency`, …), when one is.
        field: Option<String>,
        message: String,
    },
}

/// Bandwidth that stands for "not throttled" (`f64::MAX` rather than infinity, so that the
/// cluster can be written to JSON).
pub const UNTHROTTLED_BPS: f64 = f64::MAX;

impl ClusterSpec {
    /// Parse the text of a `cluster.toml`; `path` is used to name the file in errors.
    pub fn from_toml_str(text: &str, path: &Path) -> Result<ClusterSpec, ClusterError> {
        parse::parse_cluster(text, path)
    }

    /// Read and parse a `cluster.toml`.
    pub fn load(path: &Path) -> Result<ClusterSpec, ClusterError> {
        let text = std::fs::read_to_string(path).map_err(|source| ClusterError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_toml_str(&text, path)
    }

    /// Checks an expanded description (as the JSON files carry it) against the rules
    /// `cluster.toml` is parsed by: a positive finite CPU power, at least one byte of memory,
    /// positive disk and network rates, latencies not negative, at least one node. The error
    /// is the field and what is wrong with it: (`nodes[1].cpu`, `is 0, expected a positive
    /// number`).
    pub fn check(&self) -> Result<(), (String, String)> {
        if self.nodes.is_empty() {
            return Err((
                "nodes".into(),
                "is empty, expected at least one node".into(),
            ));
        }
        let positive = |field: String, x: f64| {
            if x.is_finite() && x > 0.0 || x == UNTHROTTLED_BPS {
                Ok(())
            } else {
                Err((field, format!("is {x}, expected a positive number")))
            }
        };
        let not_negative = |field: String, x: f64| {
            if x.is_finite() && x >= 0.0 {
                Ok(())
            } else {
                Err((
                    field,
                    format!("is {x}, expected a number of seconds, 0 or more"),
                ))
            }
        };
        positive("network.bandwidth_bps".into(), self.network.bandwidth_bps)?;
        not_negative("network.latency_s".into(), self.network.latency_s)?;
        for (i, n) in self.nodes.iter().enumerate() {
            positive(format!("nodes[{i}].cpu"), n.cpu)?;
            if n.memory_bytes == 0 {
                return Err((
                    format!("nodes[{i}].memory_bytes"),
                    "is 0, expected at least one byte".into(),
                ));
            }
            positive(format!("nodes[{i}].disk_read_bps"), n.disk_read_bps)?;
            positive(format!("nodes[{i}].disk_write_bps"), n.disk_write_bps)?;
            not_negative(format!("nodes[{i}].disk_latency_s"), n.disk_latency_s)?;
        }
        Ok(())
    }

    /// The cluster used when no `--cluster` is given: `ranks` identical nodes that are this
    /// machine (CPU power 1.0), with unbounded memory and no emulated disk or network cost.
    pub fn this_machine(ranks: usize) -> ClusterSpec {
        let node = NodeSpec {
            cpu: 1.0,
            memory_bytes: u64::MAX,
            disk_read_bps: UNTHROTTLED_BPS,
            disk_write_bps: UNTHROTTLED_BPS,
            disk_latency_s: 0.0,
        };
        ClusterSpec {
            network: NetworkSpec {
                latency_s: 0.0,
                bandwidth_bps: UNTHROTTLED_BPS,
            },
            nodes: vec![node; ranks],
        }
    }
}

/// Bytes of memory this process may use: the machine's physical memory, or less when an
/// address-space or data-segment limit (`ulimit -v`, `ulimit -d`) is set. `None` when the
/// system does not say. Allocations above it cannot succeed, or succeed only to be killed by the
/// kernel when touched, so sizes are checked against it before allocating.
pub fn machine_memory() -> Option<u64> {
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
