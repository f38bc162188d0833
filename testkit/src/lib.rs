//! Seeded inputs shared by copr's tests, benches and examples: random layouts and
//! small machines ([`layouts`]), assignment-problem instances ([`lap`]), the mapping
//! benchmark's graphs ([`graphs`]) and its peer mapper, Scotch ([`scotch`]); the module
//! graph the architecture tests check ([`modules`]).
//!
//! Not published: a dev-dependency of the workspace's crates, so that tests and
//! benches share these through a public API rather than by including each other's
//! files.

pub mod graphs;
pub mod lap;
pub mod layouts;
pub mod modules;
pub mod scotch;
