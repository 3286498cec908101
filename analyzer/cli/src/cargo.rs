//! `cargo mheta <subcommand>`: the `mheta` subcommands run from inside a crate, as cargo's own
//! subcommands are.
//!
//! cargo runs `cargo-mheta mheta <args>` for `cargo mheta <args>`. The package is found as
//! cargo finds it: `--manifest-path`, else the nearest `Cargo.toml` above the current directory
//! (`cargo locate-project`); `-p/--package` picks a member of its workspace, and a virtual
//! workspace manifest needs one. `analyze` and `tune` then get that package's directory as
//! their crate argument; every other argument goes to the same subcommand of `mheta` unchanged
//! ([`crate::entry::main`]), so `cargo mheta tune --cluster c.toml` is
//! `mheta tune <package dir> --cluster c.toml`. The subcommands that take no crate take neither
//! `-p` nor `--manifest-path`.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context as _};

/// The subcommands whose first argument is a crate directory.
const CRATE_SUBCOMMANDS: [&str; 2] = ["analyze", "tune"];

/// Runs `cargo mheta` with the process's arguments `argv` (`cargo-mheta`, then `mheta` when
/// cargo runs it, then the subcommand and its arguments).
pub fn main(argv: Vec<OsString>) -> ExitCode {
    match rewrite(argv, &Cargo) {
        Ok(argv) => crate::entry::main(argv),
        Err(e) => {
            crate::entry::report(&e);
            ExitCode::from(1)
        }
    }
}

/// How the package is found: cargo itself, or a stand-in in tests.
pub trait Locate {
    /// The manifest cargo would use from the current directory (`cargo locate-project`).
    fn nearest_manifest(&self) -> anyhow::Result<PathBuf>;
    /// `cargo metadata --no-deps` of the workspace of `manifest`.
    fn metadata(&self, manifest: &Path) -> anyhow::Result<serde_json::Value>;
}

/// cargo on the `PATH` (or `$CARGO`, which cargo sets when it runs a subcommand).
pub struct Cargo;

impl Locate for Cargo {
    fn nearest_manifest(&self) -> anyhow::Result<PathBuf> {
        let mut command = Command::new(crate::tune::program::cargo());
        command.args(["locate-project", "--message-format", "plain"]);
        let shown = crate::tune::program::command_line(&command);
        let output = command
            .output()
            .with_context(|| format!("cannot run `{shown}`"))?;
        if !output.status.success() {
            bail!(
                "`{shown}` failed: {}",
                String::from_utf8_lossy(&output.stderr).trim_end()
            );
        }
        let path = String::from_utf8(output.stdout)
            .with_context(|| format!("`{shown}` printed non-UTF-8"))?;
        Ok(PathBuf::from(path.trim_end()))
    }

    fn metadata(&self, manifest: &Path) -> anyhow::Result<serde_json::Value> {
        crate::tune::program::metadata(manifest)
    }
}

/// The `mheta` command line that `argv` asks for: the program name `cargo mheta`, the
/// subcommand, the package's directory for a crate subcommand, then the other arguments.
pub fn rewrite(argv: Vec<OsString>, locate: &impl Locate) -> anyhow::Result<Vec<OsString>> {
    let mut args = argv.into_iter().skip(1).peekable();
    if args.peek().is_some_and(|a| a == "mheta") {
        args.next();
    }
    let mut rest = Vec::new();
    let (mut manifest, mut package) = (None, None);
    // Everything after `--` belongs to the program (`tune … -- --cols 100`).
    while let Some(arg) = args.next() {
        if arg == "--" {
            rest.push(arg);
            rest.extend(args.by_ref());
            break;
        }
        let text = arg.to_string_lossy();
        if let Some(value) = flag_value(&text, &mut args, "--manifest-path", None)? {
            manifest = Some(PathBuf::from(value));
        } else if let Some(value) = flag_value(&text, &mut args, "--package", Some("-p"))? {
            package = Some(value.to_string_lossy().into_owned());
        } else {
            rest.push(arg);
        }
    }
    let mut out: Vec<OsString> = vec!["cargo mheta".into()];
    let position = rest
        .iter()
        .position(|a| !a.to_string_lossy().starts_with('-'));
    let subcommand = position.map(|k| rest[k].to_string_lossy().into_owned());
    match (position, subcommand.as_deref()) {
        (Some(k), Some(sub)) if CRATE_SUBCOMMANDS.contains(&sub) => {
            let dir = package_dir(manifest.as_deref(), package.as_deref(), locate)?;
            out.extend(rest.drain(..=k));
            out.push(dir.into_os_string());
            out.extend(rest);
        }
        _ => {
            if manifest.is_some() || package.is_some() {
                bail!(
                    "-p/--package and --manifest-path choose the crate of `cargo mheta {}`; \
                     `{}` takes none",
                    CRATE_SUBCOMMANDS.join("` and `cargo mheta "),
                    subcommand.as_deref().unwrap_or("cargo mheta")
                );
            }
            out.extend(rest);
        }
    }
    Ok(out)
}

/// If `arg` is the flag `long` (`--flag value` or `--flag=value`) or `short` (`-p value` or
/// `-pvalue`), its value, taken from the next argument when not attached.
fn flag_value(
    arg: &str,
    args: &mut impl Iterator<Item = OsString>,
    long: &str,
    short: Option<&str>,
) -> anyhow::Result<Option<OsString>> {
    let name = std::iter::once(long)
        .chain(short)
        .find(|name| arg == *name || arg.starts_with(&format!("{name}=")))
        .or_else(|| short.filter(|s| arg.starts_with(s) && arg.len() > s.len()));
    let Some(name) = name else {
        return Ok(None);
    };
    if arg == name {
        return match args.next() {
            Some(value) => Ok(Some(value)),
            None => bail!("`{name}` needs a value"),
        };
    }
    let value = arg[name.len()..]
        .strip_prefix('=')
        .unwrap_or(&arg[name.len()..]);
    if value.is_empty() {
        bail!("`{name}` needs a value");
    }
    Ok(Some(OsStr::new(value).to_os_string()))
}

/// The directory of the package `cargo mheta` works on.
fn package_dir(
    manifest: Option<&Path>,
    package: Option<&str>,
    locate: &impl Locate,
) -> anyhow::Result<PathBuf> {
    let manifest = match manifest {
        Some(path) => {
            if !path.is_file() {
                bail!("--manifest-path `{}` is not a file", path.display());
            }
            path.to_path_buf()
        }
        None => locate
            .nearest_manifest()
            .context("no Cargo.toml in this directory or above it (or give --manifest-path)")?,
    };
    let metadata = locate.metadata(&manifest)?;
    let members = members(&metadata);
    let chosen = match package {
        Some(name) => members.iter().find(|m| m.name == name).ok_or_else(|| {
            anyhow::anyhow!(
                "the workspace of `{}` has no package `{name}` (its packages: {})",
                manifest.display(),
                names(&members)
            )
        })?,
        None => {
            let wanted = canonical(&manifest);
            members
                .iter()
                .find(|m| canonical(&m.manifest) == wanted)
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "`{}` is a virtual workspace manifest: choose a package with -p \
                         (its packages: {})",
                        manifest.display(),
                        names(&members)
                    )
                })?
        }
    };
    Ok(chosen
        .manifest
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf))
}

/// A workspace member: its name and manifest.
struct Member {
    name: String,
    manifest: PathBuf,
}

fn members(metadata: &serde_json::Value) -> Vec<Member> {
    let ids: Vec<&str> = metadata["workspace_members"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    metadata["packages"]
        .as_array()
        .map(|packages| {
            packages
                .iter()
                .filter(|p| p["id"].as_str().is_some_and(|id| ids.contains(&id)))
                .filter_map(|p| {
                    Some(Member {
                        name: p["name"].as_str()?.to_string(),
                        manifest: PathBuf::from(p["manifest_path"].as_str()?),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

fn names(members: &[Member]) -> String {
    let mut names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    names.sort_unstable();
    names.join(", ")
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace at /w with members `jacobi` (/w/jacobi) and `cg` (/w/solvers/cg), whose
    /// root manifest is virtual; the current directory is inside `nearest`.
    struct Fake {
        nearest: &'static str,
    }

    impl Locate for Fake {
        fn nearest_manifest(&self) -> anyhow::Result<PathBuf> {
            Ok(PathBuf::from(self.nearest))
        }

        fn metadata(&self, _manifest: &Path) -> anyhow::Result<serde_json::Value> {
            Ok(serde_json::json!({
                "workspace_members": ["jacobi 0.1.0 (path+file:///w/jacobi)",
                                      "cg 0.1.0 (path+file:///w/solvers/cg)"],
                "packages": [
                    {"id": "jacobi 0.1.0 (path+file:///w/jacobi)", "name": "jacobi",
                     "manifest_path": "/w/jacobi/Cargo.toml"},
                    {"id": "cg 0.1.0 (path+file:///w/solvers/cg)", "name": "cg",
                     "manifest_path": "/w/solvers/cg/Cargo.toml"},
                ]
            }))
        }
    }

    fn run(nearest: &'static str, args: &[&str]) -> anyhow::Result<Vec<String>> {
        let argv = std::iter::once("cargo-mheta")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        Ok(rewrite(argv, &Fake { nearest })?
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect())
    }

    #[test]
    fn a_crate_subcommand_gets_the_nearest_package() {
        assert_eq!(
            run(
                "/w/jacobi/Cargo.toml",
                &["mheta", "analyze", "--format", "text"]
            )
            .unwrap(),
            ["cargo mheta", "analyze", "/w/jacobi", "--format", "text"]
        );
        // Run directly (`cargo-mheta tune …`) as well as through cargo.
        assert_eq!(
            run("/w/jacobi/Cargo.toml", &["tune", "--cluster", "c.toml"]).unwrap(),
            ["cargo mheta", "tune", "/w/jacobi", "--cluster", "c.toml"]
        );
    }

    #[test]
    fn package_flags_choose_a_member_anywhere_on_the_line() {
        for args in [
            &["mheta", "-p", "cg", "tune", "--cluster", "c.toml"][..],
            &["mheta", "tune", "--package", "cg", "--cluster", "c.toml"],
            &["mheta", "tune", "--cluster", "c.toml", "--package=cg"],
            &["mheta", "tune", "-pcg", "--cluster", "c.toml"],
        ] {
            assert_eq!(
                run("/w/Cargo.toml", args).unwrap(),
                [
                    "cargo mheta",
                    "tune",
                    "/w/solvers/cg",
                    "--cluster",
                    "c.toml"
                ],
                "{args:?}"
            );
        }
    }

    #[test]
    fn the_programs_own_arguments_are_left_alone() {
        assert_eq!(
            run(
                "/w/jacobi/Cargo.toml",
                &["mheta", "tune", "--cluster", "c.toml", "--", "-p", "3"]
            )
            .unwrap(),
            [
                "cargo mheta",
                "tune",
                "/w/jacobi",
                "--cluster",
                "c.toml",
                "--",
                "-p",
                "3"
            ]
        );
    }

    #[test]
    fn other_subcommands_pass_through_and_refuse_package_flags() {
        assert_eq!(
            run(
                "/w/Cargo.toml",
                &["mheta", "predict", "--structure", "s.json"]
            )
            .unwrap(),
            ["cargo mheta", "predict", "--structure", "s.json"]
        );
        assert_eq!(
            run("/w/Cargo.toml", &["mheta", "--help"]).unwrap(),
            ["cargo mheta", "--help"]
        );
        let err = run("/w/Cargo.toml", &["mheta", "predict", "-p", "cg"]).unwrap_err();
        assert!(err.to_string().contains("`predict` takes none"), "{err}");
    }

    #[test]
    fn a_virtual_manifest_or_an_unknown_package_names_the_members() {
        let err = run("/w/Cargo.toml", &["mheta", "analyze"]).unwrap_err();
        assert!(
            err.to_string().contains("virtual workspace manifest")
                && err.to_string().contains("cg, jacobi"),
            "{err}"
        );
        let err = run("/w/Cargo.toml", &["mheta", "analyze", "-p", "lu"]).unwrap_err();
        assert!(err.to_string().contains("no package `lu`"), "{err}");
        let err = run("/w/Cargo.toml", &["mheta", "analyze", "-p"]).unwrap_err();
        assert!(err.to_string().contains("`-p` needs a value"), "{err}");
    }
}
