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
    pub solver: SolverConfig,
    pub comm: CommConfig,
    pub io: IoConfig,
    pub variables: VariablesConfig,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SolverConfig {
    pub functions: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CommConfig {
    pub functions: Vec<String>,
    pub communicators: Vec<String>,
    pub patterns: BTreeMap<String, Pattern>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IoConfig {
    pub read: Vec<String>,
    pub write: Vec<String>,
    pub prefetch: Vec<String>,
    pub wait: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VariablesConfig {
    pub distributed: Vec<String>,
    pub replicated: Vec<String>,
}

/// Errors reading `mheta.toml`.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read `{file}`: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Parse { file: String, message: String },
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
    pub fn is_solver(&self, path: &str) -> bool {
        self.solver.functions.iter().any(|e| names(e, path))
    }

    pub fn is_comm_function(&self, path: &str) -> bool {
        self.comm.functions.iter().any(|e| names(e, path))
    }

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
