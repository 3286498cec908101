//! Diagnostics: what the analysis found wrong, with a source location, rendered rustc-style.
//!
//! Analysis passes never fail; they push [`Diagnostic`]s into a [`Diagnostics`] sink and carry
//! on (DESIGN §3.9). Locations are [`Loc`]s into the loaded [`SourceMap`]; the renderer (feature
//! `render`) uses codespan-reporting to print `error: …` / `--> file:line:column` with the
//! source snippet.

#[cfg(feature = "render")]
use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
#[cfg(feature = "render")]
use codespan_reporting::files::SimpleFiles;
#[cfg(feature = "render")]
use codespan_reporting::term::{self, termcolor::NoColor};
use mheta_format::{self as format, Level};

use crate::sources::SourceMap;
pub use crate::sources::{FileId, Loc};

/// One problem found while analysing.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    /// Error or warning. Any error makes the analysis fail (`mheta analyze` exits with 1).
    pub level: Level,
    /// The headline, after `error: ` or `warning: `.
    pub message: String,
    /// Where the problem is; `None` when it has no place in the sources (an unreadable file, a
    /// bad `mheta.toml`).
    pub loc: Option<Loc>,
    /// Text under the caret in the snippet.
    pub label: String,
    /// Lines printed after the snippet, each as `= …`.
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// An error with no label and no notes.
    pub fn error(message: impl Into<String>, loc: Option<Loc>) -> Self {
        Diagnostic {
            level: Level::Error,
            message: message.into(),
            loc,
            label: String::new(),
            notes: vec![],
        }
    }

    /// A warning with no label and no notes.
    pub fn warning(message: impl Into<String>, loc: Option<Loc>) -> Self {
        Diagnostic {
            level: Level::Warning,
            message: message.into(),
            loc,
            label: String::new(),
            notes: vec![],
        }
    }

    /// The same diagnostic with `label` under the caret.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// The same diagnostic with one more note.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// The structure-file form of this diagnostic.
    pub fn to_format(&self, sources: &SourceMap) -> format::Diagnostic {
        format::Diagnostic {
            level: self.level,
            message: self.message.clone(),
            span: self.loc.map(|l| sources.span(l)),
        }
    }
}

/// An ordered collection of diagnostics (a pass's output channel).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Adds a diagnostic unless an equal one is already there.
    pub fn push(&mut self, diagnostic: Diagnostic) {
        if !self.0.contains(&diagnostic) {
            self.0.push(diagnostic);
        }
    }

    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(|d| d.level == Level::Error)
    }
}

/// Renders diagnostics rustc-style (no colour), one after the other (feature `render`).
#[cfg(feature = "render")]
pub fn render(diagnostics: &[Diagnostic], sources: &SourceMap) -> String {
    let mut files = SimpleFiles::new();
    let ids: Vec<usize> = sources
        .files()
        .iter()
        .map(|f| files.add(f.name.clone(), f.text.clone()))
        .collect();
    let config = term::Config::default();
    let mut out = NoColor::new(Vec::new());
    for d in diagnostics {
        let mut cs = match d.level {
            Level::Error => CsDiagnostic::error(),
            Level::Warning => CsDiagnostic::warning(),
        }
        .with_message(&d.message)
        .with_notes(d.notes.clone());
        if let Some(loc) = d.loc {
            if let (Some(&id), Some(range)) = (ids.get(loc.file), sources.byte_range(loc)) {
                cs = cs.with_labels(vec![Label::primary(id, range).with_message(&d.label)]);
            }
        }
        if term::emit(&mut out, &config, &files, &cs).is_err() {
            // The snippet could not be rendered (a location outside the file): fall back to a
            // plain line so the message is never lost.
            let head = match d.level {
                Level::Error => "error",
                Level::Warning => "warning",
            };
            let at = d
                .loc
                .map(|l| sources.span(l))
                .map(|s| format!("{}:{}:{}", s.file, s.line, s.column));
            let text = format!("{head}: {}\n  --> {}\n", d.message, at.unwrap_or_default());
            out.get_mut().extend_from_slice(text.as_bytes());
        }
    }
    String::from_utf8_lossy(&out.into_inner()).into_owned()
}
