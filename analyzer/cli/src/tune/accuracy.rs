//! Prediction accuracy as in seed §6.2.2: `1 − |predicted − actual| / min(predicted, actual)`.

use serde::{Deserialize, Serialize};

/// The accuracy of one prediction. Equal times give 1; a prediction off by the smaller time
/// gives 0, and worse predictions are negative. When either time is not positive the ratio is
/// undefined: the accuracy is 1 if both are equal and 0 otherwise.
pub fn accuracy(predicted_s: f64, actual_s: f64) -> f64 {
    let smaller = predicted_s.min(actual_s);
    if smaller.is_nan() || smaller <= 0.0 || !predicted_s.is_finite() || !actual_s.is_finite() {
        return if predicted_s == actual_s { 1.0 } else { 0.0 };
    }
    1.0 - (predicted_s - actual_s).abs() / smaller
}

/// How well repeated runs of one distribution agree: the accuracy of the fastest run as a
/// prediction of the slowest, `1 − (max − min) / min`. A model's accuracy against their median
/// is held to this machine's noise: it cannot be told from a perfect one above this figure.
/// `None` with fewer than two runs.
pub fn repeatability(runs_s: &[f64]) -> Option<f64> {
    if runs_s.len() < 2 {
        return None;
    }
    run_range(runs_s).map(|(fastest, slowest)| accuracy(fastest, slowest))
}

/// The fastest and the slowest of `runs_s`; `None` without runs.
pub fn run_range(runs_s: &[f64]) -> Option<(f64, f64)> {
    let (first, rest) = runs_s.split_first()?;
    Some(
        rest.iter()
            .fold((*first, *first), |(lo, hi), &r| (lo.min(r), hi.max(r))),
    )
}

/// A distribution-free 95 % confidence interval for the median of the population `runs_s` were
/// drawn from: the order statistics `[x(j+1), x(n−j)]` (1-based, sorted) with the largest `j`
/// such that both ends miss the median with probability `2·P(B ≤ j) ≤ 5 %`, `B` the number of
/// runs below it (binomial, n, ½). Five runs or fewer cannot reach 95 % (their range covers the
/// median with probability 1 − 2/2ⁿ): the interval is then their range. `None` without runs.
pub fn median_interval(runs_s: &[f64]) -> Option<(f64, f64)> {
    let mut sorted = runs_s.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    // P(B ≤ j) summed term by term: C(n, i) / 2ⁿ, each from the one before.
    let mut term = 0.5f64.powi(n as i32);
    let mut below = term;
    let mut j = 0;
    while 2 * (j + 1) < n {
        term *= (n - j) as f64 / (j + 1) as f64;
        if 2.0 * (below + term) > 0.05 {
            break;
        }
        below += term;
        j += 1;
    }
    Some((sorted[j], sorted[n - 1 - j]))
}

/// Whether the median of `runs_s` is known to within `precision` of itself (a fraction): its
/// 95 % interval ([`median_interval`]) is at most `2 · precision` of the median wide. Runs that
/// cannot be compared (no runs, a time that is not a positive number) count as known: more of
/// them would not tell more.
pub fn median_known(runs_s: &[f64], precision: f64) -> bool {
    let median = mheta_runtime::stats::median(&mut runs_s.to_vec());
    let comparable = median > 0.0;
    !comparable || median_within(runs_s, precision * median)
}

/// Whether the 95 % interval of the median of `runs_s` ([`median_interval`]) reaches no further
/// than `half_width_s` on either side: at most `2 · half_width_s` wide. No runs, or an interval
/// with an end that is not a number, count as known.
pub fn median_within(runs_s: &[f64], half_width_s: f64) -> bool {
    let Some((lo, hi)) = median_interval(runs_s) else {
        return true;
    };
    !(lo.is_finite() && hi.is_finite()) || hi - lo <= 2.0 * half_width_s
}

/// How a distribution's runs spread, and where its prediction lies against them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// First and third quartiles of the runs' seconds per iteration (the interquartile range).
    pub q1_s: f64,
    pub q3_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    /// How far the prediction lies outside `[min_s, max_s]`, relative to the end it passed: 0
    /// inside (the model cannot be told from the runs), 0.05 for 5 % above the slowest run.
    pub outside: f64,
}

/// The spread of `runs_s` and where `predicted_s` lies against it; `None` without runs.
pub fn spread(predicted_s: f64, runs_s: &[f64]) -> Option<Spread> {
    let (min_s, max_s) = run_range(runs_s)?;
    let mut sorted = runs_s.to_vec();
    sorted.sort_by(f64::total_cmp);
    let outside = if predicted_s > max_s {
        (predicted_s - max_s) / max_s
    } else if predicted_s < min_s {
        (min_s - predicted_s) / min_s
    } else {
        0.0
    };
    Some(Spread {
        q1_s: quantile(&sorted, 0.25),
        q3_s: quantile(&sorted, 0.75),
        min_s,
        max_s,
        outside,
    })
}

/// The `q` quantile of sorted values, interpolated linearly between order statistics (the
/// common definition: R's type 7, numpy's default).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let at = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo as f64)
}

/// Mean and minimum accuracy over a set of predictions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub mean: f64,
    pub min: f64,
}

/// Summarises `(predicted, actual)` pairs; `None` when there are none.
pub fn summarize(pairs: impl IntoIterator<Item = (f64, f64)>) -> Option<Summary> {
    let values: Vec<f64> = pairs.into_iter().map(|(p, a)| accuracy(p, a)).collect();
    if values.is_empty() {
        return None;
    }
    Some(Summary {
        mean: values.iter().sum::<f64>() / values.len() as f64,
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_prediction_is_one() {
        assert_eq!(accuracy(2.5, 2.5), 1.0);
    }

    #[test]
    fn error_is_relative_to_the_smaller_time() {
        // |1.1 − 1.0| / 1.0 = 0.1, in both directions.
        assert!((accuracy(1.1, 1.0) - 0.9).abs() < 1e-12);
        assert!((accuracy(1.0, 1.1) - 0.9).abs() < 1e-12);
        // Off by a factor of two: |2 − 1| / 1 = 1.
        assert_eq!(accuracy(2.0, 1.0), 0.0);
        assert_eq!(accuracy(3.0, 1.0), -1.0);
    }

    #[test]
    fn zero_and_non_finite_times_do_not_divide_by_zero() {
        assert_eq!(accuracy(0.0, 0.0), 1.0);
        assert_eq!(accuracy(0.0, 1.0), 0.0);
        assert_eq!(accuracy(f64::NAN, 1.0), 0.0);
    }

    #[test]
    fn summary_is_mean_and_min() {
        let s = summarize([(1.0, 1.0), (1.1, 1.0), (1.0, 1.25)]).unwrap();
        // Accuracies 1, 0.9, 0.75.
        assert!((s.mean - (1.0 + 0.9 + 0.75) / 3.0).abs() < 1e-12);
        assert!((s.min - 0.75).abs() < 1e-12);
        assert!(summarize(std::iter::empty()).is_none());
    }

    #[test]
    fn repeatability_is_the_fastest_run_against_the_slowest() {
        assert_eq!(repeatability(&[]), None);
        assert_eq!(repeatability(&[1.0]), None);
        // 0.8 against 1.0: 1 − 0.2 / 0.8 = 0.75, whatever the order and the runs between.
        assert!((repeatability(&[1.0, 0.9, 0.8]).unwrap() - 0.75).abs() < 1e-12);
        assert_eq!(repeatability(&[0.5, 0.5]), Some(1.0));
        assert_eq!(run_range(&[1.0, 0.9, 0.8, 0.95]), Some((0.8, 1.0)));
        assert_eq!(run_range(&[0.7]), Some((0.7, 0.7)));
        assert_eq!(run_range(&[]), None);
    }

    #[test]
    fn spread_has_quartiles_extremes_and_the_distance_outside() {
        // Sorted: 1, 2, 3, 4, 10. Q1 at position 1 (2), Q3 at position 3 (4).
        let s = spread(3.5, &[4.0, 1.0, 10.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.q1_s, s.q3_s, s.min_s, s.max_s), (2.0, 4.0, 1.0, 10.0));
        assert_eq!(s.outside, 0.0);
        // Four runs 1, 2, 3, 4: Q1 at position 0.75 (1.75), Q3 at 2.25 (3.25).
        let s = spread(5.0, &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!((s.q1_s, s.q3_s), (1.75, 3.25));
        // 5 against the slowest run's 4: 25 % outside; 0.5 against the fastest's 1: 50 %.
        assert_eq!(s.outside, 0.25);
        assert_eq!(spread(0.5, &[1.0, 2.0, 3.0, 4.0]).unwrap().outside, 0.5);
        let one = spread(1.0, &[2.0]).unwrap();
        assert_eq!((one.q1_s, one.q3_s, one.outside), (2.0, 2.0, 0.5));
        assert!(spread(1.0, &[]).is_none());
    }

    #[test]
    fn median_interval_is_the_binomial_order_statistics() {
        assert_eq!(median_interval(&[]), None);
        assert_eq!(median_interval(&[3.0]), Some((3.0, 3.0)));
        // Five runs: the range covers the median with 1 − 2/32 = 93.75 % only; still the range.
        assert_eq!(
            median_interval(&[5.0, 1.0, 3.0, 2.0, 4.0]),
            Some((1.0, 5.0))
        );
        // Eight: [x(2), x(7)] misses with 2·9/256 = 7 %, so the range (2/256) again.
        let eight: Vec<f64> = (1..=8).map(f64::from).collect();
        assert_eq!(median_interval(&eight), Some((1.0, 8.0)));
        // Nine: [x(2), x(8)] misses with 2·10/512 = 3.9 %; [x(3), x(7)] with 2·46/512 = 18 %.
        let nine: Vec<f64> = (1..=9).rev().map(f64::from).collect();
        assert_eq!(median_interval(&nine), Some((2.0, 8.0)));
        // Fifteen: P(B ≤ 3) = 576/32768, twice is 3.5 %; P(B ≤ 4) = 1941/32768, twice 11.8 %.
        let fifteen: Vec<f64> = (1..=15).map(f64::from).collect();
        assert_eq!(median_interval(&fifteen), Some((4.0, 12.0)));
    }

    #[test]
    fn a_median_is_known_when_its_interval_is_narrow() {
        // 0.98..1.02 around 1.0 is within ±3 %; 0.97..1.04 is 7 % wide.
        assert!(median_known(&[1.0, 0.98, 1.02, 1.0, 1.01], 0.03));
        assert!(!median_known(&[1.0, 0.97, 1.04, 1.0, 1.01], 0.03));
        // The bimodal runs of jacobi-prefetch on net-2 (ms): far from known.
        assert!(!median_known(&[6.98, 7.00, 7.27, 8.48, 8.59], 0.03));
        // One run, no runs, untimed runs: nothing more to learn by repeating.
        assert!(median_known(&[7.0], 0.03));
        assert!(median_known(&[], 0.03));
        assert!(median_known(&[0.0, 0.0], 0.03));
        assert!(median_known(&[f64::NAN, 1.0], 0.03));
    }

    proptest::proptest! {
        #[test]
        fn the_median_interval_holds_the_median(runs in proptest::collection::vec(1e-6f64..1e3, 1..60)) {
            let (lo, hi) = median_interval(&runs).unwrap();
            let median = mheta_runtime::stats::median(&mut runs.clone());
            proptest::prop_assert!(lo <= median && median <= hi);
            // Never wider than the runs' range.
            let (min, max) = run_range(&runs).unwrap();
            proptest::prop_assert!(min <= lo && hi <= max);
        }
    }

    proptest::proptest! {
        #[test]
        fn accuracy_is_symmetric_and_at_most_one(p in 1e-6f64..1e3, a in 1e-6f64..1e3) {
            let x = accuracy(p, a);
            proptest::prop_assert!(x <= 1.0);
            proptest::prop_assert!((x - accuracy(a, p)).abs() < 1e-12);
        }
    }
}
