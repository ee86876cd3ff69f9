//! `ctx mcp`: serve ctx to AI agents over the Model Context Protocol.

use std::net::SocketAddr;

use anyhow::{Context as _, Result};
use clap::Args;
use ctx_mcp::McpConfig;

use crate::context::Context;
use crate::output::{Output, Status};

/// Serve ctx to AI agents over MCP: stdio by default, Streamable HTTP with --http.
///
/// The workspace is the directory ctx was started in (or -C DIR); no tool reads outside it.
/// Tools are read-only unless --allow-write. stdout carries only the protocol; logs go to
/// stderr (-v for more). Answers are capped at the `mcp.max_tokens` setting (8000) and paged.
///
/// Examples:
///   ctx mcp                                  # stdio, for `claude mcp add ctx -- ctx mcp`
///   ctx mcp --http 127.0.0.1:17373           # Streamable HTTP at http://127.0.0.1:17373/mcp
///   ctx -C ~/src/project mcp --allow-write
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct McpArgs {
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (loopback unless you name
    /// another address; Host and Origin are checked).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Offer the write tools ctx_packs_create, ctx_packs_add and ctx_packs_remove.
    #[arg(long)]
    pub allow_write: bool,
}

pub fn run(args: &McpArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let addr: Option<SocketAddr> = args
        .http
        .as_deref()
        .map(|text| {
            text.parse().with_context(|| {
                format!("--http `{text}` is not an address; write it as 127.0.0.1:17373")
            })
        })
        .transpose()?;
    let (store, location) = ctx.open_store(out)?;
    drop(store);
    let config = McpConfig::new(
        ctx.cwd.clone(),
        location.dir.clone(),
        ctx.workspace_root(&location),
        ctx.config_layers()?,
    )
    .with_allow_write(args.allow_write);
    match addr {
        Some(addr) => ctx_mcp::run_http(&config, addr, |bound| {
            out.note(&format!("serving MCP at http://{bound}/mcp (Ctrl-C stops)"));
        })?,
        None => ctx_mcp::run_stdio(&config)?,
    }
    Ok(Status::Success)
}
