//! The virtual clock: hand-computed ping-pong and reduction timings, and determinism.

mod common;

use mheta_runtime::comm::{CommError, CommExt, ReduceOp};
use mheta_runtime::hooks::{CallKind, RecordKind};
use mheta_runtime::{clock, launch, testing, Args, ClockMode, DistributionSpec};

const L: f64 = 1e-3; // 1ms
const B: f64 = 1e6; // 1MB/s

fn args(dir: &std::path::Path, ranks: usize) -> Args {
    Args {
        ranks: Some(ranks),
        rows: Some(ranks as u64),
        cluster: Some(common::cluster_file(
            dir,
            "1ms",
            "1MB/s",
            &[(ranks, 1.0, "1GiB")],
        )),
        clock: ClockMode::Charged,
        ..Args::default()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn ping_pong_times_are_hand_computable() {
    let dir = tempfile::tempdir().unwrap();
    let (times, rec) = testing::record_with(&args(dir.path(), 2), |ctx| {
        let c = ctx.comm();
        let mut buf = [0.0f64; 125]; // 1000 bytes
        if ctx.rank() == 0 {
            clock::charge(0.5);
            c.send(1, &buf)?;
            c.receive_into(1, &mut buf)?;
        } else {
            clock::charge(0.2);
            c.receive_into(0, &mut buf)?;
            clock::charge(0.1);
            c.send(0, &buf)?;
        }
        Ok::<_, CommError>(clock::now())
    })
    .unwrap();
    let transfer = L + 1000.0 / B; // 2ms
                                   // Rank 1 receives at max(0.2, 0.5 + 2ms) = 0.502, works to 0.602 and replies; rank 0
                                   // receives at 0.602 + 2ms.
    assert!(close(times[1], 0.5 + transfer + 0.1), "{times:?}");
    assert!(close(times[0], 0.5 + 2.0 * transfer + 0.1), "{times:?}");
    let blocked = |rank: usize| {
        rec.rank(rank)
            .of_kind(RecordKind::Comm)
            .filter(|r| r.aux == CallKind::Receive as u32)
            .map(|r| r.traffic.blocked_s)
            .sum::<f64>()
    };
    assert!(close(blocked(1), 0.5 + transfer - 0.2), "{}", blocked(1));
    assert!(close(blocked(0), 0.1 + 2.0 * transfer), "{}", blocked(0));
}

#[test]
fn all_reduce_times_are_hand_computable() {
    let dir = tempfile::tempdir().unwrap();
    let p = 4;
    let times = launch(&args(dir.path(), p), |ctx| {
        clock::charge((ctx.rank() + 1) as f64 * 0.1);
        let s = ctx.comm().all_reduce_value(1.0f64, ReduceOp::Sum)?;
        assert_eq!(s, p as f64);
        Ok::<_, CommError>(clock::now())
    })
    .unwrap();
    // Linear reduce to rank 0: the last contribution leaves rank 3 at 0.4 and arrives after one
    // 8-byte transfer; the broadcast adds one more transfer on the receiving ranks.
    let t = L + 8.0 / B;
    assert!(close(times[0], 0.4 + t), "{times:?}");
    for r in 1..p {
        assert!(close(times[r], 0.4 + 2.0 * t), "{times:?}");
    }
}

/// A program mixing compute charges, point-to-point and collectives; returns every rank's
/// clock readings and recorded intervals.
fn mixed(dir: &std::path::Path, p: usize) -> Vec<Vec<(String, f64, f64)>> {
    let args = Args {
        distribution: DistributionSpec::Block,
        rows: Some(40),
        ..args(dir, p)
    };
    let (_, rec) = testing::record_with(&args, |ctx| {
        let c = ctx.comm();
        let me = ctx.rank();
        for it in 0..3 {
            let _i = mheta_runtime::hooks::iteration(it);
            clock::charge(ctx.local_rows(40) as f64 * 1e-3 * (me + 1) as f64);
            let next = (me + 1) % p;
            let prev = (me + p - 1) % p;
            c.send(next, &vec![1.0f64; 10 * (me + 1)])?;
            let mut got = vec![0.0f64; 10 * (prev + 1)];
            c.receive_into(prev, &mut got)?;
            let send: Vec<u32> = (0..p as u32).collect();
            let mut recv = vec![0u32; p];
            c.all_to_all(&send, &mut recv)?;
            c.all_reduce_value(me as f64, ReduceOp::Max)?;
        }
        Ok::<_, CommError>(())
    })
    .unwrap();
    rec.ranks
        .iter()
        .map(|r| {
            r.records
                .iter()
                .map(|x| (testing::label(x), x.begin_s, x.end_s))
                .collect()
        })
        .collect()
}

#[test]
fn charged_clock_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    for p in [1, 3, 8] {
        let a = mixed(dir.path(), p);
        let b = mixed(dir.path(), p);
        assert_eq!(a, b, "p = {p}");
        assert!(a[0].iter().any(|(_, _, end)| *end > 0.0));
    }
}

/// A run on one node of power 1 with `ranks = 2` is a run on two nodes of power 0.5: every rank's
/// clock runs at half power and its context holds the half node, and two ranks that compute the
/// same charged work and exchange a message end at the same times.
#[test]
fn two_ranks_on_one_node_run_as_two_half_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let run = |text: &str| {
        let path = dir.path().join("cluster.toml");
        std::fs::write(&path, text).unwrap();
        let args = Args {
            ranks: Some(2),
            rows: Some(2),
            cluster: Some(path),
            clock: ClockMode::Charged,
            ..Args::default()
        };
        let (out, _) = testing::record_with(&args, |ctx| {
            let c = ctx.comm();
            clock::charge(0.25 * (ctx.rank() + 1) as f64);
            let mut buf = [0.0f64; 125];
            if ctx.rank() == 0 {
                c.send(1, &buf)?;
            } else {
                c.receive_into(0, &mut buf)?;
            }
            Ok::<_, CommError>((clock::cpu_power(), *ctx.node(), clock::now()))
        })
        .unwrap();
        out
    };
    let node = |count: u32, ranks: u32, cpu: f64, memory: &str, read: &str| {
        format!(
            "[network]\nlatency = \"1ms\"\nbandwidth = \"1MB/s\"\n[[node]]\ncount = {count}\n\
             ranks = {ranks}\ncpu = {cpu}\nmemory = \"{memory}\"\ndisk_read = \"{read}\"\n\
             disk_write = \"{read}\"\ndisk_latency = \"0s\"\n"
        )
    };
    let shared = run(&node(1, 2, 1.0, "64MiB", "500MB/s"));
    let halves = run(&node(2, 1, 0.5, "32MiB", "250MB/s"));
    assert_eq!(shared, halves);
    for (power, spec, _) in &shared {
        assert_eq!(*power, 0.5);
        assert_eq!(spec.memory_bytes, 32 << 20);
    }
    // Rank 1 charges 0.5 s, after the message (sent at 0.25 s, 2 ms on the wire) arrived.
    assert!(close(shared[1].2, 0.5), "{shared:?}");
}
