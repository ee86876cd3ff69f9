//! `ctx search`.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use ctx::code::{SearchKind, TextQuery};

use crate::context::Context;
use crate::output::{Output, Status, Style};

/// Search text, symbol definitions (--symbol) or call sites (--caller).
///
/// Text search is literal unless --regex is given (Rust regex syntax, as ripgrep), skips
/// ignored, hidden and binary files like ripgrep, and prints every match unless
/// --max-results is given. --symbol finds definitions by exact name (`Type::method` or
/// `Class.method` narrows the scope), falling back to names containing it. --caller finds
/// call sites from the syntax tree, so comments and strings never match. Results are sorted
/// by path, then line. Exits 1 when nothing matches.
///
/// Examples:
///   ctx search "TODO"
///   ctx search --regex "fn \w+_test" src
///   ctx search --symbol Parser
///   ctx search --caller parse_file --context 2
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
#[allow(clippy::struct_excessive_bools)] // independent command-line switches
pub struct SearchArgs {
    /// Text, regex, symbol name or called name.
    #[arg(value_name = "PATTERN")]
    pub pattern: String,
    /// File or directory to search (default: the current directory).
    #[arg(value_name = "PATH", default_value = ".")]
    pub path: PathBuf,
    /// Find definitions named PATTERN.
    #[arg(long, conflicts_with_all = ["caller", "regex"])]
    pub symbol: bool,
    /// Find call sites of PATTERN.
    #[arg(long, conflicts_with = "regex")]
    pub caller: bool,
    /// Treat PATTERN as a regular expression.
    #[arg(long, short = 'e')]
    pub regex: bool,
    /// Match text case-insensitively.
    #[arg(long, short = 'i')]
    pub ignore_case: bool,
    /// Show N lines before and after each match.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub context: usize,
    /// Stop after N results (the report says how many there were).
    #[arg(long, value_name = "N")]
    pub max_results: Option<usize>,
}

pub fn run(args: &SearchArgs, ctx: &Context, out: &Output) -> Result<Status> {
    if args.pattern.is_empty() {
        anyhow::bail!("empty PATTERN; name the text, symbol or function to search for");
    }
    let kind = if args.symbol {
        SearchKind::Symbol {
            name: args.pattern.clone(),
            context: args.context,
        }
    } else if args.caller {
        SearchKind::Caller {
            name: args.pattern.clone(),
            context: args.context,
        }
    } else {
        SearchKind::Text(TextQuery {
            pattern: args.pattern.clone(),
            regex: args.regex,
            ignore_case: args.ignore_case,
            context: args.context,
            ..TextQuery::default()
        })
    };
    if !ctx.cwd.join(&args.path).exists() {
        anyhow::bail!(
            "`{}` does not exist; name an existing file or directory",
            args.path.display()
        );
    }
    // Every path resolves inside the workspace, as `ctx read` does.
    let ws = ctx.workspace()?;
    let found = ws.search(&args.path, &kind, args.max_results);
    Context::said_created(&ws, out);
    let found = found?;
    let (total, truncated) = (found.total, found.truncated);
    let results = &found.results;
    if args.symbol {
        // Say when nothing is defined under the exact name, rather than pass the names
        // that merely contain it off as the definition.
        if total == 0 {
            out.note(&format!("no definition named `{}`", args.pattern));
        } else if results.iter().all(|m| m.approximate) {
            out.note(&format!(
                "no definition named `{}`; showing {total} whose names contain it",
                args.pattern
            ));
        }
    }
    if out.is_json() {
        out.json(&found)?;
    } else {
        let mut text = String::with_capacity(results.len() * 64);
        for m in results {
            for c in m.context.iter().filter(|c| c.line < m.line) {
                let _ = writeln!(text, "{}-{}-{}", m.path, c.line, c.text);
            }
            let location = out.paint(Style::Bold, &format!("{}:{}:{}:", m.path, m.line, m.column));
            match &m.scope {
                Some(scope) => {
                    let _ = writeln!(
                        text,
                        "{location} {}  {}",
                        m.text,
                        out.paint(Style::Dim, &format!("(in {scope})"))
                    );
                }
                None => {
                    let _ = writeln!(text, "{location} {}", m.text);
                }
            }
            for c in m.context.iter().filter(|c| c.line > m.line) {
                let _ = writeln!(text, "{}-{}-{}", m.path, c.line, c.text);
            }
            if !m.context.is_empty() {
                text.push_str("--\n");
            }
        }
        out.raw(text.as_bytes())?;
        if !found.skipped.is_empty() {
            out.note(&format!(
                "not searched, file(s) that could not be read: {}",
                found.skipped.join("; ")
            ));
        }
        if total == 0 {
            out.note("no matches");
        }
        if truncated {
            let shown = results.len();
            out.note(&match args.max_results {
                Some(max) if shown >= max => {
                    format!("showing {shown} of {total} results (raise --max-results to see more)")
                }
                _ => format!(
                    "showing the first {shown} of {total} results ({} MiB of matches are kept); narrow the pattern or the path to see the rest",
                    ctx::code::DEFAULT_MAX_BYTES >> 20
                ),
            });
        }
    }
    Ok(if total == 0 {
        Status::Found
    } else {
        Status::Success
    })
}
