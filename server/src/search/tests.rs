use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::domain::{Domain, MixedRadix};
use super::*;

/// A synthetic space: `sizes` values per parameter (value = index), infeasible where the index
/// sum is divisible by `forbid_every` (when not 0). The objective is a bowl with its minimum 1.0
/// at `optimum`, plus a ripple so that it is not separable.
struct Bowl {
    params: Vec<(String, Vec<i64>)>,
    forbid_every: usize,
    optimum: Vec<usize>,
}

impl Bowl {
    fn new(sizes: &[usize], forbid_every: usize, optimum: &[usize]) -> Arc<Bowl> {
        let params = sizes.iter().enumerate().map(|(i, &n)| (format!("p{i}"), (0..n as i64).collect())).collect();
        Arc::new(Bowl { params, forbid_every, optimum: optimum.to_vec() })
    }

    fn objective(&self, point: &[usize]) -> f64 {
        let distance: f64 = point.iter().zip(&self.optimum).map(|(&a, &b)| (a as f64 - b as f64).powi(2)).sum();
        let ripple = ((point.iter().sum::<usize>() % 3) as f64) * 0.05;
        1.0 + distance * 0.1 + if distance > 0.0 { ripple } else { 0.0 }
    }
}

impl SearchSpace for Bowl {
    fn params(&self) -> &[(String, Vec<i64>)] {
        &self.params
    }

    fn is_feasible(&self, point: &[usize]) -> bool {
        self.forbid_every == 0 || point.iter().sum::<usize>() % self.forbid_every != 0
    }
}

/// Drives `strategy` for up to `evaluations` points, `batch` at a time; every point with an
/// index sum divisible by 7 fails. Returns the points in the order they were asked.
fn drive(strategy: &mut dyn Strategy, space: &Bowl, evaluations: usize, batch: usize) -> Vec<Point> {
    let mut asked = Vec::new();
    while asked.len() < evaluations {
        let points = strategy.ask(batch.min(evaluations - asked.len()));
        if points.is_empty() {
            break;
        }
        for p in points {
            let failed = p.iter().sum::<usize>() % 7 == 0;
            strategy.tell(&p, if failed { None } else { Some(space.objective(&p)) });
            asked.push(p);
        }
    }
    asked
}

#[test]
fn every_strategy_repeats_itself_for_a_seed_and_never_proposes_twice_or_infeasibly() {
    let space = Bowl::new(&[6, 5, 4, 3], 5, &[4, 1, 2, 0]);
    for name in StrategyName::ALL {
        for batch in [1, 4] {
            let a = drive(new_strategy(name, space.clone(), 3).as_mut(), &space, 120, batch);
            let b = drive(new_strategy(name, space.clone(), 3).as_mut(), &space, 120, batch);
            assert_eq!(a, b, "{name} (batch {batch}) is not deterministic");
            assert_eq!(a.iter().collect::<HashSet<_>>().len(), a.len(), "{name} (batch {batch}) proposed a point twice");
            assert!(a.iter().all(|p| space.is_feasible(p)), "{name} (batch {batch}) proposed an infeasible point");
            assert!(a.len() >= 100, "{name} (batch {batch}) stopped after {} points", a.len());
        }
    }
    let seeded = [StrategyName::Random, StrategyName::Annealing, StrategyName::Genetic, StrategyName::Model];
    for name in seeded {
        let a = drive(new_strategy(name, space.clone(), 1).as_mut(), &space, 30, 1);
        let b = drive(new_strategy(name, space.clone(), 2).as_mut(), &space, 30, 1);
        assert_ne!(a, b, "{name} ignores its seed");
    }
}

#[test]
fn strategies_exhaust_a_small_space_exactly_once() {
    let space = Bowl::new(&[3, 4, 2], 4, &[1, 1, 1]);
    let feasible = MixedRadix::new(&[3, 4, 2]).filter(|p| space.is_feasible(p)).count();
    for name in StrategyName::ALL {
        let asked = drive(new_strategy(name, space.clone(), 0).as_mut(), &space, 1000, 3);
        assert_eq!(asked.len(), feasible, "{name}");
    }
}

#[test]
fn brute_force_follows_mixed_radix_order_in_batches() {
    let space = Bowl::new(&[2, 3], 0, &[0, 0]);
    let mut strategy = new_strategy(StrategyName::BruteForce, space.clone(), 9);
    assert_eq!(strategy.ask(4), vec![vec![0, 0], vec![0, 1], vec![0, 2], vec![1, 0]]);
    assert_eq!(strategy.ask(4), vec![vec![1, 1], vec![1, 2]]);
    assert!(strategy.ask(4).is_empty());
}

#[test]
fn large_spaces_are_sampled_without_listing_them() {
    // 40^6 = 4.1e9 points: far beyond the listing limit.
    let space = Bowl::new(&[40; 6], 3, &[20; 6]);
    let domain = Domain::new(space.clone());
    let mut rng = crate::space::SplitMix64::new(5);
    let point = domain.random_open(&mut rng).unwrap();
    assert!(space.is_feasible(&point));
    for name in StrategyName::ALL {
        let asked = drive(new_strategy(name, space.clone(), 0).as_mut(), &space, 40, 8);
        assert_eq!(asked.len(), 40, "{name}");
    }
}

/// The best objective each strategy reaches on the bowl within `evaluations`, median of 5 seeds.
fn median_best(name: StrategyName, space: &Arc<Bowl>, evaluations: usize) -> f64 {
    let bests: Vec<f64> = (0..5)
        .map(|seed| {
            let asked = drive(new_strategy(name, space.clone(), seed).as_mut(), space, evaluations, 1);
            asked.iter().filter(|p| p.iter().sum::<usize>() % 7 != 0).map(|p| space.objective(p)).fold(f64::INFINITY, f64::min)
        })
        .collect();
    efficiency::median(bests).unwrap()
}

#[test]
fn guided_strategies_find_the_bowls_optimum_sooner_than_random() {
    // 10 * 10 * 10 * 10 = 10,000 points, the optimum at an index sum of 15 (feasible).
    let space = Bowl::new(&[10, 10, 10, 10], 0, &[7, 2, 5, 1]);
    let random = median_best(StrategyName::Random, &space, 150);
    for name in [StrategyName::Annealing, StrategyName::Genetic, StrategyName::Model] {
        let best = median_best(name, &space, 150);
        assert!(best < random, "{name}: {best} is no better than random's {random}");
        assert!(best <= 1.1, "{name} ended at {best}, far from the optimum 1.0");
    }
    assert_eq!(median_best(StrategyName::Model, &space, 150), 1.0);
}

fn search_over(space: &Arc<Bowl>, limits: Limits) -> Search {
    Search::new(new_strategy(StrategyName::Random, space.clone(), 0), limits)
}

/// Records every point of each batch with `objective`, until the search hands out none.
fn run(search: &mut Search, batch: usize, objective: impl Fn(&[usize]) -> Option<f64>) {
    loop {
        let points = search.next(batch);
        if points.is_empty() {
            return;
        }
        for p in points {
            search.record(&p, objective(&p));
        }
    }
}

#[test]
fn the_evaluation_budget_counts_failures_and_caps_batches() {
    let space = Bowl::new(&[10, 10], 0, &[3, 3]);
    let mut search = search_over(&space, Limits { max_evaluations: Some(10), ..Limits::default() });
    let mut outstanding = search.next(8);
    assert_eq!(outstanding.len(), 8);
    outstanding.extend(search.next(8));
    assert_eq!(outstanding.len(), 10, "only two evaluations are left while eight are outstanding");
    assert!(search.next(8).is_empty());
    assert_eq!(search.stop_reason(), None);
    for p in &outstanding {
        search.record(p, None);
    }
    assert_eq!(search.evaluations(), 10);
    assert_eq!(search.best(), None);
    assert_eq!(search.stop_reason(), Some(StopReason::Budget { evaluations: 10 }));

    let mut search = search_over(&space, Limits { max_evaluations: Some(10), ..Limits::default() });
    run(&mut search, 4, |p| (p[0] % 2 == 0).then_some(1.0 + p[0] as f64));
    assert_eq!(search.evaluations(), 10);
    assert_eq!(search.stop_reason().unwrap().to_string(), "budget of 10 evaluations used");
}

#[test]
fn stop_rules_say_why() {
    let space = Bowl::new(&[10, 10], 0, &[3, 3]);

    let mut search = search_over(&space, Limits { patience: Some(5), ..Limits::default() });
    run(&mut search, 1, |_| Some(2.0));
    assert_eq!(search.evaluations(), 6, "the first point improves, five more do not");
    assert_eq!(search.stop_reason().unwrap().to_string(), "no improvement in 5 evaluations");

    let mut search = search_over(&space, Limits { target: Some(1.0), ..Limits::default() });
    run(&mut search, 3, |p| Some(space.objective(p)));
    assert_eq!(search.stop_reason(), Some(StopReason::TargetReached));
    assert_eq!(search.best().unwrap().1, 1.0);
    assert_eq!(search.best().unwrap().0, vec![3, 3]);

    let mut search = search_over(&space, Limits { max_time: Some(Duration::ZERO), ..Limits::default() });
    assert!(search.next(4).is_empty());
    assert_eq!(search.stop_reason().unwrap().to_string(), "time limit of 0 s reached");
    assert_eq!(StopReason::TimeLimit { limit: Duration::from_secs(60) }.to_string(), "time limit of 60 s reached");

    let hook: StopHook = Box::new(|best| (best < 1.5).then(|| format!("within 50% of the speed of light at {best}")));
    let mut search = search_over(&space, Limits::default()).with_hook(hook);
    run(&mut search, 2, |p| Some(space.objective(p)));
    let reason = search.stop_reason().unwrap().to_string();
    assert!(reason.starts_with("within 50% of the speed of light at 1."), "{reason}");

    let small = Bowl::new(&[2, 2], 0, &[0, 0]);
    let mut search = search_over(&small, Limits { max_evaluations: Some(100), ..Limits::default() });
    run(&mut search, 3, |p| Some(small.objective(p)));
    assert_eq!(search.evaluations(), 4);
    assert_eq!(search.stop_reason().unwrap().to_string(), "space exhausted");
}

#[test]
fn a_space_too_large_to_list_that_draws_meet_nothing_in_is_not_called_exhausted() {
    // 262,144 points, above the listing limit, none feasible.
    let nothing_feasible = Bowl::new(&[64, 64, 64], 1, &[0, 0, 0]);
    for name in StrategyName::ALL {
        let mut search = Search::new(new_strategy(name, nothing_feasible.clone(), 0), Limits::default());
        assert!(search.next(4).is_empty(), "{name:?}");
        let reason = search.stop_reason().unwrap().to_string();
        match name {
            // Brute force walks every point: it knows none is left.
            StrategyName::BruteForce => assert_eq!(reason, "space exhausted"),
            _ => assert_eq!(reason, "10000 random draws met no feasible configuration not tried yet (the space is too large to list; its restrictions leave few)", "{name:?}"),
        }
    }
}

#[test]
fn records_of_points_not_handed_out_are_ignored() {
    let space = Bowl::new(&[10, 10], 0, &[3, 3]);
    let mut search = search_over(&space, Limits::default());
    let points = search.next(1);
    search.record(&[9, 9], Some(0.5));
    search.record(&points[0], Some(4.0));
    search.record(&points[0], Some(0.1));
    assert_eq!(search.evaluations(), 1);
    assert_eq!(search.best(), Some((points[0].clone(), 4.0)));
}

#[test]
fn strategy_names_round_trip() {
    for name in StrategyName::ALL {
        assert_eq!(name.to_string().parse::<StrategyName>(), Ok(name));
        assert_eq!(serde_json::to_string(&name).unwrap(), format!("\"{name}\""));
        assert_eq!(<StrategyName as clap::ValueEnum>::from_str(name.as_str(), false), Ok(name));
    }
    assert_eq!("brute-force".parse::<StrategyName>(), Ok(StrategyName::BruteForce));
    let error = "bayes".parse::<StrategyName>().unwrap_err();
    assert_eq!(error, "unknown search strategy `bayes`; expected one of brute-force, random, annealing, genetic, model");
}
