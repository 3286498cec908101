//! Every communicator operation against a sequential reference, for 1..=9 ranks, zero-length
//! slices included, on the threads backend.

mod common;

use common::reference::{data, fold};
use mheta_runtime::comm::{wait_all, Comm, CommError, CommExt, ReduceOp};
use mheta_runtime::{launch, Args, ClockMode};
use proptest::prelude::*;

fn args(ranks: usize) -> Args {
    Args {
        ranks: Some(ranks),
        rows: Some(ranks as u64),
        clock: ClockMode::Charged,
        ..Args::default()
    }
}

#[test]
fn point_to_point_ring_with_tags_and_immediates() {
    for p in 1..=9 {
        launch(&args(p), |ctx| {
            let c = ctx.comm();
            let (me, next, prev) = (ctx.rank(), (ctx.rank() + 1) % p, (ctx.rank() + p - 1) % p);
            // Two tags sent in one order, received in the other: tags select messages.
            c.send_with_tag(next, 7, &data(me, 3))?;
            c.send_with_tag(next, 9, &[me as i64])?;
            c.send(next, &[] as &[u8])?;
            let mut who = [0i64];
            c.receive_into_with_tag(prev, 9, &mut who)?;
            let mut got = [0.0; 3];
            c.receive_into_with_tag(prev, 7, &mut got)?;
            c.receive_into(prev, &mut [] as &mut [u8])?;
            assert_eq!(who[0] as usize, prev);
            assert_eq!(got.to_vec(), data(prev, 3));
            // Immediate forms.
            let mut a = [0u32; 2];
            let mut b = [0u32; 2];
            {
                let recv_a = c.immediate_receive_into(prev, 1, &mut a)?;
                let recv_b = c.immediate_receive_into(prev, 2, &mut b)?;
                let (m2, m1) = ([me as u32, 2], [me as u32, 1]);
                let s1 = c.immediate_send(next, 2, &m2)?;
                let s2 = c.immediate_send(next, 1, &m1)?;
                wait_all(vec![s1, s2, recv_a, recv_b])?;
            }
            assert_eq!((a, b), ([prev as u32, 1], [prev as u32, 2]));
            let mut x = [0u8];
            let mut req = c.immediate_receive_into(prev, 3, &mut x)?;
            c.send_with_tag(next, 3, &[5u8])?;
            while !req.test()? {
                std::thread::yield_now();
            }
            assert!(req.is_complete());
            req.wait()?;
            assert_eq!(x, [5]);
            Ok::<_, CommError>(())
        })
        .unwrap();
    }
}

#[test]
fn argument_errors_are_reported() {
    launch(&args(2), |ctx| {
        let c = ctx.comm();
        assert_eq!(
            c.send(2, &[1.0]),
            Err(CommError::InvalidRank { rank: 2, size: 2 })
        );
        assert_eq!(
            c.send_with_tag(0, -1, &[1.0]),
            Err(CommError::InvalidTag(-1))
        );
        if ctx.rank() == 0 {
            c.send(1, &[1.0, 2.0])?;
        } else {
            let mut one = [0.0];
            let err = c.receive_into(0, &mut one).unwrap_err();
            assert_eq!(
                err,
                CommError::SizeMismatch {
                    from: 0,
                    tag: 0,
                    expected: 8,
                    got: 16
                }
            );
        }
        let err = c.all_to_all(&[1.0, 2.0, 3.0], &mut [0.0; 3]).unwrap_err();
        assert!(err.to_string().contains("all_to_all"), "{err}");
        Ok::<_, CommError>(())
    })
    .unwrap();
}

fn check_collectives(p: usize, n: usize) {
    launch(&args(p), |ctx| {
        let c: &dyn Comm = ctx.comm();
        let me = ctx.rank();
        c.barrier()?;
        for root in [0, p - 1, p / 2] {
            // broadcast
            let mut b = if me == root {
                data(root, n)
            } else {
                vec![0.0; n]
            };
            c.broadcast(root, &mut b)?;
            assert_eq!(b, data(root, n));
            // reduce, every operator
            for op in [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max, ReduceOp::Prod] {
                let mut out = vec![0.0; if me == root { n } else { 0 }];
                c.reduce(root, &data(me, n), &mut out, op)?;
                if me == root {
                    assert_eq!(out, fold(p, n, op), "reduce {op:?} p={p} n={n}");
                }
            }
            // gather / scatter
            let mut g = vec![0.0; if me == root { n * p } else { 0 }];
            c.gather(root, &data(me, n), &mut g)?;
            if me == root {
                assert_eq!(g, (0..p).flat_map(|r| data(r, n)).collect::<Vec<_>>());
            }
            let whole: Vec<f64> = (0..p).flat_map(|r| data(r, n)).collect();
            let nothing: Vec<f64> = Vec::new();
            let mut part = vec![0.0; n];
            c.scatter(
                root,
                if me == root { &whole[..] } else { &nothing[..] },
                &mut part,
            )?;
            assert_eq!(part, data(me, n));
            // varcount: rank r contributes (r + n) % 3 elements
            let counts: Vec<usize> = (0..p).map(|r| (r + n) % 3).collect();
            let mine = data(me, counts[me]);
            let all: Vec<f64> = (0..p).flat_map(|r| data(r, counts[r])).collect();
            let mut gv = vec![0.0; if me == root { all.len() } else { 0 }];
            c.gather_varcount(root, &mine, &mut gv, &counts)?;
            if me == root {
                assert_eq!(gv, all);
            }
            let mut sv = vec![0.0; counts[me]];
            c.scatter_varcount(
                root,
                if me == root { &all[..] } else { &nothing[..] },
                &counts,
                &mut sv,
            )?;
            assert_eq!(sv, mine);
        }
        for op in [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max, ReduceOp::Prod] {
            let mut out = vec![0.0; n];
            c.all_reduce(&data(me, n), &mut out, op)?;
            assert_eq!(out, fold(p, n, op));
        }
        assert_eq!(
            c.all_reduce_value(me as i32, ReduceOp::Sum)?,
            (0..p as i32).sum::<i32>()
        );
        assert_eq!(
            c.all_reduce_value(me as u64 + 1, ReduceOp::Prod)?,
            (1..=p as u64).product::<u64>()
        );
        assert_eq!(
            c.all_reduce_value(me as f32, ReduceOp::Max)?,
            (p - 1) as f32
        );
        let mut ag = vec![0.0; n * p];
        c.all_gather(&data(me, n), &mut ag)?;
        assert_eq!(ag, (0..p).flat_map(|r| data(r, n)).collect::<Vec<_>>());
        let counts: Vec<usize> = (0..p).map(|r| (r * 2 + n) % 4).collect();
        let mut agv = vec![0.0; counts.iter().sum()];
        c.all_gather_varcount(&data(me, counts[me]), &mut agv, &counts)?;
        assert_eq!(
            agv,
            (0..p).flat_map(|r| data(r, counts[r])).collect::<Vec<_>>()
        );
        // all_to_all: block q of rank r's send is data(r * 10 + q, n)
        let send: Vec<f64> = (0..p).flat_map(|q| data(me * 10 + q, n)).collect();
        let mut recv = vec![0.0; n * p];
        c.all_to_all(&send, &mut recv)?;
        assert_eq!(
            recv,
            (0..p)
                .flat_map(|r| data(r * 10 + me, n))
                .collect::<Vec<_>>()
        );
        // varcount: rank r sends (r + q) % 3 elements to q
        let sc: Vec<usize> = (0..p).map(|q| (me + q) % 3).collect();
        let rc: Vec<usize> = (0..p).map(|r| (r + me) % 3).collect();
        let send: Vec<i16> = (0..p)
            .flat_map(|q| (0..sc[q]).map(move |i| (me * 50 + q * 5 + i) as i16))
            .collect();
        let mut recv = vec![0i16; rc.iter().sum()];
        c.all_to_all_varcount(&send, &sc, &mut recv, &rc)?;
        let expect: Vec<i16> = (0..p)
            .flat_map(|r| (0..rc[r]).map(move |i| (r * 50 + me * 5 + i) as i16))
            .collect();
        assert_eq!(recv, expect);
        c.barrier()?;
        Ok::<_, CommError>(())
    })
    .unwrap();
}

#[test]
fn collectives_match_sequential_reference_for_1_to_9_ranks() {
    for p in 1..=9 {
        for n in [0, 1, 5] {
            check_collectives(p, n);
        }
    }
}

#[test]
fn integer_and_byte_reductions() {
    launch(&args(5), |ctx| {
        let c = ctx.comm();
        let me = ctx.rank() as u8;
        let mut out = [0u8; 2];
        c.all_reduce(&[me.wrapping_mul(100), me], &mut out, ReduceOp::Sum)?;
        assert_eq!(
            out,
            [
                (0..5u8).fold(0u8, |a, r| a.wrapping_add(r.wrapping_mul(100))),
                10
            ]
        );
        let mut m = [0i64];
        c.all_reduce(&[-(ctx.rank() as i64)], &mut m, ReduceOp::Min)?;
        assert_eq!(m, [-4]);
        Ok::<_, CommError>(())
    })
    .unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// For random sizes and contributions, all_reduce(sum) over i64 equals the sequential sum
    /// and all_gather_varcount equals the concatenation.
    #[test]
    fn random_all_reduce_and_all_gather(p in 1usize..=9, values in prop::collection::vec(prop::collection::vec(-1000i64..1000, 0..6), 9)) {
        let n = values.iter().map(Vec::len).min().unwrap_or(0);
        let values = &values;
        let out = launch(&args(p), |ctx| {
            let c = ctx.comm();
            let mine = &values[ctx.rank()];
            let mut sum = vec![0i64; n];
            c.all_reduce(&mine[..n], &mut sum, ReduceOp::Sum)?;
            let counts: Vec<usize> = values[..p].iter().map(Vec::len).collect();
            let mut all = vec![0i64; counts.iter().sum()];
            c.all_gather_varcount(mine, &mut all, &counts)?;
            Ok::<_, CommError>((sum, all))
        }).unwrap();
        let expect_sum: Vec<i64> = (0..n).map(|i| values[..p].iter().map(|v| v[i]).sum()).collect();
        let expect_all: Vec<i64> = values[..p].iter().flatten().copied().collect();
        for (sum, all) in out {
            prop_assert_eq!(&sum, &expect_sum);
            prop_assert_eq!(&all, &expect_all);
        }
    }
}

/// The typed API works through a trait object.
fn ring_sum(c: &dyn Comm) -> Result<f64, CommError> {
    c.all_reduce_value(c.rank() as f64, ReduceOp::Sum)
}

#[test]
fn comm_works_as_a_trait_object() {
    let sums = launch(&args(4), |ctx| {
        let boxed: Box<&dyn Comm> = Box::new(ctx.comm());
        ring_sum(*boxed)
    })
    .unwrap();
    assert_eq!(sums, vec![6.0; 4]);
}

#[test]
fn many_ranks_on_few_cores() {
    let p = 256;
    let out = launch(&args(p), |ctx| {
        let c = ctx.comm();
        let next = (ctx.rank() + 1) % p;
        let prev = (ctx.rank() + p - 1) % p;
        c.send(next, &[ctx.rank() as u32])?;
        let mut x = [0u32];
        c.receive_into(prev, &mut x)?;
        c.all_reduce_value(x[0] as u64, ReduceOp::Sum)
    })
    .unwrap();
    assert!(out.iter().all(|&s| s == (0..p as u64).sum::<u64>()));
}
