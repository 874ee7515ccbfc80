//! `cutune bench`: analysis speed and server memory on generated CUDA files.
//!
//! Analysis is timed in-process (it is what every keystroke costs). Hover and symbols are timed
//! through a real `cutune lsp` child over stdio, JSON and pipes included, because that is the
//! latency an editor sees; its peak memory is read from `/proc` after opening many files.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

use crate::syntax::{Change, Document, Encoding, TextPosition};

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Lines of the generated CUDA file.
    #[arg(long, default_value_t = 5000)]
    lines: usize,
    /// Files the server holds open for the memory measurement.
    #[arg(long, default_value_t = 100)]
    files: usize,
    /// Repetitions of each timed operation.
    #[arg(long, default_value_t = 300)]
    repeats: usize,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
    /// Instead: time hover and inlay hints over stdio while the server tunes `--kernel` of this
    /// file (with the spec beside it) on the GPU, or on `--replay`.
    #[arg(long, requires = "kernel")]
    during_tune: Option<PathBuf>,
    #[arg(long)]
    kernel: Option<String>,
    /// Recorded measurements to tune on instead of the GPU.
    #[arg(long)]
    replay: Option<PathBuf>,
    /// Configurations of that tuning run.
    #[arg(long, default_value_t = 200)]
    budget: u64,
    /// Instead: build the workspace index of the project around this folder (its root found as
    /// templatize finds it) and report its size, build time and this process's peak memory.
    #[arg(long, conflicts_with = "during_tune")]
    index: Option<PathBuf>,
}

/// The workspace index of one project.
#[derive(serde::Serialize)]
struct IndexReport {
    root: String,
    files: usize,
    skipped: usize,
    source_mib: f64,
    /// A build from nothing (a new index each time; the OS file cache warm).
    build: Timing,
    /// A refresh that finds nothing changed.
    refresh: Timing,
    peak_rss_mib: Option<f64>,
}

fn index(dir: &Path, repeats: usize) -> Result<IndexReport> {
    use crate::workspace::{find_root, Limits, Workspace};
    let root = find_root(dir);
    let mut builds = Vec::new();
    let mut workspace = Workspace::build(&root, Limits::default());
    for _ in 0..repeats {
        let started = Instant::now();
        workspace = Workspace::build(&root, Limits::default());
        builds.push(started.elapsed());
    }
    let mut refreshes = Vec::new();
    for _ in 0..repeats {
        let started = Instant::now();
        workspace.refresh();
        refreshes.push(started.elapsed());
    }
    let bytes: u64 = workspace.files().map(|(_, entry)| entry.stamp.bytes).sum();
    Ok(IndexReport {
        root: root.display().to_string(),
        files: workspace.files().count(),
        skipped: workspace.skipped().len(),
        source_mib: bytes as f64 / (1 << 20) as f64,
        build: Timing::of(builds),
        refresh: Timing::of(refreshes),
        peak_rss_mib: process_memory_mib(std::process::id()).0,
    })
}

fn mib(value: Option<f64>) -> String {
    value.map(|m| format!("{m:.1} MiB")).unwrap_or_else(|| "n/a (no /proc)".into())
}

/// Peak and current resident memory of a process, from `/proc` (Linux only).
fn process_memory_mib(pid: u32) -> (Option<f64>, Option<f64>) {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return (None, None) };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Hover and inlay-hint latency while a tuning run is in progress.
#[derive(serde::Serialize)]
struct DuringTune {
    file: String,
    kernel: String,
    /// From the tune command to the end of the run.
    run_seconds: f64,
    /// How the run ended, as the server said it.
    ended: String,
    hover: Timing,
    inlay_hints: Timing,
}

#[derive(serde::Serialize)]
struct Timing {
    median_us: f64,
    p99_us: f64,
    max_us: f64,
    samples: usize,
}

impl Timing {
    fn of(mut samples: Vec<Duration>) -> Timing {
        samples.sort();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let at = |q: f64| us(samples[((samples.len() - 1) as f64 * q).round() as usize]);
        Timing { median_us: at(0.5), p99_us: at(0.99), max_us: at(1.0), samples: samples.len() }
    }
}

#[derive(serde::Serialize)]
struct Report {
    file_lines: usize,
    file_bytes: usize,
    kernels: usize,
    launches: usize,
    /// tree-sitter alone, to show what the analysis adds on top of parsing.
    parse_only: Timing,
    full_analysis: Timing,
    reparse_only_after_edit: Timing,
    one_char_edit: Timing,
    hover_over_stdio: Timing,
    symbols_over_stdio: Timing,
    /// The bench client's share of a symbols round trip: parsing the answer's JSON.
    symbols_client_parse: Timing,
    symbols_answer_bytes: usize,
    files_open: usize,
    server_peak_rss_mib: Option<f64>,
    server_rss_mib: Option<f64>,
}

pub fn run(args: &BenchArgs) -> Result<()> {
    if let Some(dir) = &args.index {
        let report = index(dir, args.repeats.clamp(1, 20))?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            println!("workspace index of {}: {} files, {:.1} MiB of sources, {} left out", report.root, report.files, report.source_mib, report.skipped);
            let ms = |t: &Timing| format!("{:.1} ms median, {:.1} ms max of {}", t.median_us / 1e3, t.max_us / 1e3, t.samples);
            println!("build: {}; refresh with nothing changed: {}; peak RSS of this process {}", ms(&report.build), ms(&report.refresh), mib(report.peak_rss_mib));
        }
        return Ok(());
    }
    if let (Some(file), Some(kernel)) = (&args.during_tune, &args.kernel) {
        let report = during_tune(file, kernel, args)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            println!("while tuning `{}` of {} ({:.2} s; {})", report.kernel, report.file, report.run_seconds, report.ended);
            println!("{:<28} {:>12} {:>12} {:>12} {:>8}", "operation", "median µs", "p99 µs", "max µs", "n");
            for (name, t) in [("hover (stdio round trip)", &report.hover), ("inlay hints (stdio)", &report.inlay_hints)] {
                println!("{name:<28} {:>12.1} {:>12.1} {:>12.1} {:>8}", t.median_us, t.p99_us, t.max_us, t.samples);
            }
        }
        return Ok(());
    }
    if args.repeats == 0 || args.files == 0 {
        bail!("--repeats and --files must be at least 1");
    }
    let text = generate_cuda(args.lines, 0);
    let doc = Document::new(text.clone());
    let model = doc.model().clone();
    if model.kernels.is_empty() {
        bail!("the generated file has no kernels; the generator is broken");
    }

    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&crate::syntax::language())?;
    let parse_only = Timing::of((0..args.repeats).map(|_| time(|| parser.parse(&text, None))).collect());
    let full_analysis = Timing::of((0..args.repeats).map(|_| time(|| Document::new(text.clone()))).collect());
    let reparse_only_after_edit = Timing::of(time_reparses(&mut parser, &doc, args.repeats)?);
    let one_char_edit = Timing::of(time_one_char_edits(&doc, args.repeats)?);

    let mut server = Server::start()?;
    server.open("file:///bench/0.cu", &text)?;
    let hover_at = model.launches.iter().map(|l| l.callee_span.start).chain(model.kernels.iter().map(|k| k.name_span.start)).collect::<Vec<_>>();
    let hover_over_stdio = Timing::of(
        (0..args.repeats)
            .map(|i| {
                let p = hover_at[i % hover_at.len()];
                let params = json!({"textDocument": {"uri": "file:///bench/0.cu"}, "position": {"line": p.line, "character": p.column}});
                server.timed_request("textDocument/hover", params)
            })
            .collect::<Result<_>>()?,
    );
    let symbols_over_stdio = Timing::of(
        (0..args.repeats)
            .map(|_| server.timed_request("textDocument/documentSymbol", json!({"textDocument": {"uri": "file:///bench/0.cu"}})))
            .collect::<Result<_>>()?,
    );
    let symbols_answer = server.last_body.clone();
    let symbols_client_parse =
        Timing::of((0..args.repeats).map(|_| time(|| serde_json::from_slice::<Value>(&symbols_answer))).collect());
    for i in 1..args.files {
        server.open(&format!("file:///bench/{i}.cu"), &generate_cuda(args.lines, i))?;
    }
    // Opens are applied in order before any later request, so this answer means all are in.
    let last = format!("file:///bench/{}.cu", args.files - 1);
    server.timed_request("textDocument/documentSymbol", json!({"textDocument": {"uri": last}}))?;
    let (server_peak_rss_mib, server_rss_mib) = server.memory_mib();
    server.stop()?;

    let report = Report {
        file_lines: text.lines().count(),
        file_bytes: text.len(),
        kernels: model.kernels.len(),
        launches: model.launches.len(),
        parse_only,
        full_analysis,
        reparse_only_after_edit,
        one_char_edit,
        hover_over_stdio,
        symbols_over_stdio,
        symbols_client_parse,
        symbols_answer_bytes: symbols_answer.len(),
        files_open: args.files,
        server_peak_rss_mib,
        server_rss_mib,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(())
}

/// Starts a tuning run through `cutune.tune` and, until it ends, asks for the kernel's hover and
/// the file's inlay hints in turn, timing each round trip. Results go to a temporary folder.
fn during_tune(file: &Path, kernel: &str, args: &BenchArgs) -> Result<DuringTune> {
    let file = file.canonicalize().with_context(|| format!("cannot find {}", file.display()))?;
    let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
    let doc = Document::new(text.clone());
    let name = doc.model().kernels.iter().find(|k| k.is_definition && k.name == kernel).ok_or_else(|| anyhow!("{} defines no kernel `{kernel}`", file.display()))?.name_span.start;
    let results = std::env::temp_dir().join(format!("cutune-bench-{}", std::process::id()));
    let mut options = json!({"budget": args.budget, "resultsLocation": results.display().to_string()});
    if let Some(replay) = &args.replay {
        options["replay"] = json!(replay.canonicalize().with_context(|| format!("cannot find {}", replay.display()))?.display().to_string());
    }
    let mut server = Server::start_with(options)?;
    let uri = format!("file://{}", file.display());
    server.open(&uri, &text)?;
    let started = Instant::now();
    server.request("workspace/executeCommand", json!({"command": "cutune.tune", "arguments": [{"uri": uri, "kernel": kernel}]}))?;
    let hover_params = json!({"textDocument": {"uri": uri}, "position": {"line": name.line, "character": name.column}});
    let hints_params = json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": text.lines().count() + 1, "character": 0}}});
    let (mut hover, mut hints) = (Vec::new(), Vec::new());
    let ended = loop {
        // The run's end is a `window/showMessage` (success, failure or no device).
        if let Some(message) = server.notifications.iter().find(|n| n["method"] == "window/showMessage").map(|n| n["params"]["message"].as_str().unwrap_or_default().to_string()) {
            break message;
        }
        hover.push(server.timed_request("textDocument/hover", hover_params.clone())?);
        hints.push(server.timed_request("textDocument/inlayHint", hints_params.clone())?);
    };
    let run_seconds = started.elapsed().as_secs_f64();
    server.stop()?;
    let _ = std::fs::remove_dir_all(&results);
    if hover.is_empty() {
        bail!("the run ended before the first request: {ended}");
    }
    Ok(DuringTune { file: file.display().to_string(), kernel: kernel.to_string(), run_seconds, ended, hover: Timing::of(hover), inlay_hints: Timing::of(hints) })
}

fn time<T>(f: impl FnOnce() -> T) -> Duration {
    let start = Instant::now();
    std::hint::black_box(f());
    start.elapsed()
}

/// Where the benchmark types: just after the name of a kernel in the middle of the file.
fn edit_point(doc: &Document) -> usize {
    let model = doc.model();
    model.kernels[model.kernels.len() / 2].name_span.end_byte
}

/// tree-sitter's incremental re-parse after inserting one character, without the model.
fn time_reparses(parser: &mut tree_sitter::Parser, doc: &Document, repeats: usize) -> Result<Vec<Duration>> {
    let old_tree = parser.parse(doc.text(), None).ok_or_else(|| anyhow!("tree-sitter gave no tree"))?;
    let at = edit_point(doc);
    let mut new_text = doc.text().to_string();
    new_text.insert(at, 'x');
    let position = doc.position(Encoding::Utf8, at);
    let point = tree_sitter::Point { row: position.line as usize, column: position.column as usize };
    let edit = tree_sitter::InputEdit {
        start_byte: at,
        old_end_byte: at,
        new_end_byte: at + 1,
        start_position: point,
        old_end_position: point,
        new_end_position: tree_sitter::Point { column: point.column + 1, ..point },
    };
    Ok((0..repeats)
        .map(|_| {
            let mut edited = old_tree.clone();
            edited.edit(&edit);
            time(|| parser.parse(&new_text, Some(&edited)))
        })
        .collect())
}

/// Types and deletes one character inside a kernel's name, alternately, so the file stays the
/// same; each edit is a full `Document::apply`: incremental parse plus a new model.
fn time_one_char_edits(doc: &Document, repeats: usize) -> Result<Vec<Duration>> {
    let at = doc.position(Encoding::Utf8, edit_point(doc));
    let insert = [Change::Range { start: at, end: at, text: "x".into() }];
    let after = TextPosition { line: at.line, column: at.column + 1 };
    let delete = [Change::Range { start: at, end: after, text: String::new() }];
    let mut current = doc.clone();
    let mut samples = Vec::with_capacity(repeats);
    for i in 0..repeats {
        let changes = if i % 2 == 0 { &insert } else { &delete };
        let start = Instant::now();
        current = current.apply(Encoding::Utf8, changes).map_err(|e| anyhow!("bench edit failed: {e}"))?;
        samples.push(start.elapsed());
    }
    Ok(samples)
}

fn render(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "file: {} lines, {} bytes, {} kernels, {} launch sites", r.file_lines, r.file_bytes, r.kernels, r.launches);
    let _ = writeln!(out, "{:<28} {:>12} {:>12} {:>12} {:>8}", "operation", "median µs", "p99 µs", "max µs", "n");
    for (name, t) in [
        ("tree-sitter parse only", &r.parse_only),
        ("full analysis", &r.full_analysis),
        ("tree-sitter reparse only", &r.reparse_only_after_edit),
        ("one-character edit", &r.one_char_edit),
        ("hover (stdio round trip)", &r.hover_over_stdio),
        ("symbols (stdio round trip)", &r.symbols_over_stdio),
        ("  of which client JSON parse", &r.symbols_client_parse),
    ] {
        let _ = writeln!(out, "{name:<28} {:>12.1} {:>12.1} {:>12.1} {:>8}", t.median_us, t.p99_us, t.max_us, t.samples);
    }
    let _ = writeln!(out, "symbols answer: {} bytes", r.symbols_answer_bytes);
    let _ = writeln!(out, "server with {} files open: peak RSS {}, RSS {}", r.files_open, mib(r.server_peak_rss_mib), mib(r.server_rss_mib));
    out
}

/// A CUDA file of about `lines` lines shaped like real kernel code: defines, device helpers,
/// templated and plain kernels with shared memory and unrolled loops, host launchers. `variant`
/// changes names so that many files differ.
pub fn generate_cuda(lines: usize, variant: usize) -> String {
    let mut out = String::from("#include <cuda_fp16.h>\n#include <cstdint>\n\n#define WARP 32\n");
    let mut line_count = out.lines().count();
    let mut i = 0;
    while line_count < lines {
        let mut chunk = String::new();
        let _ = write!(
            chunk,
            r#"
#define BLOCK_{i} {block}
#define TILE_{i} 32

__device__ __forceinline__ float warp_sum_{v}_{i}(float x) {{
#pragma unroll
  for (int offset = WARP / 2; offset > 0; offset /= 2) {{
    x += __shfl_xor_sync(0xffffffff, x, offset);
  }}
  return x;
}}

template <int BLOCK, typename T>
__global__ void __launch_bounds__(BLOCK) rmsnorm_{v}_{i}(T* __restrict__ out, const T* __restrict__ in,
                                                         const T* __restrict__ weight, int hidden, float eps) {{
  __shared__ float partial[BLOCK / WARP];
  const T* row = in + (size_t)blockIdx.x * hidden;
  float sum = 0.f;
  for (int j = threadIdx.x; j < hidden; j += BLOCK) {{
    float v = static_cast<float>(row[j]);
    sum += v * v;
  }}
  sum = warp_sum_{v}_{i}(sum);
  if (threadIdx.x % WARP == 0) partial[threadIdx.x / WARP] = sum;
  __syncthreads();
  float total = threadIdx.x < BLOCK / WARP ? partial[threadIdx.x] : 0.f;
  total = warp_sum_{v}_{i}(total);
  float scale = rsqrtf(total / hidden + eps);
  for (int j = threadIdx.x; j < hidden; j += BLOCK) {{
    out[(size_t)blockIdx.x * hidden + j] = static_cast<T>(static_cast<float>(row[j]) * scale * static_cast<float>(weight[j]));
  }}
}}

__global__ void transpose_{v}_{i}(float* __restrict__ odata, const float* __restrict__ idata, int width, int height) {{
  __shared__ float tile[TILE_{i}][TILE_{i} + 1];
  int x = blockIdx.x * TILE_{i} + threadIdx.x;
  int y = blockIdx.y * TILE_{i} + threadIdx.y;
#pragma unroll 4
  for (int j = 0; j < TILE_{i}; j += blockDim.y) {{
    if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
  }}
  __syncthreads();
  x = blockIdx.y * TILE_{i} + threadIdx.x;
  y = blockIdx.x * TILE_{i} + threadIdx.y;
  for (int j = 0; j < TILE_{i}; j += blockDim.y) {{
    if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
  }}
}}

void launch_{v}_{i}(half* out, const half* in, const half* w, float* o, const float* a, int rows, int hidden, int width, int height, cudaStream_t stream) {{
  rmsnorm_{v}_{i}<BLOCK_{i}, half><<<rows, BLOCK_{i}, 0, stream>>>(out, in, w, hidden, 1e-6f);
  dim3 block(TILE_{i}, 8);
  dim3 grid((width + TILE_{i} - 1) / TILE_{i}, (height + TILE_{i} - 1) / TILE_{i});
  transpose_{v}_{i}<<<grid, block, 0, stream>>>(o, a, width, height);
}}
"#,
            v = variant,
            block = [128, 256, 512, 1024][i % 4],
        );
        line_count += chunk.matches('\n').count();
        out.push_str(&chunk);
        i += 1;
    }
    out
}

/// A `cutune lsp` child process spoken to over its stdin/stdout.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: i64,
    /// The body of the last message received, as sent.
    last_body: Vec<u8>,
    /// Notifications received while waiting for answers.
    notifications: Vec<Value>,
}

impl Server {
    fn start() -> Result<Server> {
        Server::start_with(Value::Null)
    }

    /// A server given `options` as its `initializationOptions` (the client's settings).
    fn start_with(options: Value) -> Result<Server> {
        let exe = std::env::current_exe().context("cannot find the cutune binary to start the server")?;
        let mut child = Command::new(exe)
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start `cutune lsp`")?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut server = Server { child, stdin, stdout, next_id: 0, last_body: Vec::new(), notifications: Vec::new() };
        server.request("initialize", json!({"capabilities": {"general": {"positionEncodings": ["utf-8"]}}, "initializationOptions": options}))?;
        server.notify("initialized", json!({}))?;
        Ok(server)
    }

    fn send(&mut self, message: Value) -> Result<()> {
        let body = serde_json::to_vec(&message)?;
        write!(self.stdin, "Content-Length: {}\r\n\r\n", body.len())?;
        self.stdin.write_all(&body)?;
        self.stdin.flush()?;
        Ok(())
    }

    fn receive(&mut self) -> Result<Value> {
        let mut length = None;
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line)? == 0 {
                bail!("the server closed its output");
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length:") {
                length = Some(v.trim().parse::<usize>()?);
            }
        }
        self.last_body.resize(length.ok_or_else(|| anyhow!("message without Content-Length"))?, 0);
        self.stdout.read_exact(&mut self.last_body)?;
        Ok(serde_json::from_slice(&self.last_body)?)
    }

    fn notify(&mut self, method: &str, params: Value) -> Result<()> {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let mut message = self.receive()?;
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                if let Some(error) = message.get("error") {
                    bail!("{method} failed: {error}");
                }
                return Ok(message["result"].take());
            }
            if message.get("id").is_none() {
                self.notifications.push(message);
            }
        }
    }

    fn timed_request(&mut self, method: &str, params: Value) -> Result<Duration> {
        let start = Instant::now();
        self.request(method, params)?;
        Ok(start.elapsed())
    }

    fn open(&mut self, uri: &str, text: &str) -> Result<()> {
        self.notify("textDocument/didOpen", json!({"textDocument": {"uri": uri, "languageId": "cuda-cpp", "version": 1, "text": text}}))
    }

    /// Peak and current resident memory of the server.
    fn memory_mib(&self) -> (Option<f64>, Option<f64>) {
        process_memory_mib(self.child.id())
    }

    fn stop(mut self) -> Result<()> {
        self.request("shutdown", Value::Null)?;
        self.notify("exit", Value::Null)?;
        let status = self.child.wait()?;
        if !status.success() {
            bail!("the server exited with {status} after shutdown and exit");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_files_have_the_requested_size_and_parse_cleanly() {
        let text = generate_cuda(5000, 3);
        let lines = text.lines().count();
        assert!((5000..5100).contains(&lines), "{lines} lines");
        let model = crate::syntax::analyze(&text);
        assert!(model.syntax_errors.is_empty(), "{:?}", model.syntax_errors.first());
        assert_eq!(model.kernels.len(), model.launches.len());
        assert!(model.kernels.iter().all(|k| k.name.contains("_3_")));
    }
}
