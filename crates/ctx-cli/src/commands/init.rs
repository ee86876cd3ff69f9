//! `ctx init`.

use anyhow::Result;
use clap::Args;

use crate::context::Context;
use crate::output::{Output, Status};

/// Create a project store (.ctx) in the current directory (or -C DIR).
///
/// Running it again is safe: an existing store is left as it is.
///
/// Examples:
///   ctx init
///   ctx -C ~/src/app init
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct InitArgs {}

pub fn run(_args: &InitArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let dir = ctx.init_dir();
    let report = ctx::init_store(&dir)?;
    if out.is_json() {
        out.json(&report)?;
    } else if report.created {
        out.line(&format!("Initialized empty ctx store in {}", report.store))?;
    } else {
        out.line(&format!(
            "ctx store already exists in {} (left as it is)",
            report.store
        ))?;
    }
    Ok(Status::Success)
}
