//! Compiling a [`Model`] from structure + measurements + cluster: everything that does not
//! depend on the candidate distribution is computed here, once.
//!
//! Measured values are per iteration on the measured distribution δ and cluster; they are turned
//! into per-row rates (`T_φ / W`), per-message overheads and per-byte disk costs, and adjusted to
//! the target cluster: computation by the ratio of CPU powers, disk transfer by the ratio of disk
//! bandwidths, per-call disk overheads by the ratio of disk latencies.

mod events;
pub(crate) use events::root_of;

use std::collections::HashMap;

use super::compute::{InCore, StageCost, StageIo, SAMPLE_SPREAD};
use super::out_of_core::{ArrayCost, IoMode, NodeMemory};
use super::{Model, ModelError, SectionCost, Step};
use mheta_runtime::format::{
    ClusterSpec, IoKind, Measurements, NodeMeasurements, SectionItem, Solver, Stage, StageKey,
    Structure, VarClass,
};

impl Model {
    /// Compiles the model of the solver the measurements belong to, for `cluster` (usually the
    /// cluster the measurements were taken on; another cluster with the same number of nodes
    /// predicts the program there).
    pub fn new(
        structure: &Structure,
        measurements: &Measurements,
        cluster: &ClusterSpec,
    ) -> Result<Model, ModelError> {
        let solver = pick_solver(structure, &measurements.structure.solver)?;
        Builder::new(solver, measurements, cluster)?.build()
    }
}

fn pick_solver<'a>(structure: &'a Structure, name: &str) -> Result<&'a Solver, ModelError> {
    match structure.solver_named(name) {
        Some(s) => Ok(s),
        None if structure.solvers.is_empty() => Err(ModelError::NoSolver),
        None => Err(ModelError::UnknownSolver(name.to_string())),
    }
}

struct Builder<'a> {
    solver: &'a Solver,
    m: &'a Measurements,
    cluster: &'a ClusterSpec,
    p: usize,
    /// Distributed arrays in priority order, and their index by name.
    arrays: Vec<ArrayCost>,
    array_index: HashMap<String, usize>,
    /// Per node: CPU adjustment `cpu_measured / cpu_target`.
    cpu_ratio: Vec<f64>,
    /// Trips of each group per main-loop iteration.
    trips: HashMap<u32, u32>,
}

impl<'a> Builder<'a> {
    fn new(
        solver: &'a Solver,
        m: &'a Measurements,
        cluster: &'a ClusterSpec,
    ) -> Result<Self, ModelError> {
        let p = cluster.nodes.len();
        if m.nodes.len() != p || p == 0 {
            return Err(ModelError::NodeCount {
                measured: m.nodes.len(),
                cluster: p,
            });
        }
        for (index, n) in m.nodes.iter().enumerate() {
            if n.rank as usize != index {
                return Err(ModelError::RankOrder {
                    index,
                    rank: n.rank,
                });
            }
        }
        let cpu_ratio = (0..p)
            .map(|i| {
                let measured = m
                    .cluster
                    .nodes
                    .get(i)
                    .map(|n| n.cpu)
                    .unwrap_or(cluster.nodes[i].cpu);
                ratio(measured, cluster.nodes[i].cpu)
            })
            .collect();
        let mut b = Builder {
            solver,
            m,
            cluster,
            p,
            arrays: Vec::new(),
            array_index: HashMap::new(),
            cpu_ratio,
            trips: HashMap::new(),
        };
        b.rank_arrays()?;
        b.group_trips()?;
        Ok(b)
    }

    /// Ranks the distributed arrays for the out-of-core heuristic as the runtime ranks them
    /// (`ooc::plan`: bytes per use, every array used once, ties in the order the program
    /// registered them, which is the order of the measurements' `arrays`): the smaller row
    /// first, then the earlier registered. Ranked otherwise (by the structure's accesses, say),
    /// the model would predict the I/O of arrays the program keeps in core and compute at the
    /// rate of a placement the program does not make.
    fn rank_arrays(&mut self) -> Result<(), ModelError> {
        let distributed: Vec<_> = self
            .m
            .arrays
            .iter()
            .filter(|a| a.distributed && a.bytes_per_row > 0)
            .collect();
        if distributed.len() > 64 {
            return Err(ModelError::TooManyArrays(distributed.len()));
        }
        let mut ranked = distributed;
        // A stable sort: equal rows keep the registration order.
        ranked.sort_by_key(|a| a.bytes_per_row);
        for (index, a) in ranked.into_iter().enumerate() {
            self.array_index.insert(a.name.clone(), index);
            self.arrays.push(ArrayCost {
                name: a.name.clone(),
                bytes_per_row: a.bytes_per_row as f64,
                resident: false,
            });
        }
        Ok(())
    }

    /// Trips per iteration of every group: measured (mean over nodes) or, failing that, the
    /// structure's literal trip count, else 1; rounded to a whole number of passes.
    fn group_trips(&mut self) -> Result<(), ModelError> {
        for g in &self.solver.groups {
            let measured: Vec<f64> = self
                .m
                .nodes
                .iter()
                .flat_map(|n| n.groups.iter().filter(|x| x.group == g.id).map(|x| x.trips))
                .collect();
            let trips = if measured.is_empty() {
                g.trip_count.trim().parse::<f64>().unwrap_or(1.0)
            } else {
                measured.iter().sum::<f64>() / measured.len() as f64
            };
            let trips = crate::passes(|| format!("group {} trips", g.id), trips, 0.0)?;
            self.trips.insert(g.id, trips);
        }
        Ok(())
    }

    fn build(mut self) -> Result<Model, ModelError> {
        let mut memory = (0..self.p)
            .map(|i| self.node_memory(i))
            .collect::<Result<Vec<_>, _>>()?;
        let mut program = Vec::new();
        let mut sections = Vec::new();
        // Open groups, outermost first: (group id, index of its Step::Group in `program`).
        let mut open: Vec<(u32, usize)> = Vec::new();
        for section in &self.solver.sections {
            let chain = self.group_chain(section.group)?;
            while open.len() > chain.len() || open.iter().zip(&chain).any(|(o, c)| o.0 != *c) {
                let (_, at) = open.pop().unwrap_or_default();
                close_group(&mut program, at);
            }
            for &g in &chain[open.len()..] {
                open.push((g, program.len()));
                program.push(Step::Group {
                    trips: self.trips.get(&g).copied().unwrap_or(1),
                    len: 0,
                });
            }
            let multiplicity: f64 = chain
                .iter()
                .map(|g| f64::from(self.trips.get(g).copied().unwrap_or(1)))
                .product();
            let per_pass = multiplicity.max(1.0);
            let mut cost = SectionCost {
                id: section.id,
                stages: Vec::new(),
                tiles: Vec::new(),
                comm: None,
                multiplicity,
            };
            for item in &section.items {
                match item {
                    SectionItem::Stage(stage) => cost
                        .stages
                        .push(self.stage(section.id, None, stage, per_pass)?),
                    SectionItem::Tiles(tl) => {
                        cost.tiles.push(self.tiles(section.id, tl, per_pass)?)
                    }
                }
            }
            cost.comm = section.comm.as_ref().map(|e| self.comm(e)).transpose()?;
            program.push(Step::Section(sections.len()));
            sections.push(cost);
        }
        while let Some((_, at)) = open.pop() {
            close_group(&mut program, at);
        }
        self.io_profile(&sections, &mut memory);
        let micro = &self.m.micro;
        let latency_s = if micro.latency_s > 0.0 {
            micro.latency_s
        } else {
            self.cluster.network.latency_s
        };
        let per_byte_s = if micro.per_byte_s > 0.0 {
            micro.per_byte_s
        } else if self.cluster.network.bandwidth_bps > 0.0 {
            1.0 / self.cluster.network.bandwidth_bps
        } else {
            0.0
        };
        let variation = self.variation()?;
        Ok(Model {
            nodes: self.p,
            total_rows: self.m.rows,
            program,
            sections,
            arrays: self.arrays,
            memory,
            latency_s: check("micro.latency_s", latency_s)?,
            per_byte_s: check("micro.per_byte_s", per_byte_s)?,
            variation,
        })
    }

    /// The measured variation of the nodes' computation between iterations, as factors on each
    /// node's mean (`Model::variation`): from `nodes[].iteration_compute_s`, at most
    /// [`crate::MAX_VARIATION_PASSES`] of the iterations every node measured (the last ones, as
    /// the nodes' lists end alike), spread evenly over them: the merged runs' iterations follow
    /// one another, and one run's stretch of slow iterations on one node should weigh as much
    /// as it lasted. None when a node did not record its iterations, or fewer than two. (`new`
    /// has checked that the measurements cover every node.)
    fn variation(&self) -> Result<Vec<f64>, ModelError> {
        let nodes = &self.m.nodes;
        let measured = nodes
            .iter()
            .map(|n| n.iteration_compute_s.len())
            .min()
            .unwrap_or(0);
        if measured < 2 {
            return Ok(Vec::new());
        }
        let passes = measured.min(crate::MAX_VARIATION_PASSES);
        let mut factors = vec![1.0; passes * self.p];
        for (i, n) in nodes.iter().enumerate() {
            let values = &n.iteration_compute_s;
            for (k, &v) in values.iter().enumerate() {
                check(&format!("nodes[{i}].iteration_compute_s[{k}]"), v)?;
            }
            let common = &values[values.len() - measured..];
            // The k-th of `passes` evenly spaced iterations (all of them when they fit).
            let pick = |k: usize| common[k * measured / passes];
            let mean = (0..passes).map(pick).sum::<f64>() / passes as f64;
            if mean > 0.0 {
                for k in 0..passes {
                    factors[k * self.p + i] = pick(k) / mean;
                }
            }
        }
        Ok(factors)
    }

    /// Marks the arrays no stage accesses through I/O as resident, and sums every array's
    /// per-piece and per-byte I/O costs over the stages that access it, for the out-of-core
    /// heuristic.
    fn io_profile(&mut self, sections: &[SectionCost], memory: &mut [NodeMemory]) {
        let mut accessed = vec![false; self.arrays.len()];
        for mem in memory.iter_mut() {
            mem.io_per_piece = vec![0.0; self.arrays.len()];
            mem.io_per_byte = vec![0.0; self.arrays.len()];
        }
        for section in sections {
            let stages = section
                .stages
                .iter()
                .chain(section.tiles.iter().flat_map(|t| t.stages.iter()));
            for io in stages.flat_map(|s| s.io.iter()) {
                accessed[io.array] = true;
                for mem in memory.iter_mut() {
                    let m = io.array;
                    // The same shares f_r(m), f_w(m) as T_ψ (Eq. 5.1/5.2 weighted).
                    let (read, write) = (io.read, io.write);
                    let o_a = if io.mode == IoMode::Sync {
                        0.0
                    } else {
                        mem.o_a
                    };
                    mem.io_per_piece[m] +=
                        section.multiplicity * (read * (mem.o_r + o_a) + write * mem.o_w);
                    mem.io_per_byte[m] += section.multiplicity
                        * (read * mem.read_per_byte[m] + write * mem.write_per_byte[m]);
                }
            }
        }
        for (a, accessed) in self.arrays.iter_mut().zip(accessed) {
            a.resident = !accessed;
        }
    }

    /// The groups enclosing a section, outermost first.
    fn group_chain(&self, innermost: Option<u32>) -> Result<Vec<u32>, ModelError> {
        let mut chain = Vec::new();
        let mut current = innermost;
        while let Some(g) = current {
            if chain.len() >= super::MAX_GROUP_DEPTH {
                return Err(ModelError::TooDeep {
                    group: g,
                    max: super::MAX_GROUP_DEPTH,
                });
            }
            chain.push(g);
            current = self
                .solver
                .groups
                .iter()
                .find(|x| x.id == g)
                .and_then(|x| x.parent);
        }
        chain.reverse();
        Ok(chain)
    }

    fn node_memory(&self, i: usize) -> Result<NodeMemory, ModelError> {
        let n = &self.m.nodes[i];
        let target = &self.cluster.nodes[i];
        let measured = self.m.cluster.nodes.get(i).copied().unwrap_or(*target);
        let replicated: f64 = self
            .m
            .arrays
            .iter()
            .filter(|a| !a.distributed)
            .map(|a| a.bytes_per_row as f64)
            .sum();
        // Seconds per byte scale as measured / target bandwidth (a faster disk moves a byte in
        // less time); seconds per call as target / measured latency.
        let read_ratio = ratio(measured.disk_read_bps, target.disk_read_bps);
        let write_ratio = ratio(measured.disk_write_bps, target.disk_write_bps);
        let latency_ratio = ratio(target.disk_latency_s, measured.disk_latency_s);
        let field = |name: &str| format!("nodes[{i}].{name}");
        let o_r = check(&field("read_overhead_s"), n.read_overhead_s)? * latency_ratio;
        let o_w = check(&field("write_overhead_s"), n.write_overhead_s)? * latency_ratio;
        let o_a = check(&field("async_overhead_s"), n.async_overhead_s)?;
        let node_r = check(&field("read_per_byte_s"), n.read_per_byte_s)?;
        let node_w = check(&field("write_per_byte_s"), n.write_per_byte_s)?;
        let mut read_per_byte = Vec::with_capacity(self.arrays.len());
        let mut write_per_byte = Vec::with_capacity(self.arrays.len());
        for a in &self.arrays {
            let (mut reads, mut read_s, mut bytes_r, mut writes, mut write_s, mut bytes_w) =
                (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
            for io in n.io.iter().filter(|io| io.var == a.name) {
                reads += io.reads + io.prefetches;
                read_s += io.read_s;
                bytes_r += io.bytes_read;
                writes += io.writes;
                write_s += io.write_s;
                bytes_w += io.bytes_written;
            }
            // r(m): measured per variable when the variable was read, else the node's figure.
            let r = per_byte(read_s - reads * n.read_overhead_s, bytes_r).unwrap_or(node_r);
            let w = per_byte(write_s - writes * n.write_overhead_s, bytes_w).unwrap_or(node_w);
            read_per_byte.push(r * read_ratio);
            write_per_byte.push(w * write_ratio);
        }
        Ok(NodeMemory {
            memory_bytes: (target.memory_bytes as f64 - replicated).max(0.0),
            o_r,
            o_w,
            o_a,
            read_per_byte,
            write_per_byte,
            copy_per_byte: check(&field("copy_per_byte_s"), n.copy_per_byte_s)? * self.cpu_ratio[i],
            io_per_piece: Vec::new(),
            io_per_byte: Vec::new(),
        })
    }

    /// Compiles one stage: its per-row (or constant) rate on every node and its I/O.
    fn stage(
        &self,
        section: u32,
        tile: Option<u32>,
        stage: &Stage,
        per_pass: f64,
    ) -> Result<StageCost, ModelError> {
        let key = StageKey {
            section,
            tile,
            stage: stage.id,
        };
        let distributed = self.is_distributed(stage);
        let measured: Vec<f64> = self
            .m
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let t = find_stage(n, key).map(|s| s.compute_s).unwrap_or(0.0);
                check(
                    &format!("nodes[{i}].stages[{section}/{}].compute_s", stage.id),
                    t,
                )
                .map(|t| t / per_pass)
            })
            .collect::<Result<_, _>>()?;
        let rate = if distributed {
            self.per_row_rates(&measured)
        } else {
            measured
        };
        let rate: Vec<f64> = rate
            .iter()
            .zip(&self.cpu_ratio)
            .map(|(r, c)| r * c)
            .collect();
        let mut kept = Vec::new();
        for mask in self.kept_masks(key)? {
            if let Some(costs) = self.kept_costs(key, distributed, per_pass, mask)? {
                kept.push((mask, self.cpu_adjusted(costs)));
            }
        }
        let mut io: Vec<StageIo> = Vec::new();
        for (index, name) in self.arrays.iter().map(|a| a.name.as_str()).enumerate() {
            let ops: Vec<IoKind> = stage
                .io
                .iter()
                .filter(|op| op.var == name)
                .map(|op| op.op)
                .collect();
            let (mut reads, mut writes, mut prefetches, mut overlap, mut compute) =
                (0.0, 0.0, 0.0, 0.0, 0.0);
            for n in &self.m.nodes {
                for x in n.io.iter().filter(|x| x.key == key && x.var == name) {
                    reads += x.reads;
                    writes += x.writes;
                    prefetches += x.prefetches;
                    overlap += x.overlap_s;
                }
                compute += find_stage(n, key).map(|s| s.compute_s).unwrap_or(0.0);
            }
            let prefetch = ops.contains(&IoKind::Prefetch) || prefetches > 0.0;
            let sync_read = ops.contains(&IoKind::Read) || reads > 0.0;
            let write = ops.contains(&IoKind::Write) || writes > 0.0;
            if !(prefetch || sync_read || write) {
                continue;
            }
            let mode = match (prefetch, sync_read) {
                (true, true) => IoMode::Unrolled,
                (true, false) => IoMode::Prefetch,
                _ => IoMode::Sync,
            };
            let overlap = if compute > 0.0 {
                (overlap / compute).clamp(0.0, 1.0)
            } else {
                0.0
            };
            // f_r(m), f_w(m) (see `out_of_core::t_psi`): measured when the array was moved in
            // this stage, else a full pass in each direction the stage or the counts name.
            let (read, write) = self
                .measured_shares(key, index, per_pass)
                .unwrap_or((f64::from(prefetch || sync_read), f64::from(write)));
            io.push(StageIo {
                array: index,
                mode,
                read,
                write,
                overlap,
            });
        }
        Ok(StageCost {
            distributed,
            rate,
            kept,
            io,
        })
    }

    /// Kept-run costs at the measured CPU power, adjusted to the target's (`cpu_ratio`).
    fn cpu_adjusted(&self, costs: Vec<InCore>) -> Vec<InCore> {
        costs
            .into_iter()
            .zip(&self.cpu_ratio)
            .map(|(cost, &c)| match cost {
                InCore::Rate(r) => InCore::Rate(r * c),
                InCore::Samples(points) => {
                    InCore::Samples(points.into_iter().map(|(x, t)| (x, t * c)).collect())
                }
            })
            .collect()
    }

    /// The placements (masks over the model's arrays, as `OocState::mask`: the arrays out of
    /// core, 0 for none) kept runs measured on some node, in the order first seen.
    fn kept_masks(&self, key: StageKey) -> Result<Vec<u64>, ModelError> {
        let mut masks = Vec::new();
        for (i, n) in self.m.nodes.iter().enumerate() {
            let samples = find_stage(n, key).map_or(&[][..], |s| s.in_core.as_slice());
            for (k, sample) in samples.iter().enumerate() {
                let mask = self.sample_mask(i, key, k, sample)?;
                if !masks.contains(&mask) {
                    masks.push(mask);
                }
            }
        }
        Ok(masks)
    }

    /// `sample.out_of_core` as a mask over the model's arrays; an array the measurements do
    /// not list is an error naming the field.
    fn sample_mask(
        &self,
        node: usize,
        key: StageKey,
        k: usize,
        sample: &mheta_runtime::format::InCoreSample,
    ) -> Result<u64, ModelError> {
        sample
            .out_of_core
            .iter()
            .try_fold(0u64, |mask, name| match self.array_index.get(name) {
                Some(&m) => Ok(mask | 1 << m),
                None => Err(ModelError::UnknownArray {
                    field: format!(
                        "nodes[{node}].stages[{}/{}].in_core[{k}].out_of_core",
                        key.section, key.stage
                    ),
                    name: name.clone(),
                }),
            })
    }

    /// The shares `(f_r(m), f_w(m))` of its local array that a stage reads and writes per pass,
    /// from the bytes it moved: `bytes / (W · bytes_per_row · passes)` on each node that held
    /// rows and moved array `m` in the stage, averaged over those nodes. An array read fully
    /// every iteration gets `(1, f_w)`; two arrays swapping roles (read in one iteration, written
    /// in the next) get about `(1/2, 1/2)` each; a stage inside a tile loop that reads the whole
    /// local array once per tile (the RNA wavefront) gets `(N_T, 0)`: Eq. 5.1 and 5.2 describe
    /// one pass, and a share above 1 counts every pass the stage makes. `None` when no node moved
    /// the array in this stage.
    fn measured_shares(&self, key: StageKey, array: usize, per_pass: f64) -> Option<(f64, f64)> {
        let a = &self.arrays[array];
        let (mut sum_r, mut sum_w, mut nodes) = (0.0, 0.0, 0.0);
        for n in self.m.nodes.iter().filter(|n| n.rows > 0) {
            let (bytes_r, bytes_w) =
                n.io.iter()
                    .filter(|x| x.key == key && x.var == a.name)
                    .fold((0.0, 0.0), |(r, w), x| {
                        (r + x.bytes_read, w + x.bytes_written)
                    });
            let local = n.rows as f64 * a.bytes_per_row * per_pass;
            if !(bytes_r + bytes_w > 0.0 && local > 0.0 && (bytes_r + bytes_w).is_finite()) {
                continue;
            }
            sum_r += (bytes_r / local).max(0.0);
            sum_w += (bytes_w / local).max(0.0);
            nodes += 1.0;
        }
        (nodes > 0.0).then(|| (sum_r / nodes, sum_w / nodes))
    }

    /// A stage is distributed when its representative (or, without one, any variable it
    /// touches) is distributed.
    fn is_distributed(&self, stage: &Stage) -> bool {
        let class = |name: &str| {
            if self.array_index.contains_key(name) {
                return Some(VarClass::Distributed);
            }
            self.solver
                .variables
                .iter()
                .find(|v| v.name == name)
                .map(|v| v.class)
        };
        match &stage.representative {
            Some(r) => class(r) == Some(VarClass::Distributed),
            None => stage
                .reads
                .iter()
                .chain(&stage.writes)
                .any(|v| class(v) == Some(VarClass::Distributed)),
        }
    }

    /// A stage's computation on each node when the node holds in core all its arrays but those
    /// of `mask` (`StageCost::kept`), before the CPU adjustment. Nodes the kept runs placed that way give their samples (`in_core`; a
    /// replicated stage, their median). Every other node gets the median per-row rate of those
    /// nodes (at their largest sample), normalised by CPU power (as `per_row_rates` does for
    /// nodes without rows): its own measured rate was taken with every array out of core,
    /// between block reads and writes, which changes the computation's speed by an amount that
    /// depends on the blocks and on what stays in core. `None` when no node was placed that
    /// way: the forced run's rates stand.
    fn kept_costs(
        &self,
        key: StageKey,
        distributed: bool,
        per_pass: f64,
        mask: u64,
    ) -> Result<Option<Vec<InCore>>, ModelError> {
        let mut known: Vec<Option<InCore>> = Vec::with_capacity(self.p);
        for (i, n) in self.m.nodes.iter().enumerate() {
            let samples = find_stage(n, key).map_or(&[][..], |s| s.in_core.as_slice());
            let mut points: Vec<(f64, f64)> = Vec::with_capacity(samples.len());
            for (k, sample) in samples.iter().enumerate() {
                if self.sample_mask(i, key, k, sample)? != mask {
                    continue;
                }
                let field = format!(
                    "nodes[{i}].stages[{}/{}].in_core[{k}].compute_s",
                    key.section, key.stage
                );
                let t = check(&field, sample.compute_s)? / per_pass;
                if !(distributed && sample.rows == 0) {
                    points.push((sample.rows as f64, t));
                }
            }
            if points.is_empty() {
                known.push(None);
                continue;
            }
            known.push(Some(if distributed {
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                InCore::Samples(spread_samples(median_per_row_count(points)))
            } else {
                let mut seconds: Vec<f64> = points.iter().map(|p| p.1).collect();
                InCore::Rate(mheta_runtime::stats::median(&mut seconds))
            }));
        }
        // Each known node's rate, normalised by its CPU power: per row at its largest sample
        // (distributed) or its seconds (replicated).
        let mut normalised: Vec<f64> = known
            .iter()
            .enumerate()
            .filter_map(|(i, k)| {
                let r = match k.as_ref()? {
                    InCore::Rate(r) => *r,
                    InCore::Samples(points) => {
                        let (rows, t) = points.last()?;
                        t / rows
                    }
                };
                Some(r * self.measured_cpu(i))
            })
            .collect();
        if normalised.is_empty() {
            return Ok(None);
        }
        let median = mheta_runtime::stats::median(&mut normalised);
        Ok(Some(
            known
                .into_iter()
                .enumerate()
                .map(|(i, k)| {
                    k.unwrap_or_else(|| {
                        InCore::Rate(median / self.measured_cpu(i).max(f64::MIN_POSITIVE))
                    })
                })
                .collect(),
        ))
    }

    /// The CPU power node `i` had when measured.
    fn measured_cpu(&self, i: usize) -> f64 {
        self.m
            .cluster
            .nodes
            .get(i)
            .map(|n| n.cpu)
            .unwrap_or(self.cluster.nodes[i].cpu)
    }

    /// `T_φ / W` per node. A node that held no rows during the measurement gets the mean
    /// CPU-normalised rate of the others, scaled by its own CPU power.
    fn per_row_rates(&self, measured: &[f64]) -> Vec<f64> {
        let cpu = |i: usize| self.measured_cpu(i);
        let rows = |i: usize| self.m.nodes[i].rows;
        let known: Vec<f64> = (0..self.p)
            .filter(|&i| rows(i) > 0)
            .map(|i| measured[i] / rows(i) as f64 * cpu(i))
            .collect();
        let normalised = if known.is_empty() {
            0.0
        } else {
            known.iter().sum::<f64>() / known.len() as f64
        };
        (0..self.p)
            .map(|i| {
                if rows(i) > 0 {
                    measured[i] / rows(i) as f64
                } else {
                    normalised / cpu(i).max(f64::MIN_POSITIVE)
                }
            })
            .collect()
    }
}

fn close_group(program: &mut [Step], at: usize) {
    let len = program.len() - at - 1;
    if let Step::Group { len: l, .. } = &mut program[at] {
        *l = len;
    }
}

/// Samples `(rows, seconds)` sorted by rows, with the repeated runs of one row count made one
/// sample of their median seconds: between processes the same rows can run at two speeds (on
/// this project's machine, in-core Jacobi at 1214 and 786 rows on io-2: three instrumented runs
/// of five at 15.4–16.1 ms per iteration, two at 12.0–12.4), and a mean would land between.
fn median_per_row_count(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len());
    let mut seconds = Vec::new();
    let mut at = 0;
    while at < points.len() {
        let rows = points[at].0;
        seconds.clear();
        seconds.extend(points[at..].iter().take_while(|p| p.0 == rows).map(|p| p.1));
        at += seconds.len();
        out.push((rows, mheta_runtime::stats::median(&mut seconds)));
    }
    out
}

/// In-core samples `(rows, seconds)` in increasing rows, made fit to interpolate: samples less
/// than 20 % apart in rows ([`SAMPLE_SPREAD`]) are averaged into one (the slope between close
/// samples is mostly noise), and so are samples whose seconds fall as the rows grow (noise too:
/// more rows never take less time), until the seconds rise with the rows
/// (pool-adjacent-violators).
fn spread_samples(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64, f64)> = Vec::new(); // rows sum, seconds sum, count
    let mean = |p: &(f64, f64, f64)| (p.0 / p.2, p.1 / p.2);
    for (rows, t) in points {
        out.push((rows, t, 1.0));
        while let [.., a, b] = out.as_slice() {
            let ((ra, ta), (rb, tb)) = (mean(a), mean(b));
            if rb >= SAMPLE_SPREAD * ra && tb >= ta {
                break;
            }
            let b = out.pop().expect("two points");
            let a = out.last_mut().expect("two points");
            *a = (a.0 + b.0, a.1 + b.1, a.2 + b.2);
        }
    }
    out.iter().map(mean).collect()
}

fn find_stage(
    n: &NodeMeasurements,
    key: StageKey,
) -> Option<&mheta_runtime::format::StageMeasurement> {
    n.stages.iter().find(|s| s.key == key)
}

fn per_byte(seconds: f64, bytes: f64) -> Option<f64> {
    (bytes > 0.0 && seconds > 0.0 && seconds.is_finite()).then(|| seconds / bytes)
}

/// `a / b` when both are positive and finite, else 1 (no adjustment).
fn ratio(a: f64, b: f64) -> f64 {
    if a > 0.0 && b > 0.0 && a.is_finite() && b.is_finite() {
        a / b
    } else {
        1.0
    }
}

fn check(field: &str, value: f64) -> Result<f64, ModelError> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(ModelError::BadValue {
            field: field.to_string(),
            value,
        })
    }
}
