//! `mheta.toml`: what the source alone cannot tell the analyzer.
//!
//! ```toml
//! [solver]
//! functions = ["solve", "Grid::run"]       # solver functions (a name or a path suffix)
//!
//! [comm]
//! functions = ["exchange_halo"]            # user functions/methods that are one event each (rule 2)
//! communicators = ["grid.comm", "world"]   # variables or field accesses that are communicators
//! patterns = { exchange_halo = "nearest_neighbor" }
//!
//! [io]
//! read = ["load_rows"]                     # functions/methods that read a variable's data
//! write = ["store_rows"]
//! prefetch = ["start_load"]
//! wait = ["finish_load"]
//!
//! [variables]
//! distributed = ["a", "b"]                 # forced classes, overriding the analysis
//! replicated = ["x"]
//! ```
//! Unknown tables or fields are errors naming the file, line and field.

use std::collections::BTreeMap;
use std::path::Path;

use mheta_format::document::{self, Fields, Problem, Value};
use mheta_format::Pattern;

use crate::diagnostics::{Diagnostic, Diagnostics};

/// The parsed `mheta.toml` (all sections optional).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// `[solver]`: functions to analyse as solvers.
    pub solver: SolverConfig,
    /// `[comm]`: communication the catalogue does not know.
    pub comm: CommConfig,
    /// `[io]`: user functions that do I/O on a variable.
    pub io: IoConfig,
    /// `[variables]`: variable classes forced over the analysis.
    pub variables: VariablesConfig,
}

/// `[solver]` of `mheta.toml` (DESIGN §3.2).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SolverConfig {
    /// Solver functions, each a name or a path suffix (`solve`, `Grid::run`), analysed as if
    /// marked `#[mheta::solver]`. An entry that names no function of a loaded crate is an
    /// error.
    pub functions: Vec<String>,
}

/// `[comm]` of `mheta.toml` (DESIGN §3.3).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommConfig {
    /// User functions or methods (names or path suffixes) each of whose calls is one
    /// communication event (rule 2), as if marked `#[mheta::comm]`.
    pub functions: Vec<String>,
    /// Variables (`world`) or field accesses (`grid.comm`, or the field name alone) that are
    /// communicators; they are taken as rsmpi communicators.
    pub communicators: Vec<String>,
    /// The pattern of the events a user function's calls form, by function name or path suffix
    /// (`exchange_halo = "nearest_neighbor"`); it overrides the pattern the calls suggest.
    pub patterns: BTreeMap<String, Pattern>,
}

/// `[io]` of `mheta.toml`: user functions or methods, by name, that move a variable's data
/// to or from storage. The variable is the receiver of a method or the first argument of a
/// function.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IoConfig {
    /// Functions that read a variable's data.
    pub read: Vec<String>,
    /// Functions that write a variable's data.
    pub write: Vec<String>,
    /// Functions that start reading a variable's data ahead of its use.
    pub prefetch: Vec<String>,
    /// Functions that wait for a prefetch to complete.
    pub wait: Vec<String>,
}

/// `[variables]` of `mheta.toml` (DESIGN §3.7): classes that override the analysis, by
/// variable name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VariablesConfig {
    /// Variables classed distributed (partitioned over the ranks).
    pub distributed: Vec<String>,
    /// Variables classed replicated (whole on every rank); this wins when a name is in both
    /// lists.
    pub replicated: Vec<String>,
}

/// Errors reading `mheta.toml`.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("cannot read `{file}`: {source}")]
    Read {
        /// The file's path.
        file: String,
        /// Why reading failed.
        source: std::io::Error,
    },
    /// The text is not valid TOML or does not fit the schema (an unknown table or field, a
    /// pattern that does not exist).
    #[error("{file}: {message}")]
    Parse {
        /// The file's path.
        file: String,
        /// The TOML parser's message, with the line and the offending field.
        message: String,
    },
}

/// Parses the text of a `mheta.toml`; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Config, ConfigError> {
    read(text).map_err(|problem| {
        let (line, column) = problem.line_column(text);
        let field = problem
            .field
            .map(|f| format!("field `{f}`: "))
            .unwrap_or_default();
        ConfigError::Parse {
            file: file.to_string(),
            message: format!("line {line}, column {column}: {field}{}", problem.message),
        }
    })
}

/// The document checked table by table: every table and field optional, none unknown.
fn read(text: &str) -> Result<Config, Problem> {
    let doc = document::parse(text)?;
    let top = Fields::check(
        doc.get_ref(),
        doc.span(),
        &["solver", "comm", "io", "variables"],
    )?;
    let mut config = Config::default();
    if let Some(value) = top.get("solver") {
        let solver = document::table(value, "solver", &["functions"])?;
        config.solver.functions = list(&solver, "solver", "functions")?;
    }
    if let Some(value) = top.get("comm") {
        let comm = document::table(value, "comm", &["functions", "communicators", "patterns"])?;
        config.comm.functions = list(&comm, "comm", "functions")?;
        config.comm.communicators = list(&comm, "comm", "communicators")?;
        if let Some(value) = comm.get("patterns") {
            config.comm.patterns = patterns(value)?;
        }
    }
    if let Some(value) = top.get("io") {
        let io = document::table(value, "io", &["read", "write", "prefetch", "wait"])?;
        config.io = IoConfig {
            read: list(&io, "io", "read")?,
            write: list(&io, "io", "write")?,
            prefetch: list(&io, "io", "prefetch")?,
            wait: list(&io, "io", "wait")?,
        };
    }
    if let Some(value) = top.get("variables") {
        let variables = document::table(value, "variables", &["distributed", "replicated"])?;
        config.variables = VariablesConfig {
            distributed: list(&variables, "variables", "distributed")?,
            replicated: list(&variables, "variables", "replicated")?,
        };
    }
    Ok(config)
}

/// `[table] name = ["a", "b"]`, empty when absent.
fn list(table: &Fields<'_, '_>, table_name: &str, name: &str) -> Result<Vec<String>, Problem> {
    match table.get(name) {
        None => Ok(Vec::new()),
        Some(value) => document::strings(value, &format!("{table_name}.{name}")),
    }
}

/// `[comm] patterns = { function = "pattern", .. }`.
fn patterns(value: &Value<'_>) -> Result<BTreeMap<String, Pattern>, Problem> {
    let field = "comm.patterns";
    let document::DeValue::Table(table) = value.get_ref() else {
        return Err(Problem::new(
            value.span(),
            field,
            format!(
                "expected a table of function = \"pattern\", found {}",
                document::describe(value.get_ref())
            ),
        ));
    };
    let mut patterns = BTreeMap::new();
    for (function, pattern) in table.iter() {
        let function = function.get_ref().to_string();
        let name = document::string(pattern, field)?;
        let pattern = Pattern::named(name).ok_or_else(|| {
            let known: Vec<&str> = Pattern::ALL.iter().map(|p| p.name()).collect();
            Problem::new(
                pattern.span(),
                field,
                format!(
                    "unknown pattern \"{name}\" for `{function}`, expected one of {}",
                    known.join(", ")
                ),
            )
        })?;
        patterns.insert(function, pattern);
    }
    Ok(patterns)
}

/// Reads `dir/mheta.toml` when it exists; problems become diagnostics and the default config.
pub fn load(dir: &Path, diags: &mut Diagnostics) -> Config {
    let path = dir.join("mheta.toml");
    if !path.is_file() {
        return Config::default();
    }
    let file = path.display().to_string();
    let result = std::fs::read_to_string(&path)
        .map_err(|source| ConfigError::Read {
            file: file.clone(),
            source,
        })
        .and_then(|text| parse(&file, &text));
    result.unwrap_or_else(|e| {
        diags.push(Diagnostic::error(e.to_string(), None));
        Config::default()
    })
}

/// Whether `path` (e.g. `grid::Grid::run`) is named by `entry` (a name or a path suffix).
pub fn names(entry: &str, path: &str) -> bool {
    path == entry || path.ends_with(&format!("::{entry}"))
}

impl Config {
    /// Whether `[solver] functions` names the function at `path`.
    pub fn is_solver(&self, path: &str) -> bool {
        self.solver.functions.iter().any(|e| names(e, path))
    }

    /// Whether `[comm] functions` names the function at `path`: each of its calls is one event.
    pub fn is_comm_function(&self, path: &str) -> bool {
        self.comm.functions.iter().any(|e| names(e, path))
    }

    /// The pattern `[comm] patterns` gives the function at `path`, if any.
    pub fn comm_pattern(&self, path: &str) -> Option<Pattern> {
        self.comm
            .patterns
            .iter()
            .find(|(e, _)| names(e, path))
            .map(|(_, p)| *p)
    }

    /// The I/O operation a user function or method name performs, if configured.
    pub fn io_op(&self, name: &str) -> Option<mheta_format::IoKind> {
        use mheta_format::IoKind;
        let io = &self.io;
        [
            (&io.read, IoKind::Read),
            (&io.write, IoKind::Write),
            (&io.prefetch, IoKind::Prefetch),
            (&io.wait, IoKind::Wait),
        ]
        .into_iter()
        .find(|(list, _)| list.iter().any(|e| names(e, name)))
        .map(|(_, k)| k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_section() {
        let text = r#"
            [solver]
            functions = ["solve"]
            [comm]
            functions = ["exchange"]
            communicators = ["grid.comm"]
            patterns = { exchange = "nearest_neighbor" }
            [io]
            read = ["load"]
            [variables]
            distributed = ["a"]
        "#;
        let c = parse("mheta.toml", text).unwrap();
        assert!(c.is_solver("jacobi::solve"));
        assert!(!c.is_solver("resolve"));
        assert_eq!(c.comm_pattern("exchange"), Some(Pattern::NearestNeighbor));
        assert_eq!(c.io_op("load"), Some(mheta_format::IoKind::Read));
        assert_eq!(c.variables.distributed, ["a"]);
    }

    #[test]
    fn unknown_field_names_file_line_and_field() {
        let err = parse("crate/mheta.toml", "[comm]\nfunctons = []\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("crate/mheta.toml"), "{err}");
        assert!(err.contains("line 2"), "{err}");
        assert!(err.contains("functons"), "{err}");
    }

    #[test]
    fn bad_pattern_is_an_error() {
        let err = parse("m.toml", "[comm]\npatterns = { f = \"ring\" }\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("ring"), "{err}");
    }
}
