//! Profiles of programs: the latest ranking, and each workspace kernel's share in it.

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::{unix_now, Store, StoreError};
use crate::profile::Ranking;

/// A kernel's place in the latest profile that ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelShare {
    pub share: f64,
    pub total_ns: u64,
    pub launches: u64,
    /// What was profiled: the command, or the imported file.
    pub origin: String,
    pub profiled_at: i64,
}

/// The latest profile as stored: its kernels ranked, for a list the editor shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredProfile {
    pub origin: String,
    pub profiled_at: i64,
    pub gpu_ns: u64,
    pub kernels: Vec<ProfiledKernel>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfiledKernel {
    /// The demangled name, without parameters.
    pub display: String,
    pub launches: u64,
    pub total_ns: u64,
    pub share: f64,
    /// Where the workspace defines it (file, 1-based line, source name), when it does.
    pub file: Option<String>,
    pub line: Option<u32>,
    pub kernel: Option<String>,
}

impl Store {
    /// Stores a ranking, in one transaction; returns its id.
    pub fn record_profile(&self, origin: &str, ranking: &Ranking) -> Result<i64, StoreError> {
        let mut connection = self.connection();
        let transaction = connection.transaction().map_err(|e| self.error(e))?;
        transaction
            .execute(
                "INSERT INTO profiles (origin, gpu_ns, kernel_ns, profiled_at) VALUES (?1, ?2, ?3, ?4)",
                params![origin, ranking.gpu_ns as i64, ranking.kernel_ns as i64, unix_now()],
            )
            .map_err(|e| self.error(e))?;
        let id = transaction.last_insert_rowid();
        for kernel in &ranking.kernels {
            let source = kernel.source.as_ref();
            transaction
                .execute(
                    "INSERT INTO profile_kernels (profile_id, name, display, launches, total_ns, share, file, line, kernel)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    params![
                        id,
                        kernel.name,
                        kernel.kernel.display(),
                        kernel.launches as i64,
                        kernel.total_ns as i64,
                        kernel.share,
                        source.map(|s| s.file.to_string_lossy().into_owned()),
                        source.map(|s| s.line as i64),
                        source.map(|s| s.kernel.clone())
                    ],
                )
                .map_err(|e| self.error(e))?;
        }
        transaction.commit().map_err(|e| self.error(e))?;
        Ok(id)
    }

    /// The share of `kernel` (defined in `file`) in the newest profile that ran it; a kernel
    /// with several instantiations there gets their sum.
    pub fn kernel_share(&self, file: &str, kernel: &str) -> Result<Option<KernelShare>, StoreError> {
        let connection = self.connection();
        connection
            .query_row(
                "SELECT SUM(k.share), SUM(k.total_ns), SUM(k.launches), p.origin, p.profiled_at
                 FROM profile_kernels k JOIN profiles p ON p.id = k.profile_id
                 WHERE k.kernel = ?1 AND k.file = ?2
                 GROUP BY p.id ORDER BY p.id DESC LIMIT 1",
                params![kernel, file],
                |row| {
                    Ok(KernelShare {
                        share: row.get(0)?,
                        total_ns: row.get::<_, i64>(1)? as u64,
                        launches: row.get::<_, i64>(2)? as u64,
                        origin: row.get(3)?,
                        profiled_at: row.get(4)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.error(e))
    }

    /// The newest profile, its kernels by share.
    pub fn latest_profile(&self) -> Result<Option<StoredProfile>, StoreError> {
        let connection = self.connection();
        let newest = connection
            .query_row("SELECT id, origin, profiled_at, gpu_ns FROM profiles ORDER BY id DESC LIMIT 1", [], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?, row.get::<_, i64>(2)?, row.get::<_, i64>(3)?))
            })
            .optional()
            .map_err(|e| self.error(e))?;
        let Some((id, origin, profiled_at, gpu_ns)) = newest else { return Ok(None) };
        let mut query = connection
            .prepare("SELECT display, launches, total_ns, share, file, line, kernel FROM profile_kernels WHERE profile_id = ?1 ORDER BY total_ns DESC, name")
            .map_err(|e| self.error(e))?;
        let kernels = query
            .query_map([id], |row| {
                Ok(ProfiledKernel {
                    display: row.get(0)?,
                    launches: row.get::<_, i64>(1)? as u64,
                    total_ns: row.get::<_, i64>(2)? as u64,
                    share: row.get(3)?,
                    file: row.get(4)?,
                    line: row.get::<_, Option<i64>>(5)?.map(|l| l as u32),
                    kernel: row.get(6)?,
                })
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.error(e))?;
        Ok(Some(StoredProfile { origin, profiled_at, gpu_ns: gpu_ns as u64, kernels }))
    }
}
