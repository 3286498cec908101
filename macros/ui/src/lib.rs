//! Solvers the macro tests run. They live in the library so that `#[mheta::solver]` analyses
//! this crate through its Cargo.toml, exactly as `mheta analyze macros/ui` does.

use mheta::{CommError, CommExt, Context, ReduceOp};

/// A heat-equation smoother: each outer iteration makes `sweeps` Jacobi sweeps, each followed
/// by a halo exchange (a nested iteration whose trip count is only known at run time), then
/// all-reduces the sum of squares of the local rows.
#[mheta::solver]
pub fn heat(ctx: &Context, cols: usize, sweeps: usize) -> Result<f64, CommError> {
    let comm = ctx.comm();
    let (rank, size) = (ctx.rank(), ctx.size());
    let rows = ctx.local_rows(ctx.rows() as usize);
    let mut u = vec![0.0f64; (rows + 2) * cols];
    for (k, v) in u.iter_mut().enumerate() {
        *v = ((rank * 31 + k) % 7) as f64;
    }
    let mut next = u.clone();
    let mut norm = [0.0];
    for _ in 0..ctx.iterations() {
        for _ in 0..sweeps {
            for i in 1..=rows {
                for j in 1..cols - 1 {
                    next[i * cols + j] = 0.25
                        * (u[(i - 1) * cols + j]
                            + u[(i + 1) * cols + j]
                            + u[i * cols + j - 1]
                            + u[i * cols + j + 1]);
                }
            }
            std::mem::swap(&mut u, &mut next);
            if rank > 0 {
                comm.send(rank - 1, &u[cols..2 * cols])?;
                comm.receive_into(rank - 1, &mut u[..cols])?;
            }
            if rank + 1 < size {
                comm.receive_into(rank + 1, &mut u[(rows + 1) * cols..])?;
                comm.send(rank + 1, &u[rows * cols..(rows + 1) * cols])?;
            }
        }
        let mut local = 0.0;
        for i in 1..=rows {
            for j in 0..cols {
                local += u[i * cols + j] * u[i * cols + j];
            }
        }
        comm.all_reduce(&[local], &mut norm, ReduceOp::Sum)?;
    }
    Ok(norm[0].sqrt())
}

/// [`heat`] without the attribute: the uninstrumented baseline of the tests and the benchmark.
pub fn heat_plain(ctx: &Context, cols: usize, sweeps: usize) -> Result<f64, CommError> {
    let comm = ctx.comm();
    let (rank, size) = (ctx.rank(), ctx.size());
    let rows = ctx.local_rows(ctx.rows() as usize);
    let mut u = vec![0.0f64; (rows + 2) * cols];
    for (k, v) in u.iter_mut().enumerate() {
        *v = ((rank * 31 + k) % 7) as f64;
    }
    let mut next = u.clone();
    let mut norm = [0.0];
    for _ in 0..ctx.iterations() {
        for _ in 0..sweeps {
            for i in 1..=rows {
                for j in 1..cols - 1 {
                    next[i * cols + j] = 0.25
                        * (u[(i - 1) * cols + j]
                            + u[(i + 1) * cols + j]
                            + u[i * cols + j - 1]
                            + u[i * cols + j + 1]);
                }
            }
            std::mem::swap(&mut u, &mut next);
            if rank > 0 {
                comm.send(rank - 1, &u[cols..2 * cols])?;
                comm.receive_into(rank - 1, &mut u[..cols])?;
            }
            if rank + 1 < size {
                comm.receive_into(rank + 1, &mut u[(rows + 1) * cols..])?;
                comm.send(rank + 1, &u[rows * cols..(rows + 1) * cols])?;
            }
        }
        let mut local = 0.0;
        for i in 1..=rows {
            for j in 0..cols {
                local += u[i * cols + j] * u[i * cols + j];
            }
        }
        comm.all_reduce(&[local], &mut norm, ReduceOp::Sum)?;
    }
    Ok(norm[0].sqrt())
}
