//! LBlib's calls with hand-computed rates and times (charged clock), its misuse as errors,
//! and a flexible phase under a load that changes mid-run (virtual clock).

use super::*;
use crate::{launch, Args, ClockMode};

fn charged(ranks: usize) -> Args {
    Args {
        ranks: Some(ranks),
        rows: Some(ranks as u64),
        clock: ClockMode::Charged,
        ..Args::default()
    }
}

#[test]
fn decide_before_a_timed_section_and_rates_before_decide_are_errors() {
    let results = launch(&charged(1), |ctx| {
        let mut lb = Balancer::new(ctx.comm());
        let early = lb.decide(10.0, Method::Fastest).unwrap_err();
        let rates = lb.rates().unwrap_err();
        let section = lb.start();
        clock::charge(1.0);
        assert_eq!(section.end(5.0), 5.0);
        let bad_ops = lb.decide(0.0, Method::Fastest).unwrap_err();
        let bad_rule = lb.decide(10.0, Method::User(&|_, _| -1.0)).unwrap_err();
        Ok::<_, CommError>([early, rates, bad_ops, bad_rule].map(|e| e.to_string()))
    })
    .unwrap();
    let [early, rates, bad_ops, bad_rule] = &results[0];
    assert!(early.contains("timed section first"), "{early}");
    assert!(rates.contains("call it first"), "{rates}");
    assert!(bad_ops.contains("the operations is 0"), "{bad_ops}");
    assert!(bad_rule.contains("is -1"), "{bad_rule}");
}

#[test]
fn decide_exchanges_the_rates_and_sets_the_time_by_the_method() {
    // Rank r completes 10 (r + 1) operations in 1 s: rates 10, 20, 30 (given in reverse rank
    // order below to check the sorting).
    let results = launch(&charged(3), |ctx| {
        let mut lb = Balancer::new(ctx.comm());
        let section = lb.start();
        clock::charge(1.0);
        section.end(10.0 * (3 - ctx.rank()) as f64);
        let fastest = lb.decide(60.0, Method::Fastest).unwrap();
        let slowest = lb.decide(60.0, Method::Slowest).unwrap();
        let median = lb
            .decide(
                60.0,
                Method::User(&|ops, rates| ops / rates[rates.len() / 2]),
            )
            .unwrap();
        let rates = lb.rates().unwrap().to_vec();
        let index = lb.index().unwrap().to_vec();
        Ok::<_, CommError>((fastest, slowest, median, rates, index))
    })
    .unwrap();
    for (fastest, slowest, median, rates, index) in results {
        assert_eq!((fastest, slowest, median), (2.0, 6.0, 3.0));
        assert_eq!(rates, vec![10.0, 20.0, 30.0]);
        assert_eq!(index, vec![2, 1, 0]);
    }
}

#[test]
fn a_section_proceeds_while_the_next_operations_fit_in_the_allotted_time() {
    // Rates 10 and 5 operations per second; T for 20 operations at the fastest rate: 2 s.
    // Rank 0 then does 20 operations, rank 1 (0.2 s each) 10, and both take 2 s.
    let results = launch(&charged(2), |ctx| {
        let cost = [0.1, 0.2][ctx.rank()];
        let mut lb = Balancer::new(ctx.comm());
        // The first pass: a fixed count, which measures the rates.
        let first = lb.start();
        for done in 0..4 {
            assert!(first.proceed(done as f64, 1.0), "no time allotted yet");
            clock::charge(cost);
        }
        first.end(4.0);
        let t = lb.decide(20.0, Method::Fastest).unwrap();
        let section = lb.start();
        let mut done = 0;
        while section.proceed(done as f64, 1.0) {
            clock::charge(cost);
            done += 1;
        }
        let took = section.elapsed_s();
        section.end(done as f64);
        Ok::<_, CommError>((t, done, took))
    })
    .unwrap();
    assert_eq!(results[0].1, 20);
    assert_eq!(results[1].1, 10);
    for (t, _, took) in results {
        assert_eq!(t, 2.0);
        assert!((took - 2.0).abs() < 1e-9, "{took}");
    }
}

#[test]
fn a_flexible_phase_keeps_the_ranks_together_when_one_node_loses_cpu() {
    // dc-load-2: node 0 at CPU power 0.25; node 1 at 1.0 until iteration 10, then 0.25. Each
    // iteration every rank runs a flexible phase of inner steps of 1 ms at power 1 (a real
    // computation, its cost charged at the node's current power); with LBlib all stop at the
    // time T the fastest rank needs for 40 steps.
    let cluster = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/clusters/dc-load-2.toml");
    let args = Args {
        ranks: Some(2),
        rows: Some(2),
        cluster: Some(cluster),
        clock: ClockMode::Charged,
        ..Args::default()
    };
    let results = launch(&args, |ctx| {
        let mut lb = Balancer::new(ctx.comm());
        let mut x = vec![1.0f64; 256];
        let mut log = Vec::new();
        for it in 0..16u64 {
            crate::clock::iteration_begins(it);
            if it > 0 {
                lb.decide(40.0, Method::Fastest)?;
            }
            let section = lb.start();
            let mut steps = 0;
            // The first pass runs a fixed 8 steps: it measures the rates.
            while section.proceed(steps as f64, 1.0) && (it > 0 || steps < 8) {
                for v in x.iter_mut() {
                    *v = (*v * 1.000_001).sqrt() + 1e-9;
                }
                clock::charge(1e-3 / clock::cpu_power());
                steps += 1;
            }
            let took = section.elapsed_s();
            section.end(steps as f64);
            log.push((steps, took));
        }
        std::hint::black_box(&x);
        Ok::<_, LbError>(log)
    })
    .unwrap();
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    for (it, (&(s0, t0), &(s1, t1))) in results[0].iter().zip(&results[1]).enumerate() {
        // Iterations 1–10: T = 40 ms (the fastest, node 1, at 1 ms a step until iteration
        // 9): node 0 does 10 steps of 4 ms, node 1 40 of 1 ms (10 of 4 ms at iteration 10).
        // From 11 both run at 4 ms a step: T = 160 ms, 40 steps each.
        let (want0, want1, want_t) = match it {
            0 => (8, 8, None),
            1..=9 => (10, 40, Some(40e-3)),
            10 => (10, 10, Some(40e-3)),
            _ => (40, 40, Some(160e-3)),
        };
        assert_eq!((s0, s1), (want0, want1), "iteration {it}");
        if let Some(t) = want_t {
            assert!(
                close(t0, t) && close(t1, t),
                "iteration {it}: {t0} s and {t1} s"
            );
        }
    }
}
