//! Parsing `cluster.toml` into a [`ClusterSpec`] (DESIGN §5).
//!
//! toml's parser reads the file into a document of spanned values; every table is then checked
//! here by hand — its keys against the fields it may have, each value's type, unit and range —
//! so that each problem (syntax, an unknown or missing field, a value of the wrong type, a wrong
//! unit, a value that must be positive) becomes a [`ClusterError`] naming the file, the line and
//! column, and the field. Parsing never panics. (Serde's derived deserializers did the table
//! checks before; instantiated over toml's deserializer they were half of this crate's compiled
//! code, which every program linking the runtime built.)

use std::ops::Range;
use std::path::Path;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::units::{parse_duration, parse_rate, parse_size};
use super::ClusterError;
use super::{ClusterSpec, LoadAt, LoadStep, NetworkSpec, NodeSpec};

/// The most ranks one `[[node]]` table may expand to.
pub const MAX_COUNT: i64 = 1 << 16;

type Value<'i> = Spanned<DeValue<'i>>;

/// Parse the text of a `cluster.toml`; `path` names the file in errors.
pub fn parse_cluster(text: &str, path: &Path) -> Result<ClusterSpec, ClusterError> {
    let source = Source { text, path };
    let document = DeTable::parse(text).map_err(|e| source.toml_error(&e))?;
    let top = source.fields(document.get_ref(), document.span(), &["network", "node"])?;

    let network = source.table(top.required("network")?, "network")?;
    let network = source.fields(network.get_ref(), network.span(), &["latency", "bandwidth"])?;
    let network = NetworkSpec {
        latency_s: source.duration(network.required("latency")?, "network.latency")?,
        bandwidth_bps: source.rate(network.required("bandwidth")?, "network.bandwidth")?,
    };

    let node_tables = match top.get("node") {
        None => &[][..],
        Some(value) => source.tables(value, "node")?,
    };
    if node_tables.is_empty() {
        return Err(source.error(
            0..0,
            "node",
            "no [[node]] table: describe at least one node kind".to_string(),
        ));
    }
    let mut nodes = Vec::new();
    let mut loads = Vec::new();
    for table in node_tables {
        let node = source.table(table, "node")?;
        let node = source.fields(
            node.get_ref(),
            node.span(),
            &[
                "count",
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
            Some(count) => source.count(count)?,
        };
        let spec = NodeSpec {
            cpu: source.cpu(node.required("cpu")?)?,
            memory_bytes: source.size(node.required("memory")?, "node.memory", 1)?,
            disk_read_bps: source.rate(node.required("disk_read")?, "node.disk_read")?,
            disk_write_bps: source.rate(node.required("disk_write")?, "node.disk_write")?,
            disk_latency_s: source.duration(node.required("disk_latency")?, "node.disk_latency")?,
        };
        let load_tables = match node.get("load") {
            None => &[][..],
            Some(value) => source.tables(value, "node.load")?,
        };
        let steps = source.load_steps(load_tables, spec.memory_bytes)?;
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

/// A table whose keys were checked against the fields it may have.
struct Fields<'t, 'i> {
    table: &'t DeTable<'i>,
    /// The table's span, where a missing field is reported.
    span: Range<usize>,
    source: &'t Source<'t>,
}

impl<'t, 'i> Fields<'t, 'i> {
    fn get(&self, name: &str) -> Option<&'t Value<'i>> {
        self.table.get(name)
    }

    fn required(&self, name: &str) -> Result<&'t Value<'i>, ClusterError> {
        self.get(name).ok_or_else(|| {
            self.source
                .error(self.span.clone(), name, format!("missing field `{name}`"))
        })
    }
}

struct Source<'a> {
    text: &'a str,
    path: &'a Path,
}

impl Source<'_> {
    /// A latency: zero is allowed (no added latency), negative is not.
    fn duration(&self, value: &Value<'_>, field: &str) -> Result<f64, ClusterError> {
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

    fn rate(&self, value: &Value<'_>, field: &str) -> Result<f64, ClusterError> {
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
    fn size(&self, value: &Value<'_>, field: &str, least: u64) -> Result<u64, ClusterError> {
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
    fn load_steps(&self, tables: &[Value<'_>], memory: u64) -> Result<Vec<LoadStep>, ClusterError> {
        let mut steps: Vec<LoadStep> = Vec::with_capacity(tables.len());
        for table in tables {
            let load = self.table(table, "node.load")?;
            let load = self.fields(
                load.get_ref(),
                load.span(),
                &["at", "at_iteration", "cpu", "memory"],
            )?;
            let (at, at_span, at_field) = match (load.get("at"), load.get("at_iteration")) {
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
            let (cpu, memory_taken) = (load.get("cpu"), load.get("memory"));
            if cpu.is_none() && memory_taken.is_none() {
                return Err(self.error(
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
    fn share(&self, value: &Value<'_>) -> Result<f64, ClusterError> {
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
    fn iteration(&self, value: &Value<'_>) -> Result<u64, ClusterError> {
        let field = "node.load.at_iteration";
        match integer(value.get_ref()) {
            Some(i) if i >= 0 => Ok(i as u64),
            Some(i) => Err(self.error(
                value.span(),
                field,
                format!("must not be negative (iterations count from 0), found {i}"),
            )),
            None => Err(self.error(
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
    fn number(&self, value: &Value<'_>, field: &str, expected: &str) -> Result<f64, ClusterError> {
        let number = match value.get_ref() {
            DeValue::Float(f) => f.as_str().parse::<f64>().ok(),
            DeValue::Integer(_) => integer(value.get_ref()).map(|i| i as f64),
            _ => None,
        };
        number.ok_or_else(|| {
            self.error(
                value.span(),
                field,
                format!("expected {expected}, found {}", describe(value.get_ref())),
            )
        })
    }

    fn cpu(&self, value: &Value<'_>) -> Result<f64, ClusterError> {
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

    fn count(&self, value: &Value<'_>) -> Result<usize, ClusterError> {
        let field = "node.count";
        let DeValue::Integer(written) = value.get_ref() else {
            return Err(self.error(
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
            _ => Err(self.error(
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
    ) -> Result<&'v str, ClusterError> {
        match value.get_ref() {
            DeValue::String(s) => Ok(s),
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

    /// A table (`[network]`, one `[[node]]`) named `field` in errors.
    fn table<'v, 'i>(
        &self,
        value: &'v Value<'i>,
        field: &str,
    ) -> Result<Spanned<&'v DeTable<'i>>, ClusterError> {
        match value.get_ref() {
            DeValue::Table(table) => Ok(Spanned::new(value.span(), table)),
            other => Err(self.error(
                value.span(),
                field,
                format!("expected a table `[{field}]`, found {}", describe(other)),
            )),
        }
    }

    /// An array of tables (`[[node]]`, `[[node.load]]`) named `field` in errors.
    fn tables<'v, 'i>(
        &self,
        value: &'v Value<'i>,
        field: &str,
    ) -> Result<&'v [Value<'i>], ClusterError> {
        match value.get_ref() {
            DeValue::Array(tables) => Ok(tables),
            other => Err(self.error(
                value.span(),
                field,
                format!(
                    "expected `[[{field}]]` tables (one per kind), found {}",
                    describe(other)
                ),
            )),
        }
    }

    /// `table`'s keys checked against `known`: a key not among them is an error at the key,
    /// naming it (the first in the file if there are several).
    fn fields<'t, 'i>(
        &'t self,
        table: &'t DeTable<'i>,
        span: Range<usize>,
        known: &[&str],
    ) -> Result<Fields<'t, 'i>, ClusterError> {
        let unknown = table
            .keys()
            .filter(|key| !known.contains(&key.get_ref().as_ref()))
            .min_by_key(|key| key.span().start);
        if let Some(key) = unknown {
            let name = key.get_ref().as_ref();
            let expected: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
            let expected = match expected.as_slice() {
                [one] => one.clone(),
                [a, b] => format!("{a} or {b}"),
                all => format!("one of {}", all.join(", ")),
            };
            return Err(self.error(
                key.span(),
                name,
                format!("unknown field `{name}`, expected {expected}"),
            ));
        }
        Ok(Fields {
            table,
            span,
            source: self,
        })
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

    /// Turn a TOML syntax error into a located error; the field is the key written on the
    /// error's line.
    fn toml_error(&self, error: &toml::de::Error) -> ClusterError {
        let offset = error.span().map_or(0, |span| span.start);
        let (line, column) = line_column(self.text, offset);
        ClusterError::Invalid {
            path: self.path.to_path_buf(),
            line,
            column,
            field: key_on_line(self.text, offset),
            message: error.message().trim().to_string(),
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

/// The value of a TOML integer, `None` for anything else or one beyond `i64`.
fn integer(value: &DeValue<'_>) -> Option<i64> {
    match value {
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix()).ok(),
        _ => None,
    }
}

fn describe(value: &DeValue<'_>) -> String {
    match value {
        DeValue::String(s) => format!("the string \"{s}\""),
        DeValue::Integer(i) => format!("the number {i}"),
        DeValue::Float(f) => format!("the number {f}"),
        DeValue::Boolean(b) => format!("the boolean {b}"),
        DeValue::Datetime(d) => format!("the date {d}"),
        DeValue::Array(_) => "an array".to_string(),
        DeValue::Table(_) => "a table".to_string(),
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
