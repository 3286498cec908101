//! Wall-clock CPU slowdown emulation (`clock::ComputeMark`) slows computation only: the CPU a
//! stage spends inside out-of-core I/O (reads, writes, fsync, CRC, the charged disk's wait) and
//! in hook bookkeeping is emulated separately, so the spin must not multiply it.
//!
//! Everything is compared on the rank thread's own CPU clock within one run, so the checks are
//! ratios that machine load does not move.

use mheta_runtime::clock::{self, ClockMode, ComputeMark};
use mheta_runtime::cluster::DiskModel;
use mheta_runtime::format::StageKey;
use mheta_runtime::hooks::{self, HookConfig};
use mheta_runtime::ooc::{ArraySpec, NodeStore, OocArray, Placement, StoreConfig};

/// Rows and row length of the test array: blocks of 64 × 8192 f64 = 4 MiB.
const ROWS: u64 = 128;
const ROW_LEN: usize = 8192;

fn array(dir: &std::path::Path) -> OocArray<f64> {
    let store = NodeStore::open(StoreConfig {
        dir: dir.to_path_buf(),
        memory_bytes: u64::MAX,
        // A small latency, so every operation also charges (and waits out) a shortfall.
        disk: DiskModel {
            latency_s: 0.001,
            read_bps: f64::INFINITY,
            write_bps: f64::INFINITY,
        },
        instrumented: false,
        force_out_of_core: false,
    })
    .unwrap();
    let spec = ArraySpec::new("u", ROWS, ROW_LEN).with_placement(Placement::OutOfCore {
        icla_rows: ROWS / 2,
    });
    OocArray::new(&store, spec).unwrap()
}

/// Burn `seconds` of this thread's CPU on arithmetic; returns the CPU seconds actually used.
fn compute(seconds: f64) -> f64 {
    let begin = clock::thread_cpu_s();
    let mut x = 1u64;
    while clock::thread_cpu_s() - begin < seconds {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    std::hint::black_box(x);
    clock::thread_cpu_s() - begin
}

/// Write and read `block` until at least `seconds` of this thread's CPU went into the I/O
/// calls themselves; returns the CPU seconds spent inside them.
fn io(array: &mut OocArray<f64>, block: &[f64], seconds: f64) -> f64 {
    let mut inside = 0.0;
    let mut i = 0;
    while inside < seconds {
        let begin = clock::thread_cpu_s();
        array.write_block(i % 2, block).unwrap();
        let first = array.read_block(i % 2).unwrap()[7];
        inside += clock::thread_cpu_s() - begin;
        assert_eq!(first, 1.5);
        i += 1;
    }
    inside
}

/// Run `f` on a wall-clock rank thread of CPU power `cpu`.
fn on_rank<R: Send + 'static>(cpu: f64, f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::spawn(move || {
        clock::install(ClockMode::Wall, cpu);
        let out = f();
        clock::uninstall();
        out
    })
    .join()
    .expect("the rank thread runs")
}

#[test]
fn spin_covers_the_computation_not_the_io() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let (compute_s, io_s, based_on_s, spun_s) = on_rank(0.5, move || {
        let mut a = array(&path);
        let block = vec![1.5f64; a.block_len(0)];
        let begin = clock::thread_cpu_s();
        let mark = ComputeMark::start().expect("a wall clock at cpu 0.5 slows down");
        let io_a = io(&mut a, &block, 0.015);
        compute(0.02);
        let io_b = io(&mut a, &block, 0.015);
        let before = clock::thread_cpu_s();
        let based_on_s = mark.finish();
        let spun_s = clock::thread_cpu_s() - before;
        // Everything the region did outside the I/O calls is computation (the compute loop,
        // the test's own loops and clock reads).
        let compute_s = before - begin - io_a - io_b;
        (compute_s, io_a + io_b, based_on_s, spun_s)
    });
    // The I/O's CPU is at least as large as the computation's, so a spin that multiplied it
    // would come out at twice the computation or more.
    assert!(io_s >= 0.03, "io {io_s}");
    // At cpu 0.5 the spin is (1/0.5 − 1) = 1 × the computation's CPU.
    let ratio = spun_s / compute_s;
    eprintln!("mark: spin/compute = {ratio:.3} (compute {compute_s:.4} s, io {io_s:.4} s)");
    assert!(
        (0.85..1.2).contains(&ratio),
        "spin {spun_s} for compute {compute_s} and io {io_s}: ratio {ratio}"
    );
    assert!(
        (based_on_s / compute_s - 1.0).abs() < 0.25,
        "slowdown based on {based_on_s}, compute {compute_s}"
    );
}

#[test]
fn stage_guard_spins_for_computation_and_skips_nested_bookkeeping() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let key = |stage| StageKey {
        section: 0,
        tile: None,
        stage,
    };
    let (total_s, compute_s, io_s) = on_rank(0.5, move || {
        hooks::install(HookConfig {
            instrument: true,
            slowdown: true,
            timing: false,
        });
        hooks::set_recording(true);
        let mut a = array(&path);
        let block = vec![1.5f64; a.block_len(0)];
        let begin = clock::thread_cpu_s();
        let (compute_s, io_s) = {
            let _stage = hooks::stage(key(0));
            let io_s = io(&mut a, &block, 0.02);
            let compute_s = {
                // A nested region: its bookkeeping is not computation either.
                let _event = hooks::event(3);
                compute(0.02)
            };
            (compute_s, io_s)
        };
        let total_s = clock::thread_cpu_s() - begin;
        hooks::uninstall();
        (total_s, compute_s, io_s)
    });
    assert!(io_s >= 0.02, "io {io_s}");
    // The stage used compute + io, then spun 1 × compute: twice the computation plus the I/O.
    let spun_s = total_s - compute_s - io_s;
    let ratio = spun_s / compute_s;
    eprintln!("stage: spin/compute = {ratio:.3} (compute {compute_s:.4} s, io {io_s:.4} s)");
    assert!(
        (0.85..1.3).contains(&ratio),
        "spin {spun_s} for compute {compute_s} and io {io_s}: ratio {ratio}"
    );
}

#[test]
fn nothing_is_excluded_without_a_slowdown() {
    // At full CPU power there is no mark, so nothing spins and spans do not measure.
    on_rank(1.0, || assert!(ComputeMark::start().is_none()));
    on_rank(0.5, || {
        let _span = clock::not_compute();
        let mark = ComputeMark::start().unwrap();
        // A span opened before the mark does not measure, so this computation counts.
        let used = compute(0.005);
        let based_on = mark.finish();
        assert!(based_on >= used * 0.9, "{based_on} vs {used}");
    });
}
