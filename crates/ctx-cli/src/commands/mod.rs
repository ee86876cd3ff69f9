//! One module per verb: its clap `Args` and one `run` function returning a [`Status`].

pub mod completions;
pub mod config;
pub mod init;
pub mod store;
pub mod tokens;

use anyhow::Result;

use crate::args::Command;
use crate::context::Context;
use crate::output::{Output, Status};

pub fn run(command: Command, ctx: &Context, out: &Output) -> Result<Status> {
    match command {
        Command::Init(args) => init::run(&args, ctx, out),
        Command::Config(cmd) => config::run(cmd, ctx, out),
        Command::Store(cmd) => store::run(&cmd, ctx, out),
        Command::Tokens(args) => tokens::run(&args, ctx, out),
        Command::Completions(args) => completions::run(&args, out),
    }
}
