//! `ctx`: the CLI definition plus glue. Logic lives in the library crates.

mod args;
mod commands;
mod context;
mod output;
mod progress;

use std::process::ExitCode;

use clap::Parser as _;

use crate::args::Cli;
use crate::output::Output;

/// mimalloc for the whole program (tree-sitter's C allocations included, see `main`). An index
/// build allocates a few small strings per term of every document; with the C library's
/// malloc, allocation was a sixth of a cold build's CPU time.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // Process-wide, so the program's to choose, before anything parses.
    ctx::host::use_mimalloc_for_tree_sitter();
    ctx::host::limit_malloc_arenas();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return output::command_line_error(&err),
    };
    init_tracing(cli.global.verbose, cli.global.quiet);
    set_store_backends(&cli.global.store_url);
    let out = Output::new(&cli.global);
    let status = match context::Context::new(&cli.global) {
        Ok(ctx) => commands::run(cli.command, &ctx, &out),
        Err(err) => Err(err),
    };
    match status {
        Ok(code) => code.into(),
        Err(err) => out.fail(&err),
    }
}

/// Tells the store which shared backends to use, from `--store-url`, `CTX_STORE_METADATA`,
/// `CTX_STORE_OBJECTS` and the `AWS_*` variables (the library reads no environment).
fn set_store_backends(urls: &[String]) {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let mut backends = ctx::store::Backends {
        metadata: var("CTX_STORE_METADATA"),
        objects: var("CTX_STORE_OBJECTS"),
        s3: ctx::store::S3Settings::from_lookup(|name| std::env::var(name).ok()),
    };
    for url in urls {
        backends.set_url(url);
    }
    ctx::store::set_process_backends(backends);
}

fn init_tracing(verbose: u8, quiet: bool) {
    use tracing_subscriber::EnvFilter;
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_env("CTX_LOG").unwrap_or_else(|_| EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .init();
}
