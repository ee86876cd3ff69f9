//! Runs `fs_read` operations for the server: identical operations in flight at the same time
//! run once (single flight), and results of file reads are kept in a small LRU keyed by the
//! file's identity, size and times, so a file that changed is read again.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ctx::fs::read::{
    FsReadInput, FsReadOutput, OpError, OpResult, Operation, ReadOptions, assemble, run_resolved,
};
use ctx::fs::sandbox::{EntryKind, Resolved, Sandbox};
use lru::LruCache;
use serde::Serialize;
use tokio::sync::OnceCell;

/// Results larger than this are not cached (bounds the cache to entries × this).
const MAX_CACHED_BYTES: usize = 64 * 1024;

/// Files up to this size are read on the async thread (a few microseconds); larger ones and
/// directories on the blocking pool.
const INLINE_MAX_BYTES: u64 = 64 * 1024;

type Outcome = Result<OpResult, OpError>;

/// What identifies an operation in flight: the workspace and the operation itself.
type FlightKey = (String, Operation);

/// What identifies a cached result: the operation and the file's identity and state.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    workspace: String,
    op: Operation,
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

/// Counters shown by `/health`.
#[derive(Debug, Default)]
pub struct Stats {
    /// Operations executed (cache hits included).
    pub operations: AtomicU64,
    /// Operations answered from the LRU.
    pub cache_hits: AtomicU64,
    /// Operations that joined an identical one already in flight.
    pub deduplicated: AtomicU64,
}

/// A snapshot of [`Stats`].
#[derive(Debug, Clone, Copy, Serialize)]
pub struct StatsSnapshot {
    pub operations: u64,
    pub cache_hits: u64,
    pub deduplicated: u64,
}

/// How long one operation may run before its request is answered with a timeout (the work
/// itself finishes on the blocking pool; nothing waits for it).
pub const OPERATION_BUDGET: std::time::Duration = std::time::Duration::from_secs(60);

/// The `fs_read` runner shared by all requests.
#[derive(Debug)]
pub struct ToolEngine {
    options: ReadOptions,
    budget: std::time::Duration,
    inflight: Mutex<HashMap<FlightKey, Arc<OnceCell<Outcome>>>>,
    cache: Option<Mutex<LruCache<CacheKey, OpResult>>>,
    stats: Stats,
}

impl ToolEngine {
    /// An engine with `cache_entries` LRU slots (0 disables the cache).
    pub fn new(options: ReadOptions, cache_entries: usize) -> Self {
        Self {
            options,
            budget: OPERATION_BUDGET,
            inflight: Mutex::new(HashMap::new()),
            cache: std::num::NonZeroUsize::new(cache_entries)
                .map(|cap| Mutex::new(LruCache::new(cap))),
            stats: Stats::default(),
        }
    }

    /// Sets how long one operation may run before it is answered with a timeout.
    #[must_use]
    pub fn with_budget(mut self, budget: std::time::Duration) -> Self {
        self.budget = budget;
        self
    }

    /// The counters so far.
    pub fn stats(&self) -> StatsSnapshot {
        StatsSnapshot {
            operations: self.stats.operations.load(Ordering::Relaxed),
            cache_hits: self.stats.cache_hits.load(Ordering::Relaxed),
            deduplicated: self.stats.deduplicated.load(Ordering::Relaxed),
        }
    }

    /// Runs every operation of `input` (in parallel when there are several) and assembles
    /// the capped output.
    pub async fn fs_read(
        self: &Arc<Self>,
        workspace_id: &str,
        workspace: &Arc<Sandbox>,
        input: FsReadInput,
    ) -> FsReadOutput {
        let mut headers = Vec::with_capacity(input.operations.len());
        let mut pending = Vec::with_capacity(input.operations.len());
        let several = input.operations.len() > 1;
        for parsed in input.operations {
            headers.push((parsed.mode, parsed.path));
            match parsed.operation {
                Ok(op) => {
                    let run =
                        Arc::clone(self).run_op(workspace_id.to_owned(), Arc::clone(workspace), op);
                    if several {
                        pending.push(Pending::Task(tokio::spawn(run)));
                    } else {
                        pending.push(Pending::Done(run.await));
                    }
                }
                Err(err) => pending.push(Pending::Done(Err(OpError::from(&err)))),
            }
        }
        let mut items = Vec::with_capacity(headers.len());
        for ((mode, path), outcome) in headers.into_iter().zip(pending) {
            let outcome = match outcome {
                Pending::Done(outcome) => outcome,
                Pending::Task(handle) => handle.await.unwrap_or_else(|err| Err(internal(&err))),
            };
            items.push((mode, path, outcome));
        }
        assemble(items, self.options.max_response_bytes)
    }

    /// One operation, joined with an identical one in flight if there is one.
    async fn run_op(
        self: Arc<Self>,
        workspace_id: String,
        workspace: Arc<Sandbox>,
        op: Operation,
    ) -> Outcome {
        let key: FlightKey = (workspace_id, op);
        let cell = {
            let mut inflight = self.inflight.lock().expect("in-flight lock");
            Arc::clone(inflight.entry(key.clone()).or_default())
        };
        let mut led = false;
        let outcome = cell
            .get_or_init(|| {
                led = true;
                let engine = Arc::clone(&self);
                let (workspace_id, op) = key.clone();
                async move {
                    // Small file reads take microseconds: run them here. Everything else
                    // (directories, large files) goes to the blocking pool.
                    match engine.execute_quick(&workspace_id, &workspace, &op) {
                        Quick::Done(outcome) => outcome,
                        Quick::Blocking(resolved) => {
                            let budget = engine.budget;
                            // Set when the operation is answered with a timeout: its walk
                            // stops rather than running on for nobody.
                            let given_up = ctx::fs::walk::Cancel::default();
                            let cancel = Arc::clone(&given_up);
                            let task = tokio::task::spawn_blocking(move || {
                                engine.execute_resolved(
                                    &workspace_id,
                                    &workspace,
                                    &op,
                                    &resolved,
                                    Some(cancel),
                                )
                            });
                            match tokio::time::timeout(budget, task).await {
                                Ok(joined) => joined.unwrap_or_else(|err| Err(internal(&err))),
                                Err(_) => Err({
                                    given_up.store(true, Ordering::Relaxed);
                                    OpError {
                                    kind: "timeout",
                                    message: format!(
                                        "the operation took longer than {} s; narrow it (a subdirectory, a smaller depth, a more specific pattern)",
                                        budget.as_secs_f64()
                                    ),
                                }}),
                            }
                        }
                    }
                }
            })
            .await
            .clone();
        if !led {
            self.stats.deduplicated.fetch_add(1, Ordering::Relaxed);
        }
        let mut inflight = self.inflight.lock().expect("in-flight lock");
        if inflight
            .get(&key)
            .is_some_and(|current| Arc::ptr_eq(current, &cell))
        {
            inflight.remove(&key);
        }
        outcome
    }

    /// Resolves the operation's path and, for a small file, runs it at once; otherwise hands
    /// back the resolved path to run on the blocking pool.
    fn execute_quick(&self, workspace_id: &str, workspace: &Sandbox, op: &Operation) -> Quick {
        self.stats.operations.fetch_add(1, Ordering::Relaxed);
        let resolved = match workspace.resolve(op.path()) {
            Ok(resolved) => resolved,
            Err(err) => return Quick::Done(Err(OpError::from(&ctx::fs::FsReadError::from(err)))),
        };
        let small_file =
            resolved.kind == EntryKind::File && resolved.meta.len() <= INLINE_MAX_BYTES;
        if small_file {
            Quick::Done(self.execute_resolved(workspace_id, workspace, op, &resolved, None))
        } else {
            Quick::Blocking(Box::new(resolved))
        }
    }

    /// Runs one resolved operation, through the LRU for file reads.
    fn execute_resolved(
        &self,
        workspace_id: &str,
        workspace: &Sandbox,
        op: &Operation,
        resolved: &Resolved,
        cancel: Option<ctx::fs::walk::Cancel>,
    ) -> Outcome {
        let cacheable =
            resolved.kind == EntryKind::File && !matches!(op, Operation::Directory { .. });
        let key = cacheable.then(|| {
            let meta = &resolved.meta;
            CacheKey {
                workspace: workspace_id.to_owned(),
                op: op.clone(),
                dev: meta.dev(),
                ino: meta.ino(),
                size: meta.len(),
                mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
                ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
            }
        });
        if let (Some(key), Some(cache)) = (&key, &self.cache)
            && let Some(hit) = cache.lock().expect("cache lock").get(key)
        {
            self.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(hit.clone());
        }
        let options = ReadOptions {
            cancel,
            ..self.options.clone()
        };
        let result =
            run_resolved(workspace, resolved, op, &options).map_err(|err| OpError::from(&err))?;
        if let (Some(key), Some(cache)) = (key, &self.cache)
            && result.size() <= MAX_CACHED_BYTES
        {
            cache.lock().expect("cache lock").put(key, result.clone());
        }
        Ok(result)
    }
}

/// Whether an operation finished on the async thread or needs the blocking pool.
enum Quick {
    Done(Outcome),
    Blocking(Box<Resolved>),
}

enum Pending {
    Done(Outcome),
    Task(tokio::task::JoinHandle<Outcome>),
}

fn internal(err: &tokio::task::JoinError) -> OpError {
    OpError {
        kind: "io",
        message: format!("internal error while reading: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctx::fs::read::Operation;

    #[tokio::test]
    async fn an_operation_over_its_budget_is_answered_with_a_timeout_and_the_engine_goes_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        for i in 0..2_000 {
            let sub = dir.path().join(format!("d{}", i % 40));
            std::fs::create_dir_all(&sub).expect("mkdir");
            std::fs::write(sub.join(format!("f{i}.txt")), "text\n").expect("write");
        }
        let workspace = Arc::new(Sandbox::open(dir.path()).expect("workspace"));
        // The first operation's outcome, as JSON.
        let first =
            |out: FsReadOutput| serde_json::to_value(&out).expect("json")["results"][0].clone();
        let listing = || FsReadInput::new([Operation::directory(".", 3)]);
        let slow = Arc::new(
            ToolEngine::new(ReadOptions::default(), 0).with_budget(std::time::Duration::ZERO),
        );
        let timed_out = first(slow.fs_read("w", &workspace, listing()).await);
        assert_eq!(timed_out["ok"], false, "{timed_out}");
        assert_eq!(timed_out["error"]["kind"], "timeout", "{timed_out}");
        // A small file read is answered inline, within any budget.
        let line = first(
            slow.fs_read(
                "w",
                &workspace,
                FsReadInput::new([Operation::line("d0/f0.txt")]),
            )
            .await,
        );
        assert_eq!(line["ok"], true, "{line}");
        // With the default budget the listing completes.
        let engine = Arc::new(ToolEngine::new(ReadOptions::default(), 0));
        let listed = first(engine.fs_read("w", &workspace, listing()).await);
        assert_eq!(listed["ok"], true, "{listed}");
    }
}
