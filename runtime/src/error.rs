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
    RankFailed { rank: usize, message: String },
    /// Command-line arguments that do not fit together.
    #[error("invalid arguments: {0}")]
    Args(String),
    #[error("--backend mpi needs mheta-runtime built with the `mpi` feature")]
    MpiUnavailable,
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("--distribution: {0}")]
    Distribution(#[from] DistributionError),
    #[error("distribution file {}: {message}", path.display())]
    DistributionFile { path: PathBuf, message: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The instrumented run's records could not be turned into measurements.
    #[error("measurements: {0}")]
    Measurements(String),
    #[error(transparent)]
    Comm(#[from] CommError),
    /// An `MHETA_*` variable an attached program cannot use (see [`crate::attach`]).
    #[error("{var}{message}")]
    Env { var: &'static str, message: String },
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
