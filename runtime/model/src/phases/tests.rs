//! Phases: the worked example by hand, interleaved phases, the |V|² bound, bad traces.

use petgraph::graph::NodeIndex;
use serde_json::json;

use super::*;

/// Two ranks, three messages: rank 0's blocks p0 p1 p2 end in a send to rank 1 (label `s`), p3
/// ends the rank (`z`); rank 1's blocks q0 q1 q2 end in the receives (`r`), q3 ends it (`z`).
/// Edges: sequence p0→p1→p2→p3, q0→q1→q2→q3; messages p_k→q_{k+1} (the block before the k-th
/// send to the block after the k-th receive, Def. 2.2).
fn three_messages() -> (DependencyGraph, Vec<NodeIndex>, Vec<NodeIndex>) {
    let mut g = DependencyGraph::new();
    let p: Vec<_> = ["s", "s", "s", "z"]
        .iter()
        .map(|l| g.push_block(0, l, 1.0))
        .collect();
    let q: Vec<_> = ["r", "r", "r", "z"]
        .iter()
        .map(|l| g.push_block(1, l, 2.0))
        .collect();
    for k in 0..3 {
        g.add_dependency(p[k], q[k + 1], EdgeKind::Message);
    }
    (g, p, q)
}

fn set(nodes: &[NodeIndex]) -> Vec<NodeIndex> {
    let mut v = nodes.to_vec();
    v.sort_unstable();
    v
}

/// The run of Fig. 4 on [`three_messages`], computed by hand. Atomic phases (Def. 4, S_0):
/// S = {p0,p1,p2} Q(3,1), Z = {p3,q3} Q(2,1), R = {q0,q1,q2} Q(3,1). S_0* in edge order:
/// (S,S), (S,Z), (R,R), (R,Z), (S,R), with
/// - Q(S⊕S) = (2,2): {p0,p1} and {p1,p2} are isomorphic;
/// - Q(S⊕Z) = (1,3): {p2,p3} (size 2) or p2 ⊕ q3 = {p2,q2,q3} (q2 feeds q3, Def. 5), the larger;
/// - Q(R⊕R) = (2,3): q0 ⊕ q1 = {p0,q0,q1} (p0 feeds q1), q1 ⊕ q2 = {p1,q1,q2}, isomorphic;
/// - Q(R⊕Z) = (1,3), Q(S⊕R) = (2,3) (the same two instances as R⊕R).
///
/// Iteration 0 merges (R,R), the first of the two (2,3) pairs: M = {p0,q0,q1},{p1,q1,q2}.
/// U_0 removes (S,R) (both its joins lie in M's instances). T_0 adds (S,M) (1,5), (R,M) (1,5),
/// (M,M) (1,5), (M,S) (2,4) — m1 ⊕ p1 = {p0,p1,q0,q1} ≅ m2 ⊕ p2 = {p1,p2,q1,q2} —, (M,Z) (1,5),
/// (M,R) (1,5).
/// Iteration 1 merges (M,S) with Q = (2,4): N = {p0,p1,q0,q1},{p1,p2,q1,q2}; U_1 removes (S,S).
/// Iteration 2: every pair left occurs once; the largest are (1,6) — (S,N) first:
/// O = {p0,p1,p2,q0,q1,q2}; U_2 leaves only the pairs with Z.
/// Iteration 3: (O,Z) (1,7): O + p3 and O + q3 are not isomorphic; the smaller canonical form
/// (rank 0's extra block sorts first) wins: P = O ∪ {p3}. Iteration 4: (P,Z) (1,8), the whole
/// graph; U_4 empties S*. I = 5, |S_I| = 8.
#[test]
fn worked_example_merge_order_and_quality() {
    let (g, p, q) = three_messages();
    let d = detect(&g);
    let (s, z, r, m, n, o, pp, w) = (0, 1, 2, 3, 4, 5, 6, 7);
    assert_eq!(d.phases[s].quality(), (3, 1));
    assert_eq!(d.phases[z].quality(), (2, 1));
    assert_eq!(d.phases[r].quality(), (3, 1));
    let merges: Vec<_> = d.merges.iter().map(|m| (m.pair, m.quality)).collect();
    assert_eq!(
        merges,
        vec![
            ((r, r), (2, 3)),
            ((m, s), (2, 4)),
            ((s, n), (1, 6)),
            ((o, z), (1, 7)),
            ((pp, z), (1, 8)),
        ]
    );
    assert_eq!(d.phases.len(), 8);
    assert!(!d.truncated);
    assert_eq!(
        d.phases[m].instances,
        vec![set(&[p[0], q[0], q[1]]), set(&[p[1], q[1], q[2]])]
    );
    assert_eq!(
        d.phases[n].instances,
        vec![
            set(&[p[0], p[1], q[0], q[1]]),
            set(&[p[1], p[2], q[1], q[2]])
        ]
    );
    assert_eq!(
        d.phases[pp].instances,
        vec![set(&[p[0], p[1], p[2], p[3], q[0], q[1], q[2]])]
    );
    assert_eq!(d.phases[w].blocks(), 8);
    // Every phase found is a phase by Def. 3.
    for phase in &d.phases {
        for inst in &phase.instances {
            assert!(detect::is_phase(&g, inst), "{inst:?}");
        }
    }
    // Valuable: nothing with the same Occ extends them. M lies inside N (both Occ 2), O and P
    // inside the whole graph.
    assert_eq!(d.valuable(), vec![s, r, n, z, w]);
    // Seconds: N covers p0 p1 (1 s each) and q0 q1 (2 s each), twice.
    assert_eq!(d.phases[n].seconds(&g), 12.0);
    assert_eq!(d.phases[n].per_rank(&g), vec![2, 2]);
}

/// One rank, blocks x y x y: Q(X⊕Y) = (2,2) ({v0,v1} ≅ {v2,v3}) beats Q(Y⊕X) = (1,2); after it
/// T_0 adds (Y,XY) (1,3), (XY,X) (1,3) and (XY,XY) (1,4), which wins: the whole chain.
#[test]
fn chain_merges_the_repeating_pair_first() {
    let mut g = DependencyGraph::new();
    for l in ["x", "y", "x", "y"] {
        g.push_block(0, l, 0.5);
    }
    let d = detect(&g);
    let merges: Vec<_> = d.merges.iter().map(|m| (m.pair, m.quality)).collect();
    assert_eq!(merges, vec![((0, 1), (2, 2)), ((2, 2), (1, 4))]);
    assert_eq!(d.phases.len(), 4);
}

/// ⊕ adds the feeders (Def. 5) until the union is a phase (Def. 3).
#[test]
fn concatenation_adds_feeders() {
    let (g, p, q) = three_messages();
    // q1 ⊕ q2: q2's predecessor p1 must join.
    assert_eq!(
        detect::concatenate(&g, &set(&[q[1], q[2]])),
        set(&[p[1], q[1], q[2]])
    );
    assert!(!detect::is_phase(&g, &set(&[q[1], q[2]])));
    assert!(detect::is_phase(&g, &set(&[p[1], q[1], q[2]])));
    // Not connected: not a phase.
    assert!(!detect::is_phase(&g, &set(&[p[0], q[3]])));
}

/// §3.4: at most |V|² iterations, so |S_I| ≤ |V| + |V|², on graphs of growing size.
#[test]
fn extracted_phases_respect_the_quadratic_bound() {
    for k in 1..=6 {
        let text = ring_trace(3, k);
        let trace = Trace::parse(&text, "ring.json").unwrap();
        let g = DependencyGraph::from_trace(&trace, "ring.json").unwrap();
        let d = detect(&g);
        let v = g.len();
        assert!(!d.truncated);
        assert!(
            d.merges.len() <= v * v,
            "{} merges, |V| = {v}",
            d.merges.len()
        );
        assert!(d.phases.len() <= v + v * v);
    }
}

/// A trace as the runtime writes it: every rank's calls `(name, event)` one after the other,
/// 10 µs of computation before each, 2 µs per call; `iteration` events around every `per`
/// calls.
fn trace_json(ranks: &[Vec<(String, Option<u32>)>], per: usize) -> String {
    let mut events = Vec::new();
    for (rank, calls) in ranks.iter().enumerate() {
        events.push(
            json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": rank,
            "args": {"name": format!("rank {rank}")}}),
        );
        let mut t = 0.0;
        for (i, (name, event)) in calls.iter().enumerate() {
            // As the runtime counts them: a send sends, a receive receives (an rsmpi
            // `send_receive`, recorded as a `receive`, does both: `exchange_trace`); a `wait`
            // (a request's completion) is a `receive` with no peer and no message.
            let wait = name == "wait";
            let sent = u64::from(!wait && (!name.starts_with("receive") || name.ends_with("!")));
            let received = u64::from(!wait && !name.starts_with("send"));
            let name = name.trim_end_matches('!');
            // `all_reduce@0,2`: a collective among world ranks 0 and 2 (`args.group`).
            let (name, group) = match name.split_once('@') {
                Some((name, group)) => (
                    name,
                    Some(
                        group
                            .split(',')
                            .map(|m| m.parse::<u32>().unwrap())
                            .collect::<Vec<_>>(),
                    ),
                ),
                None => (name, None),
            };
            // `receive 1<3`: sent to rank 1, received from rank 3 (`args.source`).
            let (name, source) = match name.split_once('<') {
                Some((name, source)) => (name, Some(source.parse::<u32>().unwrap())),
                None => (if wait { "receive" } else { name }, None),
            };
            if i % per == 0 {
                events.push(json!({"name": format!("iteration {}", i / per), "cat": "iteration",
                    "ph": "X", "pid": 1, "tid": rank, "ts": t, "dur": 12.0 * per as f64, "args": {}}));
            }
            t += 10.0;
            events.push(
                json!({"name": name, "cat": "comm", "ph": "X", "pid": 1, "tid": rank,
                "ts": t, "dur": 2.0, "args": {"event": event, "bytes_sent": 8 * sent,
                "bytes_received": 8 * received, "messages_sent": sent,
                "messages_received": received, "blocked_us": 0.5, "source": source,
                "group": group}}),
            );
            t += 2.0;
        }
    }
    json!({"traceEvents": events, "displayTimeUnit": "ms"}).to_string()
}

/// The trace of `p` ranks that each make `calls` (name, event) `k` times, one iteration each
/// time; in a name, `NEXT` and `PREV` stand for the rank's neighbours on a ring.
fn periodic_trace(p: usize, k: usize, calls: &[(&str, Option<u32>)]) -> String {
    let ranks: Vec<Vec<(String, Option<u32>)>> = (0..p)
        .map(|r| {
            (0..k)
                .flat_map(|_| {
                    calls.iter().map(move |&(name, event)| {
                        let name = name
                            .replace("NEXT", &((r + 1) % p).to_string())
                            .replace("PREV", &((r + p - 1) % p).to_string());
                        (name, event)
                    })
                })
                .collect()
        })
        .collect();
    trace_json(&ranks, calls.len())
}

/// A ring shift then an all-reduce, `k` iterations on `p` ranks (like Jacobi's main loop).
fn ring_trace(p: usize, k: usize) -> String {
    periodic_trace(
        p,
        k,
        &[
            ("send NEXT", Some(0)),
            ("receive PREV", Some(0)),
            ("all_reduce", Some(1)),
        ],
    )
}

/// The requirement of issue 18: in a trace of K iterations the main loop's body is a phase
/// occurring K times, once per iteration on every rank.
#[test]
fn main_loop_body_occurs_once_per_iteration() {
    for k in [2, 3, 5] {
        let trace = Trace::parse(&ring_trace(4, k), "ring.json").unwrap();
        let a = analyse(&trace, "ring.json").unwrap();
        let main = &a.phases[a.main_loop.expect("a main-loop phase")];
        assert_eq!(main.occurrences, k);
        assert_eq!(main.ranks, vec![k; 4]);
        assert_eq!(main.blocks, 3 * 4, "three blocks per rank");
        assert_eq!(main.events, vec![0, 1]);
        assert_eq!(a.iterations, vec![k; 4]);
        // Each block is 10 µs of computation.
        assert!((main.seconds - (k * 12) as f64 * 10e-6).abs() < 1e-12);
    }
}

/// A halo exchange by rsmpi's `send_receive`, which the runtime records as a `receive` that
/// also sent (written `receive P!` here): two ranks exchange their boundary rows, then
/// all-reduce, `k` times. Each call is a send and a receive, so the graph has message edges both
/// ways and the body is still one phase per iteration.
#[test]
fn a_send_receive_is_a_send_and_a_receive() {
    let (p, k) = (2, 4);
    let ranks: Vec<Vec<(String, Option<u32>)>> = (0..p)
        .map(|r| {
            (0..k)
                .flat_map(|_| {
                    let mut calls = Vec::new();
                    if r > 0 {
                        calls.push((format!("receive {}!", r - 1), Some(0)));
                    }
                    if r + 1 < p {
                        calls.push((format!("receive {}!", r + 1), Some(0)));
                    }
                    calls.push(("all_reduce".to_string(), Some(1)));
                    calls
                })
                .collect()
        })
        .collect();
    let trace = Trace::parse(&trace_json(&ranks, 2), "halo.json").unwrap();
    let call = &trace.ranks[1].calls[0];
    assert!(call.is_send() && call.is_receive(), "{call:?}");
    let graph = DependencyGraph::from_trace(&trace, "halo.json").unwrap();
    // Rank 1's first block feeds rank 0's second (1 → 0) and rank 0's first feeds rank 1's
    // second (0 → 1).
    let (r0, r1) = (&graph.ranks[0], &graph.ranks[1]);
    assert!(graph.succs(r1[0]).any(|n| n == r0[1]));
    assert!(graph.succs(r0[0]).any(|n| n == r1[1]));
    let a = analyse(&trace, "halo.json").unwrap();
    let main = &a.phases[a.main_loop.expect("a main-loop phase")];
    assert_eq!(main.occurrences, k);
    assert_eq!(main.ranks, vec![k; p]);
    assert_eq!(a.iterations, vec![k; p]);
}

/// A ring shift by rsmpi's `send_receive_into(&x, &right, &mut y, &left)`, which sends to one
/// neighbour and receives from the other: the runtime records it as a `receive` naming the
/// destination, with the source in `args.source` (written `receive NEXT<PREV!` here). Each shift's
/// message goes from a rank's block to its right neighbour's next block, so the graph pairs
/// every message (naming the destination alone, rank 1 would seem to receive from rank 2,
/// which never sends to it), and the body is one phase per iteration.
#[test]
fn a_ring_shift_receives_from_its_source() {
    let (p, k) = (4, 3);
    let calls = [
        ("receive NEXT<PREV!", Some(0)),
        ("receive PREV<NEXT!", Some(0)),
        ("all_reduce", Some(1)),
    ];
    let trace = Trace::parse(&periodic_trace(p, k, &calls), "ring.json").unwrap();
    let call = &trace.ranks[1].calls[0];
    assert_eq!((call.peer, call.received_from()), (Some(2), Some(0)));
    let graph = DependencyGraph::from_trace(&trace, "ring.json").unwrap();
    // The first shift: rank 0's first block feeds rank 1's second; rank 1's first block feeds
    // rank 2's second, not rank 0's.
    let (r0, r1, r2) = (&graph.ranks[0], &graph.ranks[1], &graph.ranks[2]);
    assert!(graph.succs(r0[0]).any(|n| n == r1[1]));
    assert!(graph.succs(r1[0]).any(|n| n == r2[1]));
    assert!(!graph.succs(r1[0]).any(|n| n == r0[1]));
    let a = analyse(&trace, "ring.json").unwrap();
    let main = &a.phases[a.main_loop.expect("a main-loop phase")];
    assert_eq!((main.occurrences, main.ranks.clone()), (k, vec![k; p]));
    assert_eq!(main.blocks, 3 * p);
}

/// Immediate sends completed by `wait`s (rsmpi requests): each `wait` is recorded as a
/// `receive` with no peer and no message. It ends a block and has no message edge; the two
/// `wait`s in a row end one block (the block between them would be empty), so each rank has
/// 4 blocks per iteration, and the body is one phase per iteration.
#[test]
fn request_completions_end_one_block_and_carry_no_message() {
    let (p, k) = (3, 3);
    let calls = [
        ("immediate_send NEXT", Some(0)),
        ("immediate_send PREV", Some(0)),
        ("receive PREV", Some(0)),
        ("receive NEXT", Some(0)),
        ("wait", Some(0)),
        ("wait", Some(0)),
        ("all_reduce", Some(1)),
    ];
    let trace = Trace::parse(&periodic_trace(p, k, &calls), "wait.json").unwrap();
    assert!(trace.ranks[0].calls[4].is_completion());
    let graph = DependencyGraph::from_trace(&trace, "wait.json").unwrap();
    // 6 blocks ended by calls per iteration, then the rank's last block.
    assert_eq!(graph.ranks[0].len(), 6 * k + 1);
    let a = analyse(&trace, "wait.json").unwrap();
    let main = &a.phases[a.main_loop.expect("a main-loop phase")];
    assert_eq!((main.occurrences, main.ranks.clone()), (k, vec![k; p]));
}

/// Collectives on communicators split off the world (`world.split_by_color(rank % 2)`): the
/// even ranks exchange halos and all-reduce among themselves, the odd ranks all-reduce twice
/// per iteration among themselves. Each group's collectives are matched among its members (the
/// world's counts differ) and collective edges join members only. Nothing joins the groups, so
/// each group has a phase of its own occurring once per iteration, and none spans every rank
/// (as in `two_interleaved_phases`).
#[test]
fn collectives_on_split_communicators_match_within_their_group() {
    let (p, k) = (4, 3);
    let ranks: Vec<Vec<(String, Option<u32>)>> = (0..p)
        .map(|r| {
            let calls: Vec<(String, Option<u32>)> = if r % 2 == 0 {
                let other = 2 - r;
                vec![
                    (format!("receive {other}!"), Some(0)),
                    ("all_reduce@0,2".to_string(), Some(1)),
                ]
            } else {
                vec![
                    ("all_reduce@1,3".to_string(), Some(1)),
                    ("all_reduce@1,3".to_string(), Some(1)),
                ]
            };
            (0..k).flat_map(|_| calls.clone()).collect()
        })
        .collect();
    let trace = Trace::parse(&trace_json(&ranks, 2), "split.json").unwrap();
    assert_eq!(trace.ranks[3].calls[0].group, Some(vec![1, 3]));
    let graph = DependencyGraph::from_trace(&trace, "split.json").unwrap();
    let (r0, r1, r2, r3) = (
        &graph.ranks[0],
        &graph.ranks[1],
        &graph.ranks[2],
        &graph.ranks[3],
    );
    // Rank 0's all-reduce (its second call) feeds rank 2's block after its own, not rank 1's
    // or rank 3's; rank 1's first all-reduce feeds rank 3's second block.
    assert!(graph.succs(r0[1]).any(|n| n == r2[2]));
    assert!(!graph
        .succs(r0[1])
        .any(|n| n == r1[1] || n == r1[2] || n == r3[2]));
    assert!(graph.succs(r1[0]).any(|n| n == r3[1]));
    assert!(!graph.succs(r1[0]).any(|n| n == r0[1] || n == r2[1]));
    let a = analyse(&trace, "split.json").unwrap();
    assert_eq!(a.main_loop, None);
    for ranks in [vec![k, 0, k, 0], vec![0, k, 0, k]] {
        let body = a
            .phases
            .iter()
            .filter(|ph| ph.ranks == ranks)
            .max_by_key(|ph| ph.blocks)
            .unwrap_or_else(|| panic!("no phase on ranks {ranks:?}: {:?}", a.phases));
        // At least one iteration's two blocks on each member.
        assert!(body.occurrences == k && body.blocks >= 4, "{body:?}");
    }
}

/// `first_iterations(k)` keeps every rank's calls up to the end of its k-th iteration; the
/// main loop's phase then occurs k times. A rank with k iterations or fewer stays whole.
#[test]
fn the_first_iterations_of_a_trace() {
    let trace = Trace::parse(&ring_trace(4, 6), "ring.json").unwrap();
    let two = trace.first_iterations(2);
    for rank in &two.ranks {
        assert_eq!((rank.calls.len(), rank.iterations()), (2 * 3, 2));
    }
    let a = analyse(&two, "ring.json").unwrap();
    let main = &a.phases[a.main_loop.expect("a main-loop phase")];
    assert_eq!((main.occurrences, main.ranks.clone()), (2, vec![2; 4]));
    assert_eq!(trace.first_iterations(6), trace);
    assert_eq!(trace.first_iterations(9), trace);
}

/// Two phases interleaved in time: ranks 0 and 1 exchange (event 0) while ranks 2 and 3 exchange
/// (event 1), K = 4 times; no edge joins the pairs, so no phase spans both and no phase is the
/// main loop's.
#[test]
fn two_interleaved_phases() {
    let k = 4;
    let pair = |me: usize, peer: usize, first: bool, event: u32| -> Vec<(String, Option<u32>)> {
        (0..k)
            .flat_map(|_| {
                let send = (format!("send {peer}"), Some(event));
                let recv = (format!("receive {peer}"), Some(event));
                let _ = me;
                if first {
                    [send, recv]
                } else {
                    [recv, send]
                }
            })
            .collect()
    };
    let ranks = vec![
        pair(0, 1, true, 0),
        pair(1, 0, false, 0),
        pair(2, 3, true, 1),
        pair(3, 2, false, 1),
    ];
    let trace = Trace::parse(&trace_json(&ranks, 2), "pairs.json").unwrap();
    let a = analyse(&trace, "pairs.json").unwrap();
    assert_eq!(a.main_loop, None);
    let best = |rank: usize| {
        a.phases
            .iter()
            .filter(|p| {
                p.ranks
                    .iter()
                    .enumerate()
                    .all(|(r, &n)| (n > 0) == (r / 2 == rank / 2))
            })
            .filter(|p| p.ranks.iter().all(|&n| n == 0 || n == p.occurrences))
            .max_by_key(|p| (p.occurrences, p.blocks))
            .cloned()
            .unwrap()
    };
    let (left, right) = (best(0), best(2));
    // One exchange: 2 blocks on each rank of the pair, once per iteration.
    assert_eq!((left.occurrences, left.blocks), (k, 4));
    assert_eq!((right.occurrences, right.blocks), (k, 4));
    assert_eq!(left.ranks, vec![k, k, 0, 0]);
    assert_eq!(right.ranks, vec![0, 0, k, k]);
    assert_eq!(left.events, vec![0]);
    assert_eq!(right.events, vec![1]);
    // Nothing spans the two pairs.
    for phase in &a.detection.phases {
        for inst in &phase.instances {
            let sides: std::collections::BTreeSet<u32> =
                inst.iter().map(|&v| a.graph.graph[v].rank / 2).collect();
            assert_eq!(sides.len(), 1, "{inst:?} spans both pairs");
        }
    }
}

#[test]
fn structure_agreement_lists_both_directions() {
    let summary = PhaseSummary {
        occurrences: 3,
        blocks: 4,
        seconds: 1.0,
        ranks: vec![3, 3],
        labels: Vec::new(),
        events: vec![0, 2],
        unattributed_calls: 0,
        closing_calls: Vec::new(),
    };
    let structure: Structure = serde_json::from_value(json!({
        "schema": "mheta-structure/1", "crate": "x", "solvers": [{
            "name": "x::solve", "span": {"file": "a.rs", "line": 1, "column": 1},
            "main_loop": {"span": {"file": "a.rs", "line": 2, "column": 1}, "kind": "for"},
            "variables": [], "diagnostics": [],
            "sections": [
                {"id": 0, "items": [], "comm": event(0, 1.0)},
                {"id": 1, "items": [], "comm": event(1, 1.0)},
                {"id": 2, "items": [], "comm": event(3, 0.5)},
            ]
        }]
    }))
    .unwrap();
    let a = agreement(Some(&summary), &structure);
    assert_eq!(a.run_only, vec![2]);
    assert_eq!(a.structure_only, vec![1]);
    assert_eq!(a.conditional_absent, vec![3]);
    assert!(!a.agree);
    // Both ranks show section 0's boundary (event 0), then section 1's (event 1).
    let calls = vec![
        ClosingCall {
            label: "send +1 #0".into(),
            event: Some(0),
        },
        ClosingCall {
            label: "all_reduce #1".into(),
            event: Some(1),
        },
    ];
    let fine = PhaseSummary {
        events: vec![0, 1],
        closing_calls: vec![calls.clone(), calls],
        ..summary
    };
    assert!(agreement(Some(&fine), &structure).agree);
    assert!(!agreement(None, &structure).agree);
}

fn event(id: u32, frequency: f64) -> serde_json::Value {
    json!({"id": id, "pattern": "reduction", "rule": "single_call", "calls": [],
        "participants": [], "message": null,
        "span": {"file": "a.rs", "line": 3, "column": 1}, "frequency": frequency})
}

fn parse_error(text: &str) -> String {
    match Trace::parse(text, "t.json").and_then(|t| analyse(&t, "t.json").map(|_| ())) {
        Ok(()) => panic!("accepted {text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_traces_are_errors_naming_file_and_field() {
    let cases = [
        ("{", "`t.json`: the document is not JSON"),
        ("{}", "`t.json`: traceEvents is missing"),
        (r#"{"traceEvents": 3}"#, "traceEvents is not an array"),
        (r#"{"traceEvents": [{"ph": "M"}]}"#, "has no complete"),
        (r#"{"traceEvents": [7]}"#, "traceEvents[0] is not an object"),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 0, "ts": "a", "dur": 1, "cat": "comm"}]}"#,
            "traceEvents[0].ts is missing or not a finite number",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": -1, "ts": 1, "dur": 1, "cat": "comm"}]}"#,
            "traceEvents[0].tid",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 4000000000, "ts": 1, "dur": 1, "cat": "comm"}]}"#,
            "traceEvents[0].tid is 4000000000, more ranks than the trace has events (1)",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 0, "ts": 1, "dur": -1, "cat": "comm"}]}"#,
            "traceEvents[0].dur is -1",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 0, "ts": 1, "dur": 1, "cat": "comm", "name": "send x"}]}"#,
            "traceEvents[0].name is \"send x\"",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 0, "ts": 1, "dur": 1, "cat": "comm", "name": "send 1", "args": {"event": "e"}}]}"#,
            "traceEvents[0].args.event",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 0, "ts": 1, "dur": 1, "cat": "comm", "name": "send 5"}]}"#,
            "peer 5 is not a rank",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 0, "ts": 1, "dur": 1, "cat": "comm", "name": "receive 0", "args": {"source": "left"}}]}"#,
            "traceEvents[0].args.source is \"left\", expected a rank or null",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 0, "ts": 1, "dur": 1, "cat": "comm", "name": "receive 0", "args": {"source": 7, "messages_received": 1}}]}"#,
            "source 7 is not a rank",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 0, "ts": 1, "dur": 1, "cat": "comm", "name": "send 1"},
                {"ph": "X", "tid": 1, "ts": 1, "dur": 1, "cat": "stage", "name": "stage 0.0"}]}"#,
            "`t.json`: rank 0 sends 1 message to rank 1, which receives 0 from it",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 0, "ts": 1, "dur": 1, "cat": "comm", "name": "barrier"},
                {"ph": "X", "tid": 1, "ts": 1, "dur": 1, "cat": "comm", "name": "all_reduce"}]}"#,
            "rank 1, collective call 0 is `all_reduce`, rank 0's is `barrier`",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 0, "ts": 1, "dur": 1, "cat": "comm", "name": "barrier"},
                {"ph": "X", "tid": 1, "ts": 1, "dur": 1, "cat": "stage", "name": "s"}]}"#,
            "rank 1 makes 0 collective calls, rank 0 makes 1",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 0, "ts": 1, "dur": 1, "cat": "comm", "name": "barrier", "args": {"group": "evens"}}]}"#,
            "traceEvents[0].args.group is \"evens\", expected a list of distinct ranks or null",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 0, "ts": 1, "dur": 1, "cat": "comm", "name": "barrier", "args": {"group": [0, 0]}}]}"#,
            "traceEvents[0].args.group is [0,0]",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 0, "ts": 1, "dur": 1, "cat": "comm", "name": "barrier", "args": {"group": []}}]}"#,
            "traceEvents[0].args.group is []",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 0, "ts": 1, "dur": 1, "cat": "comm", "name": "barrier", "args": {"group": [0, 9]}}]}"#,
            "`barrier` runs among rank 9, which is not a rank of the trace (it has 1)",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 0, "ts": 1, "dur": 1, "cat": "comm", "name": "barrier", "args": {"group": [1]}},
                {"ph": "X", "tid": 1, "ts": 1, "dur": 1, "cat": "stage", "name": "s"}]}"#,
            "rank 0, call 0 `barrier` runs among ranks [1], which do not include rank 0",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "tid": 0, "ts": 1, "dur": 1, "cat": "comm", "name": "barrier", "args": {"group": [0, 2]}},
                {"ph": "X", "tid": 1, "ts": 1, "dur": 1, "cat": "stage", "name": "s"},
                {"ph": "X", "tid": 2, "ts": 1, "dur": 1, "cat": "stage", "name": "s"}]}"#,
            "rank 2 makes 0 collective calls among ranks [0, 2], rank 0 makes 1",
        ),
    ];
    for (text, expected) in cases {
        let message = parse_error(text);
        assert!(message.contains(expected), "{message:?} lacks {expected:?}");
        assert!(message.starts_with("`t.json`"), "{message}");
    }
}

#[test]
fn the_runtime_trace_format_round_trips() {
    // A trace as `mheta_runtime::measure::trace` writes it: comm names with and without a peer,
    // a null event, other categories ignored.
    let text = trace_json(
        &[
            vec![("send 1".into(), Some(0)), ("barrier".into(), None)],
            vec![("receive 0".into(), Some(0)), ("barrier".into(), None)],
        ],
        2,
    );
    let t = Trace::parse(&text, "t.json").unwrap();
    assert_eq!(t.ranks.len(), 2);
    assert_eq!(t.ranks[0].calls[0].peer, Some(1));
    assert_eq!(t.ranks[0].calls[1].event, None);
    assert_eq!(t.ranks[1].iterations(), 1);
    let g = DependencyGraph::from_trace(&t, "t.json").unwrap();
    // 3 blocks per rank; sequence 2+2, message 1, barrier 2.
    assert_eq!(g.len(), 6);
    assert_eq!(g.graph.edge_count(), 7);
    assert_eq!(g.label(g.ranks[1][0]), "receive -1 #0");
    assert!(g.to_dot().starts_with("digraph dependencies {"));
}

/// A wavefront pipeline of `t` identical tiles on 4 ranks (as rna and rsmpi-wavefront run one
/// pass): rank 0 sends each tile on (event 1), ranks 1 and 2 receive it (event 0) and send it
/// on, rank 3 receives it. Blocks are labelled by their closing call, so rank 0 has `t` send
/// blocks, ranks 1 and 2 alternate receive and send blocks, rank 3 has `t` receive blocks.
fn pipeline_trace(t: usize) -> String {
    let p = 4;
    let ranks: Vec<Vec<(String, Option<u32>)>> = (0..p)
        .map(|r| {
            (0..t)
                .flat_map(|_| {
                    let mut calls = Vec::new();
                    if r > 0 {
                        calls.push((format!("receive {}", r - 1), Some(0)));
                    }
                    if r + 1 < p {
                        calls.push((format!("send {}", r + 1), Some(1)));
                    }
                    calls
                })
                .collect()
        })
        .collect();
    trace_json(&ranks, 2 * t)
}

/// The pipeline's tile is found with its count. The atomic phases are the send blocks (ranks
/// 0–2, Occ 3t) and the receive blocks (ranks 1–3, Occ 3t); one tile on ranks 0–2 — rank 0's
/// send block, then ranks 1 and 2's receive and send blocks, 5 blocks joined by the tile's two
/// messages — occurs t times, once per tile on each of those ranks. (Rank 3's receive block is
/// not part of it: the phase of best quality containing it is the Occ t−1 two-tile phase that
/// spans every rank.) The length is modest: the number of pairs in `S*` grows steeply with the
/// pipeline's length (study/phases.md).
#[test]
fn a_pipeline_of_identical_tiles() {
    for t in [3, 4, 5] {
        let trace = Trace::parse(&pipeline_trace(t), "pipe.json").unwrap();
        let a = analyse(&trace, "pipe.json").unwrap();
        assert!(!a.detection.truncated);
        assert_eq!(a.graph.len(), 2 * (t + 1) + 2 * (2 * t + 1));
        let tile = a
            .phases
            .iter()
            .find(|p| p.occurrences == t && p.ranks == vec![t, t, t, 0])
            .unwrap_or_else(|| panic!("t = {t}: no tile phase in {:?}", a.phases));
        assert_eq!(tile.blocks, 5, "t = {t}");
        assert_eq!(tile.events, vec![0, 1]);
        let atomic: Vec<_> = a
            .phases
            .iter()
            .filter(|p| p.blocks == 1 && p.occurrences == 3 * t)
            .map(|p| p.ranks.clone())
            .collect();
        assert_eq!(atomic, vec![vec![t, t, t, 0], vec![0, t, t, t]], "t = {t}");
        let main = &a.phases[a.main_loop.expect("a phase spanning every rank")];
        assert_eq!((main.occurrences, main.blocks), (t - 1, 12), "t = {t}");
    }
}

/// A structure of one solver whose section `i` is closed by every-iteration event `closing[i]`
/// (`None`: a section without communication).
fn sections_closed_by(closing: &[Option<u32>]) -> Structure {
    let sections: Vec<serde_json::Value> = closing
        .iter()
        .enumerate()
        .map(|(i, e)| json!({"id": i, "items": [], "comm": e.map(|e| event(e, 1.0))}))
        .collect();
    structure_with(json!(sections))
}

/// A structure of one solver with the given sections (`[{"id", "items", "comm"}]`).
fn structure_with(sections: serde_json::Value) -> Structure {
    serde_json::from_value(json!({
        "schema": "mheta-structure/1", "crate": "x", "solvers": [{
            "name": "x::solve", "span": {"file": "a.rs", "line": 1, "column": 1},
            "main_loop": {"span": {"file": "a.rs", "line": 2, "column": 1}, "kind": "for"},
            "variables": [], "diagnostics": [], "sections": sections
        }]
    }))
    .unwrap()
}

/// The main-loop phase of a trace whose ranks all make `calls` (name, event) `k` times.
fn main_phase_of(p: usize, k: usize, calls: &[(&str, Option<u32>)]) -> PhaseSummary {
    let trace = Trace::parse(&periodic_trace(p, k, calls), "s.json").unwrap();
    let a = analyse(&trace, "s.json").unwrap();
    let main = a.main_loop.expect("a main-loop phase");
    a.phases[main].clone()
}

/// Jacobi's shape: section 0 ends with the halo exchange (event 0: a send and a receive, one
/// boundary), section 1 with the residual's all-reduce (event 1). Every rank shows both
/// boundaries in order: the sections agree.
#[test]
fn section_boundaries_agree() {
    let main = main_phase_of(
        4,
        3,
        &[
            ("send NEXT", Some(0)),
            ("receive PREV", Some(0)),
            ("all_reduce", Some(1)),
        ],
    );
    let structure = sections_closed_by(&[Some(0), Some(1)]);
    let a = agreement(Some(&main), &structure);
    let s = a.sections.clone().unwrap();
    assert_eq!(s.structure, vec![(0, 0), (1, 1)]);
    assert_eq!(s.run.len(), 4);
    for seq in &s.run {
        // A rotation of [0, 1]: the instance need not start with the iteration.
        assert!(seq == &vec![0, 1] || seq == &vec![1, 0], "{seq:?}");
    }
    assert!(s.run_only.is_empty() && s.structure_only.is_empty() && s.out_of_order.is_empty());
    assert!(s.order_compared && s.agree);
    assert!(a.agree, "{a:?}");
}

/// The run shows a boundary the structure lacks: a barrier, in no structure event, between the
/// halo exchange and the all-reduce, so section 1 is two blocks on every rank, not one. It is
/// reported on every rank, in section 1 (the section the next boundary closes).
#[test]
fn a_boundary_the_structure_lacks() {
    let main = main_phase_of(
        3,
        3,
        &[
            ("send NEXT", Some(0)),
            ("receive PREV", Some(0)),
            ("barrier", None),
            ("all_reduce", Some(1)),
        ],
    );
    let structure = sections_closed_by(&[Some(0), Some(1)]);
    let a = agreement(Some(&main), &structure);
    let s = a.sections.clone().unwrap();
    assert_eq!(
        s.run_only,
        (0..3)
            .map(|rank| ExtraBoundary {
                rank,
                section: Some(1),
                call: "barrier".into(),
            })
            .collect::<Vec<_>>()
    );
    assert!(s.structure_only.is_empty() && s.out_of_order.is_empty());
    assert!(!s.agree && !a.agree);
}

/// Three sections closed by all-reduces 0, 1, 2; the run makes them in the order 0, 2, 1, which
/// no rotation of the structure's order gives; and a structure with a fourth section whose
/// every-iteration boundary (event 3) the run never shows.
#[test]
fn section_boundaries_out_of_order_or_missing() {
    let main = main_phase_of(
        2,
        3,
        &[
            ("all_reduce", Some(0)),
            ("all_reduce", Some(2)),
            ("all_reduce", Some(1)),
        ],
    );
    let three = sections_closed_by(&[Some(0), Some(1), Some(2)]);
    let s = agreement(Some(&main), &three).sections.unwrap();
    assert_eq!(s.out_of_order, vec![0, 1]);
    assert!(!s.agree);
    let main = main_phase_of(2, 3, &[("all_reduce", Some(0)), ("all_reduce", Some(1))]);
    let four = sections_closed_by(&[Some(0), Some(1), None, Some(3)]);
    let s = agreement(Some(&main), &four).sections.unwrap();
    assert_eq!(s.structure_only, vec![3]);
    assert!(s.out_of_order.is_empty(), "{s:?}");
    assert!(!s.agree);
}

/// A phase instance that covers two iterations (a chain of ranks with no global
/// synchronisation, whose ranks drift an iteration apart): its boundaries repeat the
/// structure's cycle, `[0, 1, 2, 0, 1, 2]`, which agrees; `[0, 2, 1, 0, 2, 1]` is out of order.
#[test]
fn a_phase_of_two_iterations_repeats_the_sections() {
    let structure = sections_closed_by(&[Some(0), Some(1), Some(2)]);
    let solver = &structure.solvers[0];
    let calls = |events: &[u32]| {
        events
            .iter()
            .map(|&e| sections::ClosingCall {
                label: format!("all_reduce #{e}"),
                event: Some(e),
            })
            .collect::<Vec<_>>()
    };
    let s = sections::compare(
        &[calls(&[0, 1, 2, 0, 1, 2]), calls(&[1, 2, 0, 1, 2, 0])],
        solver,
    );
    assert_eq!(s.run, vec![vec![0, 1, 2], vec![1, 2, 0]]);
    assert!(s.agree, "{s:?}");
    let s = sections::compare(&[calls(&[0, 2, 1, 0, 2, 1])], solver);
    assert_eq!(s.out_of_order, vec![0]);
    assert!(!s.agree);
}

/// The main-loop phase of rna with three tiles per pass (192 columns, K = 3 iterations, 4
/// ranks), as `mheta phases` found it: a phase of two tiles across all ranks occurs 6 times,
/// once per rank each time, and outranks the iteration body (Occ 3, 22 blocks). With the
/// iteration count the body is chosen; without it (no `iteration` records), the best spanning
/// phase.
#[test]
fn the_main_loop_phase_occurs_once_per_recorded_iteration() {
    let phase = |occurrences: usize, blocks: usize, ranks: Vec<usize>| PhaseSummary {
        occurrences,
        blocks,
        seconds: 0.0,
        ranks,
        labels: Vec::new(),
        events: Vec::new(),
        unattributed_calls: 0,
        closing_calls: Vec::new(),
    };
    let phases = vec![
        phase(27, 1, vec![9, 9, 9, 0]),
        phase(12, 1, vec![3, 3, 3, 3]),
        phase(6, 12, vec![6, 6, 6, 6]),
        phase(3, 22, vec![3, 3, 3, 3]),
        phase(2, 44, vec![2, 2, 2, 2]),
        phase(1, 70, vec![1, 1, 1, 1]),
    ];
    assert_eq!(main_loop_of(&phases, &[3, 3, 3, 3]), Some(3));
    assert_eq!(main_loop_of(&phases, &[0, 0, 0, 0]), Some(2));
    // Ranks that disagree on K: no count to go by.
    assert_eq!(main_loop_of(&phases, &[3, 3, 2, 3]), Some(2));
    // No spanning phase occurs K times: the best spanning one.
    assert_eq!(main_loop_of(&phases, &[5, 5, 5, 5]), Some(2));
    assert_eq!(main_loop_of(&phases[..2], &[3, 3, 3, 3]), None);
    // Rank 3 never ran the main loop (it is not in the solver's communicator): the phases need
    // not span it, and K is the other ranks'.
    let split = vec![
        phase(9, 1, vec![9, 9, 9, 0]),
        phase(3, 4, vec![3, 3, 3, 0]),
        phase(3, 2, vec![3, 0, 3, 0]),
    ];
    assert_eq!(main_loop_of(&split, &[3, 3, 3, 0]), Some(1));
    assert_eq!(main_loop_of(&split, &[3, 0, 3, 0]), Some(1));
    assert_eq!(main_loop_of(&split[2..], &[3, 0, 3, 0]), Some(0));
    // A rank that ran it must be in the phase.
    assert_eq!(main_loop_of(&split[2..], &[3, 3, 3, 0]), None);
}

/// The detection keeps at most the candidate pairs it is given: past them it stops, says how
/// many it held, and keeps the phases made so far; within them it runs to the end.
#[test]
fn the_pair_budget_stops_the_run_instead_of_the_memory() {
    let trace = Trace::parse(&pipeline_trace(5), "pipe.json").unwrap();
    let whole = analyse(&trace, "pipe.json").unwrap();
    assert_eq!(whole.detection.exhausted, None);
    let cut = analyse_within(&trace, "pipe.json", 50).unwrap();
    let at = cut.detection.exhausted.expect("stopped at the budget");
    assert!(
        at.pairs >= 50 || at.bytes >= 50 * super::detect::PAIR_BYTES,
        "{at:?}"
    );
    assert!(cut.detection.merges.len() < whole.detection.merges.len());
    // What was made before the budget ran out is what the whole run made first.
    assert_eq!(
        cut.detection.merges,
        whole.detection.merges[..cut.detection.merges.len()]
    );
}

/// A periodic halo exchange with no collective: ranks drift apart, the graph is a grid of
/// iterations × ranks, and the detection keeps few pairs but many large block sets. The budget
/// bounds that memory too: the run stops on its bytes with far fewer pairs than it allows (the pair count
/// alone let such runs exhaust the machine).
#[test]
fn the_budget_bounds_the_memory_of_few_pairs() {
    let calls = [
        ("send NEXT", Some(0)),
        ("send PREV", Some(0)),
        ("receive PREV", Some(0)),
        ("receive NEXT", Some(0)),
    ];
    let trace = Trace::parse(&periodic_trace(4, 5, &calls), "grid.json").unwrap();
    let budget = 20_000;
    let a = analyse_within(&trace, "grid.json", budget).unwrap();
    let at = a.detection.exhausted.expect("stopped at the budget");
    assert!(
        at.pairs < budget / 2 && at.bytes >= budget * super::detect::PAIR_BYTES,
        "{at:?}"
    );
}
