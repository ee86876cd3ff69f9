//! All terminal output goes through here: results on stdout, notes and errors on stderr.
//!
//! This is the only module allowed to print; the workspace lints `print_stdout` and
//! `print_stderr` everywhere else, so nothing can slip onto a protocol stream.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use serde::Serialize;

use crate::args::{ColorChoice, Format, GlobalArgs};

/// How a command ended when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Exit 0.
    Success,
    /// Exit 1: the command ran but found nothing, or found a difference or damage.
    Found,
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> Self {
        match status {
            Status::Success => Self::SUCCESS,
            Status::Found => Self::from(1),
        }
    }
}

/// ANSI styles used in human output.
#[derive(Debug, Clone, Copy)]
pub enum Style {
    Bold,
    Green,
    Red,
    Yellow,
    Dim,
}

impl Style {
    const fn code(self) -> &'static str {
        match self {
            Self::Bold => "1",
            Self::Green => "32",
            Self::Red => "31",
            Self::Yellow => "33",
            Self::Dim => "2",
        }
    }
}

pub struct Output {
    format: Format,
    /// The `--format` given explicitly, if any (commands whose default is JSON check it).
    asked: Option<Format>,
    quiet: bool,
    color_stdout: bool,
    color_stderr: bool,
}

impl Output {
    pub fn new(global: &GlobalArgs) -> Self {
        let format = if global.json {
            Format::Json
        } else if global.compact {
            Format::Compact
        } else {
            match global.format {
                None | Some(Format::Human) => Format::Human,
                Some(Format::Compact) => Format::Compact,
                // `run export` formats are JSON documents.
                Some(_) => Format::Json,
            }
        };
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let wants = |terminal: bool| match global.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => terminal && !no_color,
        };
        Self {
            format,
            asked: if global.json || global.compact {
                None
            } else {
                global.format
            },
            quiet: global.quiet,
            color_stdout: wants(io::stdout().is_terminal()),
            color_stderr: wants(io::stderr().is_terminal()),
        }
    }

    /// Whether the user asked for JSON (pretty or compact).
    pub fn is_json(&self) -> bool {
        self.format != Format::Human
    }

    /// Whether a command whose default output is JSON should write JSON: yes unless
    /// `--format human` was given.
    pub fn is_json_by_default(&self) -> bool {
        self.asked != Some(Format::Human)
    }

    /// Writes `value` as JSON in the chosen layout, streamed to stdout (a whole-tree summary
    /// is hundreds of megabytes; it is not built in memory first).
    pub fn json<T: Serialize + ?Sized>(&self, value: &T) -> anyhow::Result<()> {
        let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
        // Into `io::Error`, which keeps a closed pipe recognisable to `fail`.
        if self.format == Format::Compact {
            serde_json::to_writer(&mut out, value).map_err(io::Error::from)?;
        } else {
            serde_json::to_writer_pretty(&mut out, value).map_err(io::Error::from)?;
        }
        out.write_all(b"\n")?;
        out.flush()?;
        Ok(())
    }

    /// Writes one line of human output.
    pub fn line(&self, text: &str) -> anyhow::Result<()> {
        let mut bytes = Vec::with_capacity(text.len() + 1);
        bytes.extend_from_slice(text.as_bytes());
        bytes.push(b'\n');
        write_stdout(&bytes)
    }

    /// Writes raw bytes to stdout (payloads, file contents).
    pub fn raw(&self, bytes: &[u8]) -> anyhow::Result<()> {
        write_stdout(bytes)
    }

    /// Styles text for stdout when colour is on.
    pub fn paint(&self, style: Style, text: &str) -> String {
        paint(self.color_stdout, style, text)
    }

    /// A progress bar for long work: drawn on stderr when it is a terminal, never with -q.
    pub fn progress(&self) -> crate::progress::Bar {
        crate::progress::Bar::new(!self.quiet)
    }

    /// A note on stderr (suppressed by -q).
    pub fn note(&self, text: &str) {
        if !self.quiet {
            eprintln!("{} {text}", paint(self.color_stderr, Style::Dim, "ctx:"));
        }
    }

    /// An error on stderr, for a command that reports a failure through its exit status
    /// rather than by failing (shown even with -q).
    pub fn error(&self, text: &str) {
        eprintln!("{} {text}", paint(self.color_stderr, Style::Red, "error:"));
    }

    /// A warning on stderr (shown even with -q).
    pub fn warn(&self, text: &str) {
        eprintln!(
            "{} {text}",
            paint(self.color_stderr, Style::Yellow, "warning:")
        );
    }

    /// Puts `bytes` on the clipboard through the terminal (OSC 52, which terminals and tmux
    /// pass to the system clipboard); an error when stderr is not a terminal.
    pub fn clipboard(&self, bytes: &[u8]) -> anyhow::Result<()> {
        use base64::Engine as _;
        if !io::stderr().is_terminal() {
            anyhow::bail!(
                "--copy needs a terminal (it asks the terminal to set the clipboard with OSC 52); write the payload to a file with -o FILE instead"
            );
        }
        let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
        let mut stderr = io::stderr().lock();
        write!(stderr, "\x1b]52;c;{encoded}\x07")?;
        stderr.flush()?;
        Ok(())
    }

    /// A multi-line report on stderr, when stdout carries a payload (suppressed by -q).
    pub fn report(&self, text: &str) {
        if !self.quiet {
            eprintln!("{text}");
        }
    }

    /// Reports a failed command: one line on stderr, and the exit code of its kind
    /// ([`exit_code`]). A closed stdout is not a failure.
    pub fn fail(&self, err: &anyhow::Error) -> ExitCode {
        let broken_pipe = err.chain().any(|cause| {
            cause
                .downcast_ref::<io::Error>()
                .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
        });
        if broken_pipe {
            return ExitCode::SUCCESS;
        }
        let message = error_line(err);
        eprintln!(
            "{} {message}",
            paint(self.color_stderr, Style::Red, "error:")
        );
        ExitCode::from(exit_code(err))
    }
}

/// `err` and its causes on one line, `: ` between them, leaving out a cause whose text the
/// line already holds (an error that names its cause in its own message).
fn error_line(err: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if message.contains(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message.replace('\n', " ")
}

/// The exit code of a failure, by its kind (README, "Exit codes"): 2 when the input or the
/// store needs the user's fix (bad input, not found, a conflict, a damaged store), 74 when
/// the file system failed (a read-only store, a full disk, permissions), 70 for a bug in ctx.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    let root: &(dyn std::error::Error + 'static) = err.as_ref();
    match ctx::kind_of(root) {
        Some(ctx::ErrorKind::Io) => 74,
        Some(ctx::ErrorKind::Internal) => 70,
        _ => 2,
    }
}

/// Reports a command line clap refused: one line on stderr naming the input and what to do,
/// exit 2 (clap's usage block and tips are folded into that line). `--help` and `--version`
/// print as clap prints them, exit 0.
pub fn command_line_error(err: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    use std::io::IsTerminal as _;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        return match err.print() {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::from(2),
        };
    }
    let rendered = err.render().to_string();
    let args: Vec<String> = std::env::args().collect();
    let message = one_line(err.kind(), &rendered, &args);
    let color = io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    eprintln!("{} {message}", paint(color, Style::Red, "error:"));
    ExitCode::from(2)
}

/// Folds clap's rendered error (message, indented items, tips, usage, "For more
/// information") into one line without the `error:` prefix.
fn one_line(kind: clap::error::ErrorKind, rendered: &str, args: &[String]) -> String {
    use clap::error::ErrorKind;
    let usage = rendered
        .lines()
        .find_map(|line| line.strip_prefix("Usage: "))
        .map(str::trim);
    // The command a usage line is for: its words up to the first placeholder or option.
    let command = usage.map_or_else(
        || command_path(args),
        |usage| {
            usage
                .split_whitespace()
                .take_while(|word| !word.starts_with(['[', '<', '-']))
                .collect::<Vec<_>>()
                .join(" ")
        },
    );
    if kind == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let subcommands = subcommands(rendered);
        return format!(
            "`{command}` needs a subcommand: {}; `{command} --help` says what each does",
            subcommands.join(", ")
        );
    }
    let mut head = String::new();
    let mut items = Vec::new();
    let mut tips = Vec::new();
    for line in rendered.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        if let Some(first) = trimmed.strip_prefix("error: ").filter(|_| head.is_empty()) {
            first.clone_into(&mut head);
        } else if let Some(tip) = trimmed.strip_prefix("tip: ") {
            tips.push(tip.to_owned());
        } else if head.is_empty() {
            trimmed.clone_into(&mut head);
        } else {
            items.push(trimmed.to_owned());
        }
    }
    let mut message = if kind == ErrorKind::MissingRequiredArgument && !items.is_empty() {
        let missing = items.join(" and ");
        match usage {
            Some(usage) => format!("`{command}` is missing {missing}; write `{usage}`"),
            None => format!("`{command}` is missing {missing}"),
        }
    } else {
        let mut message = head.trim_end_matches(':').to_owned();
        if !items.is_empty() {
            let separator = if head.ends_with(':') { ": " } else { " " };
            message.push_str(separator);
            message.push_str(&items.join(", "));
        }
        let wants_usage = !matches!(
            kind,
            ErrorKind::InvalidValue | ErrorKind::ValueValidation | ErrorKind::InvalidSubcommand
        );
        if let Some(usage) = usage.filter(|_| wants_usage) {
            message.push_str("; usage: `");
            message.push_str(usage);
            message.push('`');
        }
        message
    };
    for tip in tips {
        message.push_str("; ");
        message.push_str(&tip);
    }
    message.push_str(" (`");
    message.push_str(&command);
    message.push_str(" --help` explains)");
    message
}

/// The (sub)command the arguments name: `ctx`, then each word that is a subcommand of the one
/// before.
fn command_path(args: &[String]) -> String {
    use clap::CommandFactory as _;
    let mut command = crate::args::Cli::command();
    let mut path = vec![command.get_name().to_owned()];
    for arg in args.iter().skip(1) {
        let Some(sub) = command.find_subcommand(arg).cloned() else {
            continue;
        };
        path.push(sub.get_name().to_owned());
        command = sub;
    }
    path.join(" ")
}

/// The subcommands a rendered help lists under `Commands:` (without `help`).
fn subcommands(help: &str) -> Vec<&str> {
    help.lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect()
}

fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(bytes)?;
    stdout.flush()?;
    Ok(())
}

fn paint(enabled: bool, style: Style, text: &str) -> String {
    if enabled {
        format!("\x1b[{}m{text}\x1b[0m", style.code())
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;
    use clap::error::ErrorKind;

    #[test]
    fn exit_codes_follow_the_kind_of_failure() {
        use ctx::code::CodeError;
        use ctx::store::StoreError;
        let code = |err: anyhow::Error| super::exit_code(&err);
        let path = std::path::PathBuf::from("x");
        // User input, not found, conflict, damaged: the user fixes it (2).
        assert_eq!(code(ctx::CtxError::InvalidInput("bad".into()).into()), 2);
        assert_eq!(
            code(
                StoreError::NoSuchPack {
                    name: "p".into(),
                    known: Vec::new()
                }
                .into()
            ),
            2
        );
        assert_eq!(code(StoreError::PackExists { name: "p".into() }.into()), 2);
        assert_eq!(
            code(StoreError::EmptyDatabase { path: path.clone() }.into()),
            2
        );
        // Wrapped in context by the CLI, the kind is still found.
        let wrapped = anyhow::Error::from(StoreError::ReadOnly { path: path.clone() })
            .context("cannot create the pack");
        assert_eq!(code(wrapped), 74, "the file system failed");
        assert_eq!(
            code(CodeError::Cache("no table".into()).into()),
            70,
            "a bug"
        );
        assert_eq!(
            code(ctx::CtxError::Code(CodeError::Cache("no table".into())).into()),
            70
        );
        // A store failure behind a cache or a token counter keeps its kind across the seam.
        assert_eq!(
            code(CodeError::Cache(Box::new(StoreError::ReadOnly { path: path.clone() })).into()),
            74,
            "a read-only store under the summary cache"
        );
        assert_eq!(
            code(
                ctx::select::SelectionError::TokenCount(Box::new(StoreError::EmptyDatabase {
                    path: path.clone()
                }))
                .into()
            ),
            2,
            "a damaged store under the token counter"
        );
        // Errors the CLI makes itself are about the command line.
        assert_eq!(code(anyhow::anyhow!("--http `x` is not an address")), 2);
    }

    use super::one_line;
    use crate::args::Cli;

    fn error_line(args: &[&str]) -> (ErrorKind, String) {
        let err = Cli::try_parse_from(args).expect_err("a bad command line");
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let line = one_line(err.kind(), &err.render().to_string(), &args);
        (err.kind(), line)
    }

    #[test]
    fn argument_errors_fold_into_one_line() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["ctx", "pack", "add", "docs"],
                "`ctx pack add` is missing <SOURCE>; write `ctx pack add <NAME> <SOURCE>` (`ctx pack add --help` explains)",
            ),
            (
                &["ctx", "pack", "add"],
                "`ctx pack add` is missing <NAME> and <SOURCE>; write `ctx pack add <NAME> <SOURCE>` (`ctx pack add --help` explains)",
            ),
            (
                &["ctx", "--format", "yaml", "status"],
                "invalid value 'yaml' for '--format <FORMAT>' [possible values: human, json, compact] (`ctx status --help` explains)",
            ),
            (
                &["ctx", "pack", "create", "x", "--budget", "abc"],
                "invalid value 'abc' for '--budget <N>': `abc` is not a number of tokens; write it as 8000, 8k or 1.5M (`ctx pack create --help` explains)",
            ),
        ];
        for (args, expected) in cases {
            let (_, line) = error_line(args);
            assert_eq!(&line, expected, "{args:?}");
        }
        for args in [
            &["ctx", "--bogus"][..],
            &["ctx", "frobnicate"],
            &["ctx", "config"],
            &["ctx", "pack", "create", "a", "b"],
            &["ctx", "read", "--lines"],
            &["ctx", "serve"],
            &["ctx", "--json", "--compact", "status"],
        ] {
            let (kind, line) = error_line(args);
            assert!(!line.contains('\n'), "{kind:?} {args:?}: {line}");
            assert!(line.contains("--help"), "{kind:?} {args:?}: {line}");
            assert!(!line.contains("For more information"), "{line}");
        }
        // `ctx pack` alone packs `.`; groups without a default still name their subcommands.
        let (_, line) = error_line(&["ctx", "config"]);
        assert!(
            line.starts_with("`ctx config` needs a subcommand: get, set, unset, list"),
            "{line}"
        );
        let (_, line) = error_line(&["ctx", "--jsn", "status"]);
        assert!(line.contains("'--json'"), "the suggestion is kept: {line}");
    }
}
