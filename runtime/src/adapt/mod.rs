//! Adapting to load while the program runs, as the seeds' run-time systems do: MHETA picks one
//! distribution before the run; these move rows when the nodes' speeds change during it.
//!
//! - [`Rebalancer`] (seed 001, Rencuzogullari & Dwarkadas §3.2): relative powers from each
//!   rank's measured time in a parallel region, smoothed over several iterations; rows move
//!   when the spread of the powers changes by more than a hysteresis factor.
//! - [`lb`] (seed 004, Mills, Appendix A): LBlib's flexible-phase balancing — every rank gets
//!   the same time for a phase whose amount of work may differ between ranks.
//! - [`mm`] (seed 004, Mills, Ch. 5–6): MMlib's memory malleability — out-of-core arrays cache
//!   as many panels as the memory the node has now allows (`--mmlib`).

pub mod lb;
pub mod mm;
mod rebalance;

pub use rebalance::{Access, Change, Layout, MoveError, Powers, RebalanceConfig, Rebalancer};
