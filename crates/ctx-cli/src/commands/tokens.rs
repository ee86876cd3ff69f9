//! `ctx tokens`.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;

use anyhow::{Context as _, Result, bail};
use clap::Args;
use serde::Serialize;

use crate::context::Context;
use crate::output::{Output, Status};

/// Count tokens in files or stdin, exactly as tiktoken's encode_ordinary does.
///
/// Text that looks like a special token (<|endoftext|>) counts as the ordinary text it is.
/// When a store already exists, counts are cached by content hash.
///
/// Examples:
///   ctx tokens README.md
///   ctx tokens --tokenizer cl100k_base src/*.rs
///   git diff | ctx tokens -
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct TokensArgs {
    /// Files to count; `-` (or nothing, with piped input) reads stdin.
    #[arg(value_name = "FILE|-")]
    pub files: Vec<PathBuf>,
    /// Tokenizer: o200k_base (default), cl100k_base or approx (ceil(bytes/4)).
    #[arg(long, value_name = "T")]
    pub tokenizer: Option<String>,
}

#[derive(Serialize)]
struct FileCount {
    path: String,
    bytes: u64,
    tokens: u64,
}

#[derive(Serialize)]
struct TokensReport {
    tokenizer: &'static str,
    exact: bool,
    files: Vec<FileCount>,
    total_tokens: u64,
}

pub fn run(args: &TokensArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let mut ws = ctx.workspace()?;
    if let Some(name) = &args.tokenizer {
        ws = ws.with_flag("tokenizer", name.clone());
    }
    let tokenizer = ws.config().tokenizer()?;

    let inputs: Vec<PathBuf> = if args.files.is_empty() {
        if std::io::stdin().is_terminal() {
            bail!("no input: name a FILE, or pipe text in (`... | ctx tokens -`)");
        }
        vec![PathBuf::from("-")]
    } else {
        args.files.clone()
    };
    let mut names = Vec::with_capacity(inputs.len());
    let mut texts = Vec::with_capacity(inputs.len());
    for input in &inputs {
        let (name, bytes) = if input.as_os_str() == "-" {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .context("reading stdin")?;
            ("-".to_owned(), bytes)
        } else {
            if ctx.cwd.join(input).is_dir() {
                bail!(
                    "`{}` is a directory; name files (e.g. `ctx tokens {}/*`)",
                    input.display(),
                    input.display()
                );
            }
            // The error names the file and what to do already.
            let bytes = ctx::fs::input::read_named_file(&ctx.cwd, input)?;
            (input.display().to_string(), bytes)
        };
        let text = String::from_utf8(bytes).map_err(|err| {
            anyhow::anyhow!(
                "`{name}` is not valid UTF-8 (first bad byte at offset {}); ctx counts tokens of text only",
                err.utf8_error().valid_up_to()
            )
        })?;
        names.push(name);
        texts.push(text);
    }

    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let counts = ws.count_tokens(&refs, Some(tokenizer))?;

    let files: Vec<FileCount> = names
        .into_iter()
        .zip(&texts)
        .zip(&counts)
        .map(|((path, text), &tokens)| FileCount {
            path,
            bytes: text.len() as u64,
            tokens,
        })
        .collect();
    let report = TokensReport {
        tokenizer: tokenizer.name(),
        exact: tokenizer.is_exact(),
        total_tokens: counts.iter().sum(),
        files,
    };
    if out.is_json() {
        out.json(&report)?;
    } else {
        let width = report.total_tokens.to_string().len();
        for file in &report.files {
            out.line(&format!("{:>width$}  {}", file.tokens, file.path))?;
        }
        if report.files.len() > 1 {
            out.line(&format!(
                "{:>width$}  total ({})",
                report.total_tokens, report.tokenizer
            ))?;
        }
    }
    Ok(Status::Success)
}
