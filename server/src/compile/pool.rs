//! Compiling many configurations: a pool of threads, batches (see [`super::batch`]) and a cubin
//! cache on disk, so the GPU measures one configuration while the next ones compile and a
//! second run compiles nothing it has seen.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{batch, CompileRequest, KernelResources, Nvrtc};

/// A configuration's code, ready to load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Compiled {
    pub cubin: PathBuf,
    /// The lowered name of the request's first name expression.
    pub function: String,
    /// ptxas' report for that kernel.
    pub resources: Option<KernelResources>,
    /// This configuration's share of the compile (a batch's time divided among its members).
    pub compile_ms: f64,
    /// Served from the cache: no NVRTC call this time.
    pub cached: bool,
}

/// A failed compile, as cached: compile errors are a property of the code, not of the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failed {
    pub message: String,
    pub log: String,
}

/// What a submitted request turned into, with the caller's id.
pub struct Built {
    pub id: usize,
    pub result: Result<Compiled, Failed>,
}

/// Cubins and compile results on disk, keyed by a hash of everything that decides the output:
/// source, options (defines and include paths among them), name expressions, architecture and
/// NVRTC version. Headers named by `#include` are not hashed: a changed user header needs
/// `--no-cache` (or deleting the folder).
#[derive(Clone, Debug)]
pub struct CubinCache {
    dir: PathBuf,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Entry {
    Compiled { cubin: String, function: String, resources: Option<KernelResources>, compile_ms: f64 },
    Failed(Failed),
}

impl CubinCache {
    pub fn new(dir: impl Into<PathBuf>) -> CubinCache {
        CubinCache { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A request NVRTC would refuse (a bad architecture or define name) has no key: its failure.
    fn key(nvrtc: &Nvrtc, request: &CompileRequest) -> Result<String, Failed> {
        let options = nvrtc.options_for(request).map_err(|f| Failed { message: f.message, log: f.log })?;
        let mut hash = Sha256::new();
        let (major, minor) = nvrtc.version();
        hash.update(format!("nvrtc {major}.{minor}\n"));
        for part in options.iter().chain(&request.name_expressions) {
            hash.update(part.as_bytes());
            hash.update([0]);
        }
        hash.update(request.source.as_bytes());
        Ok(format!("{:x}", hash.finalize()))
    }

    fn get(&self, key: &str) -> Option<Result<Compiled, Failed>> {
        let text = std::fs::read_to_string(self.dir.join(format!("{key}.json"))).ok()?;
        match serde_json::from_str::<Entry>(&text).ok()? {
            Entry::Compiled { cubin, function, resources, compile_ms } => {
                let cubin = self.dir.join(cubin);
                cubin.is_file().then_some(Ok(Compiled { cubin, function, resources, compile_ms, cached: true }))
            }
            Entry::Failed(failed) => Some(Err(failed)),
        }
    }

    /// Best effort: a cache that cannot be written only costs a recompile next time.
    fn put(&self, key: &str, entry: &Entry) {
        if let Ok(text) = serde_json::to_string(entry) {
            write_atomically(&self.dir.join(format!("{key}.json")), text.as_bytes());
        }
    }

    fn put_cubin(&self, key: &str, cubin: &[u8]) -> Option<PathBuf> {
        let path = self.dir.join(format!("{key}.cubin"));
        write_atomically(&path, cubin).then_some(path)
    }
}

/// Writes through a temporary file and a rename, so readers never see half a file.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> bool {
    let Some(dir) = path.parent() else { return false };
    if std::fs::create_dir_all(dir).is_err() {
        return false;
    }
    let temporary = dir.join(format!(".{}.{}.tmp", path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"), std::process::id()));
    std::fs::write(&temporary, bytes).is_ok() && std::fs::rename(&temporary, path).is_ok()
}

struct Job {
    members: Vec<(usize, CompileRequest, String)>,
}

struct Queue {
    jobs: Mutex<(VecDeque<Job>, bool)>,
    ready: Condvar,
}

/// Threads compiling submitted requests; results arrive in completion order.
pub struct CompilePool {
    queue: Arc<Queue>,
    results: Receiver<Built>,
    sender: Sender<Built>,
    cache: CubinCache,
    nvrtc: Nvrtc,
    threads: Vec<std::thread::JoinHandle<()>>,
    batch_size: usize,
}

impl CompilePool {
    /// `threads` compiler threads (NVRTC stops scaling at about 4 in one process); up to
    /// `batch_size` configurations per NVRTC program. Cubins are written to `cache` (the worker
    /// loads them from files); a run that must not reuse old ones passes an empty folder.
    pub fn new(nvrtc: Nvrtc, cache: CubinCache, threads: usize, batch_size: usize) -> CompilePool {
        let queue = Arc::new(Queue { jobs: Mutex::new((VecDeque::new(), false)), ready: Condvar::new() });
        let (sender, results) = channel();
        let workers = (0..threads.max(1))
            .map(|_| {
                let queue = Arc::clone(&queue);
                let sender = sender.clone();
                let nvrtc = nvrtc.clone();
                let cache = cache.clone();
                std::thread::spawn(move || work(&queue, &sender, &nvrtc, &cache))
            })
            .collect();
        CompilePool { queue, results, sender, cache, nvrtc, threads: workers, batch_size: batch_size.max(1) }
    }

    /// Queues requests. Cached ones are answered at once; the rest are grouped into batches
    /// spread over the threads.
    pub fn submit(&self, requests: Vec<(usize, CompileRequest)>) {
        let mut pending = Vec::new();
        for (id, request) in requests {
            // The receiver lives as long as the pool.
            let key = match CubinCache::key(&self.nvrtc, &request) {
                Ok(key) => key,
                Err(refused) => {
                    let _ = self.sender.send(Built { id, result: Err(refused) });
                    continue;
                }
            };
            if let Some(result) = self.cache.get(&key) {
                let _ = self.sender.send(Built { id, result });
                continue;
            }
            pending.push((id, request, key));
        }
        if pending.is_empty() {
            return;
        }
        // Small enough batches that every thread gets one: the first results come sooner.
        let per_thread = pending.len().div_ceil(self.threads.len());
        let size = per_thread.clamp(1, self.batch_size);
        let mut jobs = self.queue.jobs.lock().unwrap_or_else(|e| e.into_inner());
        let mut pending = pending.into_iter().peekable();
        while pending.peek().is_some() {
            jobs.0.push_back(Job { members: pending.by_ref().take(size).collect() });
        }
        drop(jobs);
        self.queue.ready.notify_all();
    }

    /// Hands finished requests back, to be received again by [`CompilePool::recv`] (a caller
    /// waiting for one result sets the others aside this way).
    pub fn put_back(&self, built: Vec<Built>) {
        for built in built {
            // The receiver lives as long as the pool.
            let _ = self.sender.send(built);
        }
    }

    /// The next finished request, waiting for it; `None` only if every thread has died.
    pub fn recv(&self) -> Option<Built> {
        self.results.recv().ok()
    }

    /// A result that is ready now, without waiting.
    pub fn try_recv(&self) -> Option<Built> {
        self.results.try_recv().ok()
    }
}

impl Drop for CompilePool {
    fn drop(&mut self) {
        {
            let mut jobs = self.queue.jobs.lock().unwrap_or_else(|e| e.into_inner());
            jobs.0.clear();
            jobs.1 = true;
        }
        self.queue.ready.notify_all();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

fn work(queue: &Queue, sender: &Sender<Built>, nvrtc: &Nvrtc, cache: &CubinCache) {
    loop {
        let job = {
            let mut jobs = queue.jobs.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if jobs.1 {
                    return;
                }
                if let Some(job) = jobs.0.pop_front() {
                    break job;
                }
                jobs = queue.ready.wait(jobs).unwrap_or_else(|e| e.into_inner());
            }
        };
        for built in compile_job(job, nvrtc, cache) {
            if sender.send(built).is_err() {
                return;
            }
        }
    }
}

fn compile_job(job: Job, nvrtc: &Nvrtc, cache: &CubinCache) -> Vec<Built> {
    if job.members.len() > 1 {
        let requests: Vec<CompileRequest> = job.members.iter().map(|(_, r, _)| r.clone()).collect();
        if let Some(batched) = batch::batch(&requests) {
            let started = Instant::now();
            if let Ok(output) = nvrtc.compile(&batched) {
                let share = started.elapsed().as_secs_f64() * 1e3 / requests.len() as f64;
                // Its members had keys, so the batch has one.
                let cubin = CubinCache::key(nvrtc, &batched).ok().zip(output.cubin.as_deref()).and_then(|(key, bytes)| cache.put_cubin(&key, bytes));
                let parts = batch::split(&output, &requests);
                return job
                    .members
                    .into_iter()
                    .zip(parts)
                    .map(|((id, _, key), (names, kernels))| {
                        let result = match (&cubin, names.first()) {
                            (Some(cubin), Some((_, function))) => Ok(finish(cache, &key, cubin.clone(), function.clone(), kernels, share)),
                            _ => Err(Failed { message: "NVRTC produced no cubin or no kernel name".into(), log: output.log.clone() }),
                        };
                        Built { id, result }
                    })
                    .collect();
            }
        }
    }
    // One at a time: a batch that failed says nothing about which member is at fault.
    job.members.into_iter().map(|(id, request, key)| Built { id, result: compile_one(nvrtc, cache, &request, &key) }).collect()
}

fn compile_one(nvrtc: &Nvrtc, cache: &CubinCache, request: &CompileRequest, key: &str) -> Result<Compiled, Failed> {
    let started = Instant::now();
    match nvrtc.compile(request) {
        Ok(output) => {
            let compile_ms = started.elapsed().as_secs_f64() * 1e3;
            let function = output.lowered_names.first().map(|(_, l)| l.clone());
            let cubin = output.cubin.as_deref().and_then(|bytes| cache.put_cubin(key, bytes));
            match (cubin, function) {
                (Some(cubin), Some(function)) => {
                    let kernels = output.kernels.into_iter().filter(|k| k.name == function).collect();
                    Ok(finish(cache, key, cubin, function, kernels, compile_ms))
                }
                _ => Err(Failed { message: "NVRTC produced no cubin or no kernel name".into(), log: output.log }),
            }
        }
        Err(failure) => {
            let failed = Failed { message: failure.message.clone(), log: failure.log.clone() };
            cache.put(key, &Entry::Failed(failed.clone()));
            Err(failed)
        }
    }
}

fn finish(cache: &CubinCache, key: &str, cubin: PathBuf, function: String, kernels: Vec<KernelResources>, compile_ms: f64) -> Compiled {
    let resources = kernels.into_iter().find(|k| k.name == function);
    let file = cubin.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    cache.put(key, &Entry::Compiled { cubin: file, function: function.clone(), resources: resources.clone(), compile_ms });
    Compiled { cubin, function, resources, compile_ms, cached: false }
}

/// `f` of every item on a pool of `jobs` threads (default: up to 4, where NVRTC stops
/// scaling), results in the items' order.
pub fn parallel_map<T: Sync, R: Send>(items: &[T], jobs: Option<usize>, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let results: std::sync::Mutex<Vec<Option<R>>> = std::sync::Mutex::new((0..items.len()).map(|_| None).collect());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get().min(4))).max(1);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(item) = items.get(i) else { break };
                let result = f(item);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(result);
            });
        }
    });
    results.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().flatten().collect()
}
