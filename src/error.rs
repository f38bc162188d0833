//! The crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong in copr, with the offending values in the message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A layout failed its construction checks; `field` names the offending field.
    #[error("invalid layout: {field}: {detail}")]
    Layout {
        /// The field (or pair of fields) that is wrong, e.g. `row_splits`.
        field: &'static str,
        /// What is wrong, with the values.
        detail: String,
    },
    /// Source and target (or any two things that must agree) do not match.
    #[error("mismatch: {0}")]
    Mismatch(String),
    /// A permutation or assignment input is malformed.
    #[error("assignment: {0}")]
    Assignment(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file could be read but not understood.
    #[error("{path}: {detail}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser said, with line and field where known.
        detail: String,
    },
    /// An error about the contents of a file.
    #[error("{path}: {source}")]
    InFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: Box<Error>,
    },
    /// A cost-model configuration is wrong (the message names file, line and field).
    #[error(transparent)]
    Cost(#[from] copr_cost_models::CostError),
    /// A topology source is wrong (the message names file, line and field).
    #[error(transparent)]
    Topology(#[from] copr_topology::TopologyError),
    /// Drawing a chart failed.
    #[error("plot {path}: {detail}")]
    Plot {
        /// The output file.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },
}

impl Error {
    /// Attaches the file the error is about (files already named are left alone).
    pub fn in_file(self, path: &std::path::Path) -> Self {
        match self {
            e @ (Error::Io { .. }
            | Error::Parse { .. }
            | Error::InFile { .. }
            | Error::Cost(_)
            | Error::Topology(_)) => e,
            e => Error::InFile {
                path: path.to_owned(),
                source: Box::new(e),
            },
        }
    }
}

/// Shorthand for `Result<T, copr::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
