//! `libcopr_interpose.so`: an `LD_PRELOAD`-able library through which an unmodified MPI
//! program's `MPI_Cart_create(…, reorder = 1, …)` returns a communicator reordered by
//! copr's process mapper for the machine the job runs on (MPI libraries return the
//! launcher's order: Open MPI, MPICH and Intel MPI do not reorder).
//!
//! ```text
//! mpirun -x LD_PRELOAD=/path/to/libcopr_interpose.so -n 64 ./app
//! ```
//!
//! The machine comes from the environment (copr's `MachineSource::from_env`): a
//! machine file named by `COPR_MACHINE` (as `copr map --machine` reads; the ranks on
//! the nodes they run on when it names their hosts, else on its slots in order, a file
//! with more slots than ranks keeping the last ones empty), a placement file named by `COPR_PLACEMENT` (`rank node` lines for the ranks
//! of `MPI_COMM_WORLD`), `COPR_EMULATE_NODE_SIZE=k` (`k` consecutive ranks of
//! `MPI_COMM_WORLD` per node, to try it on one host; or counts per node, `3,2,1`), or
//! else the nodes the ranks run on (`MPI_Comm_split_type`, shared memory). Nodes may
//! run different numbers of ranks. Inside found or emulated nodes,
//! when built with the feature `hwloc` and every rank is bound to its own PU
//! (`mpirun --bind-to core`), the ranks take their node's slots in PU order and the
//! machine gets hwloc's tree of those PUs, so that the mapping keeps neighbours in a
//! package or cache; otherwise the nodes are flat, and the log says why. Every grid
//! message weighs the
//! same (1 MiB). Rank 0 of the communicator runs copr's baselines and optimiser (as
//! `copr map` does) and broadcasts the mapping; no process gathers more than a few
//! integers per rank.
//!
//! It never breaks a program: with `reorder = 0`, a grid of more than 3 dimensions or
//! with fewer positions than ranks, an inter-communicator, a mapping no better than the
//! present order, or any error, the call is `PMPI_Cart_create` with the program's own
//! arguments. Calls made while it is at work (copr's own) go straight to PMPI.
//!
//! `MPI_Dist_graph_create_adjacent(…, reorder = 1, …)` is taken the same way (see the
//! module `dist_graph`): the out-edges are gathered on rank 0 (two integers per edge),
//! the graph is mapped, and each vertex's neighbour lists go to the process that holds
//! it in the new order.
//!
//! Whenever reordering falls back because of an error (a missing or malformed machine
//! or placement file, a bad `COPR_EMULATE_NODE_SIZE`, a plan that failed), the first
//! process of the communicator says so in one line on standard error, whatever the
//! log setting.
//!
//! `COPR_INTERPOSE_LOG=1` (or `stderr`) prints what it decided on standard error from
//! rank 0 of each communicator; any other value except `0` is a file the lines are
//! appended to: the grid, the machine and what is known inside its nodes, the
//! predicted hop-bytes and off-node share
//! before and after, and the new order.
//!
//! `COPR_RECORD=traffic.txt` records the program's traffic (module `record`): the
//! messages and bytes each process sends to each other, written at `MPI_Finalize` as a
//! graph `copr map --graph traffic.txt` reads, with each rank's host.
//!
//! With `COPR_GRAPH=traffic.txt` (a recording), the two reorders map the recorded
//! traffic among the communicator's processes instead of uniform grid messages or the
//! graph's weights (module `recorded`).
//!
//! Without the feature `mpi` the library is empty.
//!
//! # Open MPI and MPICH
//! The library is built against the MPI library rsmpi's build finds (`mpicc -show`, or
//! the compiler named by `MPICC`, or the pkg-config file named by `MPI_PKG_CONFIG`),
//! and preloads only into programs of that library's ABI: Open MPI's handles are
//! pointers, MPICH's (and those of Intel MPI, Cray MPICH and MVAPICH, which keep its
//! ABI) are `int`s. For MPICH, in a target directory of its own (rsmpi's build script
//! does not run again when `MPICC` changes):
//!
//! ```text
//! MPICC=mpicc.mpich CARGO_TARGET_DIR=target/mpich \
//!     cargo build --release -p copr-interpose --features mpi
//! mpiexec.mpich -genv LD_PRELOAD $PWD/target/mpich/release/libcopr_interpose.so \
//!     -genv COPR_RECORD traffic.txt -n 8 ./app
//! ```
//!
//! The constants that differ and rsmpi does not export (`MPI_IN_PLACE`,
//! `MPI_WEIGHTS_EMPTY`) follow the ABI built against. MPICH's Fortran bindings call
//! the C entry points, Open MPI's call `PMPI_*`: a Fortran call is counted once either
//! way (module `record`). `scripts/mpich-tests.sh` runs the C and Fortran tests under
//! Debian's MPICH 4.0.2 (`mpiexec.mpich`, one host) and requires each recording to
//! equal Open MPI's of the same program and arguments but for the `# host` lines; it
//! says "skipped: no MPICH" where MPICH is not installed.

#[cfg(feature = "mpi")]
mod abi;
#[cfg(feature = "mpi")]
pub mod cart;
#[cfg(feature = "mpi")]
pub mod dist_graph;
#[cfg(feature = "mpi")]
mod log;
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub mod record;
#[cfg(feature = "mpi")]
mod recorded;
