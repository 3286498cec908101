//! A job of the gang simulator from a real program: its critical number, sequential time and
//! parallel fraction (seed §3.2.2) read off the MHETA model of its structure, measurements and
//! cluster.
//!
//! The simulated machine is homogeneous (§3.2.4 assumes so), so we build it from identical
//! copies of one node of the cluster (`node`, the first by default in the CLI): the critical
//! number is the fewest such copies that hold the program's rows, split evenly, with every
//! distributed array in memory — the placement the model (and the runtime, through
//! `ooc::plan`) would choose. It may therefore exceed the cluster's own node count.

use super::jobs::Job;
use super::GangError;
use crate::Model;

/// What the bridge reads off the model, before it is turned into STU.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Derived {
    /// `CN_i`: the fewest copies of the node that keep the data in core.
    pub critical_number: u64,
    /// Seconds one iteration of all `S` rows takes on one copy of the node without I/O:
    /// `T(S) = a + b · S`, the in-core cost line (see `percent_parallel`) extended to `S`.
    pub sequential_iteration_s: f64,
    /// `P_i`: the share of `T(S)` that divides among processors. The model's in-core cost of a
    /// node holding `r` rows (computation and message overheads, [`Model::node_cost`]) is a
    /// line `a + b · r` between `⌈S / CN⌉` rows and half as many; `b · S` is the work that
    /// splits with the rows, `a` what every process pays whatever it holds. So
    /// `P = 100 · b · S / (a + b · S)`. Time blocked waiting for messages is left out, as the
    /// thesis leaves communication out of `P_i` (§3.2.2 models it as separate events).
    pub percent_parallel: f64,
}

/// Reads [`Derived`] off `model` for copies of node `node`.
pub fn derive(model: &Model, node: usize) -> Result<Derived, GangError> {
    if node >= model.nodes() {
        return Err(GangError::BadConfig {
            field: "node",
            value: node.to_string(),
            expected: "a node of the cluster",
        });
    }
    let total = model.total_rows().max(1);
    let share = |k: u64| total.div_ceil(k);
    if !model.in_core(node, 1) {
        return Err(GangError::BadConfig {
            field: "node",
            value: node.to_string(),
            expected: "a node whose memory holds at least one row of the program's arrays",
        });
    }
    // The placement keeps fewer rows in core whenever it keeps more: search the fewest copies.
    let (mut lo, mut hi) = (1u64, total);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if model.in_core(node, share(mid)) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let critical_number = lo;
    let r1 = share(critical_number);
    let r2 = (r1 / 2).max(1);
    let (t1, t2) = (model.node_cost(node, r1), model.node_cost(node, r2));
    let (a, b) = if r1 > r2 {
        let b = ((t1 - t2) / (r1 - r2) as f64).max(0.0);
        ((t1 - b * r1 as f64).max(0.0), b)
    } else {
        (0.0, t1)
    };
    let parallel = b * total as f64;
    let sequential_iteration_s = a + parallel;
    let percent_parallel = if sequential_iteration_s > 0.0 {
        100.0 * parallel / sequential_iteration_s
    } else {
        100.0
    };
    Ok(Derived {
        critical_number,
        sequential_iteration_s,
        percent_parallel,
    })
}

impl Derived {
    /// The job of `iterations` iterations, with `stu_s` seconds per simulated time unit.
    pub fn job(&self, name: String, iterations: u32, stu_s: f64) -> Result<Job, GangError> {
        if !(stu_s.is_finite() && stu_s > 0.0) {
            return Err(GangError::BadConfig {
                field: "stu",
                value: stu_s.to_string(),
                expected: "a positive number of seconds per STU",
            });
        }
        let job = Job {
            name,
            critical_number: u32::try_from(self.critical_number).unwrap_or(u32::MAX),
            sequential_time: self.sequential_iteration_s * f64::from(iterations) / stu_s,
            iterations,
            percent_parallel: self.percent_parallel,
        };
        job.check()?;
        Ok(job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{workload, Program};

    #[test]
    fn the_critical_number_is_the_fewest_copies_in_core() {
        // Synthetic Jacobi on 4 nodes whose memory holds 1.5 times the data in aggregate: one
        // node holds 1.5/4 of it, so 3 copies (1/3 each) fit and 2 (1/2 each) do not.
        let w = workload(Program::Jacobi, 4, 4 * 300);
        let model = Model::new(&w.structure, &w.measurements, &w.cluster).unwrap();
        let d = derive(&model, 0).unwrap();
        assert_eq!(d.critical_number, 3);
        assert!(model.in_core(0, 400) && !model.in_core(0, 600));
        // The line through the in-core costs of 400 and 200 rows, extended to 1200.
        let (t400, t200) = (model.node_cost(0, 400), model.node_cost(0, 200));
        let b = (t400 - t200) / 200.0;
        let a = t400 - 400.0 * b;
        assert!((d.sequential_iteration_s - (a + 1200.0 * b)).abs() < 1e-12);
        assert!((d.percent_parallel - 100.0 * 1200.0 * b / (a + 1200.0 * b)).abs() < 1e-9);
        assert!(
            d.percent_parallel > 50.0 && d.percent_parallel <= 100.0,
            "{d:?}"
        );
        let job = d.job("jacobi".into(), 100, 1e-3).unwrap();
        assert_eq!(job.critical_number, 3);
        assert!((job.sequential_time - d.sequential_iteration_s * 100.0 / 1e-3).abs() < 1e-6);
        assert!(derive(&model, 9).is_err());
        assert!(d.job("x".into(), 100, 0.0).is_err());
    }
}
