//! Diagnostics: what the analysis found wrong, with a source location, rendered rustc-style.
//!
//! Analysis passes never fail; they push [`Diagnostic`]s into a [`Diagnostics`] sink and carry
//! on (DESIGN §3.9). Locations are [`Loc`]s into the loaded [`SourceMap`]; the renderer uses
//! codespan-reporting to print `error: …` / `--> file:line:column` with the source snippet.

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, termcolor::NoColor};
use mheta_runtime::format::{self, Level};

use crate::load::SourceMap;

/// A file in the [`SourceMap`].
pub type FileId = usize;

/// A source range: `file`, start and end as (1-based line, 0-based character column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Loc {
    pub file: FileId,
    pub start: (u32, u32),
    pub end: (u32, u32),
    /// Where the analysis reached this code through inlined calls: 0 in the function itself,
    /// else an inline site of the [`SourceMap`] ([`SourceMap::inline_site`]), so two inlined
    /// copies of one callee have different locations.
    pub via: u32,
}

impl Loc {
    /// The location of a syn/proc-macro2 span in `file`.
    pub fn of(file: FileId, span: proc_macro2::Span) -> Loc {
        let (s, e) = (span.start(), span.end());
        Loc {
            file,
            start: (s.line as u32, s.column as u32),
            end: (e.line as u32, e.column as u32),
            via: 0,
        }
    }

    /// The same location reached through inline site `via`.
    pub fn via(self, via: u32) -> Loc {
        Loc { via, ..self }
    }

    /// The smallest location covering both (the start of `self` to the end of `other` when they
    /// are in the same file, `self` otherwise).
    pub fn to(self, other: Loc) -> Loc {
        if self.file != other.file {
            return self;
        }
        Loc {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
            via: self.via,
        }
    }
}

/// One problem found while analysing.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub level: Level,
    pub message: String,
    pub loc: Option<Loc>,
    /// Text under the caret in the snippet.
    pub label: String,
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>, loc: Option<Loc>) -> Self {
        Diagnostic {
            level: Level::Error,
            message: message.into(),
            loc,
            label: String::new(),
            notes: vec![],
        }
    }

    pub fn warning(message: impl Into<String>, loc: Option<Loc>) -> Self {
        Diagnostic {
            level: Level::Warning,
            message: message.into(),
            loc,
            label: String::new(),
            notes: vec![],
        }
    }

    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

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
    pub fn push(&mut self, diagnostic: Diagnostic) {
        if !self.0.contains(&diagnostic) {
            self.0.push(diagnostic);
        }
    }

    pub fn has_errors(&self) -> bool {
        self.0.iter().any(|d| d.level == Level::Error)
    }
}

/// Renders diagnostics rustc-style (no colour), one after the other.
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
