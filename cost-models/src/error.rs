//! The crate's error type.

use copr_topology::{Origin, TopologyError};

/// Everything that can go wrong while building a cost model.
///
/// Bad input — unreadable or malformed files, invalid values, topology
/// problems — arrives as [`CostError::Input`], whose message names file,
/// line and field; configurations whose parts do not fit together are
/// [`CostError::Config`].
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum CostError {
    /// Bad input (files, values, topology sources); see [`TopologyError`].
    #[error(transparent)]
    Input(#[from] TopologyError),
    /// The configuration's parts do not fit together.
    #[error("{origin}field `{field}`: {message}")]
    Config {
        /// Where.
        origin: Origin,
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
}

/// Shorthand for `Result<T, CostError>`.
pub type Result<T, E = CostError> = std::result::Result<T, E>;
