//! The program being tuned: building its release binary with cargo, and running it with the
//! shared runtime flags (DESIGN §5).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use anyhow::{bail, Context as _};
use mheta_runtime::cleanup::OwnedDir;
use mheta_runtime::format::Measurements;

use super::launch::Launcher;

/// A built program, how it is launched, and the flags every one of its runs shares.
pub struct Program {
    pub binary: PathBuf,
    /// Directly (threads backend) or under `mpirun` (MPI backend).
    pub launcher: Launcher,
    /// `--backend`, `--cluster`, `--clock`, `--rows`, `--ranks` and the pass-through arguments
    /// (flags); the pass-through arguments alone (environment).
    pub common: Vec<String>,
    /// How each run's settings reach the program.
    pub interface: Interface,
}

/// How a run's settings reach the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interface {
    /// The runtime's shared flags (`mheta::launch` programs: `--distribution`, `--instrument`,
    /// `--iterations`, ..).
    Flags,
    /// `MHETA_*` variables (rsmpi programs that attach: `mheta::mpi::attach`): every run gets
    /// these (`MHETA_CLUSTER`, `MHETA_CLOCK`) plus its own; the program runs its own iterations.
    Environment(Vec<(String, String)>),
}

/// One instrumented run of the program.
pub struct RunSpec<'a> {
    /// `block` or an explicit list `r0,r1,...`.
    pub distribution: &'a str,
    pub iterations: u32,
    pub measurements: &'a Path,
    pub emit_structure: Option<&'a Path>,
    pub trace: Option<&'a Path>,
    /// Leave in-core arrays in core (`--keep-in-core`) instead of forcing them through the disk.
    pub keep_in_core: bool,
}

impl Program {
    /// The command of one run under `distribution` for `iterations`: the launcher, the binary,
    /// the common flags, then `--distribution` and `--iterations`. Every kind of run starts
    /// from it and appends its own flags.
    pub fn command(&self, distribution: &str, iterations: u32) -> Command {
        let mut command = self.launcher.command(&self.binary);
        command.args(&self.common);
        match &self.interface {
            Interface::Flags => {
                command
                    .arg("--distribution")
                    .arg(distribution)
                    .arg("--iterations")
                    .arg(iterations.to_string());
            }
            Interface::Environment(common) => {
                // Only what this run asks for: none of the caller's own MHETA_* settings.
                for var in mheta_runtime::attach::VARIABLES {
                    command.env_remove(var);
                }
                command
                    .envs(common.iter().map(|(k, v)| (k, v)))
                    .env("MHETA_DISTRIBUTION", distribution);
            }
        }
        command
    }

    /// Asks `command` to write `mheta-timings/1` to `path`.
    pub fn timings(&self, command: &mut Command, path: &Path) {
        match self.interface {
            Interface::Flags => command.arg("--timings").arg(path),
            Interface::Environment(_) => command.env("MHETA_TIMINGS", path),
        };
    }

    /// Runs `command` (one run under `distribution`) to completion. A launcher or program that
    /// cannot start, or exits unsuccessfully, is an error quoting the command line and the
    /// program's stderr (under MPI, the failing rank's message and the launcher's report).
    pub fn execute(&self, mut command: Command, distribution: &str) -> anyhow::Result<Output> {
        let line = command_line(&command);
        let output =
            crate::output(&mut command).with_context(|| format!("cannot start `{line}`"))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let shown = if stderr.trim().is_empty() {
                String::from_utf8_lossy(&output.stdout)
            } else {
                stderr
            };
            bail!(
                "`{line}` under distribution {distribution} failed ({}):\n{}",
                output.status,
                shown.trim_end()
            );
        }
        Ok(output)
    }

    /// Runs the program instrumented and returns the measurements it wrote.
    pub fn run(&self, spec: &RunSpec<'_>) -> anyhow::Result<Measurements> {
        let mut command = self.command(spec.distribution, spec.iterations);
        match self.interface {
            Interface::Flags => {
                command
                    .arg("--instrument")
                    .arg("--measurements")
                    .arg(spec.measurements);
                if let Some(path) = spec.emit_structure {
                    command.arg("--emit-structure").arg(path);
                }
                if let Some(path) = spec.trace {
                    command.arg("--trace").arg(path);
                }
                if spec.keep_in_core {
                    command.arg("--keep-in-core");
                }
            }
            // An attached program has no out-of-core arrays to keep in core, and its structure
            // is the crate's (`tune` writes it).
            Interface::Environment(_) => {
                command.env("MHETA_MEASUREMENTS", spec.measurements);
                if let Some(path) = spec.trace {
                    command.env("MHETA_TRACE", path);
                }
            }
        }
        self.execute(command, spec.distribution)?;
        crate::read_json(spec.measurements)
            .context("the program exited successfully, but its measurements")
    }

    /// Runs the program uninstrumented for `iterations` and returns the wall-clock seconds of
    /// the whole run (under MPI, the launcher's: from starting to the last process's exit).
    pub fn timed(&self, distribution: &str, iterations: u32) -> anyhow::Result<f64> {
        let command = self.command(distribution, iterations);
        let start = Instant::now();
        self.execute(command, distribution)?;
        Ok(start.elapsed().as_secs_f64())
    }
}

/// `command` as a shell would read it, for messages.
pub fn command_line(command: &Command) -> String {
    let words: Vec<String> = std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    shell_words::join(words)
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

/// Builds the binary of the crate at `dir` with `cargo build --release` and the cargo
/// `features` (each must be one of the package's features), and copies it into a directory of
/// this process's own under the target directory (`mheta-tune/run-<pid>-<n>`, where `mpirun`
/// finds it on every host that shares the workspace, and removed like any
/// `cleanup::OwnedDir`). Returns that directory and the copy's path. Cargo's own output is shown
/// when the build fails.
///
/// Another tune of a crate in the same workspace may relink the same binary with other features
/// while this one runs (a threads-backend tune beside an MPI one): so this tune runs its own
/// copy, and the build and the copy hold the target directory's `.mheta-build.lock`, so that no
/// other tune relinks the binary in between.
pub fn build(dir: &Path, features: &[&str]) -> anyhow::Result<(OwnedDir, PathBuf)> {
    let manifest = dir.join("Cargo.toml");
    if !manifest.is_file() {
        bail!("`{}` has no Cargo.toml", dir.display());
    }
    let package = locate(&manifest)?;
    package.check_features(features, &manifest)?;
    std::fs::create_dir_all(&package.target_dir)
        .with_context(|| format!("cannot create `{}`", package.target_dir.display()))?;
    let lock_path = package.target_dir.join(".mheta-build.lock");
    let lock = std::fs::File::create(&lock_path)
        .with_context(|| format!("cannot create `{}`", lock_path.display()))?;
    mheta_runtime::cleanup::flock_wait(&lock)
        .with_context(|| format!("cannot lock `{}`", lock_path.display()))?;
    let mut command = Command::new(cargo());
    command.args(["build", "--release", "--bin", &package.binary]);
    if !features.is_empty() {
        command.arg("--features").arg(features.join(","));
    }
    command.arg("--manifest-path").arg(&manifest);
    let output = crate::output(&mut command).context("cannot run cargo")?;
    if !output.status.success() {
        bail!(
            "`{}` failed:\n{}",
            command_line(&command),
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    let binary = package.target_dir.join("release").join(format!(
        "{}{}",
        package.binary,
        std::env::consts::EXE_SUFFIX
    ));
    if !binary.is_file() {
        bail!(
            "cargo built `{}` but `{}` is missing",
            manifest.display(),
            binary.display()
        );
    }
    let copies = package.target_dir.join("mheta-tune");
    std::fs::create_dir_all(&copies)
        .with_context(|| format!("cannot create `{}`", copies.display()))?;
    let into = OwnedDir::create_in(&copies, "run")
        .with_context(|| format!("cannot create a directory in `{}`", copies.display()))?;
    let copy = into
        .path()
        .join(binary.file_name().unwrap_or(binary.as_os_str()));
    std::fs::copy(&binary, &copy)
        .with_context(|| format!("cannot copy `{}` to `{}`", binary.display(), copy.display()))?;
    drop(lock);
    Ok((into, copy))
}

/// What `cargo metadata` says about the package being tuned.
#[derive(Debug, PartialEq, Eq)]
pub struct Package {
    pub name: String,
    /// Its workspace's target directory (honouring `CARGO_TARGET_DIR`).
    pub target_dir: PathBuf,
    /// Its one binary.
    pub binary: String,
    /// The names of its `[features]`.
    pub features: Vec<String>,
}

impl Package {
    /// A feature the build needs but the package lacks is an error saying what to add: every
    /// mheta program forwards a runtime feature through the facade (`mpi = ["mheta/mpi"]`).
    fn check_features(&self, features: &[&str], manifest: &Path) -> anyhow::Result<()> {
        for &feature in features {
            if !self.features.iter().any(|f| f == feature) {
                bail!(
                    "package `{}` has no `{feature}` feature, which --backend {feature} builds \
                     with: add `{feature} = [\"mheta/{feature}\"]` under `[features]` in `{}`",
                    self.name,
                    manifest.display()
                );
            }
        }
        Ok(())
    }
}

/// The package whose manifest is `manifest`, from `cargo metadata`.
fn locate(manifest: &Path) -> anyhow::Result<Package> {
    let metadata = metadata(manifest)?;
    let canonical = manifest
        .canonicalize()
        .unwrap_or_else(|_| manifest.to_path_buf());
    package_of(&metadata, &canonical)
}

/// `cargo metadata --no-deps` of the workspace of `manifest`; its errors quote cargo's.
pub fn metadata(manifest: &Path) -> anyhow::Result<serde_json::Value> {
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
    serde_json::from_slice(&output.stdout).context("`cargo metadata` printed invalid JSON")
}

/// Picks, from `cargo metadata` output, the package whose manifest is `manifest`: its target
/// directory, its binary and its features. A package with several binaries is ambiguous.
pub fn package_of(metadata: &serde_json::Value, manifest: &Path) -> anyhow::Result<Package> {
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
    let name = package["name"].as_str().unwrap_or("?").to_string();
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
    let binary = match bins.as_slice() {
        [one] => one.to_string(),
        [] => bail!("package `{name}` has no binary to run"),
        many => bail!(
            "package `{name}` has several binaries ({}); tune needs exactly one",
            many.join(", ")
        ),
    };
    let features = package["features"]
        .as_object()
        .map(|f| f.keys().cloned().collect())
        .unwrap_or_default();
    Ok(Package {
        name,
        target_dir: PathBuf::from(target_dir),
        binary,
        features,
    })
}

/// cargo: `$CARGO` (set when cargo runs a subcommand or a test), else the one on the `PATH`.
pub(crate) fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mheta_runtime::Backend;

    fn metadata(targets: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "target_directory": "/t",
            "packages": [
                {"name": "other", "manifest_path": "/w/other/Cargo.toml", "targets": [
                    {"name": "other", "kind": ["bin"]}]},
                {"name": "jacobi", "manifest_path": "/w/jacobi/Cargo.toml", "targets": targets,
                 "features": {"default": [], "mpi": ["mheta/mpi"]}}
            ]
        })
    }

    fn program(launcher: Launcher) -> Program {
        Program {
            interface: Interface::Flags,
            binary: PathBuf::from("/t/release/jacobi"),
            launcher,
            common: [
                "--backend",
                "mpi",
                "--cluster",
                "c.toml",
                "--",
                "--cols",
                "10",
            ]
            .map(String::from)
            .to_vec(),
        }
    }

    fn words(command: &Command) -> Vec<String> {
        std::iter::once(command.get_program())
            .chain(command.get_args())
            .map(|w| w.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn finds_the_single_binary_and_the_features_of_the_package() {
        let m = metadata(serde_json::json!([
            {"name": "jacobi", "kind": ["bin"]},
            {"name": "helpers", "kind": ["lib"]}
        ]));
        let package = package_of(&m, Path::new("/w/jacobi/Cargo.toml")).unwrap();
        assert_eq!(package.name, "jacobi");
        assert_eq!(package.target_dir, PathBuf::from("/t"));
        assert_eq!(package.binary, "jacobi");
        assert_eq!(package.features, ["default", "mpi"]);
        // `other` lists no features at all.
        let other = package_of(&m, Path::new("/w/other/Cargo.toml")).unwrap();
        assert!(other.features.is_empty());
    }

    #[test]
    fn a_missing_feature_names_the_package_and_what_to_add() {
        let m = metadata(serde_json::json!([{"name": "other", "kind": ["bin"]}]));
        let manifest = Path::new("/w/other/Cargo.toml");
        let other = package_of(&m, manifest).unwrap();
        assert!(other.check_features(&[], manifest).is_ok());
        let err = other.check_features(&["mpi"], manifest).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("package `other` has no `mpi` feature"),
            "{text}"
        );
        assert!(
            text.contains(
                r#"add `mpi = ["mheta/mpi"]` under `[features]` in `/w/other/Cargo.toml`"#
            ),
            "{text}"
        );
        let jacobi = package_of(&m, Path::new("/w/jacobi/Cargo.toml")).unwrap();
        assert!(jacobi.check_features(&["mpi"], manifest).is_ok());
    }

    #[test]
    fn a_run_is_the_launcher_the_binary_the_common_flags_then_the_distribution() {
        let mpi =
            Launcher::resolve(Backend::Mpi, Some("mpirun --oversubscribe -np 2"), None, 2).unwrap();
        let command = program(mpi).command("3,7", 4);
        assert_eq!(
            words(&command),
            [
                "mpirun",
                "--oversubscribe",
                "-np",
                "2",
                "/t/release/jacobi",
                "--backend",
                "mpi",
                "--cluster",
                "c.toml",
                "--",
                "--cols",
                "10",
                "--distribution",
                "3,7",
                "--iterations",
                "4"
            ]
        );
        let direct = program(Launcher::Direct).command("block", 1);
        assert_eq!(words(&direct)[0], "/t/release/jacobi");
        assert_eq!(words(&direct)[1..3], ["--backend", "mpi"]);
        assert_eq!(command_line(&direct).split(' ').count(), 12);
    }

    #[test]
    fn command_lines_are_quoted_like_a_shell() {
        let mut command = Command::new("/opt/my mpi/mpirun");
        command.args(["-np", "2", "it's"]);
        assert_eq!(
            command_line(&command),
            r#"'/opt/my mpi/mpirun' -np 2 'it'\''s'"#
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_failing_run_shows_its_command_line_and_stderr() {
        let p = Program {
            interface: Interface::Flags,
            binary: PathBuf::from("/bin/sh"),
            launcher: Launcher::Direct,
            common: vec![
                "-c".into(),
                "echo 'rank 2 failed: out of rows' >&2; exit 3".into(),
            ],
        };
        let err = p.execute(p.command("block", 1), "block").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("`/bin/sh -c "), "{text}");
        assert!(
            text.contains("under distribution block failed (exit status: 3)"),
            "{text}"
        );
        assert!(text.ends_with("rank 2 failed: out of rows"), "{text}");
        // A launcher that cannot start names itself.
        let gone = Program {
            binary: PathBuf::from("/nonexistent/jacobi"),
            ..p
        };
        let err = gone.timed("block", 1).unwrap_err();
        assert!(
            format!("{err:#}").contains("cannot start `/nonexistent/jacobi"),
            "{err:#}"
        );
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
        let err = package_of(&none, Path::new("/w/jacobi/Cargo.toml")).unwrap_err();
        assert!(err.to_string().contains("no binary"), "{err}");
        let two = metadata(serde_json::json!([
            {"name": "a", "kind": ["bin"]}, {"name": "b", "kind": ["bin"]}
        ]));
        let err = package_of(&two, Path::new("/w/jacobi/Cargo.toml")).unwrap_err();
        assert!(err.to_string().contains("a, b"), "{err}");
        let err = package_of(&two, Path::new("/w/nope/Cargo.toml")).unwrap_err();
        assert!(err.to_string().contains("does not list"), "{err}");
    }

    #[test]
    fn a_tune_keeps_its_binary_when_another_build_relinks_it() {
        // Two tunes of one crate with different features (a threads tune beside an MPI one):
        // the second build relinks `target/release/<bin>`, and the first tune must go on
        // running the binary it built. A crate of its own with a feature that changes its output
        // stands in for the backend.
        let dir = tempfile::tempdir().unwrap();
        let krate = dir.path().join("swap");
        std::fs::create_dir_all(krate.join("src")).unwrap();
        std::fs::write(
            krate.join("Cargo.toml"),
            "[package]\nname = \"swap\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
             [features]\nmpi = []\n[workspace]\n",
        )
        .unwrap();
        std::fs::write(
            krate.join("src/main.rs"),
            "fn main() { print!(\"{}\", if cfg!(feature = \"mpi\") { \"mpi\" } else { \"threads\" }); }\n",
        )
        .unwrap();
        let output = |binary: &Path| {
            let out = Command::new(binary).output().unwrap();
            String::from_utf8(out.stdout).unwrap()
        };
        let (threads_dir, threads) = build(&krate, &[]).unwrap();
        let (mpi_dir, mpi) = build(&krate, &["mpi"]).unwrap();
        assert_ne!(threads, mpi);
        assert_eq!(output(&threads), "threads");
        assert_eq!(output(&mpi), "mpi");
        let shared = threads_dir
            .path()
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .join("release/swap");
        assert_eq!(
            output(&shared),
            "mpi",
            "the second build relinked the shared binary"
        );
        drop((threads_dir, mpi_dir));
        assert!(
            !threads.exists() && !mpi.exists(),
            "the copies go with their tunes"
        );
    }
}
