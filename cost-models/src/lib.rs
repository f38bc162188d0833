//! copr-cost-models: the `CostModel` trait and the communication cost models.
