//! How every run of the program being tuned is started (DESIGN §5): directly, its ranks being
//! threads of one process (`--backend threads`), or under an MPI launcher, one process per rank
//! (`--backend mpi`, `--mpirun "mpirun -np 4 ..."`).
//!
//! Under MPI the rank count P is named at most twice: by the launcher's process-count flag
//! (`-np`, `-n`, `-c`, `--np`, `--n`, also as `--np=4`) and by `--ranks`. When both are given
//! they must agree; when only one is, it is used; when neither is, P is the cluster's node
//! count. A launcher without a process count gets `-np P` appended, so the job always has P
//! processes and P always equals the cluster's node count (the runtime requires one node per
//! rank).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;
use mheta_runtime::format::ClusterSpec;
use mheta_runtime::Backend;

/// The launcher used when `--backend mpi` is given without `--mpirun`.
pub const DEFAULT_MPIRUN: &str = "mpirun";

/// The process-count flags of `mpirun` (Open MPI's `-c|-np|--np` and `-n|--n`; MPICH's `-n`
/// and `-np`).
const COUNT_FLAGS: [&str; 5] = ["-np", "--np", "-n", "--n", "-c"];

/// Why the runs of the program cannot be launched as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    #[error("--mpirun needs --backend mpi (the threads backend runs the program directly)")]
    MpirunWithoutMpi,
    #[error("--mpirun `{text}` cannot be split into words: {reason}")]
    Unparsable { text: String, reason: String },
    #[error("--mpirun is empty; give the launcher, e.g. --mpirun \"mpirun -np 4\"")]
    Empty,
    #[error("--mpirun `{text}`: `{flag}` needs a positive process count, got `{value}`")]
    BadCount {
        text: String,
        flag: String,
        value: String,
    },
    #[error(
        "--mpirun `{text}` gives the process count twice ({first} and {second}); give it once"
    )]
    SeveralCounts {
        text: String,
        first: usize,
        second: usize,
    },
    #[error(
        "--mpirun starts {np} processes but --ranks is {ranks}; make them agree or give only one"
    )]
    RanksDisagree { np: usize, ranks: usize },
    #[error(
        "--backend mpi runs {ranks} processes but the cluster describes {nodes} nodes \
         (one node per rank)"
    )]
    ClusterDisagrees { ranks: usize, nodes: usize },
    #[error(
        "mpirun not found: `{program}` is not an executable on PATH; install MPI (Debian: \
         openmpi-bin libopenmpi-dev) or give the launcher's path in --mpirun"
    )]
    NotFound { program: String },
}

/// How each run of the program is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launcher {
    /// The binary itself; it starts its ranks as threads.
    Direct,
    /// `words... BINARY`: an MPI launcher starting one process of the binary per cluster node.
    Mpi { words: Vec<String> },
}

impl Launcher {
    /// The launcher of `backend` given `--mpirun` (`mpirun`), `--ranks` (`ranks`) and the
    /// cluster's node count. Does not look for the launcher on the machine: see [`Self::check`].
    pub fn resolve(
        backend: Backend,
        mpirun: Option<&str>,
        ranks: Option<usize>,
        cluster_nodes: usize,
    ) -> Result<Launcher, LaunchError> {
        if backend == Backend::Threads {
            return match mpirun {
                Some(_) => Err(LaunchError::MpirunWithoutMpi),
                None => Ok(Launcher::Direct),
            };
        }
        let text = mpirun.unwrap_or(DEFAULT_MPIRUN);
        let mut words = shell_words::split(text).map_err(|e| LaunchError::Unparsable {
            text: text.to_string(),
            reason: e.to_string(),
        })?;
        if words.is_empty() {
            return Err(LaunchError::Empty);
        }
        let ranks = match (process_count(text, &words)?, ranks) {
            (Some(np), Some(p)) if np != p => {
                return Err(LaunchError::RanksDisagree { np, ranks: p })
            }
            (Some(np), _) => np,
            (None, p) => {
                let p = p.unwrap_or(cluster_nodes);
                words.extend(["-np".to_string(), p.to_string()]);
                p
            }
        };
        if ranks != cluster_nodes {
            return Err(LaunchError::ClusterDisagrees {
                ranks,
                nodes: cluster_nodes,
            });
        }
        Ok(Launcher::Mpi { words })
    }

    /// The launcher of a tune run: [`Self::resolve`] against the node count of the cluster
    /// file, then [`Self::check`].
    pub fn for_tune(
        backend: Backend,
        mpirun: Option<&str>,
        ranks: Option<usize>,
        cluster: &Path,
    ) -> anyhow::Result<Launcher> {
        let nodes = match backend {
            // The runtime checks the thread ranks against the cluster itself.
            Backend::Threads => 0,
            Backend::Mpi => ClusterSpec::load(cluster)
                .with_context(|| format!("--cluster `{}`", cluster.display()))?
                .nodes
                .len(),
        };
        let launcher = Launcher::resolve(backend, mpirun, ranks, nodes)?;
        launcher.check()?;
        Ok(launcher)
    }

    /// Checks that the launcher's program exists (a path, or an executable on `PATH`), so a
    /// missing MPI fails before the build.
    pub fn check(&self) -> Result<(), LaunchError> {
        let Launcher::Mpi { words } = self else {
            return Ok(());
        };
        let program = &words[0];
        let path = std::env::var_os("PATH").unwrap_or_default();
        if find_program(OsStr::new(program), &path).is_none() {
            return Err(LaunchError::NotFound {
                program: program.clone(),
            });
        }
        Ok(())
    }

    /// The command starting `binary`: the binary itself, or the launcher's words then the binary.
    /// The caller appends the program's own flags.
    pub fn command(&self, binary: &Path) -> Command {
        match self {
            Launcher::Direct => Command::new(binary),
            Launcher::Mpi { words } => {
                let mut command = Command::new(&words[0]);
                command.args(&words[1..]).arg(binary);
                command
            }
        }
    }

    /// The cargo features the binary must be built with.
    pub fn cargo_features(&self) -> &'static [&'static str] {
        match self {
            Launcher::Direct => &[],
            Launcher::Mpi { .. } => &["mpi"],
        }
    }
}

/// The process count the launcher's words give, if any; an unparsable or repeated count is an
/// error.
fn process_count(text: &str, words: &[String]) -> Result<Option<usize>, LaunchError> {
    let mut found: Option<usize> = None;
    let mut rest = words.iter().skip(1);
    while let Some(word) = rest.next() {
        let (flag, value) = match word.split_once('=') {
            Some((flag, value)) if COUNT_FLAGS.contains(&flag) => (flag, Some(value.to_string())),
            _ if COUNT_FLAGS.contains(&word.as_str()) => (word.as_str(), rest.next().cloned()),
            _ => continue,
        };
        let value = value.unwrap_or_default();
        let count = value
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| LaunchError::BadCount {
                text: text.to_string(),
                flag: flag.to_string(),
                value: value.clone(),
            })?;
        if let Some(first) = found {
            return Err(LaunchError::SeveralCounts {
                text: text.to_string(),
                first,
                second: count,
            });
        }
        found = Some(count);
    }
    Ok(found)
}

/// Where `program` is: itself when it names a path, else the first executable file of that
/// name in the directories of `path` (a `PATH` value).
fn find_program(program: &OsStr, path: &OsStr) -> Option<PathBuf> {
    let as_path = Path::new(program);
    if as_path.components().count() > 1 {
        return is_executable(as_path).then(|| as_path.to_path_buf());
    }
    std::env::split_paths(path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    let Ok(metadata) = path.metadata() else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        metadata.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mpi(
        mpirun: Option<&str>,
        ranks: Option<usize>,
        nodes: usize,
    ) -> Result<Launcher, LaunchError> {
        Launcher::resolve(Backend::Mpi, mpirun, ranks, nodes)
    }

    fn words(launcher: &Launcher) -> Vec<&str> {
        match launcher {
            Launcher::Mpi { words } => words.iter().map(String::as_str).collect(),
            Launcher::Direct => panic!("expected an MPI launcher"),
        }
    }

    #[test]
    fn threads_run_directly_and_refuse_a_launcher() {
        assert_eq!(
            Launcher::resolve(Backend::Threads, None, Some(3), 4),
            Ok(Launcher::Direct)
        );
        assert_eq!(
            Launcher::resolve(Backend::Threads, Some("mpirun -np 4"), None, 4),
            Err(LaunchError::MpirunWithoutMpi)
        );
        assert!(Launcher::Direct.cargo_features().is_empty());
    }

    #[test]
    fn the_default_launcher_runs_one_process_per_node_or_per_rank() {
        let l = mpi(None, None, 4).unwrap();
        assert_eq!(words(&l), ["mpirun", "-np", "4"]);
        let l = mpi(None, Some(2), 2).unwrap();
        assert_eq!(words(&l), ["mpirun", "-np", "2"]);
        assert_eq!(l.cargo_features(), ["mpi"]);
    }

    #[test]
    fn every_process_count_flag_is_read() {
        for text in [
            "mpirun -np 4",
            "mpirun --np 4",
            "mpirun -n 4 --oversubscribe",
            "mpirun --n=4",
            "mpirun -c 4",
            "mpiexec --oversubscribe -np=4",
        ] {
            let l = mpi(Some(text), None, 4).unwrap();
            // The count was read: against a 3-node cluster the same words disagree.
            assert_eq!(
                mpi(Some(text), None, 3),
                Err(LaunchError::ClusterDisagrees { ranks: 4, nodes: 3 }),
                "{text}"
            );
            // The words are kept as written: no second count is appended.
            assert_eq!(words(&l).join(" "), text, "{text}");
        }
        // `-npernode` is not a process count.
        let l = mpi(Some("mpirun -npernode 2"), Some(4), 4).unwrap();
        assert_eq!(words(&l), ["mpirun", "-npernode", "2", "-np", "4"]);
    }

    #[test]
    fn quoted_words_are_split_like_a_shell() {
        let l = mpi(Some("'/opt/my mpi/bin/mpirun' -x 'A=b c' -np 2"), None, 2).unwrap();
        assert_eq!(
            words(&l),
            ["/opt/my mpi/bin/mpirun", "-x", "A=b c", "-np", "2"]
        );
        let err = mpi(Some("mpirun 'unclosed"), None, 2).unwrap_err();
        assert!(matches!(err, LaunchError::Unparsable { .. }), "{err}");
        assert_eq!(mpi(Some("  "), None, 2), Err(LaunchError::Empty));
    }

    #[test]
    fn np_and_ranks_must_agree() {
        assert!(mpi(Some("mpirun -np 4"), Some(4), 4).is_ok());
        let err = mpi(Some("mpirun -np 4"), Some(2), 4).unwrap_err();
        assert_eq!(err, LaunchError::RanksDisagree { np: 4, ranks: 2 });
        assert!(err.to_string().contains("--ranks is 2"), "{err}");
        // Only --ranks: it becomes the launcher's count.
        let l = mpi(Some("mpirun --oversubscribe"), Some(4), 4).unwrap();
        assert_eq!(words(&l), ["mpirun", "--oversubscribe", "-np", "4"]);
    }

    #[test]
    fn the_process_count_must_match_the_cluster() {
        let err = mpi(Some("mpirun -np 2"), None, 4).unwrap_err();
        assert_eq!(err, LaunchError::ClusterDisagrees { ranks: 2, nodes: 4 });
        let err = mpi(None, Some(8), 4).unwrap_err();
        assert_eq!(err, LaunchError::ClusterDisagrees { ranks: 8, nodes: 4 });
    }

    #[test]
    fn bad_or_repeated_counts_are_errors() {
        for (text, value) in [
            ("mpirun -np four", "four"),
            ("mpirun -np 0", "0"),
            ("mpirun -np", ""),
        ] {
            let err = mpi(Some(text), None, 4).unwrap_err();
            assert!(
                matches!(&err, LaunchError::BadCount { value: v, .. } if v == value),
                "{text}: {err}"
            );
        }
        let err = mpi(Some("mpirun -np 4 -n 2"), None, 4).unwrap_err();
        assert!(
            matches!(
                err,
                LaunchError::SeveralCounts {
                    first: 4,
                    second: 2,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn the_command_is_the_launcher_then_the_binary() {
        let l = mpi(Some("mpirun --oversubscribe -np 2"), None, 2).unwrap();
        let command = l.command(Path::new("/t/release/jacobi"));
        assert_eq!(command.get_program(), "mpirun");
        let args: Vec<&OsStr> = command.get_args().collect();
        assert_eq!(args, ["--oversubscribe", "-np", "2", "/t/release/jacobi"]);
        let direct = Launcher::Direct.command(Path::new("/t/release/jacobi"));
        assert_eq!(direct.get_program(), "/t/release/jacobi");
        assert_eq!(direct.get_args().count(), 0);
    }

    #[cfg(unix)]
    #[test]
    fn tune_takes_the_rank_count_from_the_cluster_file() {
        let cluster =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/clusters/io-4.toml");
        // Any executable stands in for mpirun: only its presence is checked here.
        let l = Launcher::for_tune(Backend::Mpi, Some("/bin/sh"), None, &cluster).unwrap();
        assert_eq!(words(&l), ["/bin/sh", "-np", "4"]);
        let err =
            Launcher::for_tune(Backend::Mpi, Some("/bin/sh -np 2"), None, &cluster).unwrap_err();
        assert!(
            err.to_string()
                .contains("runs 2 processes but the cluster describes 4"),
            "{err}"
        );
        let err =
            Launcher::for_tune(Backend::Mpi, None, None, Path::new("no-such.toml")).unwrap_err();
        assert!(
            format!("{err:#}").contains("--cluster `no-such.toml`"),
            "{err:#}"
        );
        // The threads backend leaves the cluster to the runtime.
        let l = Launcher::for_tune(Backend::Threads, None, None, Path::new("no-such.toml"));
        assert_eq!(l.unwrap(), Launcher::Direct);
    }

    #[test]
    fn a_missing_launcher_is_reported_by_name() {
        let l = mpi(Some("no-such-mpirun-here -np 2"), None, 2).unwrap();
        let err = l.check().unwrap_err();
        assert!(
            err.to_string()
                .starts_with("mpirun not found: `no-such-mpirun-here`"),
            "{err}"
        );
        assert_eq!(Launcher::Direct.check(), Ok(()));
    }

    #[test]
    fn programs_are_found_on_the_path_or_by_path() {
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("fake-mpirun");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        let path = std::env::join_paths([Path::new("/nonexistent"), dir.path()]).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            // Not executable yet: not a program.
            assert_eq!(find_program(OsStr::new("fake-mpirun"), &path), None);
            std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        assert_eq!(
            find_program(OsStr::new("fake-mpirun"), &path),
            Some(tool.clone())
        );
        assert_eq!(find_program(tool.as_os_str(), OsStr::new("")), Some(tool));
        assert_eq!(
            find_program(OsStr::new("fake-mpirun"), OsStr::new("/nonexistent")),
            None
        );
    }
}
