//! Kernel times from profiles the user already has: a PyTorch profiler trace
//! (`prof.export_chrome_trace(...)`, JSON) or an Nsight Systems SQLite export
//! (`nsys export --type sqlite`).

use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::{GpuTimes, KernelTime};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    TorchTrace,
    NsysSqlite,
}

impl Format {
    pub fn describe(self) -> &'static str {
        match self {
            Format::TorchTrace => "PyTorch profiler trace",
            Format::NsysSqlite => "Nsight Systems SQLite export",
        }
    }
}

const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// Reads `path`, telling the format from its content.
pub fn import(path: &Path) -> Result<(Format, GpuTimes)> {
    let mut head = [0u8; 16];
    let read = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .with_context(|| format!("cannot read {}", path.display()))?;
    if head[..read] == *SQLITE_MAGIC {
        return Ok((Format::NsysSqlite, nsys_sqlite(path)?));
    }
    if head[..read].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        return Ok((Format::TorchTrace, torch_trace(path)?));
    }
    bail!(
        "{}: neither a PyTorch profiler trace (JSON from `export_chrome_trace`) nor an Nsight Systems SQLite export (`nsys export --type sqlite`)",
        path.display()
    )
}

#[derive(Deserialize)]
struct ChromeTrace {
    #[serde(rename = "traceEvents")]
    events: Vec<TraceEvent>,
}

#[derive(Deserialize)]
struct TraceEvent {
    #[serde(default)]
    cat: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    ph: Option<String>,
    /// Microseconds.
    #[serde(default)]
    dur: Option<f64>,
}

fn torch_trace(path: &Path) -> Result<GpuTimes> {
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let trace: ChromeTrace = serde_json::from_reader(std::io::BufReader::new(file))
        .with_context(|| format!("{}: not a PyTorch profiler trace (a JSON object with `traceEvents`)", path.display()))?;
    let mut times = GpuTimes::default();
    for event in trace.events {
        if event.ph.as_deref().is_some_and(|ph| ph != "X") {
            continue;
        }
        let (Some(category), Some(duration)) = (event.cat.as_deref(), event.dur) else { continue };
        let ns = (duration * 1000.0).round().max(0.0) as u64;
        match category.to_ascii_lowercase().as_str() {
            "kernel" => {
                let name = event.name.unwrap_or_else(|| "(unnamed kernel)".into());
                times.kernels.push(KernelTime { name, launches: 1, total_ns: ns });
            }
            "gpu_memcpy" | "gpu_memset" => times.other_ns += ns,
            _ => {}
        }
    }
    if times.kernels.is_empty() {
        bail!(
            "{}: the trace holds no GPU kernels (events of category `kernel`); was it recorded with ProfilerActivity.CUDA?",
            path.display()
        );
    }
    Ok(times)
}

fn nsys_sqlite(path: &Path) -> Result<GpuTimes> {
    let db = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let has_table = |name: &str| -> Result<bool> {
        Ok(db.query_row("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [name], |r| r.get::<_, i64>(0))? > 0)
    };
    if !has_table("CUPTI_ACTIVITY_KIND_KERNEL")? || !has_table("StringIds")? {
        bail!(
            "{}: an SQLite file without the tables CUPTI_ACTIVITY_KIND_KERNEL and StringIds; is it an `nsys export --type sqlite` of a run traced with `--trace cuda`?",
            path.display()
        );
    }
    let mut times = GpuTimes::default();
    let mut query = db.prepare(
        "SELECT s.value, COUNT(*), SUM(k.end - k.start)
         FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName
         GROUP BY s.value",
    )?;
    let rows = query.query_map([], |row| {
        Ok(KernelTime { name: row.get(0)?, launches: row.get::<_, i64>(1)? as u64, total_ns: row.get::<_, i64>(2)?.max(0) as u64 })
    })?;
    for row in rows {
        times.kernels.push(row.with_context(|| format!("{}: a kernel row could not be read", path.display()))?);
    }
    for table in ["CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"] {
        if has_table(table)? {
            let ns: i64 = db.query_row(&format!("SELECT COALESCE(SUM(end - start), 0) FROM {table}"), [], |r| r.get(0))?;
            times.other_ns += ns.max(0) as u64;
        }
    }
    if times.kernels.is_empty() {
        bail!("{}: the export holds no kernel launches", path.display());
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_torch_trace_gives_kernel_and_copy_times() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "trace.json",
            r#"{"schemaVersion": 1, "traceEvents": [
              {"ph": "X", "cat": "cpu_op", "name": "aten::softmax", "ts": 1, "dur": 50.0},
              {"ph": "X", "cat": "kernel", "name": "void softmax_kernel<float>(float*, float const*, int)", "ts": 2, "dur": 12.5, "args": {"grid": [8, 1, 1]}},
              {"ph": "X", "cat": "kernel", "name": "void softmax_kernel<float>(float*, float const*, int)", "ts": 20, "dur": 7.5},
              {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "ts": 30, "dur": 5.0},
              {"ph": "f", "cat": "ac2g", "name": "flow", "ts": 2}
            ]}"#,
        );
        let (format, times) = import(&path).unwrap();
        assert_eq!(format, Format::TorchTrace);
        assert_eq!(times.kernels.len(), 2);
        assert_eq!(times.kernels.iter().map(|k| k.total_ns).sum::<u64>(), 20_000);
        assert_eq!(times.other_ns, 5_000);
    }

    #[test]
    fn an_nsys_export_gives_kernel_times_by_demangled_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.sqlite");
        let db = rusqlite::Connection::open(&path).unwrap();
        db.execute_batch(
            "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, demangledName INTEGER, shortName INTEGER);
             CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL);
             INSERT INTO StringIds VALUES (1, 'scale(float*, float, int)'), (2, 'scale');
             INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (0, 100, 1, 2), (200, 350, 1, 2);
             INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (400, 410);",
        )
        .unwrap();
        drop(db);
        let (format, times) = import(&path).unwrap();
        assert_eq!(format, Format::NsysSqlite);
        assert_eq!(times.kernels, [KernelTime { name: "scale(float*, float, int)".into(), launches: 2, total_ns: 250 }]);
        assert_eq!(times.other_ns, 10);
    }

    #[test]
    fn other_files_are_refused_with_what_was_expected() {
        let dir = tempfile::tempdir().unwrap();
        let text = write(dir.path(), "notes.txt", "kernel times: fast");
        assert!(import(&text).unwrap_err().to_string().contains("neither a PyTorch profiler trace"));
        let cpu_only = write(dir.path(), "cpu.json", r#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "dur": 3}]}"#);
        assert!(import(&cpu_only).unwrap_err().to_string().contains("ProfilerActivity.CUDA"));
        let broken = write(dir.path(), "broken.json", r#"{"traceEvents": [{"ph": "X""#);
        let error = format!("{:#}", import(&broken).unwrap_err());
        assert!(error.contains("broken.json") && error.contains("not a PyTorch profiler trace"), "{error}");
        let other_db = dir.path().join("other.sqlite");
        rusqlite::Connection::open(&other_db).unwrap().execute_batch("CREATE TABLE t (x INTEGER);").unwrap();
        assert!(import(&other_db).unwrap_err().to_string().contains("CUPTI_ACTIVITY_KIND_KERNEL"));
    }
}
