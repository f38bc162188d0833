//! Explicit per-pair latency and inverse-bandwidth matrices, e.g. written by a
//! calibration run, and the file format for them.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Result, TopologyError};
use crate::files::{self, check_nonneg, Doc, FieldPath, Format, Invalid};
use crate::link::LinkCost;

/// The cost-matrix file format (TOML, or JSON by extension): `n×n` arrays
/// `latency` (seconds) and `inv_bandwidth` (seconds per byte), row = sender,
/// column = receiver, and optionally the `n` names of the rows (node names
/// when used between nodes; ranks otherwise). Read from a file, an inverse bandwidth
/// between two different rows is at least `1e-30` (0 only on the diagonal).
///
/// ```toml
/// names = ["a", "b"]
/// latency = [[0.0, 1.5e-6], [1.5e-6, 0.0]]
/// inv_bandwidth = [[0.0, 1e-10], [1e-10, 0.0]]
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixFile {
    /// Row/column names (default `"0"`, `"1"`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// Latency matrix, seconds.
    pub latency: Vec<Vec<f64>>,
    /// Inverse-bandwidth matrix, seconds per byte.
    pub inv_bandwidth: Vec<Vec<f64>>,
}

/// A dense `n×n` table of [`LinkCost`]s with named rows.
///
/// # Complexity
/// Lookups `O(1)`; memory `16·n²` bytes.
///
/// ```
/// use copr_topology::{LinkCost, PairTable};
/// let t = PairTable::new(vec![], vec![0.0, 1.0, 2.0, 0.0], vec![0.0, 0.5, 0.25, 0.0]).unwrap();
/// assert_eq!(t.len(), 2);
/// assert_eq!(t.link_cost(1, 0), LinkCost { latency: 2.0, inv_bandwidth: 0.25 });
/// assert_eq!(t.name(1), "1");
/// assert!(PairTable::new(vec![], vec![0.0, -1.0, 0.0, 0.0], vec![0.0; 4]).is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct PairTable {
    names: Vec<String>,
    index: HashMap<String, usize>,
    latency: Vec<f64>,
    inv_bandwidth: Vec<f64>,
    description: String,
}

impl PairTable {
    /// A table from row-major `n×n` arrays (`n²` entries each). Empty
    /// `names` means `"0"`, `"1"`, ….
    ///
    /// # Errors
    /// [`TopologyError::Inconsistent`] if the lengths are not `n²` (or
    /// `names` is not `n` long), [`TopologyError::Duplicate`] for repeated
    /// names, [`TopologyError::InvalidValue`] for negative, NaN or infinite
    /// entries (naming `latency[i][j]`).
    pub fn new(names: Vec<String>, latency: Vec<f64>, inv_bandwidth: Vec<f64>) -> Result<Self> {
        let n = (latency.len() as f64).sqrt().round() as usize;
        if n * n != latency.len() || inv_bandwidth.len() != latency.len() {
            return Err(crate::link::inconsistent(
                "latency",
                format!(
                    "latency has {} entries and inv_bandwidth {}; both must be n² for some n",
                    latency.len(),
                    inv_bandwidth.len()
                ),
            ));
        }
        let rows = |v: &[f64]| -> Vec<Vec<f64>> {
            if n == 0 {
                Vec::new()
            } else {
                v.chunks(n).map(<[f64]>::to_vec).collect()
            }
        };
        let file = MatrixFile {
            names,
            latency: rows(&latency),
            inv_bandwidth: rows(&inv_bandwidth),
        };
        Self::from_doc(&file, Doc::none())
    }

    /// The table a [`MatrixFile`] describes.
    ///
    /// # Errors
    /// As [`PairTable::new`], plus ragged rows (naming `latency[i]`) and an inverse
    /// bandwidth below `1e-30` (0, say) between two different rows (naming
    /// `inv_bandwidth[i][j]`).
    pub fn from_file_format(file: &MatrixFile) -> Result<Self> {
        let t = Self::from_doc(file, Doc::none())?;
        t.check_bandwidths(Doc::none())?;
        Ok(t)
    }

    /// Reads a matrix file (TOML, or JSON by extension).
    ///
    /// # Errors
    /// [`TopologyError::Io`], [`TopologyError::Parse`], and the errors of
    /// [`PairTable::from_file_format`] with file and line.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = files::read_text(path)?;
        let format = Format::from_path(path);
        let file: MatrixFile = files::parse_str(&text, format, Some(path))?;
        let doc = Doc::new(Some(path), &text, format);
        let mut t = Self::from_doc(&file, doc)?;
        t.check_bandwidths(doc)?;
        t.description = format!("{}×{} matrix {}", t.len(), t.len(), path.display());
        Ok(t)
    }

    /// A file's check beyond [`PairTable::new`]'s: between two different rows the
    /// inverse bandwidth is at least `1 / MAX_BANDWIDTH` (0 would be an infinite
    /// bandwidth, which no other machine source accepts); the diagonal is free.
    fn check_bandwidths(&self, doc: Doc<'_>) -> Result<()> {
        let n = self.len();
        let min = 1.0 / files::MAX_BANDWIDTH;
        let bad = (0..n * n).find(|&k| k / n != k % n && self.inv_bandwidth[k] < min);
        match bad {
            None => Ok(()),
            Some(k) => Err(doc.invalid(Invalid::new(
                FieldPath::root().key("inv_bandwidth").index(k / n).index(k % n),
                self.inv_bandwidth[k],
                format!(
                    "between two different rows ({} and {}) the inverse bandwidth is at least 1e-30 s/B (1 / the largest bandwidth, 1e30 B/s); 0 would be an infinite bandwidth",
                    self.names[k / n],
                    self.names[k % n]
                ),
            ))),
        }
    }

    fn from_doc(file: &MatrixFile, doc: Doc<'_>) -> Result<Self> {
        let root = FieldPath::root();
        let n = file.latency.len();
        if n == 0 {
            return Err(TopologyError::Inconsistent {
                origin: doc.origin(&root.key("latency")),
                field: "latency".into(),
                message: "the matrix is empty".into(),
            });
        }
        let mut flat = [Vec::with_capacity(n * n), Vec::with_capacity(n * n)];
        for (m, (field, rows)) in [
            ("latency", &file.latency),
            ("inv_bandwidth", &file.inv_bandwidth),
        ]
        .into_iter()
        .enumerate()
        {
            if rows.len() != n {
                return Err(TopologyError::Inconsistent {
                    origin: doc.origin(&root.key(field)),
                    field: field.into(),
                    message: format!("{} rows, but latency has {n}", rows.len()),
                });
            }
            for (i, row) in rows.iter().enumerate() {
                if row.len() != n {
                    let at = root.key(field).index(i);
                    return Err(TopologyError::Inconsistent {
                        origin: doc.origin(&at),
                        field: at.to_string(),
                        message: format!("row has {} entries, expected {n}", row.len()),
                    });
                }
                for (j, &v) in row.iter().enumerate() {
                    check_nonneg(v, &root.key(field).index(i).index(j))
                        .map_err(|e| doc.invalid(e))?;
                }
                flat[m].extend_from_slice(row);
            }
        }
        let names: Vec<String> = if file.names.is_empty() {
            (0..n).map(|k| k.to_string()).collect()
        } else if file.names.len() != n {
            return Err(TopologyError::Inconsistent {
                origin: doc.origin(&root.key("names")),
                field: "names".into(),
                message: format!("{} names for a {n}×{n} matrix", file.names.len()),
            });
        } else {
            file.names.clone()
        };
        let mut index = HashMap::with_capacity(n);
        for (k, name) in names.iter().enumerate() {
            if let Some(prev) = index.insert(name.clone(), k) {
                let at = root.key("names").index(k);
                return Err(TopologyError::Duplicate {
                    origin: doc.origin(&at),
                    field: at.to_string(),
                    id: name.clone(),
                    first: format!("as names[{prev}]"),
                });
            }
        }
        let [latency, inv_bandwidth] = flat;
        Ok(Self {
            names,
            index,
            latency,
            inv_bandwidth,
            description: format!("{n}×{n} matrix"),
        })
    }

    /// The file form of this table.
    pub fn to_file_format(&self) -> MatrixFile {
        let n = self.len();
        MatrixFile {
            names: self.names.clone(),
            latency: self.latency.chunks(n).map(<[f64]>::to_vec).collect(),
            inv_bandwidth: self.inv_bandwidth.chunks(n).map(<[f64]>::to_vec).collect(),
        }
    }

    /// Writes the table as TOML, or JSON if `path` ends in `.json`.
    ///
    /// # Errors
    /// [`TopologyError::Io`] if the file cannot be written.
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = files::to_string(&self.to_file_format(), Format::from_path(path))?;
        std::fs::write(path, text).map_err(|source| TopologyError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// `n`.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Always `false` (a table has at least one row).
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The name of row `k`.
    ///
    /// # Panics
    /// If `k >= len()`.
    pub fn name(&self, k: usize) -> &str {
        &self.names[k]
    }

    /// The row called `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// Entry `(a, b)`.
    ///
    /// # Panics
    /// If `a` or `b` is `>= len()`.
    #[inline]
    pub fn link_cost(&self, a: usize, b: usize) -> LinkCost {
        let k = a * self.names.len() + b;
        LinkCost {
            latency: self.latency[k],
            inv_bandwidth: self.inv_bandwidth[k],
        }
    }

    /// The latency matrix, row-major.
    pub fn latency(&self) -> &[f64] {
        &self.latency
    }

    /// The inverse-bandwidth matrix, row-major.
    pub fn inv_bandwidth(&self) -> &[f64] {
        &self.inv_bandwidth
    }

    /// A one-line description.
    pub fn description(&self) -> &str {
        &self.description
    }
}
