//! Sample efficiency of the search strategies on the benchmark hub's recorded spaces, against
//! the targets of `docs/search.md`: the model-based strategy must beat Kernel Tuner 1.5.0's
//! strategies. The figures are printed (`cargo test --test search_efficiency -- --nocapture`).
//!
//! Medians are over seeds 0..20, as the issue states the targets. They sit close to the edge:
//! only two convolution configurations lie within 1.10× of the optimum, and 13 of the 20 runs
//! find one (about 65% over 300 seeds), so three runs changing their outcome would fail the
//! assertion; dedispersion's median is 8.5 with 12 of the 20 runs within 10 evaluations (about
//! 49% over 300 seeds, where the median is 11). `docs/search.md` gives the wider figures.
//! Dedispersion's runs stop after 10 evaluations, all its assertion needs.

use std::path::PathBuf;

use cutune::gpu::replay::ReplayRunner;
use cutune::search::efficiency::{measure_efficiency, render_markdown, EfficiencySettings, SpaceEfficiency, StrategyEfficiency};
use cutune::search::StrategyName;

const SEEDS: u64 = 20;

fn measure(name: &str, settings: &EfficiencySettings) -> SpaceEfficiency {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/replay").join(name);
    let mut runner = ReplayRunner::from_t4(&path).unwrap();
    let report = measure_efficiency(&mut runner, settings).unwrap();
    println!("{}", render_markdown(std::slice::from_ref(&report), settings));
    report
}

fn strategy(space: &SpaceEfficiency, name: StrategyName) -> &StrategyEfficiency {
    space.strategies.iter().find(|s| s.strategy == name).unwrap()
}

#[test]
fn on_convolution_the_model_comes_within_10_percent_in_100_evaluations() {
    let settings = EfficiencySettings { seeds: SEEDS, ..EfficiencySettings::default() };
    let convolution = measure("convolution_milo_A100_T4.json.gz", &settings);

    // Kernel Tuner 1.5.0: 1.158× (bayes_opt), 1.165× (genetic), 1.437× (random).
    let model = strategy(&convolution, StrategyName::Model).median_ratio;
    assert!(model <= 1.10, "model: {model:.3}× the optimum after 100 evaluations");
    // Random sampling matches Kernel Tuner's figure for it, and every guided strategy beats it.
    let random = strategy(&convolution, StrategyName::Random).median_ratio;
    assert!((1.3..1.6).contains(&random), "random: {random:.3}×");
    for guided in [StrategyName::Annealing, StrategyName::Genetic, StrategyName::Model] {
        let ratio = strategy(&convolution, guided).median_ratio;
        assert!(ratio < random, "{guided}: {ratio:.3}× is no better than random's {random:.3}×");
    }
}

#[test]
fn on_dedispersion_the_model_comes_within_1_percent_in_10_evaluations() {
    let settings = EfficiencySettings {
        strategies: vec![StrategyName::Random, StrategyName::Model],
        seeds: SEEDS,
        budget: 10,
        ..EfficiencySettings::default()
    };
    let dedispersion = measure("dedispersion_milo_A100_T4.json.gz", &settings);

    // Kernel Tuner's best strategies need 16 to 21 evaluations; random sampling about 23.
    let model = strategy(&dedispersion, StrategyName::Model).median_evaluations_to_optimum;
    assert!(model.is_some_and(|e| e <= 10.0), "model: {model:?} evaluations to come within 1%");
    let random = strategy(&dedispersion, StrategyName::Random).median_evaluations_to_optimum;
    assert_eq!(random, None, "random sampling came within 1% in {random:?} evaluations");
}
