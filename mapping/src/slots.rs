//! Nodes with different slot counts: a machine whose node `k` has `c_k ≤ k_max` slots
//! is mapped as `nodes × k_max` slots, the missing ones (cores `c_k..k_max` of node
//! `k`) held by empty tasks of a padded pattern. [`fit_to_slots`] moves every task of
//! the job off a missing slot, so that the exports name only slots the nodes have;
//! [`fit_comparison`] then also refines the optimiser's mapping by swaps that keep the
//! job on those slots, and tries a dual bisection into them: the optimiser itself
//! sees every node with the most slots, so a job that fills the smaller nodes lost
//! up to half its hop-bytes to the fit (`benches/RESULTS.md`, "Other graphs and
//! machines").

use super::machine::MapMachine;
use super::multilevel;
use super::pattern::Pattern;
use super::swaps;
use crate::errors::MapError;
use copr::error::Result;
use copr::lap::Perm;

/// `map` (task → slot of `m`) with the job's tasks `0..ranks` on slots the nodes have:
/// a job task on a missing slot first trades places with an empty task on its own
/// node, then, where its node is over-full, with the empty task on a present slot of
/// the node that adds the least hop-bytes for it (ties: the lowest slot). Empty tasks
/// (`ranks..`) take the slots left over. A machine whose nodes all have every slot
/// returns `map` unchanged.
///
/// ```
/// use copr_mapping::{fit_to_slots, MapMachine, Pattern, Edge, Perm};
/// // 2 nodes, 2 and 1 slots: 4 slot positions, the last one missing
/// let m = MapMachine::flat(2, 2).unwrap().with_slot_counts(vec![2, 1]).unwrap();
/// let p = Pattern::from_edges(4, vec![Edge { src: 0, dst: 2, bytes: 10 }], "".into()).unwrap();
/// // task 2 was placed on slot 3, which node 1 does not have
/// let fixed = fit_to_slots(&p, &m, &Perm::from_forward(vec![0, 1, 3, 2]).unwrap(), 3).unwrap();
/// assert_eq!(fixed.forward(), [0, 1, 2, 3]);
/// assert!((0..3).all(|t| m.has_slot(fixed.apply(t))));
/// ```
///
/// # Errors
/// [`MapError`] if `map` is not over `m`'s slots or the job has more tasks
/// than the machine has slots.
///
/// # Complexity
/// `O(S + e)` plus, per task moved to another node, `O(nodes·deg)`.
pub fn fit_to_slots(p: &Pattern, m: &MapMachine, map: &Perm, ranks: usize) -> Result<Perm> {
    let slots = m.slots();
    if map.len() != slots || p.tasks() != slots {
        return Err(MapError::MappingSlots {
            tasks: map.len(),
            slots,
        }
        .into());
    }
    if ranks > m.used_slots() {
        return Err(MapError::TooFewSlots {
            tasks: ranks,
            slots: m.used_slots(),
            machine: m.description().to_string(),
        }
        .into());
    }
    if m.used_slots() == slots {
        return Ok(map.clone());
    }
    let rpn = m.ranks_per_node();
    let mut fwd = map.forward().to_vec();
    let mut inv = map.inverse().to_vec();
    let real = |t: usize| t < ranks;
    let present = |s: usize| s % rpn < m.slot_count(s / rpn);
    let swap = |fwd: &mut Vec<usize>, inv: &mut Vec<usize>, a: usize, b: usize| {
        let (sa, sb) = (fwd[a], fwd[b]);
        fwd.swap(a, b);
        inv[sa] = b;
        inv[sb] = a;
    };
    // within each node: job tasks on missing cores trade with empty tasks on present ones
    let mut homeless = Vec::new();
    for k in 0..m.nodes() {
        let base = k * rpn;
        let c = m.slot_count(k);
        let mut free: Vec<usize> = (base..base + c).filter(|&s| !real(inv[s])).collect();
        for s in base + c..base + rpn {
            let t = inv[s];
            if real(t) {
                match free.pop() {
                    Some(f) => {
                        let u = inv[f];
                        swap(&mut fwd, &mut inv, t, u);
                    }
                    None => homeless.push(t),
                }
            }
        }
    }
    if homeless.is_empty() {
        return Perm::from_forward(fwd);
    }
    // over-full nodes: each remaining task goes to the node adding the least hop-bytes
    let mut adj: std::collections::HashMap<usize, Vec<(usize, u64)>> =
        homeless.iter().map(|&t| (t, Vec::new())).collect();
    for e in p.edges() {
        let (a, b) = (e.src as usize, e.dst as usize);
        if let Some(v) = adj.get_mut(&a) {
            v.push((b, e.bytes));
        }
        if let Some(v) = adj.get_mut(&b) {
            v.push((a, e.bytes));
        }
    }
    for t in homeless {
        let mut best: Option<(u128, usize)> = None;
        for k in 0..m.nodes() {
            let base = k * rpn;
            let Some(f) = (base..base + m.slot_count(k)).find(|&s| !real(inv[s])) else {
                continue;
            };
            let cost: u128 = adj[&t]
                .iter()
                .map(|&(u, bytes)| u128::from(bytes) * u128::from(m.hops(k, fwd[u] / rpn)))
                .sum();
            if best.is_none_or(|(c, _)| cost < c) {
                best = Some((cost, f));
            }
        }
        let (_, f) = best.ok_or(MapError::Internal {
            what: "fit_to_slots: no present slot left (counted above)",
        })?;
        let u = inv[f];
        swap(&mut fwd, &mut inv, t, u);
    }
    debug_assert!((0..ranks).all(|t| present(fwd[t])));
    Perm::from_forward(fwd)
}

/// [`fit_to_slots`] for every row of a comparison of a job of `ranks` tasks (each row
/// rescored); the optimiser's row keeps the best mapping of all rows after fitting.
/// Where the nodes have different slot counts, the optimiser's row also takes the
/// first of these that is better on hop-bytes or the busiest link and no worse on the
/// other: its fitted mapping refined by swaps that keep the job's tasks on slots the
/// nodes have (lowering the bandwidth-weighted hop-bytes, raising no link above the
/// busiest), and a dual recursive bisection of the job's tasks into the nodes' own
/// slot counts (each part split in proportion to the slots of its halves; up to 2048
/// tasks both with and without external gains), refined the same way and then
/// balanced towards the first's hop-bytes and busiest link by random swaps that keep
/// the job on those slots. A fixed amount of work (seed 1, at most 20 passes of swaps
/// and `min(40·tasks, 60 000)` balancing tries each), whatever the budget.
///
/// # Errors
/// As [`fit_to_slots`].
pub fn fit_comparison(
    cmp: &mut super::report::Comparison,
    p: &Pattern,
    m: &MapMachine,
    ranks: usize,
) -> Result<()> {
    if m.used_slots() == m.slots() {
        return Ok(());
    }
    for row in &mut cmp.rows {
        row.map = fit_to_slots(p, m, &row.map, ranks)?;
        row.metrics = super::metrics::evaluate(p, m, &row.map);
    }
    let key = |r: &super::report::Row| (r.metrics.hop_bytes, r.metrics.max_link_time);
    let Some(opt) = cmp.rows.iter().position(|r| r.strategy == "optimised") else {
        return Ok(());
    };
    let better = |a: &super::report::Row, b: &super::report::Row| {
        let (ha, ta) = key(a);
        let (hb, tb) = key(b);
        ha <= hb && ta <= tb && (ha < hb || ta < tb)
    };
    // the optimiser mapped onto every node's full slots: its mapping, fitted, and a
    // dual bisection into the slots the nodes have, each refined by swaps that keep
    // the job's tasks on those slots and no link above its busiest
    let o = &cmp.rows[opt];
    let mut found = vec![(
        within_slots(p, m, o.map.clone(), ranks),
        format!(
            "{} + swaps within the nodes' slots",
            o.origin.as_deref().unwrap_or("optimised")
        ),
    )];
    let counts: Vec<usize> = (0..m.nodes()).map(|k| m.slot_count(k)).collect();
    let far = crate::clock::now() + std::time::Duration::from_secs(86_400);
    // small jobs: with external gains (each part biased towards its outside
    // neighbours), and each part on its own; larger ones: the multilevel mapper's effort
    let efforts = if p.tasks() <= 2048 {
        vec![
            ("external gains", multilevel::EXTERNAL),
            ("", multilevel::CLASSIC),
        ]
    } else {
        vec![("", multilevel::effort_for(p))]
    };
    // what every bisection's balancing aims at and where it may put tasks: the same
    // for each effort
    let targets = {
        let o = super::metrics::evaluate(p, m, &found[0].0);
        (o.hop_bytes, o.max_link_time)
    };
    let allowed: Vec<bool> = (0..m.slots()).map(|s| m.has_slot(s)).collect();
    for (what, effort) in efforts {
        let within = Some((&counts[..], ranks));
        let rng = &mut copr::rng::SplitMix(1);
        if let Some(map) = multilevel::dual_bisection_within(p, m, rng, (far, effort), within) {
            let map = fit_to_slots(p, m, &map, ranks)?;
            let how = if what.is_empty() {
                String::new()
            } else {
                format!(", {what}")
            };
            let mut map = within_slots(p, m, map, ranks);
            // balancing swaps towards the optimiser's hop-bytes and busiest link (the
            // bisection often has fewer hop-bytes and a busier link)
            let tries = (40 * p.tasks()).min(60_000);
            let rng = &mut copr::rng::SplitMix(1);
            let allowed = allowed.clone();
            swaps::balance_within_slots(
                p,
                m,
                &mut map,
                targets,
                (allowed, ranks),
                (rng, tries),
                far,
            );
            // (the balancing swaps keep the job on those slots; fitted again should one not)
            let map = fit_to_slots(p, m, &map, ranks)?;
            found.push((
                map,
                format!("dual bisection into the nodes' slots{how} + swaps within them"),
            ));
        }
    }
    for (map, origin) in found {
        let metrics = super::metrics::evaluate(p, m, &map);
        let row = super::report::Row {
            strategy: "optimised".into(),
            metrics,
            seconds: cmp.rows[opt].seconds,
            origin: Some(origin),
            map,
        };
        if better(&row, &cmp.rows[opt]) {
            cmp.rows[opt] = row;
        }
    }
    if let Some(k) = (0..cmp.rows.len()).find(|&k| k != opt && better(&cmp.rows[k], &cmp.rows[opt]))
    {
        let (map, metrics, origin) = (
            cmp.rows[k].map.clone(),
            cmp.rows[k].metrics.clone(),
            cmp.rows[k].strategy.clone(),
        );
        let o = &mut cmp.rows[opt];
        (o.map, o.metrics, o.origin) = (map, metrics, Some(origin));
    }
    let o = &cmp.rows[opt];
    cmp.optimiser_dominates = Some(
        cmp.rows
            .iter()
            .all(|r| key(o).0 <= key(r).0 && key(o).1 <= key(r).1),
    );
    Ok(())
}

/// `map` (the job's tasks `0..ranks` on slots the nodes have) refined by swaps that
/// lower the bandwidth-weighted hop-bytes, raise no link above the busiest one, and
/// keep the job's tasks on slots the nodes have (20 passes at most).
fn within_slots(p: &Pattern, m: &MapMachine, mut map: Perm, ranks: usize) -> Perm {
    let rpn = m.ranks_per_node();
    let present = |s: usize| s % rpn < m.slot_count(s / rpn);
    let allow =
        |[u, su, x, sx]: [usize; 4]| (u >= ranks || present(sx)) && (x >= ranks || present(su));
    let far = crate::clock::now() + std::time::Duration::from_secs(86_400);
    let mut rng = copr::rng::SplitMix(1);
    swaps::refine_within_if(p, m, &mut map, (0.0, allow), &mut rng, far, 20);
    debug_assert!((0..ranks).all(|t| present(map.apply(t))));
    map
}
