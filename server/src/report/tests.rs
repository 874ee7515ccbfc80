use super::*;
use crate::gpu::{FailureKind, Verdict};
use crate::space::Configuration;
use crate::tune::results::tests::{evaluation, measured, results};
use crate::verify::{CaseResult, Finding, Skipped};

fn pass() -> Verdict {
    Verdict::Pass { max_abs_error: 0.0, max_rel_error: 0.0 }
}

/// The fixture's evaluations in the order a search might have measured them.
fn in_order() -> Vec<Evaluation> {
    vec![
        evaluation(128, measured(80.0, pass())),
        evaluation(2048, Outcome::Failed { kind: FailureKind::Infeasible, message: "too many threads".into() }),
        evaluation(64, measured(40.0, Verdict::Mismatch { problem: 0, arg: "out".into(), index: 7, expected: 1.5, actual: 0.0, mismatches: 3, max_abs_error: 1.5, max_rel_error: 1.0, unwritten: 0, not_finite: 0 })),
        evaluation(256, measured(50.0, pass())),
        evaluation(512, measured(60.0, pass())),
    ]
}

fn case(stage: Stage, label: &str, status: CaseStatus) -> CaseResult {
    CaseResult { stage, label: label.into(), status, seconds: 0.1 }
}

#[test]
fn best_so_far_follows_correct_evaluations_only() {
    let report = TuningReport::of(&results(), &in_order());
    let best: Vec<Option<f64>> = report.evaluations.iter().map(|e| e.best_so_far_us).collect();
    // The wrong 40 µs configuration and the one that could not run do not lower it.
    assert_eq!(best, [Some(80.0), Some(80.0), Some(80.0), Some(50.0), Some(50.0)]);
    assert_eq!(report.evaluations.iter().map(|e| e.number).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    assert_eq!(report.evaluations[1].time_us, None);
    assert!(!report.evaluations[2].correct && report.evaluations[2].status.contains("wrong at 7"));
    assert_eq!(report.params, ["BLOCK"]);
    assert_eq!(report.evaluations[3].values, [256]);
}

#[test]
fn the_table_is_every_configuration_that_ran_fastest_first_and_the_best_is_the_verified_one() {
    let report = TuningReport::of(&results(), &in_order());
    let rows: Vec<(&str, f64)> = report.table.iter().map(|r| (r.configuration.as_str(), r.time_us)).collect();
    assert_eq!(rows, [("BLOCK=64", 40.0), ("BLOCK=256", 50.0), ("BLOCK=128", 80.0)], "the infeasible one did not run");
    let best = report.best.expect("a correct configuration");
    assert_eq!((best.row.configuration.as_str(), best.row.time_us, best.row.speedup, best.row.sol_percent), ("BLOCK=256", 50.0, Some(2.0), Some(80.0)));
    assert_eq!(best.verified, Some(true));
    assert_eq!((report.baseline_us, report.bound_us), (Some(100.0), Some(40.0)));
}

#[test]
fn stages_count_cases_and_name_the_first_failure_and_what_was_skipped() {
    let mut results = results();
    let failure = Finding::OutOfBounds { arg: "out".into(), bytes: 2, first_offset: 0 };
    let verification = VerificationReport {
        kernel: "k".into(),
        config: Configuration(vec![("BLOCK".into(), 256)]),
        stages: Stage::ALL.to_vec(),
        cases: vec![
            case(Stage::Smoke, "n=1000", CaseStatus::Pass { max_abs_error: 1e-6, max_rel_error: 2e-7 }),
            case(Stage::Shapes, "n=1023", CaseStatus::Pass { max_abs_error: 1e-6, max_rel_error: 3e-7 }),
            case(Stage::Shapes, "n=4097", CaseStatus::Pass { max_abs_error: 1e-6, max_rel_error: 5e-7 }),
            case(Stage::Edges, "n=1", CaseStatus::BaselineFailed { message: "launch failed".into() }),
            case(Stage::Edges, "n=255", CaseStatus::Fail { finding: failure }),
        ],
        skipped: vec![Skipped { stage: Stage::Determinism, label: "n=1000".into(), why: "the same check as stage 1".into(), covered_by: Some(Stage::Smoke) }],
        not_run: 0,
        seconds: 1.0,
    };
    results.verifications[0].report = serde_json::to_string(&verification).unwrap();
    let stages = TuningReport::of(&results, &in_order()).best.unwrap().stages;
    let row = |n: usize| &stages[n - 1];
    assert_eq!(stages.len(), 5);
    assert_eq!((row(2).passed, row(2).failed, row(2).max_rel_error), (2, 0, Some(5e-7)));
    assert_eq!(row(4).skipped, ["n=1000: the same check as stage 1"]);
    assert_eq!((row(4).covered_by, row(3).covered_by), (Some(1), None), "stage 4 ran nothing of its own; stage 3 ran nothing at all");
    assert_eq!((row(5).passed, row(5).failed, row(5).baseline_failed), (0, 1, 1));
    assert!(row(5).failure.as_deref().is_some_and(|f| f.starts_with("n=255: ") && f.contains("out")), "{:?}", row(5).failure);
    let page = page::html(&TuningReport::of(&results, &in_order()));
    assert!(page.contains("<tr class=\"fail\"><td>✗ 5. edges</td>"), "the failed stage is marked");
    assert!(page.contains("<td>✓ 4. determinism</td>") && page.contains("<td>· 3. numerics</td>"), "a stage an earlier one covered passed there");
}

#[test]
fn the_page_carries_plotly_and_its_data_and_fetches_nothing() {
    let mut results = results();
    results.run.info.file = "odd</script><b>name.cu".into();
    let page = page::html(&TuningReport::of(&results, &in_order()));
    assert!(page.contains("Plotly.newPlot(\"progress\""));
    assert!(page.len() > 1_000_000, "plotly.js is in the page: {} bytes", page.len());
    assert!(!page.contains("mjx-container"), "MathJax is left out");
    assert!(!page.contains("<script src") && !page.contains("<link"), "nothing is loaded from elsewhere");
    // The file name is text everywhere: escaped in the HTML, `<\/` in the data.
    assert!(!page.contains("odd</script>"));
    assert!(page.contains("odd&lt;/script&gt;&lt;b&gt;name.cu"));
    let data = page.split("<script id=\"cutune-data\" type=\"application/json\">").nth(1).unwrap().split("</script>").next().unwrap();
    let data: serde_json::Value = serde_json::from_str(data).expect("the data is JSON");
    assert_eq!(data["file"], "odd</script><b>name.cu");
    assert_eq!(data["evaluations"].as_array().unwrap().len(), 5);
}

#[test]
fn a_kernel_never_tuned_is_an_error_that_says_how_to_tune_it() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("k.cu");
    let request = ReportRequest { file: &file, kernel: "k", workspace: folder.path(), output: None };
    let error = format!("{:#}", write(&request).unwrap_err());
    assert!(error.contains("k.cu: `k` has no tuning results in ") && error.contains("cutune tune"), "{error}");
    assert!(!folder.path().join(".cutune").exists(), "reading made no database");
}
