//! The optimiser's candidates: a mapping with its metrics ([`Scored`]), the options of
//! a run ([`Options`]), and the baselines scored as the usual starts.

use std::time::Duration;

use super::machine::MapMachine;
use super::metrics::{evaluate, Metrics};
use super::pattern::Pattern;
use super::strategy::{baseline_until, Strategy};
use copr::error::Result;
use copr::lap::Perm;

/// Options of [`optimise`](crate::optimise()).
#[derive(Debug, Clone)]
pub struct Options {
    /// Seed of the refinement order.
    pub seed: u64,
    /// Wall-time budget of the whole optimisation (starts excluded); in
    /// [`crate::compare`], of the whole comparison, baselines included.
    pub budget: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            seed: 1,
            budget: Duration::from_secs(10),
        }
    }
}

/// A candidate with its metrics.
#[derive(Debug, Clone)]
pub struct Scored {
    /// Where it came from.
    pub origin: String,
    /// The mapping.
    pub map: Perm,
    /// Its metrics.
    pub metrics: Metrics,
}

impl Scored {
    /// `map` with its metrics on `m`.
    pub(crate) fn new(p: &Pattern, m: &MapMachine, map: Perm, origin: String) -> Self {
        Self {
            metrics: evaluate(p, m, &map),
            origin,
            map,
        }
    }
}

/// Every baseline that applies, scored: the usual starts of
/// [`optimise`](crate::optimise()).
///
/// # Errors
/// As [`crate::baseline`].
pub(crate) fn baseline_starts(p: &Pattern, m: &MapMachine) -> Result<Vec<Scored>> {
    let mut starts = Vec::new();
    for s in Strategy::BASELINES {
        if let Some(map) = baseline_until(s, p, m, None)? {
            starts.push(Scored::new(p, m, map, s.name().into()));
        }
    }
    Ok(starts)
}
