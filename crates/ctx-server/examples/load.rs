//! Load generator for the HTTP tool server: N concurrent keep-alive clients send fs_read
//! requests until a total is reached, then it prints throughput, latency percentiles and
//! status counts as JSON. Only for loopback servers this process was pointed at.
//!
//! ```text
//! cargo run --profile bench -p ctx-server --example load -- \
//!     --addr 127.0.0.1:8080 --workspace repo --clients 200 --requests 20000 --mix mixed
//! ```
//!
//! `--mix line` sends small Line reads only; `mixed` cycles Line, Directory and Search.
//! `--threads N` sets the client's worker threads (default 1, leaving the other core of a
//! 2-core machine to the server).
//! Exit status 1 when any request failed (a transport error, a timeout, or a status other
//! than 200 and, with `--allow-503`, 503).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::json;

struct Args {
    addr: SocketAddr,
    workspace: String,
    clients: usize,
    requests: u64,
    mix: String,
    allow_503: bool,
    timeout: Duration,
    threads: usize,
}

fn parse_args() -> Result<Args> {
    let mut args = Args {
        addr: "127.0.0.1:8080".parse().context("default address")?,
        workspace: "repo".into(),
        clients: 200,
        requests: 20_000,
        mix: "mixed".into(),
        allow_503: false,
        timeout: Duration::from_secs(10),
        threads: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--addr" => {
                let text = value()?;
                let addr: SocketAddr = text.parse().context("--addr")?;
                if !addr.ip().is_loopback() {
                    bail!("--addr must be a loopback address, not {addr}");
                }
                args.addr = addr;
            }
            "--workspace" => args.workspace = value()?,
            "--clients" => args.clients = value()?.parse().context("--clients")?,
            "--requests" => args.requests = value()?.parse().context("--requests")?,
            "--mix" => args.mix = value()?,
            "--allow-503" => args.allow_503 = true,
            "--threads" => args.threads = value()?.parse().context("--threads")?,
            "--timeout-ms" => {
                args.timeout = Duration::from_millis(value()?.parse().context("--timeout-ms")?);
            }
            other => bail!("unknown flag {other}"),
        }
    }
    Ok(args)
}

/// The request bodies the clients cycle through.
fn bodies(workspace: &str, mix: &str) -> Vec<Bytes> {
    let line = |start: i64, end: i64| json!({"mode": "Line", "path": "small.txt", "start_line": start, "end_line": end});
    let ops = match mix {
        "line" => vec![line(1, 10), line(5, 20), line(-10, -1), line(1, -1)],
        _ => vec![
            line(1, 10),
            json!({"mode": "Directory", "path": "src", "depth": 1}),
            json!({"mode": "Search", "path": "src", "pattern": "fn ", "context_lines": 1}),
            line(-10, -1),
            json!({"mode": "Search", "path": "small.txt", "pattern": "line 4"}),
            json!({"mode": "Directory", "path": ".", "depth": 0}),
        ],
    };
    ops.into_iter()
        .map(|params| {
            Bytes::from(
                json!({"workspace": workspace, "tool": "fs_read", "params": params}).to_string(),
            )
        })
        .collect()
}

#[derive(Default)]
struct Counts {
    ok: AtomicU64,
    busy: AtomicU64,
    other_status: AtomicU64,
    failed: AtomicU64,
    timeouts: AtomicU64,
}

async fn client(
    args: Arc<Args>,
    bodies: Arc<Vec<Bytes>>,
    next: Arc<AtomicU64>,
    counts: Arc<Counts>,
    offset: usize,
) -> Vec<u32> {
    let mut latencies = Vec::new();
    let mut sender = None;
    let mut turn = offset;
    loop {
        if next.fetch_add(1, Ordering::Relaxed) >= args.requests {
            break;
        }
        if sender.is_none() {
            if let Ok(s) = connect(args.addr).await {
                sender = Some(s);
            } else {
                counts.failed.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        }
        let Some(conn) = sender.as_mut() else {
            continue;
        };
        let body = bodies[turn % bodies.len()].clone();
        turn += 1;
        let request = hyper::Request::builder()
            .method("POST")
            .uri("/tool")
            .header("host", args.addr.to_string())
            .header("content-type", "application/json")
            .body(Full::new(body))
            .expect("request builds");
        let started = Instant::now();
        let outcome = tokio::time::timeout(args.timeout, async {
            let response = conn.send_request(request).await?;
            let status = response.status().as_u16();
            let bytes = response.into_body().collect().await?.to_bytes();
            Ok::<_, hyper::Error>((status, bytes))
        })
        .await;
        let micros = u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX);
        match outcome {
            Ok(Ok((200, bytes))) => {
                if memchr_success(&bytes) {
                    counts.ok.fetch_add(1, Ordering::Relaxed);
                } else {
                    counts.other_status.fetch_add(1, Ordering::Relaxed);
                }
                latencies.push(micros);
            }
            Ok(Ok((503, _))) => {
                counts.busy.fetch_add(1, Ordering::Relaxed);
                latencies.push(micros);
            }
            Ok(Ok(_)) => {
                counts.other_status.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Err(_)) => {
                counts.failed.fetch_add(1, Ordering::Relaxed);
                sender = None;
            }
            Err(_) => {
                counts.timeouts.fetch_add(1, Ordering::Relaxed);
                sender = None;
            }
        }
    }
    latencies
}

fn memchr_success(bytes: &[u8]) -> bool {
    bytes.windows(14).any(|w| w == b"\"success\":true")
}

async fn connect(addr: SocketAddr) -> Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>> {
    let stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    Ok(sender)
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    f64::from(sorted[index.min(sorted.len() - 1)]) / 1000.0
}

fn main() -> Result<()> {
    let args = Arc::new(parse_args()?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
        .context("runtime")?;
    runtime.block_on(async {
        let bodies = Arc::new(bodies(&args.workspace, &args.mix));
        let next = Arc::new(AtomicU64::new(0));
        let counts = Arc::new(Counts::default());
        let started = Instant::now();
        let tasks: Vec<_> = (0..args.clients)
            .map(|i| {
                tokio::spawn(client(
                    Arc::clone(&args),
                    Arc::clone(&bodies),
                    Arc::clone(&next),
                    Arc::clone(&counts),
                    i,
                ))
            })
            .collect();
        let mut latencies = Vec::new();
        for task in tasks {
            latencies.extend(task.await.context("client task")?);
        }
        let elapsed = started.elapsed().as_secs_f64();
        latencies.sort_unstable();
        let ok = counts.ok.load(Ordering::Relaxed);
        let busy = counts.busy.load(Ordering::Relaxed);
        let other = counts.other_status.load(Ordering::Relaxed);
        let failed = counts.failed.load(Ordering::Relaxed);
        let timeouts = counts.timeouts.load(Ordering::Relaxed);
        let errors = other + failed + timeouts + if args.allow_503 { 0 } else { busy };
        let report = json!({
            "mix": args.mix,
            "clients": args.clients,
            "requests": ok + busy + other + failed + timeouts,
            "seconds": (elapsed * 1000.0).round() / 1000.0,
            "throughput_rps": ((ok + busy) as f64 / elapsed).round(),
            "ok": ok,
            "status_503": busy,
            "other_status": other,
            "transport_errors": failed,
            "timeouts": timeouts,
            "errors": errors,
            "latency_ms": {
                "p50": percentile(&latencies, 0.50),
                "p90": percentile(&latencies, 0.90),
                "p99": percentile(&latencies, 0.99),
                "max": percentile(&latencies, 1.0),
            },
        });
        let mut out = serde_json::to_string_pretty(&report).context("report")?;
        out.push('\n');
        std::io::Write::write_all(&mut std::io::stdout(), out.as_bytes()).context("stdout")?;
        if errors > 0 {
            std::process::exit(1);
        }
        Ok(())
    })
}
