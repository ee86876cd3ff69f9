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

    /// A warning on stderr (shown even with -q).
    pub fn warn(&self, text: &str) {
        eprintln!(
            "{} {text}",
            paint(self.color_stderr, Style::Yellow, "warning:")
        );
    }

    /// A multi-line report on stderr, when stdout carries a payload (suppressed by -q).
    pub fn report(&self, text: &str) {
        if !self.quiet {
            eprintln!("{text}");
        }
    }

    /// Reports a failed command: one line on stderr, exit 2. A closed stdout is not a failure.
    pub fn fail(&self, err: &anyhow::Error) -> ExitCode {
        let broken_pipe = err.chain().any(|cause| {
            cause
                .downcast_ref::<io::Error>()
                .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
        });
        if broken_pipe {
            return ExitCode::SUCCESS;
        }
        let message = format!("{err:#}").replace('\n', " ");
        eprintln!(
            "{} {message}",
            paint(self.color_stderr, Style::Red, "error:")
        );
        ExitCode::from(2)
    }
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
