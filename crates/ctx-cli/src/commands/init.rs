//! `ctx init`.

use anyhow::Result;
use clap::Args;
use ctx::store::Store;
use serde::Serialize;

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

#[derive(Serialize)]
struct InitReport {
    store: String,
    created: bool,
    schema_version: i64,
}

pub fn run(_args: &InitArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let dir = ctx.init_dir();
    let (store, created) = Store::init(&dir)?;
    let report = InitReport {
        store: dir.display().to_string(),
        created,
        schema_version: store.db().schema_version()?,
    };
    if out.is_json() {
        out.json(&report)?;
    } else if created {
        out.line(&format!("Initialized empty ctx store in {}", report.store))?;
    } else {
        out.line(&format!(
            "ctx store already exists in {} (left as it is)",
            report.store
        ))?;
    }
    Ok(Status::Success)
}
