//! How `copr calibrate` spends its `--budget`: a plan of phases, each with its share
//! of the budget and a deadline (seconds from the start). A phase's steps run while
//! rank 0's clock is before the phase's deadline; time a phase leaves unused passes
//! to the next. What a phase must measure at least (one pair per class, one trial,
//! f64 first) is fixed work whose size depends on neither the budget nor the number
//! of ranks. The one part that grows with the number of ranks, planning the
//! validation cases, is cut by estimates (`cases.rs`), so a run ends by the budget
//! plus that fixed work, one validation case of the smallest size and one warm-up
//! run (see the README, "Calibrating a machine").

use serde::Serialize;

/// One phase of the plan.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    /// The phase's name (one of the constants below).
    pub name: &'static str,
    /// Seconds of the budget given to this phase.
    pub seconds: f64,
    /// Seconds from the start by which the phase stops starting new steps.
    pub until: f64,
}

/// The phases with their shares and deadlines.
#[derive(Debug, Clone, Serialize)]
pub struct PhasePlan {
    /// The whole budget, seconds.
    pub budget: f64,
    /// Rank pairs the ping-pong phase samples (at most a fixed number per class).
    pub pairs: usize,
    /// The ping-pong phase's seconds per sampled pair.
    pub seconds_per_pair: f64,
    /// The phases, in order.
    pub phases: Vec<Phase>,
}

/// The largest `--budget`, seconds (one day). Every phase's work is finite (the
/// sampled pairs, the ladder of sizes, the 15 validation cases and their rounds), so
/// a larger budget changes nothing but the deadlines it prints; a value above this is
/// taken for a mistake (a unit slip, `1e300`) and refused.
pub const MAX_BUDGET: f64 = 86_400.0;

/// Phase names, in order.
pub const PAIRS: &str = "ping-pong pairs";
/// The phase that measures injection and the shared-memory window.
pub const NODE_PATHS: &str = "injection + shared window";
/// The phase that times the local kernels.
pub const LOCAL: &str = "local kernels";
/// The phase that times real reshuffles against the model.
pub const VALIDATION: &str = "validation";
/// The phase that writes the config and loads it back.
pub const WRITING: &str = "writing + loading";

impl PhasePlan {
    /// The plan for `budget` seconds and `pairs` sampled pairs; `validate` says
    /// whether a validation phase is wanted (without it, its share goes to the
    /// ping-pong phase).
    ///
    /// The shares: ping-pong 30 %, node paths 10 %, local kernels 10 %,
    /// validation 45 %, writing 5 %.
    pub fn new(budget: f64, pairs: usize, validate: bool) -> Self {
        let mut shares = vec![
            (PAIRS, 0.30),
            (NODE_PATHS, 0.10),
            (LOCAL, 0.10),
            (VALIDATION, 0.45),
            (WRITING, 0.05),
        ];
        if !validate {
            shares.retain(|s| s.0 != VALIDATION);
            shares[0].1 += 0.45;
        }
        let mut until = 0.0;
        let phases: Vec<Phase> = shares
            .into_iter()
            .map(|(name, share)| {
                let seconds = share * budget;
                until += seconds;
                Phase {
                    name,
                    seconds,
                    until,
                }
            })
            .collect();
        let pair_seconds = phases[0].seconds;
        Self {
            budget,
            pairs,
            seconds_per_pair: pair_seconds / pairs.max(1) as f64,
            phases,
        }
    }

    /// The deadline of the phase named `name` (the budget if there is no such phase).
    pub fn until(&self, name: &str) -> f64 {
        self.phases
            .iter()
            .find(|p| p.name == name)
            .map_or(self.budget, |p| p.until)
    }

    /// One line per phase.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .phases
            .iter()
            .map(|p| format!("{} {:.1} s", p.name, p.seconds))
            .collect();
        format!(
            "plan: {} ({} pairs, {:.2} s each)",
            parts.join(", "),
            self.pairs,
            self.seconds_per_pair
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::classes::{sample_pairs, RankMap, MAX_PAIRS_PER_CLASS};
    use super::*;

    fn map(nodes: usize, per_node: usize) -> RankMap {
        let p = nodes * per_node;
        let tree = copr_topology::NodeTree::from_shape(
            "pack:2 l3:4 core:4",
            &copr_topology::LevelCosts::default(),
        )
        .expect("shape");
        RankMap {
            node_names: (0..nodes).map(|n| format!("n{n}")).collect(),
            node: (0..p).map(|r| r / per_node).collect(),
            pu: (0..p).map(|r| Some(r % per_node)).collect(),
            emulated: false,
            tree: Some(tree),
        }
    }

    /// The plan at 1024 ranks (32 nodes of 32 bound ranks) under the default budget:
    /// deadlines within the budget, a pair count capped independently of p, so the
    /// seconds per pair do not shrink as p grows.
    #[test]
    fn plan_for_1024_ranks_is_bounded_by_the_budget() {
        let default_budget = 40.0;
        let mut per_pair = Vec::new();
        for (nodes, per_node) in [(2, 2), (4, 4), (32, 32), (64, 16)] {
            let m = map(nodes, per_node);
            let pairs = sample_pairs(&m, 0x636f7072).len();
            assert!(pairs <= 4 * MAX_PAIRS_PER_CLASS, "{pairs} pairs");
            let plan = PhasePlan::new(default_budget, pairs, true);
            println!("p = {}: {}", nodes * per_node, plan.describe());
            let last = plan.phases.last().expect("phases");
            assert!((last.until - default_budget).abs() < 1e-9);
            assert!(plan
                .phases
                .windows(2)
                .all(|w| w[0].until <= w[1].until && w[0].seconds > 0.0));
            assert!(plan.until(VALIDATION) < default_budget);
            per_pair.push(plan.seconds_per_pair);
        }
        // at 1024 ranks every sampled pair still has about 0.19 s (12 s over at
        // most 64 pairs), however many ranks there are
        assert!(per_pair[2] >= 0.18 && per_pair[3] >= 0.18, "{per_pair:?}");
        let no_validation = PhasePlan::new(10.0, 48, false);
        assert!(no_validation.phases.iter().all(|p| p.name != VALIDATION));
        assert!((no_validation.phases[0].seconds - 7.5).abs() < 1e-9);
        assert_eq!(no_validation.until(VALIDATION), 10.0);
    }
}
