//! copr-topology: where ranks live and what moving bytes between two ranks costs.
