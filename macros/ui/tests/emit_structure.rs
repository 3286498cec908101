//! `--emit-structure FILE` on a program whose solver is `#[mheta::solver]`: the file is the
//! embedded structure, byte for byte what `mheta analyze <crate> --format json` writes.

use mheta::{Args, DistributionSpec};

#[test]
fn emit_structure_writes_the_analyzers_json() {
    let dir = std::env::temp_dir().join(format!("mheta-macros-emit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("structure.json");
    let args = Args {
        ranks: Some(2),
        rows: Some(6),
        iterations: 1,
        distribution: DistributionSpec::Block,
        emit_structure: Some(path.clone()),
        ..Args::default()
    };
    mheta::launch(&args, |ctx| mheta_macros_tests::heat(ctx, 4, 1)).unwrap();
    let written = std::fs::read_to_string(&path).unwrap();
    let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let analysis = mheta_analyzer::analyze_path(crate_dir, &mheta_analyzer::Options::default());
    assert_eq!(
        written,
        mheta_analyzer::emit::json::render(&analysis.structure)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
