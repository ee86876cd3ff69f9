//! Provenance sidecars (seed 004 §6): an in-toto Statement v1 that ties an artifact to the run
//! that made it, optionally signed in a DSSE envelope with an ed25519 key.
//!
//! ```text
//! ctx run keygen             KeyRing::generate   .ctx/keys/<keyid>.key (0600) + .pub, trusted.json
//! ctx run attach RUN FILE    attach              FILE.ctx.json (statement or DSSE envelope);
//!                                                the statement as an object + ref run-attachments
//! ctx run verify FILE        verify              digest, signature, run in store, run lists it
//! ```
//!
//! A run is never rewritten by `attach` (that would change its id): the statement is stored as
//! an object and the ref `run-attachments/<run id>/<artifact digest>` points at it, so
//! `store verify` checks it and `store gc` keeps it. `verify` accepts an artifact as listed by
//! its run when the run's own outputs hold its digest, or when that ref's statement is exactly
//! the sidecar's.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ctx_core::{ContentHash, ContentHasher, canonical};
use ctx_store::{Store, StoreError};
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The in-toto Statement type this module writes and reads.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The predicate type of a ctx run provenance statement.
pub const PREDICATE_TYPE: &str = "ctx://predicate/run/v1";
/// The DSSE payload type of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// The ref namespace holding attached statements: `<run id>/<artifact digest>` -> statement.
pub const ATTACHMENTS_NAMESPACE: &str = "run-attachments";
/// What `attach` appends to the artifact's file name.
pub const SIDECAR_SUFFIX: &str = ".ctx.json";

/// Errors of provenance operations. All of them are bad input or an unreadable store: a check
/// that does not hold is a [`VerifyReport`] entry, not an error.
#[derive(Debug, thiserror::Error)]
pub enum ProvenanceError {
    #[error("cannot read `{path}`: {source}; name an existing file")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`{path}` is not a regular file; name a file")]
    NotAFile { path: PathBuf },
    #[error("cannot write `{path}`: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "`{path}` is not a ctx provenance sidecar ({reason}); attach it again with `ctx run attach RUN ARTIFACT`"
    )]
    BadSidecar { path: PathBuf, reason: String },
    #[error("no signing key in {dir}; make one with `ctx run keygen`")]
    NoSigningKey { dir: PathBuf },
    #[error("no signing key `{keyid}` in {dir}; `ctx run keygen --list` shows the keys")]
    UnknownSigningKey { keyid: String, dir: PathBuf },
    #[error("key file `{path}` is damaged ({reason}); remove it and run `ctx run keygen`")]
    BadKeyFile { path: PathBuf, reason: String },
    #[error(
        "public key `{text}` is not an ed25519 public key ({reason}); give `ed25519:<base64 of 32 bytes>` or a .pub file made by `ctx run keygen`"
    )]
    BadPublicKey { text: String, reason: String },
    #[error("the random number generator failed: {0}")]
    Random(String),
    #[error("run `{run}`: {message}")]
    Run { run: String, message: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn read_err(path: &Path) -> impl FnOnce(std::io::Error) -> ProvenanceError + '_ {
    move |source| ProvenanceError::Read {
        path: path.to_owned(),
        source,
    }
}

fn write_err(path: &Path) -> impl FnOnce(std::io::Error) -> ProvenanceError + '_ {
    move |source| ProvenanceError::Write {
        path: path.to_owned(),
        source,
    }
}

// ---------------------------------------------------------------------------------------------
// The statement

/// A digest set as in-toto writes it: algorithm -> lowercase hex.
pub type DigestSet = BTreeMap<String, String>;

fn sha256_digest(hash: &ContentHash) -> DigestSet {
    BTreeMap::from([("sha256".to_owned(), hash.to_hex())])
}

/// An in-toto Statement v1 whose predicate describes a ctx run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Statement {
    /// Always [`STATEMENT_TYPE`].
    #[serde(rename = "_type")]
    pub statement_type: String,
    /// The artifacts this statement is about (one: the attached file).
    pub subject: Vec<Subject>,
    /// Always [`PREDICATE_TYPE`].
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    /// The run that made the subject.
    pub predicate: RunPredicate,
}

/// One artifact: its file name and digests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    pub name: String,
    pub digest: DigestSet,
}

/// What a statement says about the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunPredicate {
    /// The run id (`sha256:<hex>`).
    pub run: ContentHash,
    /// The run's inputs, by name.
    pub inputs: Vec<PredicateInput>,
    /// The tools the run called, sorted, each once.
    pub tools: Vec<String>,
}

/// One input of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PredicateInput {
    pub name: String,
    pub digest: DigestSet,
}

/// What provenance needs to know about a run (filled from the run record by the caller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFacts {
    /// The run id.
    pub id: ContentHash,
    /// Inputs: name and content hash.
    pub inputs: Vec<(String, ContentHash)>,
    /// Tool names of the run's steps (in any order, repeats allowed).
    pub tools: Vec<String>,
    /// Content hashes of the run's recorded outputs.
    pub outputs: Vec<ContentHash>,
}

impl RunFacts {
    /// The facts of a loaded run: its id, inputs, tools and outputs.
    pub fn of(run: &crate::Run) -> Self {
        Self {
            id: run.id,
            inputs: run
                .manifest
                .inputs
                .iter()
                .map(|i| (i.name.clone(), i.content_ref))
                .collect(),
            tools: run.tools(),
            outputs: run.manifest.outputs.iter().map(|o| o.content_ref).collect(),
        }
    }
}

/// Finds runs in the store (implemented over the run records by the caller).
pub trait RunLookup {
    /// The run with this exact id, or `None` when the store does not hold it.
    fn run_facts(&self, id: &ContentHash) -> Result<Option<RunFacts>, ProvenanceError>;
}

impl Statement {
    /// The statement that `artifact_name` with digest `digest` was made by the run `run`.
    pub fn for_run(run: &RunFacts, artifact_name: &str, digest: &ContentHash) -> Self {
        let mut inputs: Vec<PredicateInput> = run
            .inputs
            .iter()
            .map(|(name, hash)| PredicateInput {
                name: name.clone(),
                digest: sha256_digest(hash),
            })
            .collect();
        inputs.sort_by(|a, b| (&a.name, &a.digest).cmp(&(&b.name, &b.digest)));
        inputs.dedup();
        let mut tools = run.tools.clone();
        tools.sort();
        tools.dedup();
        Self {
            statement_type: STATEMENT_TYPE.to_owned(),
            subject: vec![Subject {
                name: artifact_name.to_owned(),
                digest: sha256_digest(digest),
            }],
            predicate_type: PREDICATE_TYPE.to_owned(),
            predicate: RunPredicate {
                run: run.id,
                inputs,
                tools,
            },
        }
    }

    /// The statement as RFC 8785 canonical JSON (what is signed and stored).
    pub fn canonical_bytes(&self) -> Vec<u8> {
        canonical::to_vec(self).expect("statements serialize")
    }

    /// The subject's sha256 digest, if it has one valid digest.
    fn subject_digest(&self) -> Option<ContentHash> {
        let [subject] = self.subject.as_slice() else {
            return None;
        };
        ContentHash::from_hex(subject.digest.get("sha256")?).ok()
    }
}

// ---------------------------------------------------------------------------------------------
// DSSE

/// A DSSE envelope (<https://github.com/secure-systems-lab/dsse>).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// Base64 (standard, padded) of the payload bytes.
    pub payload: String,
    pub signatures: Vec<EnvelopeSignature>,
}

/// One signature of an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvelopeSignature {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub keyid: String,
    /// Base64 of the 64-byte ed25519 signature over the PAE.
    pub sig: String,
}

/// DSSE's pre-authentication encoding: `DSSEv1 SP LEN(type) SP type SP LEN(body) SP body`.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

// ---------------------------------------------------------------------------------------------
// Keys

/// A public key as text: `ed25519:<base64>`.
pub fn public_key_text(key: &VerifyingKey) -> String {
    format!("ed25519:{}", BASE64.encode(key.to_bytes()))
}

/// A key's id: the lowercase hex SHA-256 of its 32 public-key bytes.
pub fn key_id(key: &VerifyingKey) -> String {
    ContentHash::of(&key.to_bytes()).to_hex()
}

/// Parses `ed25519:<base64>` (also accepted: bare base64, or 64 hex digits).
pub fn parse_public_key(text: &str) -> Result<VerifyingKey, ProvenanceError> {
    let trimmed = text.trim();
    let bad = |reason: &str| ProvenanceError::BadPublicKey {
        text: trimmed.chars().take(80).collect(),
        reason: reason.to_owned(),
    };
    let body = trimmed.strip_prefix("ed25519:").unwrap_or(trimmed);
    let bytes = if body.len() == 64 && body.bytes().all(|b| b.is_ascii_hexdigit()) {
        hex::decode(body).map_err(|e| bad(&e.to_string()))?
    } else {
        BASE64.decode(body).map_err(|e| bad(&e.to_string()))?
    };
    let array: [u8; 32] = bytes
        .as_slice()
        .try_into()
        .map_err(|_| bad(&format!("{} bytes, not 32", bytes.len())))?;
    VerifyingKey::from_bytes(&array).map_err(|e| bad(&e.to_string()))
}

/// One trusted public key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustedKey {
    pub keyid: String,
    /// `ed25519:<base64>`.
    pub public_key: String,
    /// `keygen` (made here) or `trusted` (added with `--trust`).
    pub origin: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustedFile {
    version: u32,
    keys: Vec<TrustedKey>,
}

/// What `keygen` or `trust` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyInfo {
    pub keyid: String,
    pub public_key: String,
    /// The private key file (only for generated keys).
    pub private_key_file: Option<PathBuf>,
    /// The public key file.
    pub public_key_file: PathBuf,
    /// Whether this key is now the default signing key.
    pub default: bool,
}

/// The store's keys: `.ctx/keys/` with `<keyid>.key` (0600), `<keyid>.pub`, `default` (the
/// signing key's id) and `trusted.json` (the keys `verify` accepts).
#[derive(Debug, Clone)]
pub struct KeyRing {
    dir: PathBuf,
}

impl KeyRing {
    /// The key ring of the store at `store_dir` (the `.ctx` directory).
    pub fn for_store(store_dir: &Path) -> Self {
        Self {
            dir: store_dir.join("keys"),
        }
    }

    /// The keys directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn ensure_dir(&self) -> Result<(), ProvenanceError> {
        fs::create_dir_all(&self.dir).map_err(write_err(&self.dir))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            fs::set_permissions(&self.dir, fs::Permissions::from_mode(0o700))
                .map_err(write_err(&self.dir))?;
        }
        Ok(())
    }

    /// Makes a new ed25519 key from the operating system's random source, stores it (private
    /// key readable by the owner only), trusts it and makes it the default signing key.
    pub fn generate(&self) -> Result<KeyInfo, ProvenanceError> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| ProvenanceError::Random(e.to_string()))?;
        let key = SigningKey::from_bytes(&seed);
        seed.fill(0);
        self.install(&key)
    }

    /// Stores `key` as [`generate`](Self::generate) does (used by tests with fixed keys).
    pub fn install(&self, key: &SigningKey) -> Result<KeyInfo, ProvenanceError> {
        self.ensure_dir()?;
        let public = key.verifying_key();
        let keyid = key_id(&public);
        let private_path = self.dir.join(format!("{keyid}.key"));
        let mut text = hex::encode(key.to_bytes());
        text.push('\n');
        write_private(&private_path, text.as_bytes())?;
        let public_path = self.write_public(&public)?;
        self.add_trusted(&public, "keygen")?;
        atomic_write(&self.dir.join("default"), format!("{keyid}\n").as_bytes())?;
        Ok(KeyInfo {
            keyid,
            public_key: public_key_text(&public),
            private_key_file: Some(private_path),
            public_key_file: public_path,
            default: true,
        })
    }

    fn write_public(&self, public: &VerifyingKey) -> Result<PathBuf, ProvenanceError> {
        let path = self.dir.join(format!("{}.pub", key_id(public)));
        atomic_write(&path, format!("{}\n", public_key_text(public)).as_bytes())?;
        Ok(path)
    }

    /// Trusts an extra public key (`ed25519:<base64>`, or the path of a `.pub` file).
    pub fn trust(&self, key_or_file: &str) -> Result<KeyInfo, ProvenanceError> {
        let text = if Path::new(key_or_file).is_file() {
            fs::read_to_string(key_or_file).map_err(read_err(Path::new(key_or_file)))?
        } else {
            key_or_file.to_owned()
        };
        let public = parse_public_key(&text)?;
        self.ensure_dir()?;
        let path = self.write_public(&public)?;
        self.add_trusted(&public, "trusted")?;
        Ok(KeyInfo {
            keyid: key_id(&public),
            public_key: public_key_text(&public),
            private_key_file: None,
            public_key_file: path,
            default: false,
        })
    }

    fn trusted_path(&self) -> PathBuf {
        self.dir.join("trusted.json")
    }

    /// The trusted keys, by key id.
    pub fn trusted(&self) -> Result<Vec<TrustedKey>, ProvenanceError> {
        let path = self.trusted_path();
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(read_err(&path)(e)),
        };
        let file: TrustedFile =
            serde_json::from_slice(&bytes).map_err(|e| ProvenanceError::BadKeyFile {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        Ok(file.keys)
    }

    fn add_trusted(&self, public: &VerifyingKey, origin: &str) -> Result<(), ProvenanceError> {
        let mut keys = self.trusted()?;
        let keyid = key_id(public);
        if !keys.iter().any(|k| k.keyid == keyid) {
            keys.push(TrustedKey {
                keyid,
                public_key: public_key_text(public),
                origin: origin.to_owned(),
            });
        }
        keys.sort_by(|a, b| a.keyid.cmp(&b.keyid));
        let mut bytes = serde_json::to_vec_pretty(&TrustedFile { version: 1, keys })
            .expect("trusted keys serialize");
        bytes.push(b'\n');
        atomic_write(&self.trusted_path(), &bytes)
    }

    /// The default signing key's id, if `keygen` has run.
    pub fn default_keyid(&self) -> Result<Option<String>, ProvenanceError> {
        let path = self.dir.join("default");
        match fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text.trim().to_owned())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(read_err(&path)(e)),
        }
    }

    /// The signing key `keyid`, or the default one.
    pub fn signing_key(&self, keyid: Option<&str>) -> Result<SigningKey, ProvenanceError> {
        let keyid = match keyid {
            Some(id) => id.to_owned(),
            None => self
                .default_keyid()?
                .ok_or_else(|| ProvenanceError::NoSigningKey {
                    dir: self.dir.clone(),
                })?,
        };
        let path = self.dir.join(format!("{keyid}.key"));
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ProvenanceError::UnknownSigningKey {
                    keyid,
                    dir: self.dir.clone(),
                });
            }
            Err(e) => return Err(read_err(&path)(e)),
        };
        let bad = |reason: String| ProvenanceError::BadKeyFile {
            path: path.clone(),
            reason,
        };
        let bytes = hex::decode(text.trim()).map_err(|e| bad(e.to_string()))?;
        let seed: [u8; 32] = bytes
            .as_slice()
            .try_into()
            .map_err(|_| bad(format!("{} bytes, not 32", bytes.len())))?;
        let key = SigningKey::from_bytes(&seed);
        if key_id(&key.verifying_key()) != keyid {
            return Err(bad("the key does not match its file name".to_owned()));
        }
        Ok(key)
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), ProvenanceError> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(write_err(path))?;
    file.write_all(bytes).map_err(write_err(path))?;
    file.sync_all().map_err(write_err(path))
}

/// Writes `bytes` to a temporary file next to `path` and renames it into place.
fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), ProvenanceError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    result.map_err(|source| {
        let _ = fs::remove_file(&tmp);
        ProvenanceError::Write {
            path: path.to_owned(),
            source,
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Attach

/// The SHA-256 of a regular file's bytes, read in chunks.
pub fn hash_file(path: &Path) -> Result<ContentHash, ProvenanceError> {
    let meta = fs::metadata(path).map_err(read_err(path))?;
    if !meta.is_file() {
        return Err(ProvenanceError::NotAFile {
            path: path.to_owned(),
        });
    }
    let mut file = fs::File::open(path).map_err(read_err(path))?;
    let mut hasher = ContentHasher::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).map_err(read_err(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finish())
}

/// The sidecar path of an artifact: `ARTIFACT.ctx.json`.
pub fn sidecar_path(artifact: &Path) -> PathBuf {
    let mut name = artifact.as_os_str().to_owned();
    name.push(SIDECAR_SUFFIX);
    PathBuf::from(name)
}

/// The ref name under [`ATTACHMENTS_NAMESPACE`] for a run and an artifact digest.
pub fn attachment_ref(run: &ContentHash, artifact: &ContentHash) -> String {
    format!("{run}/{artifact}")
}

/// What `attach` did.
#[derive(Debug, Clone, Serialize)]
pub struct Attachment {
    pub run: ContentHash,
    pub artifact: String,
    pub digest: ContentHash,
    pub sidecar: PathBuf,
    /// The statement as stored in the object store.
    pub statement_object: ContentHash,
    /// The signing key's id when signed.
    pub signed_by: Option<String>,
    pub statement: Statement,
}

/// Writes `ARTIFACT.ctx.json` for `artifact` made by `run` (a DSSE envelope when `signer` is
/// given, else the bare statement) and records the attachment in the store.
pub fn attach(
    store: &Store,
    run: &RunFacts,
    artifact: &Path,
    signer: Option<&SigningKey>,
) -> Result<Attachment, ProvenanceError> {
    let digest = hash_file(artifact)?;
    let name = artifact
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| ProvenanceError::NotAFile {
            path: artifact.to_owned(),
        })?;
    let statement = Statement::for_run(run, &name, &digest);
    let payload = statement.canonical_bytes();
    let (sidecar_value, signed_by) = match signer {
        Some(key) => {
            let keyid = key_id(&key.verifying_key());
            let sig: Signature = key.sign(&pae(PAYLOAD_TYPE, &payload));
            let envelope = Envelope {
                payload_type: PAYLOAD_TYPE.to_owned(),
                payload: BASE64.encode(&payload),
                signatures: vec![EnvelopeSignature {
                    keyid: keyid.clone(),
                    sig: BASE64.encode(sig.to_bytes()),
                }],
            };
            (
                serde_json::to_value(&envelope).expect("envelopes serialize"),
                Some(keyid),
            )
        }
        None => (
            serde_json::to_value(&statement).expect("statements serialize"),
            None,
        ),
    };
    let statement_object = store.objects().put(&payload)?;
    store.db().set_ref(
        ATTACHMENTS_NAMESPACE,
        &attachment_ref(&run.id, &digest),
        &statement_object,
    )?;
    let sidecar = sidecar_path(artifact);
    let mut bytes = serde_json::to_vec_pretty(&sidecar_value).expect("sidecars serialize");
    bytes.push(b'\n');
    atomic_write(&sidecar, &bytes)?;
    Ok(Attachment {
        run: run.id,
        artifact: name,
        digest,
        sidecar,
        statement_object,
        signed_by,
        statement,
    })
}

/// The artifacts attached to `run`: (artifact digest, statement object), by digest.
pub fn attachments(
    store: &Store,
    run: &ContentHash,
) -> Result<Vec<(ContentHash, ContentHash)>, ProvenanceError> {
    let prefix = format!("{run}/");
    Ok(store
        .db()
        .list_refs(ATTACHMENTS_NAMESPACE)?
        .into_iter()
        .filter_map(|entry| {
            let digest = entry.name.strip_prefix(&prefix)?.parse().ok()?;
            Some((digest, entry.object))
        })
        .collect())
}

// ---------------------------------------------------------------------------------------------
// Verify

/// Whether a check holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Holds,
    DoesNotHold,
    /// Not applicable (an unsigned sidecar's signature check); never a failure.
    NotChecked,
}

impl Outcome {
    /// The words printed for it.
    pub fn words(self) -> &'static str {
        match self {
            Self::Holds => "holds",
            Self::DoesNotHold => "does not hold",
            Self::NotChecked => "not checked",
        }
    }
}

/// One verification check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// `artifact_digest`, `signature`, `run_in_store` or `run_lists_artifact`.
    pub check: &'static str,
    pub outcome: Outcome,
    /// What was found, in one sentence.
    pub detail: String,
}

/// What `verify` found.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    /// The artifact, as named by the caller.
    pub artifact: String,
    /// The sidecar read.
    pub sidecar: String,
    /// The artifact's sha256 now.
    pub digest: ContentHash,
    /// The run the statement names.
    pub run: ContentHash,
    /// Whether the sidecar is a signed envelope.
    pub signed: bool,
    pub checks: Vec<Check>,
    /// True when no check is `does_not_hold`.
    pub verified: bool,
}

/// Options of [`verify`].
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    /// Public keys trusted for this verification only, besides the store's.
    pub extra_trusted: Vec<VerifyingKey>,
    /// Fail an unsigned sidecar instead of reporting its signature as not checked.
    pub require_signature: bool,
}

enum Sidecar {
    Bare(Statement),
    Signed {
        envelope: Envelope,
        payload: Vec<u8>,
        statement: Statement,
    },
}

fn parse_sidecar(path: &Path, bytes: &[u8]) -> Result<Sidecar, ProvenanceError> {
    let bad = |reason: String| ProvenanceError::BadSidecar {
        path: path.to_owned(),
        reason,
    };
    let value: Value = serde_json::from_slice(bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
    let statement_from = |value: Value| -> Result<Statement, ProvenanceError> {
        let statement: Statement = serde_json::from_value(value)
            .map_err(|e| bad(format!("not an in-toto statement: {e}")))?;
        if statement.statement_type != STATEMENT_TYPE {
            return Err(bad(format!(
                "_type is `{}`, not {STATEMENT_TYPE}",
                statement.statement_type
            )));
        }
        if statement.predicate_type != PREDICATE_TYPE {
            return Err(bad(format!(
                "predicateType is `{}`, not {PREDICATE_TYPE}",
                statement.predicate_type
            )));
        }
        Ok(statement)
    };
    if value.get("payloadType").is_some() {
        let envelope: Envelope =
            serde_json::from_value(value).map_err(|e| bad(format!("not a DSSE envelope: {e}")))?;
        if envelope.payload_type != PAYLOAD_TYPE {
            return Err(bad(format!(
                "payloadType is `{}`, not {PAYLOAD_TYPE}",
                envelope.payload_type
            )));
        }
        let payload = BASE64
            .decode(&envelope.payload)
            .map_err(|e| bad(format!("payload is not base64: {e}")))?;
        let inner: Value = serde_json::from_slice(&payload)
            .map_err(|e| bad(format!("payload is not JSON: {e}")))?;
        let statement = statement_from(inner)?;
        Ok(Sidecar::Signed {
            envelope,
            payload,
            statement,
        })
    } else {
        Ok(Sidecar::Bare(statement_from(value)?))
    }
}

fn signature_check(
    envelope: &Envelope,
    payload: &[u8],
    trusted: &[(String, VerifyingKey)],
) -> Check {
    let message = pae(&envelope.payload_type, payload);
    let mut problems = Vec::new();
    for signature in &envelope.signatures {
        let label = if signature.keyid.is_empty() {
            "(no key id)".to_owned()
        } else {
            signature.keyid.clone()
        };
        let Some(sig) = BASE64
            .decode(&signature.sig)
            .ok()
            .and_then(|b| Signature::from_slice(&b).ok())
        else {
            problems.push(format!(
                "the signature by {label} is not a valid ed25519 signature"
            ));
            continue;
        };
        let candidates: Vec<&(String, VerifyingKey)> = trusted
            .iter()
            .filter(|(id, _)| signature.keyid.is_empty() || *id == signature.keyid)
            .collect();
        if candidates.is_empty() {
            problems.push(format!(
                "signed by key {label}, which is not trusted (trust it with `ctx run keygen --trust PUBLIC_KEY`)"
            ));
            continue;
        }
        if let Some((id, _)) = candidates
            .iter()
            .find(|(_, key)| key.verify_strict(&message, &sig).is_ok())
        {
            return Check {
                check: "signature",
                outcome: Outcome::Holds,
                detail: format!("signed by trusted key {id}"),
            };
        }
        problems.push(format!(
            "the signature by {label} does not match the payload (the sidecar was changed after signing)"
        ));
    }
    if envelope.signatures.is_empty() {
        problems.push("the envelope has no signatures".to_owned());
    }
    Check {
        check: "signature",
        outcome: Outcome::DoesNotHold,
        detail: problems.join("; "),
    }
}

/// Verifies `artifact` against its sidecar (`sidecar`, default `ARTIFACT.ctx.json`): the
/// artifact's digest, the signature (against the store's trusted keys and
/// `options.extra_trusted`), that the run exists in the store, and that it lists the artifact.
///
/// Unreadable or malformed input is an error; a check that does not hold is in the report.
pub fn verify(
    store: &Store,
    runs: &dyn RunLookup,
    artifact: &Path,
    sidecar: Option<&Path>,
    options: &VerifyOptions,
) -> Result<VerifyReport, ProvenanceError> {
    let digest = hash_file(artifact)?;
    let sidecar_file = sidecar.map_or_else(|| sidecar_path(artifact), Path::to_path_buf);
    let bytes = fs::read(&sidecar_file).map_err(read_err(&sidecar_file))?;
    let parsed = parse_sidecar(&sidecar_file, &bytes)?;
    let statement = match &parsed {
        Sidecar::Bare(statement) | Sidecar::Signed { statement, .. } => statement.clone(),
    };
    let mut checks = Vec::new();

    // 1. The artifact's bytes are the subject's.
    let name = artifact
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    checks.push(match statement.subject_digest() {
        Some(recorded) if recorded == digest => Check {
            check: "artifact_digest",
            outcome: Outcome::Holds,
            detail: format!("{name} has sha256 {}", digest.to_hex()),
        },
        Some(recorded) => Check {
            check: "artifact_digest",
            outcome: Outcome::DoesNotHold,
            detail: format!(
                "{name} has sha256 {}, the statement says {} (the artifact changed after attach)",
                digest.to_hex(),
                recorded.to_hex()
            ),
        },
        None => Check {
            check: "artifact_digest",
            outcome: Outcome::DoesNotHold,
            detail: "the statement has no single subject with a sha256 digest".to_owned(),
        },
    });

    // 2. The signature.
    checks.push(match &parsed {
        Sidecar::Signed {
            envelope, payload, ..
        } => {
            let ring = KeyRing::for_store(store.dir());
            let mut trusted = Vec::new();
            for key in ring.trusted()? {
                trusted.push((key.keyid.clone(), parse_public_key(&key.public_key)?));
            }
            trusted.extend(options.extra_trusted.iter().map(|k| (key_id(k), *k)));
            signature_check(envelope, payload, &trusted)
        }
        Sidecar::Bare(_) if options.require_signature => Check {
            check: "signature",
            outcome: Outcome::DoesNotHold,
            detail: "the sidecar is not signed (attach with --sign)".to_owned(),
        },
        Sidecar::Bare(_) => Check {
            check: "signature",
            outcome: Outcome::NotChecked,
            detail: "the sidecar is not signed (attach with --sign to sign it)".to_owned(),
        },
    });

    // 3. The run exists.
    let run_id = statement.predicate.run;
    let facts = runs.run_facts(&run_id)?;
    checks.push(match &facts {
        Some(_) => Check {
            check: "run_in_store",
            outcome: Outcome::Holds,
            detail: format!("run {run_id} is in the store"),
        },
        None => Check {
            check: "run_in_store",
            outcome: Outcome::DoesNotHold,
            detail: format!("run {run_id} is not in this store"),
        },
    });

    // 4. The run lists the artifact the statement is about (whether the bytes on disk are
    //    still that artifact is check 1's business).
    let claimed = statement.subject_digest().unwrap_or(digest);
    checks.push(lists_check(store, facts.as_ref(), &statement, &claimed)?);

    let verified = checks.iter().all(|c| c.outcome != Outcome::DoesNotHold);
    Ok(VerifyReport {
        artifact: artifact.display().to_string(),
        sidecar: sidecar_file.display().to_string(),
        digest,
        run: run_id,
        signed: matches!(parsed, Sidecar::Signed { .. }),
        checks,
        verified,
    })
}

fn lists_check(
    store: &Store,
    facts: Option<&RunFacts>,
    statement: &Statement,
    digest: &ContentHash,
) -> Result<Check, ProvenanceError> {
    let fail = |detail: String| Check {
        check: "run_lists_artifact",
        outcome: Outcome::DoesNotHold,
        detail,
    };
    let Some(facts) = facts else {
        return Ok(fail("the run is not in the store".to_owned()));
    };
    if facts.outputs.contains(digest) {
        return Ok(Check {
            check: "run_lists_artifact",
            outcome: Outcome::Holds,
            detail: "the run's outputs include the artifact".to_owned(),
        });
    }
    let Some(object) = store
        .db()
        .get_ref(ATTACHMENTS_NAMESPACE, &attachment_ref(&facts.id, digest))?
    else {
        return Ok(fail(format!(
            "run {} lists no artifact with sha256 {} (attach it with `ctx run attach`)",
            facts.id,
            digest.to_hex()
        )));
    };
    let recorded = store.objects().get(&object)?;
    if recorded == statement.canonical_bytes() {
        Ok(Check {
            check: "run_lists_artifact",
            outcome: Outcome::Holds,
            detail: format!("attached to run {} (statement {object})", facts.id),
        })
    } else {
        Ok(fail(format!(
            "the statement recorded when the artifact was attached ({object}) differs from the sidecar's"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_follows_the_dsse_spec() {
        // The example from the DSSE protocol document.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
        assert_eq!(pae("", b""), b"DSSEv1 0  0 ".to_vec());
    }

    #[test]
    fn public_keys_round_trip_and_bad_ones_are_refused() {
        let key = SigningKey::from_bytes(&[7u8; 32]).verifying_key();
        assert_eq!(parse_public_key(&public_key_text(&key)).ok(), Some(key));
        assert_eq!(
            parse_public_key(&hex::encode(key.to_bytes())).ok(),
            Some(key)
        );
        assert!(parse_public_key("ed25519:AAAA").is_err());
        assert!(parse_public_key("not a key").is_err());
    }

    #[test]
    fn statements_are_canonical_and_sorted() {
        let run = RunFacts {
            id: ContentHash::of(b"run"),
            inputs: vec![
                ("b.txt".into(), ContentHash::of(b"b")),
                ("a.txt".into(), ContentHash::of(b"a")),
            ],
            tools: vec!["fs_read".into(), "ctx_search".into(), "fs_read".into()],
            outputs: vec![],
        };
        let s = Statement::for_run(&run, "out.md", &ContentHash::of(b"x"));
        assert_eq!(s.predicate.tools, ["ctx_search", "fs_read"]);
        assert_eq!(s.predicate.inputs[0].name, "a.txt");
        let text = String::from_utf8(s.canonical_bytes()).expect("utf-8");
        assert!(text.starts_with(r#"{"_type":"https://in-toto.io/Statement/v1","predicate":"#));
    }
}
