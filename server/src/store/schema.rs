//! The tables, and the migrations that bring an older database up to date.
//!
//! SQLite's `user_version` holds how many migrations a database has had; `application_id`
//! marks it as cutune's, so another program's database is refused instead of altered.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use super::StoreError;

/// `cutu` in ASCII.
pub(super) const APPLICATION_ID: i64 = 0x6375_7475;

/// Migration `i` takes a database from version `i` to `i + 1`. Append; never edit one that
/// has shipped.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: runs and their evaluations.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        kernel TEXT NOT NULL,
        file TEXT NOT NULL,
        strategy TEXT NOT NULL,
        seed INTEGER NOT NULL,
        budget TEXT NOT NULL,
        source_kind TEXT NOT NULL,
        replay_from TEXT,
        device TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        finished_at INTEGER,
        stop_reason TEXT
    );
    CREATE INDEX runs_by_kernel ON runs (kernel);
    CREATE TABLE evaluations (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id),
        kernel TEXT NOT NULL,
        source_sha256 TEXT NOT NULL,
        problems_sha256 TEXT NOT NULL,
        device TEXT NOT NULL,
        nvrtc TEXT NOT NULL,
        configuration TEXT NOT NULL,
        source_kind TEXT NOT NULL,
        replay_from TEXT,
        outcome TEXT NOT NULL CHECK (outcome IN ('measured', 'failed')),
        failure_kind TEXT,
        message TEXT,
        timings TEXT,
        objective_us REAL,
        verdict TEXT,
        status TEXT NOT NULL,
        resources TEXT,
        registers INTEGER,
        spill_bytes INTEGER,
        shared_bytes INTEGER,
        occupancy REAL,
        compile_ms REAL NOT NULL,
        measured_at INTEGER NOT NULL
    );
    -- Also serves lookups by kernel alone, as its first column.
    CREATE UNIQUE INDEX evaluations_identity
        ON evaluations (kernel, source_sha256, problems_sha256, device, nvrtc, configuration);",
    // 2: a run's baseline time, its evaluations' key and the hash of the kernel's definition as
    // tuned, for the editor's hints, hovers and stale results.
    "ALTER TABLE runs ADD COLUMN baseline_us REAL;
    ALTER TABLE runs ADD COLUMN source_sha256 TEXT NOT NULL DEFAULT '';
    ALTER TABLE runs ADD COLUMN problems_sha256 TEXT NOT NULL DEFAULT '';
    ALTER TABLE runs ADD COLUMN nvrtc TEXT NOT NULL DEFAULT '';
    ALTER TABLE runs ADD COLUMN kernel_sha256 TEXT NOT NULL DEFAULT '';",
    // 3: five-stage verifications of configurations, under the evaluations' key; `report` is
    // the whole report as JSON.
    "CREATE TABLE verifications (
        id INTEGER PRIMARY KEY,
        kernel TEXT NOT NULL,
        source_sha256 TEXT NOT NULL,
        problems_sha256 TEXT NOT NULL,
        device TEXT NOT NULL,
        nvrtc TEXT NOT NULL,
        configuration TEXT NOT NULL,
        passed INTEGER NOT NULL,
        summary TEXT NOT NULL,
        report TEXT NOT NULL,
        verified_at INTEGER NOT NULL
    );
    CREATE INDEX verifications_by_key ON verifications (kernel, source_sha256, problems_sha256, device, nvrtc, configuration);",
    // 4: a run's speed-of-light bound and the ceilings it came from, as JSON (`sol::RunBound`).
    "ALTER TABLE runs ADD COLUMN sol TEXT;",
    // 5: profiles of programs (`cutune profile`) and their kernels' shares of GPU time.
    "CREATE TABLE profiles (
        id INTEGER PRIMARY KEY,
        origin TEXT NOT NULL,
        gpu_ns INTEGER NOT NULL,
        kernel_ns INTEGER NOT NULL,
        profiled_at INTEGER NOT NULL
    );
    CREATE TABLE profile_kernels (
        profile_id INTEGER NOT NULL REFERENCES profiles (id),
        name TEXT NOT NULL,
        display TEXT NOT NULL,
        launches INTEGER NOT NULL,
        total_ns INTEGER NOT NULL,
        share REAL NOT NULL,
        file TEXT,
        line INTEGER,
        kernel TEXT
    );
    CREATE INDEX profile_kernels_by_kernel ON profile_kernels (kernel, file);",
];

/// The version this cutune writes.
pub(crate) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Checks that the database is cutune's and not newer than this cutune, and applies the
/// migrations it lacks, all in one transaction.
pub(crate) fn migrate(connection: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let sqlite = |e| StoreError::from_sqlite(path, e);
    // Up to date is the common case: decide it without taking the write lock, so that opening
    // never waits for another run.
    if identity(connection).map_err(sqlite)? == (APPLICATION_ID, SCHEMA_VERSION) {
        return Ok(());
    }
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sqlite)?;
    // Read again under the lock: another process may have migrated in between.
    let (application_id, version) = identity(&transaction).map_err(sqlite)?;
    let has_tables: bool = transaction.query_row("SELECT EXISTS (SELECT 1 FROM sqlite_schema)", [], |row| row.get(0)).map_err(sqlite)?;
    if application_id != APPLICATION_ID && (has_tables || version != 0) {
        return Err(StoreError::NotADatabase {
            path: path.to_path_buf(),
            detail: format!("it is an SQLite database of another program (application id {application_id:#x})"),
        });
    }
    if version > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema { path: path.to_path_buf(), found: version, supported: SCHEMA_VERSION });
    }
    let pending = MIGRATIONS.get(usize::try_from(version).unwrap_or(0)..).unwrap_or_default();
    for migration in pending {
        transaction.execute_batch(migration).map_err(sqlite)?;
    }
    transaction.pragma_update(None, "application_id", APPLICATION_ID).map_err(sqlite)?;
    transaction.pragma_update(None, "user_version", SCHEMA_VERSION).map_err(sqlite)?;
    transaction.commit().map_err(sqlite)
}

/// The database's (`application_id`, `user_version`).
fn identity(connection: &Connection) -> rusqlite::Result<(i64, i64)> {
    let application_id = connection.query_row("PRAGMA application_id", [], |row| row.get(0))?;
    let version = connection.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    Ok((application_id, version))
}
