//! `store verify` and `store gc`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use ctx_core::ContentHash;
use serde::Serialize;

use crate::objects::read_dir_sorted;
use crate::{ObjectReference, Objects, Store, StoreError};

/// One thing wrong with a store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Problem {
    /// The object's bytes no longer hash to its name.
    CorruptObject {
        object: ContentHash,
        actual: ContentHash,
        path: PathBuf,
    },
    /// A file in the object directory whose name is not a hash.
    StrayFile { path: PathBuf },
    /// The object could not be read.
    UnreadableObject { path: PathBuf, error: String },
    /// The database references an object that is not in the store.
    MissingObject {
        object: ContentHash,
        table: &'static str,
        column: &'static str,
    },
    /// The database holds something that is not a hash where a hash belongs.
    MalformedReference {
        value: String,
        table: &'static str,
        column: &'static str,
    },
    /// SQLite's own integrity or foreign-key check failed.
    Database { detail: String },
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::CorruptObject {
                object,
                actual,
                path,
            } => {
                write!(
                    f,
                    "corrupt object {object} ({}): content hashes to {actual}",
                    path.display()
                )
            }
            Self::StrayFile { path } => write!(f, "stray file {} (not an object)", path.display()),
            Self::UnreadableObject { path, error } => {
                write!(f, "unreadable object {}: {error}", path.display())
            }
            Self::MissingObject {
                object,
                table,
                column,
            } => {
                write!(
                    f,
                    "missing object {object} (referenced by {table}.{column})"
                )
            }
            Self::MalformedReference {
                value,
                table,
                column,
            } => {
                write!(f, "malformed reference `{value}` in {table}.{column}")
            }
            Self::Database { detail } => write!(f, "database: {detail}"),
        }
    }
}

/// What `store verify` checked and found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct VerifyReport {
    pub objects_checked: u64,
    pub bytes_checked: u64,
    pub references_checked: u64,
    pub problems: Vec<Problem>,
}

impl VerifyReport {
    /// Whether nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// How `store gc` decides what to remove.
#[derive(Debug, Clone, Copy)]
pub struct GcOptions {
    /// The current time (passed in, so the library reads no clock).
    pub now: SystemTime,
    /// Unreferenced objects and temporary files younger than this are kept: a concurrent
    /// writer may be about to reference them.
    pub grace: Duration,
    /// Report what would be removed without removing it.
    pub dry_run: bool,
}

/// What `store gc` removed (or would remove).
#[derive(Debug, Clone, Default, Serialize)]
pub struct GcReport {
    pub objects_removed: u64,
    pub bytes_freed: u64,
    pub objects_kept: u64,
    pub objects_in_grace: u64,
    pub temp_files_removed: u64,
    pub dry_run: bool,
}

struct ObjectCheck {
    bytes: u64,
    problem: Option<Problem>,
}

impl Store {
    /// Re-hashes every object and checks every metadata reference resolves.
    pub fn verify(&self) -> Result<VerifyReport, StoreError> {
        let mut report = VerifyReport::default();
        let listing = self.objects().list()?;
        let mut present = BTreeSet::new();
        let mut to_hash = Vec::new();
        for entry in listing {
            match entry.hash {
                Some(hash) => {
                    present.insert(hash);
                    to_hash.push((hash, entry.location));
                }
                None => report.problems.push(Problem::StrayFile {
                    path: entry.location,
                }),
            }
        }
        for check in hash_in_parallel(self.objects(), &to_hash) {
            report.objects_checked += 1;
            report.bytes_checked += check.bytes;
            report.problems.extend(check.problem);
        }
        for reference in self.db().object_references()? {
            let ObjectReference {
                table,
                column,
                value,
            } = reference;
            report.references_checked += 1;
            match value.parse::<ContentHash>() {
                Ok(object) if present.contains(&object) => {}
                Ok(object) => report.problems.push(Problem::MissingObject {
                    object,
                    table,
                    column,
                }),
                Err(_) => report.problems.push(Problem::MalformedReference {
                    value,
                    table,
                    column,
                }),
            }
        }
        report.problems.extend(
            self.db()
                .integrity_problems()?
                .into_iter()
                .map(|detail| Problem::Database { detail }),
        );
        Ok(report)
    }

    /// Removes objects nothing references, and stale temporary files.
    pub fn gc(&self, options: GcOptions) -> Result<GcReport, StoreError> {
        let mut live = BTreeSet::new();
        for reference in self.db().object_references()? {
            if let Ok(hash) = reference.value.parse::<ContentHash>() {
                live.insert(hash);
            }
        }
        let mut report = GcReport {
            dry_run: options.dry_run,
            ..GcReport::default()
        };
        let is_old = |modified: Option<SystemTime>| {
            modified
                .and_then(|mtime| options.now.duration_since(mtime).ok())
                .is_some_and(|age| age >= options.grace)
        };
        if self.db().gc_marks_in_database() {
            self.sweep_marked(&live, options, &mut report)?;
        } else {
            self.sweep_by_mtime(&live, &is_old, options, &mut report)?;
        }
        self.remove_leftovers(&is_old, options, &mut report)?;
        Ok(report)
    }

    /// gc of a store whose grace period is kept in the database (see [`crate::Metadata`]'s
    /// gc marks): mark what is unreferenced, sweep what was marked long enough ago, each
    /// under its mark's lock; `options.now` is not used, the database's clock is.
    fn sweep_marked(
        &self,
        live: &BTreeSet<ContentHash>,
        options: GcOptions,
        report: &mut GcReport,
    ) -> Result<(), StoreError> {
        let mut unreferenced = Vec::new();
        let mut sizes = std::collections::BTreeMap::new();
        for entry in self.objects().list()? {
            let Some(hash) = entry.hash else { continue };
            if live.contains(&hash) {
                report.objects_kept += 1;
            } else {
                unreferenced.push(hash);
                sizes.insert(hash, entry.len);
            }
        }
        let due = self.db().gc_mark(&unreferenced, options.grace)?;
        report.objects_in_grace += (unreferenced.len() - due.len()) as u64;
        for hash in due {
            let removed = if options.dry_run {
                true
            } else {
                let objects = self.objects();
                self.db()
                    .gc_sweep_one(&hash, options.grace, &mut || objects.remove(&hash))?
            };
            if removed {
                report.objects_removed += 1;
                report.bytes_freed += sizes.get(&hash).copied().unwrap_or(0);
            } else {
                report.objects_kept += 1;
            }
        }
        Ok(())
    }

    /// gc of a local store: an unreferenced object is old when its file is (a writer storing
    /// it again refreshes the file's modification time).
    fn sweep_by_mtime(
        &self,
        live: &BTreeSet<ContentHash>,
        is_old: &dyn Fn(Option<SystemTime>) -> bool,
        options: GcOptions,
        report: &mut GcReport,
    ) -> Result<(), StoreError> {
        for entry in self.objects().list()? {
            let Some(hash) = entry.hash else { continue };
            if live.contains(&hash) {
                report.objects_kept += 1;
                continue;
            }
            if !is_old(entry.modified) {
                report.objects_in_grace += 1;
                continue;
            }
            if !options.dry_run {
                self.objects().remove(&hash)?;
            }
            report.objects_removed += 1;
            report.bytes_freed += entry.len;
        }
        Ok(())
    }

    /// Leftovers of interrupted writes in the local directory.
    fn remove_leftovers(
        &self,
        is_old: &dyn Fn(Option<SystemTime>) -> bool,
        options: GcOptions,
        report: &mut GcReport,
    ) -> Result<(), StoreError> {
        // Leftovers of interrupted writes: anything in `tmp/`, and the staging (`.NAME.tmp-…`)
        // and retired (`.NAME.old-…`) directories of index builds, once past the grace period
        // (a younger one may belong to a write still running).
        let index_leftover = |path: &Path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.') && (n.contains(".tmp-") || n.contains(".old-")))
        };
        let leftovers = read_dir_sorted(&self.dir().join("tmp"))?.into_iter().chain(
            read_dir_sorted(&self.dir().join("indexes"))?
                .into_iter()
                .filter(|p| index_leftover(p)),
        );
        for path in leftovers {
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            if !is_old(meta.modified().ok()) {
                continue;
            }
            if !options.dry_run {
                let removed = if meta.is_dir() {
                    fs::remove_dir_all(&path)
                } else {
                    fs::remove_file(&path)
                };
                removed.map_err(|source| StoreError::Io {
                    path: path.clone(),
                    source,
                })?;
            }
            report.temp_files_removed += 1;
        }
        Ok(())
    }
}

/// Hashes objects on every core (through [`Objects::get`], which checks the hash); results
/// come back in input order.
fn hash_in_parallel(objects: &dyn Objects, entries: &[(ContentHash, PathBuf)]) -> Vec<ObjectCheck> {
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let chunk = entries.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = entries
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|entry| check_object(objects, entry))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("hashing threads do not panic"))
            .collect()
    })
}

fn check_object(objects: &dyn Objects, (object, path): &(ContentHash, PathBuf)) -> ObjectCheck {
    match objects.get(object) {
        Ok(bytes) => ObjectCheck {
            bytes: bytes.len() as u64,
            problem: None,
        },
        Err(StoreError::CorruptObject { actual, .. }) => ObjectCheck {
            bytes: 0,
            problem: Some(Problem::CorruptObject {
                object: *object,
                actual,
                path: path.clone(),
            }),
        },
        Err(err) => ObjectCheck {
            bytes: 0,
            problem: Some(Problem::UnreadableObject {
                path: path.clone(),
                error: err.to_string(),
            }),
        },
    }
}
