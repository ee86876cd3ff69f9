//! `ctx serve`: the HTTP tool server for many workspaces.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context as _, Result};
use clap::Args;
use ctx_mcp::{CtxServer, HttpOptions, McpConfig};
use ctx_server::{Mcp, ServerConfig};

use crate::context::Context;
use crate::output::{Output, Status};

/// Serve fs_read for every workspace under DIR over HTTP (and MCP per workspace).
///
/// Workspaces are the subdirectories of DIR, picked up when they are added. POST /tool with
/// {"workspace": ID, "tool": "fs_read", "params": {"operations": [...]}} answers
/// {success, result, error, latency_ms}; GET /health lists the workspaces; each workspace's
/// MCP Streamable HTTP service is at /mcp/ID, and at /mcp with ?workspace=ID or an
/// X-Ctx-Workspace header (or without either when there is only one workspace). Past --max-concurrent requests at once the
/// server answers 503 with Retry-After instead of queueing. SIGTERM or Ctrl-C stops it after
/// the requests in flight. Request logs go to stderr with -v.
///
/// With --record NAME every MCP tool call is recorded as a step of a run per workspace, in
/// the workspace's store, named NAME (NAME.ID when workspaces share the fallback store); the
/// runs are finished when the server stops, and `ctx -C WORKSPACE run replay NAME` replays
/// one. While recording, tools see the server's start as the current time.
///
/// Examples:
///   ctx serve --workspaces /srv/repos
///   ctx serve --workspaces /srv/repos --record nightly   # then: ctx -C /srv/repos/a run replay nightly
///   ctx -v serve --workspaces ~/src --addr 127.0.0.1:9000 --max-concurrent 500
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ServeArgs {
    /// The directory whose subdirectories are the workspaces.
    #[arg(long, value_name = "DIR")]
    pub workspaces: std::path::PathBuf,
    /// Address to listen on (loopback unless you name another).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub addr: String,
    /// Requests running at once before the server answers 503.
    #[arg(long, value_name = "N", default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_concurrent: u32,
    /// Cap on the bytes of content in one response.
    #[arg(long, value_name = "N", default_value_t = ctx::fs::read::DEFAULT_MAX_RESPONSE_BYTES)]
    pub max_bytes: usize,
    /// Results kept in the read cache (0 turns it off).
    #[arg(long, value_name = "N", default_value_t = ctx_server::DEFAULT_CACHE_ENTRIES)]
    pub cache_entries: usize,
    /// Do not mount the MCP service at /mcp and /mcp/ID.
    #[arg(long)]
    pub no_mcp: bool,
    /// The MCP tools offered at /mcp: core (select, search, summarize, map, read, render),
    /// all, or tool names separated by commas (default: the `mcp.tools` setting, core).
    #[arg(long, value_name = "SET", value_parser = parse_tool_set)]
    pub tools: Option<ctx_mcp::ToolSet>,
    /// Record every MCP tool call as a run named NAME in each workspace's store (see
    /// `ctx run show NAME`, `ctx run replay NAME`).
    #[arg(long, value_name = "NAME", conflicts_with = "no_mcp")]
    pub record: Option<String>,
}

/// Parses `--tools`.
pub fn parse_tool_set(text: &str) -> Result<ctx_mcp::ToolSet, String> {
    text.parse()
}

pub fn run(args: &ServeArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let addr: SocketAddr = args.addr.parse().with_context(|| {
        format!(
            "--addr `{}` is not an address; write it as 127.0.0.1:8080",
            args.addr
        )
    })?;
    let mut config = ServerConfig::new(ctx.cwd.join(&args.workspaces));
    config.max_concurrent = usize::try_from(args.max_concurrent).unwrap_or(usize::MAX);
    config.http_limits = ctx_mcp::HttpLimits::from_layers(ctx.workspace()?.config())?;
    config.read_options.max_response_bytes = args.max_bytes;
    config.cache_entries = args.cache_entries;
    // Fail before binding when the directory is wrong.
    let workspaces = config.state()?.registry().ids().len();
    if let Some(name) = &args.record {
        ctx::recording::check_record_name(name).map_err(|err| anyhow::anyhow!("--record {err}"))?;
    }
    let recordings = Recordings::default();
    let mcp = if args.no_mcp {
        None
    } else {
        Some(mcp_mount(
            ctx,
            out,
            args.tools.clone(),
            args.record.clone().map(|name| (name, recordings.clone())),
        )?)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}; is another server using it?"))?;
        let bound = listener.local_addr()?;
        out.note(&format!(
            "serving {workspaces} workspace{} from {} at http://{bound} (POST /tool, GET /health{}); SIGTERM or Ctrl-C stops",
            if workspaces == 1 { "" } else { "s" },
            config.workspaces_dir.display(),
            if mcp.is_some() { ", MCP at /mcp and /mcp/ID" } else { "" },
        ));
        let mcp = mcp.map(|factory| factory(bound));
        ctx_server::serve(listener, &config, mcp, shutdown_signal()).await?;
        out.note("stopped");
        anyhow::Ok(())
    })?;
    finish_recordings(&recordings, out)
}

/// The recordings `ctx serve --record` started, one per workspace served over MCP.
type Recordings = Arc<Mutex<Vec<(String, Arc<ctx::recording::Recording>)>>>;

/// Finishes every recording; the first failure is returned after all were tried.
fn finish_recordings(recordings: &Recordings, out: &Output) -> Result<Status> {
    let recordings = std::mem::take(&mut *recordings.lock().expect("recordings lock"));
    let mut failed = None;
    for (id, recording) in recordings {
        match recording.finish() {
            Ok(Some((run, steps))) => out.note(&format!(
                "workspace `{id}`: recorded run {run} ({steps} steps) as `{}`",
                recording.name()
            )),
            Ok(None) => {}
            Err(err) => {
                failed.get_or_insert(err);
            }
        }
    }
    match failed {
        Some(err) => Err(err.into()),
        None => Ok(Status::Success),
    }
}

/// Builds the MCP mount once the bound address is known: each workspace uses its own
/// `.ctx` store when it has one, else the store ctx would use here.
fn mcp_mount(
    ctx: &Context,
    out: &Output,
    tools: Option<ctx_mcp::ToolSet>,
    record: Option<(String, Recordings)>,
) -> Result<impl FnOnce(SocketAddr) -> Mcp> {
    let ws = ctx.open(out)?;
    let layers = ws.config().clone();
    // Sessions are built on demand; refuse a bad tool set now rather than on every request.
    let tools = match tools {
        Some(set) => set,
        None => ctx_mcp::ToolSet::from_layers(&layers)?,
    };
    tools.check(false)?;
    let tools = Some(tools);
    let fallback_sources = ws.root();
    let fallback_store = ws.store()?.dir().to_owned();
    drop(ws);
    let started = super::select::now();
    let global_ignore_files = ctx.global_git_ignore_files();
    let limits = ctx_mcp::HttpLimits::from_layers(&layers)?;
    Ok(move |bound: SocketAddr| {
        let mut http = HttpOptions::for_address(bound);
        http.limits = limits;
        Mcp::new(Arc::new(move |id: &str, root: &Path| {
            let project = root.join(ctx::store::STORE_DIR_NAME);
            let own_store = ctx::store::is_store_dir(&project);
            let (store_dir, sources_root) = if own_store {
                (project, root.to_owned())
            } else {
                (fallback_store.clone(), fallback_sources.clone())
            };
            let mut config =
                McpConfig::new(root.to_owned(), store_dir, sources_root, layers.clone());
            config.tools.clone_from(&tools);
            config
                .tree_cache
                .global_ignore_files
                .clone_from(&global_ignore_files);
            if let Some((name, recordings)) = &record {
                let name = if own_store {
                    name.clone()
                } else {
                    format!("{name}.{id}")
                };
                let mut recordings = recordings.lock().expect("recordings lock");
                // The workspace directory was replaced: finish its first recording before a
                // new one takes over the journal's name.
                if let Some(at) = recordings.iter().position(|(known, _)| known == id) {
                    let (_, earlier) = recordings.remove(at);
                    earlier.finish()?;
                }
                let recording = start_recording(&mut config, name, started)?;
                recordings.push((id.to_owned(), recording));
            }
            let server = CtxServer::new(&config)?;
            Ok(ctx_mcp::streamable_http_service(server, &http))
        }))
    })
}

/// Starts recording the calls of the MCP service `config` describes, after finishing any
/// recording in its store that a dead process left.
fn start_recording(
    config: &mut McpConfig,
    name: String,
    started: i64,
) -> Result<Arc<ctx::recording::Recording>, ctx::core::BoxError> {
    let own = config.workspace_root.join(ctx::store::STORE_DIR_NAME);
    let store = ctx::store::Store::open(&config.store_dir)?;
    // A store the workspaces share keeps each one's runs apart.
    let store = if config.store_dir == own {
        store
    } else {
        store.scoped(&config.workspace_root)
    };
    let pid = std::process::id();
    let alive = |p: u32| p == pid || ctx::recording::process_alive(p);
    for recovered in ctx::recording::recover_recordings(&store, &alive)? {
        tracing::info!(
            "finished the interrupted recording `{}` ({} steps) as run {}",
            recovered.name,
            recovered.steps,
            recovered.run
        );
    }
    ctx_mcp::record::start_recording(
        config,
        store,
        ctx_mcp::record::RecordRequest {
            name,
            started,
            step_clock: Arc::new(super::select::now),
            runtime: "ctx-serve".to_owned(),
            pid,
        },
    )
    .map_err(ctx::core::BoxError::from)
}

/// Completes on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(err) => {
                tracing::warn!("cannot listen for SIGTERM: {err}");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
