//! `launch` under MPI: this process runs one rank, then every rank's records go to rank 0.
//!
//! Order of a run: estimate this rank's clock offset to rank 0; run the rank's work exactly as
//! a threads rank does (`rank::rank_work`: clock, CPU slowdown, hooks, microbenchmarks, the
//! program); on failure abort the job; announce the end of the work and wait for every rank
//! ([`MpiComm::finish`]); in an instrumented run pack the records (times shifted onto rank 0's
//! clock) and gather them to rank 0. The runtime's own messages travel on a communicator of
//! their own, so they never match the program's.

use std::sync::Arc;

use super::MpiComm;
use crate::clock;
use crate::comm::{Comm, CommError};
use crate::context::{Context, RunSettings};
use crate::error::Error;
use crate::format::Microbenchmarks;
use crate::hooks::RankRecords;
use crate::measure::pack;
use crate::rank::rank_work;

/// Ping-pong rounds per rank of the clock offset estimation.
const OFFSET_ROUNDS: usize = 16;
const OFFSET_TAG: i32 = 1;

/// Run this process's rank of `settings` and hand back its result, every rank's records (on
/// rank 0 of an instrumented or timed run; empty elsewhere) and the network microbenchmarks.
pub(crate) fn run<R, E, F>(
    settings: Arc<RunSettings>,
    f: &F,
    benchmarks: bool,
) -> Result<(Vec<R>, Vec<RankRecords>, Microbenchmarks), Error>
where
    F: Fn(&Context) -> Result<R, E> + Sync,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let world = super::world()?;
    let program = MpiComm::duplicate_world()?.with_timeout(settings.comm_timeout);
    let runtime = MpiComm::duplicate_world()?.with_timeout(settings.comm_timeout);
    let rank = world.rank;
    let offset_s = estimate_offset(&runtime)?;
    let gather = settings.instrument || settings.timing;
    let (outcome, records, micro) =
        rank_work(rank, Box::new(program.clone()), settings, f, benchmarks);
    let result = match outcome {
        Ok(r) => r,
        Err(message) => super::abort(rank, &message),
    };
    if let Err(e) = program.finish() {
        super::abort(rank, &e.to_string());
    }
    let all = if gather {
        gather_records(&runtime, &records, offset_s)?
    } else {
        Vec::new()
    };
    Ok((vec![result], all, micro))
}

/// Seconds to add to this rank's clock to read rank 0's (NTP style): each rank in turn sends
/// its time to rank 0 and gets rank 0's back; with send time `t0`, rank 0's time `t1` and
/// arrival `t2`, the offset is `t1 − (t0 + t2)/2`, taken from the round with the shortest round
/// trip. Every rank must call it; rank 0's offset is 0.
pub fn estimate_offset(comm: &MpiComm) -> Result<f64, CommError> {
    let mut buf = [0u8; 8];
    let offset = if comm.rank() == 0 {
        for r in 1..comm.size() {
            for _ in 0..OFFSET_ROUNDS {
                comm.receive_bytes(r, OFFSET_TAG, &mut buf)?;
                comm.send_bytes(r, OFFSET_TAG, &clock::now().to_le_bytes())?;
            }
        }
        0.0
    } else {
        let mut best = (f64::INFINITY, 0.0);
        for _ in 0..OFFSET_ROUNDS {
            let t0 = clock::now();
            comm.send_bytes(0, OFFSET_TAG, &t0.to_le_bytes())?;
            comm.receive_bytes(0, OFFSET_TAG, &mut buf)?;
            let t2 = clock::now();
            let t1 = f64::from_le_bytes(buf);
            if t2 - t0 < best.0 {
                best = (t2 - t0, t1 - (t0 + t2) / 2.0);
            }
        }
        best.1
    };
    comm.barrier_bytes()?;
    Ok(offset)
}

/// Pack this rank's records and gather every rank's to rank 0, where they are unpacked in rank
/// order; other ranks get an empty list.
pub(crate) fn gather_records(
    comm: &MpiComm,
    records: &RankRecords,
    offset_s: f64,
) -> Result<Vec<RankRecords>, Error> {
    let packed = pack::pack(records, offset_s);
    let p = comm.size();
    let root = comm.rank() == 0;
    let mut lengths = vec![0u8; if root { 8 * p } else { 0 }];
    comm.gather_bytes(
        0,
        &(packed.len() as u64).to_le_bytes(),
        &mut lengths,
        &vec![8; p],
    )?;
    if !root {
        comm.gather_bytes(0, &packed, &mut [], &[])?;
        return Ok(Vec::new());
    }
    let counts: Vec<usize> = lengths
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8-byte chunks")) as usize)
        .collect();
    let mut all = vec![0u8; counts.iter().sum()];
    comm.gather_bytes(0, &packed, &mut all, &counts)?;
    let mut out = Vec::with_capacity(p);
    let mut at = 0;
    for (r, &n) in counts.iter().enumerate() {
        let rr = pack::unpack(&all[at..at + n])
            .map_err(|e| Error::Measurements(format!("records of rank {r}: {e}")))?;
        out.push(rr);
        at += n;
    }
    Ok(out)
}
