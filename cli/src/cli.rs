//! The `copr` command line: argument definitions and the commands, which only parse,
//! call the library and print.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory, Parser, Subcommand};

use copr::layout::Order;
use copr::plan::{parse_config, ConfigFormat, Plan, PlanSpec, Solver};
use copr::sweep::{SweepConfig, SweepRow};
use copr::Result;

mod batch;
mod layout_arg;
mod sweep_cost;
mod units;

/// The largest `copr map --budget`, seconds (one day): the search ends by its own
/// patience long before, so a larger value is taken for a mistake and refused.
const MAX_MAP_BUDGET: f64 = 86_400.0;

/// `copr --version`: the version, then the cargo features this binary was built with and
/// what the missing ones would add (`copr -V` prints the version alone).
static LONG_VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let features = [
        ("mpi", cfg!(feature = "mpi"), "calibrate needs mpi"),
        (
            "hwloc",
            cfg!(feature = "hwloc"),
            "hwloc-* topology sources need hwloc",
        ),
        (
            "scotch",
            cfg!(feature = "scotch"),
            "libscotch's mappings in map need scotch",
        ),
    ];
    let on: Vec<&str> = features.iter().filter(|f| f.1).map(|f| f.0).collect();
    let off: Vec<&str> = features.iter().filter(|f| !f.1).map(|f| f.2).collect();
    let listed = if on.is_empty() {
        "none".to_string()
    } else {
        on.join(", ")
    };
    let mut line = format!("{}\nfeatures: {listed}", env!("CARGO_PKG_VERSION"));
    if !off.is_empty() {
        line.push_str(&format!(" ({})", off.join("; ")));
    }
    line
});

/// copr: communication-optimal process relabeling for MPI data layouts.
#[derive(Debug, Parser)]
#[command(name = "copr", version, long_version = LONG_VERSION.as_str(), about)]
pub(crate) struct Cli {
    /// The command.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// copr's commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Volumes and the optimal relabeling for the source/target layouts in a TOML or JSON file
    /// or given by `--source`/`--target` (or for a batch of `[[transform]]` entries:
    /// independent and joint relabeling).
    Plan(PlanArgs),
    /// Remote volume before/after relabeling over a range of source block sizes
    /// (default: the COSTA paper's section 7.2 experiment).
    Sweep(SweepArgs),
    /// Summarise a topology or cost-model configuration: levels, ranks per node, costs.
    Topo(TopoArgs),
    /// Map a process grid or communication graph onto a machine: every strategy's
    /// hop-bytes, dilation and link loads side by side, and the chosen mapping as
    /// rankfile, MPICH_RANK_ORDER, SLURM_HOSTFILE, SMPI hostfile, JSON and SVG.
    Map(Box<MapArgs>),
    /// Measure this machine under mpirun (latency and bandwidth per class of rank pairs,
    /// injection, the shared window, local kernels) and write a machine file with the
    /// measured costs for `copr plan --cost` and `copr map --machine`, with the raw
    /// measurements beside it; `--validate` times real reshuffles against its
    /// predictions. Needs the `mpi` feature.
    Calibrate(crate::calibrate::CalibrateArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(crate::generate::CompletionsArgs),
    /// Print a manual page in roff: copr(1), or copr-COMMAND(1) for one command.
    Man(crate::generate::ManArgs),
}

/// Arguments of `copr map`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("pattern").required(true).args(["grid", "graph", "plan"])))]
#[command(group(clap::ArgGroup::new("target").required(true).args(["machine", "torus", "network", "flat", "machine_from_recording"])))]
pub(crate) struct MapArgs {
    /// A Cartesian process grid, e.g. `32x32` or `16x16x4` (rank order of MPI_Cart_create).
    #[arg(long, value_name = "DIMS")]
    pub(crate) grid: Option<String>,
    /// Grid without wraparound (default: periodic in every dimension).
    #[arg(long, requires = "grid")]
    pub(crate) open: bool,
    /// Grid: bytes per message along each dimension (one value for all, or one per
    /// dimension: `--bytes 1048576,3145728` makes messages along dimension 1 — within
    /// a row — 3x those along dimension 0); units B, kB, KiB, MB, MiB, GB, GiB
    /// (`--bytes 1MiB`); default 1048576.
    #[arg(long, value_delimiter = ',', requires = "grid", value_parser = units::parse_bytes)]
    pub(crate) bytes: Option<Vec<u64>>,
    /// Grid: the traffic on it. `stencil` (default): every task exchanges a message
    /// with each grid neighbour. `cannon`, `fox`, `snyder`, `summa`: the messages of one
    /// whole matrix multiplication by that algorithm, one block (`--bytes`, a single
    /// value) per message: Cannon's preskew and q-1 shifts of A along rows and B along
    /// columns; Fox's q broadcasts of A's diagonal blocks along rows and q-1 rolls of B
    /// along columns; Snyder's transpose of B, q reductions along rows and q-1 shifts of
    /// B; SUMMA's broadcast of every block of A along its row and of B along its column.
    /// All but SUMMA need a square grid.
    #[arg(long = "pattern", id = "traffic", value_name = "NAME", requires = "grid",
          value_parser = clap::builder::PossibleValuesParser::new(["stencil", "cannon", "fox", "snyder", "summa"]))]
    pub(crate) traffic: Option<String>,
    /// The tree broadcasts and reductions of `--pattern` send along: `binomial`
    /// (default; MPICH's, Open MPI's and SimGrid's binomial tree: relative rank v > 0
    /// exchanges the block with v minus its lowest set bit) or `ring` (a pipelined
    /// chain from the root: v with v-1). Every tree edge carries one whole block.
    #[arg(long, value_name = "TREE", requires = "traffic",
          value_parser = clap::builder::PossibleValuesParser::new(["binomial", "ring"]))]
    pub(crate) collective: Option<String>,
    /// A communication graph: edge list (`src dst bytes` per line), TOML/JSON, a
    /// Scotch source graph (`.grf`, `.src`) or a METIS graph file (`.graph`, `.metis`);
    /// a Scotch or METIS edge of weight w is w bytes each way (1 without weights).
    #[arg(long, value_name = "FILE")]
    pub(crate) graph: Option<PathBuf>,
    /// The traffic of a copr plan file (after its relabeling).
    #[arg(long, value_name = "FILE")]
    pub(crate) plan: Option<PathBuf>,
    /// A machine file (`[torus]`, `[network]` or `[flat]` with `ranks_per_node` and
    /// `nodes`; or `[inter]`/`[placement]` as `copr topo` reads; or a cost config, a
    /// network description, a calibration's output; or an Open MPI hostfile or MPICH
    /// machine file: its nodes and slots, no network model).
    #[arg(long, value_name = "FILE")]
    pub(crate) machine: Option<PathBuf>,
    /// The machine of the run recorded in the --graph file (`COPR_RECORD`): its
    /// `# host` lines' hosts are the nodes, each with as many slots as ranks ran there,
    /// and the report prices the recorded run's own placement against the new mapping.
    #[arg(long, requires = "graph")]
    pub(crate) machine_from_recording: bool,
    /// A whole torus, e.g. `8x8x8`.
    #[arg(long, value_name = "DIMS")]
    pub(crate) torus: Option<String>,
    /// Torus: the job's nodes, one `name x y z` line each (as `xtdb2proc` lists them).
    #[arg(long, value_name = "FILE", requires = "torus")]
    pub(crate) alloc: Option<PathBuf>,
    /// Torus: link bandwidth per dimension, bytes/s (e.g. `6.5e9,5e9,6.5e9`).
    #[arg(long, value_delimiter = ',', requires = "torus")]
    pub(crate) link_bandwidth: Option<Vec<f64>>,
    /// A network graph file (fat tree, dragonfly, …): all its hosts are the job's nodes.
    #[arg(long, value_name = "FILE")]
    pub(crate) network: Option<PathBuf>,
    /// That many nodes with no network model.
    #[arg(long, value_name = "NODES")]
    pub(crate) flat: Option<usize>,
    /// Ranks per node (with --torus, --network, --flat; default 1). A machine file
    /// gives its own (`ranks_per_node`), a recording the ranks each host ran.
    #[arg(long)]
    pub(crate) ranks_per_node: Option<usize>,
    /// The inside of a node in hwloc's synthetic syntax, e.g. `pack:2 core:8` (as many
    /// PUs as ranks per node): intra-node bytes are reported by the level two cores
    /// share, and the optimiser arranges tasks on cores.
    #[arg(long, value_name = "SHAPE")]
    pub(crate) node_shape: Option<String>,
    /// Node names for the exports, in machine order (Slurm list, e.g. `nid[00012-00019,00033]`).
    #[arg(long, value_name = "LIST")]
    pub(crate) nodes: Option<String>,
    /// Strategies to compare.
    #[arg(
        long,
        value_parser = strategy_parser(),
        value_delimiter = ',',
        default_value = "packed,round-robin,folded,tiles,hilbert,cp2k,bisection,optimised"
    )]
    pub(crate) strategies: Vec<copr_mapping::Strategy>,
    /// The mapping to export (default: the optimiser's if it ran, else the least hop-bytes).
    #[arg(long, value_parser = strategy_parser())]
    pub(crate) export: Option<copr_mapping::Strategy>,
    /// Optimiser seed.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Time budget of the comparison, seconds: every strategy stops at it (a search
    /// with the best it has found), the optimiser gets what the baselines left, and a
    /// strategy whose turn comes later is not run (the report names it). From 0 (the
    /// first strategy only) to 86400 (one day).
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    pub(crate) budget: f64,
    /// Write an Open MPI rankfile.
    #[arg(long, value_name = "FILE")]
    pub(crate) rankfile: Option<PathBuf>,
    /// Write an MPICH/Cray MPICH_RANK_ORDER file (MPICH_RANK_REORDER_METHOD=3).
    #[arg(long, value_name = "FILE")]
    pub(crate) mpich_rank_order: Option<PathBuf>,
    /// Write a SLURM_HOSTFILE (srun --distribution=arbitrary).
    #[arg(long, value_name = "FILE")]
    pub(crate) slurm_hostfile: Option<PathBuf>,
    /// Write a SimGrid SMPI hostfile (line i: host of rank i).
    #[arg(long, value_name = "FILE")]
    pub(crate) smpi_hostfile: Option<PathBuf>,
    /// Write the SimGrid platform of the machine.
    #[arg(long, value_name = "FILE")]
    pub(crate) smpi_platform: Option<PathBuf>,
    /// How the SimGrid platform of a network graph routes: `auto` (ECMP where the
    /// network's equal-cost links form bundles, as on fat trees; else one path),
    /// `ecmp` (refused on other networks) or `single-path` (copr's one shortest path;
    /// the busiest link is then measured and optimised on that path too).
    #[arg(long, value_enum, default_value = "auto", value_name = "FORM")]
    pub(crate) smpi_routing: SmpiRoutingArg,
    /// Write the exported mapping as JSON.
    #[arg(long, value_name = "FILE")]
    pub(crate) mapping_json: Option<PathBuf>,
    /// Draw the mapping (grid coloured by node) and the link loads as SVG.
    #[arg(long, value_name = "FILE", value_parser = svg_path)]
    pub(crate) svg: Option<PathBuf>,
    /// Print the comparison as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Arguments of `copr topo`.
#[derive(Debug, Args)]
pub(crate) struct TopoArgs {
    /// A machine file (docs/machines.md: short or long form, what `copr calibrate`
    /// writes) or a cost config (`[[terms]]` with a topology); `-` reads standard input
    /// (relative file names in it resolve against the current directory).
    pub(crate) file: PathBuf,
    /// The file's format (default: `.json` is JSON, anything else and `-` TOML).
    #[arg(long, value_enum)]
    pub(crate) format: Option<FormatArg>,
    /// Number of ranks to place (overrides the file's placement rule).
    #[arg(long)]
    pub(crate) ranks: Option<usize>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Draw the rank × rank cost of a message of `--bytes` bytes as an SVG heatmap (at
    /// most 128 × 128 cells of averaged ranks; beyond 2²⁶ node pairs each cell is the
    /// mean of 256 sampled rank pairs, as the chart says).
    #[arg(long, value_name = "PATH", value_parser = svg_path)]
    pub(crate) svg: Option<PathBuf>,
    /// Message size for the heatmap: a byte count, optionally with a unit as `copr map
    /// --bytes` takes (`--bytes 1MiB`, `4kB`); default 1048576.
    #[arg(long, default_value = "1048576", value_parser = units::parse_bytes)]
    pub(crate) bytes: u64,
}

/// Arguments of `copr plan`.
#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    /// Plan file: `source` and `target` layouts, `op`, `element_size`, `solver`, or a
    /// batch of `[[transform]]` entries (relabeled independently and jointly); `-`
    /// reads standard input. Optional when `--source` and `--target` give the layouts.
    pub(crate) file: Option<PathBuf>,
    /// The source layout (B), as the plan file's `[source]` table on one line:
    /// `KIND:FIELD=VALUE,…` with the file's kinds and fields, e.g.
    /// `block-cyclic:m=10000,n=10000,mb=32,nb=32,nprow=2,npcol=4` or
    /// `grid:row_splits=[0,5000,10000],col_splits=[0,10000],owners=[[0],[1]]`;
    /// replaces the file's source.
    #[arg(long, value_name = "LAYOUT")]
    pub(crate) source: Option<String>,
    /// The target layout (A), written as `--source`; replaces the file's target.
    #[arg(long, value_name = "LAYOUT")]
    pub(crate) target: Option<String>,
    /// op in A ← op(B) (the file's `op`; default identity).
    #[arg(long, value_enum)]
    pub(crate) op: Option<OpArg>,
    /// Bytes per element (the file's `element_size`; default 8).
    #[arg(long)]
    pub(crate) element_size: Option<usize>,
    /// The file's format (default: `.json` is JSON, anything else and `-` TOML).
    #[arg(long, value_enum)]
    pub(crate) format: Option<FormatArg>,
    /// Override the file's solver.
    #[arg(long, value_enum)]
    pub(crate) solver: Option<SolverArg>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Draw the volume matrix before/after relabeling as SVG.
    #[arg(long, value_name = "PATH", value_parser = svg_path)]
    pub(crate) svg: Option<PathBuf>,
    /// Also relabel under this cost-model config (TOML/JSON, e.g. data/cost/torus-3d.toml)
    /// and report its cost before/after.
    #[arg(long, value_name = "FILE")]
    pub(crate) cost: Option<PathBuf>,
}

/// Input formats on the command line.
/// The strategies' names as clap's possible values, each with its summary.
fn strategy_parser() -> impl clap::builder::TypedValueParser<Value = copr_mapping::Strategy> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let values =
        copr_mapping::Strategy::ALL.map(|s| PossibleValue::new(s.name()).help(s.summary()));
    PossibleValuesParser::new(values).map(|name| {
        copr_mapping::Strategy::from_name(&name).expect("clap admits only the strategies' names")
    })
}

/// `--smpi-routing`: [`copr_mapping::simgrid::GraphForm`].
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum SmpiRoutingArg {
    /// ECMP where the network is bundle-equivalent, else one path.
    Auto,
    /// Equal-cost links bundled: SimGrid's loads are ECMP's.
    Ecmp,
    /// copr's single shortest path per pair.
    SinglePath,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum FormatArg {
    /// TOML.
    Toml,
    /// JSON.
    Json,
}

/// A command's input file: its text (standard input for `-`), its format (`--format`,
/// else from the extension) and the name errors give it.
struct Input {
    text: String,
    format: ConfigFormat,
    name: PathBuf,
}

impl Input {
    fn read(file: &Path, format: Option<FormatArg>) -> Result<Self> {
        let text = copr::plan::read_text(file)?;
        let format = match format {
            Some(FormatArg::Toml) => ConfigFormat::Toml,
            Some(FormatArg::Json) => ConfigFormat::Json,
            None => ConfigFormat::of_path(file),
        };
        Ok(Self {
            text,
            format,
            name: file.to_owned(),
        })
    }

    fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        parse_config(&self.text, self.format, &self.name)
    }

    /// The directory relative file names in the input resolve against.
    fn base_dir(&self) -> PathBuf {
        if self.name == Path::new("-") {
            PathBuf::from(".")
        } else {
            copr_topology::files::base_dir(&self.name)
        }
    }

    fn files_format(&self) -> copr_topology::files::Format {
        match self.format {
            ConfigFormat::Toml => copr_topology::files::Format::Toml,
            ConfigFormat::Json => copr_topology::files::Format::Json,
        }
    }
}

/// Solver names on the command line.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum SolverArg {
    /// Exact, sparse.
    Sparse,
    /// Exact, dense Jonker–Volgenant.
    Dense,
    /// COSTA's greedy swaps.
    Greedy,
    /// No relabeling.
    Identity,
}

impl From<SolverArg> for Solver {
    fn from(s: SolverArg) -> Self {
        match s {
            SolverArg::Sparse => Solver::Sparse,
            SolverArg::Dense => Solver::Dense,
            SolverArg::Greedy => Solver::Greedy,
            SolverArg::Identity => Solver::Identity,
        }
    }
}

/// op on the command line.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum OpArg {
    /// op(B) = B.
    Identity,
    /// op(B) = Bᵀ.
    Transpose,
    /// op(B) = Bᴴ.
    ConjTranspose,
}

impl From<OpArg> for copr::layout::Op {
    fn from(o: OpArg) -> Self {
        match o {
            OpArg::Identity => Self::Identity,
            OpArg::Transpose => Self::Transpose,
            OpArg::ConjTranspose => Self::ConjTranspose,
        }
    }
}

/// Grid numbering on the command line.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum OrderArg {
    /// rank = prow·npcol + pcol.
    RowMajor,
    /// rank = pcol·nprow + prow.
    ColMajor,
}

impl From<OrderArg> for Order {
    fn from(o: OrderArg) -> Self {
        match o {
            OrderArg::RowMajor => Order::RowMajor,
            OrderArg::ColMajor => Order::ColMajor,
        }
    }
}

/// Arguments of `copr sweep`; every option overrides the config file (or the paper's
/// defaults).
#[derive(Debug, Args)]
pub(crate) struct SweepArgs {
    /// Sweep config file (TOML/JSON with the fields of the options below; `-` reads TOML
    /// from standard input).
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// Matrix rows.
    #[arg(long)]
    pub(crate) m: Option<usize>,
    /// Matrix columns.
    #[arg(long)]
    pub(crate) n: Option<usize>,
    /// Process grid rows.
    #[arg(long)]
    pub(crate) nprow: Option<usize>,
    /// Process grid columns.
    #[arg(long)]
    pub(crate) npcol: Option<usize>,
    /// Target block size.
    #[arg(long)]
    pub(crate) target_block: Option<usize>,
    /// Source grid numbering.
    #[arg(long, value_enum)]
    pub(crate) source_order: Option<OrderArg>,
    /// Target grid numbering.
    #[arg(long, value_enum)]
    pub(crate) target_order: Option<OrderArg>,
    /// Source block sizes, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub(crate) blocks: Option<Vec<usize>>,
    /// Print a JSON array instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Where to write the SVG chart (default: `copr-sweep.svg` for the table, no chart
    /// with `--json`).
    #[arg(long, value_name = "PATH", value_parser = svg_path)]
    pub(crate) svg: Option<PathBuf>,
    /// Do not write the chart.
    #[arg(long, conflicts_with = "svg")]
    pub(crate) no_svg: bool,
    /// Also price every block size under this cost-model config (as `copr plan --cost`:
    /// the cost without relabeling, with the volume-optimal σ and with the cost-optimal
    /// σ; f64 elements); the machine must place nprow × npcol ranks.
    #[arg(long, value_name = "FILE")]
    pub(crate) cost: Option<PathBuf>,
}

/// The chart `copr sweep` writes, if any: `--svg`, else `copr-sweep.svg` for the text
/// table (the README's main job); `--json` and `--no-svg` write no file unless `--svg`
/// asks for one.
fn sweep_chart_path(a: &SweepArgs) -> Option<PathBuf> {
    match (&a.svg, a.no_svg || a.json) {
        (Some(p), _) => Some(p.clone()),
        (None, false) => Some(PathBuf::from("copr-sweep.svg")),
        (None, true) => None,
    }
}

/// `--svg PATH`: copr draws SVG only, so the file name must end in `.svg`.
fn svg_path(s: &str) -> std::result::Result<PathBuf, String> {
    let p = PathBuf::from(s);
    if p.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg")) {
        Ok(p)
    } else {
        Err(format!(
            "copr draws SVG only: give a file name ending in .svg (got {s:?})"
        ))
    }
}

/// Runs a parsed command line, writing results to stdout.
///
/// # Errors
/// Any library error (bad files, bad layouts, solver or plot errors).
pub(crate) fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Plan(a) => plan(a),
        Command::Sweep(a) => sweep(a),
        Command::Topo(a) => topo(a),
        Command::Map(a) => map(*a),
        Command::Calibrate(a) => crate::calibrate::run(a),
        Command::Completions(a) => crate::generate::completions(a, Cli::command()),
        Command::Man(a) => crate::generate::man(a, Cli::command()),
    }
}

fn dims_arg(flag: &str, s: &str) -> Result<Vec<usize>> {
    s.split(['x', 'X', ','])
        .map(|d| {
            d.trim().parse::<usize>().map_err(|_| {
                copr::Error::Argument(format!("--{flag} {s}: expected extents like 32x32"))
            })
        })
        .collect()
}

/// Refuses an export path that names an input file or another export's file (the
/// second write would replace the first, or the graph read): regular files and paths
/// still to be made only, so `/dev/null` may take several.
fn check_export_paths(a: &MapArgs) -> Result<()> {
    let inputs = [
        ("--graph", &a.graph),
        ("--plan", &a.plan),
        ("--machine", &a.machine),
        ("--alloc", &a.alloc),
        ("--network", &a.network),
    ];
    let outputs = [
        ("--rankfile", &a.rankfile),
        ("--mpich-rank-order", &a.mpich_rank_order),
        ("--slurm-hostfile", &a.slurm_hostfile),
        ("--smpi-hostfile", &a.smpi_hostfile),
        ("--smpi-platform", &a.smpi_platform),
        ("--mapping-json", &a.mapping_json),
        ("--svg", &a.svg),
    ];
    // the file a path names: itself resolved if it exists, else its resolved directory
    // and its name; None for a special file (a device, a pipe)
    let key = |p: &std::path::Path| -> Option<PathBuf> {
        match std::fs::metadata(p) {
            Ok(m) if m.is_file() => std::fs::canonicalize(p).ok(),
            Ok(_) => None,
            Err(_) => {
                let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
                let dir = std::fs::canonicalize(dir.unwrap_or(std::path::Path::new(".")));
                let name = p.file_name()?;
                Some(dir.map_or_else(|_| p.to_path_buf(), |d| d.join(name)))
            }
        }
    };
    let mut seen: Vec<(&str, PathBuf)> = inputs
        .iter()
        .filter_map(|(flag, p)| Some((*flag, key(p.as_deref()?)?)))
        .collect();
    for (flag, p) in outputs {
        let Some(path) = p.as_deref() else { continue };
        let Some(k) = key(path) else { continue };
        if let Some((other, _)) = seen.iter().find(|(_, s)| *s == k) {
            return Err(copr::Error::Argument(format!(
                "{flag} {}: the same file as {other}; give each export a file of its own",
                path.display()
            )));
        }
        seen.push((flag, k));
    }
    Ok(())
}

/// The options of `copr map` that describe a grid or a torus need `--grid` or
/// `--torus`. clap's `requires` accepts any member of the group its target belongs to
/// (clap issue 4707: `--flat` passes for `--torus`), so they are checked here too.
fn check_needs(a: &MapArgs) -> Result<()> {
    let needs = [
        ("--open", a.open, "--grid", a.grid.is_some()),
        ("--bytes", a.bytes.is_some(), "--grid", a.grid.is_some()),
        ("--pattern", a.traffic.is_some(), "--grid", a.grid.is_some()),
        (
            "--collective",
            a.collective.is_some(),
            "--pattern",
            a.traffic.is_some(),
        ),
        ("--alloc", a.alloc.is_some(), "--torus", a.torus.is_some()),
        (
            "--link-bandwidth",
            a.link_bandwidth.is_some(),
            "--torus",
            a.torus.is_some(),
        ),
    ];
    if a.ranks_per_node.is_some() && (a.machine.is_some() || a.machine_from_recording) {
        return Err(copr::Error::Argument(format!(
            "--ranks-per-node describes --torus, --network or --flat; {}",
            if a.machine.is_some() {
                "a machine file gives its own (`ranks_per_node = …`)"
            } else {
                "a recording gives the ranks each host ran"
            }
        )));
    }
    match needs.iter().find(|&&(_, given, _, has)| given && !has) {
        Some((flag, _, needed, _)) => Err(copr::Error::Argument(format!(
            "{flag} describes the {} and needs {needed}",
            &needed[2..]
        ))),
        None => Ok(()),
    }
}

/// The pattern of `--pattern ALGORITHM --grid RxC`.
fn algorithm_pattern(
    algorithm: copr_mapping::Algorithm,
    dims: &[usize],
    bytes: &[u64],
    a: &MapArgs,
) -> Result<copr_mapping::Pattern> {
    let name = algorithm.name();
    let &[rows, cols] = dims else {
        return Err(copr::Error::Argument(format!(
            "--pattern {name}: needs a 2-D --grid (RxC), got {} dimensions",
            dims.len()
        )));
    };
    if a.open {
        return Err(copr::Error::Argument(format!(
            "--pattern {name}: the algorithm's shifts wrap around; --open does not apply"
        )));
    }
    if bytes.windows(2).any(|w| w[0] != w[1]) {
        return Err(copr::Error::Argument(format!(
            "--pattern {name}: --bytes is the size of one block, give one value (got {bytes:?})"
        )));
    }
    let collective = a
        .collective
        .as_deref()
        .and_then(copr_mapping::Collective::from_name)
        .unwrap_or_default();
    copr_mapping::Pattern::algorithm(&copr_mapping::AlgorithmSpec {
        algorithm,
        rows,
        cols,
        block_bytes: bytes[0],
        collective,
    })
}

fn map(a: MapArgs) -> Result<()> {
    use copr_mapping::{self as mapping, export};
    check_needs(&a)?;
    check_export_paths(&a)?;
    let pattern = map_pattern(&a)?;
    let (machine, recorded) = map_machine(&a, &pattern)?;
    if a.rankfile.is_some() || a.slurm_hostfile.is_some() {
        // before the search: a host name these files cannot carry (`h=0`, `x#y`) would
        // launch on another host or not at all
        machine.check_host_names().map_err(|e| {
            copr::Error::Argument(format!(
                "{e}: name the hosts with --nodes or `nodes =` in the machine file"
            ))
        })?;
    }
    if !matches!(a.smpi_routing, SmpiRoutingArg::Auto)
        && !matches!(machine.kind(), mapping::NetKind::Graph(..))
    {
        return Err(copr::Error::Argument(format!(
            "--smpi-routing {}: chooses how a network graph (fat tree, dragonfly, …) routes; \
             this machine is not one ({})",
            clap::ValueEnum::to_possible_value(&a.smpi_routing)
                .map_or(String::new(), |v| v.get_name().to_string()),
            machine.description()
        )));
    }
    if !(a.budget >= 0.0 && a.budget <= MAX_MAP_BUDGET) {
        return Err(copr::Error::Argument(format!(
            "--budget {}: seconds must be a number from 0 to {MAX_MAP_BUDGET} (one day)",
            a.budget
        )));
    }
    let opts = mapping::Options {
        seed: a.seed,
        budget: std::time::Duration::from_secs_f64(a.budget),
    };
    // fewer tasks than slots: the job's ranks are the first tasks of a padded pattern
    // (a recorded run: all its ranks, also those that sent nothing)
    let ranks = match &recorded {
        Some(_) => machine.used_slots(),
        None => pattern.tasks(),
    };
    if ranks > machine.used_slots() {
        return Err(mapping::MapError::TooFewSlots {
            tasks: ranks,
            slots: machine.used_slots(),
            machine: machine.description().to_string(),
        }
        .into());
    }
    // (a recording may name more hosts than its graph has tasks: pad to the slots too)
    let pattern = if pattern.tasks() < machine.slots() {
        if a.mpich_rank_order.is_some() && ranks < machine.used_slots() {
            return Err(copr::Error::Argument(format!(
                "--mpich-rank-order: {ranks} tasks on {} slots leave slots empty, which \
                 MPICH_RANK_ORDER cannot say; use --rankfile or --slurm-hostfile",
                machine.used_slots()
            )));
        }
        // (as `padded` does, but naming the slots the nodes have: `slots()` also counts
        // the places of the slots a node of fewer slots lacks)
        let plural = |n: usize, what: &str| match n {
            1 => format!("1 {what}"),
            _ => format!("{n} {what}s"),
        };
        let description = format!(
            "{} ({} on {})",
            pattern.description(),
            plural(pattern.tasks(), "task"),
            plural(machine.used_slots(), "slot")
        );
        mapping::Pattern::from_edges(machine.slots(), pattern.edges().to_vec(), description)?
    } else {
        pattern
    };
    let bar = (!a.json && std::io::stderr().is_terminal() && pattern.tasks() >= 4096).then(|| {
        let b = indicatif::ProgressBar::new(a.strategies.len() as u64 + 1);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
                .expect("valid template"),
        );
        b
    });
    let mut cmp = mapping::compare(&pattern, &machine, &a.strategies, &opts, |name| {
        if let Some(b) = &bar {
            b.set_message(name.to_string());
            b.inc(1);
        }
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    // nodes with fewer slots than others: no job task on a slot a node does not have
    mapping::fit_comparison(&mut cmp, &pattern, &machine, ranks)?;
    // the job's ranks, not the slots the padded pattern fills
    cmp.tasks = ranks;
    let recorded = recorded.map(|ran| mapping::evaluate(&pattern, &machine, &ran));
    let chosen = match a.export {
        Some(s) => cmp.row(s.name()).ok_or_else(|| {
            copr::Error::Argument(format!(
                "--export {}: that strategy did not run or does not apply here",
                s.name()
            ))
        })?,
        None => cmp.row("optimised").unwrap_or_else(|| {
            cmp.rows
                .iter()
                .min_by_key(|r| r.metrics.hop_bytes)
                .expect("compare returns rows")
        }),
    };
    let write = |path: &PathBuf, text: String| -> Result<()> {
        std::fs::write(path, text).map_err(|source| copr::Error::Io {
            path: path.clone(),
            source,
        })
    };
    let mut written = Vec::new();
    let host_exports = a.rankfile.is_some() || a.slurm_hostfile.is_some();
    let unnamed_hosts = host_exports && a.nodes.is_none() && placeholder_host_names(&machine);
    if let Some(p) = &a.rankfile {
        write(p, export::rankfile_ranks(&machine, &chosen.map, ranks))?;
        written.push(format!("rankfile {}", p.display()));
    }
    if let Some(p) = &a.mpich_rank_order {
        let text = if machine.used_slots() < machine.slots() {
            export::mpich_rank_order_ranks(&machine, &chosen.map, ranks)?
        } else {
            export::mpich_rank_order(&chosen.map)
        };
        write(p, text)?;
        written.push(format!("MPICH_RANK_ORDER {}", p.display()));
    }
    if let Some(p) = &a.slurm_hostfile {
        write(
            p,
            export::hostfile_ranks(&export::node_names(&machine), &machine, &chosen.map, ranks),
        )?;
        written.push(format!("SLURM_HOSTFILE {}", p.display()));
    }
    if let Some(p) = &a.smpi_hostfile {
        let names = mapping::simgrid::smpi_host_names(&machine);
        write(
            p,
            export::hostfile_ranks(&names, &machine, &chosen.map, ranks),
        )?;
        written.push(format!("SMPI hostfile {}", p.display()));
    }
    if let Some(p) = &a.smpi_platform {
        use mapping::simgrid::{platform_xml_with, GraphForm, SimgridOptions};
        let graph_form = match a.smpi_routing {
            SmpiRoutingArg::Auto => GraphForm::Auto,
            SmpiRoutingArg::Ecmp => GraphForm::Ecmp,
            SmpiRoutingArg::SinglePath => GraphForm::SinglePath,
        };
        let o = SimgridOptions {
            graph_form,
            ..Default::default()
        };
        write(p, platform_xml_with(&machine, &o)?)?;
        written.push(format!("SimGrid platform {}", p.display()));
    }
    if let Some(p) = &a.mapping_json {
        let j = export::to_json_ranks(&chosen.strategy, &machine, &chosen.map, ranks);
        write(
            p,
            serde_json::to_string_pretty(&j).expect("mappings serialise") + "\n",
        )?;
        written.push(format!("JSON {}", p.display()));
    }
    if let Some(p) = &a.svg {
        crate::plot::mapping_svg(&pattern, &machine, &cmp, chosen, p)?;
        written.push(format!("picture {}", p.display()));
    }
    // said once every file is written: an export that fails is the one line on stderr
    if unnamed_hosts {
        eprintln!(
            "copr: warning: the machine names no hosts: the rankfile and SLURM_HOSTFILE say node0 .. node{}; give --nodes 'nid[...]' or `nodes =` in the machine file for the job's host names",
            machine.nodes().saturating_sub(1)
        );
    }
    print_map_report(&a, &cmp, chosen, recorded.as_ref(), written);
    Ok(())
}

/// `copr map`'s pattern: a grid (with `--pattern`'s traffic), a graph file or a plan's
/// volumes after its relabeling.
fn map_pattern(a: &MapArgs) -> Result<copr_mapping::Pattern> {
    use copr_mapping::{self as mapping, CartGrid, Pattern};
    Ok(if let Some(g) = &a.grid {
        let dims = dims_arg("grid", g)?;
        let n = dims.len();
        let given = a.bytes.clone().unwrap_or_else(|| vec![1 << 20]);
        let bytes = match given.len() {
            1 => vec![given[0]; n],
            _ => given,
        };
        match a.traffic.as_deref().and_then(mapping::Algorithm::from_name) {
            None => Pattern::grid(&CartGrid::new(dims, vec![!a.open; n], bytes)?)
                .map_err(|e| grid_sum_error(e, g))?,
            Some(algorithm) => {
                algorithm_pattern(algorithm, &dims, &bytes, a).map_err(|e| grid_sum_error(e, g))?
            }
        }
    } else if let Some(f) = &a.graph {
        Pattern::from_file(f)?
    } else {
        let f = a.plan.as_ref().expect("clap requires a pattern");
        let input = Input::read(f, None)?;
        if batch::is_batch(&input) {
            return Err(copr::Error::Argument(format!(
                "--plan {}: a batch of [[transform]] entries; copr map maps the traffic of \
                 one plan (a file with [source] and [target]); copr plan relabels a batch",
                f.display()
            )));
        }
        let spec: PlanSpec = input.parse()?;
        let plan = Plan::from_spec(&spec).map_err(|e| e.in_file(f))?;
        let v = plan.volumes().relabeled(plan.sigma());
        Pattern::from_volumes(&v, spec.element_size as u64).map_err(|e| e.in_file(f))?
    })
}

/// A grid's messages between one pair of tasks that sum past 64 bits, said in terms
/// of the flags (the pattern's own error names two task numbers only).
fn grid_sum_error(e: copr::Error, grid: &str) -> copr::Error {
    let overflow = match &e {
        copr::Error::Extension(b) => match b.downcast_ref::<copr_mapping::PatternError>() {
            Some(&copr_mapping::PatternError::BytesOverflow { src, dst }) => Some((src, dst)),
            _ => None,
        },
        _ => None,
    };
    match overflow {
        Some((src, dst)) => copr::Error::Argument(format!(
            "--grid {grid} --bytes: the messages from task {src} to task {dst} sum past \
             2^64 - 1 bytes (a periodic dimension of extent 2 sends both its messages to \
             one neighbour; an algorithm may send one pair several blocks): give fewer bytes"
        )),
        None => e,
    }
}

/// `copr map`'s machine (with `--node-shape` and `--nodes`) and, for a machine read
/// from a recording, the recorded run's own placement of the ranks.
fn map_machine(
    a: &MapArgs,
    pattern: &copr_mapping::Pattern,
) -> Result<(copr_mapping::MapMachine, Option<copr::lap::Perm>)> {
    use copr_mapping::{self as mapping, MapMachine};
    let mut recorded = None;
    let mut machine = if a.machine_from_recording {
        let f = a.graph.as_ref().expect("clap requires --graph");
        let hosts = mapping::recorded_hosts_file(f)?.ok_or_else(|| {
            copr::Error::InFile {
                path: f.clone(),
                source: Box::new(copr::Error::Argument(
                    "--machine-from-recording: no `# host RANK NAME` lines (a recording by COPR_RECORD has them)".into(),
                )),
            }
        })?;
        if pattern.tasks() > hosts.len() {
            return Err(copr::Error::InFile {
                path: f.clone(),
                source: Box::new(
                    mapping::MapError::RecordedHosts {
                        tasks: pattern.tasks(),
                        hosts: hosts.len(),
                    }
                    .into(),
                ),
            });
        }
        // a host name the exports cannot carry is the recording's
        let (m, ran) = mapping::machine_from_recording(&hosts).map_err(|e| e.in_file(f))?;
        recorded = Some(ran);
        m
    } else if let Some(f) = &a.machine {
        MapMachine::from_file_for(f, Some(pattern.tasks()))?
    } else if let Some(t) = &a.torus {
        let dims: Vec<u32> = dims_arg("torus", t)?
            .into_iter()
            .map(|d| u32::try_from(d).unwrap_or(u32::MAX))
            .collect();
        mapping::torus_machine(
            dims,
            a.link_bandwidth.clone(),
            a.alloc.as_deref(),
            a.ranks_per_node.unwrap_or(1),
        )?
    } else if let Some(f) = &a.network {
        let net = copr_topology::Network::from_file(f)?;
        MapMachine::network(net, None, Default::default(), a.ranks_per_node.unwrap_or(1))
            .map_err(|e| e.in_file(f))?
    } else {
        MapMachine::flat(
            a.flat.expect("clap requires a machine"),
            a.ranks_per_node.unwrap_or(1),
        )?
    };
    if let Some(shape) = &a.node_shape {
        let tree =
            copr_topology::NodeTree::from_shape(shape, &copr_topology::LevelCosts::default())?;
        machine = machine.with_node_tree(tree)?;
    }
    if let Some(list) = &a.nodes {
        let names = mapping::expand_nodelist(list)
            .map_err(|e| copr::Error::Argument(format!("--nodes: {e}")))?;
        machine.set_node_names(names)?;
    }
    if matches!(a.smpi_routing, SmpiRoutingArg::SinglePath) {
        // simulated on one path: mapped for that path's busiest link
        machine = machine.with_single_path_loads();
    }
    Ok((machine, recorded))
}

/// Prints `copr map`'s report: JSON (`--json`) or the table, the exported strategy,
/// the recorded run's metrics against it, and the files written.
fn print_map_report(
    a: &MapArgs,
    cmp: &copr_mapping::Comparison,
    chosen: &copr_mapping::Row,
    recorded: Option<&copr_mapping::Metrics>,
    written: Vec<String>,
) {
    use copr_mapping as mapping;
    if a.json {
        // written directly, not through serde_json::Value, which cannot hold the u128
        // byte counts above u64::MAX
        #[derive(serde::Serialize)]
        struct MapJson<'a> {
            #[serde(flatten)]
            cmp: &'a mapping::Comparison,
            exported: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            recorded: Option<&'a mapping::Metrics>,
        }
        let j = MapJson {
            cmp,
            exported: &chosen.strategy,
            recorded,
        };
        println!("{}", serde_json::to_string(&j).expect("reports serialise"));
    } else {
        print!("{}", mapping::table(cmp));
        if let Some(line) = mapping::against_default(cmp, &chosen.strategy) {
            println!("{line}");
        }
        println!("exported: {}", chosen.strategy);
        if let Some(r) = recorded {
            println!("{}", recorded_line(r, &chosen.metrics));
        }
        for w in written {
            println!("wrote {w}");
        }
    }
}

/// Bytes that cross each dimension's links of a torus machine when the plan's packages
/// travel with relabeling `sigma` (`None`: without): entry `d` is `Σ bytes × links of
/// dimension d`, from the mapper's link loads ([`copr_mapping::link_loads`], routes in
/// dimension order) of the machine's own placement. `None` if the network is not a
/// torus (or a package's bytes overflow 64 bits).
fn torus_link_bytes(
    m: &copr_topology::Machine,
    volumes: &copr::volume::Volumes,
    sigma: Option<&copr::lap::Perm>,
    element_size: usize,
) -> Option<Vec<u128>> {
    let Some(copr_topology::InterNode::Torus(t)) = m.inter() else {
        return None;
    };
    let view = copr_mapping::MapMachine::from_machine(m).ok()?;
    let moved = sigma.map(|s| volumes.relabeled(s));
    let p =
        copr_mapping::Pattern::from_volumes(moved.as_ref().unwrap_or(volumes), element_size as u64)
            .ok()?;
    let node: Vec<u32> = (0..p.tasks()).map(|r| m.node_of(r) as u32).collect();
    let n = t.ndims();
    let mut out = vec![0u128; n];
    for (l, x) in copr_mapping::link_loads(&p, &view, &node)
        .into_iter()
        .enumerate()
    {
        out[(l % (2 * n)) / 2] += x;
    }
    Some(out)
}

/// The recorded run's own placement against the exported mapping, on one line.
fn recorded_line(ran: &copr_mapping::Metrics, new: &copr_mapping::Metrics) -> String {
    let ratio = |old: u128, new: u128| {
        let (o, n) = (old as f64, new as f64);
        if new > 0 && old > new {
            format!(" ({:.2}x less)", o / n)
        } else if old == new {
            " (the same)".to_string()
        } else if old > 0 && new > old {
            format!(" ({:.2}x more)", n / o)
        } else {
            String::new()
        }
    };
    let b = copr_mapping::bytes_text;
    format!(
        "recorded run: hop-bytes {}, busiest link {}; exported mapping: {}{}, {}{}",
        b(ran.hop_bytes),
        b(ran.max_link_bytes),
        b(new.hop_bytes),
        ratio(ran.hop_bytes, new.hop_bytes),
        b(new.max_link_bytes),
        ratio(ran.max_link_bytes, new.max_link_bytes),
    )
}

/// Whether the machine's node names are the generated `node0`, `node1`, … (no names
/// given by a file or `--nodes`).
fn placeholder_host_names(m: &copr_mapping::MapMachine) -> bool {
    (0..m.nodes()).all(|k| m.node_name(k) == format!("node{k}"))
}

fn plan(a: PlanArgs) -> Result<()> {
    let input = match &a.file {
        Some(f) => Some(Input::read(f, a.format)?),
        None => None,
    };
    if let Some(input) = input.as_ref().filter(|i| batch::is_batch(i)) {
        return batch::run(&a, input);
    }
    let (spec, file) = plan_spec(&a, input.as_ref())?;
    let in_file = |e: copr::Error| match file {
        Some(f) => e.in_file(f),
        None => e,
    };
    let plan = Plan::from_spec(&spec).map_err(in_file)?;
    let report = plan.report(spec.element_size);
    let mut links = None;
    let mut warning = None;
    let cost = match &a.cost {
        Some(path) => {
            let setup = copr_cost_models::load_setup(path, Some(report.ranks))?;
            if let Some((ranks, pus)) = setup.machine.as_ref().and_then(|m| m.oversubscription()) {
                // said once the answer is there: an error after it stays one line
                warning = Some(format!(
                    "copr: warning: {}: up to {ranks} ranks on a node of {pus} PUs; ranks beyond the PUs share them and are priced as the same PU",
                    path.display()
                ));
            }
            let c = plan
                .cost_report(setup.model.as_ref(), spec.element_size, spec.alpha)
                .map_err(|e| e.in_file(path))?;
            if let Some(m) = &setup.machine {
                let cost_sigma = copr::lap::Perm::from_forward(c.sigma.clone())?;
                let by = |sigma| torus_link_bytes(m, plan.volumes(), sigma, spec.element_size);
                if let (Some(before), Some(volume), Some(cost)) =
                    (by(None), by(Some(plan.sigma())), by(Some(&cost_sigma)))
                {
                    links = Some(serde_json::json!({
                        "before": before,
                        "volume_sigma": volume,
                        "cost_sigma": cost,
                    }));
                }
            }
            Some(c)
        }
        None => None,
    };
    if let Some(path) = &a.svg {
        let after = plan.volumes().relabeled(plan.sigma());
        crate::plot::volume_heatmaps(plan.volumes(), &after, path)?;
    }
    if let Some(w) = warning {
        eprintln!("{w}");
    }
    if a.json {
        let mut j = serde_json::to_value(&report).expect("reports serialise");
        if let Some(c) = &cost {
            j["cost"] = serde_json::to_value(c).expect("reports serialise");
            if let Some(l) = &links {
                j["cost"]["torus_link_bytes"] = l.clone();
            }
        }
        println!("{j}");
        return Ok(());
    }
    // GB from 1 GB up, else as `copr map` prints bytes (a small plan showed 0.000 GB)
    let gb = |b: u64| {
        if b >= 1_000_000_000 {
            format!("{:.3} GB", b as f64 / 1e9)
        } else {
            copr_mapping::bytes_text(u128::from(b))
        }
    };
    println!("ranks            {}", report.ranks);
    println!(
        "total            {} elements ({} at {} B/element)",
        report.total_elements,
        gb(report.total_bytes),
        report.element_size
    );
    println!(
        "remote before    {} elements ({})",
        report.remote_before,
        gb(report.remote_bytes_before)
    );
    println!(
        "remote after     {} elements ({})",
        report.remote_after,
        gb(report.remote_bytes_after)
    );
    println!("reduction        {:.2} %", report.reduction_percent);
    println!(
        "solver           {}, {:.6} s",
        word(&report.solver),
        report.solver_seconds
    );
    println!("sigma            {}", sigma_text(&report.sigma));
    if let Some(c) = &cost {
        let unit = a.cost.as_deref().map_or("", units::cost_unit);
        println!("{}", wrapped("cost model       ", &c.model));
        println!("cost before      {:.6e} {unit}", c.cost_before);
        println!(
            "cost after       {:.6e} {unit}  ({:.2} % less; the volume-optimal sigma costs {:.6e} {unit})",
            c.cost_after, c.reduction_percent, c.cost_with_plan_sigma
        );
        println!(
            "remote after     {} elements with the cost-optimal sigma",
            c.remote_after
        );
        println!("cost sigma       {}", sigma_text(&c.sigma));
        println!("cost solver      {:.6} s", c.solver_seconds);
        if let Some(k) = &c.certificate {
            println!(
                "certificate      {}",
                certificate_text(k, c.cost_before, c.cost_after)
            );
        }
    }
    if let Some(l) = &links {
        let gb = |v: &serde_json::Value| {
            let v: Vec<String> = v
                .as_array()
                .into_iter()
                .flatten()
                .map(|b| format!("{:.3}", b.as_f64().unwrap_or(0.0) / 1e9))
                .collect();
            v.join(" / ")
        };
        let dims = l["before"].as_array().map_or(0, Vec::len);
        let names: Vec<String> = (0..dims)
            .map(|d| match (dims, d) {
                (1..=3, 0) => "x".into(),
                (1..=3, 1) => "y".into(),
                (1..=3, 2) => "z".into(),
                _ => format!("d{d}"),
            })
            .collect();
        println!(
            "torus link GB    bytes × links crossed per dimension ({})",
            names.join(" / ")
        );
        println!("  no relabeling  {}", gb(&l["before"]));
        println!("  volume sigma   {}", gb(&l["volume_sigma"]));
        println!("  cost sigma     {}", gb(&l["cost_sigma"]));
    }
    if let Some(path) = &a.svg {
        println!("chart            {}", path.display());
    }
    Ok(())
}

/// The single plan `copr plan` works on: the file's, with the layouts and fields the
/// flags give in place of the file's; and the file's name while the file still holds a
/// layout (for its errors).
fn plan_spec<'a>(a: &PlanArgs, input: Option<&'a Input>) -> Result<(PlanSpec, Option<&'a Path>)> {
    let source = a
        .source
        .as_deref()
        .map(|s| layout_arg::parse_layout("--source", s))
        .transpose()?;
    let target = a
        .target
        .as_deref()
        .map(|s| layout_arg::parse_layout("--target", s))
        .transpose()?;
    let mut spec = match (input, source, target) {
        (Some(input), source, target) => {
            // the whole file is read (its errors keep their lines), then the flags'
            // layouts replace its own
            let mut spec: PlanSpec = input.parse()?;
            if let Some(s) = source {
                spec.source = s;
            }
            if let Some(t) = target {
                spec.target = t;
            }
            spec
        }
        (None, Some(source), Some(target)) => PlanSpec {
            source,
            target,
            op: Default::default(),
            element_size: 8,
            solver: Default::default(),
            alpha: 1.0,
        },
        (None, s, _) => {
            return Err(copr::Error::Argument(format!(
                "give a plan FILE, or both layouts: --{} is missing (e.g. copr plan --source block-cyclic:m=1000,n=1000,mb=32,nb=32,nprow=2,npcol=2 --target block-cyclic:m=1000,n=1000,mb=128,nb=128,nprow=2,npcol=2)",
                if s.is_some() { "target" } else { "source" }
            )))
        }
    };
    if let Some(s) = a.solver {
        spec.solver = s.into();
    }
    if let Some(o) = a.op {
        spec.op = o.into();
    }
    if let Some(e) = a.element_size {
        spec.element_size = e;
    }
    let file = input
        .filter(|_| a.source.is_none() || a.target.is_none())
        .map(|i| i.name.as_path());
    Ok((spec, file))
}

/// One line on how the cost σ was found and what is proven about it.
fn certificate_text(k: &copr::relabel::Certificate, before: f64, cost_after: f64) -> String {
    use copr::relabel::SolvedBy as Method;
    match k.method {
        Method::Volume => format!(
            "exact (the sparse exact solve on {} received volumes)",
            k.entries
        ),
        Method::Dense => format!("exact (the dense table of {} gains)", k.entries),
        Method::Sparse => {
            let verdict = if k.exact {
                "exact".to_string()
            } else if cost_after > 0.0 {
                format!("within {:.3e} % of the optimum", 100.0 * k.gap / cost_after)
            } else {
                "not proven optimal".to_string()
            };
            format!(
                "{verdict}: {} candidate entries ({} priced in {} rounds),\n                 bound on the saving {:.12e}, saving {:.12e}, gap {:.6e}",
                k.entries,
                k.priced,
                k.rounds,
                k.bound,
                before - cost_after,
                k.gap
            )
        }
        _ => "a heuristic, nothing proven".to_string(),
    }
}

fn topo(a: TopoArgs) -> Result<()> {
    if a.ranks == Some(0) {
        return Err(copr::Error::Argument(
            "--ranks 0: the number of ranks must be >= 1".into(),
        ));
    }
    let input = Input::read(&a.file, a.format)?;
    if matches!(input.format, ConfigFormat::Toml) {
        // before the generic parse below, which would take 80 bytes per byte
        copr_topology::files::check_toml_size(&input.text, Some(&a.file))?;
    }
    // a launcher's host list is no TOML: read below as the machine it names
    let from_file = a.format.is_none() && a.file != Path::new("-");
    let value = match input.parse::<serde_json::Value>() {
        Ok(value) => value,
        Err(_)
            if matches!(input.format, ConfigFormat::Toml)
                && copr_topology::hostfile_machine(&input.text).is_some() =>
        {
            serde_json::Value::Null
        }
        Err(e) => return Err(e),
    };
    let is_cost = value.get("terms").is_some();
    let in_file = |e: copr::Error| copr::Error::InFile {
        path: a.file.clone(),
        source: Box::new(e),
    };
    let machine = if from_file {
        // from the file, so that errors name it with their lines
        if is_cost {
            copr_cost_models::load_setup(&a.file, a.ranks)?.machine
        } else {
            Some(std::sync::Arc::new(copr_topology::load_machine(
                &a.file, a.ranks,
            )?))
        }
    } else if is_cost {
        copr_cost_models::CostConfig::from_str(&input.text, input.files_format())
            .and_then(|c| c.build(&input.base_dir(), a.ranks))
            .map_err(|e| in_file(e.into()))?
            .machine
    } else {
        // standard input or a forced format: read as a file is (a host list, and no
        // keys is no machine), its errors naming `-` or the file
        let machine = copr_topology::machine_config(&input.text, input.files_format(), &a.file)
            .and_then(|c| c.build(&input.base_dir(), a.ranks))
            .map_err(|e| e.in_file(&a.file))?;
        Some(std::sync::Arc::new(machine))
    };
    let machine = machine.ok_or_else(|| copr::Error::Parse {
        path: a.file.clone(),
        detail: "this cost config has no topology to summarise".into(),
    })?;
    // a bar on a terminal when the summary takes more than a few seconds
    let mut bar: Option<indicatif::ProgressBar> = None;
    let terminal = std::io::stderr().is_terminal();
    let summary = machine.summary_with_progress(&mut |done, total| {
        if terminal && total > 50_000_000 {
            let b = bar.get_or_insert_with(|| {
                let b = indicatif::ProgressBar::new(total);
                b.set_style(
                    indicatif::ProgressStyle::with_template("{bar:30} {percent} % {msg}")
                        .expect("valid template"),
                );
                b.set_message("of the pair classes summed");
                b
            });
            b.set_position(done);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(path) = &a.svg {
        crate::plot::cost_heatmap(&machine, a.bytes, path)?;
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string(&summary).expect("summaries serialise")
        );
    } else {
        println!("{}", summary.to_string().trim_end());
        let transform = value
            .get("transform")
            .and_then(|t| serde_json::from_value::<copr_topology::TransformCosts>(t.clone()).ok());
        if let Some(t) = transform {
            println!(
                "transform [s/B over a copy]: scale {:.3e}  transpose {:.3e}  conjugate {:.3e}",
                t.scale, t.transpose, t.conjugate
            );
        }
        if let Some(path) = &a.svg {
            println!("heatmap: {} ({} B messages)", path.display(), a.bytes);
        }
    }
    Ok(())
}

/// A value's name as files and `--json` spell it (`sparse`, `row-major`), not Rust's.
fn word<T: serde::Serialize>(x: &T) -> String {
    match serde_json::to_value(x) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(v) => v.to_string(),
        Err(e) => format!("({e})"),
    }
}

/// `label` then `text`, broken at spaces into lines of at most 100 characters, the
/// later lines indented as far as the label.
fn wrapped(label: &str, text: &str) -> String {
    const WIDTH: usize = 100;
    let indent = " ".repeat(label.chars().count());
    let mut lines = vec![label.to_string()];
    for word in text.split(' ') {
        let last = lines.last_mut().expect("one line at least");
        let fresh = last.chars().count() == indent.len();
        if !fresh && last.chars().count() + 1 + word.chars().count() > WIDTH {
            lines.push(format!("{indent}{word}"));
        } else {
            if !fresh {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines.join("\n")
}

/// σ as `[s0, s1, …]`, cut so that the report's line (a 17-character label before
/// it) stays within 100 characters; the rest is counted and left to `--json`.
fn sigma_text(sigma: &[usize]) -> String {
    const WIDTH: usize = 100 - 17;
    let all = format!(
        "[{}]",
        sigma
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    if all.chars().count() <= WIDTH {
        return all;
    }
    let mut shown = String::from("[");
    for (k, x) in sigma.iter().enumerate() {
        let tail = format!(", … {} more; --json prints all]", sigma.len() - k);
        let next = if k == 0 {
            x.to_string()
        } else {
            format!(", {x}")
        };
        if shown.chars().count() + next.chars().count() + tail.chars().count() > WIDTH {
            return shown + &tail;
        }
        shown.push_str(&next);
    }
    shown + "]"
}

fn sweep(a: SweepArgs) -> Result<()> {
    let chart = sweep_chart_path(&a);
    let mut cfg: SweepConfig = match &a.config {
        Some(p) => Input::read(p, None)?.parse()?,
        None => SweepConfig::default(),
    };
    macro_rules! set {
        ($($f:ident),*) => { $( if let Some(v) = a.$f { cfg.$f = v.into(); } )* };
    }
    set!(
        m,
        n,
        nprow,
        npcol,
        target_block,
        source_order,
        target_order,
        blocks
    );
    if cfg.blocks.is_empty() {
        let field = a.config.as_ref().map_or("blocks".to_string(), |p| {
            format!("{}: field `blocks`", p.display())
        });
        return Err(copr::Error::Argument(format!(
            "{field}: an empty list: no block size to sweep (give at least one)"
        )));
    }
    let bar = if std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(cfg.blocks.len() as u64);
        b.set_message("block sizes");
        Some(b)
    } else {
        None
    };
    let tick = || {
        if let Some(b) = &bar {
            b.inc(1);
        }
    };
    let t0 = std::time::Instant::now();
    let rows = cfg.run(&tick)?;
    let elapsed = t0.elapsed().as_secs_f64();
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let costs = match &a.cost {
        Some(path) => Some(sweep_cost::price(&cfg, path)?),
        None => None,
    };
    if let Some(path) = &chart {
        crate::plot::sweep_chart(&rows, path)?;
    }
    if a.json {
        let text = match &costs {
            Some((_, c)) => serde_json::to_string(&sweep_cost::json_rows(&rows, c)),
            None => serde_json::to_string(&rows),
        };
        println!("{}", text.expect("rows serialise"));
        if let Some(path) = &chart {
            eprintln!("copr: wrote the chart {}", path.display());
        }
        return Ok(());
    }
    print_sweep(&cfg, &rows, elapsed);
    if let (Some((model, c)), Some(path)) = (&costs, &a.cost) {
        sweep_cost::print(model, units::cost_unit(path), c);
    }
    if let Some(path) = &chart {
        println!("chart: {}", path.display());
    }
    Ok(())
}

fn print_sweep(cfg: &SweepConfig, rows: &[SweepRow], elapsed: f64) {
    println!(
        "{} x {} matrix, {} x {} grids ({} -> {}), target block {}",
        cfg.m,
        cfg.n,
        cfg.nprow,
        cfg.npcol,
        word(&cfg.source_order),
        word(&cfg.target_order),
        cfg.target_block
    );
    println!(
        "{:>7} {:>16} {:>16} {:>16} {:>9} {:>9}",
        "block", "total", "remote before", "remote after", "exact %", "greedy %"
    );
    for r in rows {
        println!(
            "{:>7} {:>16} {:>16} {:>16} {:>9.2} {:>9.2}",
            r.block,
            r.total_elements,
            r.remote_before,
            r.remote_after,
            r.reduction_percent,
            r.greedy_reduction_percent
        );
    }
    println!("{} block sizes in {:.3} s", rows.len(), elapsed);
}
