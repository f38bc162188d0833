//! The one machine file: what every command that takes a machine reads.
//!
//! A machine file is a [`TopologyConfig`]. It describes the network between the
//! nodes either with the long form (`[inter]` + `[placement]`) or with the short
//! form the mapper started with (`[torus]`, `[network]` or `[flat]`, plus
//! `ranks_per_node` and `nodes` at the top level); `[intra]` describes the inside
//! of a node in both. [`MachineFile::read`] also takes the files that embed or point
//! to a machine: a cost config (its `[topology]` or `topology_file`), a network
//! description (`*.net.toml`: every host one node) and a rank × rank matrix file (a
//! calibration's `latency` / `inv_bandwidth` tables).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::config::{NetworkSection, TopologyConfig};
use crate::error::{Result, TopologyError};
use crate::files::{self, FieldPath, Format};
use crate::link::BandwidthModel;
use crate::machine::Machine;

/// What kind of file a [`MachineFile`] was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MachineFileKind {
    /// A machine (topology) file.
    Machine,
    /// A cost config: its `[topology]` or the file its `topology_file` names.
    CostConfig,
    /// A network description: every host a node with one slot.
    Network,
    /// A rank × rank matrix file: every rank priced explicitly.
    RankMatrix,
}

/// A machine description read from a file, with the directory its relative paths
/// resolve against.
///
/// ```
/// use copr_topology::{MachineFile, MachineFileKind};
/// let dir = std::env::temp_dir().join(format!("copr-mf-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let f = dir.join("m.toml");
/// std::fs::write(&f, "ranks_per_node = 2\nnodes = \"n[1-4]\"\n[torus]\ndims = [2, 2]\n").unwrap();
/// let mf = MachineFile::read(&f).unwrap();
/// assert_eq!(mf.kind, MachineFileKind::Machine);
/// let m = mf.build(None).unwrap();
/// assert_eq!((m.ranks(), m.placement().node_name(3)), (8, "n4"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct MachineFile {
    /// The description.
    pub config: TopologyConfig,
    /// The directory relative paths in `config` resolve against.
    pub base: PathBuf,
    /// The file read.
    pub path: PathBuf,
    /// What kind of file it was.
    pub kind: MachineFileKind,
}

/// A cost config as far as its machine goes (the rest is the cost model's).
#[derive(Deserialize)]
struct CostConfigMachine {
    #[serde(default)]
    topology_file: Option<PathBuf>,
    #[serde(default)]
    topology: Option<TopologyConfig>,
}

impl MachineFile {
    /// Reads a machine file, or the machine of a cost config, network description or
    /// rank matrix file (TOML, or JSON by extension).
    ///
    /// # Errors
    /// [`TopologyError::Io`], and parse or validation errors naming file, line and
    /// field; a cost config without a topology is
    /// [`TopologyError::Inconsistent`] on field `terms`.
    pub fn read(path: &Path) -> Result<Self> {
        Self::read_nested(path, 0)
    }

    fn read_nested(path: &Path, depth: usize) -> Result<Self> {
        let text = files::read_text(path)?;
        let format = Format::from_path(path);
        let base = files::base_dir(path);
        let keys = document_keys(&text, format);
        let has = |k: &str| keys.iter().any(|x| x == k);
        let made = |config, kind| Self {
            config,
            base: base.clone(),
            path: path.to_path_buf(),
            kind,
        };
        if has("terms") {
            let cost: CostConfigMachine =
                files::parse_checked(&text, format, Some(path), |c: &CostConfigMachine, doc| {
                    match &c.topology {
                        Some(t) => t
                            .validate(&FieldPath::root().key("topology"))
                            .map_err(|e| doc.invalid(e)),
                        None => Ok(()),
                    }
                })?;
            let no_machine = || {
                TopologyError::Inconsistent {
                origin: crate::Origin::file(path),
                field: "terms".into(),
                message: "this cost config has no topology, so it describes no machine: add `topology_file = \"…\"` or a [topology] table".into(),
            }
            };
            return match (cost.topology, cost.topology_file) {
                (Some(t), _) => Ok(made(t, MachineFileKind::CostConfig)),
                (None, Some(f)) if depth == 0 => {
                    let mut inner = Self::read_nested(&files::resolve(&base, &f), 1)?;
                    inner.kind = MachineFileKind::CostConfig;
                    Ok(inner)
                }
                (None, Some(f)) => Err(TopologyError::Inconsistent {
                    origin: crate::Origin::file(path),
                    field: "topology_file".into(),
                    message: format!(
                        "`{}` is another cost config's topology file; point to a machine file",
                        f.display()
                    ),
                }),
                (None, None) => Err(no_machine()),
            };
        }
        let file_name = || PathBuf::from(path.file_name().unwrap_or(path.as_os_str()));
        if has("links") || (has("hosts") && has("switches")) {
            let config = TopologyConfig {
                network: Some(NetworkSection {
                    file: file_name(),
                    hosts: None,
                    bandwidth_model: BandwidthModel::default(),
                }),
                ..Default::default()
            };
            return Ok(made(config, MachineFileKind::Network));
        }
        if has("latency") && has("inv_bandwidth") {
            let config = TopologyConfig {
                rank_matrix: Some(file_name()),
                ..Default::default()
            };
            return Ok(made(config, MachineFileKind::RankMatrix));
        }
        let config = machine_config(&text, format, path)?;
        Ok(made(config, MachineFileKind::Machine))
    }

    /// The topology [`Machine`] with `ranks` ranks (default: the file's).
    ///
    /// # Errors
    /// Those of [`TopologyConfig::build`]; errors without a file of their own name
    /// this file.
    pub fn build(&self, ranks: Option<usize>) -> Result<Machine> {
        self.config
            .build(&self.base, ranks)
            .map_err(|e| e.in_file(&self.path))
    }
}

/// The machine of a machine file's text in the short or long form, or of a launcher's
/// host list (an Open MPI hostfile, an MPICH machine file); `name` is what errors call
/// it (`-` for standard input). [`MachineFile::read`] reads files this way after it has
/// ruled out cost configs, network descriptions and rank matrices.
///
/// ```
/// use copr_topology::{machine_config, files::Format};
/// let name = std::path::Path::new("-");
/// let c = machine_config("n1 slots=2\nn2 slots=2\n", Format::Toml, name).unwrap();
/// assert_eq!(c.build(".".as_ref(), None).unwrap().ranks(), 4);
/// let e = machine_config("# nothing\n", Format::Toml, name).unwrap_err();
/// assert!(e.to_string().contains("describes no machine"), "{e}");
/// ```
///
/// # Errors
/// A host list's bad line, a parse or validation error naming `name`, line and field,
/// and [`TopologyError::Inconsistent`] for a document without keys (empty, only
/// comments, `{}`).
pub fn machine_config(text: &str, format: Format, name: &Path) -> Result<TopologyConfig> {
    let keys = document_keys(text, format);
    if keys.is_empty() {
        files::check_syntax(text, format, Some(name))?;
    }
    // not TOML: an Open MPI hostfile or an MPICH machine file names nodes and slots
    if format == Format::Toml && keys.is_empty() {
        if let Some(read) = crate::hostfile::hostfile_machine(text) {
            return read.map_err(|(line, message)| TopologyError::Parse {
                origin: crate::Origin::file(name).at_line(line),
                field: "hostfile".into(),
                message,
            });
        }
    }
    let config = files::parse_checked(text, format, Some(name), |c: &TopologyConfig, doc| {
        c.validate(&FieldPath::root()).map_err(|e| doc.invalid(e))
    })?;
    if keys.is_empty() {
        // empty, only comments, or `{}`: it read as one node of one slot
        return Err(TopologyError::Inconsistent {
            origin: crate::Origin::file(name),
            field: "(document)".into(),
            message: "the file describes no machine (no keys): give `[torus]`, \
                      `[network]` or `[flat]` with `ranks_per_node`, or the long form \
                      (docs/machines.md)"
                .into(),
        });
    }
    Ok(config)
}

/// The top-level keys of a TOML or JSON document; empty if it does not parse (the
/// typed parse that follows reports why). A document with `terms` is a cost config.
///
/// ```
/// use copr_topology::{document_keys, files::Format};
/// assert_eq!(document_keys("a = 1\n[b]\nc = 2", Format::Toml), ["a", "b"]);
/// assert!(document_keys("a = ", Format::Toml).is_empty());
/// ```
pub fn document_keys(text: &str, format: Format) -> Vec<String> {
    let text = files::skip_bom(text);
    match format {
        // too large to read: the typed parse that follows says so
        Format::Toml if text.len() > files::MAX_TOML_BYTES => Vec::new(),
        Format::Toml => toml::from_str::<toml::Table>(text)
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default(),
        Format::Json => serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default(),
    }
}

/// Reads a machine file ([`MachineFile::read`]: a topology configuration, or
/// the machine of a cost config, network description or rank matrix file) and
/// builds its [`Machine`]; relative paths resolve against the file's
/// directory. `ranks` as in [`TopologyConfig::build`].
///
/// # Errors
/// Those of [`TopologyConfig::from_file`] and [`TopologyConfig::build`];
/// errors without a file of their own name the configuration file.
pub fn load_machine(path: &Path, ranks: Option<usize>) -> Result<Machine> {
    MachineFile::read(path)?.build(ranks)
}
