//! Flexible-phase load balancing, seed 004's LBlib (Mills, Appendix A and Ch. 3) in Rust.
//!
//! A *flexible phase* is work whose amount may differ between ranks without changing the
//! result's correctness, only its quality: the inner solver of a Jacobi–Davidson correction,
//! a smoother's sweeps, a Monte Carlo batch. Instead of giving every rank the same amount of
//! work, every rank gets the same *time* T; a rank slowed by other load simply does fewer
//! operations, and nobody waits at the synchronisation after the phase.
//!
//! | LBlib (C)                          | here                                              |
//! |------------------------------------|---------------------------------------------------|
//! | `lb_new_lbstruct(comm)`            | [`Balancer::new`]                                 |
//! | `lb_section_start(lbs)`            | [`Balancer::start`] → a [`Section`] guard         |
//! | `lb_section_end(lbs, ops)`         | [`Section::end`] (returns the rate)               |
//! | `lb_decide(lbs, ops, method, [f])` | [`Balancer::decide`] with a [`Method`]            |
//! | `lb_continue(lbs, done, needed)`   | [`Section::proceed`]                              |
//! | `lb_get_rates` / `lb_get_index`    | [`Balancer::rates`] / [`Balancer::index`]         |
//! | `lb_chkerr(lbs)`                   | compile errors and [`LbError`]                    |
//!
//! The misuse LBlib reports at run time through `lb_chkerr` is ruled out here:
//! - *continue outside a section*: [`Section::proceed`] is a method of the section guard,
//!   which exists only between start and end — a compile error;
//! - *a nested start on one structure*: the guard borrows its balancer mutably, so a second
//!   [`Balancer::start`] while it lives does not compile (another balancer's may nest);
//! - *decide before any timed section*, and *rates before a decide*: a typed error,
//!   [`LbError::NoRates`] and [`LbError::NotDecided`].
//!
//! ```compile_fail
//! # use mheta_runtime::adapt::lb::Balancer;
//! # fn nested(comm: &dyn mheta_runtime::Comm) {
//! let mut lb = Balancer::new(comm);
//! let outer = lb.start();
//! let inner = lb.start(); // error: `lb` is already borrowed by `outer`
//! # drop((outer, inner));
//! # }
//! ```
//!
//! ```compile_fail
//! # use mheta_runtime::adapt::lb::Balancer;
//! # fn outside(comm: &dyn mheta_runtime::Comm) {
//! let lb = Balancer::new(comm);
//! lb.proceed(3.0, 1.0); // error: `proceed` belongs to a running `Section`
//! # }
//! ```

use crate::clock;
use crate::comm::{Comm, CommError, CommExt};

/// How [`Balancer::decide`] turns the ranks' rates into the time T of the next section.
pub enum Method<'f> {
    /// The time the fastest rank needs for the operations (`LB_USE_FASTEST`).
    Fastest,
    /// The time the slowest rank needs for them (`LB_USE_SLOWEST`).
    Slowest,
    /// The caller's rule (`LB_USER_DEFINED`): given the operations and the rates in ascending
    /// order, the time.
    User(&'f dyn Fn(f64, &[f64]) -> f64),
}

/// Misuse of a [`Balancer`] that the types cannot rule out, and communication failures.
#[derive(Debug, thiserror::Error)]
pub enum LbError {
    /// `decide` before any section was timed on this rank (LBlib: no rates for `lb_decide`).
    #[error("decide needs the rate of a timed section first: time one with start() and end(ops)")]
    NoRates,
    /// The ranks' rates or index asked for before a `decide` exchanged them.
    #[error("the ranks' rates are exchanged by decide(): call it first")]
    NotDecided,
    /// A rate or a time that is not a positive finite number.
    #[error("{what} is {value}, expected a positive finite number")]
    Invalid {
        /// What was wrong (`the operations`, `the time T the method decided`).
        what: &'static str,
        /// Its value.
        value: f64,
    },
    /// The exchange of rates failed.
    #[error(transparent)]
    Comm(#[from] CommError),
}

/// One flexible section's load balancing state, on one rank of `comm` (LBlib's `LBS`).
pub struct Balancer<'c> {
    comm: &'c dyn Comm,
    /// This rank's rate in the last timed section, operations per second.
    rate: Option<f64>,
    /// Every rank's rate, ascending, with the ranks they belong to (after `decide`).
    exchanged: Option<(Vec<f64>, Vec<usize>)>,
    /// The time each rank may spend in the next section (after `decide`).
    allotted_s: Option<f64>,
}

impl<'c> Balancer<'c> {
    /// A balancer for a section that the ranks of `comm` execute together.
    pub fn new(comm: &'c dyn Comm) -> Balancer<'c> {
        Balancer {
            comm,
            rate: None,
            exchanged: None,
            allotted_s: None,
        }
    }

    /// Begins timing the section (on the rank's clock). The returned guard ends it.
    pub fn start(&mut self) -> Section<'_, 'c> {
        Section {
            begin_s: emulated_now(),
            balancer: self,
        }
    }

    /// This rank's rate in the last timed section, operations per second.
    pub fn rate(&self) -> Option<f64> {
        self.rate
    }

    /// The time T each rank may spend in the next section, once decided.
    pub fn allotted_s(&self) -> Option<f64> {
        self.allotted_s
    }

    /// Exchanges the ranks' rates (a collective call: one all-gather) and decides the time T
    /// every rank may spend in the next section for `ops` operations, by `method`. Returns T.
    pub fn decide(&mut self, ops: f64, method: Method<'_>) -> Result<f64, LbError> {
        let rate = self.rate.ok_or(LbError::NoRates)?;
        if !(ops.is_finite() && ops > 0.0) {
            return Err(LbError::Invalid {
                what: "the operations",
                value: ops,
            });
        }
        let mut all = vec![0.0; self.comm.size()];
        self.comm.all_gather(&[rate], &mut all)?;
        let mut index: Vec<usize> = (0..all.len()).collect();
        index.sort_by(|&a, &b| all[a].total_cmp(&all[b]).then(a.cmp(&b)));
        let sorted: Vec<f64> = index.iter().map(|&r| all[r]).collect();
        let t = match method {
            Method::Fastest => ops / sorted[sorted.len() - 1],
            Method::Slowest => ops / sorted[0],
            Method::User(rule) => rule(ops, &sorted),
        };
        if !(t.is_finite() && t > 0.0) {
            return Err(LbError::Invalid {
                what: "the time T the method decided",
                value: t,
            });
        }
        self.exchanged = Some((sorted, index));
        self.allotted_s = Some(t);
        Ok(t)
    }

    /// The ranks' rates in ascending order, as the last `decide` exchanged them.
    pub fn rates(&self) -> Result<&[f64], LbError> {
        self.exchanged
            .as_ref()
            .map(|(rates, _)| rates.as_slice())
            .ok_or(LbError::NotDecided)
    }

    /// The rank each of [`Balancer::rates`] belongs to.
    pub fn index(&self) -> Result<&[usize], LbError> {
        self.exchanged
            .as_ref()
            .map(|(_, index)| index.as_slice())
            .ok_or(LbError::NotDecided)
    }
}

/// A running flexible section: created by [`Balancer::start`], ended by [`Section::end`].
#[must_use = "a section is timed until `end(ops_completed)` is called"]
pub struct Section<'b, 'c> {
    balancer: &'b mut Balancer<'c>,
    begin_s: f64,
}

impl Section<'_, '_> {
    /// Whether `needed` more operations fit in the time T allotted by the last `decide`, at
    /// the rate this rank has had since the section began (`done` operations so far): keep
    /// going while it returns true. Before any `decide` (the first, fixed-length pass that
    /// measures the rates) and before the first operation it returns true.
    pub fn proceed(&self, done: f64, needed: f64) -> bool {
        let Some(allotted) = self.balancer.allotted_s else {
            return true;
        };
        let elapsed = self.elapsed_s();
        if !(done > 0.0 && elapsed > 0.0) {
            return true;
        }
        // Within rounding: operations that fill T exactly fit.
        elapsed + needed * elapsed / done <= allotted * (1.0 + 1e-12)
    }

    /// Seconds since the section began.
    pub fn elapsed_s(&self) -> f64 {
        emulated_now() - self.begin_s
    }

    /// Ends the section after `ops_completed` operations and returns this rank's rate
    /// (operations per second), which the next `decide` exchanges. A section of no
    /// operations or no measurable time leaves the last rate as it was.
    pub fn end(self, ops_completed: f64) -> f64 {
        let elapsed = self.elapsed_s();
        if ops_completed > 0.0 && elapsed > 0.0 && ops_completed.is_finite() {
            self.balancer.rate = Some(ops_completed / elapsed);
        }
        self.balancer.rate.unwrap_or(0.0)
    }
}

/// The rank's time as the node's speed has it: a wall clock emulating a slow node spins for
/// its extra time only when a compute region ends, so the slowdown owed so far counts too.
fn emulated_now() -> f64 {
    clock::now() + clock::owed_s()
}

#[cfg(test)]
mod tests;
