//! The cluster description, `cluster.toml` (DESIGN §5). Field names are a contract:
//!
//! ```toml
//! [network]
//! latency = "50us"          # one-way, per message
//! bandwidth = "1GB/s"
//! [[node]]                  # one table per node kind, in rank order
//! count = 2                 # optional, default 1
//! ranks = 1                 # optional, default 1: ranks on each of these nodes, sharing its
//!                           # CPU power, memory and disk bandwidth (each gets a k-th)
//! cpu = 0.5                 # relative CPU power: 1.0 = this machine
//! memory = "48MiB"          # memory available to the program's distributed data
//! disk_read = "200MB/s"
//! disk_write = "150MB/s"
//! disk_latency = "2ms"      # per read/write call
//! [[node.load]]             # optional: other work on these nodes from some point of the run
//! at_iteration = 20         # from the start of iteration 20 (or `at = "2s"` into the run)
//! cpu = 0.5                 # takes half of the node's CPU (0 gives it back)
//! memory = "8MiB"           # and this much of its memory
//! ```
//!
//! In memory (and inside the JSON files) the description is expanded: one `NodeSpec` per rank,
//! quantities in SI base units (seconds, bytes, bytes per second).

mod parse;
pub mod units;

use std::path::{Path, PathBuf};

#[cfg(feature = "read")]
use serde::Deserialize;

pub use parse::MAX_COUNT;

/// A cluster description, expanded: the network and one [`NodeSpec`] per rank, in SI base units.
/// Parse `cluster.toml` text with [`ClusterSpec::from_toml_str`], or a file with
/// [`ClusterSpec::load`].
///
/// ```
/// use std::path::Path;
/// use mheta_format::ClusterSpec;
///
/// let text = r#"
/// [network]
/// latency = "60us"
/// bandwidth = "125MB/s"
///
/// [[node]]          # ranks 0 and 1
/// count = 2
/// cpu = 1.0
/// memory = "256MiB"
/// disk_read = "200MB/s"
/// disk_write = "150MB/s"
/// disk_latency = "1ms"
///
/// [[node]]          # rank 2: half as fast, little memory, a slow disk
/// cpu = 0.5
/// memory = "12MiB"
/// disk_read = "50MB/s"
/// disk_write = "40MB/s"
/// disk_latency = "8ms"
/// "#;
/// let cluster = ClusterSpec::from_toml_str(text, Path::new("cluster.toml"))?;
/// assert_eq!(cluster.nodes.len(), 3);
/// assert_eq!(cluster.network.latency_s, 60e-6);
/// assert_eq!(cluster.network.bandwidth_bps, 125e6);
/// assert_eq!(cluster.nodes[2].cpu, 0.5);
/// assert_eq!(cluster.nodes[2].memory_bytes, 12 << 20);
/// assert_eq!(cluster.nodes[2].disk_latency_s, 8e-3);
///
/// // A wrong unit is an error naming the file, the line, the column and the field.
/// let bad = text.replace("\"8ms\"", "\"8 parsecs\"");
/// let err = ClusterSpec::from_toml_str(&bad, Path::new("cluster.toml")).unwrap_err();
/// assert!(err.to_string().starts_with("cluster.toml:"));
/// assert!(err.to_string().contains("node.disk_latency"));
/// # Ok::<(), mheta_format::cluster::ClusterError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct ClusterSpec {
    /// The network between the nodes (`[network]`).
    pub network: NetworkSpec,
    /// One entry per rank, in rank order.
    pub nodes: Vec<NodeSpec>,
    /// The load other work puts on each rank's node during a run (`[[node.load]]`): empty, or
    /// one schedule per rank (empty for a node without one). What adaptation must cope with:
    /// the runtime honours it, the model does not see it.
    #[cfg_attr(feature = "read", serde(default))]
    pub loads: Vec<Vec<LoadStep>>,
}

/// A change of the load on a node (`[[node.load]]`): from `at` on, competing work takes
/// `cpu_share` of the node's CPU and `memory_bytes` of its memory. A field left out keeps the
/// node's previous share; the shares start at zero.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct LoadStep {
    /// When the change happens.
    pub at: LoadAt,
    /// The share of the node's CPU power taken, 0 ≤ share < 1: the program runs at
    /// `cpu × (1 − share)`.
    #[cfg_attr(feature = "read", serde(default))]
    pub cpu_share: Option<f64>,
    /// Bytes of the node's memory taken, less than its `memory_bytes`.
    #[cfg_attr(feature = "read", serde(default))]
    pub memory_bytes: Option<u64>,
}

/// When a [`LoadStep`] happens: seconds on the rank's clock since its run's measured start,
/// or the start of an iteration of the main loop (counted from 0).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
#[cfg_attr(feature = "read", serde(rename_all = "snake_case"))]
pub enum LoadAt {
    /// Seconds into the run.
    Seconds(f64),
    /// The start of this iteration.
    Iteration(u64),
}

impl LoadAt {
    /// Whether a step at `self` may come after one at `earlier` in a schedule: the same kind,
    /// strictly later.
    pub fn follows(&self, earlier: &LoadAt) -> bool {
        match (earlier, self) {
            (LoadAt::Seconds(a), LoadAt::Seconds(b)) => b > a,
            (LoadAt::Iteration(a), LoadAt::Iteration(b)) => b > a,
            _ => false,
        }
    }
}

/// The emulated network (`[network]` in `cluster.toml`): every message costs `latency_s + bytes /
/// bandwidth_bps` on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct NetworkSpec {
    /// One-way latency per message, seconds.
    pub latency_s: f64,
    /// Bytes per second.
    pub bandwidth_bps: f64,
}

/// One node (rank) of the cluster: one `[[node]]` table of `cluster.toml`, repeated `count` times,
/// or, with `ranks = k`, one k-th of such a node, repeated `count × k` times (a node's ranks are
/// consecutive).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct NodeSpec {
    /// Relative CPU power: 1.0 = this machine, 0.5 = half as fast.
    pub cpu: f64,
    /// Memory available to the program's distributed data, bytes.
    pub memory_bytes: u64,
    /// Disk read bandwidth, bytes per second.
    pub disk_read_bps: f64,
    /// Disk write bandwidth, bytes per second.
    pub disk_write_bps: f64,
    /// Per read/write call, seconds.
    pub disk_latency_s: f64,
}

crate::json_object!(ClusterSpec { field network, field nodes, optional loads });
crate::json_object!(LoadStep { field at, optional cpu_share, optional memory_bytes });

impl LoadStep {
    /// The largest share of its node's CPU a load schedule takes (0 without one).
    pub fn largest_cpu_share(steps: &[LoadStep]) -> f64 {
        steps.iter().filter_map(|s| s.cpu_share).fold(0.0, f64::max)
    }
}
crate::json_object!(NetworkSpec { field latency_s, field bandwidth_bps });
crate::json_object!(NodeSpec {
    field cpu, field memory_bytes, field disk_read_bps, field disk_write_bps, field disk_latency_s,
});

crate::serialize_by_hand!(ClusterSpec);

impl crate::json::ToJson for LoadAt {
    /// `{"seconds": 1.5}` or `{"iteration": 3}`.
    fn write_json(&self, w: &mut crate::json::Writer) {
        w.object(|o| match self {
            LoadAt::Seconds(s) => o.field("seconds", s),
            LoadAt::Iteration(i) => o.field("iteration", i),
        })
    }
}

/// A problem with a cluster description. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The file could not be read.
    #[error("cannot read cluster file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// The text is not a valid description: TOML syntax, an unknown or missing field, a wrong type,
    /// unit or value.
    #[error(
        "{}:{line}:{column}: {}{message}",
        path.display(),
        field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default()
    )]
    Invalid {
        /// The file (or the path given to [`ClusterSpec::from_toml_str`]).
        path: PathBuf,
        /// 1-based line of the offending text.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// The field concerned (`node.memory`, `network.latency`, …), when one is.
        field: Option<String>,
        /// What is wrong, as it follows "field `x`:" in the message.
        message: String,
    },
}

/// Bandwidth that stands for "not throttled" (`f64::MAX` rather than infinity, so that the
/// cluster can be written to JSON).
pub const UNTHROTTLED_BPS: f64 = f64::MAX;

impl ClusterSpec {
    /// Parse the text of a `cluster.toml`; `path` is used to name the file in errors.
    pub fn from_toml_str(text: &str, path: &Path) -> Result<ClusterSpec, ClusterError> {
        parse::parse_cluster(text, path)
    }

    /// Read and parse a `cluster.toml`.
    pub fn load(path: &Path) -> Result<ClusterSpec, ClusterError> {
        let text = std::fs::read_to_string(path).map_err(|source| ClusterError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_toml_str(&text, path)
    }

    /// Checks an expanded description (as the JSON files carry it) against the rules
    /// `cluster.toml` is parsed by: a positive finite CPU power, at least one byte of memory,
    /// positive disk and network rates, latencies not negative, at least one node. The error
    /// is the field and what is wrong with it: (`nodes[1].cpu`, `is 0, expected a positive
    /// number`).
    pub fn check(&self) -> Result<(), (String, String)> {
        if self.nodes.is_empty() {
            return Err((
                "nodes".into(),
                "is empty, expected at least one node".into(),
            ));
        }
        let positive = |field: String, x: f64| {
            if x.is_finite() && x > 0.0 || x == UNTHROTTLED_BPS {
                Ok(())
            } else {
                Err((field, format!("is {x}, expected a positive number")))
            }
        };
        let not_negative = |field: String, x: f64| {
            if x.is_finite() && x >= 0.0 {
                Ok(())
            } else {
                Err((
                    field,
                    format!("is {x}, expected a number of seconds, 0 or more"),
                ))
            }
        };
        positive("network.bandwidth_bps".into(), self.network.bandwidth_bps)?;
        not_negative("network.latency_s".into(), self.network.latency_s)?;
        for (i, n) in self.nodes.iter().enumerate() {
            positive(format!("nodes[{i}].cpu"), n.cpu)?;
            if n.memory_bytes == 0 {
                return Err((
                    format!("nodes[{i}].memory_bytes"),
                    "is 0, expected at least one byte".into(),
                ));
            }
            positive(format!("nodes[{i}].disk_read_bps"), n.disk_read_bps)?;
            positive(format!("nodes[{i}].disk_write_bps"), n.disk_write_bps)?;
            not_negative(format!("nodes[{i}].disk_latency_s"), n.disk_latency_s)?;
        }
        if !self.loads.is_empty() && self.loads.len() != self.nodes.len() {
            return Err((
                "loads".into(),
                format!(
                    "has {} schedules for {} nodes, expected one per node (or none)",
                    self.loads.len(),
                    self.nodes.len()
                ),
            ));
        }
        for (i, (steps, node)) in self.loads.iter().zip(&self.nodes).enumerate() {
            for (k, step) in steps.iter().enumerate() {
                let field = |name: &str| format!("loads[{i}][{k}].{name}");
                if let LoadAt::Seconds(s) = step.at {
                    not_negative(field("at.seconds"), s)?;
                }
                if let Some(share) = step.cpu_share {
                    if !(0.0..1.0).contains(&share) {
                        return Err((
                            field("cpu_share"),
                            format!("is {share}, expected a share from 0 up to (not) 1"),
                        ));
                    }
                }
                if step.memory_bytes.is_some_and(|m| m >= node.memory_bytes) {
                    return Err((
                        field("memory_bytes"),
                        format!(
                            "takes all of the node's {} bytes, expected less",
                            node.memory_bytes
                        ),
                    ));
                }
                if k > 0 && !step.at.follows(&steps[k - 1].at) {
                    return Err((
                        field("at"),
                        "does not come after the step before it (steps go in order, all \
                         by seconds or all by iteration)"
                            .into(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The load schedule of `rank`'s node (empty when it has none).
    pub fn load_of(&self, rank: usize) -> &[LoadStep] {
        self.loads.get(rank).map_or(&[], Vec::as_slice)
    }

    /// The least CPU power `rank`'s node has while its program runs: its power less the largest
    /// share its load schedule takes. Below 1, a wall clock emulates it by slowing the program's
    /// compute regions.
    pub fn least_cpu(&self, rank: usize) -> f64 {
        let power = self.nodes.get(rank).map_or(1.0, |n| n.cpu);
        power * (1.0 - LoadStep::largest_cpu_share(self.load_of(rank)))
    }

    /// The cluster used when no `--cluster` is given: `ranks` identical nodes that are this
    /// machine (CPU power 1.0), with unbounded memory and no emulated disk or network cost.
    pub fn this_machine(ranks: usize) -> ClusterSpec {
        let node = NodeSpec {
            cpu: 1.0,
            memory_bytes: u64::MAX,
            disk_read_bps: UNTHROTTLED_BPS,
            disk_write_bps: UNTHROTTLED_BPS,
            disk_latency_s: 0.0,
        };
        ClusterSpec {
            network: NetworkSpec {
                latency_s: 0.0,
                bandwidth_bps: UNTHROTTLED_BPS,
            },
            nodes: vec![node; ranks],
            loads: Vec::new(),
        }
    }
}
