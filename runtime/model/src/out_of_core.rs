//! Out-of-core arrays (seed §5.1, §5.3.1): which arrays stay in core on a node, how many
//! in-core pieces the others are processed in, and what their I/O costs (Eq. 5.1, Eq. 5.2 and
//! the unrolled-prefetch form of Fig. 5.7).
//!
//! The heuristic (§5.3.1: "arrays with smaller sizes or those that are accessed more frequently
//! are preferred to be kept in core"):
//!
//! - Arrays the program never reads or writes through explicit I/O are *resident*: they live in
//!   memory whatever happens and take their `W · bytes_per_row` from it first.
//! - The other arrays are ranked once, at build time, as the runtime ranks them: by bytes per
//!   use with every use counted once, so the smaller row first, equal rows in the order the
//!   program registered them (the measurements' `arrays`). The seed prefers arrays "accessed
//!   more frequently", but the runtime does not know the access counts; ranking by the
//!   structure's accesses made the model keep `b` in core where Jacobi's program kept `a`, and
//!   compute at the rate of a placement the program never made.
//! - For a node holding `W` rows, the candidates are "the first k ranked arrays stay in core, the
//!   rest form β", for every k whose in-core arrays fit in the free memory with one row set aside
//!   for each array of β. The memory left over is shared by the arrays of β row by row: the
//!   in-core local array (ICLA) holds `floor(free / Σ_{m∈β} bytes_per_row(m))` rows (at least
//!   one) of each, so all arrays of β are processed in the same number of pieces
//!   `N_L = ceil(M_β / M_ι) = ceil(W / icla_rows)`.
//! - The candidate with the least I/O is chosen, I/O estimated per array as
//!   `N_L · (Σ per-call overheads) + M_β · (Σ per-byte costs)` over the stages that access it
//!   (Eq. 5.1 without prefetch masking, the read and write terms weighted by the shares
//!   `f_r(m)`, `f_w(m)` of [`t_psi`]); ties keep more arrays in core.
//! - The choice is the runtime's own (`ooc::policy::choose`), so the model predicts the
//!   placement the program will run with; the runtime estimates the I/O from its node's disk.
//!
//! Choosing by estimated I/O rather than greedily matters: keeping one array in core can leave
//! the others an ICLA of a few rows and thousands of disk calls. And since every candidate's cost
//! grows with `W` and fewer candidates fit as `W` grows, the chosen I/O never decreases when a
//! node gets more rows, which the monotone searches (GBS, `exact`) rely on.

/// A distributed array, as the model sees it. Arrays are stored in priority order.
#[derive(Debug, Clone)]
pub(crate) struct ArrayCost {
    pub name: String,
    pub bytes_per_row: f64,
    /// Never accessed through explicit I/O: always in memory.
    pub resident: bool,
}

/// The memory and disk of one node (measured, adjusted to the target cluster).
#[derive(Debug, Clone)]
pub(crate) struct NodeMemory {
    /// Memory for distributed data: the node's memory minus replicated arrays, bytes.
    pub memory_bytes: f64,
    /// `O_r`, `O_w`, `O_A`: per-call read, write and asynchronous-issue overheads, seconds.
    pub o_r: f64,
    pub o_w: f64,
    pub o_a: f64,
    /// `r(m)`, `w(m)` per array (indexed like the model's arrays): seconds per byte.
    pub read_per_byte: Vec<f64>,
    pub write_per_byte: Vec<f64>,
    /// Seconds per byte written to an in-core array (a memory copy), at the target's CPU.
    pub copy_per_byte: f64,
    /// Per array, summed over the stages that access it (times their passes per iteration):
    /// per-piece overheads (`O_r`, `O_A`, `O_w`) and per-byte costs (`r(m)`, `w(m)`), for the
    /// heuristic's I/O estimate.
    pub io_per_piece: Vec<f64>,
    pub io_per_byte: Vec<f64>,
}

/// Which arrays are out of core on one node for one distribution.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct OocState {
    /// Bit `m` set: array `m` is in β.
    pub mask: u64,
    /// `N_L`: pieces each out-of-core array is processed in (0 when everything is in core).
    pub n_l: u64,
    /// Rows the node holds.
    pub rows: u64,
}

impl OocState {
    pub fn is_out_of_core(&self, array: usize) -> bool {
        self.mask & (1 << array) != 0
    }

    /// The node holds all its arrays in core.
    pub fn in_core(&self) -> bool {
        self.mask == 0
    }
}

/// Applies the heuristic to a node holding `rows` rows: the runtime's own choice
/// ([`mheta_runtime::ooc::choose`]), with this node's measured I/O costs as the estimate.
pub(crate) fn decide(arrays: &[ArrayCost], memory: &NodeMemory, rows: u64) -> OocState {
    let w = rows as f64;
    let resident: f64 = arrays
        .iter()
        .filter(|a| a.resident)
        .map(|a| w * a.bytes_per_row)
        .sum();
    let free = (memory.memory_bytes - resident).max(0.0);
    let candidates = || arrays.iter().enumerate().filter(|(_, a)| !a.resident);
    let choice = mheta_runtime::ooc::choose(free, candidates().count(), |j| {
        let (m, a) = candidates().nth(j).expect("j < the candidates' count");
        let io = mheta_runtime::ooc::IoEstimate {
            per_block_s: memory.io_per_piece[m],
            per_byte_s: memory.io_per_byte[m],
        };
        (rows, a.bytes_per_row, io)
    });
    let mask = candidates()
        .skip(choice.in_core)
        .fold(0u64, |mask, (m, _)| mask | 1 << m);
    if mask == 0 || rows == 0 || choice.icla_rows >= rows {
        return OocState {
            mask: 0,
            n_l: 0,
            rows,
        };
    }
    OocState {
        mask,
        n_l: rows.div_ceil(choice.icla_rows),
        rows,
    }
}

/// How a stage reads an out-of-core array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IoMode {
    /// Synchronous reads (Eq. 5.1).
    Sync,
    /// Every piece prefetched (Eq. 5.2).
    Prefetch,
    /// The unrolled loop of Fig. 5.7: the first piece read synchronously, the rest prefetched.
    Unrolled,
}

/// The per-piece quantities of `T_ψ(m)` for one array on one node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PieceCosts {
    /// `N_L(m)`.
    pub n_l: f64,
    /// `O_r`, `O_w`, `O_A`.
    pub o_r: f64,
    pub o_w: f64,
    pub o_a: f64,
    /// `T_r(m) = r(m) · M_ι(m)`; zero when the stage does not read `m`.
    pub t_r: f64,
    /// `T_w(m) = w(m) · M_ι(m)`; zero when the stage does not write `m` (read-only arrays).
    pub t_w: f64,
    /// `T_A`: computation overlapping one prefetch.
    pub t_a: f64,
}

/// `T_ψ(m)`, the I/O time of an out-of-core array in one stage.
///
/// `M_ι(m)` is taken as the *effective* ICLA, `M_β(m) / N_L(m)` (the mean piece actually read;
/// it equals the ICLA whenever the ICLA divides the local array), so `N_L · T_r` is the time to
/// read the local array once rather than `N_L` full ICLAs.
///
/// `read` and `write` are the shares `f_r(m)`, `f_w(m)` of the local array the stage reads and
/// writes per pass, at least 0 (a `bool` is a full pass, 1, or none, 0; above 1 when the stage
/// moves the array several times per pass, e.g. once per tile). The seed's equations
/// are the case `f_r = 1` (and `f_w = 1` unless `m` is read-only); the read part and the write
/// part of each equation are weighted by their share, so an array that is read in one iteration
/// and written in the next (two arrays swapping roles, `f_r = f_w = 1/2`) costs one pass per
/// iteration on average rather than a read pass plus a write pass.
pub(crate) fn t_psi(
    mode: IoMode,
    read: impl Into<f64>,
    write: impl Into<f64>,
    c: &PieceCosts,
) -> f64 {
    let (f_r, f_w) = (read.into(), write.into());
    // Eq. 5.1 note: a read-only array has O_w = T_w(m) = 0 (f_w = 0).
    let write_part = f_w * c.n_l * (c.o_w + c.t_w);
    let read_part = match mode {
        // Eq. 5.1: T_ψ(m) = N_L(m) · [(O_r + T_r(m)) + (O_w + T_w(m))].
        IoMode::Sync => c.n_l * (c.o_r + c.t_r),
        // Eq. 5.2: T_ψ(m) = N_L(m) · [(O_r + O_A + T_s(m)) + (O_w + T_w(m))],
        // T_s(m) = max(0, T_r(m) − T_A).
        IoMode::Prefetch => c.n_l * (c.o_r + c.o_a + t_s(c)),
        // Fig. 5.7: T_ψ(m) = [N_L(m) · (O_r + O_A + O_w + T_w(m))] + T_r(m) + [(N_L(m) − 1) · T_s(m)].
        IoMode::Unrolled => c.n_l * (c.o_r + c.o_a) + c.t_r + (c.n_l - 1.0) * t_s(c),
    };
    f_r * read_part + write_part
}

/// `T_s(m) = max(0, T_r(m) − T_A)`: the effective (unmasked) read latency of a prefetch.
fn t_s(c: &PieceCosts) -> f64 {
    (c.t_r - c.t_a).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every array costs 1 s per piece and 1e-3 s per byte of I/O.
    fn memory(bytes: f64) -> NodeMemory {
        NodeMemory {
            memory_bytes: bytes,
            o_r: 0.0,
            o_w: 0.0,
            o_a: 0.0,
            read_per_byte: vec![0.0; 3],
            write_per_byte: vec![0.0; 3],
            copy_per_byte: 0.0,
            io_per_piece: vec![1.0; 3],
            io_per_byte: vec![1e-3; 3],
        }
    }

    fn arrays(bpr: &[f64]) -> Vec<ArrayCost> {
        bpr.iter()
            .enumerate()
            .map(|(i, &b)| ArrayCost {
                name: format!("a{i}"),
                bytes_per_row: b,
                resident: false,
            })
            .collect()
    }

    #[test]
    fn heuristic_keeps_high_priority_arrays_in_core() {
        let a = arrays(&[8.0, 8.0]);
        // 100 rows × 8 B = 800 B each; 1000 B of memory. Candidates: k = 0 (both out: ICLA
        // 1000 / 16 = 62 rows, N_L = 2, I/O 2·(2 + 0.8) = 5.6) or k = 1 (first in core, the second
        // gets 200 B: ICLA 25 rows, N_L = 4, I/O 4 + 0.8 = 4.8). k = 1 wins.
        let s = decide(&a, &memory(1000.0), 100);
        assert_eq!(
            s,
            OocState {
                mask: 0b10,
                n_l: 4,
                rows: 100
            }
        );
        // Both fit.
        assert_eq!(decide(&a, &memory(1600.0), 100).mask, 0);
        // Neither fits: 500 B shared by 16 B per row: ICLA 31 rows, N_L = ceil(100 / 31) = 4.
        assert_eq!(
            decide(&a, &memory(500.0), 100),
            OocState {
                mask: 0b11,
                n_l: 4,
                rows: 100
            }
        );
    }

    #[test]
    fn heuristic_avoids_starving_the_icla() {
        // 100 rows of 8 B and 8 B; 801 B of memory. Keeping the first in core leaves 1 B: an
        // ICLA of one row and N_L = 100 (I/O 100 + 0.8). Putting both out: ICLA 50 rows,
        // N_L = 2 (I/O 2·(2 + 0.8) = 5.6). Both out wins.
        let s = decide(&arrays(&[8.0, 8.0]), &memory(801.0), 100);
        assert_eq!(
            s,
            OocState {
                mask: 0b11,
                n_l: 2,
                rows: 100
            }
        );
    }

    /// sliver-2.toml's node 0 under Block (Jacobi, 1000 rows of 8000 B per array, 8.02 MB):
    /// the model predicts the placement the runtime's store makes from its disk, not a cheaper
    /// one (before they shared `ooc::choose` the store kept A in core with a 2-row ICLA for B,
    /// and Block ran 0.675 s per iteration against 0.175 s predicted).
    #[test]
    fn the_model_predicts_the_runtimes_own_placement_of_a_sliver() {
        let disk = mheta_runtime::cluster::DiskModel {
            latency_s: 1e-3,
            read_bps: 200e6,
            write_bps: 150e6,
        };
        let io = mheta_runtime::ooc::IoEstimate::on_disk(&disk, 2);
        let demand = mheta_runtime::ooc::ArrayDemand {
            rows: 1000,
            row_bytes: 8000,
            uses: 2,
            io,
        };
        let runtime = mheta_runtime::ooc::plan(8_020_000, &[demand, demand]);
        assert_eq!(
            runtime,
            vec![mheta_runtime::ooc::Placement::OutOfCore { icla_rows: 501 }; 2]
        );
        // The model's own estimates (measured; here about the disk's): the same choice.
        let mut mem = memory(8.02e6);
        mem.io_per_piece = vec![3.5e-3; 3];
        mem.io_per_byte = vec![1.3e-8; 3];
        let model = decide(&arrays(&[8000.0, 8000.0]), &mem, 1000);
        assert_eq!(
            model,
            OocState {
                mask: 0b11,
                n_l: runtime[0].blocks(1000),
                rows: 1000
            }
        );
    }

    #[test]
    fn resident_arrays_take_memory_first() {
        let mut a = arrays(&[8.0, 8.0]);
        a[1].resident = true;
        // The resident array takes 800 of 1000 B; the other (800 B) no longer fits: 200 B of
        // ICLA, 25 rows, N_L = 4; the resident array is never in β.
        assert_eq!(
            decide(&a, &memory(1000.0), 100),
            OocState {
                mask: 0b01,
                n_l: 4,
                rows: 100
            }
        );
    }

    fn costs() -> PieceCosts {
        PieceCosts {
            n_l: 4.0,
            o_r: 0.01,
            o_w: 0.02,
            o_a: 0.005,
            t_r: 0.5,
            t_w: 0.7,
            t_a: 0.3,
        }
    }

    #[test]
    fn eq_5_1_synchronous_io() {
        // 4 · [(0.01 + 0.5) + (0.02 + 0.7)] = 4 · 1.23 = 4.92.
        assert!((t_psi(IoMode::Sync, true, true, &costs()) - 4.92).abs() < 1e-12);
        // Read-only: 4 · 0.51 = 2.04.
        assert!((t_psi(IoMode::Sync, true, false, &costs()) - 2.04).abs() < 1e-12);
        // Write-only: 4 · 0.72 = 2.88.
        assert!((t_psi(IoMode::Sync, false, true, &costs()) - 2.88).abs() < 1e-12);
    }

    #[test]
    fn eq_5_2_prefetch() {
        // T_s = 0.5 − 0.3 = 0.2; 4 · [(0.01 + 0.005 + 0.2) + (0.02 + 0.7)] = 4 · 0.935 = 3.74.
        assert!((t_psi(IoMode::Prefetch, true, true, &costs()) - 3.74).abs() < 1e-12);
        // Fully masked: T_A ≥ T_r gives T_s = 0: 4 · (0.015 + 0.72) = 2.94.
        let masked = PieceCosts {
            t_a: 0.9,
            ..costs()
        };
        assert!((t_psi(IoMode::Prefetch, true, true, &masked) - 2.94).abs() < 1e-12);
        // Without prefetching (O_A = 0, T_A = 0) Eq. 5.2 reduces to Eq. 5.1.
        let plain = PieceCosts {
            o_a: 0.0,
            t_a: 0.0,
            ..costs()
        };
        assert_eq!(
            t_psi(IoMode::Prefetch, true, true, &plain),
            t_psi(IoMode::Sync, true, true, &plain)
        );
    }

    #[test]
    fn fig_5_7_unrolled_prefetch() {
        // 4 · (0.01 + 0.005 + 0.02 + 0.7) + 0.5 + 3 · 0.2 = 2.94 + 0.5 + 0.6 = 4.04.
        assert!((t_psi(IoMode::Unrolled, true, true, &costs()) - 4.04).abs() < 1e-12);
    }
}
