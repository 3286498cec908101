//! Without the `mpi` feature, `--backend mpi` is a clear error naming the feature.

#![cfg(not(feature = "mpi"))]

use mheta_runtime::{launch, Args, Backend, Error};

#[test]
fn backend_mpi_without_the_feature_names_the_feature() {
    let args = Args {
        backend: Backend::Mpi,
        rows: Some(4),
        ..Args::default()
    };
    let err = launch(&args, |_ctx| Ok::<_, Error>(())).unwrap_err();
    assert!(matches!(err, Error::MpiUnavailable), "{err}");
    assert!(err.to_string().contains("`mpi` feature"), "{err}");
}
