//! `ctx summarize`.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use ctx::answers::{FileItem, SkippedItem, SummarizeAnswer};
use ctx::code::{DirectorySummary, FileSummary, Skipped, SummaryPlan, SummaryStats};
use serde::ser::{Error as _, SerializeSeq as _, SerializeStruct as _};
use serde::{Serialize, Serializer};

use crate::context::Context;
use crate::output::{Output, Status, Style};

/// List the symbols and imports of a file, or of every source file under a directory.
///
/// Symbols carry kind, lines, signature, doc comment, parent scope and visibility. With
/// --skeleton the code itself is printed with function bodies elided, so it still reads (and
/// parses) as the language. Files in other languages are listed as skipped, never an error.
/// Languages: rust, python, javascript, typescript, tsx, go, java, c, cpp.
///
/// Examples:
///   ctx summarize src/main.rs
///   ctx summarize src --depth 1
///   ctx summarize src/lib.rs --skeleton
///   ctx --json summarize src
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct SummarizeArgs {
    /// File or directory to summarize.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// Print the code with bodies elided instead of a symbol list.
    #[arg(long)]
    pub skeleton: bool,
    /// For a directory: descend at most N levels.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub depth: Option<u16>,
}

pub fn run(args: &SummarizeArgs, ctx: &Context, out: &Output) -> Result<Status> {
    // Every path resolves inside the workspace, as `ctx read` does; a path that does not, or
    // a single file in another language, is refused before the store is touched.
    let ws = ctx.workspace()?;
    let plan = ws.summary_plan(&args.path, args.depth.map(usize::from), args.skeleton);
    Context::said_created(&ws, out);
    let directory = match plan? {
        SummaryPlan::File(file) => {
            if out.is_json() {
                out.json(&SummarizeAnswer::of_file(file))?;
            } else {
                let mut text = String::new();
                render_file(&mut text, &file, args.skeleton, false, out);
                out.raw(text.as_bytes())?;
            }
            return Ok(Status::Success);
        }
        SummaryPlan::Directory(directory) => directory,
    };
    // A whole tree's summaries are hundreds of megabytes: each is written as it comes.
    if out.is_json() {
        let streamed = Streamed {
            directory: &directory,
            outcome: RefCell::new(None),
        };
        let written = out.json(&streamed);
        match streamed.outcome.into_inner() {
            Some(Err(err)) => return Err(err.into()),
            Some(Ok(_)) | None => written?,
        }
        return Ok(Status::Success);
    }
    let (skipped, stats, files) = {
        let mut text = String::new();
        let mut files = 0usize;
        let mut written: Result<()> = Ok(());
        let run = directory.run(&mut |file| {
            files += 1;
            render_file(&mut text, &file, args.skeleton, true, out);
            if text.len() >= 1 << 16 {
                written = out.raw(text.as_bytes());
                text.clear();
                if written.is_err() {
                    // Stops the run; the write error itself is returned below.
                    return Err(ctx::code::CodeError::Cache("stdout closed".into()));
                }
            }
            Ok(())
        });
        written?;
        let (skipped, stats) = run?;
        out.raw(text.as_bytes())?;
        (skipped, stats, files)
    };
    let unsupported = skipped
        .iter()
        .filter(|s| s.reason == "unsupported language")
        .count();
    for skip in skipped
        .iter()
        .filter(|s| s.reason != "unsupported language")
    {
        out.note(&format!("skipped {}: {}", skip.path, skip.reason));
    }
    if files == 0 {
        out.note("no source files found (languages: rust, python, javascript, typescript, tsx, go, java, c, cpp)");
    }
    if unsupported > 0 {
        out.note(&format!(
            "{unsupported} file(s) in unsupported languages skipped (see --json `skipped`)"
        ));
    }
    tracing::info!(cached = stats.cached, parsed = stats.parsed, "summaries");
    Ok(Status::Success)
}

/// A directory's JSON report written while its files are summarized: the same bytes as
/// `SummarizeReport::Directory` (path, files, skipped), without holding every summary.
struct Streamed<'d, 'a> {
    directory: &'d DirectorySummary<'a>,
    /// How the run ended, once `files` was written.
    outcome: RefCell<Option<RunOutcome>>,
}

/// What [`DirectorySummary::run`] returns.
type RunOutcome = Result<(Vec<Skipped>, SummaryStats), ctx::code::CodeError>;

impl Serialize for Streamed<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // The shape of `ctx::answers::SummarizeAnswer`, written as the files come.
        let mut report = serializer.serialize_struct("SummarizeAnswer", 3)?;
        report.serialize_field("path", &self.directory.path)?;
        report.serialize_field("files", &StreamedFiles(self))?;
        let outcome = self.outcome.borrow();
        let Some(Ok((skipped, _))) = outcome.as_ref() else {
            return Err(S::Error::custom("summarizing failed"));
        };
        let skipped: Vec<SkippedItem> = skipped.iter().cloned().map(SkippedItem::from).collect();
        report.serialize_field("skipped", &skipped)?;
        report.end()
    }
}

/// The `files` array of a [`Streamed`] report: runs the summary, one element per file.
struct StreamedFiles<'s, 'd, 'a>(&'s Streamed<'d, 'a>);

impl Serialize for StreamedFiles<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut files = serializer.serialize_seq(None)?;
        let mut failed: Option<S::Error> = None;
        let run = self.0.directory.run(&mut |file| {
            files
                .serialize_element(&FileItem::from(file))
                .map_err(|err| {
                    let message = err.to_string();
                    failed = Some(err);
                    ctx::code::CodeError::Cache(message.into())
                })
        });
        if let Some(err) = failed {
            return Err(err);
        }
        let ok = run.is_ok();
        *self.0.outcome.borrow_mut() = Some(run);
        if !ok {
            return Err(S::Error::custom("summarizing failed"));
        }
        files.end()
    }
}

fn render_file(text: &mut String, file: &FileSummary, skeleton: bool, many: bool, out: &Output) {
    let errors = if file.has_errors {
        " (syntax errors: symbols may be partial)"
    } else {
        ""
    };
    if skeleton {
        if many {
            let _ = writeln!(
                text,
                "{}",
                out.paint(Style::Bold, &format!("== {} ==", file.path))
            );
        }
        if let Some(code) = &file.skeleton {
            text.push_str(code);
            if !code.ends_with('\n') {
                text.push('\n');
            }
        }
        return;
    }
    let _ = writeln!(
        text,
        "{} ({}, {} lines){errors}",
        out.paint(Style::Bold, &file.path),
        file.language.name(),
        file.lines
    );
    if !file.imports.is_empty() {
        let _ = writeln!(text, "  {}", out.paint(Style::Dim, "imports:"));
        for import in &file.imports {
            let _ = writeln!(text, "    {import}");
        }
    }
    if !file.symbols.is_empty() {
        let _ = writeln!(text, "  {}", out.paint(Style::Dim, "symbols:"));
        for symbol in &file.symbols {
            let depth = symbol
                .parent
                .as_ref()
                .map_or(0, |p| 1 + p.matches("::").count() + p.matches('.').count());
            let _ = writeln!(
                text,
                "    {}{:>5}-{:<5} {}",
                "  ".repeat(depth),
                symbol.line,
                symbol.end_line,
                symbol.signature
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn the_streamed_report_is_the_collected_report_byte_for_byte() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join("src/deep")).expect("mkdir");
        std::fs::write(
            root.join("src/a.rs"),
            "/// Doc.\npub fn a() {}\nstruct S;\n",
        )
        .expect("write");
        std::fs::write(
            root.join("src/deep/b.py"),
            "import os\ndef b():\n    pass\n",
        )
        .expect("write");
        std::fs::write(root.join("src/c.txt"), "text\n").expect("write");
        std::fs::write(root.join("src/d.rs"), b"\0binary").expect("write");
        std::fs::write(root.join("src/e.js"), "function e( {\n").expect("write");
        let ws = ctx::Workspace::open(
            &ctx::OpenOptions {
                cwd: root.clone(),
                store: None,
                init: true,
                env: ctx::Environment::default(),
            },
            std::sync::Arc::new(crate::commands::select::now),
        )
        .expect("workspace");
        for path in [".", "src"] {
            let collected = ws.summarize(Path::new(path), None, false).expect("run");
            let SummaryPlan::Directory(directory) =
                ws.summary_plan(Path::new(path), None, false).expect("plan")
            else {
                panic!("a directory");
            };
            let streamed = || Streamed {
                directory: &directory,
                outcome: RefCell::new(None),
            };
            assert_eq!(
                serde_json::to_vec_pretty(&streamed()).expect("pretty"),
                serde_json::to_vec_pretty(&collected).expect("pretty"),
                "{path}"
            );
            assert_eq!(
                serde_json::to_vec(&streamed()).expect("compact"),
                serde_json::to_vec(&collected).expect("compact"),
                "{path}"
            );
        }
        // An empty directory: `files` is an empty array either way.
        std::fs::create_dir_all(root.join("empty")).expect("mkdir");
        let collected = ws.summarize(Path::new("empty"), None, false).expect("run");
        let SummaryPlan::Directory(directory) = ws
            .summary_plan(Path::new("empty"), None, false)
            .expect("plan")
        else {
            panic!("a directory");
        };
        let streamed = Streamed {
            directory: &directory,
            outcome: RefCell::new(None),
        };
        assert_eq!(
            serde_json::to_vec_pretty(&streamed).expect("pretty"),
            serde_json::to_vec_pretty(&collected).expect("pretty")
        );
    }
}
