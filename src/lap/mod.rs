//! Linear assignment: exact solvers for the process relabeling σ.

mod perm;

pub use perm::Perm;
