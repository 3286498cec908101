//! JSON output: `mheta-structure/1`, pretty-printed, field names per DESIGN §3.8.

use mheta_format::Structure;

/// The structure as pretty-printed `mheta-structure/1` JSON, ending with a newline.
pub fn render(structure: &Structure) -> String {
    // Serialising plain data to a string cannot fail (no maps with non-string keys, no I/O).
    let mut s = serde_json::to_string_pretty(structure).unwrap_or_default();
    s.push('\n');
    s
}
