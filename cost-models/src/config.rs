//! The cost configuration file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use copr_topology::files::{self, check_nonneg, Doc, FieldPath, Format, Invalid};
use copr_topology::{Machine, Origin, TopologyConfig, TopologyError};
use serde::{Deserialize, Serialize};

use crate::error::{CostError, Result};
use crate::model::CostModel;
use crate::models::{
    LatencyBandwidth, LocalityPenalty, LocallyFreeVolume, Scaled, Sum, TransformCost,
};

/// The cost configuration file: a weighted mix of models and the topology
/// they use. TOML or JSON; relative paths resolve against the file's
/// directory.
///
/// ```toml
/// description = "3-D torus, X/Z faster than Y"
/// topology_file = "../topology/torus-xe6.toml"   # or an inline [topology] table
///
/// [[terms]]
/// model = "latency-bandwidth"      # L(i,j) + B(i,j)·V(s), seconds
///
/// [[terms]]
/// model = "transform"              # c·Σ I_T(b)·|b| per kind, seconds
/// transpose = 2.0e-10
///
/// [[terms]]
/// model = "locality"               # stride/locality penalty, seconds
/// weight = 0.5
///
/// # model = "volume" is COSTA's eq. 1 (bytes); give it a weight in s/byte
/// # to mix it with the models in seconds.
/// ```
///
/// `w(i, j, s) = Σ_k weight_k · model_k(i, j, s)`; `weight` defaults to 1.
///
/// ```
/// use copr_cost_models::{CostConfig, Package};
/// use copr_topology::files::Format;
/// let text = r#"
/// [[terms]]
/// model = "latency-bandwidth"
/// [topology.inter]
/// kind = "uniform"
/// latency = 1e-6
/// bandwidth = 1e9
/// [topology.placement]
/// rule = "packed"
/// ranks = 4
/// ranks_per_node = 2
/// "#;
/// let cfg = CostConfig::from_str(text, Format::Toml).unwrap();
/// let setup = cfg.build(".".as_ref(), None).unwrap();
/// let w = setup.model;
/// assert_eq!(w.cost(0, 2, &Package::plain(1000)), 1e-6 + 1e-9 * 1000.0);
/// let json = cfg.to_string(Format::Json).unwrap();
/// assert_eq!(CostConfig::from_str(&json, Format::Json).unwrap(), cfg);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostConfig {
    /// Free text for summaries.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// A topology configuration file ([`TopologyConfig`]); excludes `topology`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_file: Option<PathBuf>,
    /// The model terms, summed.
    pub terms: Vec<Term>,
    /// An inline topology configuration; excludes `topology_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologyConfig>,
}

fn one() -> f64 {
    1.0
}
fn is_one(w: &f64) -> bool {
    *w == 1.0
}

/// One weighted term of a [`CostConfig`], selected by `model`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Term {
    /// `model = "volume"`: [`LocallyFreeVolume`] (bytes).
    Volume {
        /// Weight (default 1).
        #[serde(default = "one", skip_serializing_if = "is_one")]
        weight: f64,
    },
    /// `model = "latency-bandwidth"`: [`LatencyBandwidth`] (needs a topology).
    LatencyBandwidth {
        /// Weight (default 1).
        #[serde(default = "one", skip_serializing_if = "is_one")]
        weight: f64,
    },
    /// `model = "transform"`: [`TransformCost`].
    Transform {
        /// Weight (default 1).
        #[serde(default = "one", skip_serializing_if = "is_one")]
        weight: f64,
        /// Seconds per byte scaled.
        #[serde(default = "crate::models::d_scale")]
        scale: f64,
        /// Seconds per byte transposed.
        #[serde(default = "crate::models::d_transpose")]
        transpose: f64,
        /// Seconds per byte conjugated.
        #[serde(default = "crate::models::d_conjugate")]
        conjugate: f64,
        /// Charge only remote packages.
        #[serde(default)]
        remote_only: bool,
    },
    /// `model = "locality"`: [`LocalityPenalty`].
    Locality {
        /// Weight (default 1).
        #[serde(default = "one", skip_serializing_if = "is_one")]
        weight: f64,
        /// Seconds per block.
        #[serde(default = "crate::models::d_block")]
        per_block: f64,
        /// Seconds per strided row/segment.
        #[serde(default = "crate::models::d_segment")]
        per_segment: f64,
        /// Extra seconds per strided byte.
        #[serde(default = "crate::models::d_strided")]
        per_strided_byte: f64,
        /// Seconds per padding byte.
        #[serde(default = "crate::models::d_padding")]
        per_padding_byte: f64,
        /// Seconds per misaligned block.
        #[serde(default = "crate::models::d_misaligned")]
        per_misaligned_block: f64,
        /// Charge only remote packages.
        #[serde(default)]
        remote_only: bool,
    },
}

impl Term {
    /// The term's weight.
    pub fn weight(&self) -> f64 {
        match self {
            Term::Volume { weight }
            | Term::LatencyBandwidth { weight }
            | Term::Transform { weight, .. }
            | Term::Locality { weight, .. } => *weight,
        }
    }

    fn transform(&self) -> Option<TransformCost> {
        match *self {
            Term::Transform {
                scale,
                transpose,
                conjugate,
                remote_only,
                ..
            } => Some(TransformCost {
                scale,
                transpose,
                conjugate,
                remote_only,
            }),
            _ => None,
        }
    }

    fn locality(&self) -> Option<LocalityPenalty> {
        match *self {
            Term::Locality {
                per_block,
                per_segment,
                per_strided_byte,
                per_padding_byte,
                per_misaligned_block,
                remote_only,
                ..
            } => Some(LocalityPenalty {
                per_block,
                per_segment,
                per_strided_byte,
                per_padding_byte,
                per_misaligned_block,
                remote_only,
            }),
            _ => None,
        }
    }

    /// The terms a machine file without `[[terms]]` is priced by: latency +
    /// bandwidth, plus the machine's `[transform]` costs when it has them (what
    /// `copr calibrate` measures).
    ///
    /// ```
    /// use copr_cost_models::Term;
    /// use copr_topology::{TopologyConfig, TransformCosts};
    /// let mut machine = TopologyConfig::default();
    /// assert_eq!(Term::of_machine(&machine).len(), 1);
    /// machine.transform = Some(TransformCosts { transpose: 1e-10, ..Default::default() });
    /// assert!(matches!(Term::of_machine(&machine)[1], Term::Transform { transpose, .. } if transpose == 1e-10));
    /// ```
    pub fn of_machine(machine: &TopologyConfig) -> Vec<Term> {
        let mut terms = vec![Term::LatencyBandwidth { weight: 1.0 }];
        if let Some(t) = machine.transform {
            terms.push(Term::Transform {
                weight: 1.0,
                scale: t.scale,
                transpose: t.transpose,
                conjugate: t.conjugate,
                remote_only: false,
            });
        }
        terms
    }

    /// Whether the term needs a topology.
    pub fn needs_topology(&self) -> bool {
        matches!(self, Term::LatencyBandwidth { .. })
    }

    fn check(&self, at: &FieldPath) -> std::result::Result<(), Invalid> {
        check_nonneg(self.weight(), &at.key("weight"))?;
        match self {
            Term::Transform { .. } => self.transform().map_or(Ok(()), |t| t.check(at)),
            Term::Locality { .. } => self.locality().map_or(Ok(()), |l| l.check(at)),
            _ => Ok(()),
        }
    }

    fn model(&self, machine: Option<&Arc<Machine>>) -> Option<Box<dyn CostModel>> {
        let m: Box<dyn CostModel> = match self {
            Term::Volume { .. } => Box::new(LocallyFreeVolume),
            Term::LatencyBandwidth { .. } => Box::new(LatencyBandwidth::new(machine?.clone())),
            Term::Transform { .. } => Box::new(self.transform()?),
            Term::Locality { .. } => Box::new(self.locality()?),
        };
        Some(m)
    }
}

/// A built configuration: the model and the machine it uses (if any), e.g.
/// for a `copr topo` summary.
pub struct CostSetup {
    /// `w(i, j, s)`.
    pub model: Box<dyn CostModel>,
    /// The machine, if the configuration has a topology.
    pub machine: Option<Arc<Machine>>,
}

impl std::fmt::Debug for CostSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CostSetup")
            .field("model", &self.model.describe())
            .field("machine_ranks", &self.machine.as_ref().map(|m| m.ranks()))
            .finish()
    }
}

impl CostConfig {
    /// Parses and checks a configuration.
    ///
    /// # Errors
    /// [`CostError::Input`] for syntax errors, unknown fields and invalid
    /// values, [`CostError::Config`] for inconsistent parts; with line and
    /// field.
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(text: &str, format: Format) -> Result<Self> {
        files::parse_checked(text, format, None, Self::check)
    }

    /// Reads and checks a configuration file (TOML, or JSON by extension).
    ///
    /// # Errors
    /// As [`CostConfig::from_str`], naming the file; [`CostError::Input`]
    /// if it cannot be read.
    pub fn from_file(path: &Path) -> Result<Self> {
        files::read_checked(path, Self::check)
    }

    /// Serialises the configuration.
    ///
    /// # Errors
    /// As [`files::to_string`].
    pub fn to_string(&self, format: Format) -> Result<String> {
        Ok(files::to_string(self, format)?)
    }

    fn check(&self, doc: Doc<'_>) -> Result<()> {
        let root = FieldPath::root();
        let config = |field: FieldPath, message: String| CostError::Config {
            origin: doc.origin(&field),
            field: field.to_string(),
            message,
        };
        if self.terms.is_empty() {
            return Err(config(
                root.key("terms"),
                "a cost model needs at least one term".into(),
            ));
        }
        for (k, t) in self.terms.iter().enumerate() {
            t.check(&root.key("terms").index(k))
                .map_err(|e| CostError::Input(doc.invalid(e)))?;
        }
        if let Some(topo) = &self.topology {
            topo.validate(&root.key("topology"))
                .map_err(|e| CostError::Input(doc.invalid(e)))?;
            if topo.transform.is_some() {
                return Err(config(
                    root.key("topology").key("transform"),
                    "a cost config prices by its [[terms]]: give the transform costs as a `model = \"transform\"` term (or drop [[terms]] to price the machine by its own costs)".into(),
                ));
            }
        }
        if self.topology.is_some() && self.topology_file.is_some() {
            return Err(config(
                root.key("topology_file"),
                "give either `topology_file` or an inline [topology], not both".into(),
            ));
        }
        let has_topology = self.topology.is_some() || self.topology_file.is_some();
        if let Some(k) = self.terms.iter().position(Term::needs_topology) {
            if !has_topology {
                return Err(config(
                    root.key("terms").index(k).key("model"),
                    "model `latency-bandwidth` needs a topology: add `topology_file = \"…\"` or a [topology] table"
                        .into(),
                ));
            }
        }
        Ok(())
    }

    /// Builds the model; relative paths resolve against `base` (the
    /// configuration file's directory). `ranks`, if given, overrides the
    /// topology's rank count (see [`TopologyConfig::build`]).
    ///
    /// # Errors
    /// [`CostError::Config`]/[`CostError::Input`] as for
    /// [`CostConfig::from_str`], and the topology's errors as
    /// [`CostError::Input`] (e.g. [`TopologyError::HwlocDisabled`] for an
    /// hwloc source without the `hwloc` feature).
    pub fn build(&self, base: &Path, ranks: Option<usize>) -> Result<CostSetup> {
        self.check(Doc::none())?;
        let topo = match (&self.topology, &self.topology_file) {
            (Some(t), _) => Some(t.build(base, ranks)?),
            (None, Some(f)) => {
                Some(copr_topology::MachineFile::read(&files::resolve(base, f))?.build(ranks)?)
            }
            (None, None) => None,
        };
        let machine = topo.map(Arc::new);
        let model = sum_of(&self.terms, machine.as_ref())?;
        Ok(CostSetup { model, machine })
    }
}

/// The weighted sum of `terms` (one term alone is not wrapped).
fn sum_of(terms: &[Term], machine: Option<&Arc<Machine>>) -> Result<Box<dyn CostModel>> {
    let mut models: Vec<Box<dyn CostModel>> = Vec::with_capacity(terms.len());
    for (k, t) in terms.iter().enumerate() {
        let m = t.model(machine).ok_or_else(|| CostError::Config {
            origin: Origin::none(),
            field: format!("terms[{k}].model"),
            message: "this model needs a topology".into(),
        })?;
        models.push(if t.weight() == 1.0 {
            m
        } else {
            Box::new(Scaled::new(t.weight(), m)?)
        });
    }
    Ok(if models.len() == 1 {
        models
            .pop()
            .unwrap_or_else(|| Box::new(Sum::<Box<dyn CostModel>>::default()))
    } else {
        Box::new(Sum::new(models))
    })
}

/// Reads a cost configuration file and builds its model.
///
/// ```
/// let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/cost/volume.toml");
/// let w = copr_cost_models::load(&path).unwrap();
/// assert_eq!(w.cost(0, 1, &copr_cost_models::Package::plain(8)), 8.0);
/// ```
///
/// # Errors
/// As [`load_setup`].
pub fn load(path: &Path) -> Result<Box<dyn CostModel>> {
    Ok(load_setup(path, None)?.model)
}

/// Reads a cost configuration file and builds model and machine; `ranks`
/// overrides the topology's rank count. A machine file without `[[terms]]`
/// ([`copr_topology::MachineFile`]) is priced by latency + bandwidth alone.
///
/// # Errors
/// Those of [`CostConfig::from_file`] and [`CostConfig::build`]; errors
/// without a file of their own name the configuration file (an hwloc source
/// without the `hwloc` feature also gets the line of its `kind`).
pub fn load_setup(path: &Path, ranks: Option<usize>) -> Result<CostSetup> {
    let text = files::read_text(path)?;
    let format = Format::from_path(path);
    let keys = copr_topology::document_keys(&text, format);
    if keys.is_empty() {
        files::check_syntax(&text, format, Some(path))?;
    }
    // a machine file, or a launcher's host list (not TOML: no keys)
    let host_list = keys.is_empty()
        && format == Format::Toml
        && copr_topology::hostfile_machine(&text).is_some();
    if host_list || (!keys.is_empty() && !keys.iter().any(|k| k == "terms")) {
        let file = copr_topology::MachineFile::read(path)?;
        let machine = Arc::new(file.build(ranks)?);
        let model = sum_of(&Term::of_machine(&file.config), Some(&machine))?;
        return Ok(CostSetup {
            model,
            machine: Some(machine),
        });
    }
    let cfg: CostConfig = files::parse_checked(&text, format, Some(path), CostConfig::check)?;
    cfg.build(&files::base_dir(path), ranks)
        .map_err(|e| match e {
            CostError::Input(TopologyError::HwlocDisabled { origin, what })
                if origin.file.is_none() =>
            {
                let kind = FieldPath::root().key("topology").key("intra").key("kind");
                let line =
                    files::locate_line(&text, format, &kind).filter(|_| cfg.topology.is_some());
                CostError::Input(TopologyError::HwlocDisabled {
                    origin: Origin::file(path).at_maybe_line(line),
                    what,
                })
            }
            CostError::Input(t) => CostError::Input(t.in_file(path)),
            CostError::Config {
                origin,
                field,
                message,
            } => CostError::Config {
                origin: if origin.file.is_none() {
                    Origin::file(path).at_maybe_line(origin.line)
                } else {
                    origin
                },
                field,
                message,
            },
        })
}
