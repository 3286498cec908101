//! A small solver written by hand against `Context` (no macros): 1-D heat diffusion with a halo
//! exchange and an all-reduce of the residual, hook guards placed by hand. It must give the
//! sequential result under any distribution (zero-row nodes included) and cluster, and an
//! instrumented run must write complete, consistent measurements.

mod common;

use common::reference::{initial, sequential, step};

use mheta_runtime::comm::{CommError, CommExt, ReduceOp};
use mheta_runtime::format::{Measurements, PeerOp, StageKey};
use mheta_runtime::{clock, hooks, launch, Args, ClockMode, Context, DistributionSpec};

const ROWS: u64 = 60;
const ITERS: u32 = 4;
/// Emulated seconds per row of the stencil and of the residual on a CPU of power 1.
const STENCIL_S: f64 = 1e-4;
const RESIDUAL_S: f64 = 2e-5;

/// The nearest lower and higher ranks that hold rows.
fn neighbours(ctx: &Context) -> (Option<usize>, Option<usize>) {
    let d = ctx.distribution();
    let me = ctx.rank();
    (
        (0..me).rev().find(|&r| d[r] > 0),
        (me + 1..d.len()).find(|&r| d[r] > 0),
    )
}

/// The solver: returns this rank's rows and the final residual.
fn solve(ctx: &Context) -> Result<(Vec<f64>, f64), CommError> {
    let c = ctx.comm();
    let range = ctx.partition(ROWS as usize);
    let mut u: Vec<f64> = range.clone().map(initial).collect();
    let (lower, upper) = if u.is_empty() {
        (None, None)
    } else {
        neighbours(ctx)
    };
    let cpu = ctx.node().cpu;
    let mut halo = [0.0f64; 2];
    let exchange = |u: &[f64], halo: &mut [f64; 2]| -> Result<(), CommError> {
        if let Some(l) = lower {
            c.send(l, &u[..1])?;
        }
        if let Some(h) = upper {
            c.send(h, &u[u.len() - 1..])?;
        }
        if let Some(l) = lower {
            c.receive_into(l, &mut halo[..1])?;
        }
        if let Some(h) = upper {
            c.receive_into(h, &mut halo[1..])?;
        }
        Ok(())
    };
    exchange(&u, &mut halo)?;
    let mut residual = 0.0;
    for it in 0..ctx.iterations() {
        let _iteration = hooks::iteration(u64::from(it));
        let mut new = vec![0.0; u.len()];
        {
            let _section = hooks::section(0);
            {
                let _stage = hooks::stage(StageKey {
                    section: 0,
                    tile: None,
                    stage: 0,
                });
                for i in 0..u.len() {
                    let left = if i == 0 { halo[0] } else { u[i - 1] };
                    let right = if i + 1 == u.len() { halo[1] } else { u[i + 1] };
                    new[i] = step(left, u[i], right);
                }
                clock::charge(u.len() as f64 * STENCIL_S / cpu);
            }
            let _event = hooks::event(0);
            halo = [0.0; 2];
            exchange(&new, &mut halo)?;
        }
        let _section = hooks::section(1);
        let local = {
            let _stage = hooks::stage(StageKey {
                section: 1,
                tile: None,
                stage: 0,
            });
            clock::charge(u.len() as f64 * RESIDUAL_S / cpu);
            new.iter()
                .zip(&u)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max)
        };
        let _event = hooks::event(1);
        residual = c.all_reduce_value(local, ReduceOp::Max)?;
        u = new;
    }
    Ok((u, residual))
}

fn run(args: &Args) -> Vec<(Vec<f64>, f64)> {
    let out = launch(args, solve).unwrap();
    let (reference, residual) = sequential(ROWS as usize, ITERS);
    let field: Vec<f64> = out.iter().flat_map(|(u, _)| u.clone()).collect();
    assert_eq!(field, reference, "distribution {:?}", args.distribution);
    assert!(out.iter().all(|(_, r)| *r == residual));
    out
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + b.abs())
}

/// Check a measurements file against what the solver did on each node.
fn check_measurements(m: &Measurements, args_rows: &[u64], cpus: &[f64]) {
    assert_eq!(m.schema, "mheta-measurements/1");
    assert_eq!(m.rows, ROWS);
    // The first two of four iterations are a warm-up, not measured.
    assert_eq!(m.iterations, ITERS - 2);
    assert_eq!(m.warm_up, 2, "the file says how many it left out");
    assert_eq!(m.distribution, args_rows);
    assert_eq!(m.nodes.len(), args_rows.len());
    let holders: Vec<usize> = (0..args_rows.len()).filter(|&r| args_rows[r] > 0).collect();
    for (rank, node) in m.nodes.iter().enumerate() {
        let rows = args_rows[rank] as f64;
        assert_eq!(node.rank as usize, rank);
        assert_eq!(node.rows, args_rows[rank]);
        let stage = |section| {
            node.stages
                .iter()
                .find(|s| {
                    s.key
                        == StageKey {
                            section,
                            tile: None,
                            stage: 0,
                        }
                })
                .unwrap()
        };
        assert_eq!(stage(0).count, 1.0);
        if m.clock == "charged" {
            assert!(
                close(stage(0).compute_s, rows * STENCIL_S / cpus[rank]),
                "rank {rank}: {:?}",
                stage(0)
            );
            assert!(close(stage(1).compute_s, rows * RESIDUAL_S / cpus[rank]));
        }
        assert_eq!(stage(0).io_s, 0.0);
        let compute: f64 = node.stages.iter().map(|s| s.compute_s).sum();
        assert!(node.iteration_s >= compute - 1e-12, "rank {rank}");
        let event = |id| node.events.iter().find(|e| e.event == id).unwrap();
        // Halo exchange: one 8-byte message to each neighbour holding rows.
        let pos = holders.iter().position(|&r| r == rank);
        let expected: Vec<u32> = match pos {
            None => vec![],
            Some(p) => [
                p.checked_sub(1).map(|q| holders[q]),
                holders.get(p + 1).copied(),
            ]
            .into_iter()
            .flatten()
            .map(|r| r as u32)
            .collect(),
        };
        let halo = event(0);
        assert_eq!(halo.sent_to, expected, "rank {rank}");
        assert_eq!(halo.received_from, expected, "rank {rank}");
        // Its calls in program order: both sends, then both receives.
        let order: Vec<PeerOp> = expected
            .iter()
            .map(|&r| PeerOp::Send(r))
            .chain(expected.iter().map(|&r| PeerOp::Receive(r)))
            .collect();
        assert_eq!(halo.order, order, "rank {rank}");
        assert_eq!(halo.messages_sent, expected.len() as f64);
        assert_eq!(halo.bytes_sent, 8.0 * expected.len() as f64);
        assert!(halo.total_s >= halo.blocked_s);
        // Residual all-reduce through rank 0.
        let reduce = event(1);
        let others: Vec<u32> = (0..args_rows.len() as u32)
            .filter(|&r| r as usize != rank)
            .collect();
        let hub = if rank == 0 { others.clone() } else { vec![0] };
        assert_eq!(
            reduce.sent_to,
            if args_rows.len() > 1 {
                hub.clone()
            } else {
                vec![]
            }
        );
        assert_eq!(
            reduce.received_from,
            if args_rows.len() > 1 { hub } else { vec![] }
        );
        // A collective has no place in a point-to-point order.
        assert!(reduce.order.is_empty(), "rank {rank}");
    }
}

#[test]
fn heat_solver_under_distributions_and_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let homogeneous = common::cluster_file(dir.path(), "50us", "1GB/s", &[(4, 1.0, "1GiB")]);
    let hetero_dir = dir.path().join("hetero");
    std::fs::create_dir(&hetero_dir).unwrap();
    let hetero = common::cluster_file(
        &hetero_dir,
        "1ms",
        "100MB/s",
        &[(2, 1.0, "1GiB"), (2, 0.5, "64MiB")],
    );
    let cases: Vec<(&std::path::Path, &str, Vec<u64>, Vec<f64>)> = vec![
        (&homogeneous, "block", vec![15, 15, 15, 15], vec![1.0; 4]),
        (
            &hetero,
            "balanced",
            vec![20, 20, 10, 10],
            vec![1.0, 1.0, 0.5, 0.5],
        ),
        (
            &hetero,
            "0,25,0,35",
            vec![0, 25, 0, 35],
            vec![1.0, 1.0, 0.5, 0.5],
        ),
    ];
    for (cluster, dist, rows, cpus) in cases {
        let measurements = dir.path().join("m.json");
        let trace = dir.path().join("trace.json");
        let args = Args {
            cluster: Some(cluster.to_path_buf()),
            distribution: dist.parse::<DistributionSpec>().unwrap(),
            rows: Some(ROWS),
            iterations: ITERS,
            instrument: true,
            measurements: Some(measurements.clone()),
            trace: Some(trace.clone()),
            clock: ClockMode::Charged,
            ..Args::default()
        };
        run(&args);
        let m: Measurements =
            serde_json::from_slice(&std::fs::read(&measurements).unwrap()).unwrap();
        check_measurements(&m, &rows, &cpus);
        let latency = m.cluster.network.latency_s;
        assert!(
            close(m.micro.latency_s, latency),
            "{:?} vs {latency}",
            m.micro
        );
        assert!(
            close(m.micro.per_byte_s, 1.0 / m.cluster.network.bandwidth_bps),
            "{:?}",
            m.micro
        );
        let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
        assert!(t["traceEvents"].as_array().unwrap().len() > 4 * ITERS as usize * 5);
    }
}

#[test]
fn heat_solver_on_wall_and_virtual_clocks() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = common::cluster_file(
        dir.path(),
        "10us",
        "1GB/s",
        &[(1, 1.0, "1GiB"), (2, 0.5, "1GiB")],
    );
    for clock in [ClockMode::Wall, ClockMode::Virtual] {
        let measurements = dir.path().join(format!("{}.json", clock.name()));
        let args = Args {
            cluster: Some(cluster.clone()),
            rows: Some(ROWS),
            iterations: ITERS,
            measurements: Some(measurements.clone()),
            clock,
            ..Args::default()
        };
        run(&args);
        let m: Measurements =
            serde_json::from_slice(&std::fs::read(&measurements).unwrap()).unwrap();
        assert_eq!(m.clock, clock.name());
        check_measurements(&m, &[20, 20, 20], &[1.0, 0.5, 0.5]);
        // Charges are real waits (wall) or clock jumps (virtual): at least the charged cost.
        for (rank, node) in m.nodes.iter().enumerate() {
            let cpu = m.cluster.nodes[rank].cpu;
            let charged = 20.0 * (STENCIL_S + RESIDUAL_S) / cpu;
            assert!(
                node.iteration_s >= charged,
                "rank {rank} {clock:?}: {} < {charged}",
                node.iteration_s
            );
        }
    }
}
