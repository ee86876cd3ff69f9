//! [`PostgresMetadata`]: the store's repositories in PostgreSQL, for stores shared by many hosts.
//!
//! The same tables as `state.db` (see [`crate::MIGRATIONS`]), written for PostgreSQL and
//! versioned separately ([`PG_MIGRATIONS`], recorded in `ctx_schema`); migrations run under a
//! transaction-scoped advisory lock so that two hosts never migrate at once. Connections come
//! from an `r2d2` pool; every method that writes more than one row does so in one
//! transaction, and writers that need exclusion take row locks (`SELECT … FOR UPDATE`, and
//! `DELETE … RETURNING` for gc marks). Text that is ordered is ordered with `COLLATE "C"`:
//! byte order, as SQLite's default, whatever the database's locale.
//!
//! gc keeps its grace period here (`gc_marks`, stamped by the database's clock) instead of in
//! object modification times: see [`Metadata::gc_mark`].

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ctx_core::{ContentHash, TokenizerKind};
use postgres::{NoTls, Row, Transaction};
use r2d2_postgres::PostgresConnectionManager;

use crate::metadata::{Metadata, ObjectReference};
use crate::metadata::{parse_hash, to_i64, to_u64};
use crate::packs::{
    ArtifactRecord, NewArtifact, NewPack, PackRecord, SnapshotItemRecord, SnapshotRecord,
};
use crate::render_cache::{RENDER_PAYLOADS_KEPT, RenderFileRow, RenderPayloadRow};
use crate::runs::RunRow;
use crate::summary_cache::{FileStampRow, StampedKey, SummaryKey, inode_column};
use crate::{OBJECT_REFERENCES, RefEntry, StoreError};

type Pool = r2d2::Pool<PostgresConnectionManager<NoTls>>;
type Client = r2d2::PooledConnection<PostgresConnectionManager<NoTls>>;

/// The PostgreSQL schema, oldest first. Append only: a released migration never changes.
/// Version 1 is `state.db`'s version 8 plus `gc_marks`.
pub const PG_MIGRATIONS: &[&str] = &[
    "
    CREATE TABLE token_counts (
        content_hash TEXT NOT NULL,
        tokenizer    TEXT NOT NULL,
        tokens       BIGINT NOT NULL CHECK (tokens >= 0),
        PRIMARY KEY (content_hash, tokenizer)
    );
    CREATE TABLE refs (
        namespace TEXT COLLATE \"C\" NOT NULL,
        name      TEXT COLLATE \"C\" NOT NULL,
        object    TEXT NOT NULL,
        PRIMARY KEY (namespace, name)
    );
    CREATE INDEX refs_object ON refs (object);
    CREATE TABLE packs (
        name          TEXT COLLATE \"C\" PRIMARY KEY NOT NULL,
        budget_tokens BIGINT NOT NULL CHECK (budget_tokens >= 0),
        tokenizer     TEXT NOT NULL,
        next_seq      BIGINT NOT NULL DEFAULT 1,
        created_at    BIGINT NOT NULL,
        root          TEXT
    );
    CREATE TABLE artifacts (
        pack        TEXT COLLATE \"C\" NOT NULL REFERENCES packs (name) ON DELETE CASCADE,
        artifact_id TEXT COLLATE \"C\" NOT NULL,
        seq         BIGINT NOT NULL,
        priority    BIGINT NOT NULL DEFAULT 0,
        uri         TEXT NOT NULL,
        source_json TEXT NOT NULL,
        added_at    BIGINT NOT NULL,
        PRIMARY KEY (pack, artifact_id),
        UNIQUE (pack, seq)
    );
    CREATE INDEX artifacts_order ON artifacts (pack, priority DESC, seq ASC);
    CREATE TABLE snapshots (
        snapshot_id    TEXT COLLATE \"C\" PRIMARY KEY NOT NULL,
        label          TEXT,
        packs_json     TEXT NOT NULL,
        policy_json    TEXT NOT NULL,
        render_hash    TEXT NOT NULL,
        payload_object TEXT NOT NULL,
        tokens         BIGINT NOT NULL,
        created_at     BIGINT NOT NULL
    );
    CREATE UNIQUE INDEX snapshots_label ON snapshots (label) WHERE label IS NOT NULL;
    CREATE INDEX snapshots_payload ON snapshots (payload_object);
    CREATE TABLE snapshot_items (
        snapshot_id  TEXT NOT NULL REFERENCES snapshots (snapshot_id) ON DELETE CASCADE,
        position     BIGINT NOT NULL,
        item_key     TEXT NOT NULL,
        content_hash TEXT,
        tokens       BIGINT NOT NULL,
        included     BOOLEAN NOT NULL,
        reason       TEXT,
        PRIMARY KEY (snapshot_id, position)
    );
    CREATE TABLE code_summaries (
        content_hash TEXT NOT NULL,
        extractor    TEXT NOT NULL,
        summary      BYTEA NOT NULL,
        PRIMARY KEY (content_hash, extractor)
    );
    CREATE SEQUENCE run_listing;
    CREATE TABLE runs (
        run_id     TEXT COLLATE \"C\" PRIMARY KEY NOT NULL,
        parent     TEXT,
        source     TEXT NOT NULL,
        step_count BIGINT NOT NULL CHECK (step_count >= 0),
        model      TEXT,
        started    TEXT,
        listed     BIGINT NOT NULL
    );
    CREATE INDEX runs_listed ON runs (listed);
    CREATE TABLE run_objects (
        run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        object TEXT NOT NULL,
        PRIMARY KEY (run_id, object)
    );
    CREATE INDEX run_objects_object ON run_objects (object);
    CREATE TABLE code_file_stamps (
        path         TEXT PRIMARY KEY NOT NULL,
        size         BIGINT NOT NULL,
        mtime_ns     BIGINT NOT NULL,
        inode        BIGINT NOT NULL,
        content_hash TEXT NOT NULL,
        extractor    TEXT NOT NULL
    );
    -- Objects gc found unreferenced, with when it first did (by the database's clock).
    CREATE TABLE gc_marks (
        object    TEXT PRIMARY KEY NOT NULL,
        marked_at TIMESTAMPTZ NOT NULL DEFAULT now()
    );
",
    "
    -- state.db's version 9: the render cache (derived data, see `render_files` there).
    CREATE TABLE render_files (
        path         TEXT PRIMARY KEY NOT NULL,
        size         BIGINT NOT NULL,
        mtime_ns     BIGINT NOT NULL,
        inode        BIGINT NOT NULL,
        raw_hash     TEXT NOT NULL,
        rules        TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        findings     TEXT NOT NULL,
        block_key    TEXT NOT NULL,
        tokenizer    TEXT NOT NULL,
        tokens       BIGINT NOT NULL
    );
",
    "
    -- state.db's version 10: why a render left a file out, when its bytes decided it.
    ALTER TABLE render_files ADD COLUMN skip TEXT NOT NULL DEFAULT '';
",
    "
    -- state.db's version 11: payload hashes by layout (derived data, see `render_payloads`
    -- there).
    CREATE TABLE render_payloads (
        layout       TEXT PRIMARY KEY NOT NULL,
        payload_hash TEXT NOT NULL,
        bytes        BIGINT NOT NULL,
        seq          BIGINT NOT NULL
    );
",
    "
    -- state.db's version 12: the workspace root a snapshot or run was made in.
    ALTER TABLE snapshots ADD COLUMN root TEXT;
    ALTER TABLE runs ADD COLUMN root TEXT;
",
];

/// The advisory-lock key under which migrations run (`ctx` in ASCII, then `mig`).
const MIGRATION_LOCK: i64 = 0x0063_7478_006d_6967;

/// The store's metadata in a PostgreSQL database (optionally in one schema of it).
pub struct PostgresMetadata {
    pool: Pool,
    /// The URL without its password, for messages.
    location: String,
}

impl PostgresMetadata {
    /// Connects to `url` (`postgres://user:password@host:port/db`; `?schema=NAME` keeps the
    /// tables in that schema, created if missing) and applies any pending migrations.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        off_runtime(|| Self::open_here(url))
    }

    fn open_here(url: &str) -> Result<Self, StoreError> {
        let (conn_url, schema) = split_schema(url);
        let location = redact_url(url);
        let bad = |detail: String| StoreError::BadStoreUrl {
            url: location.clone(),
            detail,
        };
        let mut config: postgres::Config = conn_url.parse().map_err(|e| bad(format!("{e}")))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if let Some(schema) = &schema {
            if !schema
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return Err(bad(format!(
                    "schema `{schema}` must be letters, digits and `_`"
                )));
            }
            config.options(&format!("-c search_path={schema}"));
        }
        // One connection up front: a wrong host, port or password fails now with the
        // server's own words, not after the pool's wait for a connection.
        config
            .connect(NoTls)
            .map_err(|e| StoreError::Backend {
                location: location.clone(),
                detail: format!("cannot connect: {e}"),
            })?
            .close()
            .map_err(|e| StoreError::Backend {
                location: location.clone(),
                detail: e.to_string(),
            })?;
        let manager = PostgresConnectionManager::new(config, NoTls);
        let pool = r2d2::Pool::builder()
            .max_size(16)
            .min_idle(Some(0))
            .connection_timeout(Duration::from_secs(30))
            .build_unchecked(manager);
        let db = Self { pool, location };
        if let Some(schema) = &schema {
            db.client()?
                .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
                .map_err(|e| db.err(&e))?;
        }
        db.migrate()?;
        Ok(db)
    }

    fn client(&self) -> Result<Client, StoreError> {
        self.pool.get().map_err(|e| StoreError::Backend {
            location: self.location.clone(),
            detail: format!("cannot connect: {e}"),
        })
    }

    fn err(&self, e: &postgres::Error) -> StoreError {
        let detail = match e.as_db_error() {
            Some(db) => format!("{}: {}", db.code().code(), db.message()),
            None => e.to_string(),
        };
        StoreError::Backend {
            location: self.location.clone(),
            detail,
        }
    }

    fn migrate(&self) -> Result<(), StoreError> {
        let mut client = self.client()?;
        let known = i64::try_from(PG_MIGRATIONS.len()).unwrap_or(i64::MAX);
        let mut tx = client.transaction().map_err(|e| self.err(&e))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .map_err(|e| self.err(&e))?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS ctx_schema (version BIGINT NOT NULL);
             INSERT INTO ctx_schema (version) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM ctx_schema);",
        )
        .map_err(|e| self.err(&e))?;
        let current: i64 = tx
            .query_one("SELECT version FROM ctx_schema", &[])
            .map_err(|e| self.err(&e))?
            .get(0);
        if current > known {
            return Err(StoreError::SchemaTooNew {
                path: self.location.clone().into(),
                found: current,
                known,
            });
        }
        for (index, sql) in PG_MIGRATIONS.iter().enumerate() {
            let version = i64::try_from(index).unwrap_or(i64::MAX) + 1;
            if version <= current {
                continue;
            }
            tx.batch_execute(sql).map_err(|e| self.err(&e))?;
            tx.execute("UPDATE ctx_schema SET version = $1", &[&version])
                .map_err(|e| self.err(&e))?;
            tracing::debug!(version, "applied PostgreSQL store migration");
        }
        tx.commit().map_err(|e| self.err(&e))
    }

    /// Runs `body` in one transaction, committing when it returns `Ok`.
    fn in_transaction<T: Send>(
        &self,
        body: impl FnOnce(&mut Transaction<'_>) -> Result<T, postgres::Error> + Send,
    ) -> Result<T, StoreError> {
        off_runtime(|| {
            let mut client = self.client()?;
            let mut tx = client.transaction().map_err(|e| self.err(&e))?;
            let value = body(&mut tx).map_err(|e| self.err(&e))?;
            tx.commit().map_err(|e| self.err(&e))?;
            Ok(value)
        })
    }

    fn query(
        &self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<Row>, StoreError> {
        self.client()?.query(sql, params).map_err(|e| self.err(&e))
    }

    fn execute(
        &self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<u64, StoreError> {
        off_runtime(|| {
            self.client()?
                .execute(sql, params)
                .map_err(|e| self.err(&e))
        })
    }

    fn snapshot_where(
        &self,
        condition: &str,
        value: &str,
    ) -> Result<Vec<SnapshotRecord>, StoreError> {
        self.query(
            &format!(
                "SELECT {SNAPSHOT_COLUMNS} FROM snapshots WHERE {condition} ORDER BY snapshot_id"
            ),
            &[&value],
        )?
        .iter()
        .map(snapshot_from_row)
        .collect()
    }
}

/// Runs `work` where the synchronous `postgres` client may block: on this thread, or on a
/// helper thread when this one is inside a tokio runtime (a server's request handler), where
/// the client's own `block_on` would panic.
fn off_runtime<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return work();
    }
    std::thread::scope(|scope| {
        scope
            .spawn(work)
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

const PACK_COLUMNS: &str = "p.name, p.budget_tokens, p.tokenizer, p.created_at,
    (SELECT COUNT(*) FROM artifacts a WHERE a.pack = p.name), p.root";
const ARTIFACT_COLUMNS: &str = "pack, artifact_id, seq, priority, uri, source_json, added_at";
const SNAPSHOT_COLUMNS: &str = "snapshot_id, label, packs_json, policy_json, render_hash, payload_object, tokens, created_at, root";

fn pack_from_row(row: &Row) -> Result<PackRecord, StoreError> {
    let tokenizer: String = row.get(2);
    Ok(PackRecord {
        name: row.get(0),
        budget_tokens: to_u64(row.get(1)),
        tokenizer: tokenizer
            .parse()
            .map_err(|_| StoreError::BadHashInDatabase {
                table: "packs",
                column: "tokenizer",
                value: tokenizer.clone(),
            })?,
        created_at: row.get(3),
        artifact_count: to_u64(row.get(4)),
        root: row.get(5),
    })
}

fn artifact_from_row(row: &Row) -> ArtifactRecord {
    ArtifactRecord {
        pack: row.get(0),
        artifact_id: row.get(1),
        seq: to_u64(row.get(2)),
        priority: row.get(3),
        uri: row.get(4),
        source_json: row.get(5),
        added_at: row.get(6),
    }
}

fn snapshot_from_row(row: &Row) -> Result<SnapshotRecord, StoreError> {
    let packs_json: String = row.get(2);
    Ok(SnapshotRecord {
        snapshot_id: parse_hash("snapshots", "snapshot_id", row.get(0))?,
        label: row.get(1),
        packs: serde_json::from_str(&packs_json).map_err(|_| StoreError::BadHashInDatabase {
            table: "snapshots",
            column: "packs_json",
            value: packs_json.clone(),
        })?,
        policy_json: row.get(3),
        render_hash: parse_hash("snapshots", "render_hash", row.get(4))?,
        payload_object: parse_hash("snapshots", "payload_object", row.get(5))?,
        tokens: to_u64(row.get(6)),
        created_at: row.get(7),
        root: row.get(8),
    })
}

/// Splits a `schema=NAME` query parameter off a PostgreSQL URL (the driver refuses unknown
/// parameters).
fn split_schema(url: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_owned(), None);
    };
    let mut schema = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("schema", value)) => schema = Some(value.to_owned()),
            _ => rest.push(pair),
        }
    }
    let url = if rest.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    (url, schema)
}

/// A URL with any password replaced by `***`.
pub(crate) fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            if userinfo.contains(':') {
                format!("{scheme}://{user}:***@{host}{tail}")
            } else {
                format!("{scheme}://{user}@{host}{tail}")
            }
        }
        None => url.to_owned(),
    }
}

impl Metadata for PostgresMetadata {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn is_read_only(&self) -> bool {
        false
    }

    fn schema_version(&self) -> Result<i64, StoreError> {
        Ok(self.query("SELECT version FROM ctx_schema", &[])?[0].get(0))
    }

    fn cached_token_count(
        &self,
        hash: &ContentHash,
        tokenizer: TokenizerKind,
    ) -> Result<Option<u64>, StoreError> {
        let rows = self.query(
            "SELECT tokens FROM token_counts WHERE content_hash = $1 AND tokenizer = $2",
            &[&hash.to_string(), &tokenizer.name()],
        )?;
        Ok(rows.first().map(|r| to_u64(r.get(0))))
    }

    fn remembers_token_counts(&self) -> Result<bool, StoreError> {
        let rows = self.query("SELECT EXISTS (SELECT 1 FROM token_counts)", &[])?;
        Ok(rows.first().is_some_and(|r| r.get::<_, bool>(0)))
    }

    fn lookup_token_counts(
        &self,
        hashes: &[ContentHash],
        tokenizer: TokenizerKind,
    ) -> Result<Vec<Option<u64>>, StoreError> {
        let asked: Vec<String> = hashes.iter().map(ToString::to_string).collect();
        let rows = self.query(
            "SELECT content_hash, tokens FROM token_counts
             WHERE content_hash = ANY($1) AND tokenizer = $2",
            &[&asked, &tokenizer.name()],
        )?;
        let found: BTreeMap<String, u64> = rows
            .iter()
            .map(|r| (r.get::<_, String>(0), to_u64(r.get(1))))
            .collect();
        Ok(asked.iter().map(|h| found.get(h).copied()).collect())
    }

    fn cache_token_counts(
        &self,
        tokenizer: TokenizerKind,
        counts: &[(ContentHash, u64)],
    ) -> Result<(), StoreError> {
        // One row per hash (a batch may repeat one; ON CONFLICT may touch a row once).
        let unique: BTreeMap<String, i64> = counts
            .iter()
            .map(|(h, n)| (h.to_string(), to_i64(*n)))
            .collect();
        if unique.is_empty() {
            return Ok(());
        }
        let (hashes, tokens): (Vec<String>, Vec<i64>) = unique.into_iter().unzip();
        self.execute(
            "INSERT INTO token_counts (content_hash, tokenizer, tokens)
             SELECT h, $2, t FROM UNNEST($1::text[], $3::bigint[]) AS u (h, t)
             ON CONFLICT (content_hash, tokenizer) DO UPDATE SET tokens = excluded.tokens",
            &[&hashes, &tokenizer.name(), &tokens],
        )
        .map(drop)
    }

    fn set_ref(&self, namespace: &str, name: &str, object: &ContentHash) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO refs (namespace, name, object) VALUES ($1, $2, $3)
             ON CONFLICT (namespace, name) DO UPDATE SET object = excluded.object",
            &[&namespace, &name, &object.to_string()],
        )
        .map(drop)
    }

    fn get_ref(&self, namespace: &str, name: &str) -> Result<Option<ContentHash>, StoreError> {
        self.query(
            "SELECT object FROM refs WHERE namespace = $1 AND name = $2",
            &[&namespace, &name],
        )?
        .first()
        .map(|r| parse_hash("refs", "object", r.get(0)))
        .transpose()
    }

    fn delete_ref(&self, namespace: &str, name: &str) -> Result<bool, StoreError> {
        Ok(self.execute(
            "DELETE FROM refs WHERE namespace = $1 AND name = $2",
            &[&namespace, &name],
        )? > 0)
    }

    fn list_refs(&self, namespace: &str) -> Result<Vec<RefEntry>, StoreError> {
        self.query(
            "SELECT name, object FROM refs WHERE namespace = $1 ORDER BY name",
            &[&namespace],
        )?
        .iter()
        .map(|r| {
            Ok(RefEntry {
                namespace: namespace.to_owned(),
                name: r.get(0),
                object: parse_hash("refs", "object", r.get(1))?,
            })
        })
        .collect()
    }

    fn create_pack(&self, new: &NewPack<'_>) -> Result<PackRecord, StoreError> {
        let inserted = self.execute(
            "INSERT INTO packs (name, budget_tokens, tokenizer, created_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (name) DO NOTHING",
            &[
                &new.name,
                &to_i64(new.budget_tokens),
                &new.tokenizer.name(),
                &new.created_at,
            ],
        )?;
        if inserted == 0 {
            return Err(StoreError::PackExists {
                name: new.name.to_owned(),
            });
        }
        self.require_pack(new.name)
    }

    fn set_pack_root(&self, name: &str, root: &str) -> Result<(), StoreError> {
        if self.execute(
            "UPDATE packs SET root = $2 WHERE name = $1",
            &[&name, &root],
        )? == 0
        {
            self.require_pack(name)?;
        }
        Ok(())
    }

    fn get_pack(&self, name: &str) -> Result<Option<PackRecord>, StoreError> {
        self.query(
            &format!("SELECT {PACK_COLUMNS} FROM packs p WHERE p.name = $1"),
            &[&name],
        )?
        .first()
        .map(pack_from_row)
        .transpose()
    }

    fn list_packs(&self) -> Result<Vec<PackRecord>, StoreError> {
        self.query(
            &format!("SELECT {PACK_COLUMNS} FROM packs p ORDER BY p.name"),
            &[],
        )?
        .iter()
        .map(pack_from_row)
        .collect()
    }

    fn update_pack_policy(
        &self,
        name: &str,
        budget_tokens: u64,
        tokenizer: TokenizerKind,
    ) -> Result<(), StoreError> {
        if self.execute(
            "UPDATE packs SET budget_tokens = $2, tokenizer = $3 WHERE name = $1",
            &[&name, &to_i64(budget_tokens), &tokenizer.name()],
        )? == 0
        {
            self.require_pack(name)?;
        }
        Ok(())
    }

    fn delete_pack(&self, name: &str) -> Result<(), StoreError> {
        if self.execute("DELETE FROM packs WHERE name = $1", &[&name])? == 0 {
            self.require_pack(name)?;
        }
        Ok(())
    }

    fn add_artifact(
        &self,
        pack: &str,
        new: &NewArtifact<'_>,
    ) -> Result<ArtifactRecord, StoreError> {
        let record = self.in_transaction(|tx| {
            // The pack row's lock orders concurrent adders: each gets its own `seq`.
            let Some(row) = tx
                .query_opt(
                    "SELECT next_seq FROM packs WHERE name = $1 FOR UPDATE",
                    &[&pack],
                )?
            else {
                return Ok(Err(None));
            };
            let seq: i64 = row.get(0);
            let exists = tx.query_opt(
                "SELECT 1 FROM artifacts WHERE pack = $1 AND artifact_id = $2",
                &[&pack, &new.artifact_id],
            )?;
            if exists.is_some() {
                return Ok(Err(Some(())));
            }
            tx.execute(
                "UPDATE packs SET next_seq = next_seq + 1 WHERE name = $1",
                &[&pack],
            )?;
            let row = tx.query_one(
                &format!(
                    "INSERT INTO artifacts (pack, artifact_id, seq, priority, uri, source_json, added_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {ARTIFACT_COLUMNS}"
                ),
                &[
                    &pack,
                    &new.artifact_id,
                    &seq,
                    &new.priority,
                    &new.uri,
                    &new.source_json,
                    &new.added_at,
                ],
            )?;
            Ok(Ok(artifact_from_row(&row)))
        })?;
        match record {
            Ok(record) => Ok(record),
            Err(Some(())) => Err(StoreError::ArtifactExists {
                pack: pack.to_owned(),
                artifact_id: new.artifact_id.to_owned(),
            }),
            Err(None) => {
                Err(self
                    .require_pack(pack)
                    .err()
                    .unwrap_or_else(|| StoreError::NoSuchPack {
                        name: pack.to_owned(),
                        known: Vec::new(),
                    }))
            }
        }
    }

    fn artifacts(&self, pack: &str) -> Result<Vec<ArtifactRecord>, StoreError> {
        Ok(self
            .query(
                &format!(
                    "SELECT {ARTIFACT_COLUMNS} FROM artifacts WHERE pack = $1 ORDER BY priority DESC, seq ASC"
                ),
                &[&pack],
            )?
            .iter()
            .map(artifact_from_row)
            .collect())
    }

    fn delete_artifact(&self, pack: &str, artifact_id: &str) -> Result<(), StoreError> {
        self.execute(
            "DELETE FROM artifacts WHERE pack = $1 AND artifact_id = $2",
            &[&pack, &artifact_id],
        )
        .map(drop)
    }

    fn write_snapshot(
        &self,
        snapshot: &SnapshotRecord,
        items: &[SnapshotItemRecord],
    ) -> Result<SnapshotRecord, StoreError> {
        let id = snapshot.snapshot_id.to_string();
        self.in_transaction(|tx| {
            // Two hosts storing the same snapshot at once: one inserts, the other keeps it.
            let inserted = tx.execute(
                &format!(
                    "INSERT INTO snapshots ({SNAPSHOT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                     ON CONFLICT (snapshot_id) DO NOTHING"
                ),
                &[
                    &id,
                    &snapshot.label,
                    &serde_json::to_string(&snapshot.packs).expect("strings serialize"),
                    &snapshot.policy_json,
                    &snapshot.render_hash.to_string(),
                    &snapshot.payload_object.to_string(),
                    &to_i64(snapshot.tokens),
                    &snapshot.created_at,
                    &snapshot.root,
                ],
            )?;
            if inserted == 0 {
                if snapshot.label.is_some() {
                    tx.execute(
                        "UPDATE snapshots SET label = $2 WHERE snapshot_id = $1",
                        &[&id, &snapshot.label],
                    )?;
                }
                return Ok(());
            }
            let statement = tx.prepare(
                "INSERT INTO snapshot_items (snapshot_id, position, item_key, content_hash, tokens, included, reason)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )?;
            for item in items {
                tx.execute(
                    &statement,
                    &[
                        &id,
                        &to_i64(item.position),
                        &item.item_key,
                        &item.content_hash.map(|h| h.to_string()),
                        &to_i64(item.tokens),
                        &item.included,
                        &item.reason,
                    ],
                )?;
            }
            Ok(())
        })?;
        self.snapshot_where("snapshot_id = $1", &id)?
            .into_iter()
            .next()
            .ok_or(StoreError::NoSuchSnapshot { id })
    }

    fn snapshot_by_label(&self, label: &str) -> Result<Option<SnapshotRecord>, StoreError> {
        Ok(self.snapshot_where("label = $1", label)?.into_iter().next())
    }

    fn snapshots_with_id_prefix(&self, hex: &str) -> Result<Vec<SnapshotRecord>, StoreError> {
        self.snapshot_where("snapshot_id LIKE $1", &format!("sha256:{hex}%"))
    }

    fn list_snapshots(&self) -> Result<Vec<SnapshotRecord>, StoreError> {
        self.query(
            &format!(
                "SELECT {SNAPSHOT_COLUMNS} FROM snapshots ORDER BY created_at DESC, snapshot_id"
            ),
            &[],
        )?
        .iter()
        .map(snapshot_from_row)
        .collect()
    }

    fn snapshot_items(&self, id: &ContentHash) -> Result<Vec<SnapshotItemRecord>, StoreError> {
        self.query(
            "SELECT position, item_key, content_hash, tokens, included, reason
             FROM snapshot_items WHERE snapshot_id = $1 ORDER BY position",
            &[&id.to_string()],
        )?
        .iter()
        .map(|row| {
            Ok(SnapshotItemRecord {
                position: to_u64(row.get(0)),
                item_key: row.get(1),
                content_hash: row
                    .get::<_, Option<String>>(2)
                    .map(|h| parse_hash("snapshot_items", "content_hash", h))
                    .transpose()?,
                tokens: to_u64(row.get(3)),
                included: row.get(4),
                reason: row.get(5),
            })
        })
        .collect()
    }

    fn run_ids_with_prefix(&self, hex_prefix: &str) -> Result<Vec<String>, StoreError> {
        let escaped: String = hex_prefix.chars().filter(char::is_ascii_hexdigit).collect();
        Ok(self
            .query(
                "SELECT run_id FROM runs WHERE run_id LIKE $1 ORDER BY run_id",
                &[&format!("sha256:{escaped}%")],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    fn list_run_rows(&self) -> Result<Vec<RunRow>, StoreError> {
        Ok(self
            .query(
                "SELECT run_id, parent, source, step_count, model, started, root FROM runs ORDER BY listed DESC",
                &[],
            )?
            .iter()
            .map(|row| RunRow {
                run_id: row.get(0),
                parent: row.get(1),
                source: row.get(2),
                step_count: row.get(3),
                model: row.get(4),
                started: row.get(5),
                root: row.get(6),
            })
            .collect())
    }

    fn record_run(
        &self,
        row: &RunRow,
        objects: &BTreeSet<ContentHash>,
        latest_ref: (&str, &str),
    ) -> Result<(), StoreError> {
        let mut all: Vec<String> = objects.iter().map(ToString::to_string).collect();
        all.push(row.run_id.clone());
        all.sort();
        all.dedup();
        self.in_transaction(|tx| {
            // A run stored again becomes the newest in the listing, as `latest` says.
            tx.execute(
                "INSERT INTO runs (run_id, parent, source, step_count, model, started, root, listed)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, nextval('run_listing'))
                 ON CONFLICT (run_id) DO UPDATE SET listed = nextval('run_listing')",
                &[
                    &row.run_id,
                    &row.parent,
                    &row.source,
                    &row.step_count,
                    &row.model,
                    &row.started,
                    &row.root,
                ],
            )?;
            tx.execute(
                "INSERT INTO run_objects (run_id, object) SELECT $1, o FROM UNNEST($2::text[]) AS u (o)
                 ON CONFLICT DO NOTHING",
                &[&row.run_id, &all],
            )?;
            tx.execute(
                "INSERT INTO refs (namespace, name, object) VALUES ($1, $2, $3)
                 ON CONFLICT (namespace, name) DO UPDATE SET object = excluded.object",
                &[&latest_ref.0, &latest_ref.1, &row.run_id],
            )?;
            Ok(())
        })
    }

    fn stamped_summary_keys(
        &self,
        stamps: &[FileStampRow<'_>],
    ) -> Result<Vec<Option<StampedKey>>, StoreError> {
        if stamps.is_empty() {
            return Ok(Vec::new());
        }
        let paths: Vec<&str> = stamps.iter().map(|s| s.path).collect();
        let rows = self.query(
            "SELECT path, size, mtime_ns, inode, content_hash, extractor FROM code_file_stamps
             WHERE path = ANY($1)",
            &[&paths],
        )?;
        let by_path: BTreeMap<String, (i64, i64, i64, String, String)> = rows
            .iter()
            .map(|r| (r.get(0), (r.get(1), r.get(2), r.get(3), r.get(4), r.get(5))))
            .collect();
        Ok(stamps
            .iter()
            .map(|stamp| {
                let (size, mtime_ns, inode, content_hash, extractor) = by_path.get(stamp.path)?;
                (u64::try_from(*size).ok() == Some(stamp.size)
                    && *mtime_ns == stamp.mtime_ns
                    && *inode == inode_column(stamp.inode))
                .then(|| StampedKey {
                    content_hash: content_hash.clone(),
                    extractor: extractor.clone(),
                })
            })
            .collect())
    }

    fn remember_file_stamps(
        &self,
        entries: &[(FileStampRow<'_>, SummaryKey<'_>)],
    ) -> Result<(), StoreError> {
        let mut unique: BTreeMap<&str, (i64, i64, i64, &str, &str)> = BTreeMap::new();
        for (stamp, key) in entries {
            let Ok(size) = i64::try_from(stamp.size) else {
                continue;
            };
            unique.insert(
                stamp.path,
                (
                    size,
                    stamp.mtime_ns,
                    inode_column(stamp.inode),
                    key.content_hash,
                    key.extractor,
                ),
            );
        }
        if unique.is_empty() {
            return Ok(());
        }
        let paths: Vec<&str> = unique.keys().copied().collect();
        let sizes: Vec<i64> = unique.values().map(|v| v.0).collect();
        let mtimes: Vec<i64> = unique.values().map(|v| v.1).collect();
        let inodes: Vec<i64> = unique.values().map(|v| v.2).collect();
        let hashes: Vec<&str> = unique.values().map(|v| v.3).collect();
        let extractors: Vec<&str> = unique.values().map(|v| v.4).collect();
        self.execute(
            "INSERT INTO code_file_stamps (path, size, mtime_ns, inode, content_hash, extractor)
             SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::text[])
             ON CONFLICT (path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns,
                 inode = excluded.inode, content_hash = excluded.content_hash,
                 extractor = excluded.extractor",
            &[&paths, &sizes, &mtimes, &inodes, &hashes, &extractors],
        )
        .map(drop)
    }

    fn cached_summaries(
        &self,
        keys: &[SummaryKey<'_>],
    ) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let hashes: Vec<&str> = keys.iter().map(|k| k.content_hash).collect();
        let extractors: Vec<&str> = keys.iter().map(|k| k.extractor).collect();
        let rows = self.query(
            "SELECT s.content_hash, s.extractor, s.summary FROM code_summaries s
             JOIN UNNEST($1::text[], $2::text[]) AS k (h, e)
               ON s.content_hash = k.h AND s.extractor = k.e",
            &[&hashes, &extractors],
        )?;
        let found: BTreeMap<(String, String), Vec<u8>> = rows
            .iter()
            .map(|r| ((r.get(0), r.get(1)), r.get(2)))
            .collect();
        Ok(keys
            .iter()
            .map(|k| {
                found
                    .get(&(k.content_hash.to_owned(), k.extractor.to_owned()))
                    .cloned()
            })
            .collect())
    }

    fn cache_summaries(&self, entries: &[(SummaryKey<'_>, &[u8])]) -> Result<(), StoreError> {
        let unique: BTreeMap<(&str, &str), &[u8]> = entries
            .iter()
            .map(|(k, s)| ((k.content_hash, k.extractor), *s))
            .collect();
        if unique.is_empty() {
            return Ok(());
        }
        let hashes: Vec<&str> = unique.keys().map(|k| k.0).collect();
        let extractors: Vec<&str> = unique.keys().map(|k| k.1).collect();
        let summaries: Vec<&[u8]> = unique.values().copied().collect();
        self.execute(
            "INSERT INTO code_summaries (content_hash, extractor, summary)
             SELECT * FROM UNNEST($1::text[], $2::text[], $3::bytea[])
             ON CONFLICT (content_hash, extractor) DO UPDATE SET summary = excluded.summary",
            &[&hashes, &extractors, &summaries],
        )
        .map(drop)
    }

    fn clear_summaries(&self) -> Result<usize, StoreError> {
        let n = self.execute("DELETE FROM code_summaries", &[])?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn render_files(&self, paths: &[&str]) -> Result<Vec<Option<RenderFileRow>>, StoreError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self.query(
            "SELECT path, size, mtime_ns, inode, raw_hash, rules, content_hash, findings,
                    block_key, tokenizer, tokens, skip
             FROM render_files WHERE path = ANY($1)",
            &[&paths],
        )?;
        let by_path: BTreeMap<String, RenderFileRow> = rows
            .iter()
            .map(|r| {
                let path: String = r.get(0);
                let row = RenderFileRow {
                    path: path.clone(),
                    size: to_u64(r.get(1)),
                    mtime_ns: r.get(2),
                    inode: u64::from_ne_bytes(r.get::<_, i64>(3).to_ne_bytes()),
                    raw_hash: r.get(4),
                    rules: r.get(5),
                    content_hash: r.get(6),
                    findings: r.get(7),
                    block_key: r.get(8),
                    tokenizer: r.get(9),
                    tokens: to_u64(r.get(10)),
                    skip: r.get(11),
                };
                (path, row)
            })
            .collect();
        // A path asked for twice gets its row twice.
        Ok(paths.iter().map(|p| by_path.get(*p).cloned()).collect())
    }

    fn remember_render_files(&self, rows: &[RenderFileRow]) -> Result<(), StoreError> {
        let unique: BTreeMap<&str, &RenderFileRow> =
            rows.iter().map(|r| (r.path.as_str(), r)).collect();
        if unique.is_empty() {
            return Ok(());
        }
        let column = |f: fn(&RenderFileRow) -> &str| -> Vec<&str> {
            unique.values().map(|r| f(r)).collect()
        };
        let paths: Vec<&str> = unique.keys().copied().collect();
        let sizes: Vec<i64> = unique.values().map(|r| to_i64(r.size)).collect();
        let mtimes: Vec<i64> = unique.values().map(|r| r.mtime_ns).collect();
        let inodes: Vec<i64> = unique.values().map(|r| inode_column(r.inode)).collect();
        let tokens: Vec<i64> = unique.values().map(|r| to_i64(r.tokens)).collect();
        self.execute(
            "INSERT INTO render_files (path, size, mtime_ns, inode, raw_hash, rules, content_hash,
                 findings, block_key, tokenizer, tokens, skip)
             SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[],
                 $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::bigint[],
                 $12::text[])
             ON CONFLICT (path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns,
                 inode = excluded.inode, raw_hash = excluded.raw_hash, rules = excluded.rules,
                 content_hash = excluded.content_hash, findings = excluded.findings,
                 block_key = excluded.block_key, tokenizer = excluded.tokenizer,
                 tokens = excluded.tokens, skip = excluded.skip",
            &[
                &paths,
                &sizes,
                &mtimes,
                &inodes,
                &column(|r| &r.raw_hash),
                &column(|r| &r.rules),
                &column(|r| &r.content_hash),
                &column(|r| &r.findings),
                &column(|r| &r.block_key),
                &column(|r| &r.tokenizer),
                &tokens,
                &column(|r| &r.skip),
            ],
        )
        .map(drop)
    }

    fn forget_render_files(&self, paths: &[&str]) -> Result<(), StoreError> {
        if paths.is_empty() {
            return Ok(());
        }
        self.execute("DELETE FROM render_files WHERE path = ANY($1)", &[&paths])
            .map(drop)
    }

    fn render_payload(&self, layout: &str) -> Result<Option<RenderPayloadRow>, StoreError> {
        let rows = self.query(
            "SELECT payload_hash, bytes FROM render_payloads WHERE layout = $1",
            &[&layout],
        )?;
        Ok(rows.first().map(|r| RenderPayloadRow {
            layout: layout.to_owned(),
            payload_hash: r.get(0),
            bytes: to_u64(r.get(1)),
        }))
    }

    fn remember_render_payload(&self, row: &RenderPayloadRow) -> Result<(), StoreError> {
        let bytes = to_i64(row.bytes);
        let kept = i64::try_from(RENDER_PAYLOADS_KEPT).unwrap_or(i64::MAX);
        self.in_transaction(|tx| {
            tx.execute(
                "INSERT INTO render_payloads (layout, payload_hash, bytes, seq)
                 SELECT $1, $2, $3, COALESCE(MAX(seq), 0) + 1 FROM render_payloads
                 ON CONFLICT (layout) DO UPDATE SET payload_hash = excluded.payload_hash,
                     bytes = excluded.bytes, seq = excluded.seq",
                &[&row.layout, &row.payload_hash, &bytes],
            )?;
            tx.execute(
                "DELETE FROM render_payloads
                 WHERE seq <= (SELECT MAX(seq) FROM render_payloads) - $1",
                &[&kept],
            )?;
            Ok(())
        })
    }

    fn forget_render_payload(&self, layout: &str) -> Result<(), StoreError> {
        self.execute("DELETE FROM render_payloads WHERE layout = $1", &[&layout])
            .map(drop)
    }

    fn restore_artifact(&self, record: &ArtifactRecord) -> Result<(), StoreError> {
        self.require_pack(&record.pack)?;
        let seq = to_i64(record.seq);
        self.in_transaction(|tx| {
            tx.execute(
                "INSERT INTO artifacts (pack, artifact_id, seq, priority, uri, source_json, added_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
                &[
                    &record.pack,
                    &record.artifact_id,
                    &seq,
                    &record.priority,
                    &record.uri,
                    &record.source_json,
                    &record.added_at,
                ],
            )?;
            tx.execute(
                "UPDATE packs SET next_seq = GREATEST(next_seq, $2::bigint + 1) WHERE name = $1",
                &[&record.pack, &seq],
            )?;
            Ok(())
        })
    }

    fn ref_namespaces(&self) -> Result<Vec<String>, StoreError> {
        Ok(self
            .query(
                "SELECT DISTINCT namespace FROM refs ORDER BY namespace",
                &[],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    fn run_objects(&self, run_id: &str) -> Result<BTreeSet<ContentHash>, StoreError> {
        self.query(
            "SELECT object FROM run_objects WHERE run_id = $1 ORDER BY object",
            &[&run_id],
        )?
        .into_iter()
        .map(|r| parse_hash("run_objects", "object", r.get(0)))
        .collect()
    }

    fn object_references(&self) -> Result<Vec<ObjectReference>, StoreError> {
        let mut out = Vec::new();
        for &(table, column) in OBJECT_REFERENCES {
            let rows = self.query(
                &format!(
                    "SELECT DISTINCT {column} FROM {table} WHERE {column} IS NOT NULL ORDER BY 1"
                ),
                &[],
            )?;
            out.extend(rows.iter().map(|r| ObjectReference {
                table,
                column,
                value: r.get(0),
            }));
        }
        Ok(out)
    }

    fn integrity_problems(&self) -> Result<Vec<String>, StoreError> {
        // PostgreSQL enforces the foreign keys and checks its own pages; what it cannot see is
        // an unfinished migration.
        let version = self.schema_version()?;
        let known = i64::try_from(PG_MIGRATIONS.len()).unwrap_or(i64::MAX);
        Ok(if version == known {
            Vec::new()
        } else {
            vec![format!(
                "schema version {version}, expected {known}; run `ctx store migrate`"
            )]
        })
    }

    fn gc_marks_in_database(&self) -> bool {
        true
    }

    fn gc_unmark(&self, objects: &[ContentHash]) -> Result<(), StoreError> {
        if objects.is_empty() {
            return Ok(());
        }
        let objects: Vec<String> = objects.iter().map(ToString::to_string).collect();
        // Blocks while a gc holds one of these marks (it is deciding whether to delete that
        // object); afterwards the object is either kept, or gone and the caller writes it anew.
        self.execute("DELETE FROM gc_marks WHERE object = ANY($1)", &[&objects])
            .map(drop)
    }

    fn gc_mark(
        &self,
        unreferenced: &[ContentHash],
        grace: Duration,
    ) -> Result<Vec<ContentHash>, StoreError> {
        let objects: Vec<String> = unreferenced.iter().map(ToString::to_string).collect();
        self.execute(
            "INSERT INTO gc_marks (object) SELECT o FROM UNNEST($1::text[]) AS u (o)
             ON CONFLICT (object) DO NOTHING",
            &[&objects],
        )?;
        // Marks of objects that are referenced again are dropped: they only delay a deletion.
        self.execute(
            "DELETE FROM gc_marks WHERE NOT (object = ANY($1))",
            &[&objects],
        )?;
        let seconds = grace.as_secs_f64();
        self.query(
            "SELECT object FROM gc_marks WHERE object = ANY($1)
               AND marked_at <= now() - make_interval(secs => $2) ORDER BY object",
            &[&objects, &seconds],
        )?
        .iter()
        .map(|r| parse_hash("gc_marks", "object", r.get(0)))
        .collect()
    }

    fn gc_sweep_one(
        &self,
        object: &ContentHash,
        grace: Duration,
        remove: &mut (dyn FnMut() -> Result<(), StoreError> + Send),
    ) -> Result<bool, StoreError> {
        off_runtime(|| self.sweep_one_here(object, grace, remove))
    }
}

impl PostgresMetadata {
    fn sweep_one_here(
        &self,
        object: &ContentHash,
        grace: Duration,
        remove: &mut (dyn FnMut() -> Result<(), StoreError> + Send),
    ) -> Result<bool, StoreError> {
        let object = object.to_string();
        let seconds = grace.as_secs_f64();
        let mut client = self.client()?;
        let mut tx = client.transaction().map_err(|e| self.err(&e))?;
        // Taking the mark row locks out writers storing this object again (they unmark first).
        let marked = tx
            .query_opt(
                "DELETE FROM gc_marks WHERE object = $1
                   AND marked_at <= now() - make_interval(secs => $2) RETURNING 1",
                &[&object, &seconds],
            )
            .map_err(|e| self.err(&e))?;
        if marked.is_none() {
            return Ok(false);
        }
        let referenced: bool = tx
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM refs WHERE object = $1)
                     OR EXISTS (SELECT 1 FROM snapshots WHERE payload_object = $1)
                     OR EXISTS (SELECT 1 FROM runs WHERE run_id = $1)
                     OR EXISTS (SELECT 1 FROM run_objects WHERE object = $1)",
                &[&object],
            )
            .map_err(|e| self.err(&e))?
            .get(0);
        if referenced {
            tx.commit().map_err(|e| self.err(&e))?;
            return Ok(false);
        }
        remove()?;
        tx.commit().map_err(|e| self.err(&e))?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_password_and_keep_their_schema_apart() {
        assert_eq!(
            redact_url("postgres://ctx:s3cret@db:5432/ctx?schema=team"),
            "postgres://ctx:***@db:5432/ctx?schema=team"
        );
        assert_eq!(redact_url("postgres://ctx@db/ctx"), "postgres://ctx@db/ctx");
        let (url, schema) = split_schema("postgres://h/db?sslmode=disable&schema=t1");
        assert_eq!(url, "postgres://h/db?sslmode=disable");
        assert_eq!(schema.as_deref(), Some("t1"));
        let (url, schema) = split_schema("postgres://h/db");
        assert_eq!((url.as_str(), schema), ("postgres://h/db", None));
    }
}
