//! copr finds and applies a communication-optimal process relabeling (COPR) for MPI
//! programs: from two data layouts it computes what every rank sends every other rank,
//! prices it, and solves the linear assignment problem exactly for the relabeling σ.

pub mod engine;
pub mod error;
pub mod gain;
pub mod lap;
pub mod sparse;

pub use error::{Error, Result};
pub mod cli;
pub mod layout;
pub mod mapping;
pub mod plan;
pub mod plot;
pub mod sweep;
pub mod transport;
pub mod volume;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
