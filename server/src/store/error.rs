//! What can go wrong with the results database, in words a user can act on.

use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

/// Every message names the database file.
#[derive(Debug)]
pub enum StoreError {
    /// Another process held the write lock for longer than the busy timeout.
    Locked { path: PathBuf },
    /// Not an SQLite file, a damaged one, or another program's SQLite database.
    NotADatabase { path: PathBuf, detail: String },
    /// The folder or file cannot be created or written.
    Unwritable { path: PathBuf, detail: String },
    /// Written by a newer cutune, whose tables this one does not know.
    NewerSchema { path: PathBuf, found: i64, supported: i64 },
    /// A stored row that cannot be read back into an evaluation or a run.
    Damaged { path: PathBuf, detail: String },
    /// Any other SQLite failure.
    Sqlite { path: PathBuf, detail: String },
}

impl StoreError {
    /// Sorts an SQLite error by what the user can do about it.
    pub(crate) fn from_sqlite(path: &Path, error: rusqlite::Error) -> StoreError {
        let path = path.to_path_buf();
        let detail = error.to_string();
        match error.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked { path },
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::NotADatabase { path, detail },
            Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly | ErrorCode::PermissionDenied | ErrorCode::DiskFull) => {
                StoreError::Unwritable { path, detail }
            }
            Some(_) => StoreError::Sqlite { path, detail },
            // Errors that SQLite did not raise come from reading a column into a Rust type.
            None => StoreError::Damaged { path, detail },
        }
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Locked { path } => {
                write!(f, "{} is locked by another cutune run; wait for it or use another workspace", path.display())
            }
            StoreError::NotADatabase { path, detail } => write!(
                f,
                "{} is not a cutune results database, or it is damaged ({detail}); move it aside and cutune will start a new one",
                path.display()
            ),
            StoreError::Unwritable { path, detail } => {
                write!(f, "cannot write the results database at {}: {detail}", path.display())
            }
            StoreError::NewerSchema { path, found, supported } => write!(
                f,
                "{} was written by a newer cutune (schema version {found}; this cutune knows up to {supported}); upgrade cutune or use another workspace",
                path.display()
            ),
            StoreError::Damaged { path, detail } => {
                write!(f, "a record in {} cannot be read ({detail}); the database was changed by another program or damaged", path.display())
            }
            StoreError::Sqlite { path, detail } => write!(f, "results database {}: {detail}", path.display()),
        }
    }
}

impl std::error::Error for StoreError {}
