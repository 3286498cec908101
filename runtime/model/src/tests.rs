//! Hand-computed tests of the model equations (seed §5.3). Every expected number is worked out
//! in the comment above it from the seed's equations, independently of the implementation.

use super::*;
use mheta_runtime::format::*;

const L: f64 = 0.1; // T_{i→i'}(q): latency only (per-byte cost 0).
const OS: f64 = 0.01; // O_S(q)
const OR: f64 = 0.02; // O_←(q)

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// A tiny structure + measurements builder for hand-made cases.
struct Case {
    sections: Vec<Section>,
    groups: Vec<Group>,
    variables: Vec<Variable>,
    m: Measurements,
    cluster: ClusterSpec,
}

impl Case {
    fn new(rows: &[u64]) -> Case {
        let node = NodeSpec {
            cpu: 1.0,
            memory_bytes: 1 << 40,
            disk_read_bps: 1e8,
            disk_write_bps: 1e8,
            disk_latency_s: 1e-3,
        };
        let cluster = ClusterSpec {
            network: NetworkSpec {
                latency_s: L,
                bandwidth_bps: 0.0,
            },
            nodes: vec![node; rows.len()],
            loads: Vec::new(),
        };
        let nodes = rows
            .iter()
            .enumerate()
            .map(|(i, &r)| NodeMeasurements {
                rank: i as u32,
                rows: r,
                iteration_s: 0.0,
                read_overhead_s: 0.0,
                write_overhead_s: 0.0,
                async_overhead_s: 0.0,
                read_per_byte_s: 0.0,
                write_per_byte_s: 0.0,
                copy_per_byte_s: 0.0,
                stages: vec![],
                io: vec![],
                events: vec![],
                tiles: vec![],
                groups: vec![],
                iteration_compute_s: vec![],
            })
            .collect();
        let m = Measurements {
            schema: MEASUREMENTS_SCHEMA.into(),
            structure: StructureId {
                crate_name: "t".into(),
                solver: "t::solve".into(),
                digest: String::new(),
            },
            clock: "virtual".into(),
            rows: rows.iter().sum(),
            iterations: 1,
            warm_up: 0,
            distribution: rows.to_vec(),
            cluster: cluster.clone(),
            arrays: vec![],
            micro: Microbenchmarks {
                send_overhead_s: OS,
                recv_overhead_s: OR,
                latency_s: L,
                per_byte_s: 0.0,
            },
            nodes,
        };
        Case {
            sections: vec![],
            groups: vec![],
            variables: vec![Variable {
                name: "a".into(),
                class: VarClass::Distributed,
                elem_type: None,
                span: Span::default(),
            }],
            m,
            cluster,
        }
    }

    /// Adds a section with one stage over `a` (distributed) or `s` (replicated) whose measured
    /// compute is `compute[i]` on node i, closed by `comm`.
    fn section(
        &mut self,
        distributed: bool,
        compute: &[f64],
        comm: Option<(Pattern, &[&str])>,
        group: Option<u32>,
    ) -> &mut Self {
        let id = self.sections.len() as u32;
        let var = if distributed { "a" } else { "s" };
        let st = stage(0, var);
        let count = group.map(|g| self.trips(g)).unwrap_or(1.0);
        for (i, n) in self.m.nodes.iter_mut().enumerate() {
            n.stages.push(StageMeasurement {
                key: StageKey {
                    section: id,
                    tile: None,
                    stage: 0,
                },
                count,
                compute_s: compute[i] * count,
                io_s: 0.0,
                tiles: Vec::new(),
                in_core_tiles: Vec::new(),
                in_core: Vec::new(),
            });
        }
        let comm = comm.map(|(pattern, parts)| self.event(pattern, parts, count));
        self.sections.push(Section {
            id,
            items: vec![SectionItem::Stage(st)],
            comm,
            group,
        });
        self
    }

    fn trips(&self, g: u32) -> f64 {
        self.m.nodes[0]
            .groups
            .iter()
            .find(|x| x.group == g)
            .map(|x| x.trips)
            .unwrap_or(1.0)
    }

    fn group(&mut self, id: u32, trips: f64) -> &mut Self {
        self.groups.push(Group {
            id,
            span: Span::default(),
            trip_count: "n".into(),
            parent: None,
        });
        for n in &mut self.m.nodes {
            n.groups.push(GroupMeasurement { group: id, trips });
        }
        self
    }

    /// An event whose measured per-message overheads are exactly OS and OR; peers from the
    /// symbolic participants.
    fn event(&mut self, pattern: Pattern, parts: &[&str], count: f64) -> CommEvent {
        let id = self.sections.len() as u32 + 100;
        for n in &mut self.m.nodes {
            n.events.push(EventMeasurement {
                event: id,
                messages_sent: count,
                messages_received: count,
                bytes_sent: 0.0,
                bytes_received: 0.0,
                send_overhead_s: OS * count,
                recv_overhead_s: OR * count,
                blocked_s: 0.0,
                total_s: (OS + OR) * count,
                sent_to: vec![],
                received_from: vec![],
                order: vec![],
                overheads: Vec::new(),
            });
        }
        CommEvent {
            id,
            pattern,
            rule: EventRule::SingleCall,
            calls: vec![],
            participants: parts.iter().map(|s| s.to_string()).collect(),
            message: Some("a".into()),
            elem_type: None,
            span: Span::default(),
            frequency: 1.0,
            condition: None,
            alternates: vec![],
        }
    }

    fn model(&self) -> Model {
        self.try_model().expect("model builds")
    }

    fn try_model(&self) -> Result<Model, ModelError> {
        let structure = Structure {
            schema: STRUCTURE_SCHEMA.into(),
            crate_name: "t".into(),
            solvers: vec![Solver {
                name: "t::solve".into(),
                span: Span::default(),
                found_by: String::new(),
                main_loop: MainLoop {
                    span: Span::default(),
                    kind: "for".into(),
                },
                variables: self.variables.clone(),
                sections: self.sections.clone(),
                groups: self.groups.clone(),
                diagnostics: vec![],
            }],
            diagnostics: vec![],
        };
        Model::new(&structure, &self.m, &self.cluster)
    }
}

fn stage(id: u32, var: &str) -> Stage {
    Stage {
        id,
        kind: StageKind::Loop,
        span: Span::default(),
        loop_depth: 1,
        reads: vec![var.into()],
        writes: vec![],
        representative: Some(var.into()),
        io: vec![],
        access: Access::Independent,
        load: Load::Fixed,
        affine: vec![],
        alternates: vec![],
    }
}

#[test]
fn stage_compute_scales_with_work_for_distributed_stages_only() {
    // (T_φ)' = T_φ · W'/W: node 0 measured 1.0 s on 100 rows, node 1 2.0 s on 100 rows.
    // Under (50, 150): 0.5 s and 3.0 s. A replicated stage keeps its 0.25 s.
    let mut c = Case::new(&[100, 100]);
    c.section(true, &[1.0, 2.0], None, None)
        .section(false, &[0.25, 0.25], None, None);
    let p = c.model().predict(&[50, 150]).unwrap();
    assert!(close(p.nodes[0].compute_s, 0.75), "{p:?}");
    assert!(close(p.nodes[1].compute_s, 3.25));
    assert!(close(p.iteration_s, 3.25));
    assert!(close(p.section_time(0, 1), 3.0));
}

/// Two nodes of 10 rows, T_τ = (1.0, 0.5), exchanging one message each way.
fn nearest_neighbor_pair() -> Case {
    let mut c = Case::new(&[10, 10]);
    c.section(
        true,
        &[1.0, 0.5],
        Some((Pattern::NearestNeighbor, &["rank - 1", "rank + 1"])),
        None,
    );
    c
}

#[test]
fn eq_5_3_and_5_6_two_node_nearest_neighbor() {
    // T_τ(0) = 1.0, T_τ(1) = 0.5.
    // Eq. 5.3: T_w(1) = T_τ(0) + O_→ + T_{0→1} − [T_τ(1) + O_→] = 1.0 + 0.01 + 0.1 − 0.51 = 0.6;
    //          T_w(0) = 0.5 + 0.01 + 0.1 − 1.01 < 0 → 0.
    // Eq. 5.6: T_Υ(1) = 0.01 + 0.6 + 0.02 = 0.63 → 1.13; T_Υ(0) = 0.03 → 1.03.
    let p = nearest_neighbor_pair().model().predict(&[10, 10]).unwrap();
    assert!(close(p.synchronized[0].total_s, 1.03), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 1.13));
    assert!(close(p.synchronized[1].blocked_s, 0.6));
    assert!(close(p.synchronized[0].blocked_s, 0.0));
    assert!(close(p.nodes[1].overhead_s, OS + OR));
}

#[test]
fn overheads_are_the_median_over_the_merged_runs() {
    // The case above, but other instrumented runs measured node 1's per-message send overhead
    // at 0.03 and 0.05 s, its receive overhead at 0.04 s (and none once). The medians:
    // O_→(1) = median(0.01, 0.03, 0.05) = 0.03, O_←(1) = median(0.02, 0.04) = 0.03.
    // Eq. 5.3: T_w(1) = 1.0 + 0.01 + 0.1 − (0.5 + 0.03) = 0.58.
    // Eq. 5.6: T_Υ(1) = 0.03 + 0.58 + 0.03 = 0.64 → 1.14; node 0 unchanged, 1.03.
    let mut c = nearest_neighbor_pair();
    c.m.nodes[1].events[0].overheads = vec![
        OverheadSample {
            send_s: Some(0.03),
            recv_s: None,
            ..OverheadSample::default()
        },
        OverheadSample {
            send_s: Some(0.05),
            recv_s: Some(0.04),
            ..OverheadSample::default()
        },
    ];
    let p = c.model().predict(&[10, 10]).unwrap();
    assert!(close(p.nodes[1].overhead_s, 0.06), "{p:?}");
    assert!(close(p.synchronized[1].blocked_s, 0.58), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 1.14), "{p:?}");
    assert!(close(p.synchronized[0].total_s, 1.03), "{p:?}");
    // A sample that is not a number is an error naming it.
    c.m.nodes[1].events[0].overheads[1].recv_s = Some(f64::NAN);
    let err = c.try_model().unwrap_err().to_string();
    assert!(
        err.contains("nodes[1].events[100].overheads[1].recv_s"),
        "{err}"
    );
}

#[test]
fn eq_5_11_and_5_12_three_node_chain() {
    // Node 1 sends to 0 then 2 (N_→(1,0) = 1, N_→(1,2) = 2); nodes 0 and 2 send one message.
    // T_τ = (1.0, 0.2, 0.6).
    // Node 0: T_w = T_→(1,0) + L − T_→(0,1) = (0.2 + 0.01) + 0.1 − (1.0 + 0.01) < 0 → 0.
    // Node 1: from 0: (1.0 + 0.01) + 0.1 − (0.2 + 0.01) = 0.9; from 2: (0.6 + 0.01) + 0.1 − (0.2 + 0.02) = 0.49.
    //         T_w = 0.9; T_Υ = 2·0.01 + 0.9 + 2·0.02 = 0.96 → 1.16.
    // Node 2: from 1: (0.2 + 0.02) + 0.1 − (0.6 + 0.01) < 0 → 0; T_Υ = 0.03 → 0.63.
    let mut c = Case::new(&[10, 10, 10]);
    c.section(
        true,
        &[1.0, 0.2, 0.6],
        Some((Pattern::NearestNeighbor, &["rank - 1", "rank + 1"])),
        None,
    );
    let p = c.model().predict(&[10, 10, 10]).unwrap();
    assert!(close(p.synchronized[0].total_s, 1.03), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 1.16));
    assert!(close(p.synchronized[1].blocked_s, 0.9));
    assert!(close(p.synchronized[2].total_s, 0.63));
}

/// The three-node chain of nearest-neighbour messages, with `T_τ = (1.0, 0.5, 0.5)` and every
/// node's calls measured in the order `orders`.
fn three_node_halo(orders: [Vec<PeerOp>; 3]) -> Prediction {
    let mut c = Case::new(&[10, 10, 10]);
    c.section(
        true,
        &[1.0, 0.5, 0.5],
        Some((Pattern::NearestNeighbor, &["rank - 1", "rank + 1"])),
        None,
    );
    for (node, order) in c.m.nodes.iter_mut().zip(orders) {
        node.events[0].order = order;
    }
    c.model().predict(&[10, 10, 10]).unwrap()
}

#[test]
fn a_send_after_a_receive_leaves_when_that_receive_is_done() {
    use PeerOp::{Receive as R, Send as S};
    // The halo exchange of a Jacobi code: send up, receive from below, send down, receive from
    // above. Node 0: [S1, R1]; node 1: [S2, R0, S0, R2]; node 2: [R1, S1].
    // Node 0: S1 leaves at 1.0 + 0.01 = 1.01.
    // Node 1: S2 leaves at 0.51; R0 arrives 1.01 + 0.1 = 1.11, waits 0.6, done 1.13;
    //         S0 leaves at 1.14; R2 (below) arrives 0.74 < 1.14, done 1.16.
    // Node 2: R1 arrives 0.51 + 0.1 = 0.61, waits 0.11, done 0.63; S1 leaves at 0.64 → 0.64.
    // Node 0: R1 arrives 1.14 + 0.1 = 1.24, waits 0.23, done 1.26.
    // Eq. 5.12 with every send first would give node 0 only 1.03: its answer waits for node 1,
    // which waited for node 0.
    let p = three_node_halo([
        vec![S(1), R(1)],
        vec![S(2), R(0), S(0), R(2)],
        vec![R(1), S(1)],
    ]);
    assert!(close(p.synchronized[0].total_s, 1.26), "{p:?}");
    assert!(close(p.synchronized[0].blocked_s, 0.23), "{p:?}");
    assert!(close(p.nodes[0].overhead_s, OS + OR), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 1.16), "{p:?}");
    assert!(close(p.synchronized[1].blocked_s, 0.6), "{p:?}");
    assert!(close(p.synchronized[2].total_s, 0.64), "{p:?}");
    assert!(close(p.synchronized[2].blocked_s, 0.11), "{p:?}");
    assert!(close(p.synchronized_s, 1.26));
}

#[test]
fn call_orders_the_seed_describes_or_cannot_complete_keep_eq_5_12() {
    use PeerOp::{Receive as R, Send as S};
    // Eq. 5.11–5.12 as in `eq_5_11_and_5_12_three_node_chain`, for T_τ = (1.0, 0.5, 0.5):
    // node 0: from 1: 0.51 + 0.1 − 1.01 < 0 → 1.03; node 1: from 0: 1.01 + 0.1 − 0.51 = 0.6,
    // from 2: 0.51 + 0.1 − 0.52 = 0.09 → 0.5 + 0.02 + 0.6 + 0.04 = 1.16; node 2: from 1:
    // 0.52 + 0.1 − 0.51 = 0.11 → 0.5 + 0.01 + 0.11 + 0.02 = 0.64.
    let seed = |p: &Prediction| {
        close(p.synchronized[0].total_s, 1.03)
            && close(p.synchronized[1].total_s, 1.16)
            && close(p.synchronized[2].total_s, 0.64)
    };
    // Not measured.
    let p = three_node_halo([vec![], vec![], vec![]]);
    assert!(seed(&p), "{p:?}");
    // Every send before the first receive: the seed's own assumption.
    let p = three_node_halo([
        vec![S(1), R(1)],
        vec![S(0), S(2), R(2), R(0)],
        vec![S(1), R(1)],
    ]);
    assert!(seed(&p), "{p:?}");
    // Every node receives first: no call could complete, so the orders are not believed.
    let p = three_node_halo([
        vec![R(1), S(1)],
        vec![R(0), R(2), S(0), S(2)],
        vec![R(1), S(1)],
    ]);
    assert!(seed(&p), "{p:?}");
    // A receive whose message nobody sent, and a node that talked without an order.
    let p = three_node_halo([
        vec![S(1), R(1)],
        vec![S(2), R(0), S(0), R(2)],
        vec![R(0), S(1)],
    ]);
    assert!(seed(&p), "{p:?}");
    let p = three_node_halo([vec![S(1), R(1)], vec![S(2), R(0), S(0), R(2)], vec![]]);
    assert!(seed(&p), "{p:?}");
}

#[test]
fn eq_5_7_to_5_9_two_node_reduction_both_cases() {
    // Root slower (Fig. 5.8 top): T_τ = (1.0, 0.5).
    // Eq. 5.7: T_w(0) = max(0, 0.5 + 0.01 + 0.1 − 1.0) = 0; T_Υ(0) = 0 + 0.02 + 0 + 0.01 = 0.03 → 1.03.
    // Eq. 5.8: T_α(1) = 1.0 + 0.03 + 0.1 = 1.13.
    // Eq. 5.9: T_Υ(1) = 0.01 + [1.13 − 0.51] + 0.02 = 0.65 → 1.15.
    let mut c = Case::new(&[10, 10]);
    c.section(true, &[1.0, 0.5], Some((Pattern::Reduction, &["0"])), None);
    let p = c.model().predict(&[10, 10]).unwrap();
    assert!(close(p.synchronized[0].total_s, 1.03), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 1.15));
    assert!(close(p.synchronized[1].blocked_s, 0.62));
    // Root faster (Fig. 5.8 bottom): T_τ = (0.5, 1.0).
    // T_w(0) = 1.0 + 0.01 + 0.1 − 0.5 = 0.61; T_Υ(0) = 0.61 + 0.02 + 0.01 = 0.64 → 1.14.
    // T_α(1) = 0.5 + 0.64 + 0.1 = 1.24; T_Υ(1) = 0.01 + (1.24 − 1.01) + 0.02 = 0.26 → 1.26.
    let mut c = Case::new(&[10, 10]);
    c.section(true, &[0.5, 1.0], Some((Pattern::Reduction, &["0"])), None);
    let p = c.model().predict(&[10, 10]).unwrap();
    assert!(close(p.synchronized[0].total_s, 1.14), "{p:?}");
    assert!(close(p.synchronized[0].blocked_s, 0.61));
    assert!(close(p.synchronized[1].total_s, 1.26));
}

/// A sample another instrumented run added of node `i`'s event: overheads OS and OR, and what
/// the node sent per iteration with its rows there.
fn sent_sample(messages: f64, bytes: f64, rows: u64) -> OverheadSample {
    OverheadSample {
        send_s: Some(OS),
        recv_s: Some(OR),
        messages_sent: Some(messages),
        bytes_sent: Some(bytes),
        rows: Some(rows),
    }
}

#[test]
fn message_sizes_are_the_merged_runs_which_last_as_long_as_the_predicted_ones() {
    // The root-faster reduction above, T_τ = (0.5, 1.0), per-byte cost 0.001 s. The forced run
    // measured node 1's message empty; two in-core runs, as long as the runs predicted, sent
    // 100 and 300 B in one message: 200 B, 0.2 s more on the wire (a sample without sizes, from
    // an older file, counts for nothing).
    // T_w(0) = 1.0 + 0.01 + 0.1 + 0.2 − 0.5 = 0.81; T_Υ(0) = 0.81 + 0.02 + 0.01 = 0.84 → 1.34.
    // T_α(1) = 0.5 + 0.84 + 0.1 = 1.44 (the root's reply is still empty);
    // T_Υ(1) = 0.01 + (1.44 − 1.01) + 0.02 = 0.46 → 1.46.
    let mut c = Case::new(&[10, 10]);
    c.m.micro.per_byte_s = 0.001;
    c.section(true, &[0.5, 1.0], Some((Pattern::Reduction, &["0"])), None);
    let without = c.model().predict(&[10, 10]).unwrap();
    assert!(close(without.synchronized[0].total_s, 1.14), "{without:?}");
    c.m.nodes[1].events[0].overheads = vec![
        sent_sample(1.0, 100.0, 10),
        OverheadSample {
            send_s: Some(OS),
            ..OverheadSample::default()
        },
        sent_sample(1.0, 300.0, 10),
    ];
    let p = c.model().predict(&[10, 10]).unwrap();
    assert!(close(p.synchronized[0].blocked_s, 0.81), "{p:?}");
    assert!(close(p.synchronized[0].total_s, 1.34), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 1.46), "{p:?}");
    // A size that is not a number is an error naming it.
    c.m.nodes[1].events[0].overheads[2].bytes_sent = Some(-1.0);
    let err = c.try_model().unwrap_err().to_string();
    assert!(
        err.contains("nodes[1].events[100].overheads[2].bytes_sent"),
        "{err}"
    );
}

#[test]
fn gathered_rows_cost_what_the_merged_runs_sent_per_row() {
    // `all_gather_messages_carry_rows`, but the forced run sent 4 B per row (40 B for 10 rows)
    // and an in-core run 8 B per row (160 B for 20 rows): the model takes 8, as there. A run in
    // which node 1 held no rows says nothing of a row's bytes and is passed over.
    let mut c = Case::new(&[10, 10]);
    c.m.micro.per_byte_s = 0.001;
    c.section(
        true,
        &[1.0, 0.5],
        Some((Pattern::AllGather, &["all"])),
        None,
    );
    c.m.nodes[1].events[0].bytes_sent = 40.0;
    c.m.nodes[1].events[0].overheads = vec![sent_sample(1.0, 0.0, 0), sent_sample(1.0, 160.0, 20)];
    let p = c.model().predict(&[5, 15]).unwrap();
    assert!(close(p.synchronized[0].total_s, 1.01), "{p:?}");
    assert!(close(p.synchronized[1].blocked_s, 0.51), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 1.29));
}

#[test]
fn reduction_compute_t_r_is_measured_on_the_root() {
    // The root's event took 0.05 s more than its overheads: T_r = 0.05.
    // T_τ = (1.0, 0.5): T_Υ(0) = 0.02 + 0.05 + 0.01 = 0.08 → 1.08; T_α(1) = 1.0 + 0.08 + 0.1 = 1.18;
    // T_Υ(1) = 0.01 + (1.18 − 0.51) + 0.02 = 0.70 → 1.20.
    let mut c = Case::new(&[10, 10]);
    c.section(true, &[1.0, 0.5], Some((Pattern::Reduction, &["0"])), None);
    c.m.nodes[0].events[0].total_s += 0.05;
    let p = c.model().predict(&[10, 10]).unwrap();
    assert!(close(p.synchronized[0].total_s, 1.08), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 1.20));
}

#[test]
fn multi_node_reduction_orders_the_roots_sends() {
    // Three nodes, T_τ = (1.0, 0.5, 0.5): T_w(0) = 0; root: 2·0.02 receives + 2·0.01 sends
    // → 1.06. T_α(1) = 1.0 + 0.04 + 1·0.01 + 0.1 = 1.15 → T_Υ(1) = 0.01 + (1.15 − 0.51) + 0.02 → 1.17.
    // T_α(2) = 1.0 + 0.04 + 2·0.01 + 0.1 = 1.16 → 1.18.
    let mut c = Case::new(&[10, 10, 10]);
    c.section(
        true,
        &[1.0, 0.5, 0.5],
        Some((Pattern::Reduction, &["0"])),
        None,
    );
    let p = c.model().predict(&[10, 10, 10]).unwrap();
    assert!(close(p.synchronized[0].total_s, 1.06), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 1.17));
    assert!(close(p.synchronized[2].total_s, 1.18));
}

/// Two nodes of 10 rows: the Eq. 5.3 pair's exchange (T_τ = (1.0, 0.5)), then a section of
/// T_τ = (0.2, 0.1) closed by a reduction to node 0.
fn exchange_then_reduction() -> Case {
    let mut c = Case::new(&[10, 10]);
    c.section(
        true,
        &[1.0, 0.5],
        Some((Pattern::NearestNeighbor, &["rank - 1", "rank + 1"])),
        None,
    )
    .section(true, &[0.2, 0.1], Some((Pattern::Reduction, &["0"])), None);
    c
}

#[test]
fn sections_chain_as_per_node_clocks_section_5_3_4() {
    // Section 0 as in the Eq. 5.3 test ends at T_σ = (1.03, 1.13). Section 1: T_τ = (0.2, 0.1),
    // so T_→(i, 0, 1) = Σ_{j<1} T_σ(i, j) + T_τ(i, 1) + O_→: node 1 sends at 1.13 + 0.1 + 0.01 = 1.24.
    // Root (clock 1.23): T_w(0) = 1.24 + 0.1 − 1.23 = 0.11; T_Υ(0) = 0.11 + 0.02 + 0.01 = 0.14 → 1.37.
    // T_α(1) = 1.23 + 0.14 + 0.1 = 1.47; T_Υ(1) = 0.01 + (1.47 − 1.24) + 0.02 = 0.26 → 1.49.
    let p = exchange_then_reduction()
        .model()
        .predict(&[10, 10])
        .unwrap();
    assert!(close(p.synchronized[0].total_s, 1.37), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 1.49));
    assert!(close(p.synchronized_s, 1.49));
    assert!(close(p.section_time(1, 1), 1.49 - 1.13));
}

#[test]
fn the_steady_state_starts_each_iteration_where_the_last_one_left_each_node() {
    // A run's iterations do not start synchronized: the model runs the iteration again from
    // the clocks the last one ended with until one ends with the offsets it began with, and
    // predicts how far the largest clock moves per iteration then.
    //
    // The Eq. 5.3 pair, T_τ = (1.0, 0.5): the first iteration ends at (1.03, 1.13). From
    // there node 0 sends at 1.03 + 1.01 = 2.04; node 1 at 1.13 + 0.51 = 1.64, which arrives at
    // 1.74 < 2.04, so node 0 does not wait: 2.06. Node 1 waits for 2.04 + 0.1 = 2.14: blocked
    // 0.5, ends 2.16. The offsets (0, 0.1) repeat: period 2.16 − 1.13 = 1.03, node 0's own
    // work; the latency is hidden behind node 1's lag.
    let p = nearest_neighbor_pair().model().predict(&[10, 10]).unwrap();
    assert!(close(p.synchronized_s, 1.13), "{p:?}");
    assert!(close(p.iteration_s, 1.03), "{p:?}");
    for i in 0..2 {
        assert!(close(p.nodes[i].total_s, 1.03), "{p:?}");
    }
    assert!(close(p.nodes[1].blocked_s, 0.5), "{p:?}");
    assert!(close(p.nodes[0].blocked_s, 0.0), "{p:?}");
    assert_eq!(p.slowest_node(), 0);

    // A reduction whose root is slower, T_τ = (1.0, 0.5): first (1.03, 1.15). Then node 1
    // sends at 1.66, its message arrives 1.76 < the root's 2.03: the root releases at 2.05 and
    // ends 2.06; node 1 receives at 2.05 + 0.01 + 0.1 = 2.16 and ends 2.18. Offsets (0, 0.12)
    // repeat: period 1.03.
    let mut c = Case::new(&[10, 10]);
    c.section(true, &[1.0, 0.5], Some((Pattern::Reduction, &["0"])), None);
    let p = c.model().predict(&[10, 10]).unwrap();
    assert!(close(p.iteration_s, 1.03), "{p:?}");
    assert!(close(p.nodes[1].blocked_s, 0.5), "{p:?}");
    // Root faster, T_τ = (0.5, 1.0): first (1.14, 1.26). Node 1 sends at 2.27, arriving 2.37;
    // the root (1.64) waits 0.73, releases at 2.39, ends 2.40; node 1 receives at 2.50, ends
    // 2.52. Offsets (0, 0.12) repeat: period 1.26, the synchronized figure (node 1's work and
    // the round trip lie on one cycle).
    let mut c = Case::new(&[10, 10]);
    c.section(true, &[0.5, 1.0], Some((Pattern::Reduction, &["0"])), None);
    let p = c.model().predict(&[10, 10]).unwrap();
    assert!(close(p.iteration_s, 1.26), "{p:?}");
    assert!(close(p.synchronized_s, 1.26), "{p:?}");
    assert!(close(p.nodes[0].blocked_s, 0.73), "{p:?}");
    assert_eq!(p.slowest_node(), 1);

    // The two sections of `sections_chain_as_per_node_clocks_section_5_3_4`: first (1.37, 1.49).
    // Section 0 from there: node 0 sends at 2.38, node 1 at 2.00; node 0 does not wait (2.10)
    // and reaches 2.40; node 1 waits for 2.48, blocked 0.48, reaches 2.50. Section 1: node 0's
    // clock 2.60, node 1's message arrives 2.50 + 0.11 + 0.1 = 2.71: the root waits 0.11,
    // releases at 2.73, ends 2.74; node 1 receives at 2.84 and ends 2.86. Offsets (0, 0.12)
    // repeat: period 1.37, where the synchronized iteration took 1.49. Node 1 spends
    // 2.50 − 1.49 = 1.01 in section 0 and 0.36 in section 1.
    let p = exchange_then_reduction()
        .model()
        .predict(&[10, 10])
        .unwrap();
    assert!(close(p.synchronized_s, 1.49), "{p:?}");
    assert!(close(p.iteration_s, 1.37), "{p:?}");
    assert!(close(p.section_time(0, 1), 1.01), "{p:?}");
    assert!(close(p.section_time(1, 1), 0.36), "{p:?}");
    assert!(close(p.nodes[0].blocked_s, 0.11), "{p:?}");
    assert!(close(p.nodes[1].blocked_s, 0.48 + (2.84 - 2.61)), "{p:?}");
}

#[test]
fn broadcast_and_gather() {
    // Broadcast from 0, T_τ = (1.0, 0.5, 2.0): node 1 gets it at 1.0 + 0.01 + 0.1 = 1.11, blocked
    // 0.61 → 1.13; node 2 at 1.0 + 0.02 + 0.1 = 1.12 < 2.0, not blocked → 2.02; root → 1.02.
    let mut c = Case::new(&[10, 10, 10]);
    c.section(
        true,
        &[1.0, 0.5, 2.0],
        Some((Pattern::Broadcast, &["0"])),
        None,
    );
    let p = c.model().predict(&[10, 10, 10]).unwrap();
    assert!(close(p.synchronized[0].total_s, 1.02), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 1.13));
    assert!(close(p.synchronized[2].total_s, 2.02));
    // Gather to 0, same T_τ: senders pay O_→ and go on: 0.51, 2.01. The root takes the messages
    // in rank order: node 1's arrived at 0.61, so it is processed at once (1.02); node 2's
    // arrives at 2.0 + 0.01 + 0.1 = 2.11, after a wait of 1.09, and is processed by 2.13. (Eq.
    // 5.12 as the seed writes it waits for the last arrival before processing any: 2.15.)
    let mut c = Case::new(&[10, 10, 10]);
    c.section(
        true,
        &[1.0, 0.5, 2.0],
        Some((Pattern::Gather, &["0"])),
        None,
    );
    let p = c.model().predict(&[10, 10, 10]).unwrap();
    assert!(close(p.synchronized[0].total_s, 2.13), "{p:?}");
    assert!(close(p.synchronized[0].blocked_s, 1.09), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 0.51));
    assert!(close(p.synchronized[2].total_s, 2.01));
}

#[test]
fn a_reduction_root_takes_the_contributions_in_rank_order() {
    // Reduction to 0, T_τ = (1.0, 0.5, 2.0). Node 1's contribution leaves at 0.51 and arrives
    // at 0.61, before the root is ready: the root processes it at once (1.02). Node 2's arrives
    // at 2.0 + 0.01 + 0.1 = 2.11: the root waits 1.09, processes it by 2.13 and sends the
    // result in rank order, ending at 2.15. Node 1's copy arrives at 2.13 + 0.01 + 0.1 = 2.24
    // (blocked 2.24 − 0.51 = 1.73, ends 2.26); node 2's at 2.25 (blocked 0.24, ends 2.27).
    // Eq. 5.12 as the seed writes it would release at 2.11 + 0.04 = 2.15, each end 0.02 later.
    let mut c = Case::new(&[10, 10, 10]);
    c.section(
        true,
        &[1.0, 0.5, 2.0],
        Some((Pattern::Reduction, &["0"])),
        None,
    );
    let p = c.model().predict(&[10, 10, 10]).unwrap();
    let s = &p.synchronized;
    assert!(close(s[0].total_s, 2.15), "{p:?}");
    assert!(close(s[0].blocked_s, 1.09), "{p:?}");
    assert!(close(s[1].total_s, 2.26), "{p:?}");
    assert!(close(s[1].blocked_s, 1.73), "{p:?}");
    assert!(close(s[2].total_s, 2.27), "{p:?}");
    assert!(close(s[2].blocked_s, 0.24), "{p:?}");
}

#[test]
fn repeated_groups_replay_and_extrapolate_exactly() {
    // A group of one nearest-neighbour section repeated 40 times must equal the same section
    // written out 40 times (the extrapolation after the clocks settle is exact).
    let mut grouped = Case::new(&[10, 10, 10]);
    grouped.group(0, 40.0).section(
        true,
        &[0.3, 0.2, 0.5],
        Some((Pattern::NearestNeighbor, &["rank - 1", "rank + 1"])),
        Some(0),
    );
    grouped.section(
        true,
        &[0.1, 0.1, 0.1],
        Some((Pattern::Reduction, &["0"])),
        None,
    );
    let mut unrolled = Case::new(&[10, 10, 10]);
    for _ in 0..40 {
        unrolled.section(
            true,
            &[0.3, 0.2, 0.5],
            Some((Pattern::NearestNeighbor, &["rank - 1", "rank + 1"])),
            None,
        );
    }
    unrolled.section(
        true,
        &[0.1, 0.1, 0.1],
        Some((Pattern::Reduction, &["0"])),
        None,
    );
    let rows = [12, 5, 13];
    let a = grouped.model().predict(&rows).unwrap();
    let b = unrolled.model().predict(&rows).unwrap();
    assert!(
        (a.iteration_s - b.iteration_s).abs() < 1e-9 * b.iteration_s,
        "{} vs {}",
        a.iteration_s,
        b.iteration_s
    );
    for i in 0..3 {
        assert!((a.nodes[i].blocked_s - b.nodes[i].blocked_s).abs() < 1e-9);
        assert!((a.nodes[i].compute_s - b.nodes[i].compute_s).abs() < 1e-9);
    }
}

/// Two nodes, 3 tiles; per pass T_τ(0) = 0.6, T_τ(1) = 0.3; O_→ = 0.01, O_← = 0.02, T = 0.1.
/// `profiles[i]` are node i's measured `tiles` and `in_core_tiles`.
fn pipeline_case(profiles: [(&[f64], &[f64]); 2]) -> Prediction {
    let mut c = Case::new(&[10, 10]);
    let recv = c.event(Pattern::Pipeline, &["rank - 1"], 3.0);
    let mut send = c.event(Pattern::Pipeline, &["rank + 1"], 3.0);
    send.id += 1;
    for n in &mut c.m.nodes {
        let mut e = n.events[1].clone();
        e.event = send.id;
        n.events.push(e);
        n.tiles.push(TileMeasurement {
            section: 0,
            tile: 0,
            count: 3.0,
        });
    }
    for (i, compute) in [0.6, 0.3].into_iter().enumerate() {
        c.m.nodes[i].stages.push(StageMeasurement {
            key: StageKey {
                section: 0,
                tile: Some(0),
                stage: 0,
            },
            count: 3.0,
            compute_s: compute,
            io_s: 0.0,
            tiles: profiles[i].0.to_vec(),
            in_core_tiles: profiles[i].1.to_vec(),
            in_core: Vec::new(),
        });
    }
    let tiles = TileLoop {
        id: 0,
        span: Span::default(),
        recv: Some(recv),
        send: Some(send),
        stages: vec![stage(0, "a")],
    };
    c.sections.push(Section {
        id: 0,
        items: vec![SectionItem::Tiles(tiles)],
        comm: None,
        group: None,
    });
    c.model().predict(&[10, 10]).unwrap()
}

#[test]
fn pipeline_eq_5_4_5_5_and_5_10() {
    // Uniform tiles (no tile-by-tile measurement): T_τ(0, j) = 0.2, T_τ(1, j) = 0.1.
    // Node 0 (Eq. 5.4, never blocks): T_p(0, j) = (j + 1)·0.21 → 0.21, 0.42, 0.63.
    // Node 1: j=0: T_w = 0.21 + 0.1 − 0 = 0.31, T_p = 0.31 + 0.02 + 0.1 = 0.43;
    //         j=1 (Eq. 5.5): 0.42 + 0.1 − 0.43 = 0.09, T_p = 0.64; j=2: 0.73 − 0.64 = 0.09, T_p = 0.85.
    // Eq. 5.10: T_Υ(1) = 0.31 + 0.09 + 0.09 + 3·0.02 = 0.55.
    let p = pipeline_case([(&[], &[]), (&[], &[])]);
    assert!(close(p.synchronized[0].total_s, 0.63), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 0.85));
    assert!(close(
        p.synchronized[1].blocked_s + p.nodes[1].overhead_s,
        0.55
    ));
    assert!(close(p.synchronized[0].blocked_s, 0.0));
}

#[test]
fn pipeline_tiles_follow_the_measured_shape_of_each_nodes_computation() {
    // Node 0 measured its tiles at 0.3, 0.2, 0.1 s (weights 1.5, 1, 0.5 of T_τ(0)/3 = 0.2):
    // T_p(0, j) = 0.31, 0.52, 0.63. Node 1 (in core) measured 0.15, 0.1, 0.05 in core, and a
    // forced profile of the wrong length, which is ignored:
    //   j=0: T_w = 0.31 + 0.1 = 0.41, T_p = 0.41 + 0.02 + 0.15 = 0.58;
    //   j=1: T_w = 0.52 + 0.1 − 0.58 = 0.04, T_p = 0.58 + 0.04 + 0.02 + 0.1 = 0.74;
    //   j=2: T_w = max(0, 0.63 + 0.1 − 0.74) = 0, T_p = 0.74 + 0.02 + 0.05 = 0.81.
    // T_Υ(1) = 0.41 + 0.04 + 3·0.02 = 0.51. Each node's computation stays T_τ.
    let shaped = pipeline_case([(&[0.3, 0.2, 0.1], &[]), (&[0.2, 0.1], &[0.15, 0.1, 0.05])]);
    assert!(close(shaped.synchronized[0].total_s, 0.63), "{shaped:?}");
    assert!(close(shaped.synchronized[1].total_s, 0.81), "{shaped:?}");
    assert!(close(
        shaped.synchronized[1].blocked_s + shaped.nodes[1].overhead_s,
        0.51
    ));
    assert!(close(shaped.nodes[1].compute_s, 0.3));
    // Without its in-core profile node 1's tiles are uniform (0.1 each):
    //   j=0: T_p = 0.41 + 0.02 + 0.1 = 0.53; j=1: T_w = 0.62 − 0.53 = 0.09, T_p = 0.74;
    //   j=2: T_w = max(0, 0.73 − 0.74) = 0, T_p = 0.86.
    let forced = pipeline_case([(&[0.3, 0.2, 0.1], &[]), (&[0.2, 0.1], &[])]);
    assert!(close(forced.synchronized[1].total_s, 0.86), "{forced:?}");
}

#[test]
fn out_of_core_stage_and_message_through_the_model() {
    // One distributed array `a` of 100 B per row, read and written by the stage (Eq. 5.1) and
    // sent in a nearest-neighbour message of 100 B. Node 1 has 5000 B of memory and holds 100
    // rows (10000 B): out of core, ICLA 50 rows, N_L = 2, M_ι = 5000 B.
    // O_r = O_w = 0.001, r = w = 1e-6 s/B: T_ψ = 2 · [(0.001 + 0.005) + (0.001 + 0.005)] = 0.024.
    // O_→(q) = O_S + O_r + r · 100 = 0.01 + 0.001 + 0.0001 = 0.0111 (§5.3.2).
    let mut c = Case::new(&[100, 100]);
    c.m.arrays.push(ArrayInfo {
        name: "a".into(),
        bytes_per_row: 100,
        distributed: true,
        read_only: false,
    });
    c.cluster.nodes[1].memory_bytes = 5000;
    c.m.cluster = c.cluster.clone();
    for n in &mut c.m.nodes {
        n.read_overhead_s = 0.001;
        n.write_overhead_s = 0.001;
        n.read_per_byte_s = 1e-6;
        n.write_per_byte_s = 1e-6;
    }
    c.section(
        true,
        &[1.0, 1.0],
        Some((Pattern::NearestNeighbor, &["rank - 1", "rank + 1"])),
        None,
    );
    if let SectionItem::Stage(s) = &mut c.sections[0].items[0] {
        s.io = vec![
            IoOp {
                op: IoKind::Read,
                var: "a".into(),
                span: Span::default(),
            },
            IoOp {
                op: IoKind::Write,
                var: "a".into(),
                span: Span::default(),
            },
        ];
    }
    for n in &mut c.m.nodes {
        n.events[0].bytes_sent = 100.0;
    }
    let model = c.model();
    let p = model.predict(&[100, 100]).unwrap();
    assert!(close(p.nodes[0].io_s, 0.0), "{p:?}");
    assert!(close(p.nodes[1].io_s, 0.024));
    assert!(close(p.nodes[1].overhead_s, 0.0111 + OR));
    // f_1(100) = T_φ + T_ψ + O_→ + O_← (no blocking).
    assert!(close(model.node_cost(1, 100), 1.0 + 0.024 + 0.0111 + OR));
    // In core at 50 rows: f_1(50) = 0.5 + 0.01 + 0.02.
    assert!(close(model.node_cost(1, 50), 0.5 + OS + OR));
}

/// Two distributed arrays `a` and `b` of 100 B per row, 100 rows on each node, both out of
/// core on node 1 (5000 B of memory: no array fits, ICLA 5000 / 200 = 25 rows, N_L = 4,
/// M_ι = 2500 B). The stage reads `a` and writes `b`; the measured bytes per iteration of
/// each array are `(read, written)` times the local array (10000 B). O_r = O_w = 0.001 s,
/// r = w = 1e-6 s/B, so T_r = T_w = 0.0025 s and one full pass in one direction costs
/// N_L · (0.001 + 0.0025) = 0.014 s.
fn two_array_io(a: (f64, f64), b: (f64, f64)) -> Model {
    two_array_io_copying(a, b, 0.0)
}

/// [`two_array_io`] where writing an in-core array costs `copy_per_byte_s` per byte.
fn two_array_io_copying(a: (f64, f64), b: (f64, f64), copy_per_byte_s: f64) -> Model {
    two_array_case(a, b, copy_per_byte_s).model()
}

/// The case of [`two_array_io_copying`], before compiling it.
fn two_array_case(a: (f64, f64), b: (f64, f64), copy_per_byte_s: f64) -> Case {
    let mut c = Case::new(&[100, 100]);
    for name in ["a", "b"] {
        c.m.arrays.push(ArrayInfo {
            name: name.into(),
            bytes_per_row: 100,
            distributed: true,
            read_only: false,
        });
    }
    c.cluster.nodes[1].memory_bytes = 5000;
    c.m.cluster = c.cluster.clone();
    c.section(true, &[1.0, 1.0], None, None);
    if let SectionItem::Stage(s) = &mut c.sections[0].items[0] {
        s.writes = vec!["b".into()];
        s.io = [(IoKind::Read, "a"), (IoKind::Write, "b")]
            .into_iter()
            .map(|(op, var)| IoOp {
                op,
                var: var.into(),
                span: Span::default(),
            })
            .collect();
    }
    let key = StageKey {
        section: 0,
        tile: None,
        stage: 0,
    };
    for n in &mut c.m.nodes {
        n.read_overhead_s = 0.001;
        n.write_overhead_s = 0.001;
        n.read_per_byte_s = 1e-6;
        n.write_per_byte_s = 1e-6;
        n.copy_per_byte_s = copy_per_byte_s;
        for (var, (read, written)) in [("a", a), ("b", b)] {
            n.io.push(IoMeasurement {
                key,
                var: var.into(),
                reads: 0.0,
                writes: 0.0,
                prefetches: 0.0,
                bytes_read: read * 10_000.0,
                bytes_written: written * 10_000.0,
                read_s: 0.0,
                write_s: 0.0,
                overlap_s: 0.0,
            });
        }
    }
    c
}

#[test]
fn arrays_swapping_roles_cost_one_pass_each_way_not_two() {
    // `a` and `b` swap roles every iteration (Jacobi): over the measured iterations each is read
    // half the time and written half the time, f_r = f_w = 1/2. Weighted Eq. 5.1 per array:
    // T_ψ = N_L · [½(O_r + T_r) + ½(O_w + T_w)] = 4 · (0.00175 + 0.00175) = 0.014; both arrays:
    // 0.028 = one read pass plus one write pass of one array (unweighted it would be 0.056).
    let swapped = two_array_io((0.5, 0.5), (0.5, 0.5));
    let p = swapped.predict(&[100, 100]).unwrap();
    assert!(close(p.nodes[0].io_s, 0.0), "{p:?}");
    assert!(close(p.nodes[1].io_s, 0.028), "{p:?}");
    // The heuristic's estimate uses the same shares: per piece ½·O_r + ½·O_w = 0.001 s and per
    // byte ½·r + ½·w = 1e-6 s/B for each array (unweighted: 0.002 and 2e-6).
    let mem = &swapped.memory[1];
    for m in 0..2 {
        assert!(close(mem.io_per_piece[m], 0.001), "{mem:?}");
        assert!(close(mem.io_per_byte[m], 1e-6), "{mem:?}");
    }
    // An array read fully every iteration keeps the whole Eq. 5.1 read: `a` read once
    // (f_r = 1, f_w = 0), `b` written once (f_r = 0, f_w = 1): 4 · 0.0035 + 4 · 0.0035 = 0.028.
    let fixed = two_array_io((1.0, 0.0), (0.0, 1.0));
    assert!(close(
        fixed.predict(&[100, 100]).unwrap().nodes[1].io_s,
        0.028
    ));
    // A share above 1 counts every pass: `a` read three times its size per iteration (once
    // per tile of a three-tile loop) costs three reads, 3 · 4 · 0.0035 = 0.042, plus `b`
    // written once, 0.014.
    let per_tile = two_array_io((3.0, 0.0), (0.0, 1.0));
    assert!(close(
        per_tile.predict(&[100, 100]).unwrap().nodes[1].io_s,
        0.056
    ));
}

#[test]
fn in_core_writes_cost_a_memory_copy() {
    // Node 0 holds both arrays in core; each is written half the time (f_w = ½), so the stage
    // writes ½ · 10000 + ½ · 10000 = 10000 B of in-core rows per iteration, a memory copy of
    // 1e-8 s/B: 1e-4 s of computation on top of T_φ = 1. Node 1 writes to disk instead
    // (0.028 s of I/O, as without copies) and copies nothing.
    let p = two_array_io_copying((0.5, 0.5), (0.5, 0.5), 1e-8)
        .predict(&[100, 100])
        .unwrap();
    assert!(close(p.nodes[0].compute_s, 1.0 + 1e-4), "{p:?}");
    assert!(close(p.nodes[0].io_s, 0.0), "{p:?}");
    assert!(close(p.nodes[1].compute_s, 1.0), "{p:?}");
    assert!(close(p.nodes[1].io_s, 0.028), "{p:?}");
    // Reading `a` fully and writing `b` fully: the same 10000 B copied, all of it `b`.
    let p = two_array_io_copying((1.0, 0.0), (0.0, 1.0), 1e-8)
        .predict(&[100, 100])
        .unwrap();
    assert!(close(p.nodes[0].compute_s, 1.0 + 1e-4), "{p:?}");
}

#[test]
fn nodes_in_core_compute_at_the_in_core_rate() {
    // The forced run measured T_φ = 1 s per 100 rows on both nodes; the run that kept arrays
    // in core measured 0.5 s on node 0 (node 1 was out of core there too). Node 0, in core,
    // computes at 0.005 s/row; node 1, out of core (100 rows), at its measured 0.01 s/row.
    let mut c = two_array_case((0.5, 0.5), (0.5, 0.5), 0.0);
    c.m.nodes[0].stages[0].in_core = vec![sample(100, 0.5)];
    let model = c.model();
    let p = model.predict(&[100, 100]).unwrap();
    assert!(close(p.nodes[0].compute_s, 0.5), "{p:?}");
    assert!(close(p.nodes[1].compute_s, 1.0), "{p:?}");
    // Node 1 with 20 rows fits its 5000 B (25 rows of both arrays): in core, at node 0's
    // in-core rate scaled by CPU power (both 1): 20 · 0.005 = 0.1 s.
    let p = model.predict(&[180, 20]).unwrap();
    assert_eq!(p.nodes[1].io_s, 0.0, "{p:?}");
    assert!(close(p.nodes[1].compute_s, 0.1), "{p:?}");
    assert!(close(p.nodes[0].compute_s, 0.9), "{p:?}");
    // The in-core run's computation includes the copies of in-core writes: none are added.
    let mut c = two_array_case((0.5, 0.5), (0.5, 0.5), 1e-8);
    c.m.nodes[0].stages[0].in_core = vec![sample(100, 0.5)];
    let p = c.model().predict(&[100, 100]).unwrap();
    assert!(close(p.nodes[0].compute_s, 0.5), "{p:?}");
    // Without an in-core measurement every node keeps its measured rate.
    let p = two_array_io((0.5, 0.5), (0.5, 0.5))
        .predict(&[180, 20])
        .unwrap();
    assert!(close(p.nodes[1].compute_s, 0.2), "{p:?}");
}

fn sample(rows: u64, compute_s: f64) -> InCoreSample {
    InCoreSample {
        rows,
        compute_s,
        out_of_core: Vec::new(),
    }
}

/// [`two_array_case`] where both nodes have 12000 B of memory: at 100 rows `a` (10000 B, the
/// first registered of two equal rows) fits with one row of `b` set aside, and `b` gets an ICLA
/// of (12000 − 10000) / 100 = 20 rows, N_L = 5: 5 · 0.001 + 10000 · 1e-6 = 0.015 s of I/O
/// (f_r = f_w = ½), where both out of core (ICLA 60 rows, N_L = 2) would cost
/// 2 · (2 · 0.001 + 0.01) = 0.024 s.
fn partly_in_core_case(copy_per_byte_s: f64) -> Case {
    let mut c = two_array_case((0.5, 0.5), (0.5, 0.5), copy_per_byte_s);
    for n in &mut c.cluster.nodes {
        n.memory_bytes = 12_000;
    }
    c.m.cluster = c.cluster.clone();
    c
}

#[test]
fn the_model_keeps_in_core_the_arrays_the_runtime_keeps() {
    // The structure accesses `b` more often (written by the stage and through I/O), but the
    // runtime ranks arrays by bytes per use with every use counted once, equal rows in the
    // order registered: `a` stays in core, `b` goes out. The model predicts that placement.
    let c = partly_in_core_case(0.0);
    let runtime = mheta_runtime::ooc::plan(
        12_000,
        &["a", "b"].map(|_| mheta_runtime::ooc::ArrayDemand {
            rows: 100,
            row_bytes: 100,
            uses: 1,
            io: mheta_runtime::ooc::IoEstimate {
                per_block_s: 0.001,
                per_byte_s: 1e-6,
            },
        }),
    );
    use mheta_runtime::ooc::Placement;
    assert_eq!(
        runtime,
        [Placement::InCore, Placement::OutOfCore { icla_rows: 20 }]
    );
    let model = c.model();
    assert_eq!(model.arrays[0].name, "a");
    let state = crate::out_of_core::decide(&model.arrays, &model.memory[1], 100);
    assert_eq!((state.mask, state.n_l), (0b10, 5), "{state:?}");
    let p = model.predict(&[100, 100]).unwrap();
    assert!(close(p.nodes[1].io_s, 0.015), "{p:?}");
}

#[test]
fn a_node_placed_as_a_kept_run_placed_it_computes_at_that_runs_rate() {
    // The forced run measured T_φ = 1 s per 100 rows on both nodes (0.01 s/row). A kept run
    // placed node 1 with `b` out of core and `a` in core at 100 rows and measured 0.7 s there.
    let mut c = partly_in_core_case(0.0);
    c.m.nodes[1].stages[0].in_core = vec![InCoreSample {
        out_of_core: vec!["b".into()],
        ..sample(100, 0.7)
    }];
    let model = c.model();
    let p = model.predict(&[100, 100]).unwrap();
    // Node 1 is placed that way again: 0.7 s. Node 0 too (same memory, same rows), without a
    // sample of its own: node 1's rate per row scaled by CPU power (both 1), 0.7 s.
    assert!(close(p.nodes[1].compute_s, 0.7), "{p:?}");
    assert!(close(p.nodes[0].compute_s, 0.7), "{p:?}");
    assert!(close(p.nodes[1].io_s, 0.015), "{p:?}");
    // At 110 rows the placement is the same (a: 11000 B, b's ICLA 10 rows, N_L = 11): the
    // sample scales in proportion, 0.77 s. At 130 rows `a` no longer fits (13000 B): both out
    // of core, at the forced run's 0.01 s/row, 1.3 s. At 50 rows (node 1) all is in core, and
    // with no all-in-core sample the forced rate stands: 0.5 s.
    let p = model.predict(&[130, 110]).unwrap();
    assert!(close(p.nodes[1].compute_s, 0.77), "{p:?}");
    assert!(close(p.nodes[0].compute_s, 1.3), "{p:?}");
    let p = model.predict(&[150, 50]).unwrap();
    assert!(close(p.nodes[1].compute_s, 0.5), "{p:?}");
    // The kept run's computation includes the memory copies of `a`'s in-core writes
    // (½ · 10000 B at 1e-8 s/B = 5e-5 s): none are added to it, where they are added to the
    // forced rate (node 0 at 50 rows, all in core: 0.5 s + ½ · 5000 B of each array's writes
    // at 1e-8 s/B = 5e-5 s).
    let mut c = partly_in_core_case(1e-8);
    c.m.nodes[1].stages[0].in_core = vec![InCoreSample {
        out_of_core: vec!["b".into()],
        ..sample(100, 0.7)
    }];
    let p = c.model().predict(&[50, 100]).unwrap();
    assert!(close(p.nodes[1].compute_s, 0.7), "{p:?}");
    assert!(close(p.nodes[0].compute_s, 0.5 + 5e-5), "{p:?}");
    // A sample naming an array the measurements do not list is an error naming the field.
    let mut c = partly_in_core_case(0.0);
    c.m.nodes[1].stages[0].in_core = vec![InCoreSample {
        out_of_core: vec!["c".into()],
        ..sample(100, 0.7)
    }];
    let err = c.try_model().unwrap_err();
    assert_eq!(
        err.to_string(),
        "measurements field `nodes[1].stages[0/0].in_core[0].out_of_core` names array `c`, \
         which `arrays` does not list"
    );
}

#[test]
fn in_core_samples_interpolate_between_row_counts() {
    // Node 0 measured in core at 40 rows (0.1 s) and 100 rows (0.45 s and 0.55 s, their median
    // 0.5 s): a line of slope 0.4 / 60 s per row. At 70 rows, halfway: 0.3 s. Above the
    // samples the line goes on: 180 rows, 0.5 + 80 · 0.4 / 60 = 1.0333 s. Below them it would
    // give 0.1 − 20 · 0.4 / 60 < 0 at 20 rows; proportion to the 40-row sample, 0.05 s, is the
    // floor.
    let mut c = two_array_case((0.5, 0.5), (0.5, 0.5), 0.0);
    c.m.nodes[0].stages[0].in_core = vec![sample(100, 0.45), sample(40, 0.1), sample(100, 0.55)];
    let model = c.model();
    let p = model.predict(&[70, 130]).unwrap();
    assert!(close(p.nodes[0].compute_s, 0.3), "{p:?}");
    let p = model.predict(&[20, 180]).unwrap();
    assert!(close(p.nodes[0].compute_s, 0.05), "{p:?}");
    let p = model.predict(&[180, 20]).unwrap();
    assert!(
        close(p.nodes[0].compute_s, 0.5 + 80.0 * 0.4 / 60.0),
        "{p:?}"
    );
    // Node 1 (no sample) in core at 20 rows: node 0's per-row rate at its largest sample.
    assert!(close(p.nodes[1].compute_s, 0.1), "{p:?}");
    // A fixed cost per pass (samples 0.3 s at 40 rows, 0.6 s at 100: intercept 0.1 s) keeps
    // its intercept below the samples: 20 rows, 0.2 s (in proportion it would be 0.15 s).
    let mut c = two_array_case((0.5, 0.5), (0.5, 0.5), 0.0);
    c.m.nodes[0].stages[0].in_core = vec![sample(40, 0.3), sample(100, 0.6)];
    let p = c.model().predict(&[20, 180]).unwrap();
    assert!(close(p.nodes[0].compute_s, 0.2), "{p:?}");
    // Repeated runs of one row count are their median: 0.45, 0.5 and 0.9 s at 100 rows are
    // 0.5 s (their mean, 0.6167 s, would follow the one slow run), which scales in proportion.
    let mut c = two_array_case((0.5, 0.5), (0.5, 0.5), 0.0);
    c.m.nodes[0].stages[0].in_core = vec![sample(100, 0.45), sample(100, 0.9), sample(100, 0.5)];
    let p = c.model().predict(&[70, 130]).unwrap();
    assert!(close(p.nodes[0].compute_s, 0.35), "{p:?}");
    // Samples less than 20 % apart in rows are one: 100 and 110 rows average to 105 rows,
    // 0.525 s, which then scales in proportion.
    let mut c = two_array_case((0.5, 0.5), (0.5, 0.5), 0.0);
    c.m.nodes[0].stages[0].in_core = vec![sample(100, 0.5), sample(110, 0.55)];
    let p = c.model().predict(&[70, 130]).unwrap();
    assert!(close(p.nodes[0].compute_s, 0.525 / 105.0 * 70.0), "{p:?}");
}

#[test]
fn in_core_samples_never_fall_with_the_rows_nor_extrapolate_below_their_cost() {
    // 0.4 s at 40 rows but 0.3 s at 100 rows is noise: the two pool into one sample, 0.35 s at
    // 70 rows, which scales in proportion: 140 rows, 0.7 s.
    let mut c = two_array_case((0.5, 0.5), (0.5, 0.5), 0.0);
    c.m.nodes[0].stages[0].in_core = vec![sample(40, 0.4), sample(100, 0.3)];
    let p = c.model().predict(&[140, 60]).unwrap();
    assert!(close(p.nodes[0].compute_s, 0.7), "{p:?}");
    // Pooling stops where the seconds rise again: 0.2 s at 40 rows, 0.5 s at 60 rows, then
    // 0.2 s at 100 rows. The last two pool to 0.35 s at 80 rows, which still rises from 0.2 s
    // at 40 rows: at 60 rows, halfway, 0.275 s.
    let mut c = two_array_case((0.5, 0.5), (0.5, 0.5), 0.0);
    c.m.nodes[0].stages[0].in_core = vec![sample(40, 0.2), sample(60, 0.5), sample(100, 0.2)];
    let p = c.model().predict(&[60, 140]).unwrap();
    assert!(close(p.nodes[0].compute_s, 0.275), "{p:?}");
    // And goes back as far as needed: with 0.4 s at 40 rows, the pooled 0.35 s at 80 rows
    // falls below it, so all three pool: 0.3667 s at 66.67 rows (1.1 s over 200 rows), which
    // scales in proportion: 140 rows, 1.1 / 200 · 140 = 0.77 s.
    let mut c = two_array_case((0.5, 0.5), (0.5, 0.5), 0.0);
    c.m.nodes[0].stages[0].in_core = vec![sample(40, 0.4), sample(60, 0.5), sample(100, 0.2)];
    let p = c.model().predict(&[140, 60]).unwrap();
    assert!(close(p.nodes[0].compute_s, 0.77), "{p:?}");
    // A nearly flat last segment (0.5 s at 50 rows, 0.51 s at 100) does not make rows beyond
    // the samples almost free: they cost the last sample's 0.0051 s per row. 200 rows: 1.02 s.
    let mut c = two_array_case((0.5, 0.5), (0.5, 0.5), 0.0);
    c.m.nodes[0].stages[0].in_core = vec![sample(50, 0.5), sample(100, 0.51)];
    let p = c.model().predict(&[200, 0]).unwrap();
    assert!(close(p.nodes[0].compute_s, 1.02), "{p:?}");
}

#[test]
fn bad_inputs_are_errors() {
    let mut c = Case::new(&[10, 10]);
    c.section(true, &[1.0, 0.5], None, None);
    assert_eq!(
        c.model().predict(&[20]).unwrap_err(),
        ModelError::DistributionLength {
            expected: 2,
            actual: 1
        }
    );
    c.m.nodes[1].stages[0].compute_s = f64::NAN;
    assert!(
        matches!(c.try_model(), Err(ModelError::BadValue { ref field, .. }) if field.contains("nodes[1]"))
    );
    c.m.nodes.pop();
    assert_eq!(
        c.try_model().unwrap_err(),
        ModelError::NodeCount {
            measured: 1,
            cluster: 2
        }
    );
}

#[test]
fn barrier_is_a_reduction_without_data_or_compute() {
    // As the first reduction case (root slower, T_τ = (1.0, 0.5)) even though the root's event
    // took longer than its overheads: a barrier has no T_r. → (1.03, 1.15).
    let mut c = Case::new(&[10, 10]);
    c.section(true, &[1.0, 0.5], Some((Pattern::Barrier, &["0"])), None);
    c.m.nodes[0].events[0].total_s += 0.05;
    let p = c.model().predict(&[10, 10]).unwrap();
    assert!(close(p.synchronized[0].total_s, 1.03), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 1.15));
}

#[test]
fn all_gather_messages_carry_rows() {
    // Node 1 sent its 10 rows in 80 B: 8 B per row; per-byte cost 0.001 s. Under (5, 15):
    // T_τ = (5 · 0.1, 15 · 0.05) = (0.5, 0.75). Node 1's 120 B arrive at 0.75 + 0.01 + 0.1 + 0.12
    // = 0.98: T_w(0) = 0.48; the root releases at 0.5 + 0.48 + 0.02 = 1.00 and sends all
    // S = 20 rows (160 B): root total 1.01; T_α(1) = 1.00 + 0.01 + 0.1 + 0.16 = 1.27, node 1
    // blocked 1.27 − 0.76 = 0.51, total 1.29.
    let mut c = Case::new(&[10, 10]);
    c.m.micro.per_byte_s = 0.001;
    c.section(
        true,
        &[1.0, 0.5],
        Some((Pattern::AllGather, &["all"])),
        None,
    );
    c.m.nodes[1].events[0].bytes_sent = 80.0;
    let p = c.model().predict(&[5, 15]).unwrap();
    assert!(close(p.synchronized[0].total_s, 1.01), "{p:?}");
    assert!(close(p.synchronized[1].blocked_s, 0.51), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 1.29));
}

#[test]
fn scatter_messages_carry_the_receivers_rows() {
    // The root sent 80 B for node 1's 10 rows: 8 B per row. Under (5, 15) the message is 120 B:
    // T_α(1) = 0.5 + 0.01 + 0.1 + 0.12 = 0.73 < T_τ(1) = 0.75: no blocking, node 1 → 0.77;
    // root → 0.51.
    let mut c = Case::new(&[10, 10]);
    c.m.micro.per_byte_s = 0.001;
    c.section(true, &[1.0, 0.5], Some((Pattern::Scatter, &["0"])), None);
    c.m.nodes[0].events[0].bytes_sent = 80.0;
    let p = c.model().predict(&[5, 15]).unwrap();
    assert!(close(p.synchronized[0].total_s, 0.51), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 0.77));
    assert!(close(p.synchronized[1].blocked_s, 0.0));
}

#[test]
fn all_to_all_uses_eq_5_12_over_every_peer() {
    // Three nodes each send to the two others in rank order; T_τ = (1.0, 0.2, 0.6).
    // Node 0: arrivals 0.31 (from 1), 0.71 (from 2) are before its own sends end → 0;
    //         total 1.0 + 2·0.01 + 2·0.02 = 1.06.
    // Node 1: from 0: 1.0 + 0.01 + 0.1 − (0.2 + 0.01) = 0.90; from 2: 0.6 + 0.02 + 0.1 − 0.22 = 0.50;
    //         total 0.2 + 0.02 + 0.90 + 0.04 = 1.16.
    // Node 2: from 0: 1.0 + 0.02 + 0.1 − (0.6 + 0.01) = 0.51; from 1: 0.32 − 0.62 < 0;
    //         total 0.6 + 0.02 + 0.51 + 0.04 = 1.17.
    let mut c = Case::new(&[10, 10, 10]);
    c.section(
        true,
        &[1.0, 0.2, 0.6],
        Some((Pattern::AllToAll, &["all"])),
        None,
    );
    let p = c.model().predict(&[10, 10, 10]).unwrap();
    assert!(close(p.synchronized[0].total_s, 1.06), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 1.16));
    assert!(close(p.synchronized[2].total_s, 1.17));
}

#[test]
fn a_target_cluster_rescales_compute_by_cpu_power() {
    // Measured on CPU 1.0; predicted for a node twice as fast: T_φ halves.
    let mut c = Case::new(&[10, 10]);
    c.section(true, &[1.0, 0.5], None, None);
    c.cluster.nodes[0].cpu = 2.0;
    let p = c.model().predict(&[10, 10]).unwrap();
    assert!(close(p.nodes[0].compute_s, 0.5), "{p:?}");
    assert!(close(p.nodes[1].compute_s, 0.5));
}

#[test]
fn a_node_measured_with_no_rows_borrows_the_others_rate() {
    // Node 1 held no rows; node 0 ran 1.0 s on 10 rows at CPU 1.0. Node 1 has CPU 0.5, so its
    // rate is 0.1 / 0.5 = 0.2 s per row: 5 rows → 1.0 s.
    let mut c = Case::new(&[10, 0]);
    c.cluster.nodes[1].cpu = 0.5;
    c.m.cluster = c.cluster.clone();
    c.section(true, &[1.0, 0.0], None, None);
    let p = c.model().predict(&[5, 5]).unwrap();
    assert!(close(p.nodes[1].compute_s, 1.0), "{p:?}");
    assert!(close(p.nodes[0].compute_s, 0.5));
}

#[test]
fn a_distribution_adds_an_in_core_sample_only_where_the_model_would_not_pool_it() {
    // Memory for everything: every node in core at any rows, so only the rows decide.
    let mut c = Case::new(&[100, 200]);
    c.section(true, &[1.0, 1.0], None, None);
    let model = c.model();
    let adds_in_core_sample =
        |sampled: &[Vec<u64>], rows: &[u64]| model.adds_in_core_sample(sampled, rows);
    let sampled = [vec![100, 200], vec![287, 13]];
    // 107 and 193 rows are within 20 % of 100 and 200: pooled with In-Core-Balanced's samples.
    assert!(!adds_in_core_sample(&sampled, &[107, 193]));
    // Against 150 and 287 rows, node 0's 107 is new.
    assert!(adds_in_core_sample(
        &[vec![150, 150], vec![287, 13]],
        &[107, 193]
    ));
    // The bound is `spread_samples`': 120 rows is 1.2 × 100 and not pooled, 119 is.
    assert!(adds_in_core_sample(&[vec![100, 100]], &[120, 100]));
    assert!(!adds_in_core_sample(&[vec![100, 100]], &[119, 100]));
    // A node without rows gives no sample; a node that held none before gives a new one.
    assert!(!adds_in_core_sample(&[vec![150, 150]], &[0, 170]));
    assert!(adds_in_core_sample(&[vec![150, 150]], &[0, 300]));
    assert!(adds_in_core_sample(&[vec![0, 300]], &[10, 290]));
    // Nothing sampled yet: any rows are new.
    assert!(adds_in_core_sample(&[], &[1, 0]));
    // Samples of another placement are not pooled (`partly_in_core_case`): at 100 rows a node
    // keeps `a` in core and moves `b`; at 115 rows keeping `a` would leave `b` an ICLA of 5
    // rows (N_L = 23: 0.023 + 0.0115 s of I/O), so both go out of core (N_L = 2 each:
    // 2 · (0.002 + 0.0115) = 0.027 s). 115 rows is within 20 % of 100 but a new sample; 105
    // rows (still `b` alone out of core) is not, nor is node 1's 85 (`b` alone, ICLA 35 rows).
    let model = partly_in_core_case(0.0).model();
    assert!(model.adds_in_core_sample(&[vec![100, 100]], &[115, 85]));
    assert!(!model.adds_in_core_sample(&[vec![100, 100]], &[105, 95]));
}

/// Every node's first event as measured when it runs in `share` of the iterations: its
/// per-iteration figures are that share of one run's.
fn measured_in_a_share(c: &mut Case, share: f64) {
    for n in &mut c.m.nodes {
        let e = &mut n.events[0];
        for x in [
            &mut e.messages_sent,
            &mut e.messages_received,
            &mut e.bytes_sent,
            &mut e.bytes_received,
            &mut e.send_overhead_s,
            &mut e.recv_overhead_s,
            &mut e.blocked_s,
            &mut e.total_s,
        ] {
            *x *= share;
        }
    }
}

#[test]
fn a_conditional_event_is_charged_at_its_frequency() {
    // The root-slower reduction of `eq_5_7_to_5_9_two_node_reduction_both_cases`, run in one
    // iteration of ten (`if step % 10 == 0`): its measurements are per-iteration averages, a
    // tenth of one run's. One run costs what it cost there (node 0: T_Υ = 0.03; node 1: ends at
    // 1.15 from 0.5), and each node is charged a tenth of it: 1.0 + 0.003 = 1.003 and
    // 0.5 + 0.1 · 0.65 = 0.565.
    let mut c = Case::new(&[10, 10]);
    c.section(true, &[1.0, 0.5], Some((Pattern::Reduction, &["0"])), None);
    if let Some(e) = c.sections[0].comm.as_mut() {
        e.frequency = 0.1;
        e.condition = Some("step % 10 == 0".into());
    }
    measured_in_a_share(&mut c, 0.1);
    let p = c.model().predict(&[10, 10]).unwrap();
    assert!(close(p.synchronized[0].total_s, 1.003), "{p:?}");
    assert!(close(p.synchronized[1].total_s, 0.565), "{p:?}");
    assert!(close(p.synchronized[1].blocked_s, 0.062), "{p:?}");
    assert!(close(p.synchronized_s, 1.003));
    // The seed's per-node cost f_i charges the event's overheads at the same frequency.
    let model = c.model();
    let always = {
        let mut c1 = Case::new(&[10, 10]);
        c1.section(true, &[1.0, 0.5], Some((Pattern::Reduction, &["0"])), None);
        c1.model().node_cost(1, 10)
    };
    assert!(close(model.node_cost(1, 10) - 0.5, 0.1 * (always - 0.5)));
    // A share of the iterations is in (0, 1].
    for bad in [0.0, -0.5, 1.5, f64::NAN] {
        if let Some(e) = c.sections[0].comm.as_mut() {
            e.frequency = bad;
        }
        assert!(
            matches!(c.try_model(), Err(ModelError::BadFrequency { event, .. }) if event == 100),
            "{bad}"
        );
    }
}

#[test]
fn a_conditional_gather_sends_one_runs_rows_per_run() {
    // A gather to 0 whose senders send 1000 bytes per run over a 10 kB/s link (0.1 s of transfer
    // on top of the latency). Measured in one iteration of four, its per-iteration bytes are a
    // quarter of a run's; the model must still move a whole run's rows when it runs, so every
    // node is charged a quarter of what the unconditional event costs it.
    let case = |frequency: f64| {
        let mut c = Case::new(&[10, 10, 10]);
        c.cluster.network.bandwidth_bps = 1e4;
        c.section(
            true,
            &[1.0, 0.5, 2.0],
            Some((Pattern::Gather, &["0"])),
            None,
        );
        for n in c.m.nodes.iter_mut().skip(1) {
            n.events[0].bytes_sent = 1000.0;
        }
        if let Some(e) = c.sections[0].comm.as_mut() {
            e.frequency = frequency;
        }
        measured_in_a_share(&mut c, frequency);
        c.model().predict(&[10, 10, 10]).unwrap()
    };
    let always = case(1.0);
    let quarter = case(0.25);
    // The root waits for the last sender: 2.0 + 0.01 + 0.1 + 0.1 (1000 B at 10 kB/s).
    assert!(always.synchronized[0].total_s > 2.2, "{always:?}");
    for (i, compute) in [1.0, 0.5, 2.0].into_iter().enumerate() {
        let expected = compute + 0.25 * (always.synchronized[i].total_s - compute);
        assert!(
            close(quarter.synchronized[i].total_s, expected),
            "node {i}: {} vs {expected}",
            quarter.synchronized[i].total_s
        );
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 200, ..Default::default() })]

    /// The steady period never exceeds the seed's synchronized iteration (from a synchronized
    /// start every node's first iteration is its longest, up to rounding), and no node works
    /// (computes, reads, writes, sends or receives) longer per iteration than the period.
    #[test]
    fn the_steady_period_lies_between_every_nodes_work_and_the_synchronized_iteration(
        cg in proptest::bool::ANY,
        nodes in 2usize..9,
        weights in proptest::collection::vec(1u64..100, 8),
    ) {
        use super::synthetic::{workload, Program};
        let program = if cg { Program::Cg } else { Program::Jacobi };
        let w = workload(program, nodes, 2048);
        let model = Model::new(&w.structure, &w.measurements, &w.cluster).unwrap();
        let total: u64 = weights[..nodes].iter().sum();
        let mut rows: Vec<u64> = weights[..nodes].iter().map(|&x| x * 2048 / total).collect();
        rows[0] += 2048 - rows.iter().sum::<u64>();
        let p = model.predict(&rows).unwrap();
        proptest::prop_assert!(
            p.iteration_s <= p.synchronized_s * (1.0 + 1e-9),
            "{} > {} for {:?}", p.iteration_s, p.synchronized_s, rows
        );
        for (i, n) in p.nodes.iter().enumerate() {
            let busy = n.compute_s + n.io_s + n.overhead_s;
            proptest::prop_assert!(
                busy <= p.iteration_s * (1.0 + 1e-9),
                "node {} busy {} > period {} for {:?}", i, busy, p.iteration_s, rows
            );
            proptest::prop_assert!(n.blocked_s >= -1e-12, "node {}: {:?}", i, n);
        }
    }
}

/// Found by the fuzz target: a corrupt count (2^64 tiles per pass) made a prediction replay
/// 2^32 tiles on every node, for minutes. Counts above `MAX_PASSES` are errors.
#[test]
fn counts_beyond_what_the_model_replays_are_errors() {
    let mut c = Case::new(&[10, 10]);
    c.section(true, &[1.0, 0.5], None, None);
    c.group(0, 4.0e9);
    assert!(
        matches!(c.try_model(), Err(ModelError::TooManyPasses { ref what, .. }) if what == "group 0 trips"),
        "{:?}",
        c.try_model().err()
    );
    c.m.nodes
        .iter_mut()
        .for_each(|n| n.groups[0].trips = f64::from(super::MAX_PASSES));
    assert!(c.try_model().is_ok());
}

/// Measurements taken on one cluster predict another with the same nodes but other disks as
/// that cluster's own measurements do: a measured rate per byte scales by measured / target
/// bandwidth, a cost per call by target / measured latency. The synthetic measurements are
/// exactly `calls · latency + bytes / bandwidth`, so the two predictions agree to rounding.
#[test]
fn another_clusters_disks_rescale_the_measured_io() {
    use crate::synthetic::{workload, workload_on, Program};
    for program in [Program::Jacobi, Program::Cg] {
        let rows = 4000;
        let measured = workload(program, 4, rows);
        let mut other = measured.cluster.clone();
        for (i, n) in other.nodes.iter_mut().enumerate() {
            n.disk_read_bps *= [2.0, 0.5, 1.0, 3.0][i];
            n.disk_write_bps *= [0.5, 2.0, 1.0, 1.0][i];
            n.disk_latency_s *= [3.0, 1.0, 0.5, 1.0][i];
        }
        let own = workload_on(program, other.clone(), rows);
        let block = mheta_runtime::distribution::Distribution::block(rows, 4)
            .unwrap()
            .rows;
        let truth = Model::new(&own.structure, &own.measurements, &other)
            .unwrap()
            .predict(&block)
            .unwrap();
        let moved = Model::new(&measured.structure, &measured.measurements, &other)
            .unwrap()
            .predict(&block)
            .unwrap();
        let io = |p: &Prediction| p.nodes.iter().map(|n| n.io_s).sum::<f64>();
        assert!(io(&truth) > 0.0, "{program:?}: no I/O to rescale");
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1e-12);
        assert!(
            close(io(&moved), io(&truth)) && close(moved.iteration_s, truth.iteration_s),
            "{program:?}: I/O {} against {}, iteration {} against {}",
            io(&moved),
            io(&truth),
            moved.iteration_s,
            truth.iteration_s
        );
    }
}

/// The reduction of `eq_5_7_to_5_9_two_node_reduction_both_cases` with equal mean computation
/// (1.0, 1.0) and the computation of each measured iteration `per_iteration[i]` on node i.
fn varied_reduction(per_iteration: [&[f64]; 2]) -> Case {
    let mut c = Case::new(&[10, 10]);
    c.section(true, &[1.0, 1.0], Some((Pattern::Reduction, &["0"])), None);
    for (n, values) in c.m.nodes.iter_mut().zip(per_iteration) {
        n.iteration_compute_s = values.to_vec();
    }
    c
}

#[test]
fn measured_variation_is_replayed_iteration_by_iteration() {
    // Reduction to node 0 from clocks (s, s + 0.12), computing (c0, c1): node 1's contribution
    // arrives at s + 0.12 + c1 + 0.01 + 0.1; the root receives (0.02) and sends (0.01), ending
    // at max(s + c0, s + c1 + 0.23) + 0.03; node 1 ends 0.1 + 0.02 later, at the same offset
    // 0.12. So each iteration advances the clocks by max(c0, c1 + 0.23) + 0.03.
    // From the means (1.0, 1.0): 1.26.
    let p = varied_reduction([&[], &[]])
        .model()
        .predict(&[10, 10])
        .unwrap();
    assert!(close(p.iteration_s, 1.26), "{p:?}");
    // Measured iterations (1.2, 0.8) then (0.8, 1.2), whose means are (1.0, 1.0): the first
    // advances max(1.2, 1.03) + 0.03 = 1.23, the second max(0.8, 1.43) + 0.03 = 1.46; their
    // mean is 1.345, above the means' 1.26.
    let p = varied_reduction([&[1.2, 0.8], &[0.8, 1.2]])
        .model()
        .predict(&[10, 10])
        .unwrap();
    assert!(close(p.iteration_s, 1.345), "{p:?}");
    // The computation replayed is the mean's: each node computed 1.0 per iteration.
    assert!(
        close(p.nodes[0].compute_s, 1.0) && close(p.nodes[1].compute_s, 1.0),
        "{p:?}"
    );
    // Variation the nodes share, (1.2, 1.2) then (0.8, 0.8): max(1.2, 1.43) + 0.03 = 1.46 and
    // max(0.8, 1.03) + 0.03 = 1.06, a mean of 1.26 again: a machine slowing down as a whole
    // moves no node's waits.
    let p = varied_reduction([&[1.2, 0.8], &[1.2, 0.8]])
        .model()
        .predict(&[10, 10])
        .unwrap();
    assert!(close(p.iteration_s, 1.26), "{p:?}");
    // No variation measured: the means' prediction.
    let p = varied_reduction([&[1.0, 1.0, 1.0], &[1.0, 1.0, 1.0]])
        .model()
        .predict(&[10, 10])
        .unwrap();
    assert!(close(p.iteration_s, 1.26), "{p:?}");
}

#[test]
fn measured_variation_scales_with_the_rows_and_spreads_over_the_iterations() {
    // The factors are relative to each node's mean, so they apply to the computation at any
    // row count: at (5, 15) rows the means are (0.5, 1.5) and the iterations (0.6, 1.2) and
    // (0.4, 1.8): max(0.6, 1.43) + 0.03 = 1.46 and max(0.4, 2.03) + 0.03 = 2.06, mean 1.76.
    let p = varied_reduction([&[1.2, 0.8], &[0.8, 1.2]])
        .model()
        .predict(&[5, 15])
        .unwrap();
    assert!(close(p.iteration_s, 1.76), "{p:?}");
    // A node that recorded more iterations than another: the last ones both recorded, here
    // (1.2, 0.8) and (0.8, 1.2) again: 1.345.
    let p = varied_reduction([&[5.0, 1.2, 0.8], &[0.8, 1.2]])
        .model()
        .predict(&[10, 10])
        .unwrap();
    assert!(close(p.iteration_s, 1.345), "{p:?}");
    // More iterations than the model replays (M = MAX_VARIATION_PASSES): M spread evenly over
    // them. Node 0 measured M iterations of 1.2 then M of 0.8, node 1 the opposite: every other
    // one is replayed, M / 2 of each kind, 1.345 again (the last M alone would all be (0.8,
    // 1.2), and vary nothing).
    let half = MAX_VARIATION_PASSES;
    let (slow, fast) = (vec![1.2; half], vec![0.8; half]);
    let p = varied_reduction([&[&slow[..], &fast].concat(), &[&fast[..], &slow].concat()])
        .model()
        .predict(&[10, 10])
        .unwrap();
    assert!(close(p.iteration_s, 1.345), "{p:?}");
}

#[test]
fn a_negative_iteration_computation_is_an_error_naming_it() {
    let err = varied_reduction([&[1.0, 1.0], &[1.0, -1.0]])
        .try_model()
        .unwrap_err();
    assert_eq!(
        err,
        ModelError::BadValue {
            field: "nodes[1].iteration_compute_s[1]".into(),
            value: -1.0
        }
    );
}
