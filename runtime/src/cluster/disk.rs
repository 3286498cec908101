//! The emulated disk of one node (seed §6.1: "slower I/O by increasing the amount of data
//! accessed"; here by throttling).
//!
//! An emulated read of `b` bytes costs `disk_latency + b / disk_read` seconds (writes likewise).
//! After the real operation took `t` seconds, the caller charges the shortfall
//! `max(0, cost − t)` to the rank's clock (`crate::clock::charge`): in wall-clock mode the rank
//! waits it out, in virtual mode its clock advances. A disk faster than the emulated one is thus
//! slowed to it; a real disk slower than the emulated one is never sped up.

use crate::format::NodeSpec;

/// Per-call latency and bandwidths of a node's emulated disk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiskModel {
    /// Seconds added to every read or write call.
    pub latency_s: f64,
    /// Bytes per second read.
    pub read_bps: f64,
    /// Bytes per second written.
    pub write_bps: f64,
}

impl DiskModel {
    /// The disk a node spec describes.
    pub fn of(node: &NodeSpec) -> DiskModel {
        DiskModel {
            latency_s: node.disk_latency_s,
            read_bps: node.disk_read_bps,
            write_bps: node.disk_write_bps,
        }
    }

    /// A disk that adds nothing to the real one.
    pub fn unthrottled() -> DiskModel {
        DiskModel {
            latency_s: 0.0,
            read_bps: f64::INFINITY,
            write_bps: f64::INFINITY,
        }
    }

    /// Emulated seconds for one read call of `bytes`.
    pub fn read_seconds(&self, bytes: u64) -> f64 {
        self.latency_s + bytes as f64 / self.read_bps
    }

    /// Emulated seconds for one write call of `bytes`.
    pub fn write_seconds(&self, bytes: u64) -> f64 {
        self.latency_s + bytes as f64 / self.write_bps
    }

    /// The time still to charge when an operation whose emulated cost is `cost_s` really took
    /// `elapsed_s`.
    pub fn shortfall(cost_s: f64, elapsed_s: f64) -> f64 {
        (cost_s - elapsed_s).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_are_latency_plus_bytes_over_bandwidth() {
        let disk = DiskModel {
            latency_s: 2e-3,
            read_bps: 200e6,
            write_bps: 100e6,
        };
        // 1 MB at 200 MB/s = 5 ms, plus 2 ms latency.
        assert!((disk.read_seconds(1_000_000) - 7e-3).abs() < 1e-12);
        // 1 MB at 100 MB/s = 10 ms, plus 2 ms latency.
        assert!((disk.write_seconds(1_000_000) - 12e-3).abs() < 1e-12);
        assert_eq!(DiskModel::shortfall(7e-3, 3e-3), 4e-3);
        assert_eq!(DiskModel::shortfall(7e-3, 9e-3), 0.0);
    }

    #[test]
    fn unthrottled_and_this_machine_cost_nothing() {
        assert_eq!(DiskModel::unthrottled().read_seconds(1 << 30), 0.0);
        let node = crate::format::ClusterSpec::this_machine(1).nodes[0];
        assert!(DiskModel::of(&node).write_seconds(1 << 30) < 1e-200);
    }
}
