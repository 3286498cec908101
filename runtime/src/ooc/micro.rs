//! I/O microbenchmarks (seed §5.2): per-call overheads O_r, O_w, the extra cost O_A of an
//! asynchronous read, and per-byte read and write times r, w of this node's (emulated) disk.
//!
//! For each block size the benchmark writes and reads one block `repetitions` times through a
//! real [`OocArray`] (so emulation, atomic writes and checksums are all included) and keeps the
//! median time. A least-squares line `t(b) = O + b · per_byte` through the medians gives the
//! overhead (intercept) and per-byte time (slope), both clamped at zero.
//!
//! O_A is what the computing thread pays for a prefetch that overlaps perfectly: the median
//! time to issue it plus the median time of a `wait` entered after the read (real and
//! emulated) has completed.

use std::path::Path;

use super::array::OocArray;
use super::policy::Placement;
use super::store::{ArraySpec, NodeStore, StoreConfig};
use super::OocError;
use crate::clock;
use crate::cluster::DiskModel;
use crate::format::NodeMeasurements;
use crate::stats::median;

/// Block sizes and repetitions of the disk microbenchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskBenchConfig {
    /// Block sizes in bytes; at least two different ones.
    pub sizes: Vec<u64>,
    /// Timed repetitions per size (the median is kept).
    pub repetitions: usize,
}

impl Default for DiskBenchConfig {
    fn default() -> Self {
        DiskBenchConfig {
            sizes: vec![4 << 10, 64 << 10, 256 << 10],
            repetitions: 5,
        }
    }
}

/// The disk costs of one node, in the measurement file's terms.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DiskCosts {
    /// O_r, seconds per read call.
    pub read_overhead_s: f64,
    /// O_w, seconds per write call.
    pub write_overhead_s: f64,
    /// O_A, seconds of extra cost per asynchronous read.
    pub async_overhead_s: f64,
    /// r, seconds per byte read.
    pub read_per_byte_s: f64,
    /// w, seconds per byte written.
    pub write_per_byte_s: f64,
}

impl DiskCosts {
    /// Store the costs in a node's measurements.
    pub fn store_in(&self, node: &mut NodeMeasurements) {
        node.read_overhead_s = self.read_overhead_s;
        node.write_overhead_s = self.write_overhead_s;
        node.async_overhead_s = self.async_overhead_s;
        node.read_per_byte_s = self.read_per_byte_s;
        node.write_per_byte_s = self.write_per_byte_s;
    }
}

/// Measure the disk costs of the disk under `dir` as emulated by `disk`. Works in a scratch
/// subdirectory of `dir`, removed afterwards. Times are on the rank's clock.
pub fn measure_disk(
    dir: &Path,
    disk: DiskModel,
    config: &DiskBenchConfig,
) -> Result<DiskCosts, OocError> {
    let scratch = dir.join(".mheta-diskbench");
    let store = NodeStore::open(StoreConfig {
        dir: scratch.clone(),
        memory_bytes: u64::MAX,
        disk,
        instrumented: false,
        force_out_of_core: false,
    })?;
    let result = run(&store, config);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn run(store: &NodeStore, config: &DiskBenchConfig) -> Result<DiskCosts, OocError> {
    let reps = config.repetitions.max(1);
    let mut reads = Vec::new();
    let mut writes = Vec::new();
    let mut issues = Vec::new();
    let mut waits = Vec::new();
    for (k, &size) in config.sizes.iter().enumerate() {
        let spec = ArraySpec {
            record: false,
            ..ArraySpec::new(format!("bench{k}"), 2, size as usize)
        }
        .with_placement(Placement::OutOfCore { icla_rows: 1 });
        let mut array = OocArray::<u8>::new(store, spec)?;
        let block = vec![0x5au8; size as usize];
        array.write_block(0, &block)?;
        array.write_block(1, &block)?;
        let (mut read_t, mut write_t) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            let begin = clock::now();
            array.write_block(0, &block)?;
            write_t.push(clock::now() - begin);
            let begin = clock::now();
            array.read_block(0)?;
            read_t.push(clock::now() - begin);

            let begin = clock::now();
            array.prefetch_block(1)?;
            issues.push(clock::now() - begin);
            let done_at = loop {
                if let Some(done_at) = array.prefetch_done_at() {
                    break done_at;
                }
                std::thread::yield_now();
            };
            // Let the emulated read complete, as overlapped computation would.
            clock::charge(done_at - clock::now());
            let begin = clock::now();
            array.wait()?;
            waits.push(clock::now() - begin);
        }
        reads.push((size as f64, median(&mut read_t)));
        writes.push((size as f64, median(&mut write_t)));
    }
    let (read_overhead_s, read_per_byte_s) = fit(&reads);
    let (write_overhead_s, write_per_byte_s) = fit(&writes);
    Ok(DiskCosts {
        read_overhead_s,
        write_overhead_s,
        async_overhead_s: median(&mut issues) + median(&mut waits),
        read_per_byte_s,
        write_per_byte_s,
    })
}

/// Least-squares `(intercept, slope)` of `points`, each clamped at zero. With a single size
/// the slope is `t / b` and the intercept zero.
fn fit(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    if points.is_empty() {
        return (0.0, 0.0);
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let var_x: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    if var_x == 0.0 {
        return (
            0.0,
            if mean_x > 0.0 {
                (mean_y / mean_x).max(0.0)
            } else {
                0.0
            },
        );
    }
    let cov: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let slope = (cov / var_x).max(0.0);
    let intercept = (mean_y - slope * mean_x).max(0.0);
    (intercept, slope)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_recovers_a_line() {
        // t = 2 ms + b / 100 MB/s.
        let points: Vec<_> = [1e3, 1e5, 1e6]
            .iter()
            .map(|&b| (b, 2e-3 + b * 1e-8))
            .collect();
        let (o, r) = fit(&points);
        assert!((o - 2e-3).abs() < 1e-12, "{o}");
        assert!((r - 1e-8).abs() < 1e-18, "{r}");
    }

    #[test]
    fn fit_clamps_and_handles_one_size() {
        assert_eq!(fit(&[]), (0.0, 0.0));
        assert_eq!(fit(&[(100.0, 1.0)]), (0.0, 0.01));
        // A decreasing line would mean a negative per-byte time: clamped.
        let (o, r) = fit(&[(1.0, 2.0), (2.0, 1.0)]);
        assert_eq!(r, 0.0);
        assert_eq!(o, 1.5);
    }
}
