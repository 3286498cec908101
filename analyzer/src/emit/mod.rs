//! Output formats of a structure: JSON (the contract), an indented text tree, Graphviz DOT.

pub mod dot;
pub mod json;
pub mod text;

/// The output formats `mheta analyze --format` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Json,
    Text,
    Dot,
}

/// Renders a structure in `format`.
pub fn render(structure: &mheta_format::Structure, format: Format) -> String {
    match format {
        Format::Json => json::render(structure),
        Format::Text => text::render(structure),
        Format::Dot => dot::render(structure),
    }
}
