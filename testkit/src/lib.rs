//! Seeded inputs shared by copr's tests, benches and examples: random layouts and
//! small machines ([`layouts`]), and assignment-problem instances ([`lap`]).
//!
//! Not published: a dev-dependency of the workspace's crates, so that tests and
//! benches share these through a public API rather than by including each other's
//! files.

pub mod lap;
pub mod layouts;
