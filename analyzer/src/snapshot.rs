//! The structure of a crate as text for snapshot tests in the crate's own `tests/`.

use std::path::Path;

use crate::emit::{self, Format};
use crate::{analyze_path, Options};

/// The structure `mheta analyze` extracts from the crate at `crate_dir`, as a text a snapshot
/// test can keep: the indented tree (`mheta analyze --format text`), then every diagnostic.
///
/// It holds nothing that changes between runs or machines: every span names its file relative
/// to the crate (`src/main.rs:72:5`), whatever `crate_dir` is; sections, stages, events and
/// variables come in program order, diagnostics in the order the analysis meets them; there are
/// no times, digests or absolute paths. It changes when the extracted structure changes: a
/// stage, event or variable class added, removed or moved.
///
/// In a crate's `tests/structure.rs`, with `insta` and `mheta-analyzer` as dev-dependencies:
///
/// ```no_run
/// #[test]
/// fn structure() {
///     insta::assert_snapshot!(mheta_analyzer::snapshot(env!("CARGO_MANIFEST_DIR")));
/// }
/// ```
///
/// A change then fails the test with a line diff; `cargo insta review` accepts it.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("mheta-snapshot-doc-{}", std::process::id()));
/// std::fs::create_dir_all(dir.join("src")).unwrap();
/// std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"halo\"\nversion = \"0.1.0\"\n").unwrap();
/// std::fs::write(
///     dir.join("src/main.rs"),
///     "use mpi::traits::*;\n\
///      fn solve(world: &mpi::topology::SimpleCommunicator, u: &mut Vec<f64>) {\n\
///          for _ in 0..100 {\n\
///              for v in u.iter_mut() { *v *= 0.5; }\n\
///              let mut total = 0.0;\n\
///              world.all_reduce_into(&u[0], &mut total, mpi::collective::SystemOperation::sum());\n\
///          }\n\
///      }\n\
///      fn main() {}\n",
/// )
/// .unwrap();
/// let text = mheta_analyzer::snapshot(&dir);
/// assert!(text.starts_with("crate halo\nsolver halo::solve"), "{text}");
/// assert!(text.contains("comm event 0 reduction"), "{text}");
/// assert!(!text.contains(&dir.display().to_string()));
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn snapshot(crate_dir: impl AsRef<Path>) -> String {
    let analysis = analyze_path(crate_dir.as_ref(), &Options::default());
    let mut text = emit::render(&analysis.structure, Format::Text);
    let diagnostics = analysis.render_diagnostics();
    text.push_str("\n--- diagnostics ---\n");
    if diagnostics.is_empty() {
        text.push_str("(none)\n");
    } else {
        text.push_str(&diagnostics);
    }
    text
}
