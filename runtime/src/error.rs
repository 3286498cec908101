//! The runtime's error type: what `launch` and the measurement writers report.

use std::path::PathBuf;

use crate::cluster::ClusterError;
use crate::comm::CommError;
use crate::distribution::DistributionError;

/// Why a run could not start, failed, or could not write its outputs.
///
/// `Debug` prints the message, as `Display` does: a program whose `main`
/// returns `Result<(), Box<dyn Error>>` and fails with `?` shows the user the message, not the
/// variant's fields.
#[derive(thiserror::Error)]
pub enum Error {
    /// A rank returned an error or panicked; the whole run was stopped.
    #[error("rank {rank} failed: {message}")]
    RankFailed {
        /// The rank that failed first.
        rank: usize,
        /// Its error's message, or its panic's.
        message: String,
    },
    /// Command-line arguments that do not fit together.
    #[error("invalid arguments: {0}")]
    Args(String),
    /// `--backend mpi` in a build without the `mpi` feature.
    #[error("--backend mpi needs mheta-runtime built with the `mpi` feature")]
    MpiUnavailable,
    /// The cluster description could not be read or parsed.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The distribution could not be built or does not fit the run.
    #[error("--distribution: {0}")]
    Distribution(#[from] DistributionError),
    /// A `--distribution` file could not be read or parsed.
    #[error("distribution file {}: {message}", path.display())]
    DistributionFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it (line and entry).
        message: String,
    },
    /// A file could not be read or written: an output (measurements, trace, timings, structure),
    /// the scratch directory or a `--distribution` file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The instrumented run's records could not be turned into measurements.
    #[error("measurements: {0}")]
    Measurements(String),
    /// A communication call failed.
    #[error(transparent)]
    Comm(#[from] CommError),
    /// An `MHETA_*` variable an attached program cannot use (see [`crate::attach`]).
    #[error("{var}{message}")]
    Env {
        /// The variable (`MHETA_CLOCK`, …).
        var: &'static str,
        /// What is wrong with it, printed right after the name (` is empty`, `: …`).
        message: String,
    },
    /// An attached program used its session wrongly (`session.rows` disagreeing across ranks).
    #[error("mheta session: {0}")]
    Session(String),
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The messages already name their sources (`{path}: {source}`).
        write!(f, "{self}")
    }
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
