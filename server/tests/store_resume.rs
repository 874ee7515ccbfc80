//! A tuning run killed mid-way keeps every evaluation it committed, and the next run picks up
//! from there. The writer is this test binary again, started with an environment variable that
//! turns `writer_process` into a loop that records evaluations and acknowledges each commit.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cutune::compile::KernelResources;
use cutune::gpu::{Outcome, RunnerSource, Timing, Verdict};
use cutune::space::Configuration;
use cutune::store::{Evaluation, ResultKey, RunInfo, Store};

/// Set to the database path in the writer process.
const WRITER_DATABASE: &str = "CUTUNE_STORE_RESUME_WRITER_DATABASE";
const ACKNOWLEDGED: &str = "committed ";
/// Commits to see before the kill.
const KILL_AFTER: usize = 150;

fn key() -> ResultKey {
    ResultKey {
        kernel: "row_scale".into(),
        source_sha256: "9f2c".into(),
        problems_sha256: "41ab".into(),
        device: "NVIDIA H100 80GB HBM3 (sm_90)".into(),
        nvrtc: "13.0".into(),
    }
}

fn config(i: u64) -> Configuration {
    Configuration(vec![("BLOCK".into(), 32 * (1 + i as i64 % 32)), ("ITEM".into(), i as i64)])
}

/// The `i`th evaluation, the same in the writer and in the checks.
fn evaluation(i: u64) -> Evaluation {
    let median_us = 100.0 + i as f64 / 7.0;
    let timing = Timing { median_us, min_us: median_us - 1.0, max_us: median_us + 2.5, spread: 0.01, runs: 25 };
    Evaluation {
        key: key(),
        config: config(i),
        source: RunnerSource::Device,
        outcome: Outcome::Measured { timings: vec![timing], verdict: Verdict::Pass { max_abs_error: 1e-6, max_rel_error: i as f64 * 1e-9 } },
        resources: Some(KernelResources { name: "_Z9row_scalePfPKfi".into(), registers: 40, ..Default::default() }),
        occupancy: Some(0.5),
        compile_ms: 120.0 + i as f64,
        measured_at: 1_790_000_000 + i as i64,
    }
}

fn run_info() -> RunInfo {
    RunInfo {
        kernel: "row_scale".into(),
        file: "row_scale.cu".into(),
        strategy: "random".into(),
        seed: 1,
        budget: "10000 evaluations".into(),
        source: RunnerSource::Device,
        device: key().device,
        started_at: 1_790_000_000,
        baseline_us: None,
        source_sha256: key().source_sha256,
        problems_sha256: key().problems_sha256,
        nvrtc: key().nvrtc,
        kernel_sha256: String::new(),
        sol: None,
    }
}

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cutune-store-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch folder");
    dir
}

/// The writer: does nothing unless started by the test below.
#[test]
fn writer_process() {
    let Some(path) = std::env::var_os(WRITER_DATABASE) else { return };
    let store = Store::open_file(Path::new(&path)).expect("writer opens the store");
    let run = store.begin_run(&run_info()).expect("writer begins a run");
    let mut stdout = std::io::stdout().lock();
    for i in 0..100_000 {
        store.record(run, &evaluation(i)).expect("writer records");
        writeln!(stdout, "{ACKNOWLEDGED}{i}").and_then(|()| stdout.flush()).expect("writer acknowledges");
    }
}

#[test]
fn a_killed_run_keeps_every_committed_evaluation_and_the_next_run_goes_on() {
    let path = scratch("resume").join("results.db");
    let mut writer = Command::new(std::env::current_exe().expect("test binary"))
        .args(["writer_process", "--exact", "--nocapture", "--test-threads=1"])
        .env(WRITER_DATABASE, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the writer");
    let output = BufReader::new(writer.stdout.take().expect("writer's stdout"));
    let mut acknowledged: Vec<u64> = Vec::new();
    // Read to the end: acknowledgements written between the kill decision and the kill
    // itself are still in the pipe.
    for line in output.lines() {
        let line = line.expect("read the writer's output");
        // libtest prints `test writer_process ... ` without a newline before the test's own
        // output, so the first acknowledgement shares its line.
        if let Some(index) = line.split_once(ACKNOWLEDGED).map(|(_, index)| index) {
            acknowledged.push(index.parse().expect("an index"));
            if acknowledged.len() == KILL_AFTER {
                // SIGKILL on Unix: no destructor, no rollback, no checkpoint runs.
                writer.kill().expect("kill the writer");
            }
        }
    }
    let status = writer.wait().expect("reap the writer");
    assert_eq!(status.signal(), Some(libc::SIGKILL), "the writer must die by the kill, not finish or fail: {status:?}");
    assert!(acknowledged.len() >= KILL_AFTER, "the writer acknowledged only {} commits", acknowledged.len());

    let check = rusqlite::Connection::open(&path).expect("open for the integrity check");
    let integrity: String = check.query_row("PRAGMA integrity_check", [], |row| row.get(0)).expect("integrity check");
    assert_eq!(integrity, "ok");
    drop(check);

    let store = Store::open_file(&path).expect("reopen after the kill");
    for &i in &acknowledged {
        assert_eq!(store.lookup(&key(), &config(i)).expect("lookup"), Some(evaluation(i)), "acknowledged evaluation {i}");
    }
    // The evaluation in flight may have committed without its acknowledgement.
    let stored = store.evaluations(&key()).expect("evaluations").len();
    assert!(stored == acknowledged.len() || stored == acknowledged.len() + 1, "{stored} stored, {} acknowledged", acknowledged.len());
    let runs = store.runs("row_scale").expect("runs");
    assert_eq!((runs.len(), runs[0].finished_at, runs[0].stop_reason.as_deref()), (1, None, None), "the killed run never finished");

    // Resume: reuse what is stored, measure the rest.
    let resumed = store.begin_run(&run_info()).expect("begin the resumed run");
    let total = acknowledged.len() as u64 + 50;
    let mut reused = 0;
    for i in 0..total {
        match store.lookup(&key(), &config(i)).expect("lookup") {
            Some(found) => {
                assert_eq!(found, evaluation(i));
                reused += 1;
            }
            None => store.record(resumed, &evaluation(i)).expect("record in the resumed run"),
        }
    }
    store.finish_run(resumed, "budget spent").expect("finish");
    assert_eq!(reused, stored);
    assert_eq!(store.evaluations(&key()).expect("evaluations").len() as u64, total);
    let best = store.best(&key()).expect("best").expect("a best evaluation");
    assert_eq!(best.config, config(0));
    let _ = std::fs::remove_dir_all(path.parent().expect("scratch folder"));
}
