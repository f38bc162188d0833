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
    /// A plan's own fields (`element_size`, `alpha`) are meaningless; `field` names the
    /// field.
    #[error("invalid plan: {field}: {detail}")]
    Plan {
        /// The offending field, e.g. `element_size`.
        field: &'static str,
        /// What is wrong, with the value and the accepted range.
        detail: String,
    },
    /// An input exceeds one of copr's documented size limits (checked before
    /// allocating); the message names the limit and the value.
    #[error("too large: {0}")]
    Limit(String),
    /// Source and target (or any two things that must agree) do not match.
    #[error("mismatch: {0}")]
    Mismatch(String),
    /// A command-line argument is wrong; the message names the argument and the
    /// accepted values.
    #[error("{0}")]
    Argument(String),
    /// A relabeling that would misplace data already in the target (see
    /// [`crate::engine::Relabeling`]).
    #[error("relabeling: {0}")]
    Relabeling(String),
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
    /// An error about one entry of a list in a file (a `[[transform]]` of a batch).
    #[error("{entry}: {source}")]
    Entry {
        /// The entry, e.g. `transform[1] (B)`.
        entry: String,
        /// What is wrong with it.
        source: Box<Error>,
    },
    /// A cost-model configuration is wrong (the message names file, line and field).
    #[error(transparent)]
    Cost(Box<copr_cost_models::CostError>),
    /// A topology source is wrong (the message names file, line and field).
    #[error(transparent)]
    Topology(Box<copr_topology::TopologyError>),
    /// Ranks passed different arguments to a collective call (layouts, operation,
    /// relabeling, element type or scalars); detected before any data moves.
    #[error(
        "rank {rank} passed a different {what} than rank 0 (fingerprint {found:#018x}, rank 0 has {expected:#018x}); no data was moved"
    )]
    Inconsistent {
        /// What differs: the batch of transforms, the plan, the element type or the
        /// scalars.
        what: &'static str,
        /// The first rank that differs from rank 0.
        rank: usize,
        /// That rank's fingerprint.
        found: u64,
        /// Rank 0's fingerprint.
        expected: u64,
    },
    /// A local buffer is shorter than its layout needs; detected before any data moves.
    #[error(
        "rank {rank}: the {operand} buffer of transform {index} holds {got} elements but its layout needs at least {expected}; no data was moved"
    )]
    BufferSize {
        /// The rank whose buffer is wrong (the lowest such rank).
        rank: usize,
        /// Index of the transform in the batch.
        index: usize,
        /// `source (B)` or `target (A)`.
        operand: &'static str,
        /// Elements in the buffer.
        got: usize,
        /// Elements the layout needs on that rank.
        expected: usize,
    },
    /// A typed error of a crate built on copr (the process mapper's
    /// `copr_mapping::PatternError`); `downcast_ref` on the box recovers it.
    #[error(transparent)]
    Extension(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// Moving bytes between ranks failed (a peer aborted, a message had the wrong size,
    /// a package exceeds what the transport can send in one message).
    #[error("transport: {0}")]
    Transport(String),
}

impl From<copr_cost_models::CostError> for Error {
    fn from(e: copr_cost_models::CostError) -> Self {
        Error::Cost(Box::new(e))
    }
}

impl From<copr_topology::TopologyError> for Error {
    fn from(e: copr_topology::TopologyError) -> Self {
        Error::Topology(Box::new(e))
    }
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
