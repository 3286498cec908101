//! `mheta-timings/1`: the main loop's iteration times of one run, instrumented or not
//! (`--timings FILE`). It is what "actual" means when a prediction is checked (seed §6.2.2):
//! an uninstrumented run keeps its in-core arrays in memory, where an instrumented run forces
//! them through the disk, so only an uninstrumented run's own clock says how long it takes.

#[cfg(feature = "read")]
use serde::Deserialize;

/// Schema string of the timings file.
pub const TIMINGS_SCHEMA: &str = "mheta-timings/1";

/// Every rank's iteration spans on the run's clock, rank 0's time base.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct Timings {
    /// The schema string, [`TIMINGS_SCHEMA`] for this version.
    pub schema: String,
    /// `wall`, `virtual` or `charged`.
    pub clock: String,
    /// Total rows S of the distributed dimension.
    pub rows: u64,
    /// Rows per rank.
    pub distribution: Vec<u64>,
    /// Iterations the program ran.
    pub iterations: u32,
    /// Seconds per iteration in the steady state: [`Timings::steady_iteration_s`].
    pub iteration_s: f64,
    /// One entry per rank, in rank order.
    pub nodes: Vec<NodeTimings>,
}

/// One rank's iterations, in order.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct NodeTimings {
    /// The rank, equal to the entry's index in `nodes`.
    pub rank: usize,
    /// Every iteration the rank ran, warm-up included.
    pub iterations: Vec<IterationSpan>,
}

/// One trip of the main loop on one rank.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct IterationSpan {
    /// When the iteration began, seconds on the run's clock.
    pub begin_s: f64,
    /// When the iteration ended, seconds on the run's clock.
    pub end_s: f64,
}

/// The fewest iterations at the start of a run of `recorded` iterations that are a warm-up and
/// not part of the steady state: they pay for first-touch page faults, growing buffers and cold
/// caches. Two when there are at least four, because arrays that swap roles every iteration
/// (Jacobi's A and B) only reach their steady state once each has served in both roles, and
/// three when that would leave an odd number: the steady state holds an even number of
/// iterations whenever it holds two or more, so that such arrays are seen as often in each
/// role. (Jacobi out of core alternates 88 ms iterations, writing its out-of-core array, with
/// 67 ms ones, reading it: the last three of five measured 81 ms, not 77.) One when there are
/// two or three; none for a single iteration, which is all there is. A run's own warm-up
/// ([`warm_up`]) can be longer, by even steps.
pub fn warm_up_iterations(recorded: usize) -> usize {
    match recorded {
        0 | 1 => 0,
        2 | 3 => 1,
        n if n % 2 == 1 => 3,
        _ => 2,
    }
}

/// The warm-up of a run whose iterations took `durations` seconds, in order: by the MSER rule
/// of simulation output analysis (White, 1997), the truncation point `d` that minimises the
/// squared standard error of the mean of what remains, `Σ_{i≥d} (x_i − x̄_d)² / (n − d)²`,
/// among `warm_up_iterations(n)`, that plus 2, plus 4, … up to half the run (even steps, so
/// that arrays swapping roles are seen as often in each role; the earliest on ties). The
/// fewest is a candidate even when it is more than half a short run.
///
/// Two iterations are not always enough: on this project's machine rna's third iteration ran
/// 28 % above its steady ones, and instrumented runs of Jacobi and Lanczos (whose record
/// buffers are still growing) stayed 10–40 % above for their third to sixth iterations.
pub fn warm_up(durations: &[f64]) -> usize {
    let n = durations.len();
    let least = warm_up_iterations(n);
    if n < least + 2 || durations.iter().any(|x| !x.is_finite()) {
        return least;
    }
    // Suffix sums about the first kept duration (less cancellation).
    let origin = durations[least];
    let (mut sum, mut squares) = (0.0, 0.0);
    let mut best = (f64::INFINITY, least);
    for d in (least..n).rev() {
        let x = durations[d] - origin;
        sum += x;
        squares += x * x;
        if d > least.max(n / 2) || (d - least) % 2 != 0 {
            continue;
        }
        let kept = (n - d) as f64;
        let score = (squares - sum * sum / kept).max(0.0) / (kept * kept);
        if score <= best.0 {
            best = (score, d);
        }
    }
    best.1
}

impl Timings {
    /// Seconds per iteration once the run is under way: the time between the end of the last
    /// warm-up iteration ([`Timings::warm_up_of`]) and the end of the last iteration, divided by
    /// the iterations in between, where an iteration ends when its last rank finishes it. The
    /// model is a steady-state prediction, so warm-up costs are left out; measuring end to end
    /// counts a pipeline's fill once, not once per iteration. With a single iteration, that
    /// iteration's span (first begin to last end) is all there is. `None` when no rank timed an
    /// iteration.
    pub fn steady_iteration_s(nodes: &[NodeTimings]) -> Option<f64> {
        let end = |i| machine_end(nodes, i);
        match nodes.iter().map(|n| n.iterations.len()).max()? {
            0 => None,
            1 => Some((end(0) - machine_begin(nodes)).max(0.0)),
            k => {
                let warm = Timings::warm_up_of(nodes);
                Some(((end(k - 1) - end(warm - 1)) / (k - warm) as f64).max(0.0))
            }
        }
    }

    /// The warm-up of a run ([`warm_up`]) from every rank's iteration spans: iteration `i` of
    /// the machine lasts from the end of iteration `i − 1` on its last rank (the first, from
    /// the earliest begin) to the end of iteration `i` on its last rank. At least 1 for two or
    /// more iterations, so that the steady state is measured between iteration ends.
    pub fn warm_up_of(nodes: &[NodeTimings]) -> usize {
        warm_up(&Timings::machine_iterations_s(nodes))
    }

    /// Each iteration's duration on the machine: from the end of the previous iteration on its
    /// last rank (the first: from the earliest begin) to the end of this one on its last rank.
    /// They sum to the run's span, however much the ranks' iterations overlap (a pipeline's).
    pub fn machine_iterations_s(nodes: &[NodeTimings]) -> Vec<f64> {
        let count = nodes.iter().map(|n| n.iterations.len()).max().unwrap_or(0);
        let mut previous = machine_begin(nodes);
        (0..count)
            .map(|i| {
                let end = machine_end(nodes, i);
                let d = end - previous;
                previous = end;
                d
            })
            .collect()
    }
}

/// When iteration `i` ends on the machine: when its last rank ends it.
fn machine_end(nodes: &[NodeTimings], i: usize) -> f64 {
    nodes
        .iter()
        .filter_map(|n| n.iterations.get(i))
        .map(|s| s.end_s)
        .fold(f64::NEG_INFINITY, f64::max)
}

/// When the first iteration begins on the machine: on its first rank.
fn machine_begin(nodes: &[NodeTimings]) -> f64 {
    nodes
        .iter()
        .filter_map(|n| n.iterations.first())
        .map(|s| s.begin_s)
        .fold(f64::INFINITY, f64::min)
}

crate::json_object!(Timings {
    field schema, field clock, field rows, field distribution, field iterations, field iteration_s,
    field nodes,
});
crate::serialize_by_hand!(Timings);
crate::json_object!(NodeTimings { field rank, field iterations });
crate::json_object!(IterationSpan { field begin_s, field end_s });

#[cfg(test)]
mod tests {
    use super::*;

    fn node(rank: usize, spans: &[(f64, f64)]) -> NodeTimings {
        NodeTimings {
            rank,
            iterations: spans
                .iter()
                .map(|&(begin_s, end_s)| IterationSpan { begin_s, end_s })
                .collect(),
        }
    }

    #[test]
    fn written_by_hand_reads_back_with_serde() {
        let t = Timings {
            schema: TIMINGS_SCHEMA.into(),
            clock: "wall".into(),
            rows: 10,
            distribution: vec![4, 6],
            iterations: 2,
            iteration_s: 0.125,
            nodes: vec![node(0, &[(0.0, 0.25), (0.25, 0.375)]), node(1, &[])],
        };
        let back: Timings = serde_json::from_str(&crate::json::pretty(&t)).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn steady_state_leaves_out_the_warm_up() {
        // A slow first iteration (cold caches) then 0.1 s per iteration; rank 1 finishes each
        // iteration 0.01 s after rank 0. Three iterations: one warm-up.
        let nodes = [
            node(0, &[(0.0, 0.5), (0.5, 0.6), (0.6, 0.7)]),
            node(1, &[(0.0, 0.51), (0.51, 0.61), (0.61, 0.71)]),
        ];
        let s = Timings::steady_iteration_s(&nodes).unwrap();
        assert!((s - 0.1).abs() < 1e-12, "{s}");
        // Five iterations, the second still slow (0.3 s): three warm-ups (an even two remain),
        // then 0.1 s each.
        let nodes = [node(
            0,
            &[(0.0, 0.5), (0.5, 0.8), (0.8, 0.9), (0.9, 1.0), (1.0, 1.1)],
        )];
        let s = Timings::steady_iteration_s(&nodes).unwrap();
        assert!((s - 0.1).abs() < 1e-12, "{s}");
    }

    #[test]
    fn a_run_leaves_out_the_warm_up_its_durations_show() {
        // Six iterations or fewer: only the fewest (half the run holds no other even step).
        assert_eq!(warm_up(&[9.0, 5.0, 3.0, 2.0, 1.0, 1.0]), 2);
        assert_eq!(warm_up(&[9.0, 1.0, 1.0]), 1);
        // A warm-up that lasts four iterations: from the fifth on every duration is 1, so
        // d = 4 and d = 6 both leave a standard error of 0; the earlier is taken.
        let slow_start = [10.0, 5.0, 3.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        assert_eq!(warm_up(&slow_start), 4);
        // Steady from the third with noise of ±0.1 about 1.1: Σ(x − x̄)²/(n − d)² is
        // 0.1/100 = 0.001 for d = 2, 0.08/64 = 0.00125 for d = 4, 0.06/36 for d = 6: d = 2.
        let noisy = [10.0, 5.0, 1.0, 1.2, 1.0, 1.2, 1.0, 1.2, 1.0, 1.2, 1.0, 1.2];
        assert_eq!(warm_up(&noisy), 2);
        // Never more than half the run: slow for eight of twelve, the candidates are 2, 4, 6.
        // d = 2: six 5s and four 1s, mean 3.4, Σ(x − x̄)² = 6·2.56 + 4·5.76 = 38.4, /100 = 0.384;
        // d = 4: four and four, 32/64 = 0.5; d = 6: two and four, 21.33/36 = 0.593. So d = 2.
        let late = [5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 1.0, 1.0, 1.0, 1.0];
        assert_eq!(warm_up(&late), 2);
        // Not a number: the fewest.
        assert_eq!(warm_up(&[f64::NAN; 12]), 2);
        // The steady state of timings leaves the same iterations out: four warm-up
        // iterations, then 0.1 s each.
        let mut end = 0.0;
        let spans: Vec<(f64, f64)> = [1.0, 0.5, 0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]
            .iter()
            .map(|d| {
                end += d;
                (end - d, end)
            })
            .collect();
        let nodes = [node(0, &spans)];
        assert_eq!(Timings::warm_up_of(&nodes), 4);
        let s = Timings::steady_iteration_s(&nodes).unwrap();
        assert!((s - 0.1).abs() < 1e-12, "{s}");
    }

    #[test]
    fn warm_up_counts() {
        let warm: Vec<usize> = (0..10).map(warm_up_iterations).collect();
        assert_eq!(warm, [0, 0, 1, 1, 2, 3, 2, 3, 2, 3]);
        // Every run of three or more keeps an even number.
        for n in 3..200 {
            assert_eq!((n - warm_up_iterations(n)) % 2, 0, "{n}");
        }
    }

    #[test]
    fn arrays_swapping_roles_are_measured_as_often_in_each_role() {
        // Iterations alternate 0.088 s and 0.067 s (Jacobi writing, then reading, its
        // out-of-core array) after a slow first one. Five recorded: three warm-up, then one of
        // each, (0.067 + 0.088) / 2 = 0.0775 s; leaving out two would keep 0.088, 0.067, 0.088
        // (0.081 s), and a run starting on the other role 0.074 s.
        let durations = [0.2, 0.067, 0.088, 0.067, 0.088];
        assert_eq!(warm_up(&durations), 3);
        let mut end = 0.0;
        let spans: Vec<(f64, f64)> = durations
            .iter()
            .map(|d| {
                end += d;
                (end - d, end)
            })
            .collect();
        let s = Timings::steady_iteration_s(&[node(0, &spans)]).unwrap();
        assert!((s - 0.0775).abs() < 1e-12, "{s}");
        // Eleven: the candidates are 3 and 5, both keeping whole pairs. d = 3 leaves
        // 8 · 0.0105² / 8² = 1.38e-5, d = 5 leaves 6 · 0.0105² / 6² = 1.84e-5: d = 3.
        let long = [
            0.2, 0.1, 0.088, 0.067, 0.088, 0.067, 0.088, 0.067, 0.088, 0.067, 0.088,
        ];
        assert_eq!(warm_up(&long), 3);
    }

    #[test]
    fn a_pipeline_fill_is_counted_once() {
        // A three-stage pipeline: rank r starts iteration i at 0.2·i + 0.1·r and takes 0.2 s.
        let nodes: Vec<NodeTimings> = (0..3)
            .map(|r| {
                let spans: Vec<(f64, f64)> = (0..4)
                    .map(|i| {
                        let b = 0.2 * i as f64 + 0.1 * r as f64;
                        (b, b + 0.2)
                    })
                    .collect();
                node(r, &spans)
            })
            .collect();
        let s = Timings::steady_iteration_s(&nodes).unwrap();
        assert!((s - 0.2).abs() < 1e-12, "{s}");
    }

    #[test]
    fn one_iteration_is_its_span_and_none_is_nothing() {
        let nodes = [node(0, &[(1.0, 1.3)]), node(1, &[(1.1, 1.5)])];
        let s = Timings::steady_iteration_s(&nodes).unwrap();
        assert!((s - 0.5).abs() < 1e-12, "{s}");
        assert_eq!(Timings::steady_iteration_s(&[node(0, &[])]), None);
        assert_eq!(Timings::steady_iteration_s(&[]), None);
    }
}
