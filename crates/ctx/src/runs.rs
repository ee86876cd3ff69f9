//! Run records: everything of `ctx-runs` (import, load, diff, fork, export, replay,
//! provenance), plus the use cases several front ends share.

pub use ctx_runs::*;

use ctx_store::Store;

/// A run and the refs that name it (tags, `latest`), as `run show` and `ctx_runs_show` show
/// it. `id` is a run id, a unique prefix of one, or a ref.
pub fn load_with_refs(store: &Store, id: &str) -> Result<(Run, Vec<String>), RunError> {
    let run = load_run(store, id)?;
    let refs = refs_by_run(store)?.remove(&run.id).unwrap_or_default();
    Ok((run, refs))
}

/// Refuses a transcript path that is not there (or cannot be looked at) before anything is
/// stored, so bad input leaves no store behind where there was none.
pub fn check_importable(path: &std::path::Path) -> Result<(), RunError> {
    std::fs::metadata(path)
        .map(|_| ())
        .map_err(|source| RunError::Read {
            path: path.to_owned(),
            source,
        })
}
