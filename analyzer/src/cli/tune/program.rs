//! The program being tuned: building its release binary with cargo, and running it with the
//! shared runtime flags (DESIGN §5).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _};
use mheta_runtime::format::Measurements;

/// A built program and the flags every one of its runs shares.
pub struct Program {
    pub binary: PathBuf,
    /// `--cluster`, `--clock`, `--rows`, `--ranks` and the pass-through arguments.
    pub common: Vec<String>,
}

/// One run of the program.
pub struct RunSpec<'a> {
    /// `block` or an explicit list `r0,r1,...`.
    pub distribution: &'a str,
    pub iterations: u32,
    pub measurements: &'a Path,
    pub emit_structure: Option<&'a Path>,
    pub trace: Option<&'a Path>,
}

impl Program {
    /// Runs the program instrumented and returns the measurements it wrote.
    pub fn run(&self, spec: &RunSpec<'_>) -> anyhow::Result<Measurements> {
        let mut command = Command::new(&self.binary);
        command
            .args(&self.common)
            .arg("--distribution")
            .arg(spec.distribution)
            .arg("--iterations")
            .arg(spec.iterations.to_string())
            .arg("--instrument")
            .arg("--measurements")
            .arg(spec.measurements);
        if let Some(path) = spec.emit_structure {
            command.arg("--emit-structure").arg(path);
        }
        if let Some(path) = spec.trace {
            command.arg("--trace").arg(path);
        }
        let output = command
            .output()
            .with_context(|| format!("cannot start `{}`", self.binary.display()))?;
        if !output.status.success() {
            bail!(
                "`{}` under distribution {} failed ({}):\n{}",
                self.binary.display(),
                spec.distribution,
                output.status,
                String::from_utf8_lossy(&output.stderr).trim_end()
            );
        }
        let text = std::fs::read_to_string(spec.measurements).with_context(|| {
            format!(
                "the program exited successfully but wrote no measurements to `{}`",
                spec.measurements.display()
            )
        })?;
        serde_json::from_str(&text)
            .with_context(|| format!("`{}` is not valid", spec.measurements.display()))
    }
}

impl Program {
    /// Runs the program uninstrumented for `iterations` and returns the process's wall-clock
    /// seconds.
    pub fn timed(&self, distribution: &str, iterations: u32) -> anyhow::Result<f64> {
        let start = std::time::Instant::now();
        let output = Command::new(&self.binary)
            .args(&self.common)
            .arg("--distribution")
            .arg(distribution)
            .arg("--iterations")
            .arg(iterations.to_string())
            .output()
            .with_context(|| format!("cannot start `{}`", self.binary.display()))?;
        let elapsed = start.elapsed().as_secs_f64();
        if !output.status.success() {
            bail!(
                "`{}` under distribution {distribution} failed ({}):\n{}",
                self.binary.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim_end()
            );
        }
        Ok(elapsed)
    }
}

/// Seconds per iteration from two timed runs of `short` and `long` iterations: the difference
/// cancels start-up, set-up and the final check, which do not depend on the iteration count.
pub fn per_iteration(short: (u32, f64), long: (u32, f64)) -> f64 {
    let iterations = f64::from(long.0.saturating_sub(short.0).max(1));
    ((long.1 - short.1) / iterations).max(0.0)
}

/// Seconds per iteration of a measured run: the slowest node's average iteration time (every
/// node waits for the slowest one at the iteration's closing communication).
pub fn iteration_seconds(measurements: &Measurements) -> f64 {
    measurements
        .nodes
        .iter()
        .map(|n| n.iteration_s)
        .fold(0.0, f64::max)
}

/// Builds the binary of the crate at `dir` with `cargo build --release` and returns its path.
/// Cargo's own output is shown when the build fails.
pub fn build(dir: &Path) -> anyhow::Result<PathBuf> {
    let manifest = dir.join("Cargo.toml");
    if !manifest.is_file() {
        bail!("`{}` has no Cargo.toml", dir.display());
    }
    let (target_dir, binary_name) = locate(&manifest)?;
    let output = Command::new(cargo())
        .args([
            "build",
            "--release",
            "--bin",
            &binary_name,
            "--manifest-path",
        ])
        .arg(&manifest)
        .output()
        .context("cannot run cargo")?;
    if !output.status.success() {
        bail!(
            "`cargo build --release` of `{}` failed:\n{}",
            manifest.display(),
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    let binary = target_dir
        .join("release")
        .join(format!("{binary_name}{}", std::env::consts::EXE_SUFFIX));
    if !binary.is_file() {
        bail!(
            "cargo built `{}` but `{}` is missing",
            manifest.display(),
            binary.display()
        );
    }
    Ok(binary)
}

/// The target directory cargo uses for `manifest` (its workspace's, honouring
/// `CARGO_TARGET_DIR`) and the name of the package's binary.
fn locate(manifest: &Path) -> anyhow::Result<(PathBuf, String)> {
    let output = Command::new(cargo())
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--manifest-path",
        ])
        .arg(manifest)
        .output()
        .context("cannot run `cargo metadata`")?;
    if !output.status.success() {
        bail!(
            "`cargo metadata` for `{}` failed:\n{}",
            manifest.display(),
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("`cargo metadata` printed invalid JSON")?;
    let canonical = manifest
        .canonicalize()
        .unwrap_or_else(|_| manifest.to_path_buf());
    binary_of(&metadata, &canonical)
}

/// Picks, from `cargo metadata` output, the target directory and the binary of the package
/// whose manifest is `manifest`. A package with several binaries is ambiguous.
pub fn binary_of(
    metadata: &serde_json::Value,
    manifest: &Path,
) -> anyhow::Result<(PathBuf, String)> {
    let target_dir = metadata["target_directory"]
        .as_str()
        .context("`cargo metadata` gave no target_directory")?;
    let packages = metadata["packages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let package = packages
        .iter()
        .find(|p| p["manifest_path"].as_str().map(Path::new) == Some(manifest))
        .with_context(|| format!("`cargo metadata` does not list `{}`", manifest.display()))?;
    let bins: Vec<&str> = package["targets"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .filter(|t| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "bin"))
        })
        .filter_map(|t| t["name"].as_str())
        .collect();
    match bins.as_slice() {
        [one] => Ok((PathBuf::from(target_dir), one.to_string())),
        [] => bail!("package `{}` has no binary to run", package["name"]),
        many => bail!(
            "package `{}` has several binaries ({}); tune needs exactly one",
            package["name"],
            many.join(", ")
        ),
    }
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(targets: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "target_directory": "/t",
            "packages": [
                {"name": "other", "manifest_path": "/w/other/Cargo.toml", "targets": [
                    {"name": "other", "kind": ["bin"]}]},
                {"name": "jacobi", "manifest_path": "/w/jacobi/Cargo.toml", "targets": targets}
            ]
        })
    }

    #[test]
    fn finds_the_single_binary_of_the_package() {
        let m = metadata(serde_json::json!([
            {"name": "jacobi", "kind": ["bin"]},
            {"name": "helpers", "kind": ["lib"]}
        ]));
        let (dir, bin) = binary_of(&m, Path::new("/w/jacobi/Cargo.toml")).unwrap();
        assert_eq!(dir, PathBuf::from("/t"));
        assert_eq!(bin, "jacobi");
    }

    #[test]
    fn per_iteration_cancels_the_fixed_cost() {
        // 0.4 s fixed + 0.1 s per iteration.
        assert!((per_iteration((1, 0.5), (5, 0.9)) - 0.1).abs() < 1e-12);
        // Noise never yields a negative time.
        assert_eq!(per_iteration((1, 0.5), (2, 0.4)), 0.0);
    }

    #[test]
    fn no_or_several_binaries_are_errors() {
        let none = metadata(serde_json::json!([{"name": "x", "kind": ["lib"]}]));
        let err = binary_of(&none, Path::new("/w/jacobi/Cargo.toml")).unwrap_err();
        assert!(err.to_string().contains("no binary"), "{err}");
        let two = metadata(serde_json::json!([
            {"name": "a", "kind": ["bin"]}, {"name": "b", "kind": ["bin"]}
        ]));
        let err = binary_of(&two, Path::new("/w/jacobi/Cargo.toml")).unwrap_err();
        assert!(err.to_string().contains("a, b"), "{err}");
        let err = binary_of(&two, Path::new("/w/nope/Cargo.toml")).unwrap_err();
        assert!(err.to_string().contains("does not list"), "{err}");
    }
}
