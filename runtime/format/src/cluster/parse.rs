//! Parsing `cluster.toml` into a [`ClusterSpec`] (DESIGN §5).
//!
//! Serde reads the file into "raw" tables whose fields keep their source spans; every value is
//! then checked here, so that each problem — syntax, an unknown or missing field, a value of the
//! wrong type, a wrong unit, a value that must be positive — becomes a [`ClusterError`] naming
//! the file, the line and column, and the field. Parsing never panics.

use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::units::{parse_duration, parse_rate, parse_size};
use super::ClusterError;
use super::{ClusterSpec, LoadAt, LoadStep, NetworkSpec, NodeSpec};

/// The most ranks one `[[node]]` table may expand to.
pub const MAX_COUNT: i64 = 1 << 16;

/// Parse the text of a `cluster.toml`; `path` names the file in errors.
pub fn parse_cluster(text: &str, path: &Path) -> Result<ClusterSpec, ClusterError> {
    let source = Source { text, path };
    let raw: RawCluster = toml::from_str(text).map_err(|e| source.toml_error(&e))?;

    let network = NetworkSpec {
        latency_s: source.duration(&raw.network.latency, "network.latency")?,
        bandwidth_bps: source.rate(&raw.network.bandwidth, "network.bandwidth")?,
    };

    if raw.node.is_empty() {
        return Err(source.error(
            0..0,
            "node",
            "no [[node]] table: describe at least one node kind".to_string(),
        ));
    }
    let mut nodes = Vec::new();
    let mut loads = Vec::new();
    for node in &raw.node {
        let count = match &node.count {
            None => 1,
            Some(count) => source.count(count)?,
        };
        let spec = NodeSpec {
            cpu: source.cpu(&node.cpu)?,
            memory_bytes: source.size(&node.memory, "node.memory", 1)?,
            disk_read_bps: source.rate(&node.disk_read, "node.disk_read")?,
            disk_write_bps: source.rate(&node.disk_write, "node.disk_write")?,
            disk_latency_s: source.duration(&node.disk_latency, "node.disk_latency")?,
        };
        let steps = source.load_steps(&node.load, spec.memory_bytes)?;
        nodes.extend(std::iter::repeat(spec).take(count));
        loads.extend(std::iter::repeat(steps).take(count));
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCluster {
    network: RawNetwork,
    #[serde(default)]
    node: Vec<RawNode>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNetwork {
    latency: Spanned<toml::Value>,
    bandwidth: Spanned<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    count: Option<Spanned<toml::Value>>,
    cpu: Spanned<toml::Value>,
    memory: Spanned<toml::Value>,
    disk_read: Spanned<toml::Value>,
    disk_write: Spanned<toml::Value>,
    disk_latency: Spanned<toml::Value>,
    #[serde(default)]
    load: Vec<Spanned<RawLoad>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLoad {
    at: Option<Spanned<toml::Value>>,
    at_iteration: Option<Spanned<toml::Value>>,
    cpu: Option<Spanned<toml::Value>>,
    memory: Option<Spanned<toml::Value>>,
}

struct Source<'a> {
    text: &'a str,
    path: &'a Path,
}

impl Source<'_> {
    /// A latency: zero is allowed (no added latency), negative is not.
    fn duration(&self, value: &Spanned<toml::Value>, field: &str) -> Result<f64, ClusterError> {
        let text = self.string(value, field, "a time such as \"50us\"")?;
        let seconds = parse_duration(text).map_err(|m| self.error(value.span(), field, m))?;
        if seconds < 0.0 {
            return Err(self.error(
                value.span(),
                field,
                format!("must not be negative, found \"{text}\""),
            ));
        }
        Ok(seconds)
    }

    fn rate(&self, value: &Spanned<toml::Value>, field: &str) -> Result<f64, ClusterError> {
        let text = self.string(value, field, "a rate such as \"200MB/s\"")?;
        let rate = parse_rate(text).map_err(|m| self.error(value.span(), field, m))?;
        if rate <= 0.0 {
            return Err(self.error(
                value.span(),
                field,
                format!("must be positive, found \"{text}\""),
            ));
        }
        Ok(rate)
    }

    /// A size in bytes, at least `least`.
    fn size(
        &self,
        value: &Spanned<toml::Value>,
        field: &str,
        least: u64,
    ) -> Result<u64, ClusterError> {
        let text = self.string(value, field, "a size such as \"48MiB\"")?;
        let bytes = parse_size(text).map_err(|m| self.error(value.span(), field, m))?;
        if bytes < least as f64 {
            let least = match least {
                1 => "one byte".to_string(),
                n => format!("{n} bytes"),
            };
            return Err(self.error(
                value.span(),
                field,
                format!("must be at least {least}, found \"{text}\""),
            ));
        }
        if bytes >= u64::MAX as f64 {
            return Err(self.error(value.span(), field, format!("\"{text}\" is too large")));
        }
        Ok(bytes as u64)
    }

    /// A node's load schedule (`[[node.load]]` tables, in order); `memory` is the node's.
    fn load_steps(
        &self,
        raw: &[Spanned<RawLoad>],
        memory: u64,
    ) -> Result<Vec<LoadStep>, ClusterError> {
        let mut steps: Vec<LoadStep> = Vec::with_capacity(raw.len());
        for table in raw {
            let load = table.get_ref();
            let (at, at_span, at_field) = match (&load.at, &load.at_iteration) {
                (Some(_), Some(it)) => {
                    return Err(self.error(
                        it.span(),
                        "node.load.at_iteration",
                        "give either `at` (a time into the run) or `at_iteration`, not both"
                            .to_string(),
                    ))
                }
                (None, None) => {
                    return Err(self.error(
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
            if load.cpu.is_none() && load.memory.is_none() {
                return Err(self.error(
                    table.span(),
                    "node.load",
                    "changes nothing: give the CPU share (`cpu = 0.5`) and/or the memory \
                     (`memory = \"8MiB\"`) other work takes from then on"
                        .to_string(),
                ));
            }
            let cpu_share = load.cpu.as_ref().map(|c| self.share(c)).transpose()?;
            let memory_bytes = match &load.memory {
                None => None,
                Some(value) => {
                    let bytes = self.size(value, "node.load.memory", 0)?;
                    if bytes >= memory {
                        return Err(self.error(
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
                    return Err(self.error(at_span, at_field, message));
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
    fn share(&self, value: &Spanned<toml::Value>) -> Result<f64, ClusterError> {
        let field = "node.load.cpu";
        let share = self.number(
            value,
            field,
            "the share of the node's CPU other work takes, such as 0.5",
        )?;
        if !(0.0..1.0).contains(&share) {
            return Err(self.error(
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
    fn iteration(&self, value: &Spanned<toml::Value>) -> Result<u64, ClusterError> {
        let field = "node.load.at_iteration";
        match value.get_ref() {
            toml::Value::Integer(i) if *i >= 0 => Ok(*i as u64),
            toml::Value::Integer(i) => Err(self.error(
                value.span(),
                field,
                format!("must not be negative (iterations count from 0), found {i}"),
            )),
            other => Err(self.error(
                value.span(),
                field,
                format!(
                    "expected an iteration number such as 20, found {}",
                    describe(other)
                ),
            )),
        }
    }

    /// A number (integer or float), described as `expected` when it is something else.
    fn number(
        &self,
        value: &Spanned<toml::Value>,
        field: &str,
        expected: &str,
    ) -> Result<f64, ClusterError> {
        match value.get_ref() {
            toml::Value::Float(f) => Ok(*f),
            toml::Value::Integer(i) => Ok(*i as f64),
            other => Err(self.error(
                value.span(),
                field,
                format!("expected {expected}, found {}", describe(other)),
            )),
        }
    }

    fn cpu(&self, value: &Spanned<toml::Value>) -> Result<f64, ClusterError> {
        let field = "node.cpu";
        let cpu = self.number(
            value,
            field,
            "a relative CPU power such as 0.5 (a number, 1.0 = this machine)",
        )?;
        if !(cpu.is_finite() && cpu > 0.0) {
            return Err(self.error(
                value.span(),
                field,
                format!("must be a positive number, found {cpu}"),
            ));
        }
        Ok(cpu)
    }

    fn count(&self, value: &Spanned<toml::Value>) -> Result<usize, ClusterError> {
        let field = "node.count";
        let toml::Value::Integer(count) = value.get_ref() else {
            return Err(self.error(
                value.span(),
                field,
                format!(
                    "expected a whole number of nodes, found {}",
                    describe(value.get_ref())
                ),
            ));
        };
        if !(1..=MAX_COUNT).contains(count) {
            return Err(self.error(
                value.span(),
                field,
                format!("must be between 1 and {MAX_COUNT}, found {count}"),
            ));
        }
        Ok(*count as usize)
    }

    fn string<'v>(
        &self,
        value: &'v Spanned<toml::Value>,
        field: &str,
        expected: &str,
    ) -> Result<&'v str, ClusterError> {
        match value.get_ref() {
            toml::Value::String(s) => Ok(s),
            other => Err(self.error(
                value.span(),
                field,
                format!(
                    "expected a quoted string with a unit, {expected}, found {}",
                    describe(other)
                ),
            )),
        }
    }

    fn error(&self, span: Range<usize>, field: &str, message: String) -> ClusterError {
        let (line, column) = line_column(self.text, span.start);
        ClusterError::Invalid {
            path: self.path.to_path_buf(),
            line,
            column,
            field: Some(field.to_string()),
            message,
        }
    }

    /// Turn a TOML syntax or serde error into a located error. Serde names unknown and missing
    /// fields in backquotes; for other errors the field is the key written on the error's line.
    fn toml_error(&self, error: &toml::de::Error) -> ClusterError {
        let offset = error.span().map_or(0, |span| span.start);
        let (line, column) = line_column(self.text, offset);
        let message = error.message().trim().to_string();
        let field = if message.starts_with("unknown field") || message.starts_with("missing field")
        {
            backquoted(&message).map(str::to_string)
        } else {
            key_on_line(self.text, offset)
        };
        ClusterError::Invalid {
            path: self.path.to_path_buf(),
            line,
            column,
            field,
            message,
        }
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

fn backquoted(message: &str) -> Option<&str> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(&message[start..start + len])
}

/// The bare key of a `key = value` line containing `offset`, if that line has one.
fn key_on_line(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let start = text.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next()?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    let is_bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    is_bare.then(|| key.to_string())
}

fn describe(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => format!("the string \"{s}\""),
        toml::Value::Integer(i) => format!("the number {i}"),
        toml::Value::Float(f) => format!("the number {f}"),
        toml::Value::Boolean(b) => format!("the boolean {b}"),
        toml::Value::Datetime(d) => format!("the date {d}"),
        toml::Value::Array(_) => "an array".to_string(),
        toml::Value::Table(_) => "a table".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based_and_count_characters() {
        let text = "ab\nµcd\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 3), (2, 1));
        // "µ" is two bytes: the byte offset 5 is the third character of line 2.
        assert_eq!(line_column(text, 5), (2, 2));
        assert_eq!(line_column(text, 100), (3, 1));
    }

    #[test]
    fn key_on_line_finds_bare_keys_only() {
        let text = "[node]\ncpu = \"x\"\n\"quoted key\" = 1\n";
        assert_eq!(key_on_line(text, 10), Some("cpu".to_string()));
        assert_eq!(key_on_line(text, 0), None);
        assert_eq!(key_on_line(text, 20), None);
    }
}
