//! One module per verb: its clap `Args` and one `run` function returning a [`Status`].

pub mod completions;
pub mod config;
pub mod diff_context;
pub mod hook;
pub mod index;
pub mod init;
pub mod inject;
pub mod map;
pub mod mcp;
pub mod pack;
pub mod read;
pub mod related;
pub mod run;
pub mod run_provenance;
pub mod run_replay;
pub mod search;
pub mod select;
pub mod serve;
pub mod status;
pub mod store;
pub mod summarize;
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
        Command::Pack(args) => pack::run(args, ctx, out),
        Command::Tokens(args) => tokens::run(&args, ctx, out),
        Command::Status(args) => status::run(&args, ctx, out),
        Command::Map(args) => map::run(&args, ctx, out),
        Command::Summarize(args) => summarize::run(&args, ctx, out),
        Command::Search(args) => search::run(&args, ctx, out),
        Command::Related(args) => related::run(&args, ctx, out),
        Command::DiffContext(args) => diff_context::run(&args, ctx, out),
        Command::Mcp(args) => mcp::run(&args, ctx, out),
        Command::Index(cmd) => index::run(&cmd, ctx, out),
        Command::Select(args) => select::run(&args, ctx, out),
        Command::Inject(args) => inject::run(&args, ctx, out),
        Command::Hook(cmd) => hook::run(&cmd, ctx, out),
        Command::Read(args) => read::run(&args, ctx, out),
        Command::Serve(args) => serve::run(&args, ctx, out),
        Command::Run(cmd) => run::run(cmd, ctx, out),
        Command::Completions(args) => completions::run(&args, out),
    }
}
