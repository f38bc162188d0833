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
    /// Source and target (or any two things that must agree) do not match; what, with
    /// both values, in [`Mismatched`].
    #[error("mismatch: {0}")]
    Mismatched(Mismatched),
    /// A command-line argument is wrong; the message names the argument and the
    /// accepted values.
    #[error("{0}")]
    Argument(String),
    /// A relabeling that would misplace data already in the target (see
    /// [`crate::engine::Relabeling`]).
    #[error("relabeling: {0}")]
    Relabeling(String),
    /// A relabeling method that does not apply to what is relabeled (see the table of
    /// `copr::relabel`).
    #[error("the {method} relabeling method does not apply to {objective}")]
    Unsupported {
        /// The method asked for: `auto`, `dense`, `sparse` or `greedy`.
        method: &'static str,
        /// What was to be relabeled, e.g. `a cost model over a batch`.
        objective: &'static str,
    },
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
    /// `copr_mapping::{PatternError, MachineError, MapError, ExportError, MpiError}`);
    /// `downcast_ref` on the box recovers it.
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

/// What did not match, with both values: the payload of [`Error::Mismatched`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Mismatched {
    /// `op(source)` and the target differ in shape.
    #[error("{}op(source) is {}x{} (source {}x{}, op {op}) but the target is {}x{}", in_transform(*.transform), .op_source.0, .op_source.1, .source_shape.0, .source_shape.1, .target.0, .target.1)]
    Shape {
        /// The transform of a batch, if any.
        transform: Option<usize>,
        /// Rows and columns of `op(source)`.
        op_source: (usize, usize),
        /// Rows and columns of the source.
        source_shape: (usize, usize),
        /// The op, as its name (`Identity`, `Transpose`, `ConjTranspose`).
        op: String,
        /// Rows and columns of the target.
        target: (usize, usize),
    },
    /// A transform's layout needs more ranks than the communicator has.
    #[error("transform {transform}: the {operand} layout needs {needs} ranks but the communicator has {communicator}")]
    LayoutRanks {
        /// The transform of the batch.
        transform: usize,
        /// `source` or `target`.
        operand: &'static str,
        /// The ranks the layout needs.
        needs: usize,
        /// The communicator's size.
        communicator: usize,
    },
    /// A relabeling σ given for a transform's target has the wrong length.
    #[error("transform {transform}: relabeling of {sigma} ranks for a target on {target} ranks in a communicator of {communicator}")]
    GivenRelabeling {
        /// The transform of the batch.
        transform: usize,
        /// σ's length.
        sigma: usize,
        /// The target layout's ranks.
        target: usize,
        /// The communicator's size.
        communicator: usize,
    },
    /// A relabeling σ shorter than the layout it is applied to.
    #[error("relabeling of {sigma} ranks applied to a layout on {layout} ranks")]
    RelabelingRanks {
        /// σ's length.
        sigma: usize,
        /// The layout's ranks.
        layout: usize,
    },
    /// A transform of a joint relabeling lives on more ranks than the relabeling.
    #[error(
        "transform {transform}: {what} of {ranks} ranks in a joint relabeling of {joint} ranks"
    )]
    JointRanks {
        /// The transform of the batch.
        transform: usize,
        /// `volumes` or `packages`.
        what: &'static str,
        /// The transform's ranks.
        ranks: usize,
        /// The joint relabeling's ranks.
        joint: usize,
    },
    /// A label that must keep its process is not a label of the relabeling.
    #[error("fixed label {label} outside the {ranks} ranks of the joint relabeling")]
    FixedLabel {
        /// The label.
        label: usize,
        /// The relabeling's ranks.
        ranks: usize,
    },
    /// A package names a rank outside the communicator.
    #[error("package ({from}, {to}) outside the {ranks} ranks")]
    PackageRank {
        /// The sending rank.
        from: usize,
        /// The receiving rank.
        to: usize,
        /// The communicator's size.
        ranks: usize,
    },
    /// The cost model's machine places fewer ranks than the layouts use.
    #[error("the cost model's machine places {model} ranks but the layouts use {layouts}")]
    ModelRanks {
        /// Ranks of the model's machine.
        model: usize,
        /// Ranks of the layouts.
        layouts: usize,
    },
    /// The layouts and the communicator differ in size.
    #[error("the layouts live on {layouts} ranks but the communicator has {communicator}")]
    CommunicatorSize {
        /// Ranks of the layouts.
        layouts: usize,
        /// The communicator's size.
        communicator: usize,
    },
    /// Another rank of a collective call failed; this one stops too.
    #[error("another rank failed to compute its {what}")]
    OtherRankFailed {
        /// What the other rank was computing, e.g. `row of δ`.
        what: &'static str,
    },
    /// A rank could not plan a batch the other ranks planned.
    #[error("rank {rank} could not plan the batch the other ranks planned; no data was moved")]
    PlanFailedOn {
        /// The first rank that failed.
        rank: usize,
    },
    /// A rank passed a different number of jobs than the batch has transforms.
    #[error(
        "rank {rank} passed {jobs} jobs for a batch of {transforms} transforms; no data was moved"
    )]
    JobCount {
        /// The first rank that differs.
        rank: usize,
        /// The jobs it passed.
        jobs: u64,
        /// The transforms of the batch.
        transforms: usize,
    },
}

fn in_transform(t: Option<usize>) -> String {
    t.map_or_else(String::new, |k| format!("transform {k}: "))
}

impl From<Mismatched> for Error {
    fn from(m: Mismatched) -> Self {
        Error::Mismatched(m)
    }
}

/// Shorthand for `Result<T, copr::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
