//! GEN_BLOCK distributions of the rows of the distributed dimension (seed §5.1, Fig. 6.1).
//!
//! A [`Distribution`] holds one row count per node, in rank order; node `i` owns the contiguous
//! rows `ranges()[i]`. Every constructor returns counts that are non-negative (by type) and sum
//! exactly to the total number of rows S: real-valued shares are rounded with the largest
//! remainder method, so rounding never loses or invents a row.
//!
//! The generators span the seed's spectrum of distributions (Fig. 6.1):
//! [`Distribution::block`] (equal strips), [`Distribution::balanced`] (proportional to CPU
//! power), [`Distribution::in_core`] (proportional to memory, ignoring load) and
//! [`Distribution::in_core_balanced`] (as many nodes in core as possible, then balanced).

use std::ops::Range;
use std::str::FromStr;

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

use crate::format::ClusterSpec;

/// Errors building or validating a distribution.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DistributionError {
    /// A distribution over zero nodes was asked for.
    #[error("a distribution needs at least one node")]
    NoNodes,
    /// The counts do not add up to S.
    #[error("distribution rows sum to {actual}, expected {expected}")]
    WrongTotal {
        /// The total rows S.
        expected: u64,
        /// The counts' sum (`u64::MAX` when it overflows).
        actual: u64,
    },
    /// The number of counts is not the number of nodes.
    #[error("distribution has {actual} entries but the cluster has {expected} nodes")]
    WrongLength {
        /// The number of nodes.
        expected: usize,
        /// The number of counts.
        actual: usize,
    },
    /// A node's CPU power (or memory) cannot weigh a share of the rows.
    #[error("node {node}: {field} must be positive and finite, got {value}")]
    BadWeight {
        /// The node's rank.
        node: usize,
        /// The field of its [`NodeSpec`](crate::format::NodeSpec) concerned.
        field: &'static str,
        /// The value found.
        value: f64,
    },
    /// An explicit list `r0,r1,...` that does not parse.
    #[error("`{text}` is not a list of row counts (entry {index}: {reason})")]
    Parse {
        /// The text given.
        text: String,
        /// The 0-based index of the entry that does not parse.
        index: usize,
        /// Why it does not parse.
        reason: String,
    },
    /// An in-core generator was asked for with zero bytes per row.
    #[error("bytes_per_row must be positive")]
    ZeroBytesPerRow,
    /// A name that is none of the generators and not a list of counts.
    #[error("unknown distribution `{0}` (expected block, balanced, in-core, in-core-balanced or r0,r1,...)")]
    UnknownName(String),
}

/// Rows per node (GEN_BLOCK counts), in rank order.
///
/// `--distribution` picks one by name (`block`, `balanced`, `in-core`, `in-core-balanced`) or
/// as explicit counts; a program that wants one itself builds it with the constructors below.
///
/// ```
/// use mheta_runtime::distribution::Distribution;
///
/// let d = Distribution::block(10, 3)?;
/// assert_eq!(d.rows, [4, 3, 3]);
/// assert_eq!(d.ranges(), [0..4, 4..7, 7..10]);
/// assert_eq!(d.total(), 10);
///
/// let explicit: Distribution = "2, 3, 5".parse()?;
/// assert_eq!(explicit.to_string(), "2,3,5");
/// explicit.validate(10, 3)?; // one count per node, summing to S
/// assert!(explicit.validate(11, 3).is_err());
/// # Ok::<(), mheta_runtime::distribution::DistributionError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Distribution {
    /// Rows of each node, in rank order.
    pub rows: Vec<u64>,
}

impl Distribution {
    /// Wraps explicit counts.
    pub fn new(rows: Vec<u64>) -> Self {
        Distribution { rows }
    }

    /// Equal strips: every node gets `S / P` rows and the first `S mod P` nodes one more.
    pub fn block(total_rows: u64, nodes: usize) -> Result<Self, DistributionError> {
        if nodes == 0 {
            return Err(DistributionError::NoNodes);
        }
        let p = nodes as u64;
        let (base, extra) = (total_rows / p, total_rows % p);
        Ok(Distribution {
            rows: (0..p).map(|i| base + u64::from(i < extra)).collect(),
        })
    }

    /// Balances the load: rows proportional to each node's relative CPU power, ignoring memory
    /// and I/O (seed Fig. 6.1, "Bal").
    ///
    /// ```
    /// use mheta_runtime::distribution::Distribution;
    /// use mheta_runtime::format::ClusterSpec;
    ///
    /// let mut cluster = ClusterSpec::this_machine(3);
    /// cluster.nodes[1].cpu = 0.5; // half as fast as nodes 0 and 2
    /// let d = Distribution::balanced(100, &cluster)?;
    /// assert_eq!(d.rows, [40, 20, 40]);
    /// # Ok::<(), mheta_runtime::distribution::DistributionError>(())
    /// ```
    pub fn balanced(total_rows: u64, cluster: &ClusterSpec) -> Result<Self, DistributionError> {
        let weights = cpu_weights(cluster)?;
        Ok(Distribution {
            rows: largest_remainder(total_rows, &weights),
        })
    }

    /// Minimises I/O, ignoring load (seed Fig. 6.1, "I-C"): rows proportional to each node's
    /// in-core capacity `floor(memory / bytes_per_row)`.
    ///
    /// When all the data fits in aggregate memory, every node is in core. When it cannot fit,
    /// every node is over-committed by the same factor (rows still proportional to capacity),
    /// which keeps the number of out-of-core passes N_L about equal everywhere. Nodes with no
    /// memory at all get rows only if no node has any capacity, in which case the rows are
    /// spread as in [`Distribution::block`].
    ///
    /// ```
    /// use mheta_runtime::distribution::Distribution;
    /// use mheta_runtime::format::ClusterSpec;
    ///
    /// // Rows of 1 KiB; node 0 holds 20 of them in memory, node 1 holds 60.
    /// let mut cluster = ClusterSpec::this_machine(2);
    /// cluster.nodes[0].memory_bytes = 20 << 10;
    /// cluster.nodes[1].memory_bytes = 60 << 10;
    /// let d = Distribution::in_core(40, 1 << 10, &cluster)?;
    /// assert_eq!(d.rows, [10, 30]); // proportional to capacity
    /// # Ok::<(), mheta_runtime::distribution::DistributionError>(())
    /// ```
    pub fn in_core(
        total_rows: u64,
        bytes_per_row: u64,
        cluster: &ClusterSpec,
    ) -> Result<Self, DistributionError> {
        let caps = capacities(bytes_per_row, cluster)?;
        if caps.iter().all(|&c| c == 0) {
            return Self::block(total_rows, caps.len());
        }
        let weights: Vec<f64> = caps.iter().map(|&c| c as f64).collect();
        Ok(Distribution {
            rows: largest_remainder(total_rows, &weights),
        })
    }

    /// First maximises the number of nodes whose data is entirely in core, then balances the
    /// load as much as possible (seed Fig. 6.1, "I-C/Bal").
    ///
    /// Rows are proportional to CPU power, but no node exceeds its in-core capacity
    /// `floor(memory / bytes_per_row)` ("water filling": capped nodes are fixed at their capacity
    /// and the rest is re-shared among the others). When the data cannot fit in aggregate
    /// memory, all nodes but one stay in core (each at most at its capacity, balanced where the
    /// capacity allows) and the single fastest node (largest CPU power, then largest memory,
    /// then lowest rank) is uncapped and takes the excess.
    ///
    /// ```
    /// use mheta_runtime::distribution::Distribution;
    /// use mheta_runtime::format::ClusterSpec;
    ///
    /// // Node 0 is twice as fast but holds only 30 rows of 1 KiB in memory.
    /// let mut cluster = ClusterSpec::this_machine(2);
    /// cluster.nodes[0].memory_bytes = 30 << 10;
    /// cluster.nodes[1].cpu = 0.5;
    /// let d = Distribution::in_core_balanced(60, 1 << 10, &cluster)?;
    /// assert_eq!(d.rows, [30, 30]); // Balanced would give [40, 20] and put node 0 out of core
    /// # Ok::<(), mheta_runtime::distribution::DistributionError>(())
    /// ```
    pub fn in_core_balanced(
        total_rows: u64,
        bytes_per_row: u64,
        cluster: &ClusterSpec,
    ) -> Result<Self, DistributionError> {
        let weights = cpu_weights(cluster)?;
        let mut caps: Vec<Option<u64>> = capacities(bytes_per_row, cluster)?
            .into_iter()
            .map(Some)
            .collect();
        let capacity: u64 = caps.iter().map(|c| c.unwrap_or(0)).sum();
        if capacity < total_rows {
            let fastest = (0..caps.len())
                .max_by(|&a, &b| {
                    let (na, nb) = (&cluster.nodes[a], &cluster.nodes[b]);
                    na.cpu
                        .total_cmp(&nb.cpu)
                        .then(na.memory_bytes.cmp(&nb.memory_bytes))
                        .then(b.cmp(&a))
                })
                .ok_or(DistributionError::NoNodes)?;
            caps[fastest] = None;
        }
        Ok(Distribution {
            rows: water_fill(total_rows, &weights, &caps),
        })
    }

    /// Builds one of the named generators (`block`, `balanced`, `in-core`, `in-core-balanced`) or
    /// parses an explicit list `r0,r1,...`, then validates it against the cluster and S.
    ///
    /// ```
    /// use mheta_runtime::distribution::Distribution;
    /// use mheta_runtime::format::ClusterSpec;
    ///
    /// let cluster = ClusterSpec::this_machine(2);
    /// assert_eq!(Distribution::from_spec("block", 5, 8, &cluster)?.rows, [3, 2]);
    /// assert_eq!(Distribution::from_spec("1,4", 5, 8, &cluster)?.rows, [1, 4]);
    /// assert!(Distribution::from_spec("1,3", 5, 8, &cluster).is_err()); // sums to 4, not 5
    /// assert!(Distribution::from_spec("fastest", 5, 8, &cluster).is_err());
    /// # Ok::<(), mheta_runtime::distribution::DistributionError>(())
    /// ```
    pub fn from_spec(
        spec: &str,
        total_rows: u64,
        bytes_per_row: u64,
        cluster: &ClusterSpec,
    ) -> Result<Self, DistributionError> {
        let dist = match spec.trim() {
            "block" => Self::block(total_rows, cluster.nodes.len())?,
            "balanced" => Self::balanced(total_rows, cluster)?,
            "in-core" => Self::in_core(total_rows, bytes_per_row, cluster)?,
            "in-core-balanced" => Self::in_core_balanced(total_rows, bytes_per_row, cluster)?,
            other if other.contains(',') || other.parse::<u64>().is_ok() => other.parse()?,
            other => return Err(DistributionError::UnknownName(other.to_string())),
        };
        dist.validate(total_rows, cluster.nodes.len())?;
        Ok(dist)
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.rows.len()
    }

    /// Total rows S.
    pub fn total(&self) -> u64 {
        self.rows.iter().sum()
    }

    /// Each node's half-open row range `start..end`, in rank order.
    pub fn ranges(&self) -> Vec<Range<u64>> {
        let mut start = 0;
        self.rows
            .iter()
            .map(|&r| {
                let range = start..start + r;
                start += r;
                range
            })
            .collect()
    }

    /// Checks that there is one entry per node and that the rows sum to `total_rows`.
    pub fn validate(&self, total_rows: u64, nodes: usize) -> Result<(), DistributionError> {
        if self.rows.len() != nodes {
            return Err(DistributionError::WrongLength {
                expected: nodes,
                actual: self.rows.len(),
            });
        }
        let actual = self
            .rows
            .iter()
            .try_fold(0u64, |acc, &r| acc.checked_add(r))
            .unwrap_or(u64::MAX);
        if actual != total_rows {
            return Err(DistributionError::WrongTotal {
                expected: total_rows,
                actual,
            });
        }
        Ok(())
    }
}

impl FromStr for Distribution {
    type Err = DistributionError;

    /// Parses `r0,r1,...` (whitespace around entries allowed).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let rows = text
            .split(',')
            .enumerate()
            .map(|(index, entry)| {
                entry
                    .trim()
                    .parse::<u64>()
                    .map_err(|e| DistributionError::Parse {
                        text: text.to_string(),
                        index,
                        reason: e.to_string(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Distribution { rows })
    }
}

impl std::fmt::Display for Distribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, r) in self.rows.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

fn cpu_weights(cluster: &ClusterSpec) -> Result<Vec<f64>, DistributionError> {
    if cluster.nodes.is_empty() {
        return Err(DistributionError::NoNodes);
    }
    cluster
        .nodes
        .iter()
        .enumerate()
        .map(|(node, n)| {
            if n.cpu.is_finite() && n.cpu > 0.0 {
                Ok(n.cpu)
            } else {
                Err(DistributionError::BadWeight {
                    node,
                    field: "cpu",
                    value: n.cpu,
                })
            }
        })
        .collect()
}

fn capacities(bytes_per_row: u64, cluster: &ClusterSpec) -> Result<Vec<u64>, DistributionError> {
    if cluster.nodes.is_empty() {
        return Err(DistributionError::NoNodes);
    }
    if bytes_per_row == 0 {
        return Err(DistributionError::ZeroBytesPerRow);
    }
    Ok(cluster
        .nodes
        .iter()
        .map(|n| n.memory_bytes / bytes_per_row)
        .collect())
}

/// Splits `total` into integers proportional to `weights` (all positive) with the largest
/// remainder method: floors first, then one extra row to the largest fractional parts (ties to
/// the lower index). The result sums exactly to `total`.
pub fn largest_remainder(total: u64, weights: &[f64]) -> Vec<u64> {
    let sum: f64 = weights.iter().sum();
    let shares: Vec<f64> = weights.iter().map(|w| total as f64 * w / sum).collect();
    round_shares(total, &shares)
}

/// Rounds non-negative real shares whose sum is (up to rounding error) `total` to integers
/// summing exactly to `total`, giving leftover rows to the largest fractional parts.
fn round_shares(total: u64, shares: &[f64]) -> Vec<u64> {
    let mut rows: Vec<u64> = shares.iter().map(|s| s.max(0.0).floor() as u64).collect();
    let assigned: u64 = rows.iter().sum();
    if assigned > total {
        // Floating-point error pushed a floor above its true value; take rows back from the
        // largest entries (this only happens at the scale of a single row).
        let mut excess = assigned - total;
        while excess > 0 {
            let i = (0..rows.len()).max_by_key(|&i| rows[i]).unwrap_or(0);
            rows[i] -= 1;
            excess -= 1;
        }
        return rows;
    }
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| {
        let (fa, fb) = (shares[a] - shares[a].floor(), shares[b] - shares[b].floor());
        fb.total_cmp(&fa).then(a.cmp(&b))
    });
    let mut left = total - assigned;
    for &i in order.iter().cycle() {
        if left == 0 {
            break;
        }
        rows[i] += 1;
        left -= 1;
    }
    rows
}

/// Proportional shares with per-node caps (`None` = uncapped): nodes whose proportional share
/// exceeds their cap are fixed at the cap and the remainder is re-shared among the others,
/// until no share exceeds its cap. If every node is capped and the caps cannot hold `total`,
/// the caller must uncap one node first; otherwise all nodes end at their caps.
fn water_fill(total: u64, weights: &[f64], caps: &[Option<u64>]) -> Vec<u64> {
    let n = weights.len();
    let mut fixed: Vec<Option<u64>> = vec![None; n];
    loop {
        let fixed_rows: u64 = fixed.iter().flatten().sum();
        let free_weight: f64 = (0..n)
            .filter(|&i| fixed[i].is_none())
            .map(|i| weights[i])
            .sum();
        let remaining = total.saturating_sub(fixed_rows);
        if free_weight == 0.0 {
            break;
        }
        let mut changed = false;
        for i in 0..n {
            if fixed[i].is_some() {
                continue;
            }
            if let Some(cap) = caps[i] {
                if remaining as f64 * weights[i] / free_weight > cap as f64 {
                    fixed[i] = Some(cap);
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let fixed_rows: u64 = fixed.iter().flatten().sum();
    let remaining = total.saturating_sub(fixed_rows);
    let free: Vec<usize> = (0..n).filter(|&i| fixed[i].is_none()).collect();
    let mut rows: Vec<u64> = fixed.iter().map(|f| f.unwrap_or(0)).collect();
    if free.is_empty() {
        return rows;
    }
    let free_weights: Vec<f64> = free.iter().map(|&i| weights[i]).collect();
    // Shares of free nodes are strictly below their caps (else they would be fixed), so
    // floor + 1 never exceeds an integer cap.
    for (k, r) in largest_remainder(remaining, &free_weights)
        .into_iter()
        .enumerate()
    {
        rows[free[k]] = r;
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{NetworkSpec, NodeSpec};

    fn cluster(nodes: &[(f64, u64)]) -> ClusterSpec {
        ClusterSpec {
            network: NetworkSpec {
                latency_s: 5e-5,
                bandwidth_bps: 1e9,
            },
            nodes: nodes
                .iter()
                .map(|&(cpu, memory_bytes)| NodeSpec {
                    cpu,
                    memory_bytes,
                    disk_read_bps: 2e8,
                    disk_write_bps: 1.5e8,
                    disk_latency_s: 2e-3,
                })
                .collect(),
            loads: Vec::new(),
        }
    }

    #[test]
    fn block_gives_the_remainder_to_the_first_nodes() {
        assert_eq!(Distribution::block(10, 4).unwrap().rows, vec![3, 3, 2, 2]);
        assert_eq!(Distribution::block(0, 2).unwrap().rows, vec![0, 0]);
        assert_eq!(Distribution::block(5, 0), Err(DistributionError::NoNodes));
    }

    #[test]
    fn balanced_is_proportional_to_cpu_with_largest_remainder() {
        // Shares 100 * (1, 0.5, 0.5) / 2 = 50, 25, 25.
        let c = cluster(&[(1.0, 1 << 20), (0.5, 1 << 20), (0.5, 1 << 20)]);
        assert_eq!(
            Distribution::balanced(100, &c).unwrap().rows,
            vec![50, 25, 25]
        );
        // Shares 10 * (1, 1, 1) / 3 = 3.33 each: the leftover row goes to node 0.
        let c = cluster(&[(1.0, 1), (1.0, 1), (1.0, 1)]);
        assert_eq!(Distribution::balanced(10, &c).unwrap().rows, vec![4, 3, 3]);
        let bad = cluster(&[(0.0, 1)]);
        assert!(matches!(
            Distribution::balanced(1, &bad),
            Err(DistributionError::BadWeight { node: 0, .. })
        ));
    }

    #[test]
    fn in_core_is_proportional_to_capacity() {
        // Capacities 100/10 = 10 and 300/10 = 30; 20 rows fit: 5 and 15.
        let c = cluster(&[(1.0, 100), (1.0, 300)]);
        assert_eq!(Distribution::in_core(20, 10, &c).unwrap().rows, vec![5, 15]);
        // 80 rows do not fit (capacity 40): both over-committed by 2x.
        assert_eq!(
            Distribution::in_core(80, 10, &c).unwrap().rows,
            vec![20, 60]
        );
    }

    #[test]
    fn in_core_balanced_caps_and_reshares() {
        // CPU 3:1, capacities 10 and 100, 40 rows: balanced would be 30/10, node 0 is capped at
        // 10 and node 1 takes the other 30.
        let c = cluster(&[(3.0, 100), (1.0, 1000)]);
        assert_eq!(
            Distribution::in_core_balanced(40, 10, &c).unwrap().rows,
            vec![10, 30]
        );
        // Fits without capping: plain balanced.
        assert_eq!(
            Distribution::in_core_balanced(8, 10, &c).unwrap().rows,
            vec![6, 2]
        );
        // 150 rows exceed the capacity 110: node 0 (fastest) is uncapped; node 1 stays in core
        // and the load is balanced 3:1 (112.5 / 37.5, the tie in remainders going to node 0).
        assert_eq!(
            Distribution::in_core_balanced(150, 10, &c).unwrap().rows,
            vec![113, 37]
        );
        // Capacities 10 and 10, 50 rows: node 1 (CPU 3) is uncapped; balanced would give node 0
        // 12.5 > 10, so node 0 is held at its capacity and node 1 takes the other 40.
        let c = cluster(&[(1.0, 100), (3.0, 100)]);
        assert_eq!(
            Distribution::in_core_balanced(50, 10, &c).unwrap().rows,
            vec![10, 40]
        );
    }

    #[test]
    fn ranges_are_contiguous() {
        let d = Distribution::new(vec![2, 0, 3]);
        assert_eq!(d.ranges(), vec![0..2, 2..2, 2..5]);
    }

    #[test]
    fn validation_and_parsing() {
        let d: Distribution = "1, 2,3".parse().unwrap();
        assert_eq!(d.rows, vec![1, 2, 3]);
        assert_eq!(d.to_string(), "1,2,3");
        assert!(d.validate(6, 3).is_ok());
        assert_eq!(
            d.validate(7, 3),
            Err(DistributionError::WrongTotal {
                expected: 7,
                actual: 6
            })
        );
        assert_eq!(
            d.validate(6, 2),
            Err(DistributionError::WrongLength {
                expected: 2,
                actual: 3
            })
        );
        assert!(matches!(
            "1,-2".parse::<Distribution>(),
            Err(DistributionError::Parse { index: 1, .. })
        ));
        let c = cluster(&[(1.0, 100), (1.0, 100)]);
        assert_eq!(
            Distribution::from_spec("block", 5, 1, &c).unwrap().rows,
            vec![3, 2]
        );
        assert!(Distribution::from_spec("4,2", 5, 1, &c).is_err());
        assert!(matches!(
            Distribution::from_spec("blocky", 5, 1, &c),
            Err(DistributionError::UnknownName(_))
        ));
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn every_generator_sums_to_s(
                total in 0u64..100_000,
                bpr in 1u64..64,
                nodes in proptest::collection::vec((0.05f64..4.0, 0u64..1_000_000), 1..12),
            ) {
                let c = cluster(&nodes);
                for d in [
                    Distribution::block(total, nodes.len()).unwrap(),
                    Distribution::balanced(total, &c).unwrap(),
                    Distribution::in_core(total, bpr, &c).unwrap(),
                    Distribution::in_core_balanced(total, bpr, &c).unwrap(),
                ] {
                    prop_assert!(d.validate(total, nodes.len()).is_ok(), "{:?}", d);
                }
                let caps: Vec<u64> = nodes.iter().map(|n| n.1 / bpr).collect();
                if caps.iter().sum::<u64>() >= total {
                    let ic = Distribution::in_core(total, bpr, &c).unwrap();
                    let icb = Distribution::in_core_balanced(total, bpr, &c).unwrap();
                    for (i, &cap) in caps.iter().enumerate() {
                        prop_assert!(ic.rows[i] <= cap);
                        prop_assert!(icb.rows[i] <= cap);
                    }
                }
            }
        }
    }
}
