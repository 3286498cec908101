//! Relative-power redistribution (seed 001, Rencuzogullari & Dwarkadas, §3.2 and Fig. 3).
//!
//! Every rank times its share of a parallel region each iteration and hands the time to
//! [`Rebalancer::step`]. The times of all ranks are summed over a window of iterations (to
//! smooth out transient spikes); at the end of a window each rank's relative power is the rows
//! it ran divided by its time, normalised to sum to 1 (Fig. 3: a power divided by its task time,
//! then normalised; the rows stand for the power the distribution was made for). Rows are
//! redistributed only when the spread between the smallest and the largest power has changed
//! by more than the hysteresis factor since the last redistribution (10 % in the seed), and
//! (ours) when the move promises the slowest rank a region time at least 10 % shorter: the
//! new counts are proportional to the powers.
//!
//! Where the rows go depends on how the region reads them ([`Access`], the structure file's
//! classification): a *stencil* keeps every rank's rows contiguous and in rank order, so only
//! the boundaries between neighbours move; *independent* rows move from the slowest ranks
//! straight to the fastest, each rank's rows becoming a list of pieces. The rows' data really
//! move, over the communicator ([`Change::move_rows`]).
//!
//! The decision is made from all-reduced times, so every rank computes the same one: no rank
//! moves rows another does not expect.

use std::ops::Range;

use crate::comm::{Comm, CommError, CommExt, Element, ReduceOp};
use crate::distribution::{largest_remainder, Distribution};
pub use crate::format::Access;
use crate::format::Solver;
use crate::ooc::{Element as OocElement, OocArray, OocError, Part};

/// How the [`Rebalancer`] decides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RebalanceConfig {
    /// Iterations whose times are summed before the powers are computed again (at least 1).
    pub window: u32,
    /// Iterations not counted at the start and after each move: the first sweep over new rows
    /// pays for first touches (page faults, cold caches) that say nothing about the node.
    pub settle: u32,
    /// How much the spread of the relative powers (largest − smallest, as a share of the mean
    /// power) must change from its value at the last redistribution for rows to move again.
    pub hysteresis: f64,
    /// How much shorter (as a share) the slowest rank's region time must be predicted to get,
    /// at the measured powers, for rows to move.
    pub min_gain: f64,
    /// How the region reads its rows.
    pub access: Access,
}

impl RebalanceConfig {
    /// The seed's settings: a window of 3 iterations, 10 % hysteresis; one iteration settles.
    pub fn new(access: Access) -> RebalanceConfig {
        RebalanceConfig {
            window: 3,
            settle: 1,
            hysteresis: 0.10,
            min_gain: 0.10,
            access,
        }
    }

    /// The settings for `solver`'s distributed loop, as the structure file describes it:
    /// stencil when any of its stages reads neighbouring rows, else independent.
    pub fn for_solver(solver: &Solver) -> RebalanceConfig {
        let stencil = solver
            .sections
            .iter()
            .flat_map(|s| s.stages())
            .any(|(stage, _)| stage.access == Access::Stencil);
        RebalanceConfig::new(if stencil {
            Access::Stencil
        } else {
            Access::Independent
        })
    }
}

/// Which global rows each rank holds, in the order it holds them locally: for each rank, a
/// list of disjoint ranges in increasing order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pieces: Vec<Vec<Range<u64>>>,
}

impl Layout {
    /// GEN_BLOCK: rank `r` holds the `counts[r]` rows after those of ranks `0..r`.
    pub fn gen_block(counts: &[u64]) -> Layout {
        let pieces = Distribution::new(counts.to_vec())
            .ranges()
            .into_iter()
            .map(|r| if r.is_empty() { Vec::new() } else { vec![r] })
            .collect();
        Layout { pieces }
    }

    /// The number of ranks.
    pub fn ranks(&self) -> usize {
        self.pieces.len()
    }

    /// The rows `rank` holds, as increasing disjoint ranges.
    pub fn pieces(&self, rank: usize) -> &[Range<u64>] {
        &self.pieces[rank]
    }

    /// The number of rows each rank holds.
    pub fn counts(&self) -> Vec<u64> {
        self.pieces
            .iter()
            .map(|p| p.iter().map(|r| r.end - r.start).sum())
            .collect()
    }

    /// `rank`'s rows as one range, when they are contiguous (always, for a stencil's layout;
    /// an empty range at the rank's place for a rank without rows).
    pub fn range(&self, rank: usize) -> Option<Range<u64>> {
        match self.pieces[rank].as_slice() {
            [] => {
                let at = self.pieces[..rank]
                    .iter()
                    .rev()
                    .find_map(|p| p.last().map(|r| r.end))
                    .unwrap_or(0);
                Some(at..at)
            }
            [one] => Some(one.clone()),
            _ => None,
        }
    }

    /// The rows of `rank` that `other` holds in `next`, in increasing order.
    fn overlap(&self, rank: usize, next: &Layout, other: usize) -> Vec<Range<u64>> {
        let mut out = Vec::new();
        for a in &self.pieces[rank] {
            for b in &next.pieces[other] {
                let (start, end) = (a.start.max(b.start), a.end.min(b.end));
                if start < end {
                    out.push(start..end);
                }
            }
        }
        out.sort_by_key(|r| r.start);
        out
    }
}

/// The relative powers and the hysteresis state of seed 001's Fig. 3. Every rank holds the same
/// one: it is fed the all-reduced times.
#[derive(Debug, Clone, PartialEq)]
pub struct Powers {
    config: RebalanceConfig,
    /// Normalised relative powers, one per rank.
    relative: Vec<f64>,
    /// The spread of the powers the current distribution was made for.
    spread_at_last_move: f64,
    /// Each rank's summed region time over the current window.
    times: Vec<f64>,
    /// Iterations in the current window.
    seen: u32,
    /// Iterations still to skip before the window starts.
    settling: u32,
}

impl Powers {
    /// Powers for a run that starts with `counts` rows per rank: the initial powers are the
    /// distribution's (seed: "initialized according to the task distribution strategy used").
    pub fn new(counts: &[u64], config: RebalanceConfig) -> Powers {
        let total: u64 = counts.iter().sum();
        let relative: Vec<f64> = counts
            .iter()
            .map(|&n| {
                if total == 0 {
                    1.0 / counts.len() as f64
                } else {
                    n as f64 / total as f64
                }
            })
            .collect();
        Powers {
            config,
            spread_at_last_move: spread(&relative),
            relative,
            times: vec![0.0; counts.len()],
            seen: 0,
            settling: config.settle,
        }
    }

    /// The current normalised relative powers.
    pub fn relative(&self) -> &[f64] {
        &self.relative
    }

    /// Adds one iteration's region time of every rank (`times`), run with `counts` rows per
    /// rank. At the end of a window the powers are computed again; the new rows per rank are
    /// returned when the spread of the powers moved past the hysteresis.
    pub fn observe(&mut self, times: &[f64], counts: &[u64]) -> Option<Vec<u64>> {
        if self.settling > 0 {
            self.settling -= 1;
            return None;
        }
        for (sum, t) in self.times.iter_mut().zip(times) {
            *sum += t.max(0.0);
        }
        self.seen += 1;
        if self.seen < self.config.window.max(1) {
            return None;
        }
        // Fig. 3: power = rows per second of region time, normalised. A rank without rows or
        // without measurable time keeps its power.
        let mut raw: Vec<f64> = self
            .times
            .iter()
            .zip(counts)
            .map(|(&t, &n)| {
                if n > 0 && t > 0.0 {
                    n as f64 / t
                } else {
                    f64::NAN
                }
            })
            .collect();
        self.times.iter_mut().for_each(|t| *t = 0.0);
        self.seen = 0;
        let measured_sum: f64 = raw.iter().filter(|p| p.is_finite()).sum();
        if !raw.iter().any(|p| p.is_finite()) {
            return None;
        }
        // Ranks without a measurement keep their share of the total power: scale the measured
        // ones so that together they keep theirs.
        let kept_share: f64 = raw
            .iter()
            .zip(&self.relative)
            .filter(|(p, _)| !p.is_finite())
            .map(|(_, &old)| old)
            .sum();
        for (p, &old) in raw.iter_mut().zip(&self.relative) {
            *p = if p.is_finite() {
                *p / measured_sum * (1.0 - kept_share)
            } else {
                old
            };
        }
        self.relative = raw;
        let now = spread(&self.relative);
        if (now - self.spread_at_last_move).abs() <= self.config.hysteresis {
            return None;
        }
        // A move costs a round of data exchange: it must also promise a region time shorter
        // by `min_gain` at the powers just measured (the spread alone moves on noise when the
        // ranks are balanced: ±3 % per rank is a spread change of 0.12).
        let next = keep_one_row(
            largest_remainder(counts.iter().sum(), &self.relative),
            counts,
        );
        let slowest = |rows: &[u64]| {
            rows.iter()
                .zip(&self.relative)
                .map(|(&n, &p)| if n == 0 { 0.0 } else { n as f64 / p })
                .fold(0.0, f64::max)
        };
        if slowest(&next) > (1.0 - self.config.min_gain) * slowest(counts) {
            return None;
        }
        self.spread_at_last_move = now;
        self.settling = self.config.settle;
        Some(next)
    }
}

/// Every rank that holds rows keeps at least one, taken from the rank given the most: a rank
/// without rows has no time to measure, so its power could never be seen to recover. (A rank
/// the distribution gave no rows keeps none.)
fn keep_one_row(mut next: Vec<u64>, now: &[u64]) -> Vec<u64> {
    for r in 0..next.len() {
        if now[r] > 0 && next[r] == 0 {
            let Some(donor) = (0..next.len())
                .filter(|&d| next[d] > 1)
                .max_by_key(|&d| (next[d], std::cmp::Reverse(d)))
            else {
                break;
            };
            next[donor] -= 1;
            next[r] = 1;
        }
    }
    next
}

/// Largest minus smallest power, as a share of the mean power.
fn spread(relative: &[f64]) -> f64 {
    if relative.is_empty() {
        return 0.0;
    }
    let (lo, hi) = relative
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &p| {
            (lo.min(p), hi.max(p))
        });
    let mean = relative.iter().sum::<f64>() / relative.len() as f64;
    if mean > 0.0 {
        (hi - lo) / mean
    } else {
        0.0
    }
}

/// A redistribution: the layout before and after. Move every distributed array's rows with
/// [`Change::move_rows`] before the next iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Where the rows were.
    pub before: Layout,
    /// Where they are now.
    pub after: Layout,
}

impl Change {
    /// Moves this rank's rows of one distributed array from the old layout to the new:
    /// `rows` holds the rank's rows in its old local order, `row_len` elements each, and
    /// afterwards holds its rows of the new layout. A collective call: every rank calls it for
    /// the same arrays in the same order.
    pub fn move_rows<T: Element + Default>(
        &self,
        comm: &dyn Comm,
        rows: &mut Vec<T>,
        row_len: usize,
    ) -> Result<(), CommError> {
        let me = comm.rank();
        let held: u64 = self.before.counts()[me];
        if rows.len() as u64 != held * row_len as u64 {
            return Err(CommError::InvalidArgument {
                operation: "Change::move_rows",
                problem: format!(
                    "rank {me} passed {} elements, expected its {held} rows of {row_len}",
                    rows.len()
                ),
            });
        }
        let (recv, sources) = self.exchange(comm, row_len, |local, out| {
            out.extend_from_slice(
                &rows[local.start as usize * row_len..local.end as usize * row_len],
            );
            Ok::<_, CommError>(())
        })?;
        let mut next = Vec::with_capacity(self.after.counts()[me] as usize * row_len);
        for source in sources {
            match source {
                Source::Own(local) => next.extend_from_slice(
                    &rows[local.start as usize * row_len..local.end as usize * row_len],
                ),
                Source::Arrived(elements) => next.extend_from_slice(&recv[elements]),
            }
        }
        *rows = next;
        Ok(())
    }

    /// [`Change::move_rows`] for an out-of-core array: the rows leaving this rank are read
    /// from its blocks, the array is reshaped to its new rows ([`OocArray::reshape`]: its
    /// placement is decided again, and out of core its blocks are rewritten). A collective
    /// call, like `move_rows`.
    pub fn move_array<T>(&self, comm: &dyn Comm, array: &mut OocArray<T>) -> Result<(), MoveError>
    where
        T: OocElement + Element + Default,
    {
        let me = comm.rank();
        let row_len = array.row_len();
        let held = self.before.counts()[me];
        if array.rows() != held {
            return Err(MoveError::Comm(CommError::InvalidArgument {
                operation: "Change::move_array",
                problem: format!(
                    "array `{}` on rank {me} has {} rows, expected the {held} of the old layout",
                    array.name(),
                    array.rows()
                ),
            }));
        }
        let (recv, sources) = self.exchange(comm, row_len, |local, out| {
            array.read_rows(local, out).map_err(MoveError::from)
        })?;
        let parts: Vec<Part<'_, T>> = sources
            .into_iter()
            .map(|source| match source {
                Source::Own(local) => Part::Own(local),
                Source::Arrived(elements) => Part::Given(&recv[elements]),
            })
            .collect();
        array.reshape(&parts)?;
        Ok(())
    }

    /// The exchange both moves make: `read(local, out)` appends this rank's old local rows
    /// `local` to `out`. Every rank sends each other rank the rows of its own that the other
    /// holds next (in increasing order, one `all_to_all_varcount`); returns what arrived and
    /// where each run of this rank's new rows comes from, in the new local order.
    fn exchange<T, E>(
        &self,
        comm: &dyn Comm,
        row_len: usize,
        mut read: impl FnMut(Range<u64>, &mut Vec<T>) -> Result<(), E>,
    ) -> Result<(Vec<T>, Vec<Source>), E>
    where
        T: Element + Default,
        E: From<CommError>,
    {
        let (me, size) = (comm.rank(), comm.size());
        let mut send = Vec::new();
        let mut send_counts = vec![0; size];
        for (q, count) in send_counts.iter_mut().enumerate() {
            if q == me {
                continue;
            }
            for piece in self.before.overlap(me, &self.after, q) {
                let before = send.len();
                read(local_range(self.before.pieces(me), &piece), &mut send)?;
                *count += send.len() - before;
            }
        }
        let recv_counts = self.recv_counts(me, row_len);
        let mut recv = vec![T::default(); recv_counts.iter().sum()];
        comm.all_to_all_varcount(&send, &send_counts, &mut recv, &recv_counts)?;
        // Each new row comes from this rank's old rows or from the block of the rank that held
        // it, whose rows arrived in increasing order.
        let mut offsets = starts(&recv_counts);
        let mut sources = Vec::new();
        for piece in self.after.pieces(me) {
            let mut row = piece.start;
            while row < piece.end {
                let (owner, owned) = owner_of(&self.before, row);
                let end = owned.end.min(piece.end);
                if owner == me {
                    sources.push(Source::Own(local_range(
                        self.before.pieces(me),
                        &(row..end),
                    )));
                } else {
                    let n = (end - row) as usize * row_len;
                    sources.push(Source::Arrived(offsets[owner]..offsets[owner] + n));
                    offsets[owner] += n;
                }
                row = end;
            }
        }
        Ok((recv, sources))
    }

    /// Elements this rank receives from each rank, for arrays of `row_len`.
    fn recv_counts(&self, me: usize, row_len: usize) -> Vec<usize> {
        (0..self.before.ranks())
            .map(|q| {
                if q == me {
                    0
                } else {
                    self.before
                        .overlap(q, &self.after, me)
                        .iter()
                        .map(|r| (r.end - r.start) as usize)
                        .sum::<usize>()
                        * row_len
                }
            })
            .collect()
    }
}

/// Where a run of a rank's new rows comes from.
enum Source {
    /// These of its old local rows.
    Own(Range<u64>),
    /// These elements of what arrived.
    Arrived(Range<usize>),
}

/// Where each rank's block starts in a buffer of blocks of `counts` elements.
fn starts(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0, |at, &n| {
            let start = *at;
            *at += n;
            Some(start)
        })
        .collect()
}

/// Moving an out-of-core array's rows failed.
#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    /// The exchange failed, or the array does not match the old layout.
    #[error(transparent)]
    Comm(#[from] CommError),
    /// Reading the leaving rows or writing the new blocks failed.
    #[error(transparent)]
    Ooc(#[from] OocError),
}

/// The local rows (positions in the rank's local order) of `global`, which lies inside one of
/// `pieces`.
fn local_range(pieces: &[Range<u64>], global: &Range<u64>) -> Range<u64> {
    let mut before = 0;
    for p in pieces {
        if p.start <= global.start && global.end <= p.end {
            let start = before + (global.start - p.start);
            return start..start + (global.end - global.start);
        }
        before += p.end - p.start;
    }
    unreachable!("a row range outside the rank's pieces")
}

/// The rank holding global row `row` in `layout`, and the piece it lies in.
fn owner_of(layout: &Layout, row: u64) -> (usize, Range<u64>) {
    for (rank, pieces) in layout.pieces.iter().enumerate() {
        if let Some(p) = pieces.iter().find(|p| p.contains(&row)) {
            return (rank, p.clone());
        }
    }
    unreachable!("row {row} is held by no rank")
}

/// The next layout for `counts` rows per rank, from `now`.
fn relayout(now: &Layout, counts: &[u64], access: Access, powers: &[f64]) -> Layout {
    match access {
        Access::Stencil => Layout::gen_block(counts),
        Access::Independent => {
            // Surplus rows leave the slowest ranks first, from the end of their rows, and go
            // to the fastest ranks first.
            let held = now.counts();
            let mut pieces = now.pieces.clone();
            let mut by_power: Vec<usize> = (0..held.len()).collect();
            by_power.sort_by(|&a, &b| powers[a].total_cmp(&powers[b]).then(a.cmp(&b)));
            let mut moved: Vec<Range<u64>> = Vec::new();
            for &r in &by_power {
                let mut surplus = held[r].saturating_sub(counts[r]);
                while surplus > 0 {
                    let Some(last) = pieces[r].pop() else { break };
                    let n = (last.end - last.start).min(surplus);
                    if n < last.end - last.start {
                        pieces[r].push(last.start..last.end - n);
                    }
                    moved.push(last.end - n..last.end);
                    surplus -= n;
                }
            }
            for &r in by_power.iter().rev() {
                let mut deficit = counts[r].saturating_sub(held[r]);
                while deficit > 0 {
                    let Some(piece) = moved.pop() else { break };
                    let n = (piece.end - piece.start).min(deficit);
                    if n < piece.end - piece.start {
                        moved.push(piece.start + n..piece.end);
                    }
                    pieces[r].push(piece.start..piece.start + n);
                    deficit -= n;
                }
            }
            for p in &mut pieces {
                p.sort_by_key(|r| r.start);
                // Adjacent pieces become one.
                let mut merged: Vec<Range<u64>> = Vec::with_capacity(p.len());
                for r in p.drain(..) {
                    match merged.last_mut() {
                        Some(last) if last.end == r.start => last.end = r.end,
                        _ => merged.push(r),
                    }
                }
                *p = merged;
            }
            Layout { pieces }
        }
    }
}

/// Seed 001's load balancer for one parallel region: call [`Rebalancer::step`] once per
/// iteration with this rank's time in the region, and move the arrays when it returns a
/// [`Change`].
///
/// ```
/// use mheta_runtime::adapt::{Access, RebalanceConfig, Rebalancer};
/// use mheta_runtime::{launch, Args};
///
/// // Rank 1 is three times slower than rank 0 in its region (emulated here by its times).
/// // Four iterations: the first settles (not counted), the next three make a window.
/// let args = Args::try_parse_from(["prog", "--ranks", "2", "--rows", "8", "--iterations", "4"])?;
/// let rows = launch(&args, |ctx| {
///     let mut balancer = Rebalancer::new(ctx.distribution(), RebalanceConfig::new(Access::Stencil));
///     let range = balancer.range(ctx.rank()).unwrap();
///     let mut x: Vec<f64> = (range.start..range.end).map(|r| r as f64).collect();
///     for _ in 0..ctx.iterations() {
///         let time = x.len() as f64 * if ctx.rank() == 1 { 3.0 } else { 1.0 };
///         if let Some(change) = balancer.step(ctx.comm(), time)? {
///             change.move_rows(ctx.comm(), &mut x, 1)?;
///         }
///     }
///     Ok::<_, mheta_runtime::CommError>(x)
/// })?;
/// // Powers 3 : 1, so 6 rows and 2, and each rank holds its new rows' data.
/// assert_eq!(rows, vec![vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0], vec![6.0, 7.0]]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Rebalancer {
    powers: Powers,
    layout: Layout,
    moves: u32,
}

impl Rebalancer {
    /// A balancer for a region whose rows start distributed as `counts` (GEN_BLOCK, e.g.
    /// `ctx.distribution()`).
    pub fn new(counts: &[u64], config: RebalanceConfig) -> Rebalancer {
        Rebalancer {
            powers: Powers::new(counts, config),
            layout: Layout::gen_block(counts),
            moves: 0,
        }
    }

    /// Where the rows are now.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// `rank`'s rows as one range, while they are contiguous (always under a stencil).
    pub fn range(&self, rank: usize) -> Option<Range<u64>> {
        self.layout.range(rank)
    }

    /// How many times rows have moved.
    pub fn moves(&self) -> u32 {
        self.moves
    }

    /// The current relative powers.
    pub fn powers(&self) -> &[f64] {
        self.powers.relative()
    }

    /// One iteration of the region took this rank `region_s` seconds. A collective call (one
    /// all-reduce of one value per rank). Returns the redistribution to carry out, if the
    /// powers changed enough.
    pub fn step(&mut self, comm: &dyn Comm, region_s: f64) -> Result<Option<Change>, CommError> {
        let mut mine = vec![0.0; comm.size()];
        mine[comm.rank()] = if region_s.is_finite() { region_s } else { 0.0 };
        let mut times = vec![0.0; comm.size()];
        comm.all_reduce(&mine, &mut times, ReduceOp::Sum)?;
        Ok(self.observe(&times))
    }

    /// [`Rebalancer::step`] with every rank's time given: the decision alone, without the
    /// communicator.
    pub fn observe(&mut self, times: &[f64]) -> Option<Change> {
        let counts = self.layout.counts();
        let next = self.powers.observe(times, &counts)?;
        if next == counts {
            return None;
        }
        let after = relayout(
            &self.layout,
            &next,
            self.powers.config.access,
            self.powers.relative(),
        );
        let before = std::mem::replace(&mut self.layout, after.clone());
        self.moves += 1;
        Some(Change { before, after })
    }
}

#[cfg(test)]
mod tests;
