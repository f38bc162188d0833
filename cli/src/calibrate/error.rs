//! What stops `copr calibrate`, as values a caller can match; each prints as the one
//! line `copr: error: …` says.

use std::path::PathBuf;

/// An error of `copr calibrate`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CalibrateError {
    /// `--budget` is not a positive number of seconds up to [`MAX_BUDGET`] (one day).
    ///
    /// [`MAX_BUDGET`]: super::budget::MAX_BUDGET
    #[error("--budget {0}: give a positive number of seconds, at most 86400 (one day)")]
    Budget(f64),
    /// `--emulate-nodes 0`.
    #[error("--emulate-nodes 0: give at least 1 node")]
    NoNodes,
    /// More emulated nodes than ranks.
    #[error("--emulate-nodes {nodes}: more nodes than the {ranks} ranks")]
    TooManyNodes {
        /// `--emulate-nodes`.
        nodes: usize,
        /// Ranks of the run.
        ranks: usize,
    },
    /// `--out` has the name of a file written beside it.
    #[error("--out {}: the placement, the node-pair matrix and the raw measurements are written beside the config with extensions .placement, .nodes.toml and .raw.json; give the config another extension (.toml or .json)", .0.display())]
    OutClashes(PathBuf),
    /// A file cannot be written.
    #[error("{}: cannot write: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--out` has no file name.
    #[error("--out {}: not a file name", .0.display())]
    NotAFile(PathBuf),
    /// This build has no MPI.
    #[error("copr calibrate measures with MPI: build copr with `--features mpi` and run it under mpirun")]
    NoMpi,
    /// MPI was started before.
    #[error("MPI was initialised already")]
    MpiStarted,
    /// Fewer than two ranks.
    #[error("copr calibrate measures between ranks: run it under mpirun with at least 2 ranks (mpirun -n 4 copr calibrate …)")]
    TooFewRanks,
    /// Rank 0 could not write the machine file (its own error was printed).
    #[error("{}: could not write the machine file", .0.display())]
    ConfigNotWritten(PathBuf),
    /// Another rank failed (rank 0 prints the errors, so this one says only that).
    #[error("calibration failed on another rank")]
    OtherRank,
    /// The library's error: the placement's gather, the written config read back, an
    /// engine run of the validation.
    #[error(transparent)]
    Copr(#[from] copr::Error),
}

impl From<copr_topology::TopologyError> for CalibrateError {
    fn from(e: copr_topology::TopologyError) -> Self {
        Self::Copr(e.into())
    }
}

impl From<copr_cost_models::CostError> for CalibrateError {
    fn from(e: copr_cost_models::CostError) -> Self {
        Self::Copr(e.into())
    }
}

/// `Result` with a [`CalibrateError`].
pub type Result<T> = std::result::Result<T, CalibrateError>;
