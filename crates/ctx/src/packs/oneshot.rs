//! One-shot packs (`ctx pack PATH…`): render files and directories now, without creating a
//! pack; and what front ends do with a render afterwards: cut it into parts, total its tokens
//! per directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ctx_core::{DocumentId, Progress, TokenizerKind};
use ctx_sources::{Source, SourceSpec, UnitKind};
use ctx_store::Metadata;
use serde::Serialize;

use super::PackSettings;
use super::payload::{PayloadOptions, PayloadStyle};
use super::render::{JobSource, Render, RenderJob, policy_for, run_job};
use crate::error::CtxError;

/// What a one-shot pack renders.
#[derive(Debug, Clone, Default)]
pub struct OneShotRequest {
    /// Files and directories, absolute or relative to the working directory; none means the
    /// working directory. Directories are walked with the gitignore rules, in byte order.
    pub paths: Vec<PathBuf>,
    /// Only files matching one of these globs (a glob without `/` matches the file name).
    pub include: Vec<String>,
    /// Leave out files and directories matching one of these globs.
    pub ignore: Vec<String>,
    /// Add the working tree's diff against HEAD (one part per changed file).
    pub git_diff: bool,
    /// Add the last N commits of the git log.
    pub git_log: Option<u64>,
    pub budget: Option<u64>,
    pub tokenizer: Option<TokenizerKind>,
    pub style: PayloadStyle,
    pub options: PayloadOptions,
    /// Unix seconds now (the front end's clock), so the render cache may remember stamps old
    /// enough to trust; `None` remembers nothing.
    pub now: Option<i64>,
}

/// The directory a one-shot pack's paths are relative to: the nearest directory at or above
/// the paths' common directory that holds `.git` or is `project_root` (a project store's
/// root), else that common directory. So `ctx pack src` at the top of a repository and
/// `ctx pack .` inside `src` write the same headers.
pub fn oneshot_root(
    cwd: &Path,
    paths: &[PathBuf],
    project_root: Option<&Path>,
) -> Result<PathBuf, CtxError> {
    let mut dirs = Vec::new();
    for path in paths {
        let full = absolute(cwd, path)?;
        dirs.push(if full.is_dir() {
            full
        } else {
            full.parent()
                .map_or_else(|| full.clone(), Path::to_path_buf)
        });
    }
    let mut common = dirs.first().cloned().unwrap_or_else(|| cwd.to_owned());
    for dir in &dirs {
        while !dir.starts_with(&common) {
            if !common.pop() {
                break;
            }
        }
    }
    let root = common
        .ancestors()
        .find(|dir| dir.join(".git").exists() || Some(*dir) == project_root)
        .map_or_else(|| common.clone(), Path::to_path_buf);
    Ok(root)
}

/// `path` made absolute against `cwd` and canonical (so links and `..` are resolved).
fn absolute(cwd: &Path, path: &Path) -> Result<PathBuf, CtxError> {
    let joined = cwd.join(path);
    joined.canonicalize().map_err(|err| {
        CtxError::InvalidInput(format!(
            "`{}`: {}; name an existing file or directory",
            path.display(),
            if err.kind() == std::io::ErrorKind::NotFound {
                "no such file or directory".to_owned()
            } else {
                err.to_string()
            }
        ))
    })
}

/// Renders `request` now: each path becomes a source relative to `root` (see
/// [`oneshot_root`]), rendered like a pack's. `db` is the token cache, when a store exists.
pub fn pack_paths(
    root: &Path,
    cwd: &Path,
    settings: &PackSettings,
    db: Option<&dyn Metadata>,
    request: &OneShotRequest,
    progress: &dyn Progress,
) -> Result<Render, CtxError> {
    let rendered =
        oneshot_job(root, cwd, settings, db, request).and_then(|job| run_job(&job, progress));
    progress.finish();
    rendered
}

fn oneshot_job<'a>(
    root: &'a Path,
    cwd: &Path,
    settings: &'a PackSettings,
    db: Option<&'a dyn Metadata>,
    request: &OneShotRequest,
) -> Result<RenderJob<'a>, CtxError> {
    for glob in request.include.iter().chain(&request.ignore) {
        globset::Glob::new(glob)
            .map_err(|e| CtxError::InvalidInput(format!("glob `{glob}`: {e}; fix the pattern")))?;
    }
    let default = [PathBuf::from(".")];
    let paths = if request.paths.is_empty() {
        &default[..]
    } else {
        &request.paths[..]
    };
    let mut sources = Vec::new();
    for path in paths {
        let full = absolute(cwd, path)?;
        let id = match DocumentId::from_path(root, &full) {
            Ok(id) => id.as_str().to_owned(),
            Err(ctx_core::DocumentIdError::Empty { .. }) => String::new(),
            Err(err) => {
                return Err(CtxError::InvalidInput(format!(
                    "`{}` is outside {} ({err}); pack paths under one directory",
                    path.display(),
                    root.display()
                )));
            }
        };
        let source = if full.is_dir() {
            Source::Tree {
                path: id,
                include: request.include.clone(),
                exclude: request.ignore.clone(),
            }
        } else {
            Source::File {
                path: id,
                lines: None,
            }
        };
        sources.push(source);
    }
    if request.git_diff {
        ctx_sources::git::check("--git-diff", root, None, None)?;
        sources.push(Source::GitDiff {
            dir: String::new(),
            base: None,
            head: None,
        });
    }
    if let Some(count) = request.git_log {
        if count == 0 {
            return Err(CtxError::InvalidInput(
                "--git-log 0 shows nothing; give a number of commits, e.g. --git-log 5".into(),
            ));
        }
        ctx_sources::git::check("--git-log", root, None, None)?;
        sources.push(Source::GitLog {
            dir: String::new(),
            count,
        });
    }
    let sources = sources
        .into_iter()
        .map(|source| {
            let spec = SourceSpec {
                source,
                allow_sensitive: false,
            };
            JobSource {
                pack: String::new(),
                artifact_id: spec.artifact_id(),
                spec,
                root: None,
            }
        })
        .collect();
    let policy = policy_for(
        settings,
        request.budget.unwrap_or(settings.default_budget),
        request.tokenizer.unwrap_or(settings.default_tokenizer),
        request.style,
        request.options,
    );
    Ok(RenderJob {
        root,
        settings,
        db,
        packs: Vec::new(),
        sources,
        policy,
        now: request.now,
        ladder: true,
    })
}

impl Render {
    /// Cuts a render's payload between its pieces (head, parts, summary) into consecutive parts
    /// of at most `max_tokens` tokens each, with their counts. Concatenated, the parts are the
    /// payload byte for byte. A JSON payload is one document and cannot be cut.
    pub fn split_payload(&self, max_tokens: u64) -> Result<Vec<(String, u64)>, CtxError> {
        if self.policy.style == PayloadStyle::Json {
            return Err(CtxError::InvalidInput(
                "--split-output cuts the payload between files, which would break a JSON document; use --style markdown, xml or plain".into(),
            ));
        }
        if max_tokens == 0 {
            return Err(CtxError::InvalidInput(
                "--split-output 0 makes no parts; give the most tokens a part may hold".into(),
            ));
        }
        let has_head = self.pieces.len() > self.report.included.len();
        let name_of = |index: usize| -> String {
            let part = if has_head {
                index.checked_sub(1)
            } else {
                Some(index)
            };
            match part.and_then(|i| self.report.included.get(i)) {
                Some(item) => format!("`{}`", item.path),
                None if index == 0 => "the payload's introduction and tree".to_owned(),
                None => "the payload's summary".to_owned(),
            }
        };
        let mut parts = Vec::new();
        let (mut start, mut at, mut tokens) = (0usize, 0usize, 0u64);
        for (index, piece) in self.pieces.iter().enumerate() {
            if piece.tokens > max_tokens {
                return Err(CtxError::InvalidInput(format!(
                    "{} alone needs {} tokens, more than --split-output {max_tokens}; raise it",
                    name_of(index),
                    piece.tokens
                )));
            }
            if tokens + piece.tokens > max_tokens {
                parts.push((self.payload[start..at].to_owned(), tokens));
                start = at;
                tokens = 0;
            }
            at += piece.bytes;
            tokens += piece.tokens;
        }
        if at > start {
            parts.push((self.payload[start..at].to_owned(), tokens));
        }
        Ok(parts)
    }
}

/// One row of a token tree: a directory (its path ends with `/`) or a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenTreeRow {
    pub path: String,
    /// Nesting depth (0 at the top).
    pub depth: usize,
    pub tokens: u64,
    /// Files at or under this row.
    pub files: u64,
}

impl Render {
    /// Tokens per directory and file of a render's included files, as an indented tree in byte
    /// order; rows under `min_tokens` are left out.
    pub fn token_tree(&self, min_tokens: u64) -> Vec<TokenTreeRow> {
        let mut totals: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for item in &self.report.included {
            if item.kind != UnitKind::File {
                continue;
            }
            let mut prefix = String::new();
            for segment in item.path.split('/') {
                prefix.push_str(segment);
                let full = prefix.len() == item.path.len();
                let key = if full {
                    prefix.clone()
                } else {
                    format!("{prefix}/")
                };
                let entry = totals.entry(key).or_default();
                entry.0 += item.tokens;
                entry.1 += 1;
                prefix.push('/');
            }
        }
        // Byte order of the full paths puts a directory's rows right after it, once `/` sorts
        // before every other byte; `\u{1}` stands in for it while sorting.
        let mut rows: Vec<(String, String, u64, u64)> = totals
            .into_iter()
            .map(|(path, (tokens, files))| (path.replace('/', "\u{1}"), path, tokens, files))
            .collect();
        rows.sort();
        rows.into_iter()
            .filter(|(_, _, tokens, _)| *tokens >= min_tokens)
            .map(|(_, path, tokens, files)| {
                let trimmed = path.trim_end_matches('/');
                let depth = trimmed.matches('/').count();
                TokenTreeRow {
                    path,
                    depth,
                    tokens,
                    files,
                }
            })
            .collect()
    }
}
