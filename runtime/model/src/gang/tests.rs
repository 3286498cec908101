//! Small mixes on a machine of four processors, simulated by hand slice by slice (time slice
//! 20 STU, disk access 2 STU, context switch and migration 1 STU each).

use super::experiment::Experiment;
use super::matrix::{self, JobShape, Placement, TraceMatrix};
use super::*;

fn config() -> Config {
    Config {
        processors: 4,
        ..Config::default()
    }
}

fn job(name: &str, cn: u32, p: f64, t_s: f64) -> Job {
    Job {
        name: name.into(),
        critical_number: cn,
        sequential_time: t_s,
        iterations: 10,
        percent_parallel: p,
    }
}

/// A job of Table 3.2's size (`T_s` 200 STU, 100 iterations), for the equations' and the
/// methods' unit tests.
pub(super) fn table_job(cn: u32, p: f64) -> Job {
    Job {
        name: "j".into(),
        critical_number: cn,
        sequential_time: 200.0,
        iterations: 100,
        percent_parallel: p,
    }
}

fn check(jobs: &[Job], mode: Mode, method: Method, finishes: &[f64]) {
    let out = simulate(jobs, mode, method, &config()).unwrap();
    for (got, want) in out.turnaround.iter().zip(finishes) {
        assert!(
            (got - want).abs() < 1e-9,
            "{mode:?} {method:?}: finishing times {:?}, expected {finishes:?}",
            out.turnaround
        );
    }
    let att = finishes.iter().sum::<f64>() / finishes.len() as f64;
    let end = finishes.iter().copied().fold(0.0, f64::max);
    assert!((out.att - att).abs() < 1e-9 && (out.end_time - end).abs() < 1e-9);
}

/// A: CN 2, P 50, T_s 40 → c-based 2 processors, work ((100−50) + 50/2)/100 · 40 = 30, one
/// I/O event: demand 32. B: CN 4, P 100, T_s 40 → 4 processors, work 25/100 · 40 = 10,
/// demand 12. First fit: A in row 0 (processors 0, 1); B needs 4, so row 1.
/// t=0 row 0: A 32 → 12. t=20 row 1: B needs 12 ≤ 20, finishes at 32; row 1 empties and is
/// compacted away. t=40 row 0: A finishes at 40 + 12 = 52. ATT 42, end 52.
#[test]
fn schark_two_jobs_c_based() {
    let jobs = [job("A", 2, 50.0, 40.0), job("B", 4, 100.0, 40.0)];
    check(&jobs, Mode::Schark, Method::CBased, &[52.0, 32.0]);
}

/// A: CN 2, P 100, T_s 40 → demand 40/2 + 2 = 22; B: CN 4, P 100, T_s 40 → 12; C: CN 2,
/// P 100, T_s 80 → 42. First fit: A row 0 {0, 1}, B row 1, C row 0 {2, 3}.
/// t=0 row 0: A 22 → 2, C 42 → 22. t=20 row 1: B finishes at 32, row 1 goes. t=40 row 0:
/// A finishes at 42, C 22 → 2. t=60 row 0: C finishes at 62. ATT 136/3, end 62.
#[test]
fn schark_three_jobs_share_a_row() {
    let jobs = [
        job("A", 2, 100.0, 40.0),
        job("B", 4, 100.0, 40.0),
        job("C", 2, 100.0, 80.0),
    ];
    check(&jobs, Mode::Schark, Method::CBased, &[42.0, 32.0, 62.0]);
}

/// The methods on one mix. A: CN 4, P 40, T_s 40, 10 iterations; B: CN 1, P 40, T_s 40.
/// Work ∝ 60 + 40/n: 1→2 is 100/80 = 1.25, 2→4 is 80/70 = 1.14 < 1.2, so p-based gives both 2.
/// Work on 1, 2, 4 processors: 40, 32, 28 STU.
#[test]
fn the_four_methods_on_one_mix() {
    let jobs = [job("A", 4, 40.0, 40.0), job("B", 1, 40.0, 40.0)];
    // p-based: A on 2 < CN 4: ⌈4·10/2⌉ = 20 I/O events, demand 32 + 40 = 72; B on 2 ≥ CN:
    // demand 34. Both fit row 0. t=0: A 72 → 52, B 34 → 14. t=20: A → 32, B finishes at 34.
    // t=40: A → 12. t=60: A finishes at 72.
    check(&jobs, Mode::Schark, Method::PBased, &[72.0, 34.0]);
    // c-based: A on 4, demand 30, row 0; B on 1, demand 42, row 1. t=0: A → 10. t=20: B → 22.
    // t=40: A finishes at 50. t=60: B → 2. t=80: B finishes at 82.
    check(&jobs, Mode::Schark, Method::CBased, &[50.0, 82.0]);
    // a-based: both on 4, demand 30 each, rows 0 and 1. t=0: A → 10. t=20: B → 10.
    // t=40: A finishes at 50. t=60: B finishes at 70.
    check(&jobs, Mode::Schark, Method::ABased, &[50.0, 70.0]);
    // cP-based: A's p-based 2 < CN 4 → 4, demand 30, row 0; B keeps 2, demand 34, row 1.
    // t=0: A → 10. t=20: B → 14. t=40: A finishes at 50. t=60: B finishes at 74.
    check(&jobs, Mode::Schark, Method::CpBased, &[50.0, 74.0]);
}

/// Enhanced c-based on the same mix. A: 4 processors, N^s = ⌈4/4⌉ = 1, row 0. B: 1 processor,
/// N^s = ⌈4/1⌉ = 4: no existing row has a free processor, so four new rows 1–4; every
/// combination (processor 0, 1 or 2, all free everywhere) fits equally, and the first,
/// processor 0, is kept. B's process on processor 0 context-switches in row 1 (A ran there in
/// row 0) and not in rows 2–4 (itself just before): it loses 1 STU in row 1.
/// t=0 row 0: A 30 → 10. t=20 row 1: B loses 1, works 19: 42 → 23. t=40 row 2: B 23 → 3.
/// t=60 row 3: B finishes at 63; rows 1–4 go. t=80 row 0: A finishes at 90.
#[test]
fn enhanced_gives_a_narrow_job_several_rows() {
    let jobs = [job("A", 4, 40.0, 40.0), job("B", 1, 40.0, 40.0)];
    check(&jobs, Mode::Enhanced, Method::CBased, &[90.0, 63.0]);
}

/// The fitness function prefers filling existing rows to adding new ones. Two jobs of 2
/// processors and N^s = 2 on four processors: A takes new rows 0 and 1 on processors {0, 1}
/// (the first combination); B could take rows 0 and 1 on {2, 3} (2 rows in the matrix) or a
/// new row (3 rows): T_ρ^C divides the same progress by 2 rather than 3.
#[test]
fn enhanced_fills_existing_rows_first() {
    let c = config();
    let shape = JobShape {
        processors: 2,
        slices: 2,
        io_per_slice: 0.0,
    };
    let shapes = [shape, shape];
    let mut m = TraceMatrix::new(4);
    let none = vec![Vec::new(); 2];
    let a = matrix::enhanced(&m, &shapes, &none, 0, &c);
    assert_eq!(
        a,
        Placement {
            rows: vec![(0, vec![0, 1]), (1, vec![0, 1])]
        }
    );
    m.apply(0, &a);
    let current = matrix::losses(&m, &shapes, &c);
    assert_eq!(current[0], vec![(0, 0.0), (1, 0.0)]);
    let b = matrix::enhanced(&m, &shapes, &current, 1, &c);
    assert_eq!(
        b,
        Placement {
            rows: vec![(0, vec![2, 3]), (1, vec![2, 3])]
        }
    );
    // Both jobs: N^s·T^s = 40 of progress, no I/O, switching or migration; 2 rows: 80/2.
    let before = matrix::Neighbours::new(&m);
    assert_eq!(matrix::fitness(&m, &before, &shapes, 40.0, 1, &b, &c), 40.0);
}

/// Rows per job in Enhanced mode (eq. 3.4 with `N_i^p`).
#[test]
fn eq_3_4_slices() {
    assert_eq!(slices(128, 128), 1);
    assert_eq!(slices(64, 128), 2);
    assert_eq!(slices(48, 128), 3);
    assert_eq!(slices(1, 4), 4);
}

#[test]
fn bad_input_is_an_error_naming_the_field() {
    let jobs = [job("A", 0, 50.0, 40.0)];
    let err = simulate(&jobs, Mode::Schark, Method::CBased, &config()).unwrap_err();
    assert!(err.to_string().contains("critical_number"), "{err}");
    let jobs = [job("A", 2, 150.0, 40.0)];
    let err = simulate(&jobs, Mode::Schark, Method::CBased, &config()).unwrap_err();
    assert!(err.to_string().contains("percent_parallel"), "{err}");
    let bad = Config {
        time_slice: 0.0,
        ..config()
    };
    let err = simulate(
        &[job("A", 2, 50.0, 40.0)],
        Mode::Schark,
        Method::CBased,
        &bad,
    );
    assert!(err.unwrap_err().to_string().contains("time_slice"));
    assert_eq!(
        simulate(&[], Mode::Schark, Method::CBased, &config()),
        Err(GangError::NoJobs)
    );
    let short = Config {
        time_limit: 30.0,
        ..config()
    };
    let jobs = [job("A", 4, 40.0, 40.0), job("B", 1, 40.0, 40.0)];
    assert!(matches!(
        simulate(&jobs, Mode::Schark, Method::CBased, &short),
        Err(GangError::TimeLimit { unfinished: 2, .. })
    ));
}

#[test]
fn a_seed_determines_the_results() {
    let c = Config {
        processors: 16,
        ..Config::default()
    };
    let spec = MixSpec {
        jobs: 12,
        ..MixSpec::baseline(16)
    };
    let run = |seed| simulate_all(&spec.generate(seed), &c).unwrap();
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
}

/// The chapter's trends on a reduced machine (32 processors, 30 jobs), fast enough for a debug
/// build: c-based beats p-based by far, and Enhanced c-based has the best ATT.
#[test]
fn the_chapter_trends_on_a_small_machine() {
    let c = Config {
        processors: 32,
        ..Config::default()
    };
    let spec = MixSpec {
        jobs: 30,
        ..MixSpec::baseline(32)
    };
    let rows = simulate_all(&spec.generate(1), &c).unwrap();
    let att = |mode, method| {
        rows.iter()
            .find(|o| o.mode == mode && o.method == method)
            .unwrap()
            .att
    };
    let best = rows.iter().map(|o| o.att).fold(f64::INFINITY, f64::min);
    assert_eq!(att(Mode::Enhanced, Method::CBased), best);
    assert!(att(Mode::Schark, Method::PBased) > 2.0 * att(Mode::Schark, Method::CBased));
    assert_eq!(
        att(Mode::Schark, Method::ABased),
        att(Mode::Enhanced, Method::ABased)
    );
}

#[test]
fn experiments_have_their_variants() {
    assert_eq!(Experiment::Baseline.variants(128).len(), 1);
    let cn = Experiment::CnRange.variants(128);
    assert_eq!((cn[0].1.cn_max, cn[1].1.cn_max), (64.0, 256.0));
    let io = Experiment::IoFrequency.variants(128);
    assert_eq!((io[0].1.iterations, io[1].1.iterations), (50, 200));
}

/// The baseline of Table 3.3 at full scale (128 processors, 100 jobs, seed 1): the trends the
/// chapter reports, with bounds around the thesis's ratios (c-based over p-based 5.2× and 5.4×,
/// over a-based 1.45× and 1.72×, over cP-based 1.34× and 1.43×). `study/gangsim.md` has the
/// numbers beside the thesis's.
#[test]
fn table_3_3_trends() {
    let results = Experiment::Baseline.run(1, &Config::default()).unwrap();
    let rows = &results[0].rows;
    let att = |mode, method| {
        rows.iter()
            .find(|o| o.mode == mode && o.method == method)
            .unwrap()
            .att
    };
    let best = rows.iter().map(|o| o.att).fold(f64::INFINITY, f64::min);
    assert_eq!(att(Mode::Enhanced, Method::CBased), best);
    for mode in Mode::ALL {
        let c = att(mode, Method::CBased);
        let ratio = |method| att(mode, method) / c;
        assert!((4.0..8.0).contains(&ratio(Method::PBased)), "{mode:?}");
        assert!((1.2..2.0).contains(&ratio(Method::ABased)), "{mode:?}");
        assert!((1.1..1.8).contains(&ratio(Method::CpBased)), "{mode:?}");
    }
    // Enhanced helps p-based (the thesis: 14132 against 15912).
    assert!(att(Mode::Enhanced, Method::PBased) < att(Mode::Schark, Method::PBased));
}

/// Context switches and migration, cell by cell. Job 0 (2 processes) runs in rows 0 and 1:
/// row 0 on processors [0, 1], row 1 on [2, 1] (process 0 moves to processor 2). Job 1 (one
/// process) runs in row 1 on processor 0.
/// Row 0: process 0 ran on processor 2 in row 1 → migrates (1 STU); the cell before (0, p0)
/// cyclically is job 1's in row 1 → context switch (1 STU); process 1 stays on processor 1 and
/// ran there just before → nothing. Loss (1 + 1) / 2 processes = 1.
/// Row 1: process 0 migrates back from processor 0 → 1 STU; it is alone on processor 2 → no
/// switch; process 1 → nothing. Loss 1 / 2 = 0.5. Job 1 is in one row: no loss.
#[test]
fn losses_count_switches_and_migrations_per_process() {
    let c = config();
    let mut m = TraceMatrix::new(4);
    m.apply(
        0,
        &Placement {
            rows: vec![(0, vec![0, 1]), (1, vec![2, 1])],
        },
    );
    m.apply(
        1,
        &Placement {
            rows: vec![(1, vec![0])],
        },
    );
    let shapes = [
        JobShape {
            processors: 2,
            slices: 2,
            io_per_slice: 0.0,
        },
        JobShape {
            processors: 1,
            slices: 1,
            io_per_slice: 0.0,
        },
    ];
    let l = matrix::losses(&m, &shapes, &c);
    assert_eq!(l[0], vec![(0, 1.0), (1, 0.5)]);
    assert_eq!(l[1], vec![(1, 0.0)]);
}
