//! `ctx read`: the fs_read engine (Line, Directory, Search, batches) on the command line.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use clap::Args;
use ctx::fs::read::{FsReadInput, OpResult, ReadOptions, fs_read};
use ctx::fs::sandbox::{EntryKind, Sandbox};
use serde_json::{Value, json};

use crate::context::Context;
use crate::output::{Output, Status};

/// Read lines of a file, list a directory or search text, inside the workspace.
///
/// The workspace is the project root (the directory holding .ctx), else the git work tree,
/// else the working directory; --root names another. No path can leave it: `..`, absolute
/// paths elsewhere, symlinks pointing out, FIFOs and devices are refused. Relative paths are
/// taken from the working directory (from the root when the working directory is outside).
///
/// PATH is read as lines when it is a file and listed when it is a directory, unless
/// --lines, --depth or --search say which. --lines A:B is 1-based and inclusive; negative
/// numbers count from the end (-1 is the last line; `-20:` the last twenty). --search is a
/// case-insensitive literal unless --regex or --case-sensitive. --batch FILE runs a JSON
/// request ({"operations": [...]}, as the fs_read tool takes; `-` reads stdin); operations
/// run independently and a failing one does not stop the others. Output is capped at
/// --max-bytes (400 KiB) with a note saying how to continue. Exit 1 when a search finds
/// nothing, 2 when an operation fails.
///
/// Examples:
///   ctx read src/main.rs --lines 10:40
///   ctx read CHANGELOG.md --lines -20:
///   ctx read src --depth 1
///   ctx read . --search "todo" --context 1
///   ctx --json read --batch ops.json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ReadArgs {
    /// File or directory to read.
    #[arg(value_name = "PATH", required_unless_present = "batch")]
    pub path: Option<String>,
    /// Lines A:B of a file (`10:20`, `-5:`, `:30`, `7`).
    #[arg(long, value_name = "A:B", allow_hyphen_values = true, conflicts_with_all = ["depth", "search"])]
    pub lines: Option<String>,
    /// List a directory to N levels below its children (0: the children only).
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        conflicts_with = "search"
    )]
    pub depth: Option<i64>,
    /// Search for PATTERN in a file or under a directory.
    #[arg(long, value_name = "PATTERN", allow_hyphen_values = true)]
    pub search: Option<String>,
    /// Lines of context around each match.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 2,
        requires = "search",
        allow_hyphen_values = true
    )]
    pub context: i64,
    /// Treat PATTERN as a regular expression.
    #[arg(long, requires = "search")]
    pub regex: bool,
    /// Match case exactly.
    #[arg(long, requires = "search")]
    pub case_sensitive: bool,
    /// Skip the first N entries or matches (to continue a truncated listing or search).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub offset: Option<i64>,
    /// Run the operations in a JSON file (`-` for stdin).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["path", "lines", "depth", "search"])]
    pub batch: Option<PathBuf>,
    /// The workspace root (default: the project root, else the git work tree, else the
    /// working directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Cap on the bytes of content in the output.
    #[arg(long, value_name = "N", default_value_t = ctx::fs::read::DEFAULT_MAX_RESPONSE_BYTES)]
    pub max_bytes: usize,
}

pub fn run(args: &ReadArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let root = match &args.root {
        Some(dir) => ctx.cwd.join(dir),
        None => ctx.workspace()?.sandbox_root().to_owned(),
    };
    let workspace = Sandbox::open(&root)?;
    let request = if let Some(file) = &args.batch {
        read_batch(file, &ctx.cwd)?
    } else {
        let path = args
            .path
            .as_deref()
            .context("name a PATH or --batch FILE")?;
        single_operation(args, &workspace, &request_path(&workspace, &ctx.cwd, path))?
    };
    let input = FsReadInput::from_json(&request)?;
    let options = ReadOptions {
        max_response_bytes: args.max_bytes,
        ..ReadOptions::default()
    };
    let output = fs_read(&workspace, &input, &options);
    let single = args.batch.is_none();
    if single && output.failed == 1 {
        let message = output.results[0]
            .error
            .as_ref()
            .map_or_else(String::new, |e| e.message.clone());
        bail!("{message}");
    }
    if out.is_json() {
        out.json(&output)?;
    } else {
        out.raw(output.to_text().as_bytes())?;
    }
    if output.truncated {
        out.note("output truncated at the response cap; the last lines say how to continue");
    }
    if output.failed > 0 {
        bail!(
            "{} of {} operations failed (see their errors above)",
            output.failed,
            output.results.len()
        );
    }
    let found_nothing = single
        && matches!(
            output.results[0].result,
            Some(OpResult::Search(ref r)) if r.total_matches == 0
        );
    Ok(if found_nothing {
        Status::Found
    } else {
        Status::Success
    })
}

/// A relative PATH is taken from the working directory when that is inside the workspace.
fn request_path(workspace: &Sandbox, cwd: &Path, path: &str) -> String {
    if path.starts_with('/') {
        return path.to_owned();
    }
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned());
    match cwd.strip_prefix(workspace.root()) {
        Ok(prefix) if !prefix.as_os_str().is_empty() => {
            format!("{}/{path}", prefix.display())
        }
        _ => path.to_owned(),
    }
}

fn single_operation(args: &ReadArgs, workspace: &Sandbox, path: &str) -> Result<Value> {
    let mut op = if let Some(pattern) = &args.search {
        json!({
            "mode": "Search",
            "path": path,
            "pattern": pattern,
            "context_lines": args.context,
            "regex": args.regex,
            "case_sensitive": args.case_sensitive,
        })
    } else if let Some(lines) = &args.lines {
        let (start, end) = parse_lines(lines)?;
        json!({"mode": "Line", "path": path, "start_line": start, "end_line": end})
    } else if let Some(depth) = args.depth {
        json!({"mode": "Directory", "path": path, "depth": depth})
    } else {
        let is_dir = workspace
            .resolve(path)
            .is_ok_and(|resolved| resolved.kind == EntryKind::Dir);
        if is_dir {
            json!({"mode": "Directory", "path": path})
        } else {
            json!({"mode": "Line", "path": path})
        }
    };
    if let Some(offset) = args.offset {
        op["offset"] = json!(offset);
    }
    Ok(op)
}

/// `A:B`, `A:`, `:B` or `A` (one line).
fn parse_lines(text: &str) -> Result<(i64, i64)> {
    let bad = || {
        anyhow::anyhow!(
            "--lines `{text}`: write A:B (1-based, inclusive; negative counts from the end), e.g. 10:20, -5: or 7"
        )
    };
    let number = |part: &str, default: i64| -> Result<i64> {
        if part.trim().is_empty() {
            Ok(default)
        } else {
            part.trim().parse().map_err(|_| bad())
        }
    };
    if let Some((a, b)) = text.split_once(':') {
        return Ok((number(a, 1)?, number(b, -1)?));
    }
    if text.trim().is_empty() {
        return Err(bad());
    }
    let line = number(text, 0)?;
    Ok((line, line))
}

fn read_batch(file: &Path, cwd: &Path) -> Result<Value> {
    let text = if file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the batch from stdin")?;
        text
    } else {
        let bytes = ctx::fs::input::read_named_file(cwd, file)
            .map_err(|err| anyhow::anyhow!("--batch {err}; name a JSON file"))?;
        String::from_utf8(bytes).map_err(|_| {
            anyhow::anyhow!(
                "--batch `{}` is not UTF-8 text; name a JSON file",
                file.display()
            )
        })?
    };
    serde_json::from_str(&text).map_err(|err| {
        anyhow::anyhow!(
            "--batch `{}`: not JSON ({err}); write {{\"operations\": [{{\"mode\": \"Line\", \"path\": \"...\"}}]}}",
            file.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::parse_lines;

    #[test]
    fn line_ranges_parse() {
        assert_eq!(parse_lines("10:20").expect("a:b"), (10, 20));
        assert_eq!(parse_lines("-5:").expect("a:"), (-5, -1));
        assert_eq!(parse_lines(":7").expect(":b"), (1, 7));
        assert_eq!(parse_lines("7").expect("a"), (7, 7));
        assert_eq!(parse_lines(":").expect(":"), (1, -1));
        assert!(parse_lines("x:2").is_err());
        assert!(parse_lines("").is_err());
    }
}
