//! SQLite metadata: connection settings, versioned migrations, refs and the token cache.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use ctx_core::{ContentHash, TokenizerKind};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use std::collections::BTreeSet;

use crate::StoreError;
use crate::metadata::parse_hash;
use crate::metadata::{Metadata, ObjectReference};
use crate::packs::{
    ArtifactRecord, NewArtifact, NewPack, PackRecord, SnapshotItemRecord, SnapshotRecord,
};
use crate::render_cache::{RenderFileRow, RenderPayloadRow};
use crate::runs::RunRow;
use crate::summary_cache::{FileStampRow, StampedKey, SummaryKey};

/// One schema step: applied once, in order, inside a transaction; recorded in `user_version`.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// The schema version this migration produces (1, 2, …).
    pub version: i64,
    /// The SQL it runs.
    pub sql: &'static str,
}

/// The schema, oldest first. Append only: a released migration never changes.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: "
        -- Token counts by content hash and tokenizer: rendering an unchanged tree again
        -- tokenizes nothing.
        CREATE TABLE token_counts (
            content_hash TEXT NOT NULL,
            tokenizer    TEXT NOT NULL,
            tokens       INTEGER NOT NULL CHECK (tokens >= 0),
            PRIMARY KEY (content_hash, tokenizer)
        ) STRICT, WITHOUT ROWID;

        -- Named pointers to objects (`latest`, tags, …), grouped by namespace.
        CREATE TABLE refs (
            namespace TEXT NOT NULL,
            name      TEXT NOT NULL,
            object    TEXT NOT NULL,
            PRIMARY KEY (namespace, name)
        ) STRICT;
    ",
    },
    Migration {
        version: 2,
        sql: "
        -- Packs: named, prioritized collections of sources (seed 000).
        CREATE TABLE packs (
            name          TEXT PRIMARY KEY NOT NULL,
            budget_tokens INTEGER NOT NULL CHECK (budget_tokens >= 0),
            tokenizer     TEXT NOT NULL,
            next_seq      INTEGER NOT NULL DEFAULT 1,
            created_at    INTEGER NOT NULL
        ) STRICT;

        -- A pack's sources, in the order they were added (seq), with their priority.
        CREATE TABLE artifacts (
            pack        TEXT NOT NULL REFERENCES packs (name) ON DELETE CASCADE,
            artifact_id TEXT NOT NULL,
            seq         INTEGER NOT NULL,
            priority    INTEGER NOT NULL DEFAULT 0,
            uri         TEXT NOT NULL,
            source_json TEXT NOT NULL,
            added_at    INTEGER NOT NULL,
            PRIMARY KEY (pack, artifact_id),
            UNIQUE (pack, seq)
        ) STRICT;
        CREATE INDEX artifacts_order ON artifacts (pack, priority DESC, seq ASC);

        -- Snapshots: a render's payload (an object) and what went into it.
        CREATE TABLE snapshots (
            snapshot_id    TEXT PRIMARY KEY NOT NULL,
            label          TEXT,
            packs_json     TEXT NOT NULL,
            policy_json    TEXT NOT NULL,
            render_hash    TEXT NOT NULL,
            payload_object TEXT NOT NULL,
            tokens         INTEGER NOT NULL,
            created_at     INTEGER NOT NULL
        ) STRICT;
        CREATE UNIQUE INDEX snapshots_label ON snapshots (label) WHERE label IS NOT NULL;

        CREATE TABLE snapshot_items (
            snapshot_id  TEXT NOT NULL REFERENCES snapshots (snapshot_id) ON DELETE CASCADE,
            position     INTEGER NOT NULL,
            item_key     TEXT NOT NULL,
            content_hash TEXT,
            tokens       INTEGER NOT NULL,
            included     INTEGER NOT NULL CHECK (included IN (0, 1)),
            reason       TEXT,
            PRIMARY KEY (snapshot_id, position)
        ) STRICT;
    ",
    },
    Migration {
        version: 3,
        sql: "
        -- Code summaries (symbols, imports, line count) by content hash and extractor
        -- (language, grammar ABI, extractor version): `map` and `summarize` over an unchanged
        -- tree parse nothing. Rows are derived data: deleting any of them is always safe.
        CREATE TABLE code_summaries (
            content_hash TEXT NOT NULL,
            extractor    TEXT NOT NULL,
            summary      BLOB NOT NULL,
            PRIMARY KEY (content_hash, extractor)
        ) STRICT, WITHOUT ROWID;
    ",
    },
    Migration {
        version: 4,
        sql: "
        -- Run records (seed 004): one row per stored run, in the order runs were added. The
        -- run id is the hash of its manifest object; the other columns are copies of manifest
        -- fields kept for listing without reading objects.
        CREATE TABLE runs (
            run_id     TEXT PRIMARY KEY NOT NULL,
            parent     TEXT,
            source     TEXT NOT NULL,
            step_count INTEGER NOT NULL CHECK (step_count >= 0),
            model      TEXT,
            started    TEXT
        ) STRICT;

        -- Every object a run references (manifest, steps, blobs), so `store gc` keeps them
        -- and `store verify` checks them.
        CREATE TABLE run_objects (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            object TEXT NOT NULL,
            PRIMARY KEY (run_id, object)
        ) STRICT, WITHOUT ROWID;
    ",
    },
    Migration {
        version: 5,
        sql: "
        -- File stamps for the code-summary cache: the content hash and extractor last read
        -- for a file at this (size, mtime, inode), so a warm `summarize`/`map` need not read
        -- and hash unchanged files. Summaries stay keyed by content hash; deleting rows here
        -- only costs a re-read.
        CREATE TABLE code_file_stamps (
            path         TEXT PRIMARY KEY NOT NULL,
            size         INTEGER NOT NULL,
            mtime_ns     INTEGER NOT NULL,
            inode        INTEGER NOT NULL,
            content_hash TEXT NOT NULL,
            extractor    TEXT NOT NULL
        ) STRICT, WITHOUT ROWID;
    ",
    },
    Migration {
        version: 6,
        sql: "
        -- Code summaries move to a rowid table: payloads run to kilobytes, and in a WITHOUT
        -- ROWID table every insert at a random content hash splits and moves whole rows,
        -- while here rows are appended and only the small key index takes random inserts.
        -- Summaries are derived data, so the old rows (in an older payload format) go.
        DROP TABLE code_summaries;
        CREATE TABLE code_summaries (
            content_hash TEXT NOT NULL,
            extractor    TEXT NOT NULL,
            summary      BLOB NOT NULL,
            UNIQUE (content_hash, extractor)
        ) STRICT;
    ",
    },
    Migration {
        version: 7,
        sql: "
        -- The directory a pack in the global store was made for: its sources and headers are
        -- relative to it. NULL for project stores, whose packs use the project root.
        ALTER TABLE packs ADD COLUMN root TEXT;
    ",
    },
    Migration {
        version: 8,
        sql: "
        -- Summaries made before signatures and doc comments were redacted may quote secrets
        -- (a constant's value): derived data, so they go, with the stamps that point at them.
        DELETE FROM code_summaries;
        DELETE FROM code_file_stamps;
    ",
    },
    Migration {
        version: 9,
        sql: "
        -- What a render learned about a file at a stamp (size, mtime, inode): the hash of its
        -- bytes and, under a redaction rule set and block layout, the redacted text's hash,
        -- the findings, the block's token-cache key and count. A warm render plans from these
        -- without reading unchanged files, then reads each file it writes once, checking it
        -- still hashes to `raw_hash`. Derived data: deleting rows only costs work.
        CREATE TABLE render_files (
            path         TEXT PRIMARY KEY NOT NULL,
            size         INTEGER NOT NULL,
            mtime_ns     INTEGER NOT NULL,
            inode        INTEGER NOT NULL,
            raw_hash     TEXT NOT NULL,
            rules        TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            findings     TEXT NOT NULL,
            block_key    TEXT NOT NULL,
            tokenizer    TEXT NOT NULL,
            tokens       INTEGER NOT NULL
        ) STRICT, WITHOUT ROWID;
    ",
    },
    Migration {
        version: 10,
        sql: "
        -- Why a render left a file out, when its bytes decided it (`binary`, or `not_utf8`
        -- and the offset): a warm render then leaves it out by its stamp without opening it.
        -- Empty for a file whose text was read.
        ALTER TABLE render_files ADD COLUMN skip TEXT NOT NULL DEFAULT '';
    ",
    },
    Migration {
        version: 11,
        sql: "
        -- The hash and length of a payload by its layout (a hash of its head, its blocks'
        -- keys and its tail, which decide its bytes): a render whose files all check out
        -- against their hashes writes those bytes again without hashing them. The newest
        -- rows are kept (`seq`). Derived data: deleting rows only costs work.
        CREATE TABLE render_payloads (
            layout       TEXT PRIMARY KEY NOT NULL,
            payload_hash TEXT NOT NULL,
            bytes        INTEGER NOT NULL,
            seq          INTEGER NOT NULL
        ) STRICT, WITHOUT ROWID;
    ",
    },
    Migration {
        version: 12,
        sql: "
        -- The workspace root a snapshot or run was made in, so a store that several
        -- workspaces share (the global store, a team's) shows each workspace its own. NULL for
        -- rows made before, which every workspace sees.
        ALTER TABLE snapshots ADD COLUMN root TEXT;
        ALTER TABLE runs ADD COLUMN root TEXT;
    ",
    },
];

/// Every column that holds the hash of an object in the object store, as (table, column).
///
/// `store verify` checks each resolves; `store gc` keeps exactly these objects. A migration
/// that adds such a column must add it here.
pub const OBJECT_REFERENCES: &[(&str, &str)] = &[
    ("refs", "object"),
    ("snapshots", "payload_object"),
    ("runs", "run_id"),
    ("run_objects", "object"),
];

/// A named ref.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RefEntry {
    pub namespace: String,
    pub name: String,
    pub object: ContentHash,
}

/// The store's SQLite database.
pub struct SqliteMetadata {
    /// One connection, used by one thread at a time (a `Connection` is `Send`, not `Sync`).
    conn: Mutex<Connection>,
    path: PathBuf,
    read_only: bool,
}

/// The first 16 bytes of every SQLite database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// How often opening is tried again while SQLite answers busy (a lock it does not wait for:
/// WAL recovery or a journal-mode change by another process), with the delay doubling from
/// 5 ms: about 5 s in all, on top of the 10 s busy timeout for ordinary locks.
const OPEN_ATTEMPTS: u32 = 11;

impl SqliteMetadata {
    /// Opens (creating if needed) and migrates the database at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with(path, MIGRATIONS)
    }

    /// Opens the database, applying `migrations` (exposed for migration tests).
    ///
    /// A file that is not a SQLite database, or a SQLite database of another program, is
    /// refused before anything is written to it. A database that cannot be written (a
    /// read-only file, directory or mount) is opened read-only, so reads work; writes then
    /// fail with [`StoreError::ReadOnly`] and caches are not updated.
    pub fn open_with(path: &Path, migrations: &[Migration]) -> Result<Self, StoreError> {
        check_header(path)?;
        let mut delay = Duration::from_millis(5);
        for attempt in 1.. {
            match Self::try_open(path, migrations) {
                Err(StoreError::Database { source, .. })
                    if is_busy(&source) && attempt < OPEN_ATTEMPTS =>
                {
                    tracing::debug!(attempt, "state.db busy while opening; trying again");
                    std::thread::sleep(delay);
                    delay = delay.saturating_mul(2);
                }
                other => return other,
            }
        }
        unreachable!("the loop returns on its last attempt")
    }

    fn try_open(path: &Path, migrations: &[Migration]) -> Result<Self, StoreError> {
        match Self::open_writable(path, migrations) {
            Err(StoreError::Database { source, .. }) if is_read_only(&source) => {
                Self::open_read_only(path, migrations)
            }
            other => other,
        }
    }

    fn open_writable(path: &Path, migrations: &[Migration]) -> Result<Self, StoreError> {
        let err = |source| StoreError::Database {
            path: path.to_owned(),
            source,
        };
        let mut conn = Connection::open(path).map_err(err)?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(err)?;
        // Every transaction takes the write lock when it begins. A deferred transaction that
        // reads first and writes later cannot wait for the lock in WAL mode: SQLite answers
        // SQLITE_BUSY(_SNAPSHOT) at once instead of applying the busy timeout, so concurrent
        // writers failed with "database is locked".
        conn.set_transaction_behavior(rusqlite::TransactionBehavior::Immediate);
        let mut db = Self {
            conn: Mutex::new(conn),
            path: path.to_owned(),
            read_only: false,
        };
        db.check_not_foreign()?;
        db.connection()
            .execute_batch(
                // No memory map: a whole-tree `summarize` reads every cached summary, and every
                // page it touched in a map stayed in its resident set (its peak grew with the
                // cache); through the page cache it takes the same time.
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;
                 PRAGMA mmap_size = 0;",
            )
            .map_err(err)?;
        db.migrate(migrations)?;
        Ok(db)
    }

    /// Opens a database this process cannot write. With the directory read-only too, SQLite
    /// cannot create the WAL index (`-shm`) a reader needs, so the file is then opened as
    /// immutable: nothing else may be writing it, which a read-only mount guarantees.
    fn open_read_only(path: &Path, migrations: &[Migration]) -> Result<Self, StoreError> {
        let err = |source| StoreError::Database {
            path: path.to_owned(),
            source,
        };
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let open = |immutable: bool| -> rusqlite::Result<Connection> {
            let conn = if immutable {
                Connection::open_with_flags(immutable_uri(path), flags)?
            } else {
                Connection::open_with_flags(path, flags)?
            };
            conn.busy_timeout(Duration::from_secs(10))?;
            // Reading the schema is the first access: it fails here when the WAL index
            // cannot be set up.
            conn.pragma_query_value(None, "user_version", |row| row.get::<_, i64>(0))?;
            Ok(conn)
        };
        let conn = match open(false) {
            Ok(conn) => conn,
            Err(e) if is_read_only(&e) || is_cant_open(&e) => open(true).map_err(err)?,
            Err(e) => return Err(err(e)),
        };
        let db = Self {
            conn: Mutex::new(conn),
            path: path.to_owned(),
            read_only: true,
        };
        db.check_not_foreign()?;
        let known = migrations.last().map_or(0, |m| m.version);
        let current = db.schema_version()?;
        if current > known {
            return Err(StoreError::SchemaTooNew {
                path: path.to_owned(),
                found: current,
                known,
            });
        }
        if current < known {
            return Err(StoreError::ReadOnlyNeedsMigration {
                path: path.to_owned(),
                found: current,
                known,
            });
        }
        db.connection()
            .execute_batch("PRAGMA foreign_keys = ON; PRAGMA mmap_size = 0;")
            .map_err(err)?;
        tracing::debug!(path = %path.display(), "state.db is read-only; opened for reading");
        Ok(db)
    }

    /// Refuses a SQLite database that ctx did not make: no schema version, yet tables.
    fn check_not_foreign(&self) -> Result<(), StoreError> {
        // One statement, so one snapshot: read apart, a store another process was making
        // showed its new tables with the version still 0, and was called foreign.
        let (version, tables): (i64, i64) = self
            .connection()
            .query_row(
                "SELECT (SELECT user_version FROM pragma_user_version), \
                        (SELECT count(*) FROM sqlite_schema)",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map_err(|e| self.err(e))?;
        if version == 0 && tables > 0 {
            return Err(StoreError::ForeignDatabase {
                path: self.path.clone(),
                detail: format!("it holds {tables} schema entries but no ctx schema version"),
            });
        }
        Ok(())
    }

    /// Whether the database was opened read-only (writes fail, caches are not updated).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The schema version recorded in the database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.connection()
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(|e| self.err(e))
    }

    fn migrate(&mut self, migrations: &[Migration]) -> Result<(), StoreError> {
        let known = migrations.last().map_or(0, |m| m.version);
        let current = self.schema_version()?;
        if current > known {
            return Err(StoreError::SchemaTooNew {
                path: self.path.clone(),
                found: current,
                known,
            });
        }
        for migration in migrations.iter().filter(|m| m.version > current) {
            // IMMEDIATE takes the write lock first, so two processes never migrate at once;
            // the loser re-checks the version inside its own transaction.
            let path = self.path.clone();
            let err = move |source| StoreError::Database {
                path: path.clone(),
                source,
            };
            let mut conn = self.connection();
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(err.clone())?;
            let now: i64 = tx
                .pragma_query_value(None, "user_version", |row| row.get(0))
                .map_err(err.clone())?;
            if now >= migration.version {
                continue;
            }
            tx.execute_batch(migration.sql).map_err(err.clone())?;
            tx.pragma_update(None, "user_version", migration.version)
                .map_err(err.clone())?;
            tx.commit().map_err(err)?;
            tracing::debug!(version = migration.version, "applied store migration");
        }
        Ok(())
    }

    /// The underlying connection (tests and migrations; nothing outside this crate runs SQL).
    pub fn connection(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn err(&self, source: rusqlite::Error) -> StoreError {
        if self.read_only && is_read_only(&source) {
            return StoreError::ReadOnly {
                path: self.path.clone(),
            };
        }
        StoreError::Database {
            path: self.path.clone(),
            source,
        }
    }

    /// The cached token count of the content with `hash` under `tokenizer`.
    pub fn cached_token_count(
        &self,
        hash: &ContentHash,
        tokenizer: TokenizerKind,
    ) -> Result<Option<u64>, StoreError> {
        self.connection()
            .prepare_cached(
                "SELECT tokens FROM token_counts WHERE content_hash = ?1 AND tokenizer = ?2",
            )
            .and_then(|mut stmt| {
                stmt.query_row(params![hash.to_string(), tokenizer.name()], |row| {
                    row.get::<_, i64>(0).map(|n| u64::try_from(n).unwrap_or(0))
                })
                .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// Whether any token count is cached.
    pub fn remembers_token_counts(&self) -> Result<bool, StoreError> {
        let conn = self.connection();
        conn.query_row("SELECT EXISTS (SELECT 1 FROM token_counts)", [], |row| {
            row.get(0)
        })
        .map_err(|e| self.err(e))
    }

    /// The cached token counts of `hashes` under `tokenizer`, in order, in one read
    /// transaction (one shared lock and one look at the WAL for all of them, not one each).
    pub fn lookup_token_counts(
        &self,
        hashes: &[ContentHash],
        tokenizer: TokenizerKind,
    ) -> Result<Vec<Option<u64>>, StoreError> {
        let run = || -> rusqlite::Result<Vec<Option<u64>>> {
            let conn = self.connection();
            let tx = read_transaction(&conn)?;
            let counts = {
                let mut stmt = tx.prepare_cached(
                    "SELECT tokens FROM token_counts WHERE content_hash = ?1 AND tokenizer = ?2",
                )?;
                hashes
                    .iter()
                    .map(|hash| {
                        stmt.query_row(params![hash.to_string(), tokenizer.name()], |row| {
                            row.get::<_, i64>(0).map(|n| u64::try_from(n).unwrap_or(0))
                        })
                        .optional()
                    })
                    .collect::<rusqlite::Result<Vec<_>>>()?
            };
            tx.finish()?;
            Ok(counts)
        };
        run().map_err(|e| self.err(e))
    }

    /// Records token counts, all in one transaction.
    pub fn cache_token_counts(
        &self,
        tokenizer: TokenizerKind,
        counts: &[(ContentHash, u64)],
    ) -> Result<(), StoreError> {
        if self.read_only {
            // A cache: a read-only store is still read, just not warmed.
            return Ok(());
        }
        let run = || -> rusqlite::Result<()> {
            let conn = self.connection();
            let tx = conn.unchecked_transaction()?;
            {
                let mut stmt = tx.prepare_cached(
                    "INSERT OR REPLACE INTO token_counts (content_hash, tokenizer, tokens) VALUES (?1, ?2, ?3)",
                )?;
                for (hash, tokens) in counts {
                    let tokens = i64::try_from(*tokens).unwrap_or(i64::MAX);
                    stmt.execute(params![hash.to_string(), tokenizer.name(), tokens])?;
                }
            }
            tx.commit()
        };
        run().map_err(|e| self.err(e))
    }

    /// Points `namespace/name` at `object`, replacing any previous target.
    pub fn set_ref(
        &self,
        namespace: &str,
        name: &str,
        object: &ContentHash,
    ) -> Result<(), StoreError> {
        self.connection()
            .execute(
                "INSERT INTO refs (namespace, name, object) VALUES (?1, ?2, ?3)
                 ON CONFLICT (namespace, name) DO UPDATE SET object = excluded.object",
                params![namespace, name, object.to_string()],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// The object `namespace/name` points at.
    pub fn get_ref(&self, namespace: &str, name: &str) -> Result<Option<ContentHash>, StoreError> {
        let value: Option<String> = self
            .connection()
            .query_row(
                "SELECT object FROM refs WHERE namespace = ?1 AND name = ?2",
                params![namespace, name],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        value.map(|v| parse_hash("refs", "object", v)).transpose()
    }

    /// Removes a ref; returns whether it existed.
    pub fn delete_ref(&self, namespace: &str, name: &str) -> Result<bool, StoreError> {
        self.connection()
            .execute(
                "DELETE FROM refs WHERE namespace = ?1 AND name = ?2",
                params![namespace, name],
            )
            .map(|n| n > 0)
            .map_err(|e| self.err(e))
    }

    /// Refs in a namespace, by name in byte order.
    pub fn list_refs(&self, namespace: &str) -> Result<Vec<RefEntry>, StoreError> {
        let rows: Vec<(String, String)> = self
            .connection()
            .prepare("SELECT name, object FROM refs WHERE namespace = ?1 ORDER BY name")
            .and_then(|mut stmt| {
                stmt.query_map(params![namespace], |row| Ok((row.get(0)?, row.get(1)?)))?
                    .collect()
            })
            .map_err(|e| self.err(e))?;
        rows.into_iter()
            .map(|(name, object)| {
                Ok(RefEntry {
                    namespace: namespace.to_owned(),
                    name,
                    object: parse_hash("refs", "object", object)?,
                })
            })
            .collect()
    }

    /// Inserts an artifact keeping its `seq` (see [`Metadata::restore_artifact`]).
    pub fn restore_artifact(&self, record: &ArtifactRecord) -> Result<(), StoreError> {
        self.require_pack(&record.pack)?;
        let run = || -> rusqlite::Result<()> {
            let conn = self.connection();
            let tx = conn.unchecked_transaction()?;
            let seq = i64::try_from(record.seq).unwrap_or(i64::MAX);
            tx.execute(
                "INSERT INTO artifacts (pack, artifact_id, seq, priority, uri, source_json, added_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    record.pack,
                    record.artifact_id,
                    seq,
                    record.priority,
                    record.uri,
                    record.source_json,
                    record.added_at
                ],
            )?;
            tx.execute(
                "UPDATE packs SET next_seq = MAX(next_seq, ?2 + 1) WHERE name = ?1",
                params![record.pack, seq],
            )?;
            tx.commit()
        };
        run().map_err(|e| self.err(e))
    }

    /// Every ref namespace in use, in byte order.
    pub fn ref_namespaces(&self) -> Result<Vec<String>, StoreError> {
        self.connection()
            .prepare("SELECT DISTINCT namespace FROM refs ORDER BY namespace")
            .and_then(|mut stmt| stmt.query_map([], |row| row.get(0))?.collect())
            .map_err(|e| self.err(e))
    }

    /// The objects a run keeps alive.
    pub fn run_objects(&self, run_id: &str) -> Result<BTreeSet<ContentHash>, StoreError> {
        let values: Vec<String> = self
            .connection()
            .prepare("SELECT object FROM run_objects WHERE run_id = ?1 ORDER BY object")
            .and_then(|mut stmt| stmt.query_map([run_id], |row| row.get(0))?.collect())
            .map_err(|e| self.err(e))?;
        values
            .into_iter()
            .map(|v| parse_hash("run_objects", "object", v))
            .collect()
    }

    /// Every raw value in the object-reference columns, with where it came from.
    pub fn object_references(&self) -> Result<Vec<ObjectReference>, StoreError> {
        let mut out = Vec::new();
        for &(table, column) in OBJECT_REFERENCES {
            let sql = format!(
                "SELECT DISTINCT {column} FROM {table} WHERE {column} IS NOT NULL ORDER BY 1"
            );
            let values: Vec<String> = self
                .connection()
                .prepare(&sql)
                .and_then(|mut stmt| stmt.query_map([], |row| row.get(0))?.collect())
                .map_err(|e| self.err(e))?;
            out.extend(values.into_iter().map(|value| ObjectReference {
                table,
                column,
                value,
            }));
        }
        Ok(out)
    }

    /// `PRAGMA integrity_check` and `foreign_key_check` findings (empty when healthy).
    pub fn integrity_problems(&self) -> Result<Vec<String>, StoreError> {
        let mut problems: Vec<String> = self
            .connection()
            .prepare("PRAGMA integrity_check")
            .and_then(|mut stmt| stmt.query_map([], |row| row.get(0))?.collect())
            .map_err(|e| self.err(e))?;
        problems.retain(|p: &String| p != "ok");
        let fk: Vec<String> = self
            .connection()
            .prepare("PRAGMA foreign_key_check")
            .and_then(|mut stmt| {
                stmt.query_map([], |row| {
                    let table: String = row.get(0)?;
                    let parent: String = row.get(2)?;
                    Ok(format!(
                        "a row of {table} references a missing row of {parent}"
                    ))
                })?
                .collect()
            })
            .map_err(|e| self.err(e))?;
        problems.extend(fk);
        Ok(problems)
    }
}

/// A deferred transaction for reads only (the connection's own transactions are `BEGIN
/// IMMEDIATE`, which would take the write lock): its statements share one snapshot, one
/// shared lock and one look at the WAL, instead of one each. Ended with `finish`.
pub(crate) fn read_transaction(conn: &Connection) -> rusqlite::Result<rusqlite::Transaction<'_>> {
    rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Deferred)
}

/// Forwards each listed [`Metadata`] method to the inherent method of the same name.
macro_rules! forward_to_inherent {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        $(fn $name(&self, $($arg: $ty),*) -> $ret {
            SqliteMetadata::$name(self, $($arg),*)
        })*
    };
}

impl Metadata for SqliteMetadata {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    forward_to_inherent! {
        is_read_only() -> bool;
        schema_version() -> Result<i64, StoreError>;
        cached_token_count(hash: &ContentHash, tokenizer: TokenizerKind) -> Result<Option<u64>, StoreError>;
        lookup_token_counts(hashes: &[ContentHash], tokenizer: TokenizerKind) -> Result<Vec<Option<u64>>, StoreError>;
        cache_token_counts(tokenizer: TokenizerKind, counts: &[(ContentHash, u64)]) -> Result<(), StoreError>;
        set_ref(namespace: &str, name: &str, object: &ContentHash) -> Result<(), StoreError>;
        get_ref(namespace: &str, name: &str) -> Result<Option<ContentHash>, StoreError>;
        delete_ref(namespace: &str, name: &str) -> Result<bool, StoreError>;
        list_refs(namespace: &str) -> Result<Vec<RefEntry>, StoreError>;
        create_pack(new: &NewPack<'_>) -> Result<PackRecord, StoreError>;
        set_pack_root(name: &str, root: &str) -> Result<(), StoreError>;
        get_pack(name: &str) -> Result<Option<PackRecord>, StoreError>;
        require_pack(name: &str) -> Result<PackRecord, StoreError>;
        list_packs() -> Result<Vec<PackRecord>, StoreError>;
        update_pack_policy(name: &str, budget_tokens: u64, tokenizer: TokenizerKind) -> Result<(), StoreError>;
        delete_pack(name: &str) -> Result<(), StoreError>;
        add_artifact(pack: &str, new: &NewArtifact<'_>) -> Result<ArtifactRecord, StoreError>;
        artifacts(pack: &str) -> Result<Vec<ArtifactRecord>, StoreError>;
        delete_artifact(pack: &str, artifact_id: &str) -> Result<(), StoreError>;
        write_snapshot(snapshot: &SnapshotRecord, items: &[SnapshotItemRecord]) -> Result<SnapshotRecord, StoreError>;
        snapshot_by_label(label: &str) -> Result<Option<SnapshotRecord>, StoreError>;
        snapshots_with_id_prefix(hex: &str) -> Result<Vec<SnapshotRecord>, StoreError>;
        list_snapshots() -> Result<Vec<SnapshotRecord>, StoreError>;
        snapshot_items(id: &ContentHash) -> Result<Vec<SnapshotItemRecord>, StoreError>;
        run_ids_with_prefix(hex_prefix: &str) -> Result<Vec<String>, StoreError>;
        list_run_rows() -> Result<Vec<RunRow>, StoreError>;
        record_run(row: &RunRow, objects: &BTreeSet<ContentHash>, latest_ref: (&str, &str)) -> Result<(), StoreError>;
        stamped_summary_keys(stamps: &[FileStampRow<'_>]) -> Result<Vec<Option<StampedKey>>, StoreError>;
        remember_file_stamps(entries: &[(FileStampRow<'_>, SummaryKey<'_>)]) -> Result<(), StoreError>;
        cached_summaries(keys: &[SummaryKey<'_>]) -> Result<Vec<Option<Vec<u8>>>, StoreError>;
        cache_summaries(entries: &[(SummaryKey<'_>, &[u8])]) -> Result<(), StoreError>;
        clear_summaries() -> Result<usize, StoreError>;
        remembers_token_counts() -> Result<bool, StoreError>;
        render_files(paths: &[&str]) -> Result<Vec<Option<RenderFileRow>>, StoreError>;
        remember_render_files(rows: &[RenderFileRow]) -> Result<(), StoreError>;
        forget_render_files(paths: &[&str]) -> Result<(), StoreError>;
        render_payload(layout: &str) -> Result<Option<RenderPayloadRow>, StoreError>;
        remember_render_payload(row: &RenderPayloadRow) -> Result<(), StoreError>;
        forget_render_payload(layout: &str) -> Result<(), StoreError>;
        object_references() -> Result<Vec<ObjectReference>, StoreError>;
        restore_artifact(record: &ArtifactRecord) -> Result<(), StoreError>;
        ref_namespaces() -> Result<Vec<String>, StoreError>;
        run_objects(run_id: &str) -> Result<BTreeSet<ContentHash>, StoreError>;
        integrity_problems() -> Result<Vec<String>, StoreError>;
    }
}

/// Refuses a file that is not empty and not a SQLite database, before SQLite touches it.
fn check_header(path: &Path) -> Result<(), StoreError> {
    // A new database (or one SQLite will report on itself).
    let Ok(mut file) = std::fs::File::open(path) else {
        return Ok(());
    };
    let mut header = [0u8; 16];
    let mut read = 0;
    while read < header.len() {
        match std::io::Read::read(&mut file, &mut header[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(source) => {
                return Err(StoreError::Io {
                    path: path.to_owned(),
                    source,
                });
            }
        }
    }
    if read == 0 || &header == SQLITE_HEADER {
        return Ok(());
    }
    Err(StoreError::ForeignDatabase {
        path: path.to_owned(),
        detail: "it is not a SQLite database".to_owned(),
    })
}

fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for byte in path.as_os_str().as_encoded_bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                uri.push(char::from(*byte));
            }
            _ => {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                uri.push('%');
                uri.push(char::from(HEX[usize::from(byte >> 4)]));
                uri.push(char::from(HEX[usize::from(byte & 15)]));
            }
        }
    }
    uri.push_str("?immutable=1");
    uri
}

fn error_code(err: &rusqlite::Error) -> Option<rusqlite::ErrorCode> {
    match err {
        rusqlite::Error::SqliteFailure(e, _) => Some(e.code),
        _ => None,
    }
}

fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        error_code(err),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

fn is_read_only(err: &rusqlite::Error) -> bool {
    matches!(
        error_code(err),
        Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::PermissionDenied)
    ) || is_cant_open(err)
}

fn is_cant_open(err: &rusqlite::Error) -> bool {
    matches!(error_code(err), Some(rusqlite::ErrorCode::CannotOpen))
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: Migration = Migration {
        version: 1,
        sql: "CREATE TABLE a (x INTEGER) STRICT;",
    };
    const V2: Migration = Migration {
        version: 2,
        sql: "ALTER TABLE a ADD COLUMN y TEXT;",
    };

    #[test]
    fn a_file_that_is_not_a_sqlite_database_is_refused_untouched() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.db");
        let bytes = b"{\"this\": \"is json, not SQLite\"}\n".repeat(200);
        std::fs::write(&path, &bytes).expect("write");
        let err = SqliteMetadata::open(&path).err().expect("refused");
        assert!(matches!(err, StoreError::ForeignDatabase { .. }), "{err}");
        let message = err.to_string();
        assert!(message.contains("not a SQLite database") && message.contains("ctx init"));
        assert_eq!(std::fs::read(&path).expect("read"), bytes);
        assert!(!dir.path().join("state.db-wal").exists());
    }

    #[test]
    fn another_programs_sqlite_database_is_refused_untouched() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.db");
        {
            let conn = Connection::open(&path).expect("open");
            conn.execute_batch("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT);")
                .expect("create");
        }
        let before = std::fs::read(&path).expect("read");
        let err = SqliteMetadata::open(&path).err().expect("refused");
        assert!(matches!(err, StoreError::ForeignDatabase { .. }), "{err}");
        assert_eq!(std::fs::read(&path).expect("read"), before);
        let conn = Connection::open(&path).expect("open");
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
            .expect("count");
        assert_eq!(tables, 1, "no ctx table was added");
    }

    #[test]
    fn an_empty_state_db_is_refused_by_open_and_repaired_by_init() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store_dir = dir.path().join(".ctx");
        let (store, _) = crate::Store::init(&store_dir).expect("init");
        drop(store);
        let path = store_dir.join(crate::DATABASE_FILE);
        std::fs::write(&path, b"").expect("truncate");
        let err = crate::Store::open(&store_dir).err().expect("refused");
        assert!(matches!(err, StoreError::EmptyDatabase { .. }), "{err}");
        assert!(
            err.to_string().contains("ctx init") && err.to_string().contains("ctx store verify")
        );
        assert_eq!(
            std::fs::metadata(&path).expect("meta").len(),
            0,
            "left as it was"
        );
        let (store, created) = crate::Store::init(&store_dir).expect("init again");
        assert!(!created);
        assert_eq!(
            store.db().schema_version().expect("version"),
            MIGRATIONS.last().expect("some").version
        );
    }

    #[test]
    fn the_immutable_uri_escapes_what_a_uri_must() {
        assert_eq!(
            immutable_uri(Path::new("/tmp/a b/#x?/st%te.db")),
            "file:/tmp/a%20b/%23x%3F/st%25te.db?immutable=1"
        );
    }

    #[test]
    fn migrations_apply_to_an_empty_database() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = SqliteMetadata::open(&dir.path().join("state.db")).expect("open");
        assert_eq!(
            db.schema_version().expect("version"),
            MIGRATIONS.last().expect("some").version
        );
        let mode: String = db
            .connection()
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .expect("pragma");
        assert_eq!(mode, "wal");
        let fk: i64 = db
            .connection()
            .pragma_query_value(None, "foreign_keys", |r| r.get(0))
            .expect("pragma");
        assert_eq!(fk, 1);
    }

    #[test]
    fn migrations_apply_to_an_existing_database_keeping_its_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.db");
        {
            let db = SqliteMetadata::open_with(&path, &[V1]).expect("v1");
            db.connection()
                .execute("INSERT INTO a (x) VALUES (42)", [])
                .expect("insert");
        }
        let db = SqliteMetadata::open_with(&path, &[V1, V2]).expect("v2");
        assert_eq!(db.schema_version().expect("version"), 2);
        let (x, y): (i64, Option<String>) = db
            .connection()
            .query_row("SELECT x, y FROM a", [], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("row kept");
        assert_eq!((x, y), (42, None));
        drop(db);
        // Opening again applies nothing and keeps the version.
        let again = SqliteMetadata::open_with(&path, &[V1, V2]).expect("reopen");
        assert_eq!(again.schema_version().expect("version"), 2);
    }

    #[test]
    fn a_database_from_a_newer_ctx_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.db");
        drop(SqliteMetadata::open_with(&path, &[V1, V2]).expect("v2"));
        let err = SqliteMetadata::open_with(&path, &[V1])
            .err()
            .expect("too new");
        assert!(
            matches!(
                err,
                StoreError::SchemaTooNew {
                    found: 2,
                    known: 1,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("upgrade ctx"));
    }

    #[test]
    fn token_counts_are_cached_per_tokenizer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = SqliteMetadata::open(&dir.path().join("state.db")).expect("open");
        let h = ContentHash::of(b"text");
        assert_eq!(
            db.cached_token_count(&h, TokenizerKind::O200kBase)
                .expect("q"),
            None
        );
        db.cache_token_counts(TokenizerKind::O200kBase, &[(h, 12)])
            .expect("put");
        assert_eq!(
            db.cached_token_count(&h, TokenizerKind::O200kBase)
                .expect("q"),
            Some(12)
        );
        assert_eq!(
            db.cached_token_count(&h, TokenizerKind::Cl100kBase)
                .expect("q"),
            None
        );
    }

    #[test]
    fn refs_round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = SqliteMetadata::open(&dir.path().join("state.db")).expect("open");
        let (a, b) = (ContentHash::of(b"a"), ContentHash::of(b"b"));
        db.set_ref("runs", "latest", &a).expect("set");
        db.set_ref("runs", "latest", &b).expect("move");
        db.set_ref("runs", "v1", &a).expect("set");
        assert_eq!(db.get_ref("runs", "latest").expect("get"), Some(b));
        let names: Vec<_> = db
            .list_refs("runs")
            .expect("list")
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(names, ["latest", "v1"]);
        assert!(db.delete_ref("runs", "v1").expect("del"));
        assert!(!db.delete_ref("runs", "v1").expect("del again"));
    }
}
