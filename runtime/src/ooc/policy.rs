//! Which arrays stay in core, and the ICLA size of the others (seed §5.1, §5.3.1).
//!
//! The seed's heuristic: "arrays with smaller sizes or those that are accessed more frequently
//! are preferred to be kept in core". [`plan`] makes it precise, and both the runtime (deciding
//! the real arrays' placement) and the model (predicting it for a candidate distribution) call
//! it, so the two never disagree:
//!
//! 1. Order the arrays by bytes per use (`rows · row_bytes / uses`), smallest first; ties keep
//!    the caller's order.
//! 2. Walk that order and keep an array in core when its whole local array fits in the memory
//!    left, after setting aside one row for every other array not (yet) in core — an
//!    out-of-core array still needs at least one row of memory for its ICLA.
//! 3. Give every out-of-core array one row, and share the memory still left equally (in bytes)
//!    among them; each ICLA is its row plus its share in whole rows. An array whose ICLA would
//!    hold all its rows is in core after all.
//!
//! When the budget is smaller than one row per array, out-of-core arrays still get one row: the
//! program must make progress, and the overrun is at most one row per array.

/// One array's memory demand on a node: its local rows and the bytes of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrayDemand {
    /// Rows of the array held by this node (its local array, LA).
    pub rows: u64,
    /// Bytes per row.
    pub row_bytes: u64,
    /// How often the array is used per iteration (stages that touch it); 1 when unknown.
    pub uses: u32,
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
    OutOfCore { icla_rows: u64 },
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
    let mut order: Vec<usize> = (0..arrays.len()).collect();
    // Bytes per use, compared exactly: a.bytes / a.uses < b.bytes / b.uses.
    order.sort_by(|&a, &b| {
        let (da, db) = (&arrays[a], &arrays[b]);
        let ka = da.bytes() * u128::from(db.uses.max(1));
        let kb = db.bytes() * u128::from(da.uses.max(1));
        ka.cmp(&kb).then(a.cmp(&b))
    });

    let mut in_core = vec![false; arrays.len()];
    let mut remaining = u128::from(budget_bytes);
    let mut reserved: u128 = arrays.iter().map(ArrayDemand::min_bytes).sum();
    for &i in &order {
        let demand = &arrays[i];
        let others = reserved - demand.min_bytes();
        if demand.bytes() + others <= remaining {
            in_core[i] = true;
            remaining -= demand.bytes();
            reserved -= demand.min_bytes();
        }
    }

    // Every out-of-core array gets its one row, then an equal share of what is left.
    let out_of_core = in_core.iter().filter(|&&c| !c).count() as u128;
    let surplus = remaining.saturating_sub(reserved);
    let share = surplus.checked_div(out_of_core).unwrap_or(0);
    arrays
        .iter()
        .zip(&in_core)
        .map(|(demand, &in_core)| {
            if in_core || demand.rows == 0 || demand.row_bytes == 0 {
                return Placement::InCore;
            }
            let rows = 1 + share / u128::from(demand.row_bytes);
            if rows >= u128::from(demand.rows) {
                Placement::InCore
            } else {
                Placement::OutOfCore {
                    icla_rows: rows as u64,
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demand(rows: u64, row_bytes: u64, uses: u32) -> ArrayDemand {
        ArrayDemand {
            rows,
            row_bytes,
            uses,
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
        // B: 80 > 60 left, out of core with 60 / 8 = 7 rows.
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
        // Both out of core: 105 / 2 = 52 B each, 5 rows.
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
