//! Output formats of a structure: JSON (the contract), an indented text tree, Graphviz DOT
//! (feature `dot`).

#[cfg(feature = "dot")]
pub mod dot;
pub mod json;
pub mod text;

/// The output formats `mheta analyze --format` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// `mheta-structure/1` JSON, the contract other tools read (the default).
    #[default]
    Json,
    /// An indented text tree for people.
    Text,
    /// A Graphviz DOT graph of sections, tiles, stages, events and their dependencies (feature
    /// `dot`).
    #[cfg(feature = "dot")]
    Dot,
}

/// Renders a structure in `format`.
pub fn render(structure: &mheta_format::Structure, format: Format) -> String {
    match format {
        Format::Json => json::render(structure),
        Format::Text => text::render(structure),
        #[cfg(feature = "dot")]
        Format::Dot => dot::render(structure),
    }
}
