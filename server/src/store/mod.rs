//! The results database: every evaluation of every tuning run, in SQLite under `.cutune/`.
//!
//! Each evaluation is committed on its own, so a run killed at any point loses at most the
//! evaluation in flight, and a resumed run looks measurements up instead of repeating them.
//! One [`Store`] holds one connection behind a mutex: share it between threads (it is `Sync`);
//! several processes may open the same file, and SQLite's locks (WAL mode) order their writes.
//! See `docs/store.md`.

mod codec;
mod error;
mod profiles;
mod schema;
mod t4;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension, Row};
use serde::{Deserialize, Serialize};

use crate::compile::KernelResources;
use crate::gpu::{Outcome, RunnerSource, Verdict};
use crate::space::Configuration;

pub use error::StoreError;
pub use profiles::{KernelShare, ProfiledKernel, StoredProfile};

/// Seconds since the Unix epoch: how the store dates runs and evaluations.
pub fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// What makes two measurements comparable: the same code, problems, device and compiler.
/// A stored evaluation is reused only under an equal key (and the configuration).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResultKey {
    pub kernel: String,
    /// SHA-256 of the templatized device source that was compiled.
    pub source_sha256: String,
    /// SHA-256 of the problems (shapes, arguments, seeds) the kernel ran on.
    pub problems_sha256: String,
    /// The device's name and ordinal-independent identity, e.g. `NVIDIA H100 80GB HBM3 (sm_90)`.
    pub device: String,
    /// e.g. `12.9`.
    pub nvrtc: String,
}

/// One configuration, evaluated once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    pub key: ResultKey,
    pub config: Configuration,
    /// Where the measurement came from: live, or a replay of a named file.
    pub source: RunnerSource,
    pub outcome: Outcome,
    /// From ptxas; absent for replays and compile failures.
    pub resources: Option<KernelResources>,
    /// Resident warps per SM over the maximum, 0 to 1, from the resources and the block size.
    pub occupancy: Option<f64>,
    pub compile_ms: f64,
    /// Seconds since the Unix epoch.
    pub measured_at: i64,
}

/// Whether an evaluation may be presented as a correct candidate: its outputs matched the
/// baseline's, or it is a replay, which carries no outputs and repeats what its source found.
/// A live measurement that was not checked never counts.
pub fn counts_as_correct(evaluation: &Evaluation) -> bool {
    match &evaluation.outcome {
        Outcome::Measured { verdict: Verdict::Pass { .. }, .. } => true,
        Outcome::Measured { verdict: Verdict::Unchecked, .. } => matches!(evaluation.source, RunnerSource::Replay { .. }),
        _ => false,
    }
}

/// What a tuning run was asked to do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub kernel: String,
    /// The `.cu` file, as the user named it.
    pub file: String,
    pub strategy: String,
    pub seed: u64,
    /// As the user wrote it, e.g. `200 evaluations` or `10 min`.
    pub budget: String,
    pub source: RunnerSource,
    pub device: String,
    /// Seconds since the Unix epoch.
    pub started_at: i64,
    /// The baseline's time (sum of its medians over the problems), when it ran.
    pub baseline_us: Option<f64>,
    /// The rest of its evaluations' [`ResultKey`], so that a run's results can be found again;
    /// empty in runs stored before they were kept (schema version 1).
    pub source_sha256: String,
    pub problems_sha256: String,
    pub nvrtc: String,
    /// SHA-256 of the kernel's definition in the user's file when it was tuned (empty: not
    /// known); another hash now means the results are stale.
    pub kernel_sha256: String,
    /// The speed-of-light bound of the run's objective, when there was one.
    pub sol: Option<crate::sol::RunBound>,
}

/// A stored run: what it was asked, and how it ended (nothing yet while it runs, or if it was
/// killed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub id: i64,
    pub info: RunInfo,
    pub finished_at: Option<i64>,
    pub stop_reason: Option<String>,
}

impl Run {
    /// The key of this run's evaluations, when it was stored.
    pub fn key(&self) -> Option<ResultKey> {
        let info = &self.info;
        (!info.source_sha256.is_empty()).then(|| ResultKey {
            kernel: info.kernel.clone(),
            source_sha256: info.source_sha256.clone(),
            problems_sha256: info.problems_sha256.clone(),
            device: info.device.clone(),
            nvrtc: info.nvrtc.clone(),
        })
    }
}

/// A stored verification of one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Verification {
    pub config: Configuration,
    pub passed: bool,
    /// One line: the stages passed, or the first failure.
    pub summary: String,
    /// The whole report, as JSON (`verify::Report`).
    pub report: String,
    /// Seconds since the Unix epoch.
    pub verified_at: i64,
}

/// How to open the database.
#[derive(Clone, Debug)]
pub struct Options {
    /// How long a write waits for another process's write before failing with
    /// [`StoreError::Locked`].
    pub busy_timeout: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options { busy_timeout: Duration::from_secs(5) }
    }
}

/// The folder, under the workspace, that holds cutune's own files.
const FOLDER: &str = ".cutune";
const DATABASE: &str = "results.db";

/// The evaluation columns in the order [`read_evaluation`] reads them.
const EVALUATION_COLUMNS: &str = "id, kernel, source_sha256, problems_sha256, device, nvrtc, configuration, source_kind, replay_from, \
     outcome, failure_kind, message, timings, verdict, resources, occupancy, compile_ms, measured_at";

/// Fastest first; failures, which have no objective, last.
const FASTEST_FIRST: &str = "ORDER BY objective_us IS NULL, objective_us, id";

const KEY_MATCHES: &str = "kernel = ?1 AND source_sha256 = ?2 AND problems_sha256 = ?3 AND device = ?4 AND nvrtc = ?5";

pub struct Store {
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl Store {
    /// Opens, or creates, `<workspace>/.cutune/results.db`. The folder gets a `.gitignore`
    /// so that the results are not committed.
    pub fn open(workspace: &Path) -> Result<Store, StoreError> {
        let folder = workspace.join(FOLDER);
        let unwritable = |path: &Path, e: std::io::Error| StoreError::Unwritable { path: path.to_path_buf(), detail: e.to_string() };
        // An empty `.cutune` file made to mark the root: the results need the name as a folder.
        if folder.is_file() {
            let detail = format!("{FOLDER} is a file there; cutune keeps its results in a folder of that name, which marks the root as well: remove the file and make the folder (`mkdir {FOLDER}`)");
            return Err(StoreError::Unwritable { path: folder, detail });
        }
        std::fs::create_dir_all(&folder).map_err(|e| unwritable(&folder, e))?;
        let ignore = folder.join(".gitignore");
        if !ignore.exists() {
            std::fs::write(&ignore, "*\n").map_err(|e| unwritable(&ignore, e))?;
        }
        Store::open_file(&Store::database_path(workspace))
    }

    pub fn open_file(path: &Path) -> Result<Store, StoreError> {
        Store::open_with(path, &Options::default())
    }

    pub fn open_with(path: &Path, options: &Options) -> Result<Store, StoreError> {
        let sqlite = |e| StoreError::from_sqlite(path, e);
        let mut connection = Connection::open(path).map_err(sqlite)?;
        connection.busy_timeout(options.busy_timeout).map_err(sqlite)?;
        // Readers never block the writer, and a killed writer leaves a log that the next
        // opener replays.
        connection.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0)).map_err(sqlite)?;
        // In WAL mode, NORMAL keeps every committed evaluation through a killed process (the
        // resume the store exists for) and skips a disk flush per evaluation; only a power loss
        // may roll back the last commits, never corrupt the file.
        connection.pragma_update(None, "synchronous", "NORMAL").map_err(sqlite)?;
        connection.pragma_update(None, "foreign_keys", true).map_err(sqlite)?;
        schema::migrate(&mut connection, path)?;
        Ok(Store { path: path.to_path_buf(), connection: Mutex::new(connection) })
    }

    /// The database file.
    /// Where [`Store::open`] keeps the database of `workspace`.
    pub fn database_path(workspace: &Path) -> PathBuf {
        workspace.join(FOLDER).join(DATABASE)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn begin_run(&self, run: &RunInfo) -> Result<i64, StoreError> {
        let (source_kind, replay_from) = codec::source_columns(&run.source);
        let connection = self.connection();
        connection
            .execute(
                "INSERT INTO runs (kernel, file, strategy, seed, budget, source_kind, replay_from, device, started_at,
                                   baseline_us, source_sha256, problems_sha256, nvrtc, kernel_sha256, sol)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                // SQLite integers are signed; the seed's bits are stored as they are.
                params![
                    run.kernel,
                    run.file,
                    run.strategy,
                    run.seed as i64,
                    run.budget,
                    source_kind,
                    replay_from,
                    run.device,
                    run.started_at,
                    run.baseline_us,
                    run.source_sha256,
                    run.problems_sha256,
                    run.nvrtc,
                    run.kernel_sha256,
                    run.sol.as_ref().and_then(|sol| serde_json::to_string(sol).ok())
                ],
            )
            .map_err(|e| self.error(e))?;
        Ok(connection.last_insert_rowid())
    }

    /// Marks run `run_id` finished now, and why it stopped (e.g. `budget spent`).
    pub fn finish_run(&self, run_id: i64, stop_reason: &str) -> Result<(), StoreError> {
        let now = unix_now();
        self.connection()
            .execute("UPDATE runs SET finished_at = ?2, stop_reason = ?3 WHERE id = ?1", params![run_id, now, stop_reason])
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    /// Every run of `kernel`, oldest first.
    pub fn runs(&self, kernel: &str) -> Result<Vec<Run>, StoreError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare(
                "SELECT id, kernel, file, strategy, seed, budget, source_kind, replay_from, device, started_at, finished_at, stop_reason,
                        baseline_us, source_sha256, problems_sha256, nvrtc, kernel_sha256, sol
                 FROM runs WHERE kernel = ?1 ORDER BY id",
            )
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map([kernel], |row| {
                let id: i64 = row.get(0)?;
                let (kernel, file, strategy): (String, String, String) = (row.get(1)?, row.get(2)?, row.get(3)?);
                // SQLite integers are signed; the seed's bits were stored as they are.
                let seed = row.get::<_, i64>(4)? as u64;
                let budget: String = row.get(5)?;
                let source = codec::source_from_columns(&row.get::<_, String>(6)?, row.get(7)?);
                let (device, started_at): (String, i64) = (row.get(8)?, row.get(9)?);
                let (finished_at, stop_reason) = (row.get(10)?, row.get(11)?);
                let baseline_us = row.get(12)?;
                let (source_sha256, problems_sha256, nvrtc, kernel_sha256) = (row.get(13)?, row.get(14)?, row.get(15)?, row.get(16)?);
                let sol: Option<String> = row.get(17)?;
                let run = source.and_then(|source| {
                    let sol = sol.map(|text| serde_json::from_str(&text).map_err(|e| format!("the run's speed-of-light bound: {e}"))).transpose()?;
                    Ok(RunInfo { kernel, file, strategy, seed, budget, source, device, started_at, baseline_us, source_sha256, problems_sha256, nvrtc, kernel_sha256, sol })
                });
                let run = run.map(|info| Run {
                    id,
                    info,
                    finished_at,
                    stop_reason,
                });
                Ok((id, run))
            })
            .map_err(|e| self.error(e))?;
        rows.map(|row| {
            let (id, run) = row.map_err(|e| self.error(e))?;
            run.map_err(|detail| self.damaged(id, detail))
        })
        .collect()
    }

    /// Stores one evaluation of run `run_id` and commits it. An evaluation of the same key and
    /// configuration is replaced.
    pub fn record(&self, run_id: i64, evaluation: &Evaluation) -> Result<(), StoreError> {
        let key = &evaluation.key;
        let (source_kind, replay_from) = codec::source_columns(&evaluation.source);
        let (timings, verdict, failure_kind, message) = match &evaluation.outcome {
            Outcome::Measured { timings, verdict } => {
                (Some(codec::timings_json(timings).to_string()), Some(codec::verdict_json(verdict).to_string()), None, None)
            }
            Outcome::Failed { kind, message } => (None, None, Some(codec::failure_name(*kind)), Some(message.as_str())),
        };
        let outcome = if timings.is_some() { "measured" } else { "failed" };
        let resources = evaluation.resources.as_ref();
        let resources_json = resources.map(|r| serde_json::json!(r).to_string());
        // Prepared once per connection, not once per evaluation.
        self.connection()
            .prepare_cached(
                "INSERT OR REPLACE INTO evaluations (run_id, kernel, source_sha256, problems_sha256, device, nvrtc, configuration,
                     source_kind, replay_from, outcome, failure_kind, message, timings, objective_us, verdict, status,
                     resources, registers, spill_bytes, shared_bytes, occupancy, compile_ms, measured_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)",
            )
            .and_then(|mut statement| {
                statement.execute(params![
                    run_id,
                    key.kernel,
                    key.source_sha256,
                    key.problems_sha256,
                    key.device,
                    key.nvrtc,
                    codec::configuration_text(&evaluation.config),
                    source_kind,
                    replay_from,
                    outcome,
                    failure_kind,
                    message,
                    timings,
                    codec::objective_us(&evaluation.outcome),
                    verdict,
                    codec::status(&evaluation.outcome),
                    resources_json,
                    resources.map(|r| r.registers),
                    resources.map(|r| r.spill_store_bytes.saturating_add(r.spill_load_bytes) as i64),
                    resources.map(|r| r.shared_bytes as i64),
                    evaluation.occupancy,
                    evaluation.compile_ms,
                    evaluation.measured_at,
                ])
            })
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    /// The stored evaluation of `config` under `key`, to reuse instead of measuring again.
    pub fn lookup(&self, key: &ResultKey, config: &Configuration) -> Result<Option<Evaluation>, StoreError> {
        let connection = self.connection();
        let sql = format!("SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE {KEY_MATCHES} AND configuration = ?6");
        let row = connection
            .query_row(
                &sql,
                params![key.kernel, key.source_sha256, key.problems_sha256, key.device, key.nvrtc, codec::configuration_text(config)],
                read_evaluation,
            )
            .optional()
            .map_err(|e| self.error(e))?;
        row.map(|(id, decoded)| decoded.map_err(|detail| self.damaged(id, detail))).transpose()
    }

    /// Every evaluation under `key`, fastest first, failures last.
    pub fn evaluations(&self, key: &ResultKey) -> Result<Vec<Evaluation>, StoreError> {
        self.select(
            &format!("{KEY_MATCHES} {FASTEST_FIRST}"),
            params![key.kernel, key.source_sha256, key.problems_sha256, key.device, key.nvrtc],
        )
    }

    /// Every evaluation under `key` in the order it was recorded: the search's own order.
    pub fn evaluations_in_order(&self, key: &ResultKey) -> Result<Vec<Evaluation>, StoreError> {
        self.select(&format!("{KEY_MATCHES} ORDER BY id"), params![key.kernel, key.source_sha256, key.problems_sha256, key.device, key.nvrtc])
    }

    /// Every evaluation of `kernel` under any key, fastest first: results of an older source
    /// (another `source_sha256`) are the stale ones.
    pub fn evaluations_for_kernel(&self, kernel: &str) -> Result<Vec<Evaluation>, StoreError> {
        self.select(&format!("kernel = ?1 {FASTEST_FIRST}"), params![kernel])
    }

    /// Stores a verification of a configuration under `key`.
    pub fn record_verification(&self, key: &ResultKey, verification: &Verification) -> Result<(), StoreError> {
        self.connection()
            .execute(
                "INSERT INTO verifications (kernel, source_sha256, problems_sha256, device, nvrtc, configuration, passed, summary, report, verified_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    key.kernel,
                    key.source_sha256,
                    key.problems_sha256,
                    key.device,
                    key.nvrtc,
                    codec::configuration_text(&verification.config),
                    verification.passed,
                    verification.summary,
                    verification.report,
                    verification.verified_at
                ],
            )
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    /// The latest verification of each configuration verified under `key`.
    pub fn verifications(&self, key: &ResultKey) -> Result<Vec<Verification>, StoreError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare(&format!(
                "SELECT configuration, passed, summary, report, verified_at FROM verifications v WHERE {KEY_MATCHES}
                 AND id = (SELECT MAX(id) FROM verifications w WHERE w.kernel = v.kernel AND w.source_sha256 = v.source_sha256
                           AND w.problems_sha256 = v.problems_sha256 AND w.device = v.device AND w.nvrtc = v.nvrtc
                           AND w.configuration = v.configuration)
                 ORDER BY id"
            ))
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map(params![key.kernel, key.source_sha256, key.problems_sha256, key.device, key.nvrtc], |row| {
                Ok((row.get::<_, String>(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?))
            })
            .map_err(|e| self.error(e))?;
        let mut verifications = Vec::new();
        for row in rows {
            let (config, passed, summary, report, verified_at) = row.map_err(|e| self.error(e))?;
            let config = codec::configuration_from_text(&config).map_err(|detail| StoreError::Damaged { path: self.path.clone(), detail })?;
            verifications.push(Verification { config, passed, summary, report, verified_at });
        }
        Ok(verifications)
    }

    /// The fastest evaluation under `key` that [`counts_as_correct`] and whose latest
    /// verification, if any, passed.
    pub fn best(&self, key: &ResultKey) -> Result<Option<Evaluation>, StoreError> {
        let failed: Vec<Configuration> = self.verifications(key)?.into_iter().filter(|v| !v.passed).map(|v| v.config).collect();
        let evaluations = self.evaluations(key)?;
        Ok(evaluations
            .into_iter()
            .filter(counts_as_correct)
            .filter(|e| !failed.contains(&e.config))
            .filter_map(|e| codec::objective_us(&e.outcome).map(|objective| (objective, e)))
            .min_by(|(a, _), (b, _)| a.total_cmp(b))
            .map(|(_, e)| e))
    }

    /// Each stored configuration under `key` with its outcome, for the replay runner.
    pub fn recorded(&self, key: &ResultKey) -> Result<Vec<(Configuration, Outcome)>, StoreError> {
        Ok(self.evaluations(key)?.into_iter().map(|e| (e.config, e.outcome)).collect())
    }

    /// The evaluations under `key` as a T4 results document (schema 1.0.0).
    pub fn export_t4(&self, key: &ResultKey) -> Result<serde_json::Value, StoreError> {
        Ok(t4::document(key, &self.evaluations(key)?))
    }

    fn select(&self, condition: &str, params: &[&dyn rusqlite::ToSql]) -> Result<Vec<Evaluation>, StoreError> {
        let connection = self.connection();
        let sql = format!("SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE {condition}");
        let mut statement = connection.prepare(&sql).map_err(|e| self.error(e))?;
        let rows = statement.query_map(params, read_evaluation).map_err(|e| self.error(e))?;
        rows.map(|row| {
            let (id, decoded) = row.map_err(|e| self.error(e))?;
            decoded.map_err(|detail| self.damaged(id, detail))
        })
        .collect()
    }

    /// The connection; a thread that panicked while holding it left no statement half done,
    /// since every call is one statement.
    fn connection(&self) -> MutexGuard<'_, Connection> {
        self.connection.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn error(&self, error: rusqlite::Error) -> StoreError {
        StoreError::from_sqlite(&self.path, error)
    }

    fn damaged(&self, row: i64, detail: String) -> StoreError {
        StoreError::Damaged { path: self.path.clone(), detail: format!("row {row}: {detail}") }
    }
}

/// Reads the [`EVALUATION_COLUMNS`] of a row: the row's id, and the evaluation or why its
/// columns make none.
fn read_evaluation(row: &Row) -> rusqlite::Result<(i64, Result<Evaluation, String>)> {
    let id: i64 = row.get(0)?;
    let key = ResultKey { kernel: row.get(1)?, source_sha256: row.get(2)?, problems_sha256: row.get(3)?, device: row.get(4)?, nvrtc: row.get(5)? };
    let configuration: String = row.get(6)?;
    let source = (row.get::<_, String>(7)?, row.get::<_, Option<String>>(8)?);
    let outcome = codec::OutcomeColumns { outcome: row.get(9)?, failure_kind: row.get(10)?, message: row.get(11)?, timings: row.get(12)?, verdict: row.get(13)? };
    let resources: Option<String> = row.get(14)?;
    let occupancy: Option<f64> = row.get(15)?;
    let compile_ms: f64 = row.get(16)?;
    let measured_at: i64 = row.get(17)?;
    let decoded = (|| {
        Ok(Evaluation {
            key,
            config: codec::configuration_from_text(&configuration)?,
            source: codec::source_from_columns(&source.0, source.1)?,
            outcome: outcome.decode()?,
            resources: resources
                .map(|text| serde_json::from_str(&text).map_err(|e| format!("resources: {e}")))
                .transpose()?,
            occupancy,
            compile_ms,
            measured_at,
        })
    })();
    Ok((id, decoded))
}

#[cfg(test)]
mod tests;
