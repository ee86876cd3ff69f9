//! `ctx mcp`: serve ctx to AI agents over the Model Context Protocol, optionally recording
//! every tool call as a run (`--record NAME`).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use clap::Args;
use ctx_mcp::{CtxServer, HttpOptions, McpConfig};

use crate::context::Context;
use crate::output::{Output, Status};

/// Serve ctx to AI agents over MCP: stdio by default, Streamable HTTP with --http.
///
/// The workspace is the directory ctx was started in (or -C DIR); no tool reads outside it.
/// Tools are read-only unless --allow-write. stdout carries only the protocol; logs go to
/// stderr (-v for more). Answers are capped at the `mcp.max_tokens` setting (8000) and paged.
///
/// With --record NAME every tool call is recorded as a step of a run (arguments, output,
/// duration, and whether it is deterministic: read-only tools are, tools that write to the
/// store are not). Steps are saved as they happen; the run is finished and named NAME (and
/// `latest`) when the session ends (stdin closes, Ctrl-C or SIGTERM). While recording, tools
/// see the session's start as the current time, so `ctx run replay NAME` can reproduce
/// answers that mention times. A recording cut short by a crash is finished by the next
/// `ctx mcp --record`.
///
/// Examples:
///   ctx mcp                                  # stdio, for `claude mcp add ctx -- ctx mcp`
///   ctx mcp --http 127.0.0.1:17373           # Streamable HTTP at http://127.0.0.1:17373/mcp
///   ctx -C ~/src/project mcp --allow-write
///   ctx mcp --tools all                      # every tool, not only the core set
///   ctx mcp --record review-1                # then: ctx run replay review-1
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
    /// Record every tool call as a run named NAME (see `ctx run show NAME`, `ctx run replay`).
    #[arg(long, value_name = "NAME")]
    pub record: Option<String>,
    /// The tools offered: core (select, search, summarize, map, read, render), all, or tool
    /// names separated by commas (default: the `mcp.tools` setting, core).
    #[arg(long, value_name = "SET", value_parser = super::serve::parse_tool_set)]
    pub tools: Option<ctx_mcp::ToolSet>,
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
    let ws = ctx.open(out)?;
    let store_dir = ws.store()?.dir().to_owned();
    let mut config = McpConfig::new(ctx.cwd.clone(), store_dir, ws.root(), ws.config().clone())
        .with_allow_write(args.allow_write);
    config.tools.clone_from(&args.tools);
    config.tree_cache.global_ignore_files = ctx.global_git_ignore_files();
    let Some(name) = &args.record else {
        drop(ws);
        match addr {
            Some(addr) => ctx_mcp::run_http(&config, addr, |bound| {
                out.note(&format!("serving MCP at http://{bound}/mcp (Ctrl-C stops)"));
            })?,
            None => ctx_mcp::run_stdio(&config)?,
        }
        return Ok(Status::Success);
    };

    ctx::recording::check_record_name(name).map_err(|err| anyhow::anyhow!("--record {err}"))?;
    let pid = std::process::id();
    for recovered in ws.recover_recordings(pid)? {
        out.note(&format!(
            "finished the interrupted recording `{}` ({} steps) as run {}",
            recovered.name, recovered.steps, recovered.run
        ));
    }
    let recorder = ctx_mcp::record::start_recording(
        &mut config,
        ws.store_handle()?,
        ctx_mcp::record::RecordRequest {
            name: name.clone(),
            started: super::select::now(),
            step_clock: Arc::new(super::select::now),
            runtime: "ctx-mcp".to_owned(),
            pid,
        },
    )?;

    let served = serve_until_shutdown(&config, addr, out);
    let finished = recorder.finish();
    served?;
    match finished? {
        Some((run, steps)) => out.note(&format!(
            "recorded run {run} ({steps} steps) as `{name}`; replay it with `ctx run replay {name}`"
        )),
        None => out.note("no tool calls were made; nothing recorded"),
    }
    Ok(Status::Success)
}

/// Serves until stdin closes (stdio), or Ctrl-C / SIGTERM (both transports).
fn serve_until_shutdown(config: &McpConfig, addr: Option<SocketAddr>, out: &Output) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(async {
        let server = CtxServer::new(config)?;
        if let Some(addr) = addr {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr}"))?;
            let bound = listener.local_addr()?;
            let mut options = HttpOptions::for_address(bound);
            options.limits = ctx_mcp::HttpLimits::from_layers(&config.layers)?;
            let stop = options.cancellation.clone();
            tokio::spawn(async move {
                shutdown_signal().await;
                stop.cancel();
            });
            out.note(&format!(
                "serving MCP at http://{bound}/mcp, recording (Ctrl-C stops)"
            ));
            ctx_mcp::serve_http(server, listener, options).await?;
        } else {
            let (read, write) = ctx_mcp::rmcp::transport::io::stdio_pipes();
            tokio::select! {
                outcome = ctx_mcp::serve_io(server, read, write) => outcome?,
                () = shutdown_signal() => {}
            }
        }
        anyhow::Ok(())
    });
    // Do not wait for a blocked stdin read: the client is gone.
    runtime.shutdown_background();
    result
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
