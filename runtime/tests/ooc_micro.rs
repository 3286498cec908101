//! The I/O microbenchmarks (seed §5.2) recover the emulated disk's costs.

use mheta_runtime::clock::{self, ClockMode};
use mheta_runtime::cluster::DiskModel;
use mheta_runtime::format::ClusterSpec;
use mheta_runtime::ooc::{measure_disk, DiskBenchConfig};

#[test]
fn microbenchmarks_recover_the_emulated_disk() {
    // On the charged clock only emulated costs advance time, so the fit must recover the emulated
    // disk exactly (wall-clock behaviour on a loaded machine belongs in benchmarks, not here).
    // 10 ms per call, 5 MB/s read (2e-7 s/B), 2.5 MB/s write (4e-7 s/B).
    clock::install(ClockMode::Charged, 1.0);
    let disk = DiskModel {
        latency_s: 10e-3,
        read_bps: 5e6,
        write_bps: 2.5e6,
    };
    let dir = tempfile::tempdir().unwrap();
    let config = DiskBenchConfig {
        sizes: vec![4 << 10, 64 << 10, 256 << 10],
        repetitions: 3,
    };
    let costs = measure_disk(dir.path(), disk, &config).unwrap();
    clock::uninstall();
    let within = |got: f64, want: f64, tolerance: f64| (got / want - 1.0).abs() <= tolerance;
    assert!(within(costs.read_per_byte_s, 2e-7, 1e-6), "{costs:?}");
    assert!(within(costs.write_per_byte_s, 4e-7, 1e-6), "{costs:?}");
    assert!(within(costs.read_overhead_s, 10e-3, 1e-6), "{costs:?}");
    assert!(within(costs.write_overhead_s, 10e-3, 1e-6), "{costs:?}");
    // The asynchronous read's extra cost is far below the read it hides.
    assert!(
        costs.async_overhead_s >= 0.0 && costs.async_overhead_s < 2e-3,
        "{costs:?}"
    );
    assert!(
        !dir.path().join(".mheta-diskbench").exists(),
        "the scratch space is removed"
    );
}

#[test]
fn costs_are_stored_in_the_measurements_fields() {
    let node = ClusterSpec::this_machine(1).nodes[0];
    let dir = tempfile::tempdir().unwrap();
    let config = DiskBenchConfig {
        sizes: vec![1 << 10, 16 << 10],
        repetitions: 1,
    };
    let costs = measure_disk(dir.path(), DiskModel::of(&node), &config).unwrap();
    let mut m: mheta_runtime::format::NodeMeasurements =
        serde_json::from_value(serde_json::json!({
            "rank": 0, "rows": 0, "iteration_s": 0.0,
            "read_overhead_s": 0.0, "write_overhead_s": 0.0, "async_overhead_s": 0.0,
            "read_per_byte_s": 0.0, "write_per_byte_s": 0.0,
            "stages": [], "io": [], "events": []
        }))
        .unwrap();
    costs.store_in(&mut m);
    assert_eq!(m.read_overhead_s, costs.read_overhead_s);
    assert_eq!(m.write_per_byte_s, costs.write_per_byte_s);
    assert_eq!(m.async_overhead_s, costs.async_overhead_s);
    assert!(costs.read_overhead_s >= 0.0 && costs.write_per_byte_s >= 0.0);
}
