//! Fits, searches and ε with numbers computed by hand.

use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()) + 1e-15
}

fn config(uses: &[(u32, u32)]) -> Configuration {
    Configuration(
        uses.iter()
            .map(|&(nodes, ranks)| GroupUse { nodes, ranks })
            .collect(),
    )
}

/// Runs of one group of 4 nodes (1 rank each) at N = 1000, 2000, 4000, timed exactly by
/// `t(N, P)`.
fn runs_of(t: impl Fn(f64, f64) -> f64) -> Vec<Run> {
    let mut runs = Vec::new();
    for nodes in 1..=4 {
        for n in [1000.0, 2000.0, 4000.0] {
            runs.push(Run {
                size: n,
                configuration: config(&[(nodes, 1), (0, 0)]),
                seconds: t(n, nodes as f64),
            });
        }
    }
    // A run on both groups is no fitting data.
    runs.push(Run {
        size: 1000.0,
        configuration: config(&[(1, 1), (1, 1)]),
        seconds: 1.0,
    });
    runs
}

/// Our family's NP-T model, T = (1/P)(2e-6 N + 1e-3) + 5e-4 + 1e-4 P, is recovered exactly
/// from runs at P = 2, 3, 4; each N-T model is the line k0 = 2e-6/P, k1 = 1e-3/P + 5e-4 +
/// 1e-4 P; the estimate at N = 3000, P = 5 is 7e-3/5 + 5e-4 + 5e-4 = 2.4e-3.
#[test]
fn npt_and_nt_recover_an_exact_model() {
    let runs = runs_of(|n, p| (2e-6 * n + 1e-3) / p + 5e-4 + 1e-4 * p);
    for method in [Method::Ols, Method::Nnls] {
        let f = fit(&runs, 2, Family::Jacobi, method);
        assert_eq!(f.nt.len(), 4, "{method:?}");
        let nt3 = f.nt_model(0, 3, 1).unwrap();
        assert_eq!(nt3.sizes, [1000.0, 2000.0, 4000.0]);
        assert!(close(nt3.coefficients[0], 2e-6 / 3.0), "{nt3:?}");
        assert!(
            close(nt3.coefficients[1], 1e-3 / 3.0 + 5e-4 + 3e-4),
            "{nt3:?}"
        );
        let npt = &f.npt[0];
        assert_eq!((npt.group, npt.ranks, npt.runs), (0, 1, 9));
        for (got, want) in npt.coefficients.iter().zip([2e-6, 1e-3, 5e-4, 1e-4]) {
            assert!(close(*got, want), "{method:?}: {:?}", npt.coefficients);
        }
        assert!(npt.fit_error < 1e-9, "{method:?}: {}", npt.fit_error);
        let t = f.estimate(ModelKind::Npt, 0, 3000.0, 5, 1).unwrap();
        assert!(close(t, 2.4e-3), "{t}");
        // One node: the N-T model, 2e-6 · 3000 + 1e-3 + 5e-4 + 1e-4 = 7.6e-3.
        let t = f.estimate(ModelKind::Npt, 0, 3000.0, 1, 1).unwrap();
        assert!(close(t, 7.6e-3), "{t}");
        // No model of group 1 alone.
        assert_eq!(f.estimate(ModelKind::Npt, 1, 3000.0, 2, 1), None);
    }
}

/// Where T(N, P) is in the P-T family, T = (1/P) T_b(N) + 3e-4 − 3e-4 P with the one-node time
/// T_b(N) = 5e-6 N + 2e-3 (so that T(N, 1) = T_b), the P-T model integrating the N-T models
/// of P = 2, 3, 4 (3 sizes each: 9 points) is k = (1, 3e-4, −3e-4) by OLS.
#[test]
fn pt_integrates_the_nt_models() {
    let runs = runs_of(|n, p| (5e-6 * n + 2e-3) / p + 3e-4 - 3e-4 * p);
    let f = fit(&runs, 2, Family::Jacobi, Method::Ols);
    let pt = &f.pt[0];
    assert_eq!(pt.points, 9);
    for (got, want) in pt.coefficients.iter().zip([1.0, 3e-4, -3e-4]) {
        assert!(close(*got, want), "{:?}", pt.coefficients);
    }
    // At N = 1000, P = 5: 7e-3 / 5 + 3e-4 − 1.5e-3 = 2e-4.
    let t = f.estimate(ModelKind::Pt, 0, 1000.0, 5, 1).unwrap();
    assert!(close(t, 2e-4), "{t}");
    // NNLS may not go negative: its k₂ is 0.
    let f = fit(&runs, 2, Family::Jacobi, Method::Nnls);
    assert!(f.pt[0].coefficients.iter().all(|&k| k >= 0.0));
    assert_eq!(f.pt[0].coefficients[2], 0.0);
}

#[test]
fn models_the_runs_do_not_determine_are_skipped_with_a_reason() {
    // Two process counts cannot separate 1/P, 1 and P.
    let runs: Vec<Run> = runs_of(|n, p| n / p)
        .into_iter()
        .filter(|r| r.configuration.processes() <= 3 && r.configuration.single_group().is_some())
        .collect();
    let f = fit(&runs, 2, Family::Jacobi, Method::Ols);
    assert!(f.npt.is_empty());
    let skipped = f.skipped.iter().find(|s| s.kind == ModelKind::Npt).unwrap();
    assert!(
        skipped.reason.contains("cannot be told apart"),
        "{skipped:?}"
    );
    // HPL's NP-T has 10 terms; 9 runs are too few.
    let f = fit(&runs_of(|n, p| n / p), 2, Family::Hpl, Method::Nnls);
    let skipped = f.skipped.iter().find(|s| s.kind == ModelKind::Npt).unwrap();
    assert!(
        skipped.reason.starts_with("9 runs for 10 terms"),
        "{skipped:?}"
    );
}

/// Two groups of one node each, N = 1200, M_i ≤ 2, hand-made models (family Jacobi):
/// - N-T: group 0 with 1 rank 1e-6 N (1.2e-3), with 2 ranks 0.6e-6 N + 1e-4 (8.2e-4); group 1
///   with 1 rank 2e-6 N (2.4e-3); none for group 1 with 2 ranks.
/// - NP-T (N/P, 1/P, 1, P): group 0 M=1 (1e-6, 0, 0, 1e-4), M=2 (0.6e-6, 0, 1e-4, 1e-4); group 1
///   M=1 (2e-6, 0, 0, 1e-4).
///
/// (1,1,1,1): P = 2, T = max(6e-4 + 2e-4, 1.2e-3 + 2e-4) = 1.4e-3. (1,2,1,1): P = 3,
/// T = max(2.4e-4 + 1e-4 + 3e-4, 8e-4 + 3e-4) = 1.1e-3. The three configurations with group 1
/// at 2 ranks have no model. Optimum: (1, 2, 0, 0) at 8.2e-4.
#[test]
fn search_takes_the_least_maximum_over_groups() {
    let nt = |group, ranks, k: Vec<f64>| NtModel {
        group,
        nodes: 1,
        ranks,
        processes: u64::from(ranks),
        coefficients: k,
        sizes: vec![],
        runs: 2,
        fit_error: 0.0,
    };
    let npt = |group, ranks, k: Vec<f64>| NptModel {
        group,
        ranks,
        coefficients: k,
        runs: 4,
        fit_error: 0.0,
    };
    let fitted = Fitted {
        family: Family::Jacobi,
        method: Method::Nnls,
        groups: 2,
        nt: vec![
            nt(0, 1, vec![1e-6, 0.0]),
            nt(0, 2, vec![0.6e-6, 1e-4]),
            nt(1, 1, vec![2e-6, 0.0]),
        ],
        pt: vec![],
        npt: vec![
            npt(0, 1, vec![1e-6, 0.0, 0.0, 1e-4]),
            npt(0, 2, vec![0.6e-6, 0.0, 1e-4, 1e-4]),
            npt(1, 1, vec![2e-6, 0.0, 0.0, 1e-4]),
        ],
        skipped: vec![],
    };
    let result = search(&fitted, ModelKind::Npt, &[1, 1], 2, 1200.0);
    assert_eq!(result.not_estimated, 3);
    let got: Vec<(String, f64)> = result
        .estimates
        .iter()
        .map(|e| (e.configuration.to_string(), e.seconds))
        .collect();
    let want = [
        ("(1, 2, 0, 0)", 8.2e-4),
        ("(1, 2, 1, 1)", 1.1e-3),
        ("(1, 1, 0, 0)", 1.2e-3),
        ("(1, 1, 1, 1)", 1.4e-3),
        ("(0, 0, 1, 1)", 2.4e-3),
    ];
    assert_eq!(got.len(), want.len(), "{got:?}");
    for ((c, s), (wc, ws)) in got.iter().zip(want) {
        assert_eq!(c, wc);
        assert!(close(*s, ws), "{c}: {s}");
    }
    let best = result.best().unwrap();
    assert_eq!(best.processes, 2);
    assert_eq!(best.configuration.rows(1201), [601, 600]);

    // ε (§4.1): measured (1,2,0,0) 9e-4, (1,2,1,1) 8e-4, (1,1,0,0) 1.3e-3: T̂ = 8e-4,
    // τ̂ = 9e-4, ε = 1e-4 / 8e-4 = 0.125; δ = (8.2e-4 − 9e-4) / 9e-4 = −4/45.
    let measured = [
        (config(&[(1, 2), (0, 0)]), 9e-4),
        (config(&[(1, 2), (1, 1)]), 8e-4),
        (config(&[(1, 1), (0, 0)]), 1.3e-3),
    ];
    let e = epsilon(&best.configuration, best.seconds, &measured).unwrap();
    assert_eq!(e.optimum, config(&[(1, 2), (1, 1)]));
    assert!(close(e.epsilon, 0.125), "{e:?}");
    assert!(close(e.delta, -4.0 / 45.0), "{e:?}");
    assert_eq!(
        epsilon(&config(&[(0, 0), (1, 1)]), 1.0, &measured),
        Err(EpsilonError::ChosenNotMeasured(config(&[(0, 0), (1, 1)])))
    );
    assert_eq!(
        epsilon(&best.configuration, 1.0, &[]),
        Err(EpsilonError::NoAlternatives)
    );
}

#[test]
fn configurations_count_processes_and_print_as_the_seed_does() {
    let c = config(&[(4, 2), (0, 0), (3, 1)]);
    assert_eq!(c.processes(), 11);
    assert_eq!(c.single_group(), None);
    assert_eq!(config(&[(0, 0), (3, 1)]).single_group(), Some(1));
    assert_eq!(c.to_string(), "(4, 2, 0, 0, 3, 1)");
    assert_eq!(config(&[(1, 3)]).rows(10), [4, 3, 3]);
}
