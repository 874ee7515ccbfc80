use std::path::PathBuf;
use std::time::Duration;

use super::codec::{self, FAILURE_KINDS};
use super::*;
use crate::gpu::{FailureKind, Timing};

/// An empty folder of its own for each test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cutune-store-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch folder");
    dir
}

fn key(source: &str) -> ResultKey {
    ResultKey {
        kernel: "row_scale".into(),
        source_sha256: source.into(),
        problems_sha256: "p1".into(),
        device: "NVIDIA H100 80GB HBM3 (sm_90)".into(),
        nvrtc: "13.0".into(),
    }
}

fn config(block: i64, vec: i64) -> Configuration {
    Configuration(vec![("BLOCK".into(), block), ("VEC".into(), vec)])
}

fn timing(median_us: f64) -> Timing {
    Timing { median_us, min_us: median_us * 0.9, max_us: median_us * 1.5, spread: 0.1 + 0.2, runs: 20 }
}

fn measured(medians: &[f64], verdict: Verdict) -> Outcome {
    Outcome::Measured { timings: medians.iter().map(|m| timing(*m)).collect(), verdict }
}

fn pass() -> Verdict {
    Verdict::Pass { max_abs_error: 1e-7, max_rel_error: 3.5e-6 }
}

fn evaluation(config: Configuration, outcome: Outcome) -> Evaluation {
    Evaluation {
        key: key("s1"),
        config,
        source: RunnerSource::Device,
        outcome,
        resources: Some(KernelResources {
            name: "_Z9row_scalePfPKfi".into(),
            registers: 32,
            barriers: 1,
            stack_bytes: 16,
            spill_store_bytes: 8,
            spill_load_bytes: 4,
            shared_bytes: 1024,
            const_bytes: 380,
        }),
        occupancy: Some(0.75),
        compile_ms: 151.25,
        measured_at: 1_790_000_000,
    }
}

fn run_info() -> RunInfo {
    RunInfo {
        kernel: "row_scale".into(),
        file: "kernels/row_scale.cu".into(),
        strategy: "random".into(),
        seed: u64::MAX,
        budget: "200 evaluations".into(),
        source: RunnerSource::Device,
        device: "NVIDIA H100 80GB HBM3 (sm_90)".into(),
        started_at: 1_790_000_000,
        baseline_us: Some(250.0),
        source_sha256: "s1".into(),
        problems_sha256: "p1".into(),
        nvrtc: "13.0".into(),
        kernel_sha256: "k1".into(),
        sol: Some(crate::sol::RunBound {
            bound_us: 89.45,
            bytes: 268_451_840.0,
            memory_us: 89.45,
            compute_us: 0.1 + 0.2,
            compute: crate::spec::SolCompute::Fp32,
            ceilings: crate::sol::Ceilings {
                copy_gbs: 3001.0,
                fp32_tflops: 60.0,
                fp16_tflops: 120.0,
                copy_times: vec![crate::sol::CopyTime { bytes: 524288.0, us: 2.5 }],
                origin: crate::sol::CeilingsOrigin::Measured { device: "NVIDIA H100 80GB HBM3".into(), measured_at: 1_790_000_000 },
            },
        }),
    }
}

/// A store in a fresh folder, with one run begun.
fn store_with_run(test: &str) -> (Store, i64) {
    let store = Store::open(&scratch(test)).expect("open store");
    let run = store.begin_run(&run_info()).expect("begin run");
    (store, run)
}

/// NaN is not equal to itself; `Debug` writes every float exactly, NaN included.
fn same(a: &Evaluation, b: &Evaluation) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

#[test]
fn every_outcome_verdict_failure_and_source_round_trips() {
    let (store, run) = store_with_run("round_trip");
    let mut evaluations = vec![
        evaluation(config(64, 1), measured(&[95.9, 0.1 + 0.2], Verdict::Pass { max_abs_error: 0.0, max_rel_error: f64::INFINITY })),
        evaluation(
            config(128, 1),
            measured(
                &[101.0],
                Verdict::Mismatch {
                    problem: 1,
                    arg: "out".into(),
                    index: 4097,
                    expected: -1.5,
                    actual: f64::NAN,
                    mismatches: 12,
                    max_abs_error: f64::NAN,
                    max_rel_error: f64::NEG_INFINITY,
                    unwritten: 5,
                    not_finite: 2,
                },
            ),
        ),
        Evaluation {
            source: RunnerSource::Replay { from: "convolution_milo_A100_T4.json.gz".into() },
            resources: None,
            occupancy: None,
            ..evaluation(config(256, 1), measured(&[88.125], Verdict::Unchecked))
        },
        evaluation(config(512, 1), measured(&[], pass())),
    ];
    for (i, kind) in FAILURE_KINDS.into_iter().enumerate() {
        let outcome = Outcome::Failed { kind, message: format!("{} went wrong: \"quoted\"\nsecond line", codec::failure_name(kind)) };
        evaluations.push(Evaluation { resources: None, ..evaluation(config(1024, i as i64), outcome) });
    }
    for e in &evaluations {
        store.record(run, e).expect("record");
    }
    for e in &evaluations {
        let found = store.lookup(&e.key, &e.config).expect("lookup").expect("recorded evaluation found");
        assert!(same(&found, e), "stored {e:?}\nread back {found:?}");
    }
    assert_eq!(store.evaluations(&key("s1")).expect("evaluations").len(), evaluations.len());
    assert_eq!(store.lookup(&key("s1"), &config(2048, 1)).expect("lookup"), None);
    assert_eq!(store.lookup(&key("other source"), &config(64, 1)).expect("lookup"), None);
}

#[test]
fn column_encodings_match_the_serde_forms_of_the_shared_types() {
    for kind in FAILURE_KINDS {
        assert_eq!(serde_json::to_value(kind).expect("serialize"), codec::failure_name(kind));
    }
    let verdicts = [
        pass(),
        Verdict::Mismatch { problem: 0, arg: "y".into(), index: 3, expected: 1.0, actual: 2.0, mismatches: 1, max_abs_error: 1.0, max_rel_error: 1.0, unwritten: 0, not_finite: 0 },
        Verdict::Unchecked,
    ];
    for verdict in verdicts {
        assert_eq!(codec::verdict_json(&verdict), serde_json::to_value(&verdict).expect("serialize"));
        assert_eq!(codec::verdict_json(&verdict)["status"], codec::status(&measured(&[1.0], verdict.clone())));
    }
    let timings = [timing(3.0)];
    assert_eq!(codec::timings_json(&timings), serde_json::to_value(timings).expect("serialize"));
}

#[test]
fn configurations_keep_their_parameter_order() {
    let (store, run) = store_with_run("order");
    let reversed = Configuration(vec![("VEC".into(), 4), ("BLOCK".into(), -256)]);
    assert_eq!(codec::configuration_text(&reversed), r#"{"VEC":4,"BLOCK":-256}"#);
    store.record(run, &evaluation(reversed.clone(), measured(&[1.0], pass()))).expect("record");
    let stored = store.recorded(&key("s1")).expect("recorded");
    assert_eq!(stored.iter().map(|(c, _)| c).collect::<Vec<_>>(), [&reversed]);
    assert_eq!(codec::configuration_from_text(r#"{"a":1} trailing"#).map_err(|e| e.contains("trailing")), Err(true));
    assert!(codec::configuration_from_text(r#"{"a":1.5}"#).is_err());
}

#[test]
fn recording_the_same_configuration_again_replaces_it() {
    let (store, run) = store_with_run("replace");
    store.record(run, &evaluation(config(64, 1), Outcome::Failed { kind: FailureKind::Timeout, message: "watchdog".into() })).expect("record");
    let second_run = store.begin_run(&run_info()).expect("begin run");
    let remeasured = evaluation(config(64, 1), measured(&[50.0], pass()));
    store.record(second_run, &remeasured).expect("record again");
    let all = store.evaluations(&key("s1")).expect("evaluations");
    assert_eq!(all, [remeasured]);
}

#[test]
fn best_is_the_fastest_correct_evaluation_only() {
    let (store, run) = store_with_run("best");
    let mismatch = Verdict::Mismatch { problem: 0, arg: "out".into(), index: 0, expected: 1.0, actual: 9.0, mismatches: 1, max_abs_error: 8.0, max_rel_error: 8.0, unwritten: 0, not_finite: 0 };
    store.record(run, &evaluation(config(64, 1), measured(&[10.0], mismatch))).expect("record");
    store.record(run, &evaluation(config(64, 2), measured(&[20.0], Verdict::Unchecked))).expect("record");
    store.record(run, &evaluation(config(64, 4), Outcome::Failed { kind: FailureKind::Fault, message: "illegal address".into() })).expect("record");
    assert_eq!(store.best(&key("s1")).expect("best"), None, "no evaluation is correct yet");
    store.record(run, &evaluation(config(128, 1), measured(&[40.0, 2.0], pass()))).expect("record");
    let correct = evaluation(config(256, 1), measured(&[30.0, 5.0], pass()));
    store.record(run, &correct).expect("record");
    assert_eq!(store.best(&key("s1")).expect("best"), Some(correct));

    let replayed = Evaluation {
        source: RunnerSource::Replay { from: "results.json".into() },
        ..evaluation(config(512, 1), measured(&[25.0], Verdict::Unchecked))
    };
    store.record(run, &replayed).expect("record");
    assert_eq!(store.best(&key("s1")).expect("best"), Some(replayed), "a replay carries its source's verdict");

    let ordered: Vec<Option<f64>> = store.evaluations(&key("s1")).expect("evaluations").iter().map(|e| codec::objective_us(&e.outcome)).collect();
    assert_eq!(ordered, [Some(10.0), Some(20.0), Some(25.0), Some(35.0), Some(42.0), None]);
}

#[test]
fn evaluations_for_a_kernel_span_every_source_hash() {
    let (store, run) = store_with_run("stale");
    store.record(run, &evaluation(config(64, 1), measured(&[5.0], pass()))).expect("record");
    let newer = Evaluation { key: key("s2"), ..evaluation(config(64, 1), measured(&[4.0], pass())) };
    store.record(run, &newer).expect("record");
    store.record(run, &Evaluation { key: ResultKey { kernel: "other".into(), ..key("s1") }, ..newer.clone() }).expect("record");
    assert_eq!(store.evaluations(&key("s2")).expect("evaluations"), std::slice::from_ref(&newer));
    let all = store.evaluations_for_kernel("row_scale").expect("evaluations");
    assert_eq!(all.iter().map(|e| e.key.source_sha256.as_str()).collect::<Vec<_>>(), ["s2", "s1"]);
}

#[test]
fn runs_are_listed_with_how_they_ended() {
    let (store, first) = store_with_run("runs");
    let replay = RunInfo { source: RunnerSource::Replay { from: ".cutune/results.db".into() }, seed: 7, ..run_info() };
    let second = store.begin_run(&replay).expect("begin run");
    store.finish_run(first, "budget spent").expect("finish run");
    let runs = store.runs("row_scale").expect("runs");
    assert_eq!(runs.len(), 2);
    assert_eq!((runs[0].id, &runs[0].info, runs[0].stop_reason.as_deref()), (first, &run_info(), Some("budget spent")));
    assert!(runs[0].finished_at.is_some_and(|t| t >= run_info().started_at));
    assert_eq!((runs[1].id, &runs[1].info, runs[1].finished_at), (second, &replay, None));
    assert_eq!(store.runs("other").expect("runs"), []);
    assert_eq!(runs[0].key(), Some(key("s1")));
}

#[test]
fn a_database_of_schema_version_1_is_migrated_and_keeps_its_runs() {
    let path = scratch("migrate").join("results.db");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let connection = Connection::open(&path).expect("create");
    connection.execute_batch(schema::MIGRATIONS[0]).expect("version 1 tables");
    connection.pragma_update(None, "application_id", schema::APPLICATION_ID).expect("id");
    connection.pragma_update(None, "user_version", 1).expect("version");
    connection
        .execute(
            "INSERT INTO runs (kernel, file, strategy, seed, budget, source_kind, device, started_at) VALUES ('row_scale', 'a.cu', 'random', 1, '10', 'device', 'H100', 5)",
            [],
        )
        .expect("a version 1 run");
    drop(connection);
    let store = Store::open_file(&path).expect("migrated");
    let runs = store.runs("row_scale").expect("runs");
    assert_eq!(runs.len(), 1);
    assert_eq!((runs[0].info.baseline_us, runs[0].key()), (None, None), "a version 1 run has no baseline or key");
    store.begin_run(&run_info()).expect("a new run after the migration");
    assert_eq!(store.runs("row_scale").expect("runs")[1].key(), Some(key("s1")));
}

#[test]
fn a_write_locked_database_fails_plainly_and_keeps_what_was_stored() {
    let path = scratch("locked").join("results.db");
    let store = Store::open_with(&path, &Options { busy_timeout: Duration::from_millis(200) }).expect("open store");
    let run = store.begin_run(&run_info()).expect("begin run");
    let kept = evaluation(config(64, 1), measured(&[5.0], pass()));
    store.record(run, &kept).expect("record");

    let other = Connection::open(&path).expect("second connection");
    other.execute_batch("BEGIN IMMEDIATE; UPDATE runs SET stop_reason = 'held';").expect("take the write lock");
    let error = store.record(run, &evaluation(config(128, 1), measured(&[6.0], pass()))).expect_err("the write lock is held");
    assert!(matches!(error, StoreError::Locked { .. }), "{error:?}");
    assert_eq!(error.to_string(), format!("{} is locked by another cutune run; wait for it or use another workspace", path.display()));
    // Readers are not blocked by the writer.
    assert_eq!(store.evaluations(&key("s1")).expect("read while locked"), std::slice::from_ref(&kept));
    other.execute_batch("ROLLBACK").expect("release the lock");

    assert_eq!(store.evaluations(&key("s1")).expect("evaluations"), [kept]);
    store.record(run, &evaluation(config(128, 1), measured(&[6.0], pass()))).expect("record once the lock is gone");
}

#[test]
fn a_file_that_is_not_a_database_is_refused_by_name() {
    let path = scratch("garbage").join("results.db");
    std::fs::write(&path, "this is not SQLite\n".repeat(300)).expect("write garbage");
    let error = Store::open_file(&path).err().expect("garbage refused");
    assert!(matches!(error, StoreError::NotADatabase { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.starts_with(&format!("{} is not a cutune results database", path.display())), "{message}");
    assert_eq!(std::fs::read_to_string(&path).expect("garbage left alone"), "this is not SQLite\n".repeat(300));
}

#[test]
fn another_programs_database_is_refused_and_left_alone() {
    let path = scratch("foreign").join("results.db");
    Connection::open(&path).and_then(|c| c.execute_batch("CREATE TABLE runs (x); INSERT INTO runs VALUES (1);")).expect("foreign database");
    let error = Store::open_file(&path).err().expect("foreign database refused");
    assert!(error.to_string().contains("an SQLite database of another program"), "{error}");
    let rows: i64 = Connection::open(&path).and_then(|c| c.query_row("SELECT count(*) FROM runs", [], |r| r.get(0))).expect("still readable");
    assert_eq!(rows, 1);
}

#[test]
fn a_database_of_a_newer_cutune_is_refused() {
    let path = scratch("newer").join("results.db");
    drop(Store::open_file(&path).expect("create"));
    Connection::open(&path).and_then(|c| c.pragma_update(None, "user_version", schema::SCHEMA_VERSION + 1)).expect("bump version");
    let error = Store::open_file(&path).err().expect("newer schema refused");
    assert!(matches!(error, StoreError::NewerSchema { .. }), "{error:?}");
    assert!(error.to_string().contains("was written by a newer cutune (schema version 6; this cutune knows up to 5)"), "{error}");
}

#[test]
fn open_creates_the_folder_with_a_gitignore_and_reopens() {
    let workspace = scratch("folder");
    let store = Store::open(&workspace).expect("open");
    assert_eq!(store.path(), workspace.join(".cutune/results.db"));
    assert_eq!(std::fs::read_to_string(workspace.join(".cutune/.gitignore")).expect(".gitignore"), "*\n");
    let run = store.begin_run(&run_info()).expect("begin run");
    drop(store);
    let reopened = Store::open(&workspace).expect("reopen");
    assert_eq!(reopened.runs("row_scale").expect("runs").iter().map(|r| r.id).collect::<Vec<_>>(), [run]);
}

#[test]
fn an_unwritable_workspace_is_a_clear_error() {
    let workspace = scratch("unwritable").join("a-file");
    std::fs::write(&workspace, "").expect("write file");
    let error = Store::open(&workspace).err().expect("a file is no workspace");
    assert!(matches!(error, StoreError::Unwritable { .. }), "{error:?}");
    assert!(error.to_string().starts_with(&format!("cannot write the results database at {}", workspace.join(".cutune").display())), "{error}");
}

#[test]
fn a_cutune_file_marking_the_root_is_said_to_be_made_a_folder() {
    let root = tempfile::tempdir().expect("temp dir");
    std::fs::write(root.path().join(".cutune"), "").expect("marker file");
    let error = Store::open(root.path()).err().expect("a marker file holds no results");
    assert!(error.to_string().contains(".cutune is a file there; cutune keeps its results in a folder of that name"), "{error}");
    assert!(error.to_string().contains("`mkdir .cutune`"), "{error}");
    assert!(root.path().join(".cutune").is_file(), "the user's file is left as it was");
}

#[test]
fn a_damaged_row_is_an_error_naming_the_row() {
    let path = scratch("damaged").join("results.db");
    let store = Store::open_file(&path).expect("open");
    let run = store.begin_run(&run_info()).expect("begin run");
    store.record(run, &evaluation(config(64, 1), measured(&[5.0], pass()))).expect("record");
    Connection::open(&path).and_then(|c| c.execute("UPDATE evaluations SET verdict = '{\"status\": \"maybe\"}'", [])).expect("damage");
    let error = store.evaluations(&key("s1")).expect_err("damaged verdict");
    assert!(matches!(error, StoreError::Damaged { .. }), "{error:?}");
    assert!(error.to_string().contains("row 1: unknown verdict status `maybe`"), "{error}");
    Connection::open(&path).and_then(|c| c.execute("UPDATE evaluations SET compile_ms = 'slow'", [])).expect("damage");
    assert!(matches!(store.lookup(&key("s1"), &config(64, 1)), Err(StoreError::Damaged { .. })));
}

#[test]
fn threads_share_one_store() {
    let (store, run) = store_with_run("threads");
    std::thread::scope(|scope| {
        for thread in 0..4 {
            let store = &store;
            scope.spawn(move || {
                for i in 0..10 {
                    store.record(run, &evaluation(config(thread, i), measured(&[1.0], pass()))).expect("record");
                }
            });
        }
    });
    assert_eq!(store.evaluations(&key("s1")).expect("evaluations").len(), 40);
}

fn t4_validator() -> jsonschema::Validator {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../tests/fixtures/store/T4-results-schema-1.0.0.json")).expect("T4 schema is JSON");
    jsonschema::validator_for(&schema).expect("T4 schema compiles")
}

#[test]
fn t4_export_validates_and_carries_configurations_and_times() {
    let (store, run) = store_with_run("t4");
    let fast = evaluation(config(256, 4), measured(&[30.5, 5.25], pass()));
    store.record(run, &fast).expect("record");
    let mismatch = Verdict::Mismatch { problem: 0, arg: "out".into(), index: 0, expected: 1.0, actual: f64::NAN, mismatches: 1, max_abs_error: f64::NAN, max_rel_error: f64::NAN, unwritten: 0, not_finite: 0 };
    store.record(run, &evaluation(config(64, 1), measured(&[40.0], mismatch))).expect("record");
    store.record(run, &evaluation(config(64, 2), measured(&[41.0], Verdict::Unchecked))).expect("record");
    for (i, kind) in FAILURE_KINDS.into_iter().enumerate() {
        store.record(run, &evaluation(config(2048, i as i64), Outcome::Failed { kind, message: "no".into() })).expect("record");
    }

    let document = store.export_t4(&key("s1")).expect("export");
    let validator = t4_validator();
    let errors: Vec<String> = validator.iter_errors(&document).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}\n{document:#}");
    assert_eq!(document["schema_version"], "1.0.0");
    assert_eq!(document["metadata"]["timeunit"], "microseconds");
    assert_eq!(document["metadata"]["source_sha256"], "s1");
    assert_eq!(document["metadata"]["device"], "NVIDIA H100 80GB HBM3 (sm_90)");

    let results = document["results"].as_array().expect("results");
    let first = &results[0];
    assert_eq!(first["configuration"], serde_json::json!({ "BLOCK": 256, "VEC": 4 }));
    assert_eq!(first["times"]["runtimes"], serde_json::json!([30.5, 5.25]));
    assert_eq!(first["times"]["compilation"], 151_250.0);
    assert_eq!(first["measurements"], serde_json::json!([{ "name": "time", "value": 35.75, "unit": "us" }]));
    assert_eq!((&first["invalidity"], &first["correctness"]), (&"correct".into(), &1.into()));
    assert_eq!(first["timestamp"], "2026-09-21T14:13:20Z");
    let reasons: Vec<&str> = results.iter().map(|r| r["invalidity"].as_str().unwrap_or("?")).collect();
    assert_eq!(reasons, ["correct", "correctness", "correctness", "constraints", "compile", "runtime", "runtime", "timeout", "runtime"]);
    assert_eq!(results[4]["measurements"][0]["value"], "CompilationFailedConfig");

    let mut broken = document.clone();
    broken["results"][0]["invalidity"] = "slow".into();
    assert!(!validator.is_valid(&broken), "the schema check must be able to fail");
}

#[test]
fn a_failed_verification_takes_a_configuration_out_of_best_until_it_passes_again() {
    let (store, run) = store_with_run("verifications");
    let fast = evaluation(config(512, 4), measured(&[20.0], pass()));
    let slow = evaluation(config(256, 1), measured(&[30.0], pass()));
    store.record(run, &fast).expect("record");
    store.record(run, &slow).expect("record");
    let verification = |config: Configuration, passed: bool, at: i64| Verification {
        config,
        passed,
        summary: if passed { "passed 5 stages (17 cases)".into() } else { "failed stage 2 (shapes) on n=1023: skips part of the output".into() },
        report: "{}".into(),
        verified_at: at,
    };
    store.record_verification(&key("s1"), &verification(config(512, 4), false, 1)).expect("record verification");
    store.record_verification(&key("s2"), &verification(config(256, 1), false, 1)).expect("another key");
    assert_eq!(store.best(&key("s1")).expect("best"), Some(slow.clone()), "the failed one is never best");
    assert_eq!(store.verifications(&key("s1")).expect("verifications"), [verification(config(512, 4), false, 1)]);

    store.record_verification(&key("s1"), &verification(config(512, 4), true, 2)).expect("verified again");
    store.record_verification(&key("s1"), &verification(config(256, 1), true, 3)).expect("verified");
    assert_eq!(store.verifications(&key("s1")).expect("verifications"), [verification(config(512, 4), true, 2), verification(config(256, 1), true, 3)], "the latest of each");
    assert_eq!(store.best(&key("s1")).expect("best"), Some(fast));
}

#[test]
fn a_profile_gives_each_workspace_kernel_its_latest_share() {
    use crate::profile::{rank, GpuTimes, KernelTime, SourceKernel};
    let store = Store::open_file(&scratch("profile").join("results.db")).expect("store");
    let profile = |big_ns: u64| {
        let mut ranking = rank(&GpuTimes {
            kernels: vec![
                KernelTime { name: "_Z5scalePffi".into(), launches: 3, total_ns: big_ns },
                KernelTime { name: "_Z4tinyv".into(), launches: 1, total_ns: 100 },
            ],
            other_ns: 0,
        });
        ranking.kernels[0].source = Some(SourceKernel { file: "/w/app.cu".into(), line: 3, kernel: "scale".into() });
        ranking
    };
    assert_eq!(store.kernel_share("/w/app.cu", "scale").expect("query"), None);
    store.record_profile("./app", &profile(300)).expect("first");
    store.record_profile("./app --big", &profile(900)).expect("second");
    let share = store.kernel_share("/w/app.cu", "scale").expect("query").expect("profiled");
    assert_eq!((share.origin.as_str(), share.total_ns, share.launches), ("./app --big", 900, 3));
    assert!((share.share - 0.9).abs() < 1e-12);
    assert_eq!(store.kernel_share("/w/other.cu", "scale").expect("query"), None, "the same name in another file is another kernel");
    let latest = store.latest_profile().expect("query").expect("profiled");
    assert_eq!((latest.origin.as_str(), latest.gpu_ns), ("./app --big", 1000));
    let listed: Vec<(&str, u64, Option<&str>, Option<u32>)> = latest.kernels.iter().map(|k| (k.display.as_str(), k.total_ns, k.file.as_deref(), k.line)).collect();
    assert_eq!(listed, [("scale", 900, Some("/w/app.cu"), Some(3)), ("tiny", 100, None, None)]);
}
