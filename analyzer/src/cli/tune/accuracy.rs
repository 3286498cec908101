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

    proptest::proptest! {
        #[test]
        fn accuracy_is_symmetric_and_at_most_one(p in 1e-6f64..1e3, a in 1e-6f64..1e3) {
            let x = accuracy(p, a);
            proptest::prop_assert!(x <= 1.0);
            proptest::prop_assert!((x - accuracy(a, p)).abs() < 1e-12);
        }
    }
}
