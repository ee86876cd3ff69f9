//! `ctx completions SHELL`.

use anyhow::Result;
use clap::{Args, CommandFactory};
use clap_complete::Shell;

use crate::args::Cli;
use crate::output::{Output, Status};

/// Print a completion script for SHELL.
///
/// Examples:
///   ctx completions bash > ~/.local/share/bash-completion/completions/ctx
///   ctx completions zsh > "${fpath[1]}/_ctx"
///   ctx completions fish > ~/.config/fish/completions/ctx.fish
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn run(args: &CompletionsArgs, out: &Output) -> Result<Status> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "ctx", &mut script);
    out.raw(&script)?;
    Ok(Status::Success)
}
