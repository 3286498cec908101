//! Synthetic but realistic inputs for benchmarks and tests: the structure, measurements and
//! cluster of a Jacobi-like and a CG-like program on a heterogeneous cluster of any size, as an
//! instrumented iteration on the Block distribution would have measured them.
//!
//! The "truth" behind the measurements is simple and documented: a stage costs
//! `rows · seconds_per_row / cpu` on a node, every potentially out-of-core array is forced
//! through disk (seed Fig. 5.6), messages cost the microbenchmarked overheads.

use mheta_runtime::distribution::Distribution;
use mheta_runtime::format::*;

/// A generated model input.
#[derive(Debug, Clone)]
pub struct Workload {
    pub structure: Structure,
    pub measurements: Measurements,
    pub cluster: ClusterSpec,
}

/// Which program to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// Two sections of one stage: a stencil over out-of-core `a → b` closed by a halo exchange,
    /// then a residual over `b` closed by a reduction.
    Jacobi,
    /// A NAS-CG-like solver: a read-only sparse matrix, vectors, an inner loop (repeated group)
    /// of all-gather / mat-vec + reduction / vector update + reduction, then a final reduction.
    Cg,
}

/// A heterogeneous cluster of `nodes` nodes: CPU powers cycle through 0.5–2.0, every third node
/// has a small memory, every fourth a slow disk (a deterministic mix, like the seed's HY
/// configurations).
pub fn cluster(nodes: usize, memory_bytes: u64) -> ClusterSpec {
    let cpus = [1.0, 0.5, 1.5, 0.75, 2.0, 1.25, 0.6, 1.0];
    ClusterSpec {
        network: NetworkSpec {
            latency_s: 50e-6,
            bandwidth_bps: 1e9,
        },
        nodes: (0..nodes)
            .map(|i| NodeSpec {
                cpu: cpus[(i * 5 + i / 8) % cpus.len()],
                memory_bytes: if i % 3 == 1 {
                    memory_bytes / 4
                } else {
                    memory_bytes
                },
                disk_read_bps: if i % 4 == 2 { 50e6 } else { 200e6 },
                disk_write_bps: if i % 4 == 2 { 40e6 } else { 150e6 },
                disk_latency_s: if i % 4 == 2 { 8e-3 } else { 2e-3 },
            })
            .collect(),
        loads: Vec::new(),
    }
}

/// The columns of the generated Jacobi's rows.
const JACOBI_COLS: u64 = 1024;

/// Generates the workload of `program` on `nodes` nodes with `rows` rows.
pub fn workload(program: Program, nodes: usize, rows: u64) -> Workload {
    let memory = match program {
        // Two arrays of 8 KiB rows; aggregate memory holds about 1.5 times the data.
        Program::Jacobi => (2 * rows * JACOBI_COLS * 8) as f64 * 1.5 / nodes as f64,
        Program::Cg => (rows * 16 * 12) as f64 * 1.2 / nodes as f64 + 4096.0,
    };
    workload_on(program, cluster(nodes, memory as u64), rows)
}

/// Generates the workload of `program` measured on `cluster` with `rows` rows.
pub fn workload_on(program: Program, cluster: ClusterSpec, rows: u64) -> Workload {
    match program {
        Program::Jacobi => jacobi(cluster, rows, JACOBI_COLS),
        Program::Cg => cg(cluster, rows),
    }
}

fn span(line: u32) -> Span {
    Span::new("synthetic.rs", line, 1)
}

fn var(name: &str, class: VarClass) -> Variable {
    Variable {
        name: name.into(),
        class,
        elem_type: Some("f64".into()),
        span: span(1),
    }
}

fn stage(id: u32, reads: &[&str], writes: &[&str], io: &[(IoKind, &str)]) -> Stage {
    Stage {
        id,
        kind: StageKind::Loop,
        span: span(10 + id),
        loop_depth: 2,
        reads: reads.iter().map(|s| s.to_string()).collect(),
        writes: writes.iter().map(|s| s.to_string()).collect(),
        representative: writes.first().or(reads.first()).map(|s| s.to_string()),
        io: io
            .iter()
            .map(|(op, v)| IoOp {
                op: *op,
                var: v.to_string(),
                span: span(20),
            })
            .collect(),
        access: Access::Independent,
        load: Load::Fixed,
        affine: Vec::new(),
        alternates: Vec::new(),
    }
}

fn event(id: u32, pattern: Pattern, participants: &[&str], message: &str) -> CommEvent {
    CommEvent {
        id,
        pattern,
        rule: EventRule::SingleCall,
        calls: Vec::new(),
        participants: participants.iter().map(|s| s.to_string()).collect(),
        message: Some(message.into()),
        elem_type: Some("f64".into()),
        span: span(30 + id),
        frequency: 1.0,
        condition: None,
        alternates: Vec::new(),
    }
}

fn section(id: u32, stages: Vec<Stage>, comm: Option<CommEvent>, group: Option<u32>) -> Section {
    Section {
        id,
        items: stages.into_iter().map(SectionItem::Stage).collect(),
        comm,
        group,
    }
}

fn structure(sections: Vec<Section>, variables: Vec<Variable>, groups: Vec<Group>) -> Structure {
    Structure {
        schema: STRUCTURE_SCHEMA.into(),
        crate_name: "synthetic".into(),
        solvers: vec![Solver {
            name: "synthetic::solve".into(),
            span: span(1),
            found_by: "attribute".into(),
            main_loop: MainLoop {
                span: span(2),
                kind: "for".into(),
            },
            variables,
            sections,
            groups,
            diagnostics: Vec::new(),
        }],
        diagnostics: Vec::new(),
    }
}

/// Microbenchmarked costs used by the generated measurements.
const MICRO: Microbenchmarks = Microbenchmarks {
    send_overhead_s: 20e-6,
    recv_overhead_s: 15e-6,
    latency_s: 50e-6,
    per_byte_s: 1e-9,
};

/// Measurements of one instrumented iteration under Block, from per-stage per-row costs.
struct Recorder<'a> {
    cluster: &'a ClusterSpec,
    rows: Vec<u64>,
    nodes: Vec<NodeMeasurements>,
}

impl<'a> Recorder<'a> {
    fn new(cluster: &'a ClusterSpec, total_rows: u64) -> Self {
        let rows = Distribution::block(total_rows, cluster.nodes.len())
            .map(|d| d.rows)
            .unwrap_or_default();
        let nodes = cluster
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| NodeMeasurements {
                rank: i as u32,
                rows: rows[i],
                iteration_s: 0.0,
                read_overhead_s: n.disk_latency_s,
                write_overhead_s: n.disk_latency_s,
                async_overhead_s: 50e-6,
                read_per_byte_s: 1.0 / n.disk_read_bps,
                write_per_byte_s: 1.0 / n.disk_write_bps,
                // A memory copy at 10 GB/s on this machine.
                copy_per_byte_s: 1e-10 / if n.cpu > 0.0 { n.cpu } else { 1.0 },
                stages: Vec::new(),
                io: Vec::new(),
                events: Vec::new(),
                tiles: Vec::new(),
                groups: Vec::new(),
                iteration_compute_s: Vec::new(),
            })
            .collect();
        Recorder {
            cluster,
            rows,
            nodes,
        }
    }

    /// A stage costing `per_row` seconds per row at CPU 1.0 (`distributed`) or `per_row`
    /// seconds flat, run `count` times per iteration, forcing its arrays through two pieces.
    fn stage(
        &mut self,
        section: u32,
        stage: u32,
        per_row: f64,
        distributed: bool,
        count: f64,
        io: &[(&str, u64, bool)],
    ) {
        let key = StageKey {
            section,
            tile: None,
            stage,
        };
        for (i, n) in self.nodes.iter_mut().enumerate() {
            let cpu = self.cluster.nodes[i].cpu;
            let work = if distributed {
                self.rows[i] as f64 * per_row
            } else {
                per_row
            };
            let mut io_s = 0.0;
            for &(var, bytes_per_row, write) in io {
                let bytes = (self.rows[i] * bytes_per_row) as f64 * count;
                let (reads, read_s) = (
                    2.0 * count,
                    2.0 * count * n.read_overhead_s + bytes * n.read_per_byte_s,
                );
                let (writes, write_s) = if write {
                    (
                        2.0 * count,
                        2.0 * count * n.write_overhead_s + bytes * n.write_per_byte_s,
                    )
                } else {
                    (0.0, 0.0)
                };
                io_s += read_s + write_s;
                n.io.push(IoMeasurement {
                    key,
                    var: var.into(),
                    reads,
                    writes,
                    prefetches: 0.0,
                    bytes_read: bytes,
                    bytes_written: if write { bytes } else { 0.0 },
                    read_s,
                    write_s,
                    overlap_s: 0.0,
                });
            }
            n.stages.push(StageMeasurement {
                key,
                count,
                compute_s: count * work / cpu,
                io_s,
                tiles: Vec::new(),
                in_core_tiles: Vec::new(),
                in_core: Vec::new(),
            });
        }
    }

    /// A communication event with measured peers `sent_to(i)`, `bytes` per message.
    fn event(&mut self, id: u32, count: f64, bytes: f64, sent_to: impl Fn(usize) -> Vec<u32>) {
        let p = self.nodes.len();
        let lists: Vec<Vec<u32>> = (0..p).map(&sent_to).collect();
        for (i, n) in self.nodes.iter_mut().enumerate() {
            let received_from: Vec<u32> = (0..p)
                .filter(|&s| lists[s].contains(&(i as u32)))
                .map(|s| s as u32)
                .collect();
            let (sent, recv) = (
                lists[i].len() as f64 * count,
                received_from.len() as f64 * count,
            );
            n.events.push(EventMeasurement {
                event: id,
                messages_sent: sent,
                messages_received: recv,
                bytes_sent: sent * bytes,
                bytes_received: recv * bytes,
                send_overhead_s: sent * MICRO.send_overhead_s,
                recv_overhead_s: recv * MICRO.recv_overhead_s,
                blocked_s: 0.0,
                total_s: sent * MICRO.send_overhead_s + recv * MICRO.recv_overhead_s,
                sent_to: lists[i].clone(),
                received_from,
                order: Vec::new(),
                overheads: Vec::new(),
            });
        }
    }

    fn finish(
        self,
        structure: &Structure,
        total_rows: u64,
        arrays: Vec<ArrayInfo>,
    ) -> Measurements {
        let mut nodes = self.nodes;
        // Each node's iteration is its stages and events one after another (it never waits).
        for n in &mut nodes {
            n.iteration_s = n.parts_added_s();
        }
        Measurements {
            schema: MEASUREMENTS_SCHEMA.into(),
            structure: StructureId {
                crate_name: structure.crate_name.clone(),
                solver: structure.solvers[0].name.clone(),
                digest: structure.digest(),
            },
            clock: "virtual".into(),
            rows: total_rows,
            iterations: 1,
            warm_up: 0,
            distribution: self.rows,
            cluster: self.cluster.clone(),
            arrays,
            micro: MICRO,
            nodes,
        }
    }
}

fn star(root: usize, p: usize) -> impl Fn(usize) -> Vec<u32> {
    move |i| {
        if i == root {
            (0..p as u32).filter(|&d| d as usize != root).collect()
        } else {
            vec![root as u32]
        }
    }
}

fn jacobi(cluster: ClusterSpec, rows: u64, cols: u64) -> Workload {
    let p = cluster.nodes.len();
    let row_bytes = cols * 8;
    let structure = structure(
        vec![
            section(
                0,
                vec![stage(
                    0,
                    &["a"],
                    &["b"],
                    &[(IoKind::Read, "a"), (IoKind::Write, "b")],
                )],
                Some(event(
                    0,
                    Pattern::NearestNeighbor,
                    &["rank - 1", "rank + 1"],
                    "a[..]",
                )),
                None,
            ),
            section(
                1,
                vec![stage(0, &["b"], &["residual"], &[(IoKind::Read, "b")])],
                Some(event(1, Pattern::Reduction, &["0"], "residual")),
                None,
            ),
        ],
        vec![
            var("a", VarClass::Distributed),
            var("b", VarClass::Distributed),
            var("residual", VarClass::Replicated),
        ],
        Vec::new(),
    );
    let mut rec = Recorder::new(&cluster, rows);
    rec.stage(
        0,
        0,
        5e-9 * cols as f64,
        true,
        1.0,
        &[("a", row_bytes, false), ("b", row_bytes, true)],
    );
    rec.stage(
        1,
        0,
        1e-9 * cols as f64,
        true,
        1.0,
        &[("b", row_bytes, false)],
    );
    rec.event(0, 1.0, row_bytes as f64, |i| {
        let mut peers = Vec::new();
        if i > 0 {
            peers.push(i as u32 - 1);
        }
        if i + 1 < p {
            peers.push(i as u32 + 1);
        }
        peers
    });
    rec.event(1, 1.0, 8.0, star(0, p));
    let arrays = vec![
        ArrayInfo {
            name: "a".into(),
            bytes_per_row: row_bytes,
            distributed: true,
            read_only: false,
        },
        ArrayInfo {
            name: "b".into(),
            bytes_per_row: row_bytes,
            distributed: true,
            read_only: false,
        },
    ];
    let measurements = rec.finish(&structure, rows, arrays);
    Workload {
        structure,
        measurements,
        cluster,
    }
}

fn cg(cluster: ClusterSpec, rows: u64) -> Workload {
    let p = cluster.nodes.len();
    let inner = 5.0;
    let matrix_row = 16 * 12;
    let structure = structure(
        vec![
            section(
                0,
                vec![stage(0, &["r", "p"], &["p"], &[])],
                Some(event(0, Pattern::AllGather, &["all"], "p")),
                Some(0),
            ),
            section(
                1,
                vec![stage(0, &["a", "p"], &["q"], &[(IoKind::Read, "a")])],
                Some(event(1, Pattern::Reduction, &["0"], "dot")),
                Some(0),
            ),
            section(
                2,
                vec![stage(0, &["q", "p"], &["x", "r"], &[])],
                Some(event(2, Pattern::Reduction, &["0"], "rho")),
                Some(0),
            ),
            section(
                3,
                vec![stage(0, &["rho"], &["beta"], &[])],
                Some(event(3, Pattern::Reduction, &["0"], "norm")),
                None,
            ),
        ],
        vec![
            var("a", VarClass::Distributed),
            var("p", VarClass::Distributed),
            var("q", VarClass::Distributed),
            var("r", VarClass::Distributed),
            var("x", VarClass::Distributed),
            var("rho", VarClass::Replicated),
            var("beta", VarClass::Replicated),
        ],
        vec![Group {
            id: 0,
            span: span(5),
            trip_count: "inner".into(),
            parent: None,
        }],
    );
    let mut rec = Recorder::new(&cluster, rows);
    rec.stage(0, 0, 4e-9, true, inner, &[]);
    rec.stage(1, 0, 16.0 * 3e-9, true, inner, &[("a", matrix_row, false)]);
    rec.stage(2, 0, 6e-9, true, inner, &[]);
    rec.stage(3, 0, 2e-6, false, 1.0, &[]);
    let block = rec.rows.clone();
    rec.event(0, inner, 8.0 * (rows as f64 / p as f64), star(0, p));
    // All-gather bytes are the sender's rows: fix them up per node.
    for (i, n) in rec.nodes.iter_mut().enumerate() {
        let e = n.events.last_mut().expect("event just recorded");
        e.bytes_sent = if i == 0 {
            e.messages_sent * 8.0 * rows as f64
        } else {
            e.messages_sent * 8.0 * block[i] as f64
        };
    }
    rec.event(1, inner, 8.0, star(0, p));
    rec.event(2, inner, 8.0, star(0, p));
    rec.event(3, 1.0, 8.0, star(0, p));
    for n in &mut rec.nodes {
        n.groups.push(GroupMeasurement {
            group: 0,
            trips: inner,
        });
    }
    let vector = |name: &str| ArrayInfo {
        name: name.into(),
        bytes_per_row: 8,
        distributed: true,
        read_only: false,
    };
    let arrays = vec![
        ArrayInfo {
            name: "a".into(),
            bytes_per_row: matrix_row,
            distributed: true,
            read_only: true,
        },
        vector("p"),
        vector("q"),
        vector("r"),
        vector("x"),
    ];
    let measurements = rec.finish(&structure, rows, arrays);
    Workload {
        structure,
        measurements,
        cluster,
    }
}
