//! Batches: several transforms planned together, and the **joint** relabeling — one σ
//! for every target of the batch (see [`crate::relabel::Relabel::volumes`]).

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{check_alpha, check_element_size, default_element_size, one, Plan, Solver};
use crate::csr::Csr;
use crate::error::{Error, Result};
use crate::lap::{joint_assign, Perm};
use crate::layout::{Layout, Op};
use crate::volume::Volumes;

/// One `[[transform]]` entry of a batch plan file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransformSpec {
    /// A name for reports and errors (default: `transform[k]`), unlike every other
    /// entry's.
    #[serde(default)]
    pub name: Option<String>,
    /// The operation applied to B on its way into A.
    #[serde(default)]
    pub op: Op,
    /// Bytes per element of this matrix (default 8).
    #[serde(default = "default_element_size")]
    pub element_size: usize,
    /// α (only whether it is 1 matters, for transform-cost models).
    #[serde(default = "one")]
    pub alpha: f64,
    /// Where B is (`[transform.source]`).
    pub source: Layout,
    /// Where A goes (`[transform.target]`).
    pub target: Layout,
}

/// A batch plan file: several transforms (`[[transform]]` entries, each with its own
/// layouts, op and element size) planned in one rank space.
///
/// ```toml
/// solver = "sparse"      # for the independent σ's; the joint σ is always exact
/// [[transform]]
/// name = "A"
/// op = "identity"
/// [transform.source]
/// kind = "block-cyclic"
/// # …
/// [transform.target]
/// # …
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchSpec {
    /// A note on what the batch is; not used.
    #[serde(default)]
    pub description: Option<String>,
    /// Solver for each transform's own (independent) σ.
    #[serde(default)]
    pub solver: Solver,
    /// The transforms.
    pub transform: Vec<TransformSpec>,
}

/// An error about entry `k` of a batch, naming it.
fn in_entry(k: usize, name: &str, e: Error) -> Error {
    Error::Entry {
        entry: entry_label(k, name),
        source: Box::new(e),
    }
}

fn entry_label(k: usize, name: &str) -> String {
    let default = format!("transform[{k}]");
    if name == default {
        default
    } else {
        format!("{default} ({name})")
    }
}

impl BatchSpec {
    /// Entry `k`'s name: its `name`, or `transform[k]`.
    ///
    /// # Panics
    /// If `k` is not an entry.
    pub fn name(&self, k: usize) -> String {
        self.transform[k]
            .name
            .clone()
            .unwrap_or_else(|| format!("transform[{k}]"))
    }

    /// Checks every entry's own fields (as [`super::PlanSpec::check`]) and that there
    /// is at least one.
    ///
    /// # Errors
    /// [`Error::Plan`] for an empty batch; [`Error::Entry`] naming the entry around the
    /// field's [`Error::Plan`] (also for a name another entry has, given or default).
    pub fn check(&self) -> Result<()> {
        if self.transform.is_empty() {
            return Err(Error::Plan {
                field: "transform",
                detail: "a batch needs at least one [[transform]] entry".into(),
            });
        }
        let mut seen = std::collections::HashMap::with_capacity(self.transform.len());
        for (k, t) in self.transform.iter().enumerate() {
            let elements = t.target.rows() as u64 * t.target.cols() as u64;
            let name = self.name(k);
            check_element_size(t.element_size, elements)
                .and_then(|()| check_alpha(t.alpha))
                .map_err(|e| in_entry(k, &name, e))?;
            if let Some(first) = seen.insert(name.clone(), k) {
                return Err(in_entry(
                    k,
                    &name,
                    Error::Plan {
                        field: "name",
                        detail: format!(
                            "`{name}` already names transform[{first}]: the names label the report's rows, give each entry its own"
                        ),
                    },
                ));
            }
        }
        Ok(())
    }
}

/// A batch planned three ways: no relabeling, each transform's own σ, and the joint σ.
///
/// # Memory
/// Transforms with the same source, target and op share one plan (their volumes count
/// once, weighted by how often they occur, in the joint relabeling), so a batch holds
/// the volumes of its *distinct* transforms, once more for those whose layouts live on
/// fewer ranks than the batch, and O(ranks) words per transform for the σ's.
#[derive(Debug, Clone)]
pub struct BatchPlan {
    names: Vec<String>,
    /// The distinct transforms' plans.
    plans: Vec<Plan>,
    /// `of[k]`: index in `plans` of transform `k`'s plan.
    of: Vec<usize>,
    /// Each distinct plan's volumes in the batch's rank space, when that is wider than
    /// the plan's own.
    widened: Vec<Option<Volumes>>,
    ranks: usize,
    joint: Perm,
    joint_seconds: f64,
}

/// `v` in a rank space of `ranks ≥ v.ranks()` ranks, if that is wider than its own.
fn widen(v: &Volumes, ranks: usize) -> Option<Volumes> {
    (v.ranks() != ranks).then(|| {
        Volumes::from_matrix(Csr::from_triplets(
            ranks,
            ranks,
            v.matrix().iter().collect(),
        ))
    })
}

impl BatchPlan {
    /// Plans every transform of `spec` (its own σ with `spec.solver`) and the joint σ.
    ///
    /// # Errors
    /// [`BatchSpec::check`]'s errors; [`Plan::new`]'s errors wrapped in
    /// [`Error::Entry`] naming the transform; the joint relabeling's ([`crate::relabel::Relabel::volumes`]).
    pub fn from_spec(spec: &BatchSpec) -> Result<Self> {
        spec.check()?;
        let mut plans: Vec<Plan> = Vec::new();
        // the entry each distinct plan was made from, and how many entries share it
        let mut first: Vec<usize> = Vec::new();
        let mut count: Vec<u64> = Vec::new();
        let mut of = Vec::with_capacity(spec.transform.len());
        let mut names = Vec::with_capacity(spec.transform.len());
        for (k, t) in spec.transform.iter().enumerate() {
            let name = spec.name(k);
            let same = first.iter().position(|&j| {
                let u = &spec.transform[j];
                u.op == t.op && u.source == t.source && u.target == t.target
            });
            let index = match same {
                Some(i) => i,
                None => {
                    let plan = Plan::new(t.source.clone(), t.target.clone(), t.op, spec.solver)
                        .map_err(|e| in_entry(k, &name, e))?;
                    plans.push(plan);
                    first.push(k);
                    count.push(0);
                    plans.len() - 1
                }
            };
            count[index] += 1;
            of.push(index);
            names.push(name);
        }
        let ranks = plans.iter().map(|p| p.volumes().ranks()).max().unwrap_or(0);
        let widened: Vec<Option<Volumes>> =
            plans.iter().map(|p| widen(p.volumes(), ranks)).collect();
        let t0 = Instant::now();
        let parts: Vec<(&Csr, u64)> = plans
            .iter()
            .zip(&widened)
            .zip(&count)
            .map(|((p, w), &c)| (w.as_ref().unwrap_or(p.volumes()).matrix(), c))
            .collect();
        let joint = joint_assign(&parts, ranks, &[])?;
        Ok(Self {
            names,
            plans,
            of,
            widened,
            ranks,
            joint,
            joint_seconds: t0.elapsed().as_secs_f64(),
        })
    }

    /// The rank space of the batch: the most ranks any layout of it lives on.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// The plans of the distinct transforms (each with its independent σ), in the
    /// order of their first entry; [`Self::plan`] gives transform `k`'s.
    pub fn plans(&self) -> &[Plan] {
        &self.plans
    }

    /// Transform `k`'s own plan (with its independent σ); transforms with the same
    /// source, target and op share one.
    ///
    /// # Panics
    /// If `k` is not a transform of the batch.
    pub fn plan(&self, k: usize) -> &Plan {
        &self.plans[self.of[k]]
    }

    /// The number of transforms.
    pub fn len(&self) -> usize {
        self.of.len()
    }

    /// Whether the batch has no transforms (never, for a batch from [`Self::from_spec`]).
    pub fn is_empty(&self) -> bool {
        self.of.is_empty()
    }

    /// The transforms' names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Transform `k`'s volumes in the batch's rank space.
    ///
    /// # Panics
    /// If `k` is not a transform of the batch.
    pub fn volumes(&self, k: usize) -> &Volumes {
        let i = self.of[k];
        self.widened[i]
            .as_ref()
            .unwrap_or_else(|| self.plans[i].volumes())
    }

    /// The joint σ: target label `t` of every transform is taken by process `σ(t)`.
    pub fn joint_sigma(&self) -> &Perm {
        &self.joint
    }

    /// The numbers `copr plan` prints for a batch.
    pub fn report(&self, solver: Solver) -> BatchReport {
        // each distinct plan's numbers once
        let remote_joint: Vec<u64> = (0..self.plans.len())
            .map(|i| {
                let k = self.of.iter().position(|&j| j == i).unwrap_or(0);
                self.volumes(k).remote_after(&self.joint)
            })
            .collect();
        let transforms: Vec<TransformVolumes> = (0..self.len())
            .map(|k| {
                let p = self.plan(k);
                TransformVolumes {
                    name: self.names[k].clone(),
                    op: p.op(),
                    total_elements: p.volumes().total(),
                    remote_none: p.volumes().remote(),
                    remote_independent: p.remote_after(),
                    remote_joint: remote_joint[self.of[k]],
                    sigma_independent: p.sigma().forward().to_vec(),
                }
            })
            .collect();
        let sum = |f: fn(&TransformVolumes) -> u64| transforms.iter().map(f).sum::<u64>();
        let (independent, joint) = (sum(|t| t.remote_independent), sum(|t| t.remote_joint));
        BatchReport {
            ranks: self.ranks,
            solver,
            total_elements: sum(|t| t.total_elements),
            remote_none: sum(|t| t.remote_none),
            remote_independent: independent,
            remote_joint: joint,
            price_of_consistency: joint as i64 - independent as i64,
            joint_sigma: self.joint.forward().to_vec(),
            joint_seconds: self.joint_seconds,
            transforms,
        }
    }
}

/// One transform's volumes in a [`BatchReport`] (elements).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransformVolumes {
    /// The entry's name.
    pub name: String,
    /// op.
    pub op: Op,
    /// Elements of the matrix.
    pub total_elements: u64,
    /// Remote elements without relabeling.
    pub remote_none: u64,
    /// Remote elements with this transform's own σ.
    pub remote_independent: u64,
    /// Remote elements with the joint σ.
    pub remote_joint: u64,
    /// This transform's own σ (on its own ranks).
    pub sigma_independent: Vec<usize>,
}

/// What `copr plan` reports for a batch: remote elements per transform and in total,
/// with no relabeling, with independent σ's, and with the joint σ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchReport {
    /// The batch's rank space.
    pub ranks: usize,
    /// Solver of the independent σ's.
    pub solver: Solver,
    /// Elements of all matrices.
    pub total_elements: u64,
    /// Remote elements without relabeling.
    pub remote_none: u64,
    /// Remote elements with each transform's own σ.
    pub remote_independent: u64,
    /// Remote elements with the joint σ.
    pub remote_joint: u64,
    /// `remote_joint − remote_independent`: what one common σ costs over independent
    /// ones (≥ 0 when the independent σ's are exact).
    pub price_of_consistency: i64,
    /// The joint σ (`joint_sigma[t]` = process that takes label t of every target).
    pub joint_sigma: Vec<usize>,
    /// Seconds for the joint assignment.
    pub joint_seconds: f64,
    /// Per transform.
    pub transforms: Vec<TransformVolumes>,
}
