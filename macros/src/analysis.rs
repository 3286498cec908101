//! Running the analyzer library from inside the macro, and finding the annotated function in
//! its result.
//!
//! In order of preference, the analysis covers: (1) the enclosing crate (`CARGO_MANIFEST_DIR`,
//! with its mheta.toml) — what `mheta analyze <crate>` sees, so the embedded structure equals the
//! CLI's byte for byte; (2) the file holding the function, when the crate's module tree does not
//! reach it (integration tests, examples, benches); (3) the function's own tokens laid out at
//! their source positions (no manifest, no readable file, e.g. a doctest). The function is
//! found by name and by the position of its name, so ids always come from the same analysis as
//! the statements they are matched to.
//!
//! The analyzer parses source text with proc-macro2. Inside a proc macro proc-macro2 would hand
//! that text to the compiler, whose spans carry no positions of the parsed text, so the analysis
//! runs with proc-macro2's fallback implementation forced ([`ForcedFallback`]).

use std::path::{Path, PathBuf};

use mheta_analyzer::{analyze_path, analyze_source, Analysis, Options};
use mheta_format::{Solver, Structure};

use crate::position::Pos;

/// Where the annotated function is.
#[derive(Debug, Clone)]
pub struct FnSite {
    /// The function's name.
    pub name: String,
    /// Where its name starts.
    pub ident: Pos,
    /// The file the compiler read it from, when it is a real file.
    pub file: Option<PathBuf>,
}

/// Which analysis the ids come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Crate,
    File,
    Tokens,
}

/// The analysis the function was found in.
#[derive(Debug)]
pub struct Found {
    pub structure: Structure,
    /// The structure file's text (`mheta analyze --format json`).
    pub json: String,
    /// Index of the function in `structure.solvers`.
    pub solver: usize,
    pub scope: Scope,
    /// mheta.toml, when the crate has one (a build dependency of the expansion).
    pub config: Option<PathBuf>,
}

impl Found {
    pub fn solver(&self) -> &Solver {
        &self.structure.solvers[self.solver]
    }
}

/// Analyses the code around `site`; `layout` gives the function's text for the last resort.
pub fn analyze(site: &FnSite, layout: impl FnOnce() -> String) -> Result<Found, String> {
    let options = Options::default();
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .filter(|d| d.join("Cargo.toml").is_file());
    if let Some(dir) = &manifest {
        let analysis = guarded(|| analyze_path(dir, &options))?;
        if let Some(found) = find(analysis, site, Scope::Crate) {
            let config = Some(dir.join("mheta.toml")).filter(|p| p.is_file());
            return Ok(Found { config, ..found });
        }
    }
    if let Some(file) = site.file.as_ref().filter(|f| f.is_file()) {
        if let Ok(text) = std::fs::read_to_string(file) {
            let name = display_name(file, manifest.as_deref());
            let analysis = guarded(|| analyze_source(&name, &text, &options))?;
            if let Some(found) = find(analysis, site, Scope::File) {
                return Ok(found);
            }
        }
    }
    let name = format!("{}.rs", site.name);
    let text = layout();
    let analysis = guarded(|| analyze_source(&name, &text, &options))?;
    find(analysis, site, Scope::Tokens).ok_or_else(|| {
        format!(
            "the analyzer did not find `{}` as a solver in the crate, its file or its own tokens",
            site.name
        )
    })
}

/// A file's name as the CLI would show it from the crate root.
fn display_name(file: &Path, root: Option<&Path>) -> String {
    root.and_then(|r| file.strip_prefix(r).ok())
        .unwrap_or(file)
        .display()
        .to_string()
}

fn find(analysis: Analysis, site: &FnSite, scope: Scope) -> Option<Found> {
    let solver = analysis
        .structure
        .solvers
        .iter()
        .position(|s| matches(s, site, scope))?;
    let json = mheta_analyzer::emit::json::render(&analysis.structure);
    Some(Found {
        structure: analysis.structure,
        json,
        solver,
        scope,
        config: None,
    })
}

fn matches(solver: &Solver, site: &FnSite, scope: Scope) -> bool {
    let last = solver.name.rsplit("::").next().unwrap_or(&solver.name);
    let same_place = (solver.span.line, solver.span.column.saturating_sub(1)) == site.ident;
    let same_file = match (&site.file, scope) {
        (Some(file), Scope::Crate) => file.ends_with(&solver.span.file),
        _ => true,
    };
    last == site.name && same_place && same_file
}

/// Runs an analysis with proc-macro2's fallback forced, turning a panic into an error.
pub(crate) fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    let _fallback = ForcedFallback::new();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        format!("the analyzer failed: {message}")
    })
}

/// Forces proc-macro2's fallback implementation while alive.
struct ForcedFallback;

impl ForcedFallback {
    fn new() -> Self {
        proc_macro2::fallback::force();
        ForcedFallback
    }
}

impl Drop for ForcedFallback {
    fn drop(&mut self) {
        proc_macro2::fallback::unforce();
    }
}
