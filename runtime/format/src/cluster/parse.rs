//! Parsing `cluster.toml` into a [`ClusterSpec`] (DESIGN §5).
//!
//! The document is checked by hand (`crate::document`): each problem — syntax, an unknown or
//! missing field, a value of the wrong type, a wrong unit, a value that must be positive —
//! becomes a [`ClusterError`] naming the file, the line and column, and the field. Parsing
//! never panics.

use std::path::Path;

use super::units::{parse_duration, parse_rate, parse_size};
use super::ClusterError;
use super::{ClusterSpec, LoadAt, LoadStep, NetworkSpec, NodeSpec};
use crate::document::{self, describe, integer, DeValue, Fields, Problem, Value};

/// The most nodes one `[[node]]` table may describe, and the most ranks per node.
pub const MAX_COUNT: i64 = 1 << 16;

/// One rank's share of a node that `ranks` ranks share (`ranks = k` in a `[[node]]` table): the
/// node's CPU power, memory and disk bandwidths divided by k (each rank runs at `cpu / k`, keeps
/// `memory / k` bytes in core, reads and writes at `disk_read / k` and `disk_write / k`); the
/// disk's per-call latency is the node's. A load step takes the same share of each rank's CPU
/// and `memory / k` of each rank's memory. Every rank stays a node of its own to the network:
/// ranks on one node pay the network's latency and bandwidth between them like any other two.
fn shared(node: NodeSpec, steps: Vec<LoadStep>, ranks: usize) -> (NodeSpec, Vec<LoadStep>) {
    if ranks == 1 {
        return (node, steps);
    }
    let k = ranks as f64;
    let per_rank = |rate: f64| {
        if rate == super::UNTHROTTLED_BPS {
            rate
        } else {
            rate / k
        }
    };
    let node = NodeSpec {
        cpu: node.cpu / k,
        memory_bytes: node.memory_bytes / ranks as u64,
        disk_read_bps: per_rank(node.disk_read_bps),
        disk_write_bps: per_rank(node.disk_write_bps),
        disk_latency_s: node.disk_latency_s,
    };
    let steps = steps
        .into_iter()
        .map(|step| LoadStep {
            memory_bytes: step.memory_bytes.map(|m| m / ranks as u64),
            ..step
        })
        .collect();
    (node, steps)
}

/// Parse the text of a `cluster.toml`; `path` names the file in errors.
pub fn parse_cluster(text: &str, path: &Path) -> Result<ClusterSpec, ClusterError> {
    let source = Source { text, path };
    source.spec().map_err(|problem| source.located(problem))
}

struct Source<'a> {
    text: &'a str,
    path: &'a Path,
}

impl Source<'_> {
    fn spec(&self) -> Result<ClusterSpec, Problem> {
        let doc = document::parse(self.text)?;
        let top = Fields::check(doc.get_ref(), doc.span(), &["network", "node"])?;

        let network = document::table(
            top.required("network")?,
            "network",
            &["latency", "bandwidth"],
        )?;
        let network = NetworkSpec {
            latency_s: self.duration(network.required("latency")?, "network.latency")?,
            bandwidth_bps: self.rate(network.required("bandwidth")?, "network.bandwidth")?,
        };

        let node_tables = match top.get("node") {
            None => &[][..],
            Some(value) => document::tables(value, "node")?,
        };
        if node_tables.is_empty() {
            return Err(Problem::new(
                0..0,
                "node",
                "no [[node]] table: describe at least one node kind",
            ));
        }
        let mut nodes = Vec::new();
        let mut loads = Vec::new();
        for table in node_tables {
            let node = document::table(
                table,
                "node",
                &[
                    "count",
                    "ranks",
                    "cpu",
                    "memory",
                    "disk_read",
                    "disk_write",
                    "disk_latency",
                    "load",
                ],
            )?;
            let count = match node.get("count") {
                None => 1,
                Some(count) => self.count(count)?,
            };
            let spec = NodeSpec {
                cpu: self.cpu(node.required("cpu")?)?,
                memory_bytes: self.size(node.required("memory")?, "node.memory", 1)?,
                disk_read_bps: self.rate(node.required("disk_read")?, "node.disk_read")?,
                disk_write_bps: self.rate(node.required("disk_write")?, "node.disk_write")?,
                disk_latency_s: self
                    .duration(node.required("disk_latency")?, "node.disk_latency")?,
            };
            let load_tables = match node.get("load") {
                None => &[][..],
                Some(value) => document::tables(value, "node.load")?,
            };
            let steps = self.load_steps(load_tables, spec.memory_bytes)?;
            let ranks = match node.get("ranks") {
                None => 1,
                Some(ranks) => self.ranks(ranks, spec.memory_bytes)?,
            };
            if count * ranks > MAX_COUNT as usize {
                return Err(Problem::new(
                    node.get("ranks").map_or(0..0, |r| r.span()),
                    "node.ranks",
                    format!(
                        "{count} nodes of {ranks} ranks are {} ranks, more than the {MAX_COUNT} \
                         one table may describe",
                        count * ranks
                    ),
                ));
            }
            if let Some(step) = steps.iter().find(|step| {
                step.memory_bytes
                    .is_some_and(|m| m / ranks as u64 >= spec.memory_bytes / ranks as u64)
            }) {
                let taken = step.memory_bytes.unwrap_or_default();
                return Err(Problem::new(
                    node.get("ranks").map_or(0..0, |r| r.span()),
                    "node.ranks",
                    format!(
                        "{ranks} ranks share the node's {} bytes, and a load that takes {taken} \
                         of them leaves a rank none of its {}",
                        spec.memory_bytes,
                        spec.memory_bytes / ranks as u64
                    ),
                ));
            }
            let (spec, steps) = shared(spec, steps, ranks);
            let ranks_in_table = count * ranks;
            nodes.extend(std::iter::repeat(spec).take(ranks_in_table));
            loads.extend(std::iter::repeat(steps).take(ranks_in_table));
        }
        if loads.iter().all(Vec::is_empty) {
            loads.clear();
        }
        Ok(ClusterSpec {
            network,
            nodes,
            loads,
        })
    }

    /// A latency: zero is allowed (no added latency), negative is not.
    fn duration(&self, value: &Value<'_>, field: &str) -> Result<f64, Problem> {
        let text = self.string(value, field, "a time such as \"50us\"")?;
        let seconds = parse_duration(text).map_err(|m| Problem::new(value.span(), field, m))?;
        if seconds < 0.0 {
            return Err(Problem::new(
                value.span(),
                field,
                format!("must not be negative, found \"{text}\""),
            ));
        }
        Ok(seconds)
    }

    fn rate(&self, value: &Value<'_>, field: &str) -> Result<f64, Problem> {
        let text = self.string(value, field, "a rate such as \"200MB/s\"")?;
        let rate = parse_rate(text).map_err(|m| Problem::new(value.span(), field, m))?;
        if rate <= 0.0 {
            return Err(Problem::new(
                value.span(),
                field,
                format!("must be positive, found \"{text}\""),
            ));
        }
        Ok(rate)
    }

    /// A size in bytes, at least `least`.
    fn size(&self, value: &Value<'_>, field: &str, least: u64) -> Result<u64, Problem> {
        let text = self.string(value, field, "a size such as \"48MiB\"")?;
        let bytes = parse_size(text).map_err(|m| Problem::new(value.span(), field, m))?;
        if bytes < least as f64 {
            let least = match least {
                1 => "one byte".to_string(),
                n => format!("{n} bytes"),
            };
            return Err(Problem::new(
                value.span(),
                field,
                format!("must be at least {least}, found \"{text}\""),
            ));
        }
        if bytes >= u64::MAX as f64 {
            return Err(Problem::new(
                value.span(),
                field,
                format!("\"{text}\" is too large"),
            ));
        }
        Ok(bytes as u64)
    }

    /// A node's load schedule (`[[node.load]]` tables, in order); `memory` is the node's.
    fn load_steps(&self, tables: &[Value<'_>], memory: u64) -> Result<Vec<LoadStep>, Problem> {
        let mut steps: Vec<LoadStep> = Vec::with_capacity(tables.len());
        for table in tables {
            let load =
                document::table(table, "node.load", &["at", "at_iteration", "cpu", "memory"])?;
            let (at, at_span, at_field) = match (load.get("at"), load.get("at_iteration")) {
                (Some(_), Some(it)) => {
                    return Err(Problem::new(
                        it.span(),
                        "node.load.at_iteration",
                        "give either `at` (a time into the run) or `at_iteration`, not both"
                            .to_string(),
                    ))
                }
                (None, None) => {
                    return Err(Problem::new(
                        table.span(),
                        "node.load.at",
                        "missing: say when the load changes, `at = \"2s\"` (into the run) or \
                         `at_iteration = 20`"
                            .to_string(),
                    ))
                }
                (Some(at), None) => (
                    LoadAt::Seconds(self.duration(at, "node.load.at")?),
                    at.span(),
                    "node.load.at",
                ),
                (None, Some(it)) => (
                    LoadAt::Iteration(self.iteration(it)?),
                    it.span(),
                    "node.load.at_iteration",
                ),
            };
            let (cpu, memory_taken) = (load.get("cpu"), load.get("memory"));
            if cpu.is_none() && memory_taken.is_none() {
                return Err(Problem::new(
                    table.span(),
                    "node.load",
                    "changes nothing: give the CPU share (`cpu = 0.5`) and/or the memory \
                     (`memory = \"8MiB\"`) other work takes from then on"
                        .to_string(),
                ));
            }
            let cpu_share = cpu.map(|c| self.share(c)).transpose()?;
            let memory_bytes = match memory_taken {
                None => None,
                Some(value) => {
                    let bytes = self.size(value, "node.load.memory", 0)?;
                    if bytes >= memory {
                        return Err(Problem::new(
                            value.span(),
                            "node.load.memory",
                            format!(
                                "takes all of the node's memory ({memory} bytes): leave the \
                                 program some"
                            ),
                        ));
                    }
                    Some(bytes)
                }
            };
            if let Some(before) = steps.last() {
                if !at.follows(&before.at) {
                    let message = match (before.at, at) {
                        (LoadAt::Seconds(_), LoadAt::Iteration(_))
                        | (LoadAt::Iteration(_), LoadAt::Seconds(_)) => "mixes times and \
                            iterations in one node's schedule: use `at` throughout or \
                            `at_iteration` throughout"
                            .to_string(),
                        _ => "must come after the step before it: a node's steps go in order"
                            .to_string(),
                    };
                    return Err(Problem::new(at_span, at_field, message));
                }
            }
            steps.push(LoadStep {
                at,
                cpu_share,
                memory_bytes,
            });
        }
        Ok(steps)
    }

    /// The CPU share a load step takes: 0 ≤ share < 1.
    fn share(&self, value: &Value<'_>) -> Result<f64, Problem> {
        let field = "node.load.cpu";
        let share = self.number(
            value,
            field,
            "the share of the node's CPU other work takes, such as 0.5",
        )?;
        if !(0.0..1.0).contains(&share) {
            return Err(Problem::new(
                value.span(),
                field,
                format!(
                    "must be a share from 0 up to (not including) 1, found {share}: 0 gives \
                     the CPU back, 1 would stop the program"
                ),
            ));
        }
        Ok(share)
    }

    /// An iteration of the main loop, counted from 0.
    fn iteration(&self, value: &Value<'_>) -> Result<u64, Problem> {
        let field = "node.load.at_iteration";
        match integer(value.get_ref()) {
            Some(i) if i >= 0 => Ok(i as u64),
            Some(i) => Err(Problem::new(
                value.span(),
                field,
                format!("must not be negative (iterations count from 0), found {i}"),
            )),
            None => Err(Problem::new(
                value.span(),
                field,
                format!(
                    "expected an iteration number such as 20, found {}",
                    describe(value.get_ref())
                ),
            )),
        }
    }

    /// A number (integer or float), described as `expected` when it is something else.
    fn number(&self, value: &Value<'_>, field: &str, expected: &str) -> Result<f64, Problem> {
        document::number(value.get_ref()).ok_or_else(|| {
            Problem::new(
                value.span(),
                field,
                format!("expected {expected}, found {}", describe(value.get_ref())),
            )
        })
    }

    fn cpu(&self, value: &Value<'_>) -> Result<f64, Problem> {
        let field = "node.cpu";
        let cpu = self.number(
            value,
            field,
            "a relative CPU power such as 0.5 (a number, 1.0 = this machine)",
        )?;
        if !(cpu.is_finite() && cpu > 0.0) {
            return Err(Problem::new(
                value.span(),
                field,
                format!("must be a positive number, found {cpu}"),
            ));
        }
        Ok(cpu)
    }

    fn count(&self, value: &Value<'_>) -> Result<usize, Problem> {
        let field = "node.count";
        let DeValue::Integer(written) = value.get_ref() else {
            return Err(Problem::new(
                value.span(),
                field,
                format!(
                    "expected a whole number of nodes, found {}",
                    describe(value.get_ref())
                ),
            ));
        };
        match integer(value.get_ref()) {
            Some(count) if (1..=MAX_COUNT).contains(&count) => Ok(count as usize),
            _ => Err(Problem::new(
                value.span(),
                field,
                format!("must be between 1 and {MAX_COUNT}, found {written}"),
            )),
        }
    }

    /// How many ranks run on each node of the table: 1 up to [`MAX_COUNT`], and no more than
    /// the node has bytes of memory (each rank gets `memory / ranks`).
    fn ranks(&self, value: &Value<'_>, memory: u64) -> Result<usize, Problem> {
        let field = "node.ranks";
        let DeValue::Integer(written) = value.get_ref() else {
            return Err(Problem::new(
                value.span(),
                field,
                format!(
                    "expected a whole number of ranks per node, found {}",
                    describe(value.get_ref())
                ),
            ));
        };
        match integer(value.get_ref()) {
            Some(ranks) if (1..=MAX_COUNT).contains(&ranks) => {
                if ranks as u64 > memory {
                    return Err(Problem::new(
                        value.span(),
                        field,
                        format!(
                            "{ranks} ranks cannot share the node's {memory} bytes of memory: \
                             each needs at least one byte"
                        ),
                    ));
                }
                Ok(ranks as usize)
            }
            _ => Err(Problem::new(
                value.span(),
                field,
                format!("must be between 1 and {MAX_COUNT}, found {written}"),
            )),
        }
    }

    fn string<'v>(
        &self,
        value: &'v Value<'_>,
        field: &str,
        expected: &str,
    ) -> Result<&'v str, Problem> {
        match value.get_ref() {
            DeValue::String(s) => Ok(s),
            other => Err(Problem::new(
                value.span(),
                field,
                format!(
                    "expected a quoted string with a unit, {expected}, found {}",
                    describe(other)
                ),
            )),
        }
    }

    fn located(&self, problem: Problem) -> ClusterError {
        let (line, column) = problem.line_column(self.text);
        ClusterError::Invalid {
            path: self.path.to_path_buf(),
            line,
            column,
            field: problem.field,
            message: problem.message,
        }
    }
}
