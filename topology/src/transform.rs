//! `[transform]` of a machine file: what a core of this machine spends on the local
//! transforms of a package, measured by `copr calibrate`.

use serde::{Deserialize, Serialize};

use crate::files::{check_nonneg, FieldPath, Invalid};

/// Seconds per byte a core spends, over a plain copy, scaling, transposing and
/// conjugating a package (f64 for scale and transpose, c64 for conjugation, as
/// `copr calibrate` measures them). A machine file that has them is priced by
/// latency + bandwidth plus these (the cost model's `transform` term); every field
/// defaults to 0 (free).
///
/// ```toml
/// [transform]
/// scale = 1.2e-11
/// transpose = 3.5e-10
/// conjugate = 4.0e-11
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransformCosts {
    /// Seconds per byte scaled (α ≠ 1 or β ≠ 0).
    #[serde(default)]
    pub scale: f64,
    /// Seconds per byte transposed.
    #[serde(default)]
    pub transpose: f64,
    /// Seconds per byte conjugated.
    #[serde(default)]
    pub conjugate: f64,
}

impl TransformCosts {
    /// Checks that every coefficient is a cost (finite, `>= 0`, at most
    /// [`crate::files::MAX_COST`]); `at` is the table's place in its document.
    ///
    /// # Errors
    /// [`Invalid`] naming the field, e.g. `transform.transpose`.
    pub fn validate(&self, at: &FieldPath) -> Result<(), Invalid> {
        check_nonneg(self.scale, &at.key("scale"))?;
        check_nonneg(self.transpose, &at.key("transpose"))?;
        check_nonneg(self.conjugate, &at.key("conjugate"))
    }
}
