//! Plans: two layouts, the volumes between them, and the exact relabeling σ.
//!
//! ```
//! use copr::layout::{BlockCyclic, BlockCyclicSpec, Op, Order};
//! use copr::plan::{Plan, Solver};
//! let src = BlockCyclic::new(BlockCyclicSpec::new(1000, 1000, 100, 100, 2, 5)).unwrap();
//! let mut t = BlockCyclicSpec::new(1000, 1000, 100, 100, 2, 5);
//! t.grid_order = Order::ColMajor;
//! let dst = BlockCyclic::new(t).unwrap();
//! let plan = Plan::new(src.into(), dst.into(), Op::Identity, Solver::Sparse).unwrap();
//! // the two layouts differ only by a renaming of ranks: relabeling removes all traffic
//! assert!(plan.volumes().remote() > 0);
//! assert_eq!(plan.remote_after(), 0);
//! ```

mod batch;

pub use batch::{BatchPlan, BatchReport, BatchSpec, TransformSpec, TransformVolumes};

use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::lap::Perm;
use crate::layout::{Layout, Op};
use crate::relabel::{Method, Relabel};
use crate::volume::{reduction_percent, Volumes};

/// Which assignment solver finds σ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Solver {
    /// Exact, on the sparse volume matrix (never forms a p × p table). The default.
    #[default]
    Sparse,
    /// Exact Jonker–Volgenant on the dense gain table δ (p ≤ [`DENSE_LIMIT`]).
    Dense,
    /// COSTA's greedy pairwise-swap heuristic (for comparison; not optimal).
    Greedy,
    /// No relabeling: σ = identity.
    #[serde(alias = "none")]
    Identity,
}

/// Largest communicator for which [`Solver::Dense`] builds the p × p gain table.
pub use crate::lap::DENSE_LIMIT;

/// σ for the remote volume with `solver` (the identity if it saves nothing).
fn relabel(v: &Volumes, solver: Solver) -> Result<Perm> {
    let method = match solver {
        Solver::Sparse => Method::Sparse,
        Solver::Dense => Method::Dense,
        Solver::Greedy => Method::Greedy,
        Solver::Identity => return Ok(Perm::identity(v.ranks())),
    };
    Ok(Relabel::volume(v).method(method).solve()?.sigma)
}

/// Largest element size a plan accepts, in bytes: 2^20 (1 MiB). Elements are matrix
/// entries (4 to 32 bytes for real and complex types); larger values are taken for a
/// typo.
pub const MAX_ELEMENT_SIZE: usize = 1 << 20;

/// Checks that `element_size` is in `1..=MAX_ELEMENT_SIZE` and that `elements` of it
/// fit in 64 bits of bytes.
fn check_element_size(element_size: usize, elements: u64) -> Result<()> {
    if element_size == 0 || element_size > MAX_ELEMENT_SIZE {
        return Err(Error::Plan {
            field: "element_size",
            detail: format!(
                "{element_size} bytes per element is outside 1..={MAX_ELEMENT_SIZE} (copr::plan::MAX_ELEMENT_SIZE)"
            ),
        });
    }
    if elements.checked_mul(element_size as u64).is_none() {
        return Err(Error::Plan {
            field: "element_size",
            detail: format!("{elements} elements of {element_size} bytes exceed 2^64 bytes"),
        });
    }
    Ok(())
}

/// Checks that α is a finite number.
fn check_alpha(alpha: f64) -> Result<()> {
    if !alpha.is_finite() {
        return Err(Error::Plan {
            field: "alpha",
            detail: format!("{alpha} is not a finite number"),
        });
    }
    Ok(())
}

fn default_element_size() -> usize {
    8
}

/// A plan as written in a file (TOML or JSON): the two layouts, op, element size and
/// solver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanSpec {
    /// Layout of B.
    pub source: Layout,
    /// Layout of A.
    pub target: Layout,
    /// op in A ← α·op(B) + β·A.
    #[serde(default)]
    pub op: Op,
    /// Bytes per element (8 for f64).
    #[serde(default = "default_element_size")]
    pub element_size: usize,
    /// Solver for σ.
    #[serde(default)]
    pub solver: Solver,
    /// α in A ← α·op(B) + β·A (only whether it is 1 matters: α ≠ 1 means every
    /// element is scaled, which transform-cost models price).
    #[serde(default = "one")]
    pub alpha: f64,
}

fn one() -> f64 {
    1.0
}

impl PlanSpec {
    /// Reads a plan file: `.json` as JSON, anything else as TOML.
    ///
    /// # Errors
    /// [`Error::Io`] if it cannot be read, [`Error::Parse`] with the line, the side
    /// (`source` or `target`) and the field if it does not describe valid layouts.
    pub fn from_file(path: &Path) -> Result<Self> {
        read_config(path)
    }

    /// Checks the plan's own fields: `element_size` in `1..=`[`MAX_ELEMENT_SIZE`] with
    /// the matrix's bytes within 64 bits, and a finite `alpha`. (The layouts check
    /// themselves when they are built.)
    ///
    /// # Errors
    /// [`Error::Plan`] naming the field and its value.
    ///
    /// # Example
    /// ```
    /// use copr::plan::PlanSpec;
    /// let mut spec = PlanSpec::from_file(std::path::Path::new("data/plans/submatrix.toml")).unwrap();
    /// assert!(spec.check().is_ok());
    /// spec.element_size = 0;
    /// assert!(spec.check().unwrap_err().to_string().contains("element_size"));
    /// ```
    pub fn check(&self) -> Result<()> {
        let elements = self.target.rows() as u64 * self.target.cols() as u64;
        check_element_size(self.element_size, elements)?;
        check_alpha(self.alpha)
    }
}

/// A configuration file's format: TOML or JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfigFormat {
    /// TOML.
    Toml,
    /// JSON.
    Json,
}

impl ConfigFormat {
    /// The format a file name implies: `.json` is JSON, anything else TOML.
    pub fn of_path(path: &Path) -> Self {
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        {
            Self::Json
        } else {
            Self::Toml
        }
    }

    fn files(self) -> copr_topology::files::Format {
        match self {
            Self::Toml => copr_topology::files::Format::Toml,
            Self::Json => copr_topology::files::Format::Json,
        }
    }
}

/// Reads a TOML (or, by extension, JSON) file into `T` (`-`: TOML from standard input).
///
/// # Errors
/// [`Error::Io`] or [`Error::Parse`] naming the file, as [`parse_config`].
pub fn read_config<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    parse_config(&read_text(path)?, ConfigFormat::of_path(path), path)
}

pub use crate::files::read_text;

/// Parses `text` in `format` into `T`; `name` is the file (or `-` for standard input)
/// the errors name. A leading UTF-8 byte order mark is skipped.
///
/// # Errors
/// [`Error::Parse`] naming `name`, the line of the offending field and its path, e.g.
/// `line 7: target: invalid layout: mb: must be positive, got 0` — inside a layout the
/// line is the field's, not the `[target]` header's.
///
/// # Example
/// ```
/// use copr::plan::{parse_config, ConfigFormat, PlanSpec};
/// let text = "[source]\nkind = \"block-cyclic\"\nm = 4\nn = 4\nmb = 2\nnb = 2\nnprow = 1\nnpcol = 1\n\
///             [target]\nkind = \"block-cyclic\"\nm = 4\nn = 4\nmb = \"2\"\nnb = 2\nnprow = 1\nnpcol = 1\n";
/// let e = parse_config::<PlanSpec>(text, ConfigFormat::Toml, "plan.toml".as_ref()).unwrap_err();
/// assert_eq!(
///     e.to_string(),
///     "plan.toml: line 13: target: field `mb`: invalid type: string \"2\", expected usize"
/// );
/// ```
pub fn parse_config<T: serde::de::DeserializeOwned>(
    text: &str,
    format: ConfigFormat,
    name: &Path,
) -> Result<T> {
    let text = copr_topology::files::skip_bom(text);
    let parse = |line: Option<usize>, path: &str, message: &str| {
        let message = message.trim().replace('\n', " ");
        let at = line.map(|l| format!("line {l}: ")).unwrap_or_default();
        let field = if path == "." || path.is_empty() {
            String::new()
        } else {
            format!("{path}: ")
        };
        Error::Parse {
            path: name.to_owned(),
            detail: format!("{at}{field}{message}"),
        }
    };
    // The line of the field an error inside `path` is about, if the document has it.
    let field_line = |path: &str, message: &str| {
        let mut full = field_path(path);
        for seg in field_path(inner_field(message)?).0 {
            full.0.push(seg);
        }
        copr_topology::files::locate_line(text, format.files(), &full)
    };
    match format {
        ConfigFormat::Json => {
            let json_err = |path: &str, inner: serde_json::Error| {
                let full = inner.to_string();
                let message = full.rfind(" at line ").map_or(&*full, |k| &full[..k]);
                let line = field_line(path, message).or((inner.line() > 0).then_some(inner.line()));
                parse(line, path, message)
            };
            // serde keeps the last of two equal keys inside a layout (a tagged
            // enum): refuse them first, as TOML does and serde does elsewhere
            let path_err = |e: serde_path_to_error::Error<serde_json::Error>| {
                let inner_is_syntax = e.inner().is_syntax() || e.inner().is_eof();
                // a syntax error is about the text, not about a field
                let path = if inner_is_syntax {
                    ".".to_string()
                } else {
                    e.path().to_string()
                };
                json_err(&path, e.into_inner())
            };
            let mut de = serde_json::Deserializer::from_str(text);
            serde_path_to_error::deserialize::<_, UniqueKeys>(&mut de).map_err(path_err)?;
            let mut de = serde_json::Deserializer::from_str(text);
            let value = serde_path_to_error::deserialize(&mut de).map_err(path_err)?;
            de.end().map_err(|e| json_err(".", e))?;
            Ok(value)
        }
        ConfigFormat::Toml => {
            let de = toml::Deserializer::parse(text).map_err(|e| {
                let message = e.message().trim();
                // toml says "duplicate key" without the key: name it from the span
                let key = e
                    .span()
                    .filter(|_| message == "duplicate key")
                    .and_then(|s| text.get(s))
                    .map(|k| format!("{message} `{}`", k.trim()));
                parse(
                    e.span().map(|s| line_of(text, s.start)),
                    ".",
                    key.as_deref().unwrap_or(message),
                )
            })?;
            serde_path_to_error::deserialize(de).map_err(|e| {
                let path = e.path().to_string();
                let inner = e.into_inner();
                let line = field_line(&path, inner.message())
                    .or(inner.span().map(|s| line_of(text, s.start)));
                parse(line, &path, inner.message())
            })
        }
    }
}

/// Any JSON value, read only to find an object with two equal keys.
struct UniqueKeys;

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(UniqueKeys)
    }
}

impl<'de> serde::de::Visitor<'de> for UniqueKeys {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<Self, E> {
        Ok(self)
    }
    fn visit_i64<E>(self, _: i64) -> std::result::Result<Self, E> {
        Ok(self)
    }
    fn visit_u64<E>(self, _: u64) -> std::result::Result<Self, E> {
        Ok(self)
    }
    fn visit_f64<E>(self, _: f64) -> std::result::Result<Self, E> {
        Ok(self)
    }
    fn visit_str<E>(self, _: &str) -> std::result::Result<Self, E> {
        Ok(self)
    }
    fn visit_unit<E>(self) -> std::result::Result<Self, E> {
        Ok(self)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Self, A::Error> {
        while seq.next_element::<UniqueKeys>()?.is_some() {}
        Ok(self)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(serde::de::Error::custom(format!("duplicate field `{key}`")));
            }
            map.next_value::<UniqueKeys>()?;
        }
        Ok(self)
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    copr_topology::files::line_of_offset(text, offset)
}

/// The field a layout's own error message names: `field `X`: …` (a wrong value),
/// `invalid layout: X: …` (a failed check) or `unknown field `X`` .
fn inner_field(message: &str) -> Option<&str> {
    fn quoted(rest: &str) -> Option<&str> {
        rest.split('`').next()
    }
    if let Some(rest) = message.strip_prefix("field `") {
        return quoted(rest);
    }
    if let Some(k) = message.find("unknown field `") {
        return quoted(&message[k + "unknown field `".len()..]);
    }
    let rest = message.strip_prefix("invalid layout: ")?;
    let field = rest.split(':').next()?;
    field
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        .then_some(field)
}

/// `a.b[2].c` as a field path.
fn field_path(path: &str) -> copr_topology::files::FieldPath {
    let mut out = copr_topology::files::FieldPath::root();
    if path == "." {
        return out;
    }
    for part in path.split('.') {
        let mut pieces = part.split('[');
        if let Some(key) = pieces.next().filter(|k| !k.is_empty()) {
            out = out.key(key);
        }
        for index in pieces {
            if let Ok(i) = index.trim_end_matches(']').parse() {
                out = out.index(i);
            }
        }
    }
    out
}

/// Source and target layouts, the volumes between them and the relabeling σ.
#[derive(Debug, Clone)]
pub struct Plan {
    source: Layout,
    target: Layout,
    op: Op,
    volumes: Volumes,
    sigma: Perm,
    solver: Solver,
    solve_seconds: f64,
}

impl Plan {
    /// Computes the volumes of `A ← op(B)` and σ with `solver`.
    ///
    /// # Errors
    /// [`Error::Mismatched`] if the shapes differ; [`Error::Limit`] beyond
    /// [`crate::volume::MAX_OVERLAP_PAIRS`]; the solver's errors.
    pub fn new(source: Layout, target: Layout, op: Op, solver: Solver) -> Result<Self> {
        let volumes = Volumes::compute(&source, &target, op)?;
        let t0 = Instant::now();
        let sigma = relabel(&volumes, solver)?;
        let solve_seconds = t0.elapsed().as_secs_f64();
        Ok(Self {
            source,
            target,
            op,
            volumes,
            sigma,
            solver,
            solve_seconds,
        })
    }

    /// Builds the plan a [`PlanSpec`] describes.
    ///
    /// # Errors
    /// [`PlanSpec::check`]'s errors, then as [`Plan::new`].
    pub fn from_spec(spec: &PlanSpec) -> Result<Self> {
        spec.check()?;
        Self::new(
            spec.source.clone(),
            spec.target.clone(),
            spec.op,
            spec.solver,
        )
    }

    /// Layout of B.
    pub fn source(&self) -> &Layout {
        &self.source
    }

    /// Layout of A before relabeling.
    pub fn target(&self) -> &Layout {
        &self.target
    }

    /// op.
    pub fn op(&self) -> Op {
        self.op
    }

    /// Volumes before relabeling.
    pub fn volumes(&self) -> &Volumes {
        &self.volumes
    }

    /// σ: target label t is taken by process σ(t).
    pub fn sigma(&self) -> &Perm {
        &self.sigma
    }

    /// The solver used.
    pub fn solver(&self) -> Solver {
        self.solver
    }

    /// Seconds the solver took.
    pub fn solve_seconds(&self) -> f64 {
        self.solve_seconds
    }

    /// Remote elements after relabeling.
    pub fn remote_after(&self) -> u64 {
        self.volumes.remote_after(&self.sigma)
    }

    /// The target layout after relabeling (in the common communicator).
    ///
    /// # Errors
    /// Never for a plan built by [`Plan::new`].
    pub fn relabeled_target(&self) -> Result<Layout> {
        self.target.relabeled(&self.sigma)
    }

    /// The numbers a report prints, for `element_size` bytes per element (byte counts
    /// saturate at `u64::MAX`: [`PlanSpec::check`] and [`Plan::from_spec`] refuse element
    /// sizes for which they would).
    pub fn report(&self, element_size: usize) -> PlanReport {
        let remote_before = self.volumes.remote();
        let remote_after = self.remote_after();
        let e = element_size as u64;
        let bytes = |x: u64| x.saturating_mul(e);
        PlanReport {
            ranks: self.volumes.ranks(),
            element_size,
            total_elements: self.volumes.total(),
            total_bytes: bytes(self.volumes.total()),
            remote_before,
            remote_after,
            remote_bytes_before: bytes(remote_before),
            remote_bytes_after: bytes(remote_after),
            reduction_percent: reduction_percent(remote_before, remote_after),
            solver: self.solver,
            solver_seconds: self.solve_seconds,
            sigma: self.sigma.forward().to_vec(),
        }
    }
}

/// What `copr plan` prints: volumes in elements (and bytes), before and after σ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanReport {
    /// Communicator size.
    pub ranks: usize,
    /// Bytes per element.
    pub element_size: usize,
    /// Elements of the matrix.
    pub total_elements: u64,
    /// Bytes of the matrix.
    pub total_bytes: u64,
    /// Elements crossing ranks without relabeling.
    pub remote_before: u64,
    /// Elements crossing ranks with σ.
    pub remote_after: u64,
    /// Bytes crossing ranks without relabeling.
    pub remote_bytes_before: u64,
    /// Bytes crossing ranks with σ.
    pub remote_bytes_after: u64,
    /// 100·(before − after)/before.
    pub reduction_percent: f64,
    /// Solver used.
    pub solver: Solver,
    /// Solver time in seconds.
    pub solver_seconds: f64,
    /// `sigma[t]` = process that takes target label t.
    pub sigma: Vec<usize>,
}

/// The relabeling under a cost model, next to the volume-optimal one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostReport {
    /// The model, described.
    pub model: String,
    /// W(G): cost without relabeling.
    pub cost_before: f64,
    /// W(G_σ) for the cost-optimal σ.
    pub cost_after: f64,
    /// 100·(before − after)/before.
    pub reduction_percent: f64,
    /// W(G_σ) for the plan's own (volume-optimal or chosen) σ, for comparison.
    pub cost_with_plan_sigma: f64,
    /// Remote elements with the cost-optimal σ.
    pub remote_after: u64,
    /// The cost-optimal σ (`sigma[t]` = process that takes target label t).
    pub sigma: Vec<usize>,
    /// Seconds for δ and the solve.
    pub solver_seconds: f64,
    /// How σ was found and what is proven about it ([`crate::relabel::Relabel::cost`]).
    #[serde(default)]
    pub certificate: Option<crate::relabel::Certificate>,
}

impl Plan {
    /// Prices the plan's packages with `model` and finds the cost-optimal σ with its
    /// certificate ([`crate::relabel::Relabel::cost`]).
    ///
    /// # Errors
    /// [`Error::Plan`] for an element size or α that [`PlanSpec::check`] refuses;
    /// [`Error::Mismatched`] if the model's machine has fewer ranks than the plan;
    /// [`Error::Limit`] if the model names no candidate processes
    /// ([`copr_cost_models::SolverHints::candidates`]) and needs the dense gain table
    /// beyond [`DENSE_LIMIT`] ranks.
    pub fn cost_report(
        &self,
        model: &dyn copr_cost_models::CostModel,
        element_size: usize,
        alpha: f64,
    ) -> Result<CostReport> {
        check_element_size(element_size, self.volumes.total())?;
        check_alpha(alpha)?;
        use crate::gain::{PackageInput, Packages, TransformKind};
        let input = PackageInput {
            source: &self.source,
            target: &self.target,
            transform: TransformKind {
                op: self.op,
                scale: alpha != 1.0,
            },
            element_size,
        };
        let packages = Packages::compute(&input)?;
        let t0 = Instant::now();
        let relabeled = Relabel::cost(model, &packages).solve()?;
        let (sigma, certificate) = (relabeled.sigma.clone(), relabeled.certificate());
        let solver_seconds = t0.elapsed().as_secs_f64();
        let before = packages.total_cost(model, None);
        let after = packages.total_cost(model, Some(&sigma));
        Ok(CostReport {
            model: model.describe(),
            cost_before: before,
            cost_after: after,
            reduction_percent: if before > 0.0 {
                100.0 * (before - after) / before
            } else {
                0.0
            },
            cost_with_plan_sigma: packages.total_cost(model, Some(&self.sigma)),
            remote_after: self.volumes.remote_after(&sigma),
            sigma: sigma.forward().to_vec(),
            solver_seconds,
            certificate: Some(certificate),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAYOUT: &str =
        r#"{"kind": "block-cyclic", "m": 4, "n": 4, "mb": 1, "nb": 1, "nprow": 2, "npcol": 2"#;

    fn json_plan(source_extra: &str) -> Result<PlanSpec> {
        let text = format!("{{\"source\": {LAYOUT}{source_extra}}},\n\"target\": {LAYOUT}}}}}");
        parse_config(&text, ConfigFormat::Json, Path::new("p.json"))
    }

    #[test]
    fn a_json_key_given_twice_is_refused_with_its_name() {
        let spec = json_plan("").unwrap();
        assert_eq!(spec.source, spec.target);
        let e = json_plan(r#", "mb": 2"#).unwrap_err().to_string();
        assert!(
            e.starts_with("p.json: line 1: source: duplicate field `mb`"),
            "{e}"
        );
        let text = r#"{"transform": [{"name": "A", "name": "B"}]}"#;
        let e = parse_config::<BatchSpec>(text, ConfigFormat::Json, Path::new("b.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("transform[0]: duplicate field `name`"), "{e}");
    }

    #[test]
    fn a_toml_key_given_twice_is_named() {
        let text = "[source]\nkind = \"grid\"\nranks = 2\n ranks = 3\n";
        let e = parse_config::<PlanSpec>(text, ConfigFormat::Toml, Path::new("p.toml"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "p.toml: line 4: duplicate key `ranks`");
    }
}
