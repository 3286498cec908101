//! Which arrays stay in core, and the ICLA size of the others (seed §5.1, §5.3.1).
//!
//! The seed's heuristic: "arrays with smaller sizes or those that are accessed more frequently
//! are preferred to be kept in core". [`choose`] makes it precise, and both the runtime
//! ([`plan`], deciding the real arrays' placement) and the model (`model::out_of_core::decide`,
//! predicting it for a candidate distribution) call it, so the two decide alike:
//!
//! 1. The arrays are ranked: by bytes per use (`rows · row_bytes / uses`), smallest first (the
//!    runtime; ties keep the caller's order), or by the model's equivalent ranking.
//! 2. Candidates keep the first k ranked arrays in core, for every k whose local arrays fit with
//!    one row set aside for each array left out (an out-of-core array needs at least one row of
//!    memory for its ICLA).
//! 3. The arrays left out share the rest row by row: each ICLA holds `floor(left / Σ row bytes)`
//!    rows, at least one. An array whose ICLA would hold all its rows is in core after all.
//! 4. The candidate with the least estimated I/O per iteration wins (`blocks · per_block_s +
//!    bytes · per_byte_s` over the arrays left out, [`IoEstimate`]); ties keep more arrays in
//!    core. Keeping one more array in core can leave the others an ICLA of a row or two and a
//!    disk call per row: the estimate is what rules that out. The runtime estimates from its
//!    node's disk (latency per call, bandwidth), the model from its measurements; both see the
//!    same thousands of calls in such a case.
//!
//! When the budget is smaller than one row per array, out-of-core arrays still get one row: the
//! program must make progress, and the overrun is at most one row per array.

/// One array's memory demand on a node: its local rows and the bytes of one row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArrayDemand {
    /// Rows of the array held by this node (its local array, LA).
    pub rows: u64,
    /// Bytes per row.
    pub row_bytes: u64,
    /// How often the array is used per iteration (stages that touch it); 1 when unknown.
    pub uses: u32,
    /// What the array's I/O costs per iteration when it is out of core.
    pub io: IoEstimate,
}

/// The I/O an out-of-core array is expected to cost per iteration: per block (ICLA piece) it
/// is processed in, and per byte of its local array.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct IoEstimate {
    /// Seconds per block.
    pub per_block_s: f64,
    /// Seconds per byte of the local array.
    pub per_byte_s: f64,
}

impl IoEstimate {
    /// An array used `uses` times per iteration on `disk`: each use reads and writes every
    /// block once.
    pub fn on_disk(disk: &crate::cluster::DiskModel, uses: u32) -> IoEstimate {
        let per_byte = |bps: f64| if bps > 0.0 { 1.0 / bps } else { 0.0 };
        let uses = f64::from(uses.max(1));
        IoEstimate {
            per_block_s: uses * 2.0 * disk.latency_s,
            per_byte_s: uses * (per_byte(disk.read_bps) + per_byte(disk.write_bps)),
        }
    }
}

/// What [`choose`] decided: how many ranked arrays stay in core, and the ICLA rows of the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    /// How many of the ranked arrays, from the first, stay in core.
    pub in_core: usize,
    /// Rows of every out-of-core array's ICLA (meaningless when all are in core).
    pub icla_rows: u64,
}

/// Chooses among `n` ranked arrays (see the module documentation); `array(j)` gives the j-th
/// ranked array's rows, bytes per row and I/O estimate. Allocation-free: the model calls it for
/// every node of every prediction.
pub fn choose(
    free_bytes: f64,
    n: usize,
    array: impl Fn(usize) -> (u64, f64, IoEstimate),
) -> Choice {
    let mut best = Choice {
        in_core: 0,
        icla_rows: 1,
    };
    let mut best_cost = f64::INFINITY;
    let mut in_core_bytes = 0.0;
    // Bytes per row of the arrays left out: all of them, less each one that joins the core.
    let mut out_bytes_per_row: f64 = (0..n).map(|j| array(j).1).sum();
    for k in 0..=n {
        if k > 0 {
            let (rows, bytes_per_row, _) = array(k - 1);
            in_core_bytes += rows as f64 * bytes_per_row;
            out_bytes_per_row -= bytes_per_row;
        }
        // The first k fit, with one row set aside for each array left out; with nothing in
        // core the arrays get their one row whatever the budget.
        if k > 0 && in_core_bytes + out_bytes_per_row > free_bytes {
            break;
        }
        let icla_rows = if out_bytes_per_row > 0.0 {
            ((free_bytes - in_core_bytes).max(0.0) / out_bytes_per_row)
                .floor()
                .clamp(1.0, u64::MAX as f64) as u64
        } else {
            u64::MAX
        };
        let cost: f64 = (k..n)
            .map(|j| {
                let (rows, bytes_per_row, io) = array(j);
                let blocks = rows.div_ceil(icla_rows) as f64;
                blocks * io.per_block_s + rows as f64 * bytes_per_row * io.per_byte_s
            })
            .sum();
        if cost <= best_cost {
            best_cost = cost;
            best = Choice {
                in_core: k,
                icla_rows,
            };
        }
    }
    best
}

impl ArrayDemand {
    /// Bytes of the whole local array.
    pub fn bytes(&self) -> u128 {
        u128::from(self.rows) * u128::from(self.row_bytes)
    }

    /// Bytes an out-of-core ICLA needs at least: one row (nothing for an empty array).
    fn min_bytes(&self) -> u128 {
        if self.rows == 0 {
            0
        } else {
            u128::from(self.row_bytes)
        }
    }
}

/// Where an array lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The whole local array is in memory: one block, no I/O.
    InCore,
    /// The local array (OCLA) lives on disk and is processed `icla_rows` rows at a time.
    OutOfCore {
        /// Rows per block: the in-core local array (ICLA) size.
        icla_rows: u64,
    },
}

impl Placement {
    /// Rows per block for an array of `rows` rows (the ICLA size; all rows when in core).
    pub fn block_rows(&self, rows: u64) -> u64 {
        match *self {
            Placement::InCore => rows,
            Placement::OutOfCore { icla_rows } => icla_rows.min(rows),
        }
    }

    /// N_L = ceil(M_beta / M_iota) (seed §5.3.1): blocks of an array of `rows` rows.
    pub fn blocks(&self, rows: u64) -> u64 {
        let per_block = self.block_rows(rows);
        if rows == 0 {
            0
        } else {
            rows.div_ceil(per_block)
        }
    }

    /// The bytes of memory this placement occupies for `demand`.
    pub fn memory_bytes(&self, demand: &ArrayDemand) -> u128 {
        u128::from(self.block_rows(demand.rows)) * u128::from(demand.row_bytes)
    }
}

/// Place `arrays` in a node memory of `budget_bytes` (see the module documentation).
pub fn plan(budget_bytes: u64, arrays: &[ArrayDemand]) -> Vec<Placement> {
    // Empty arrays take no memory and do no I/O: in core, and not ranked.
    let mut order: Vec<usize> = (0..arrays.len())
        .filter(|&i| arrays[i].min_bytes() > 0)
        .collect();
    // Bytes per use, compared exactly: a.bytes / a.uses < b.bytes / b.uses.
    order.sort_by(|&a, &b| {
        let (da, db) = (&arrays[a], &arrays[b]);
        let ka = da.bytes() * u128::from(db.uses.max(1));
        let kb = db.bytes() * u128::from(da.uses.max(1));
        ka.cmp(&kb).then(a.cmp(&b))
    });
    let choice = choose(budget_bytes as f64, order.len(), |j| {
        let d = &arrays[order[j]];
        (d.rows, d.row_bytes as f64, d.io)
    });
    let mut placements = vec![Placement::InCore; arrays.len()];
    for &i in &order[choice.in_core..] {
        if choice.icla_rows < arrays[i].rows {
            placements[i] = Placement::OutOfCore {
                icla_rows: choice.icla_rows,
            };
        }
    }
    placements
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demand(rows: u64, row_bytes: u64, uses: u32) -> ArrayDemand {
        ArrayDemand {
            rows,
            row_bytes,
            uses,
            io: IoEstimate::default(),
        }
    }

    #[test]
    fn everything_fits() {
        let arrays = [demand(10, 8, 1), demand(10, 8, 1)];
        assert_eq!(plan(160, &arrays), vec![Placement::InCore; 2]);
    }

    #[test]
    fn smaller_array_stays_in_core_larger_gets_the_rest() {
        // A = 40 B, B = 80 B, budget 100. A first: 40 + one row of B (8) <= 100, in core.
        // B: 80 > 60 left, out of core with 60 / 8 = 7 rows. (Without I/O estimates every
        // candidate costs nothing, and the one with more arrays in core wins.)
        let arrays = [demand(10, 4, 1), demand(10, 8, 1)];
        assert_eq!(
            plan(100, &arrays),
            vec![Placement::InCore, Placement::OutOfCore { icla_rows: 7 }]
        );
    }

    #[test]
    fn frequently_used_array_wins_over_a_smaller_one() {
        // A = 40 B used once (40 B/use), B = 80 B used 4 times (20 B/use): B first.
        // B: 80 + one row of A (4) <= 100, in core; A: 40 > 20 left, ICLA 20 / 4 = 5 rows.
        let arrays = [demand(10, 4, 1), demand(10, 8, 4)];
        assert_eq!(
            plan(100, &arrays),
            vec![Placement::OutOfCore { icla_rows: 5 }, Placement::InCore]
        );
    }

    #[test]
    fn reservation_keeps_one_row_for_every_other_array() {
        // Two equal arrays of 100 B (10 rows of 10 B), budget 105: the first would fit alone
        // (100 <= 105) but not with a row of the second set aside (110 > 105).
        // Both out of core: 105 B for 20 B per row of the two: 5 rows each.
        let arrays = [demand(10, 10, 1), demand(10, 10, 1)];
        let icla = Placement::OutOfCore { icla_rows: 5 };
        assert_eq!(plan(105, &arrays), vec![icla, icla]);
        // With 110 the first fits with the reservation; the second gets the 10 B left: 1 row.
        assert_eq!(
            plan(110, &arrays),
            vec![Placement::InCore, Placement::OutOfCore { icla_rows: 1 }]
        );
    }

    #[test]
    fn a_sliver_of_icla_loses_to_both_arrays_out_of_core() {
        // Jacobi's A and B on a node of sliver-2.toml under Block: 1000 rows of 8000 B each, in
        // 8.02 MB, on a disk of 1 ms per call, 200 MB/s read, 150 MB/s write; each array is
        // used twice per iteration.
        let disk = crate::cluster::DiskModel {
            latency_s: 1e-3,
            read_bps: 200e6,
            write_bps: 150e6,
        };
        let io = IoEstimate::on_disk(&disk, 2);
        assert_eq!(io.per_block_s, 4e-3);
        let a = ArrayDemand {
            io,
            ..demand(1000, 8000, 2)
        };
        // Keeping A in core (8 MB, and 8000 B set aside for B) leaves B 20 000 B: an ICLA of 2
        // rows, 500 blocks, 500 · 4 ms = 2 s of calls. Both out of core: ICLA
        // floor(8.02e6 / 16 000) = 501 rows, 2 blocks each: 16 ms of calls, and twice the bytes
        // (2 · 8e6 · 2 · (1/200e6 + 1/150e6) = 0.37 s against 0.19 s). Both out wins.
        let icla = Placement::OutOfCore { icla_rows: 501 };
        assert_eq!(plan(8_020_000, &[a, a]), vec![icla, icla]);
        // Without an estimate (every candidate costs nothing) more arrays stay in core.
        assert_eq!(
            plan(8_020_000, &[demand(1000, 8000, 2), demand(1000, 8000, 2)]),
            vec![Placement::InCore, Placement::OutOfCore { icla_rows: 2 }]
        );
    }

    #[test]
    fn tiny_budget_still_gives_one_row() {
        let arrays = [demand(10, 10, 1), demand(3, 100, 1)];
        let one = Placement::OutOfCore { icla_rows: 1 };
        assert_eq!(plan(0, &arrays), vec![one, one]);
    }

    #[test]
    fn empty_arrays_are_in_core_and_cost_nothing() {
        let arrays = [demand(0, 10, 1), demand(10, 0, 1), demand(4, 10, 1)];
        assert_eq!(plan(40, &arrays), vec![Placement::InCore; 3]);
    }

    #[test]
    fn unbounded_memory_never_overflows() {
        let huge = [demand(u64::MAX, u64::MAX, 1)];
        assert_eq!(
            plan(u64::MAX, &huge),
            vec![Placement::OutOfCore { icla_rows: 1 }]
        );
        let big = [demand(1 << 40, 1 << 20, 0), demand(1 << 40, 1 << 20, 1)];
        assert_eq!(plan(u64::MAX, &big), vec![Placement::InCore; 2]);
    }

    #[test]
    fn blocks_and_block_rows() {
        let icla = Placement::OutOfCore { icla_rows: 4 };
        assert_eq!(icla.blocks(10), 3);
        assert_eq!(icla.blocks(8), 2);
        assert_eq!(icla.blocks(0), 0);
        assert_eq!(icla.block_rows(3), 3);
        assert_eq!(Placement::InCore.blocks(10), 1);
        assert_eq!(Placement::InCore.blocks(0), 0);
    }

    proptest::proptest! {
        /// The plan fits the budget whenever one row per array does, keeps an array in core
        /// whenever its placement has all its rows, and never gives an empty ICLA.
        #[test]
        fn plan_respects_the_budget(
            sizes in proptest::collection::vec((0u64..50, 1u64..20, 1u32..4), 0..6),
            budget in 0u64..2000,
        ) {
            let arrays: Vec<_> = sizes.iter().map(|&(r, b, u)| demand(r, b, u)).collect();
            let placements = plan(budget, &arrays);
            proptest::prop_assert_eq!(placements.len(), arrays.len());
            let used: u128 = placements.iter().zip(&arrays).map(|(p, d)| p.memory_bytes(d)).sum();
            let minimum: u128 = arrays.iter().map(ArrayDemand::min_bytes).sum();
            if minimum <= u128::from(budget) {
                proptest::prop_assert!(used <= u128::from(budget), "used {} of {}", used, budget);
            }
            for (p, d) in placements.iter().zip(&arrays) {
                if let Placement::OutOfCore { icla_rows } = p {
                    proptest::prop_assert!(*icla_rows >= 1 && *icla_rows < d.rows);
                }
            }
        }
    }
}
