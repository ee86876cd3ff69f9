//! Source URIs: parsing, validation at `pack add` time, and their stored form.

use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

use ctx_core::{ContentHash, DocumentId, canonical};
use serde::{Deserialize, Serialize};

use crate::SourceError;

/// An inclusive, 1-based line range (`#L10-L50`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineRange {
    pub start: u64,
    pub end: u64,
}

impl fmt::Display for LineRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "L{}-L{}", self.start, self.end)
    }
}

/// A parsed source. Paths are workspace-relative document ids (`""` for the root itself), so
/// a pack renders the same on any machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// `file:PATH` or `file:PATH#L10-L50`.
    File {
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lines: Option<LineRange>,
    },
    /// `md:PATH`.
    Markdown { path: String },
    /// `md_dir:DIR`: the Markdown files in a directory.
    MarkdownDir {
        path: String,
        recursive: bool,
        max_files: Option<u64>,
        exclude: Vec<String>,
    },
    /// `glob:PATTERN`, relative to `base` (the directory it was added from).
    Glob {
        base: String,
        pattern: String,
        max_files: Option<u64>,
        exclude: Vec<String>,
    },
    /// `git:diff [--base=REV] [--head=REV]`, in the repository holding `dir` (the directory
    /// it was added from).
    GitDiff {
        dir: String,
        base: Option<String>,
        head: Option<String>,
    },
    /// `git:log [-n N]`: the last `count` commits of the repository holding `dir`.
    GitLog { dir: String, count: u64 },
    /// A directory's files, filtered by include and exclude globs (what `ctx pack PATH`
    /// packs; not a URI `pack add` takes).
    Tree {
        path: String,
        include: Vec<String>,
        exclude: Vec<String>,
    },
    /// `cmd:COMMAND`, run in `dir` (the directory it was added from, usually the root).
    Command { dir: String, command: String },
    /// `text:STRING`.
    Text { text: String },
}

/// A source plus the options that change what it yields: what `pack add` stores.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceSpec {
    pub source: Source,
    /// Include sensitive files (`.env`, keys, …) instead of refusing or skipping them.
    #[serde(default)]
    pub allow_sensitive: bool,
}

/// Options given with `pack add`.
#[derive(Debug, Clone, Default)]
pub struct AddOptions {
    pub recursive: bool,
    pub max_files: Option<u64>,
    pub exclude: Vec<String>,
    pub allow_sensitive: bool,
}

/// The schemes `pack add` understands, for error messages.
pub const SCHEMES: &str = "file:, md:, md_dir:, glob:, git:diff, git:log, cmd:, text:";

impl SourceSpec {
    /// The artifact id: the first 12 hex digits of the hash of the spec's canonical JSON, so
    /// the same source added to a pack twice is recognized, and ids are the same everywhere.
    pub fn artifact_id(&self) -> String {
        let hash: ContentHash = canonical::hash(self).expect("source specs serialize");
        hash.to_hex()[..12].to_owned()
    }

    /// The URI in canonical form (what `pack show` prints).
    pub fn uri(&self) -> String {
        self.source.uri()
    }
}

impl Source {
    /// Whether the source expands to many documents at render time.
    pub fn is_collection(&self) -> bool {
        matches!(
            self,
            Self::MarkdownDir { .. } | Self::Glob { .. } | Self::GitDiff { .. } | Self::Tree { .. }
        )
    }

    /// The URI in canonical form.
    pub fn uri(&self) -> String {
        let dir = |p: &str| {
            if p.is_empty() {
                ".".to_owned()
            } else {
                p.to_owned()
            }
        };
        match self {
            Self::File { path, lines: None } => format!("file:{path}"),
            Self::File {
                path,
                lines: Some(r),
            } => format!("file:{path}#{r}"),
            Self::Markdown { path } => format!("md:{path}"),
            Self::MarkdownDir { path, .. } => format!("md_dir:{}", dir(path)),
            Self::Glob { base, pattern, .. } if base.is_empty() => format!("glob:{pattern}"),
            Self::Glob { base, pattern, .. } => format!("glob:{base}/{pattern}"),
            Self::GitDiff { base, head, .. } => {
                let mut uri = "git:diff".to_owned();
                if let Some(b) = base {
                    let _ = write!(uri, " --base={b}");
                }
                if let Some(h) = head {
                    let _ = write!(uri, " --head={h}");
                }
                uri
            }
            Self::GitLog { count, .. } => format!("git:log -n {count}"),
            Self::Tree { path, .. } => format!("dir:{}", dir(path)),
            Self::Command { command, .. } => format!("cmd:{command}"),
            Self::Text { text } => format!("text:{text}"),
        }
    }
}

/// Parses a source URI given to `pack add`, resolving paths against `cwd` and storing them
/// relative to `root`. Checks what can be checked now: files exist and are files, ranges are
/// well formed, paths stay inside the root. Sensitive paths are checked by the caller.
pub fn parse_source(
    uri: &str,
    cwd: &Path,
    root: &Path,
    options: &AddOptions,
) -> Result<SourceSpec, SourceError> {
    let (scheme, rest) = uri.split_once(':').ok_or_else(|| SourceError::NoScheme {
        uri: uri.to_owned(),
    })?;
    let source = match scheme {
        "file" => {
            let (path, lines) = match rest.rsplit_once('#') {
                Some((path, range)) => (path, Some(parse_range(uri, range)?)),
                None => (rest, None),
            };
            let id = existing_file(uri, path, cwd, root)?;
            Source::File { path: id, lines }
        }
        "md" => Source::Markdown {
            path: existing_file(uri, rest, cwd, root)?,
        },
        "md_dir" => Source::MarkdownDir {
            path: existing_dir(uri, rest, cwd, root)?,
            recursive: options.recursive,
            max_files: options.max_files,
            exclude: options.exclude.clone(),
        },
        "glob" => {
            if rest.is_empty() {
                return Err(SourceError::Malformed {
                    uri: uri.to_owned(),
                    reason: "the pattern is empty".into(),
                });
            }
            if rest.starts_with('/') || rest.split('/').any(|c| c == "..") {
                return Err(SourceError::Malformed {
                    uri: uri.to_owned(),
                    reason: "glob patterns are relative and cannot contain `..`; run from the directory to match in".into(),
                });
            }
            globset::Glob::new(rest).map_err(|e| SourceError::Malformed {
                uri: uri.to_owned(),
                reason: e.to_string(),
            })?;
            Source::Glob {
                base: relative_id(uri, cwd, root)?,
                pattern: rest.to_owned(),
                max_files: options.max_files,
                exclude: options.exclude.clone(),
            }
        }
        "git" => parse_git(uri, rest, relative_id(uri, cwd, root)?)?,
        "cmd" => {
            if rest.trim().is_empty() {
                return Err(SourceError::Malformed {
                    uri: uri.to_owned(),
                    reason: "the command is empty".into(),
                });
            }
            Source::Command {
                dir: relative_id(uri, cwd, root)?,
                command: rest.to_owned(),
            }
        }
        "text" => Source::Text {
            text: rest.to_owned(),
        },
        other => {
            return Err(SourceError::UnknownScheme {
                uri: uri.to_owned(),
                scheme: other.to_owned(),
            });
        }
    };
    for pattern in &options.exclude {
        globset::Glob::new(pattern).map_err(|e| SourceError::Malformed {
            uri: uri.to_owned(),
            reason: format!("--exclude `{pattern}`: {e}"),
        })?;
    }
    Ok(SourceSpec {
        source,
        allow_sensitive: options.allow_sensitive,
    })
}

fn parse_range(uri: &str, range: &str) -> Result<LineRange, SourceError> {
    let malformed = |reason: &str| SourceError::Malformed {
        uri: uri.to_owned(),
        reason: format!(
            "line range `#{range}` {reason}; write it as #L10-L50 (1-based, inclusive)"
        ),
    };
    let number = |part: &str| -> Result<u64, SourceError> {
        let digits = part
            .strip_prefix('L')
            .ok_or_else(|| malformed("must start with L"))?;
        let n: u64 = digits.parse().map_err(|_| malformed("is not a number"))?;
        if n == 0 {
            Err(malformed("starts at line 0"))
        } else {
            Ok(n)
        }
    };
    let (start, end) = if let Some((a, b)) = range.split_once('-') {
        (number(a)?, number(b)?)
    } else {
        let n = number(range)?;
        (n, n)
    };
    if start > end {
        return Err(malformed("ends before it starts"));
    }
    Ok(LineRange { start, end })
}

/// Commits `git:log` shows when no `-n` is given.
pub const DEFAULT_LOG_COUNT: u64 = 10;

fn parse_git_log<'a>(
    uri: &str,
    mut words: impl Iterator<Item = &'a str>,
    dir: String,
) -> Result<Source, SourceError> {
    let malformed = |reason: String| SourceError::Malformed {
        uri: uri.to_owned(),
        reason,
    };
    let mut count = DEFAULT_LOG_COUNT;
    while let Some(word) = words.next() {
        let value = match word {
            "-n" => words.next().unwrap_or_default(),
            _ => word
                .strip_prefix("-n")
                .or_else(|| word.strip_prefix("--max-count="))
                .ok_or_else(|| malformed(format!("unknown git:log option `{word}`; use -n N")))?,
        };
        count = value
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| malformed(format!("-n wants a positive number, not `{value}`")))?;
    }
    Ok(Source::GitLog { dir, count })
}

fn parse_git(uri: &str, rest: &str, dir: String) -> Result<Source, SourceError> {
    let mut words = rest.split_whitespace();
    match words.next() {
        Some("diff") => {}
        Some("log") => return parse_git_log(uri, words, dir),
        _ => {
            return Err(SourceError::Malformed {
                uri: uri.to_owned(),
                reason: "use `git:diff [--base=REV] [--head=REV]` or `git:log [-n N]`".into(),
            });
        }
    }
    let (mut base, mut head) = (None, None);
    let mut words = words.peekable();
    while let Some(word) = words.next() {
        let (flag, value) = match word.split_once('=') {
            Some((f, v)) => (f, v.to_owned()),
            None => (word, words.next().map(str::to_owned).unwrap_or_default()),
        };
        let slot = match flag {
            "--base" => &mut base,
            "--head" => &mut head,
            _ => {
                return Err(SourceError::Malformed {
                    uri: uri.to_owned(),
                    reason: format!(
                        "unknown git:diff option `{word}`; use --base=REV and --head=REV"
                    ),
                });
            }
        };
        if value.is_empty() {
            return Err(SourceError::Malformed {
                uri: uri.to_owned(),
                reason: format!("`{flag}` needs a revision"),
            });
        }
        *slot = Some(value);
    }
    if head.is_some() && base.is_none() {
        return Err(SourceError::Malformed {
            uri: uri.to_owned(),
            reason: "--head needs --base".into(),
        });
    }
    Ok(Source::GitDiff { dir, base, head })
}

fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_owned()
    } else {
        cwd.join(path)
    }
}

/// The document id of `path` (relative to `cwd`) within `root`; `""` for the root itself.
fn id_within(uri: &str, path: &Path, root: &Path) -> Result<String, SourceError> {
    match DocumentId::from_path(root, path) {
        Ok(id) => Ok(id.as_str().to_owned()),
        Err(ctx_core::DocumentIdError::Empty { .. }) => Ok(String::new()),
        Err(err) => Err(SourceError::OutsideRoot {
            uri: uri.to_owned(),
            root: root.to_owned(),
            reason: err.to_string(),
        }),
    }
}

fn relative_id(uri: &str, cwd: &Path, root: &Path) -> Result<String, SourceError> {
    id_within(uri, cwd, root)
}

fn existing_file(uri: &str, path: &str, cwd: &Path, root: &Path) -> Result<String, SourceError> {
    if path.is_empty() {
        return Err(SourceError::Malformed {
            uri: uri.to_owned(),
            reason: "the path is empty".into(),
        });
    }
    let full = resolve(cwd, path);
    let meta = std::fs::metadata(&full).map_err(|e| SourceError::from_io(uri, &full, &e))?;
    if meta.is_dir() {
        return Err(SourceError::IsADirectory {
            uri: uri.to_owned(),
            path: path.to_owned(),
        });
    }
    let id = id_within(uri, &full, root)?;
    if id.is_empty() {
        return Err(SourceError::IsADirectory {
            uri: uri.to_owned(),
            path: path.to_owned(),
        });
    }
    check_in_sandbox(uri, &id, root)?;
    Ok(id)
}

/// Opens `id` through the workspace sandbox, as a render will: a symlink leading out of the
/// root, a hard link, a FIFO or a device is refused when the source is added (and again at
/// every render, since the file may change after).
fn check_in_sandbox(uri: &str, id: &str, root: &Path) -> Result<(), SourceError> {
    let refused = |reason: String| SourceError::OutsideRoot {
        uri: uri.to_owned(),
        root: root.to_owned(),
        reason,
    };
    let sandbox = ctx_fs::Sandbox::open(root).map_err(|e| refused(e.to_string()))?;
    sandbox
        .resolve(if id.is_empty() { "." } else { id })
        .map(drop)
        .map_err(|e| refused(e.to_string()))
}

fn existing_dir(uri: &str, path: &str, cwd: &Path, root: &Path) -> Result<String, SourceError> {
    let full = resolve(cwd, if path.is_empty() { "." } else { path });
    let meta = std::fs::metadata(&full).map_err(|e| SourceError::from_io(uri, &full, &e))?;
    if !meta.is_dir() {
        return Err(SourceError::Malformed {
            uri: uri.to_owned(),
            reason: format!("`{path}` is not a directory; use file: or md: for a single file"),
        });
    }
    let id = id_within(uri, &full, root)?;
    check_in_sandbox(uri, &id, root)?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(uri: &str) -> Result<SourceSpec, SourceError> {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical").join("root");
        std::fs::create_dir_all(root.join("docs/sub")).expect("mkdir");
        std::fs::write(dir.path().join("outside.md"), "x\n").expect("write");
        std::fs::write(root.join("README.md"), "# hi\n").expect("write");
        std::fs::write(root.join("docs/a.md"), "a\n").expect("write");
        parse_source(uri, &root.join("docs"), &root, &AddOptions::default())
    }

    #[test]
    fn links_leading_out_are_refused_when_added() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical").join("root");
        let outside = dir
            .path()
            .canonicalize()
            .expect("canonical")
            .join("outside");
        std::fs::create_dir_all(&root).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(outside.join("passwd"), "root:x:0:0\n").expect("write");
        std::os::unix::fs::symlink(outside.join("passwd"), root.join("pw")).expect("link");
        std::os::unix::fs::symlink(&outside, root.join("away")).expect("link");
        std::fs::hard_link(outside.join("passwd"), root.join("hard")).expect("link");
        for uri in [
            "file:pw",
            "md:pw",
            "file:away/passwd",
            "md_dir:away",
            "file:hard",
        ] {
            let err = parse_source(uri, &root, &root, &AddOptions::default())
                .expect_err(uri)
                .to_string();
            assert!(err.contains("outside the workspace"), "{uri}: {err}");
        }
    }

    #[test]
    fn uris_parse_to_root_relative_sources() {
        assert_eq!(
            parse("file:../README.md").expect("ok").source,
            Source::File {
                path: "README.md".into(),
                lines: None
            }
        );
        assert_eq!(
            parse("file:a.md#L2-L5").expect("ok").source,
            Source::File {
                path: "docs/a.md".into(),
                lines: Some(LineRange { start: 2, end: 5 })
            }
        );
        assert_eq!(
            parse("file:a.md#L7").expect("ok").source,
            Source::File {
                path: "docs/a.md".into(),
                lines: Some(LineRange { start: 7, end: 7 })
            }
        );
        assert!(
            matches!(parse("md_dir:.").expect("ok").source, Source::MarkdownDir { path, .. } if path == "docs")
        );
        assert!(
            matches!(parse("md_dir:..").expect("ok").source, Source::MarkdownDir { path, .. } if path.is_empty())
        );
        assert!(
            matches!(parse("glob:**/*.md").expect("ok").source, Source::Glob { base, .. } if base == "docs")
        );
        assert_eq!(
            parse("git:diff").expect("ok").source,
            Source::GitDiff {
                dir: "docs".into(),
                base: None,
                head: None
            }
        );
        assert_eq!(
            parse("git:diff --base=main --head=HEAD")
                .expect("ok")
                .source,
            Source::GitDiff {
                dir: "docs".into(),
                base: Some("main".into()),
                head: Some("HEAD".into())
            }
        );
        assert_eq!(
            parse("git:log -n 3").expect("ok").source,
            Source::GitLog {
                dir: "docs".into(),
                count: 3
            }
        );
        assert_eq!(parse("git:log").expect("ok").source.uri(), "git:log -n 10");
        assert_eq!(
            parse("cmd:ls -la").expect("ok").source,
            Source::Command {
                dir: "docs".into(),
                command: "ls -la".into()
            }
        );
        assert_eq!(
            parse("text:Hello world").expect("ok").source,
            Source::Text {
                text: "Hello world".into()
            }
        );
    }

    #[test]
    fn bad_uris_are_refused_with_the_reason() {
        let cases = [
            ("nope:x", "unknown source scheme"),
            ("README.md", "no scheme"),
            ("file:a.md#L50-L10", "ends before it starts"),
            ("file:a.md#Lx", "not a number"),
            ("file:a.md#10-20", "must start with L"),
            ("file:a.md#L0-L3", "line 0"),
            ("file:missing.md", "does not exist"),
            ("file:sub", "is a directory"),
            ("file:../../outside.md", "outside"),
            ("md_dir:a.md", "not a directory"),
            ("glob:", "empty"),
            ("glob:../**", "cannot contain"),
            ("git:blame", "use `git:diff"),
            ("git:log -n 0", "positive number"),
            ("git:log --oneline", "unknown git:log option"),
            ("git:diff --head=HEAD", "--head needs --base"),
            ("git:diff --bogus", "unknown git:diff option"),
            ("cmd:  ", "empty"),
        ];
        for (uri, needle) in cases {
            let err = parse(uri).expect_err(uri).to_string();
            assert!(err.contains(needle), "{uri}: `{err}` lacks `{needle}`");
        }
    }

    #[test]
    fn artifact_ids_are_stable_and_distinguish_options() {
        let a = parse("file:a.md").expect("ok");
        let b = parse("file:a.md").expect("ok");
        assert_eq!(a.artifact_id(), b.artifact_id());
        assert_eq!(a.artifact_id().len(), 12);
        let mut c = a.clone();
        c.allow_sensitive = true;
        assert_ne!(a.artifact_id(), c.artifact_id());
    }
}
