//! The crate's error type and where an error was found ([`Origin`]).

use std::fmt;
use std::path::{Path, PathBuf};

/// Where a piece of input came from: a file, a line in it, both or neither.
///
/// Its `Display` form is a prefix for error messages: `"net.toml:12: "`,
/// `"net.toml: "`, `"line 12: "`, or the empty string for in-memory input
/// without line information.
///
/// ```
/// use copr_topology::Origin;
/// let o = Origin::file("a/b.toml").at_line(3);
/// assert_eq!(o.to_string(), "a/b.toml:3: ");
/// assert_eq!(Origin::none().to_string(), "");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Origin {
    /// The file the input was read from, if any.
    pub file: Option<PathBuf>,
    /// The 1-based line within the input, if known.
    pub line: Option<usize>,
}

impl Origin {
    /// No file and no line: in-memory input.
    pub fn none() -> Self {
        Self::default()
    }

    /// Input read from `path`, line unknown.
    pub fn file(path: impl AsRef<Path>) -> Self {
        Self {
            file: Some(path.as_ref().to_path_buf()),
            line: None,
        }
    }

    /// Input read from `path` if it is `Some`, else in-memory input.
    pub fn maybe_file(path: Option<&Path>) -> Self {
        Self {
            file: path.map(Path::to_path_buf),
            line: None,
        }
    }

    /// The same origin at 1-based line `line`.
    #[must_use]
    pub fn at_line(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }

    /// The same origin at line `line`, if it is `Some` (otherwise unchanged).
    #[must_use]
    pub fn at_maybe_line(mut self, line: Option<usize>) -> Self {
        if line.is_some() {
            self.line = line;
        }
        self
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(p), Some(l)) => write!(f, "{}:{l}: ", p.display()),
            (Some(p), None) => write!(f, "{}: ", p.display()),
            (None, Some(l)) => write!(f, "line {l}: "),
            (None, None) => Ok(()),
        }
    }
}

/// Everything that can go wrong while describing a machine.
///
/// Messages name the file, line and field when they are known, and quote the
/// offending value, e.g.
/// `"torus.coords:7: field `z`: coordinate 9 of node `nid00012` is outside the torus (extent 8)"`.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The input is not well-formed (syntax error, wrong type, missing field).
    #[error("{origin}field `{field}`: {message}")]
    Parse {
        /// Where.
        origin: Origin,
        /// The field (a path such as `inter.dims[2]`, or a column name).
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A well-formed value is not allowed (negative, NaN, zero bandwidth, ...).
    #[error("{origin}field `{field}`: invalid value {value}: {reason}")]
    InvalidValue {
        /// Where.
        origin: Origin,
        /// The field.
        field: String,
        /// The offending value, as written.
        value: String,
        /// Why it is rejected.
        reason: String,
    },
    /// The same identifier is defined twice.
    #[error("{origin}field `{field}`: duplicate `{id}` (first defined {first})")]
    Duplicate {
        /// Where the second definition is.
        origin: Origin,
        /// The field holding the identifier (`node`, `rank`, `hosts[3]`, …).
        field: String,
        /// The identifier.
        id: String,
        /// Where the first definition is (e.g. `"at line 3"`).
        first: String,
    },
    /// A torus coordinate is outside the torus dimensions.
    #[error(
        "{origin}field `{field}`: coordinate {coord} of node `{node}` is outside the torus \
         (dimension {dim} has extent {extent}, valid coordinates are 0..{extent})"
    )]
    OutOfTorus {
        /// Where.
        origin: Origin,
        /// The coordinate's column name (`x`, `y`, `z`, `c3`, ...).
        field: String,
        /// The node.
        node: String,
        /// The dimension (0-based).
        dim: usize,
        /// The coordinate.
        coord: i64,
        /// The torus extent in that dimension.
        extent: u32,
    },
    /// A rank has no place.
    #[error("{origin}rank {rank} is not placed ({detail})")]
    UnplacedRank {
        /// Where (the placement file, if any).
        origin: Origin,
        /// The rank.
        rank: usize,
        /// Why (e.g. `"the placement file lists ranks 0..=6 but not 3"`).
        detail: String,
    },
    /// A rank is placed on a node (or PU) that the cost source does not know.
    #[error("{origin}rank {rank} is placed on {place}, which {source_name} does not contain")]
    UnknownPlace {
        /// Where the placement came from.
        origin: Origin,
        /// The rank.
        rank: usize,
        /// The place, e.g. `node `nid00012`` or `PU 17 of node `a``.
        place: String,
        /// The source, e.g. `"the torus coordinates file t.coords"`.
        source_name: String,
    },
    /// Two vertices of a network graph are not connected.
    #[error("{origin}no path from `{from}` to `{to}` in the network")]
    Unreachable {
        /// The network file, if any.
        origin: Origin,
        /// Source vertex name.
        from: String,
        /// Destination vertex name.
        to: String,
    },
    /// Parts of the input do not fit together (sizes, counts, missing sources).
    #[error("{origin}field `{field}`: {message}")]
    Inconsistent {
        /// Where.
        origin: Origin,
        /// The field.
        field: String,
        /// What does not fit.
        message: String,
    },
    /// An hwloc source was requested but the crate was built without hwloc.
    #[error(
        "{origin}{what} needs hwloc, but copr-topology was built without its `hwloc` cargo \
         feature: rebuild with `--features hwloc` (the copr and copr-cost-models crates pass \
         it on; it needs the system packages libhwloc-dev and libudev-dev)"
    )]
    HwlocDisabled {
        /// Where the request came from.
        origin: Origin,
        /// What needed hwloc (e.g. `kind = "hwloc-synthetic"`).
        what: String,
    },
    /// hwloc rejected the input or failed.
    #[error("{origin}hwloc: {message}")]
    Hwloc {
        /// Where.
        origin: Origin,
        /// hwloc's complaint.
        message: String,
    },
}

/// `Some(origin)` of every variant that has one, by shared or mutable
/// reference (match ergonomics pick the reference kind).
macro_rules! origin_field {
    ($e:expr) => {
        match $e {
            TopologyError::Io { .. } => None,
            TopologyError::Parse { origin, .. }
            | TopologyError::InvalidValue { origin, .. }
            | TopologyError::Duplicate { origin, .. }
            | TopologyError::OutOfTorus { origin, .. }
            | TopologyError::UnplacedRank { origin, .. }
            | TopologyError::UnknownPlace { origin, .. }
            | TopologyError::Unreachable { origin, .. }
            | TopologyError::Inconsistent { origin, .. }
            | TopologyError::HwlocDisabled { origin, .. }
            | TopologyError::Hwloc { origin, .. } => Some(origin),
        }
    };
}

impl TopologyError {
    /// The error's origin (file and line), if it has one.
    pub fn origin(&self) -> Option<&Origin> {
        origin_field!(self)
    }

    /// Sets the file of the error's origin if it has none yet; used when an
    /// in-memory parser's error is reported for a file.
    #[must_use]
    pub fn in_file(mut self, path: &Path) -> Self {
        if let Some(origin) = origin_field!(&mut self) {
            if origin.file.is_none() {
                origin.file = Some(path.to_path_buf());
            }
        }
        self
    }
}

/// Shorthand for `Result<T, TopologyError>`.
pub type Result<T, E = TopologyError> = std::result::Result<T, E>;
