//! The attribute on a method, whose analysis warns (the macro in the loop may hide
//! communication): the warning stays inside the method, since an `impl` block takes no unnamed
//! `const` item, and the program compiles and runs.
use mheta::{CommError, CommExt, Context, ReduceOp};

macro_rules! halve {
    ($v:expr) => {
        $v * 0.5
    };
}

struct Solver {
    scale: f64,
}

impl Solver {
    #[mheta::solver]
    fn solve(&self, ctx: &Context) -> Result<f64, CommError> {
        let comm = ctx.comm();
        let mut sum = [1.0];
        for _ in 0..ctx.iterations() {
            let local = halve!(sum[0]) * self.scale;
            comm.all_reduce(&[local], &mut sum, ReduceOp::Sum)?;
        }
        Ok(sum[0])
    }
}

fn main() {
    let solver = Solver { scale: 1.0 };
    let args = mheta::Args { ranks: Some(2), rows: Some(4), iterations: 2, ..mheta::Args::default() };
    mheta::launch(&args, |ctx| solver.solve(ctx)).unwrap();
}
