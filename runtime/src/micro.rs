//! Network microbenchmarks (seed §5.2): send and receive overheads, latency and per-byte
//! transfer time, measured at the start of an instrumented run on the run's own clock.
//!
//! Ranks 0 and 1 ping-pong empty and `LARGE`-byte messages; with a round trip `rtt(b)`,
//! `latency = rtt(0)/2 − O_S − O_←` and `per_byte = (rtt(LARGE) − rtt(0)) / (2 · LARGE)`.
//! `O_S` is the median time of a send call, `O_←` the median time of a receive call less its
//! blocked time (measured on rank 1 and sent to rank 0). A single rank measures the overheads by
//! sending to itself and takes latency and bandwidth from the cluster description. Every rank
//! must call [`network`]; rank 0's result is the one that counts.
//!
//! On an emulated network ([`Comm::emulated_network`]: the threads backend) latency and
//! bandwidth are the ones the emulator applies, not fitted: the fit only estimates them, and
//! on a virtual clock it comes out low by the CPU time a receive spends being woken, which the
//! round trip hides in the receiver's wait (24–50 µs for an emulated 60 µs over six runs).

use crate::clock;
use crate::comm::{Comm, CommError};
use crate::format::{Microbenchmarks, NetworkSpec};

/// Bytes of the large ping-pong message.
pub const LARGE: usize = 64 << 10;
/// Timed repetitions per size (after `WARMUP` untimed ones); medians are kept.
pub const REPETITIONS: usize = 15;
const WARMUP: usize = 3;
const TAG: i32 = 0x6d68; // User tag space; the benchmark runs before the program starts.

/// Measure the network costs. Call on every rank; returns the figures on rank 0 (and rank 0's
/// view elsewhere is not needed: other ranks return zeros).
pub fn network(comm: &dyn Comm, spec: &NetworkSpec) -> Result<Microbenchmarks, CommError> {
    let result = match (comm.rank(), comm.size()) {
        (0, 1) => self_benchmark(comm, spec),
        (0, _) => ping(comm),
        (1, _) => pong(comm).map(|()| Microbenchmarks::default()),
        _ => Ok(Microbenchmarks::default()),
    }?;
    comm.barrier_bytes()?;
    Ok(result)
}

fn ping(comm: &dyn Comm) -> Result<Microbenchmarks, CommError> {
    let big = vec![0u8; LARGE];
    let mut big_back = vec![0u8; LARGE];
    let mut send_times = Vec::new();
    let mut rtt = [Vec::new(), Vec::new()];
    for (i, len) in [0, LARGE].into_iter().enumerate() {
        for rep in 0..WARMUP + REPETITIONS {
            let t0 = clock::now();
            comm.send_bytes(1, TAG, &big[..len])?;
            let t1 = clock::now();
            comm.receive_bytes(1, TAG, &mut big_back[..len])?;
            let t2 = clock::now();
            if rep >= WARMUP {
                rtt[i].push(t2 - t0);
                if len == 0 {
                    send_times.push(t1 - t0);
                }
            }
        }
    }
    let mut recv = [0u8; 8];
    comm.receive_bytes(1, TAG, &mut recv)?;
    let recv_overhead_s = f64::from_le_bytes(recv);
    let send_overhead_s = median(&mut send_times);
    let (rtt0, rtt_large) = (median(&mut rtt[0]), median(&mut rtt[1]));
    let (latency_s, per_byte_s) = match comm.emulated_network() {
        Some(spec) => emulated(&spec),
        None => (
            (rtt0 / 2.0 - send_overhead_s - recv_overhead_s).max(0.0),
            ((rtt_large - rtt0) / (2.0 * LARGE as f64)).max(0.0),
        ),
    };
    Ok(Microbenchmarks {
        send_overhead_s,
        recv_overhead_s,
        latency_s,
        per_byte_s,
    })
}

/// Latency and seconds per byte of a network described by `spec`.
fn emulated(spec: &NetworkSpec) -> (f64, f64) {
    let bw = spec.bandwidth_bps;
    let per_byte_s = if bw.is_finite() && bw > 0.0 && bw < f64::MAX {
        1.0 / bw
    } else {
        0.0
    };
    (spec.latency_s.max(0.0), per_byte_s)
}

fn pong(comm: &dyn Comm) -> Result<(), CommError> {
    let mut buf = vec![0u8; LARGE];
    let mut recv_times = Vec::new();
    for len in [0, LARGE] {
        for rep in 0..WARMUP + REPETITIONS {
            let t0 = clock::now();
            let t = comm.receive_bytes(0, TAG, &mut buf[..len])?;
            let t1 = clock::now();
            if rep >= WARMUP {
                recv_times.push((t1 - t0 - t.blocked_s).max(0.0));
            }
            comm.send_bytes(0, TAG, &buf[..len])?;
        }
    }
    comm.send_bytes(0, TAG, &median(&mut recv_times).to_le_bytes())?;
    Ok(())
}

fn self_benchmark(comm: &dyn Comm, spec: &NetworkSpec) -> Result<Microbenchmarks, CommError> {
    let (mut sends, mut recvs) = (Vec::new(), Vec::new());
    for rep in 0..WARMUP + REPETITIONS {
        let t0 = clock::now();
        comm.send_bytes(0, TAG, &[])?;
        let t1 = clock::now();
        let t = comm.receive_bytes(0, TAG, &mut [])?;
        let t2 = clock::now();
        if rep >= WARMUP {
            sends.push(t1 - t0);
            recvs.push((t2 - t1 - t.blocked_s).max(0.0));
        }
    }
    let (latency_s, per_byte_s) = emulated(&comm.emulated_network().unwrap_or(*spec));
    Ok(Microbenchmarks {
        send_overhead_s: median(&mut sends),
        recv_overhead_s: median(&mut recvs),
        latency_s,
        per_byte_s,
    })
}

fn median(xs: &mut [f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}
