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

use mheta_format::Pattern;
use serde::Deserialize;

use crate::diagnostics::{Diagnostic, Diagnostics};

/// The parsed `mheta.toml` (all sections optional).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
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
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SolverConfig {
    /// Solver functions, each a name or a path suffix (`solve`, `Grid::run`), analysed as if
    /// marked `#[mheta::solver]`. An entry that names no function of a loaded crate is an
    /// error.
    pub functions: Vec<String>,
}

/// `[comm]` of `mheta.toml` (DESIGN §3.3).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
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
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
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
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
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
    toml::from_str(text).map_err(|e| ConfigError::Parse {
        file: file.to_string(),
        message: e.to_string().trim().to_string(),
    })
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
