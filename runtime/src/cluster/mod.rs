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
