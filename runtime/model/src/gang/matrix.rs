//! The trace matrix (Ousterhout matrix, seed §3.1.1) and the two ways of placing a job in it:
//! Schark's first fit (§3.2.1, Figure 3.1) and the Enhanced multi-row algorithm (§3.2.3–3.2.5)
//! with its fitness function (Table 3.1).
//!
//! Rows are time slices, columns processors; a cell holds the process of a job that runs on
//! that processor while the scheduler points at that row.

use super::Config;

/// The process a cell runs: process `process` of job `job` (an index into the simulation's
/// jobs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    pub job: usize,
    pub process: u32,
}

/// The trace matrix: `rows[r][p]` is the process on processor `p` in row `r`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceMatrix {
    pub processors: u32,
    pub rows: Vec<Vec<Option<Cell>>>,
}

/// Where a placement puts a job: per row it occupies (an existing row, or a new one appended
/// after the last), the processor of each of its processes, in process order.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub rows: Vec<(usize, Vec<u32>)>,
}

impl TraceMatrix {
    pub fn new(processors: u32) -> Self {
        TraceMatrix {
            processors,
            rows: Vec::new(),
        }
    }

    /// Free processors of row `r`, in processor order (all of them past the last row).
    fn free(&self, r: usize) -> Vec<u32> {
        match self.rows.get(r) {
            Some(row) => (0..self.processors)
                .filter(|&p| row[p as usize].is_none())
                .collect(),
            None => (0..self.processors).collect(),
        }
    }

    /// Writes `job`'s placement into the matrix, appending the new rows it uses.
    pub fn apply(&mut self, job: usize, placement: &Placement) {
        for (r, procs) in &placement.rows {
            while self.rows.len() <= *r {
                self.rows.push(vec![None; self.processors as usize]);
            }
            for (k, &p) in procs.iter().enumerate() {
                debug_assert!(self.rows[*r][p as usize].is_none());
                self.rows[*r][p as usize] = Some(Cell {
                    job,
                    process: k as u32,
                });
            }
        }
    }

    /// Removes every cell of `job`.
    pub fn remove(&mut self, job: usize) {
        for row in &mut self.rows {
            for cell in row.iter_mut() {
                if cell.is_some_and(|c| c.job == job) {
                    *cell = None;
                }
            }
        }
    }

    /// Compaction (§3.1.1): drops the rows no process occupies. Returns, for each old row, its
    /// new index (`None` for a dropped row).
    pub fn compact(&mut self) -> Vec<Option<usize>> {
        let mut map = Vec::with_capacity(self.rows.len());
        let mut kept = 0;
        for row in &self.rows {
            if row.iter().any(Option::is_some) {
                map.push(Some(kept));
                kept += 1;
            } else {
                map.push(None);
            }
        }
        self.rows.retain(|row| row.iter().any(Option::is_some));
        map
    }

    /// The distinct jobs of row `r`, in processor order of their first cell.
    pub fn jobs_in_row(&self, r: usize) -> Vec<usize> {
        let mut jobs: Vec<usize> = Vec::new();
        for c in self.rows[r].iter().flatten() {
            if !jobs.contains(&c.job) {
                jobs.push(c.job);
            }
        }
        jobs
    }

    /// Schark's placement (§3.2.1, Figure 3.1): the first row with `processors` free
    /// processors, on the lowest-numbered free ones; a new row when none has room.
    pub fn first_fit(&self, processors: u32) -> Placement {
        let r = (0..self.rows.len())
            .find(|&r| self.free(r).len() >= processors as usize)
            .unwrap_or(self.rows.len());
        Placement {
            rows: vec![(r, self.free(r)[..processors as usize].to_vec())],
        }
    }
}

/// What the fitness function knows of a job (Table 3.1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JobShape {
    /// `N_i^p`.
    pub processors: u32,
    /// `N_i^s`: rows of the trace matrix the job occupies.
    pub slices: usize,
    /// `N_i^IO` per time slice (Table 3.1: "the I/O frequency times `T^s`"): `T^s` over the
    /// time from one I/O event to the next, which is the process's work between events plus the
    /// access, `W / N^IO + T_w^β` — the same as `T^s · N^IO / demand`. For a fully parallel job
    /// on fewer processors than its CN, `W / N^IO` is eq. 3.3's `T_{IO↔IO}`; a job in core does
    /// one access in all, so its rate is close to zero.
    pub io_per_slice: f64,
}

impl JobShape {
    /// `T_w^i = N_i^IO · N_i^s · T_w^β`: the job's explicit I/O per iteration of the matrix.
    pub fn t_w(&self, config: &Config) -> f64 {
        self.io_per_slice * self.slices as f64 * config.io_duration
    }
}

/// Per job and per row it occupies, the time its slice in that row loses at the start to
/// context switches and migration (Table 3.1's `T_c^i` and `T_m^i` split by row): averaged over
/// the job's processes, as §3.2.4 averages them. A process context-switches when the cell before
/// its own on the same processor (cyclically, in row order) is not the same process; it migrates
/// when it ran on another processor in the job's previous row. Both costs "are the result of
/// assigning J_i to multiple rows" (§3.2.4): a job in one row pays neither, which is how the
/// original Schark simulator ran (its a-based rows need no switching cost to come out at the
/// thesis's end time).
pub fn losses(
    matrix: &TraceMatrix,
    shapes: &[JobShape],
    config: &Config,
) -> Vec<Vec<(usize, f64)>> {
    let mut out: Vec<Vec<(usize, f64)>> = vec![Vec::new(); shapes.len()];
    let rows = matrix.rows.len();
    let neighbours = Neighbours::new(matrix);
    // Each job's rows, in order, and per row its processes' processors.
    let mut placed: Vec<Vec<(usize, Vec<u32>)>> = vec![Vec::new(); shapes.len()];
    for (r, row) in matrix.rows.iter().enumerate() {
        for (p, cell) in row.iter().enumerate() {
            if let Some(c) = cell {
                let v = &mut placed[c.job];
                if v.last().map(|(lr, _)| *lr) != Some(r) {
                    v.push((r, vec![u32::MAX; shapes[c.job].processors as usize]));
                }
                v.last_mut().unwrap().1[c.process as usize] = p as u32;
            }
        }
    }
    for (j, job_rows) in placed.iter().enumerate() {
        if job_rows.len() <= 1 {
            out[j] = job_rows.iter().map(|(r, _)| (*r, 0.0)).collect();
            continue;
        }
        let np = shapes[j].processors.max(1) as f64;
        for (i, (r, procs)) in job_rows.iter().enumerate() {
            let previous = &job_rows[(i + job_rows.len() - 1) % job_rows.len()].1;
            let mut switches = 0usize;
            let mut migrations = 0usize;
            for (k, &p) in procs.iter().enumerate() {
                if previous[k] != p {
                    migrations += 1;
                }
                // The cell before (r, p) on processor p.
                let before = neighbours.before(p, *r, rows).map(|(_, c)| c);
                if before
                    != Some(Cell {
                        job: j,
                        process: k as u32,
                    })
                {
                    switches += 1;
                }
            }
            let loss = (switches as f64 * config.context_switch
                + migrations as f64 * config.migration)
                / np;
            out[j].push((*r, loss));
        }
    }
    out
}

/// The Enhanced placement (§3.2.5) of job `job` into `matrix`; the jobs (placed or not) have
/// `shapes`, and the placed ones currently lose `current` (from [`losses`]) per row.
///
/// The "useful" rows are the rows with `N_i^p` processors free, and `N_i^s` new rows after the
/// last (always useful: the matrix grows when it must). Processors are ranked by the useful rows
/// they are free in (`A^r`, ties to the lower index); only the first `N_i^p + α` stay, and a row
/// left with fewer than `N_i^p` of them is no longer useful. Each useful row in turn is the
/// target row `R_t`; each `N_i^p`-combination of its kept processors is matched against the
/// other useful rows: rows holding all of them ("exact") first, in row order, then the others by
/// how many they hold (their other kept processors fill the gap). The first `N_i^s − 1` complete
/// the configuration, and the fitness function [`fitness`] picks the best configuration (the
/// first among equals).
///
/// Our bound: at most `config.max_combinations` combinations per target row, dropping the
/// lowest-ranked processors first; the thesis enumerates all `O((N_i^p)²)` of them (α = 2),
/// which is several thousand per row for `N_i^p = 64`.
pub fn enhanced(
    matrix: &TraceMatrix,
    shapes: &[JobShape],
    current: &[Vec<(usize, f64)>],
    job: usize,
    config: &Config,
) -> Placement {
    let shape = shapes[job];
    let np = shape.processors as usize;
    let slices = shape.slices;
    let total_rows = matrix.rows.len() + slices;
    let n = matrix.processors as usize;
    // Useful rows and A^r.
    let useful: Vec<usize> = (0..total_rows)
        .filter(|&r| matrix.free(r).len() >= np)
        .collect();
    let mut a_r = vec![0usize; n];
    for &r in &useful {
        for p in matrix.free(r) {
            a_r[p as usize] += 1;
        }
    }
    let mut ranked: Vec<u32> = (0..n as u32).collect();
    ranked.sort_by(|&a, &b| a_r[b as usize].cmp(&a_r[a as usize]).then(a.cmp(&b)));
    ranked.truncate(np + config.alpha);
    // D^p: each useful row's kept processors, by rank.
    let kept = |r: usize| -> Vec<u32> {
        (ranked.iter().copied())
            .filter(|&p| {
                matrix
                    .rows
                    .get(r)
                    .map_or(true, |row| row[p as usize].is_none())
            })
            .collect()
    };
    let d_p: Vec<(usize, Vec<u32>)> = (useful.iter())
        .filter_map(|&r| {
            let k = kept(r);
            (k.len() >= np).then_some((r, k))
        })
        .collect();
    let before = Neighbours::new(matrix);
    let existing: f64 = (0..shapes.len())
        .filter(|&j| j != job && !current[j].is_empty())
        .map(|j| {
            let s = shapes[j];
            s.slices as f64 * config.time_slice
                - s.t_w(config)
                - current[j].iter().map(|(_, l)| l).sum::<f64>()
        })
        .sum();
    let mut best: Option<(f64, Placement)> = None;
    // Membership of each useful row's kept processors, for matching in O(N_i^p) per row.
    let members: Vec<Vec<bool>> = d_p
        .iter()
        .map(|(_, k)| {
            let mut m = vec![false; n];
            for &p in k {
                m[p as usize] = true;
            }
            m
        })
        .collect();
    for (t, (target, target_kept)) in d_p.iter().enumerate() {
        for combo in combinations(target_kept, np, config.max_combinations) {
            // Every other useful row by how many of the combination's processors it holds: the
            // exact ones first in row order, then the others by matches.
            let mut others: Vec<(bool, usize, usize)> = (0..d_p.len())
                .filter(|&o| o != t)
                .map(|o| {
                    let matches = combo.iter().filter(|&&p| members[o][p as usize]).count();
                    (matches == np, matches, o)
                })
                .collect();
            others.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
            let mut config_rows = vec![(*target, combo.clone())];
            for &(_, _, o) in others.iter().take(slices.saturating_sub(1)) {
                // Matching processors keep their process; the others take the row's other
                // kept processors, best ranked first.
                let (r, k) = &d_p[o];
                let mut spare = k.iter().copied().filter(|p| !combo.contains(p));
                let procs: Vec<u32> = combo
                    .iter()
                    .map(|&p| {
                        if members[o][p as usize] {
                            p
                        } else {
                            spare
                                .next()
                                .expect("a useful row has N_i^p kept processors")
                        }
                    })
                    .collect();
                config_rows.push((*r, procs));
            }
            config_rows.sort_by_key(|(r, _)| *r);
            // New rows are appended right after the last existing row, whichever fresh index
            // the configuration picked.
            let mut next_new = matrix.rows.len();
            for (r, _) in config_rows.iter_mut() {
                if *r >= matrix.rows.len() {
                    *r = next_new;
                    next_new += 1;
                }
            }
            let placement = Placement { rows: config_rows };
            let value = fitness(matrix, &before, shapes, existing, job, &placement, config);
            if best.as_ref().map_or(true, |(b, _)| value > *b) {
                best = Some((value, placement));
            }
        }
    }
    best.map(|(_, p)| p)
        .expect("the new rows are always useful, so some configuration exists")
}

/// The fitness of a configuration (§3.2.4): the total relative progress of all jobs in one
/// iteration of the matrix, `T_ρ^C = (1 / N_M^r) · Σ_i T_ρ^i`, with
/// `T_ρ^i = N_i^s · T^s − (T_c^i + T_m^i + T_w^i)`. `existing` is `Σ T_ρ^j` of the other jobs
/// before the insertion; the insertion adds the new job's `T_ρ^i` and takes off the context
/// switches it causes: an occupied cell whose processor ran the same process just before now
/// runs the new job in between.
pub fn fitness(
    matrix: &TraceMatrix,
    before: &Neighbours,
    shapes: &[JobShape],
    existing: f64,
    job: usize,
    placement: &Placement,
    config: &Config,
) -> f64 {
    let shape = shapes[job];
    let np = shape.processors.max(1) as f64;
    let rows_after = placement
        .rows
        .iter()
        .map(|(r, _)| r + 1)
        .max()
        .unwrap_or(0)
        .max(matrix.rows.len());
    let multi = placement.rows.len() > 1;
    let mut switches = 0usize;
    let mut migrations = 0usize;
    let mut others_lost = 0.0;
    // The new job's own cells on each processor: (row, process).
    let mut own_cells: Vec<Vec<(usize, u32)>> = vec![Vec::new(); matrix.processors as usize];
    for (q, ps) in &placement.rows {
        for (k, &p) in ps.iter().enumerate() {
            own_cells[p as usize].push((*q, k as u32));
        }
    }
    for (i, (r, procs)) in placement.rows.iter().enumerate() {
        let previous = &placement.rows[(i + placement.rows.len() - 1) % placement.rows.len()];
        for (k, &p) in procs.iter().enumerate() {
            if previous.1[k] != p {
                migrations += 1;
            }
            let own = &own_cells[p as usize];
            // Before (r, p): the nearer of the existing cell and the new job's own cells.
            let pred_existing = before.before(p, *r, rows_after);
            let pred_own = nearest_before(own, *r, rows_after);
            let pred_is_self = match (pred_existing, pred_own) {
                (Some((d1, _)), Some((d2, k2))) if d2 <= d1 => k2 == k as u32,
                (None, Some((_, k2))) => k2 == k as u32,
                _ => false,
            };
            if multi && !pred_is_self {
                switches += 1;
            }
            // After (r, p): an existing cell that followed its own process now follows us.
            if let Some((d1, cell, cell_row)) = before.after(p, *r, rows_after) {
                let own_after = nearest_after(own, *r, rows_after);
                let ours_closer = own_after.is_some_and(|d2| d2 < d1);
                let s = shapes[cell.job];
                if !ours_closer && s.slices > 1 {
                    if let Some((_, prev)) = before.before(p, cell_row, rows_after) {
                        if prev == cell {
                            others_lost += config.context_switch / s.processors.max(1) as f64;
                        }
                    }
                }
            }
        }
    }
    let t_c = switches as f64 * config.context_switch / np;
    let t_m = migrations as f64 * config.migration / np;
    let t_rho = placement.rows.len() as f64 * config.time_slice - (t_c + t_m + shape.t_w(config));
    (existing - others_lost + t_rho) / rows_after as f64
}

/// For cells of one processor at rows `cells`, the distance back from row `r` to the nearest
/// one strictly before it (cyclically over `rows` rows; a cell at `r` itself is `rows` back)
/// and its process.
fn nearest_before(cells: &[(usize, u32)], r: usize, rows: usize) -> Option<(usize, u32)> {
    cells
        .iter()
        .map(|&(q, k)| {
            let d = (r + rows - q) % rows;
            (if d == 0 { rows } else { d }, k)
        })
        .min_by_key(|(d, _)| *d)
}

/// The distance forward from row `r` to the nearest of `cells` strictly after it.
fn nearest_after(cells: &[(usize, u32)], r: usize, rows: usize) -> Option<usize> {
    cells
        .iter()
        .map(|&(q, _)| {
            let d = (q + rows - r) % rows;
            if d == 0 {
                rows
            } else {
                d
            }
        })
        .min()
}

/// Per processor, the occupied cells of the matrix before an insertion, by row.
pub struct Neighbours {
    cells: Vec<Vec<(usize, Cell)>>,
}

impl Neighbours {
    pub fn new(matrix: &TraceMatrix) -> Self {
        let mut cells = vec![Vec::new(); matrix.processors as usize];
        for (r, row) in matrix.rows.iter().enumerate() {
            for (p, c) in row.iter().enumerate() {
                if let Some(c) = c {
                    cells[p].push((r, *c));
                }
            }
        }
        Neighbours { cells }
    }

    /// The nearest occupied cell strictly before row `r` on processor `p` (cyclically over
    /// `rows` rows): its distance back and its process.
    fn before(&self, p: u32, r: usize, rows: usize) -> Option<(usize, Cell)> {
        let v = &self.cells[p as usize];
        if v.is_empty() {
            return None;
        }
        let i = v.partition_point(|(q, _)| *q < r);
        let (q, c) = if i > 0 { v[i - 1] } else { *v.last().unwrap() };
        let d = (r + rows - q) % rows;
        Some((if d == 0 { rows } else { d }, c))
    }

    /// The nearest occupied cell strictly after row `r` on processor `p`: its distance, its
    /// process and its row.
    fn after(&self, p: u32, r: usize, rows: usize) -> Option<(usize, Cell, usize)> {
        let v = &self.cells[p as usize];
        if v.is_empty() {
            return None;
        }
        let i = v.partition_point(|(q, _)| *q <= r);
        let (q, c) = if i < v.len() { v[i] } else { v[0] };
        let d = (q + rows - r) % rows;
        Some((if d == 0 { rows } else { d }, c, q))
    }
}

/// `choose`-combinations of `items` (ranked best first), at most `limit` of them: all of them
/// but `items.len() − choose` left out, the worst ranked left out first.
fn combinations(items: &[u32], choose: usize, limit: usize) -> Vec<Vec<u32>> {
    let n = items.len();
    let drop = n.saturating_sub(choose);
    // Positions in the list reversed (0 = worst ranked) of the items left out, in
    // lexicographic order.
    let mut leave: Vec<usize> = (0..drop).collect();
    let mut out = Vec::new();
    loop {
        out.push(
            (0..n)
                .filter(|i| !leave.contains(&(n - 1 - i)))
                .map(|i| items[i])
                .collect(),
        );
        if out.len() >= limit.max(1) {
            break;
        }
        // The next combination of positions: bump the last position that can move.
        let Some(k) = (0..drop).rev().find(|&k| leave[k] < n - drop + k) else {
            break;
        };
        leave[k] += 1;
        for m in k + 1..drop {
            leave[m] = leave[m - 1] + 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combinations_leave_the_worst_ranked_out_first() {
        let c = combinations(&[10, 11, 12, 13], 2, 100);
        assert_eq!(c.len(), 6);
        assert_eq!(c[0], vec![10, 11]);
        assert!(c.contains(&vec![12, 13]));
        let mut sorted = c.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 6);
        assert_eq!(combinations(&[1, 2, 3], 3, 10), vec![vec![1, 2, 3]]);
        assert_eq!(combinations(&[1, 2, 3, 4], 2, 3).len(), 3);
    }

    #[test]
    fn first_fit_takes_the_first_row_with_room() {
        // Figure 3.1 on 4 processors: rows with 1 and 2 free; a job of 2 goes to the second.
        let mut m = TraceMatrix::new(4);
        m.apply(
            0,
            &Placement {
                rows: vec![(0, vec![0, 1, 2])],
            },
        );
        m.apply(
            1,
            &Placement {
                rows: vec![(1, vec![0, 1])],
            },
        );
        assert_eq!(
            m.first_fit(2),
            Placement {
                rows: vec![(1, vec![2, 3])]
            }
        );
        assert_eq!(
            m.first_fit(3),
            Placement {
                rows: vec![(2, vec![0, 1, 2])]
            }
        );
        assert_eq!(
            m.first_fit(1),
            Placement {
                rows: vec![(0, vec![3])]
            }
        );
    }

    #[test]
    fn compaction_drops_empty_rows() {
        let mut m = TraceMatrix::new(2);
        m.apply(
            0,
            &Placement {
                rows: vec![(0, vec![0])],
            },
        );
        m.apply(
            1,
            &Placement {
                rows: vec![(1, vec![0, 1])],
            },
        );
        m.apply(
            2,
            &Placement {
                rows: vec![(2, vec![1])],
            },
        );
        m.remove(1);
        assert_eq!(m.compact(), vec![Some(0), None, Some(1)]);
        assert_eq!(m.rows.len(), 2);
        assert_eq!(m.jobs_in_row(1), vec![2]);
    }
}
