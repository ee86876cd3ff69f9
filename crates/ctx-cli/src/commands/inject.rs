//! `ctx inject`: a prompt on stdin, context lines and snippets + separator + the prompt out.

use std::io::Read as _;

use anyhow::{Context as _, Result};
use clap::Args;

use crate::context::Context;
use crate::output::{Output, Status};

/// Read a prompt on stdin and print it with context in front: [CTX: …], [RECENT: …],
/// [RELEVANT: …], [KEYWORDS: …], the selected snippets, a `---` line, then the prompt.
///
/// Examples:
///   echo "fix the parser" | ctx inject --budget 1000
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct InjectArgs {
    /// Token budget for everything put in front of the prompt.
    #[arg(long, value_name = "N", value_parser = crate::args::parse_budget, default_value_t = 2000)]
    pub budget: u64,
    /// The index to select from (default: the workspace's).
    #[arg(long, value_name = "NAME")]
    pub index: Option<String>,
}

pub fn run(args: &InjectArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let mut prompt = String::new();
    std::io::stdin()
        .read_to_string(&mut prompt)
        .context("cannot read the prompt from stdin (it must be UTF-8 text)")?;
    let ws = ctx.workspace()?;
    Context::store(&ws, out)?;
    let injection = ws.inject(&prompt, args.index.as_deref(), args.budget, &out.progress())?;
    if out.is_json() {
        out.json(&injection)?;
    } else {
        out.raw(injection.text.as_bytes())?;
    }
    Ok(Status::Success)
}
