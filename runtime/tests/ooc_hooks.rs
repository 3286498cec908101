//! Out-of-core I/O as the hook layer sees it, on the deterministic charged clock (times move
//! only with `clock::charge`): each operation lasts exactly its emulated disk cost, and a
//! prefetch records T_A as seed Fig. 5.5/5.6 define it.

use std::path::Path;

use mheta_runtime::clock::{self, ClockMode};
use mheta_runtime::cluster::DiskModel;
use mheta_runtime::hooks::{self, io_kind, HookConfig, IoKind, Record, RecordKind};
use mheta_runtime::ooc::{ArraySpec, NodeStore, OocArray, Placement, StoreConfig};

/// 2 ms per call, 1 MB/s read, 0.5 MB/s write; blocks of 125 f64 = 1000 B.
const DISK: DiskModel = DiskModel {
    latency_s: 2e-3,
    read_bps: 1e6,
    write_bps: 0.5e6,
};
const READ_S: f64 = 2e-3 + 1e-3;
const WRITE_S: f64 = 2e-3 + 2e-3;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

fn array(dir: &Path, instrumented: bool) -> OocArray<f64> {
    let config = StoreConfig {
        dir: dir.to_path_buf(),
        memory_bytes: u64::MAX,
        disk: DISK,
        instrumented,
        force_out_of_core: instrumented,
    };
    let store = NodeStore::open(config).unwrap();
    let spec = ArraySpec::new("A", 2, 125).with_placement(Placement::OutOfCore { icla_rows: 1 });
    OocArray::new(&store, spec).unwrap()
}

/// Run `f` with a charged rank clock and recording hooks; return the I/O records.
fn recorded(f: impl FnOnce()) -> Vec<(IoKind, u64, f64, f64)> {
    clock::install(ClockMode::Charged, 1.0);
    hooks::install(HookConfig {
        instrument: true,
        slowdown: false,
        timing: false,
    });
    hooks::set_recording(true);
    f();
    let records: Vec<Record> = hooks::uninstall().records;
    clock::uninstall();
    records
        .into_iter()
        .filter(|r| r.kind == RecordKind::Io)
        .map(|r| (io_kind(r.aux).unwrap(), r.bytes, r.begin_s, r.end_s))
        .collect()
}

#[test]
fn synchronous_operations_last_exactly_their_emulated_cost() {
    let dir = tempfile::tempdir().unwrap();
    let io = recorded(|| {
        let mut a = array(dir.path(), false);
        a.write_block(0, &[1.0; 125]).unwrap();
        a.read_block(0).unwrap();
        assert!(close(a.stats().charged_s, WRITE_S + READ_S));
        assert!(close(clock::now(), WRITE_S + READ_S));
    });
    assert_eq!(io.len(), 2);
    let (kind, bytes, begin, end) = io[0];
    assert_eq!((kind, bytes), (IoKind::Write, 1000));
    assert!(close(begin, 0.0) && close(end, WRITE_S), "{io:?}");
    let (kind, bytes, begin, end) = io[1];
    assert_eq!((kind, bytes), (IoKind::Read, 1000));
    assert!(
        close(begin, WRITE_S) && close(end, WRITE_S + READ_S),
        "{io:?}"
    );
}

#[test]
fn instrumented_prefetch_records_the_read_and_t_a() {
    let dir = tempfile::tempdir().unwrap();
    let compute = 0.5e-3;
    let io = recorded(|| {
        let mut a = array(dir.path(), true);
        a.prefetch_block(1).unwrap();
        clock::charge(compute);
        a.wait().unwrap();
        // Fig. 5.6: the prefetch was a full synchronous read, the wait cost nothing.
        assert!(close(clock::now(), READ_S + compute));
    });
    assert_eq!(io.len(), 2, "{io:?}");
    let (kind, bytes, begin, end) = io[0];
    assert_eq!((kind, bytes), (IoKind::Prefetch, 1000));
    assert!(close(begin, 0.0) && close(end, READ_S), "{io:?}");
    // T_A: from the prefetch's return to the entry into wait.
    let (kind, bytes, begin, end) = io[1];
    assert_eq!((kind, bytes), (IoKind::Wait, 0));
    assert!(
        close(begin, READ_S) && close(end, READ_S + compute),
        "{io:?}"
    );
}

#[test]
fn asynchronous_prefetch_hides_the_read_behind_computation() {
    // Eq. 5.2: the visible read time is T_s = max(0, T_r - T_A).
    for compute in [1e-3, READ_S, 5e-3] {
        let dir = tempfile::tempdir().unwrap();
        let io = recorded(|| {
            let mut a = array(dir.path(), false);
            a.prefetch_block(1).unwrap();
            clock::charge(compute);
            a.wait().unwrap();
            let hidden = (READ_S - compute).max(0.0);
            assert!(
                close(clock::now(), compute + hidden),
                "compute {compute}: now {}",
                clock::now()
            );
        });
        let kinds: Vec<IoKind> = io.iter().map(|r| r.0).collect();
        assert_eq!(kinds, vec![IoKind::Prefetch, IoKind::Wait]);
        let (_, _, begin, end) = io[1];
        assert!(
            close(end - begin, compute),
            "T_A recorded as {}",
            end - begin
        );
    }
}
