//! Latency/bandwidth pairs: [`LinkCost`] (what the crate computes with) and
//! [`LinkSpec`] (what configuration files write), plus [`BandwidthModel`].

use serde::{Deserialize, Serialize};

use crate::error::{Origin, Result, TopologyError};
use crate::files::{check_bandwidth, check_nonneg, FieldPath, Invalid};

/// The cost of moving bytes along one path: latency `L` in seconds and
/// inverse bandwidth `B` in seconds per byte. Sending `n` bytes costs
/// `L + B·n` ([`LinkCost::cost`]).
///
/// ```
/// use copr_topology::LinkCost;
/// let c = LinkCost::from_bandwidth(1e-6, 1e9).unwrap();
/// assert!((c.cost(1000) - 2e-6).abs() < 1e-18);
/// assert!(LinkCost::new(-1.0, 0.0).is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkCost {
    /// Latency `L` in seconds.
    pub latency: f64,
    /// Inverse bandwidth `B` in seconds per byte.
    pub inv_bandwidth: f64,
}

impl LinkCost {
    /// Free: `L = 0`, `B = 0`.
    pub const ZERO: LinkCost = LinkCost {
        latency: 0.0,
        inv_bandwidth: 0.0,
    };

    /// A checked cost.
    ///
    /// # Errors
    /// [`TopologyError::InvalidValue`] if either value is negative, NaN or
    /// infinite.
    pub fn new(latency: f64, inv_bandwidth: f64) -> Result<Self> {
        let c = Self {
            latency,
            inv_bandwidth,
        };
        c.validate(&FieldPath::root())
            .map_err(|e| e.into_error(None, None))?;
        Ok(c)
    }

    /// A checked cost from latency (s) and bandwidth (bytes/s): `B = 1/bandwidth`.
    ///
    /// # Errors
    /// [`TopologyError::InvalidValue`] if the latency is negative or not
    /// finite, or the bandwidth is not finite and positive.
    pub fn from_bandwidth(latency: f64, bandwidth: f64) -> Result<Self> {
        LinkSpec { latency, bandwidth }
            .to_cost(&FieldPath::root())
            .map_err(|e| e.into_error(None, None))
    }

    /// `L + B·bytes`, in seconds.
    #[inline]
    pub fn cost(&self, bytes: u64) -> f64 {
        self.latency + self.inv_bandwidth * bytes as f64
    }

    /// Checks both values are finite and non-negative; `at` names the
    /// place in a document.
    ///
    /// # Errors
    /// [`Invalid`] naming `at.latency` or `at.inv_bandwidth`.
    pub fn validate(&self, at: &FieldPath) -> Result<(), Invalid> {
        check_nonneg(self.latency, &at.key("latency"))?;
        check_nonneg(self.inv_bandwidth, &at.key("inv_bandwidth"))
    }
}

/// A link as configuration files write it: latency in seconds, bandwidth in
/// bytes per second.
///
/// ```
/// use copr_topology::{LinkSpec, files::FieldPath};
/// let s = LinkSpec { latency: 1e-6, bandwidth: 2e9 };
/// assert_eq!(s.to_cost(&FieldPath::root()).unwrap().inv_bandwidth, 5e-10);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Latency in seconds (`>= 0`).
    pub latency: f64,
    /// Bandwidth in bytes per second (`> 0`).
    pub bandwidth: f64,
}

impl LinkSpec {
    /// The [`LinkCost`] `(latency, 1/bandwidth)`.
    ///
    /// # Errors
    /// [`Invalid`] naming `at.latency` or `at.bandwidth`.
    pub fn to_cost(&self, at: &FieldPath) -> Result<LinkCost, Invalid> {
        check_nonneg(self.latency, &at.key("latency"))?;
        check_bandwidth(self.bandwidth, &at.key("bandwidth"))?;
        Ok(LinkCost {
            latency: self.latency,
            inv_bandwidth: 1.0 / self.bandwidth,
        })
    }

    /// Checks the values (see [`LinkSpec::to_cost`]).
    ///
    /// # Errors
    /// As [`LinkSpec::to_cost`].
    pub fn validate(&self, at: &FieldPath) -> Result<(), Invalid> {
        self.to_cost(at).map(|_| ())
    }
}

/// How the inverse bandwidths of the links along a multi-link path combine.
///
/// * `Bottleneck` (default): `B = max_l B_l` — cut-through/wormhole routing
///   pipelines a message over all links at once, so the slowest link limits
///   the stream. This is how torus (Cray Gemini/Aries) and InfiniBand
///   networks behave for large messages.
/// * `Sum`: `B = Σ_l B_l` — store-and-forward: every hop receives the whole
///   message before forwarding it.
///
/// Latencies always add up along a path.
///
/// ```
/// use copr_topology::BandwidthModel;
/// assert_eq!(BandwidthModel::Bottleneck.combine(2.0, 3.0), 3.0);
/// assert_eq!(BandwidthModel::Sum.combine(2.0, 3.0), 5.0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BandwidthModel {
    /// `B = max` over the links.
    #[default]
    Bottleneck,
    /// `B = Σ` over the links.
    Sum,
}

/// The name files use: `bottleneck` or `sum`.
impl std::fmt::Display for BandwidthModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Bottleneck => "bottleneck",
            Self::Sum => "sum",
        })
    }
}

impl BandwidthModel {
    /// Combines the inverse bandwidth `acc` of a path prefix with link `b`.
    #[inline]
    pub fn combine(self, acc: f64, b: f64) -> f64 {
        match self {
            Self::Bottleneck => acc.max(b),
            Self::Sum => acc + b,
        }
    }
}

/// A bandwidth in bytes per second written in GB/s for a description, with four
/// significant digits and no trailing zeros: `6.5`, `1.08`, `0.614` (where plain
/// `{}` of a bandwidth got back from its inverse, `1e-9 / (1.0 / 0.614e9)`, prints
/// `0.6140000000000001`).
///
/// ```
/// use copr_topology::gb_per_s;
/// assert_eq!(gb_per_s(6.5e9), "6.5");
/// assert_eq!(gb_per_s(5e9), "5");
/// assert_eq!(format!("{}", 1e-9 / (1.0 / 0.614e9)), "0.6140000000000001");
/// assert_eq!(gb_per_s(1.0 / (1.0 / 0.614e9)), "0.614");
/// assert_eq!(gb_per_s(12.345_6e9), "12.35");
/// assert_eq!(gb_per_s(2.5e5), "0.00025");
/// ```
pub fn gb_per_s(bytes_per_second: f64) -> String {
    let g = bytes_per_second / 1e9;
    if !g.is_finite() || g == 0.0 {
        return format!("{g}");
    }
    // decimals for four significant digits (none at 1000 GB/s and above)
    let decimals = (3 - g.abs().log10().floor() as i32).max(0) as usize;
    let text = format!("{g:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// Turns an [`Invalid`] found in a programmatic (in-memory) value into an error.
pub(crate) fn invalid(e: Invalid) -> TopologyError {
    e.into_error(None, None)
}

/// An in-memory inconsistency error.
pub(crate) fn inconsistent(field: &str, message: impl Into<String>) -> TopologyError {
    TopologyError::Inconsistent {
        origin: Origin::none(),
        field: field.to_string(),
        message: message.into(),
    }
}
