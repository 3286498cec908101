//! The MPI backend's test driver, run under `mpirun` by `tests/mpi.rs` (feature `mpi`).
//!
//! `mheta-mpi-check MODE [mheta flags]`, each process one rank:
//! - `comm`: every point-to-point and collective form (the checks of `tests/collectives.rs`),
//!   once under MPI and once on the threads backend in this process with as many ranks; each
//!   rank's results and the traffic recorded for each call must be identical. Prints
//!   `comm checks passed on rank R of P`.
//! - `heat`: the hand-written heat solver of `tests/heat_solver.rs` with the given flags (e.g.
//!   `--instrument --measurements FILE --trace FILE --cluster FILE`); each rank checks its rows
//!   against the sequential reference and prints `heat: rank R verified`.
//! - `fail`: the last rank fails while the others wait for it (the job must abort, naming it).
//! - `finished-peer`: rank 0 waits for a message rank 1 never sends (rank 0 must fail).
//! - `never-attached`: an rsmpi program whose solver asks whether to take its instrumented body
//!   (as `#[mheta::solver]` does) but that never attaches: with `MHETA_*` set, rank 0 must say at
//!   exit that nothing was recorded.
//! - `held-rows`: an attached program that divides its rows itself, rank `r` holding `100 + 10 r`
//!   (`Session::held_rows`); prints `held rows: rank R START..END`.
//! - `attach-rows`: an attached program (`comm::mpi::attach`, `MHETA_*` from the environment)
//!   whose ranks pass different totals to `Session::try_rows`: every rank must get the error.

use std::process::ExitCode;

use clap::Parser;

#[path = "../../tests/common/reference.rs"]
mod reference;

use mheta_runtime::comm::{wait_all, Comm, CommError, CommExt, ReduceOp};
use mheta_runtime::format::StageKey;
use mheta_runtime::hooks::{RankRecords, RecordKind};
use mheta_runtime::{clock, hooks, Args, Backend, ClockMode, Context, Launch};
use reference::{data, fold, initial, sequential, step};

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    Comm,
    Heat,
    Fail,
    FinishedPeer,
    AttachRows,
    NeverAttached,
    HeldRows,
    /// The last rank stops itself (SIGSTOP); rank 0 waits to receive from it, the others in an
    /// all-reduce it never joins.
    Stopped,
}

#[derive(Parser)]
#[command(name = "mheta-mpi-check")]
struct Cli {
    #[arg(value_enum)]
    mode: Mode,
    /// Busy work per row and iteration of the heat stencil (for CPU emulation checks).
    #[arg(long, default_value_t = 0)]
    work: u64,
    #[command(flatten)]
    mheta: Args,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.mode {
        Mode::Comm => comm_checks(&cli.mheta),
        Mode::Heat => heat(&cli.mheta, cli.work),
        Mode::Fail => fail(&cli.mheta),
        Mode::FinishedPeer => finished_peer(&cli.mheta),
        Mode::AttachRows => attach_rows(),
        Mode::NeverAttached => never_attached(),
        Mode::HeldRows => held_rows(),
        Mode::Stopped => stopped(&cli.mheta),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mheta-mpi-check: error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Attaches as an rsmpi program does: the session and this rank.
fn attached() -> Result<(mheta_runtime::comm::mpi::Session, usize), BoxError> {
    mheta_runtime::comm::mpi::world()?;
    let world = <mpi::topology::SimpleCommunicator as mpi::topology::Communicator>::duplicate(
        &mpi::topology::SimpleCommunicator::world(),
    );
    let session = mheta_runtime::comm::mpi::attach(&world)?;
    Ok((session, mheta_runtime::comm::mpi::world()?.rank))
}

/// Attaches as an rsmpi program does, then asks for rows with a total that depends on the rank.
fn attach_rows() -> Result<(), BoxError> {
    let (session, rank) = attached()?;
    session.try_rows(100 + rank)?;
    session.finish()?;
    Ok(())
}

/// Attaches as an rsmpi program does and tells the session how many rows this rank holds.
fn held_rows() -> Result<(), BoxError> {
    let (session, rank) = attached()?;
    let mine = session.held_rows(100 + 10 * rank)?;
    println!("held rows: rank {rank} {}..{}", mine.start, mine.end);
    // A main loop of one stage over the rows, as `#[mheta::solver]` would time it.
    let mut u = vec![1.0f64; mine.len()];
    for it in 0..3 {
        let _iteration = hooks::iteration(it);
        let _section = hooks::section(0);
        let _stage = hooks::stage(StageKey {
            section: 0,
            tile: None,
            stage: 0,
        });
        u.iter_mut().for_each(|x| *x = 0.5 * *x + 1.0);
    }
    std::hint::black_box(&u);
    session.finish()?;
    Ok(())
}

/// MPI through rsmpi alone, a solver entry's question and one all-reduce; no attach.
fn never_attached() -> Result<(), BoxError> {
    use mpi::collective::CommunicatorCollectives;
    use mpi::topology::Communicator;
    let universe = mpi::initialize().ok_or("MPI was initialised already")?;
    let world = universe.world();
    // What `#[mheta::solver]`'s generated code asks on entry (`__private::hooks_active`).
    let _instrumented = hooks::regions_active() || mheta_runtime::attach::regions_requested();
    let mut ranks = 0i32;
    world.all_reduce_into(&1i32, &mut ranks, mpi::collective::SystemOperation::sum());
    if ranks != world.size() {
        return Err(format!(
            "the all-reduce summed {ranks} ones over {} ranks",
            world.size()
        )
        .into());
    }
    Ok(())
}

const OPS: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max, ReduceOp::Prod];

/// Every communicator operation, checked against the sequential reference; returns everything
/// this rank received, in order.
fn exercise(c: &dyn Comm, n: usize) -> Result<Vec<f64>, CommError> {
    let (me, p) = (c.rank(), c.size());
    let mut out = Vec::new();
    let (next, prev) = ((me + 1) % p, (me + p - 1) % p);
    // Point to point: two tags received in the other order, an empty message, immediates.
    c.send_with_tag(next, 7, &data(me, 3))?;
    c.send_with_tag(next, 9, &[me as i64])?;
    c.send(next, &[] as &[u8])?;
    let mut who = [0i64];
    c.receive_into_with_tag(prev, 9, &mut who)?;
    let mut got = [0.0; 3];
    c.receive_into_with_tag(prev, 7, &mut got)?;
    c.receive_into(prev, &mut [] as &mut [u8])?;
    assert_eq!((who[0] as usize, got.to_vec()), (prev, data(prev, 3)));
    out.extend(got);
    let (mut a, mut b) = ([0u32; 2], [0u32; 2]);
    {
        let recv_a = c.immediate_receive_into(prev, 1, &mut a)?;
        let recv_b = c.immediate_receive_into(prev, 2, &mut b)?;
        let (m2, m1) = ([me as u32, 2], [me as u32, 1]);
        let s1 = c.immediate_send(next, 2, &m2)?;
        let s2 = c.immediate_send(next, 1, &m1)?;
        wait_all(vec![s1, s2, recv_a, recv_b])?;
    }
    assert_eq!((a, b), ([prev as u32, 1], [prev as u32, 2]));
    let mut x = [0u8];
    let mut req = c.immediate_receive_into(prev, 3, &mut x)?;
    c.send_with_tag(next, 3, &[5u8])?;
    while !req.test()? {
        std::thread::yield_now();
    }
    req.wait()?;
    assert_eq!(x, [5]);
    // A large message (beyond eager limits) in both directions at once: sends must not block.
    let big: Vec<f64> = (0..100_000).map(|i| (i + me) as f64).collect();
    c.send_with_tag(next, 4, &big)?;
    let mut big_in = vec![0.0; big.len()];
    c.receive_into_with_tag(prev, 4, &mut big_in)?;
    assert_eq!(big_in[0], prev as f64);
    if p >= 2 {
        if me == 0 {
            c.send_with_tag(1, 5, &[1.0, 2.0])?;
        } else if me == 1 {
            let err = c.receive_into_with_tag(0, 5, &mut [0.0]).unwrap_err();
            assert_eq!(
                err,
                CommError::SizeMismatch {
                    from: 0,
                    tag: 5,
                    expected: 8,
                    got: 16
                }
            );
        }
    }
    assert!(c.all_to_all(&[1.0, 2.0, 3.0], &mut [0.0; 3]).is_err() || p == 1 || p == 3);

    c.barrier()?;
    for root in [0, p - 1, p / 2] {
        let mut buf = if me == root {
            data(root, n)
        } else {
            vec![0.0; n]
        };
        c.broadcast(root, &mut buf)?;
        assert_eq!(buf, data(root, n));
        out.extend(&buf);
        for op in OPS {
            let mut r = vec![0.0; if me == root { n } else { 0 }];
            c.reduce(root, &data(me, n), &mut r, op)?;
            if me == root {
                assert_eq!(r, fold(p, n, op), "reduce {op:?} p={p} n={n}");
            }
            out.extend(&r);
        }
        let whole: Vec<f64> = (0..p).flat_map(|r| data(r, n)).collect();
        let mut g = vec![0.0; if me == root { n * p } else { 0 }];
        c.gather(root, &data(me, n), &mut g)?;
        if me == root {
            assert_eq!(g, whole);
        }
        out.extend(&g);
        let mut part = vec![0.0; n];
        let send: &[f64] = if me == root { &whole } else { &[] };
        c.scatter(root, send, &mut part)?;
        assert_eq!(part, data(me, n));
        out.extend(&part);
        let counts: Vec<usize> = (0..p).map(|r| (r + n) % 3).collect();
        let mine = data(me, counts[me]);
        let all: Vec<f64> = (0..p).flat_map(|r| data(r, counts[r])).collect();
        let mut gv = vec![0.0; if me == root { all.len() } else { 0 }];
        c.gather_varcount(root, &mine, &mut gv, &counts)?;
        if me == root {
            assert_eq!(gv, all);
        }
        out.extend(&gv);
        let mut sv = vec![0.0; counts[me]];
        let send: &[f64] = if me == root { &all } else { &[] };
        c.scatter_varcount(root, send, &counts, &mut sv)?;
        assert_eq!(sv, mine);
        out.extend(&sv);
    }
    for op in OPS {
        let mut r = vec![0.0; n];
        c.all_reduce(&data(me, n), &mut r, op)?;
        assert_eq!(r, fold(p, n, op));
        out.extend(&r);
    }
    let isum = c.all_reduce_value(me as i32, ReduceOp::Sum)?;
    assert_eq!(isum, (0..p as i32).sum::<i32>());
    let iprod = c.all_reduce_value(me as u64 + 1, ReduceOp::Prod)?;
    assert_eq!(iprod, (1..=p as u64).product::<u64>());
    let fmax = c.all_reduce_value(me as f32, ReduceOp::Max)?;
    assert_eq!(fmax, (p - 1) as f32);
    let mut wrap = [0u8; 2];
    c.all_reduce(
        &[(me as u8).wrapping_mul(100), me as u8],
        &mut wrap,
        ReduceOp::Sum,
    )?;
    let want = (0..p as u8).fold(0u8, |a, r| a.wrapping_add(r.wrapping_mul(100)));
    assert_eq!(wrap[0], want);
    let mut imin = [0i64; 1];
    c.reduce(p - 1, &[-(me as i64)], &mut imin, ReduceOp::Min)?;
    if me == p - 1 {
        assert_eq!(imin, [1 - p as i64]);
    }
    out.extend([
        isum as f64,
        iprod as f64,
        f64::from(fmax),
        f64::from(wrap[0]),
        imin[0] as f64,
    ]);
    let mut ag = vec![0.0; n * p];
    c.all_gather(&data(me, n), &mut ag)?;
    assert_eq!(ag, (0..p).flat_map(|r| data(r, n)).collect::<Vec<_>>());
    out.extend(&ag);
    let counts: Vec<usize> = (0..p).map(|r| (r * 2 + n) % 4).collect();
    let mut agv = vec![0.0; counts.iter().sum()];
    c.all_gather_varcount(&data(me, counts[me]), &mut agv, &counts)?;
    assert_eq!(
        agv,
        (0..p).flat_map(|r| data(r, counts[r])).collect::<Vec<_>>()
    );
    out.extend(&agv);
    let send: Vec<f64> = (0..p).flat_map(|q| data(me * 10 + q, n)).collect();
    let mut recv = vec![0.0; n * p];
    c.all_to_all(&send, &mut recv)?;
    assert_eq!(
        recv,
        (0..p)
            .flat_map(|r| data(r * 10 + me, n))
            .collect::<Vec<_>>()
    );
    out.extend(&recv);
    let sc: Vec<usize> = (0..p).map(|q| (me + q) % 3).collect();
    let rc: Vec<usize> = (0..p).map(|r| (r + me) % 3).collect();
    let send: Vec<i16> = (0..p)
        .flat_map(|q| (0..sc[q]).map(move |i| (me * 50 + q * 5 + i) as i16))
        .collect();
    let mut recv = vec![0i16; rc.iter().sum()];
    c.all_to_all_varcount(&send, &sc, &mut recv, &rc)?;
    let expect: Vec<i16> = (0..p)
        .flat_map(|r| (0..rc[r]).map(move |i| (r * 50 + me * 5 + i) as i16))
        .collect();
    assert_eq!(recv, expect);
    out.extend(recv.iter().map(|&v| f64::from(v)));
    c.barrier()?;
    Ok(out)
}

/// What the hooks recorded of each communication call: (call, peer, messages and bytes).
fn traffic_of(rr: &RankRecords) -> Vec<(u32, u32, u32, u32, u64, u64)> {
    rr.records
        .iter()
        .filter(|r| r.kind == RecordKind::Comm)
        .map(|r| {
            let t = r.traffic;
            (
                r.aux,
                r.peer,
                t.messages_sent,
                t.messages_received,
                t.bytes_sent,
                t.bytes_received,
            )
        })
        .collect()
}

fn comm_checks(mpi_args: &Args) -> Result<(), BoxError> {
    for n in [0, 1, 5] {
        let args = Args {
            backend: Backend::Mpi,
            rows: Some(mpi_size() as u64),
            instrument: true,
            ..mpi_args.clone()
        };
        let (mine, mpi_records, _) = Launch::new(&args)
            .without_microbenchmarks()
            .run_collect(|ctx| exercise(ctx.comm(), n))?;
        let (rank, p) = (mpi_records_rank(), mpi_size());
        let threads = Args {
            backend: Backend::Threads,
            ranks: Some(p),
            rows: Some(p as u64),
            clock: ClockMode::Charged,
            instrument: true,
            ..mpi_args.clone()
        };
        let (reference, thread_records, _) = Launch::new(&threads)
            .without_microbenchmarks()
            .run_collect(|ctx| exercise(ctx.comm(), n))?;
        if mine[0] != reference[rank] {
            return Err(format!(
                "rank {rank}, n = {n}: MPI results differ from the threads backend's"
            )
            .into());
        }
        if rank == 0 {
            if mpi_records.len() != p {
                return Err(format!(
                    "rank 0 gathered {} ranks' records, not {p}",
                    mpi_records.len()
                )
                .into());
            }
            for (r, (m, t)) in mpi_records.iter().zip(&thread_records).enumerate() {
                let (m, t) = (traffic_of(m), traffic_of(t));
                if m != t {
                    return Err(format!(
                        "n = {n}: rank {r}'s recorded traffic differs: MPI {m:?}, threads {t:?}"
                    )
                    .into());
                }
                if m.is_empty() {
                    return Err(format!("rank {r} recorded no communication").into());
                }
            }
        }
    }
    println!(
        "comm checks passed on rank {} of {}",
        mpi_records_rank(),
        mpi_size()
    );
    Ok(())
}

fn mpi_records_rank() -> usize {
    mheta_runtime::comm::mpi::world().map_or(0, |w| w.rank)
}

fn mpi_size() -> usize {
    mheta_runtime::comm::mpi::world().map_or(1, |w| w.size)
}

const HEAT_ROWS: usize = 64;
const STENCIL_S: f64 = 2e-5;

/// Busy arithmetic the optimiser cannot remove.
fn busy(rounds: u64) -> f64 {
    let mut x = 1.0f64;
    for i in 0..rounds {
        x = std::hint::black_box(x * 1.000_000_1 + (i & 7) as f64 * 1e-9);
    }
    x
}

fn heat_solve(ctx: &Context, work: u64) -> Result<(Vec<f64>, f64), CommError> {
    let c = ctx.comm();
    let rows = ctx.rows() as usize;
    let range = ctx.partition(rows);
    let mut u: Vec<f64> = range.clone().map(initial).collect();
    let d = ctx.distribution();
    let me = ctx.rank();
    let (lower, upper) = if u.is_empty() {
        (None, None)
    } else {
        (
            (0..me).rev().find(|&r| d[r] > 0),
            (me + 1..d.len()).find(|&r| d[r] > 0),
        )
    };
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
    let mut halo = [0.0; 2];
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
                    new[i] = step(left, u[i], right) + 0.0 * busy(work);
                }
                clock::charge(u.len() as f64 * STENCIL_S);
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

fn heat(args: &Args, work: u64) -> Result<(), BoxError> {
    let args = Args {
        rows: args.rows.or(Some(HEAT_ROWS as u64)),
        ..args.clone()
    };
    let launch = Launch::new(&args);
    let settings = launch.settings()?;
    let (reference, residual) = sequential(settings.rows as usize, settings.iterations);
    let out = launch.run(|ctx| heat_solve(ctx, work))?;
    // Under MPI this process holds one rank's result; on threads, every rank's.
    let first = match args.backend {
        Backend::Mpi => mpi_records_rank(),
        Backend::Threads => 0,
    };
    for (rank, (field, r)) in (first..).zip(&out) {
        let range = mheta_runtime::context::partition_of(
            &settings.distribution,
            settings.rows,
            rank,
            settings.rows as usize,
        );
        if field[..] != reference[range.clone()] || *r != residual {
            return Err(format!(
                "rank {rank}: rows {range:?} differ from the sequential reference"
            )
            .into());
        }
        println!("heat: rank {rank} verified");
    }
    Ok(())
}

fn fail(args: &Args) -> Result<(), BoxError> {
    Launch::new(args).run(|ctx| -> Result<(), BoxError> {
        let c = ctx.comm();
        c.barrier()?;
        let last = ctx.size() - 1;
        if ctx.rank() == last {
            return Err("deliberate failure on the last rank".into());
        }
        let mut x = [0.0];
        c.receive_into(last, &mut x)?;
        Ok(())
    })?;
    Ok(())
}

fn finished_peer(args: &Args) -> Result<(), BoxError> {
    Launch::new(args).run(|ctx| -> Result<(), BoxError> {
        if ctx.rank() == 0 {
            let mut x = [0.0];
            ctx.comm().receive_into(1, &mut x)?;
        }
        Ok(())
    })?;
    Ok(())
}

fn stopped(args: &Args) -> Result<(), BoxError> {
    Launch::new(args).run(|ctx| -> Result<(), BoxError> {
        let c = ctx.comm();
        c.barrier()?;
        let last = ctx.size() - 1;
        if ctx.rank() == last {
            // SAFETY: stops this process; nothing else happens until it is continued or killed.
            unsafe { libc::raise(libc::SIGSTOP) };
        } else if ctx.rank() == 0 {
            let mut x = [0.0];
            c.receive_into(last, &mut x)?;
        } else {
            c.all_reduce_value(1.0, ReduceOp::Sum)?;
        }
        Ok(())
    })?;
    Ok(())
}
