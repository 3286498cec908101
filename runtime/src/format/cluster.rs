//! The cluster description, `cluster.toml` (DESIGN §5). Field names are a contract:
//!
//! ```toml
//! [network]
//! latency = "50us"          # one-way, per message
//! bandwidth = "1GB/s"
//! [[node]]                  # one table per node kind, in rank order
//! count = 2                 # optional, default 1
//! cpu = 0.5                 # relative CPU power: 1.0 = this machine
//! memory = "48MiB"          # memory available to the program's distributed data
//! disk_read = "200MB/s"
//! disk_write = "150MB/s"
//! disk_latency = "2ms"      # per read/write call
//! ```
//!
//! In memory (and inside the JSON files) the description is expanded: one `NodeSpec` per rank,
//! quantities in SI base units (seconds, bytes, bytes per second).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterSpec {
    pub network: NetworkSpec,
    /// One entry per rank, in rank order.
    pub nodes: Vec<NodeSpec>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NetworkSpec {
    /// One-way latency per message, seconds.
    pub latency_s: f64,
    /// Bytes per second.
    pub bandwidth_bps: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NodeSpec {
    /// Relative CPU power: 1.0 = this machine, 0.5 = half as fast.
    pub cpu: f64,
    /// Memory available to the program's distributed data, bytes.
    pub memory_bytes: u64,
    /// Disk read bandwidth, bytes per second.
    pub disk_read_bps: f64,
    /// Disk write bandwidth, bytes per second.
    pub disk_write_bps: f64,
    /// Per read/write call, seconds.
    pub disk_latency_s: f64,
}
