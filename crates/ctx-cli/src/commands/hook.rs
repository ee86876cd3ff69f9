//! `ctx hook`: agent hooks. `ctx hook claude-code` answers Claude Code's hook protocol;
//! `ctx hook install claude-code` wires it (and the MCP server) into the project;
//! `ctx hook uninstall claude-code` takes it out again.

use std::io::{Read as _, Write as _};

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};

use crate::context::Context;
use crate::output::{Output, Status, Style};

/// Agent hooks.
#[derive(Debug, Subcommand)]
pub enum HookCommand {
    ClaudeCode(ClaudeCodeArgs),
    Install(InstallArgs),
    Uninstall(UninstallArgs),
    /// Builds the index a hook found missing, in the background (started by the hook).
    #[command(hide = true)]
    IndexWorker,
}

/// Answer a Claude Code hook: reads its JSON on stdin (UserPromptSubmit or SessionStart)
/// and prints {"hookSpecificOutput":{"hookEventName":…,"additionalContext":…}}, or {} when
/// it has nothing to add.
///
/// It answers for the session's `cwd` (from the input), and only inside a project (a
/// directory with .git or .ctx, not your home or /). It stays silent on small talk and
/// instructions that name no code ("thanks", "run the tests"). Its whole output stays
/// under hook.max_chars characters (default 9000; Claude Code sets larger output aside),
/// with fences closed and a last line naming what was left out. It returns within
/// hook.deadline_ms (default 5000): an index not built yet is built in the background and
/// used from a later prompt on. It never blocks the prompt: on any problem it prints
/// nothing, notes the problem on stderr and exits 0.
///
/// Examples:
///   echo '{"hook_event_name":"UserPromptSubmit","prompt":"where are redirects followed?","cwd":"'$PWD'"}' | ctx hook claude-code
///   ctx config set hook.deadline_ms 3000
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ClaudeCodeArgs {
    /// Token budget for a prompt's context.
    #[arg(long, value_name = "N", value_parser = crate::args::parse_budget, default_value_t = 2000)]
    pub budget: u64,
}

/// Install ctx's hooks into .claude/settings.json and its MCP server into .mcp.json (in the
/// project root), keeping every existing entry; running it again changes nothing. With
/// --local the hooks go to your own .claude/settings.local.json and .mcp.json is left alone.
///
/// Examples:
///   ctx hook install claude-code
///   ctx hook install claude-code --local
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct InstallArgs {
    /// The agent.
    #[arg(value_enum)]
    pub agent: Agent,
    /// The command the hooks and the MCP server run.
    #[arg(long, value_name = "CMD", default_value = "ctx")]
    pub command: String,
    /// Write .claude/settings.local.json (yours, not shared with the team) instead.
    #[arg(long)]
    pub local: bool,
}

/// Remove ctx's hooks from .claude/settings.json and .claude/settings.local.json and its MCP
/// server from .mcp.json, keeping every other entry.
///
/// Examples:
///   ctx hook uninstall claude-code
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct UninstallArgs {
    /// The agent.
    #[arg(value_enum)]
    pub agent: Agent,
    /// The command the hooks and the MCP server were installed with.
    #[arg(long, value_name = "CMD", default_value = "ctx")]
    pub command: String,
}

/// Agents with hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Agent {
    ClaudeCode,
}

pub fn run(cmd: &HookCommand, ctx: &Context, out: &Output) -> Result<Status> {
    match cmd {
        HookCommand::ClaudeCode(args) => {
            match answer(args, ctx, out) {
                Ok(json) => {
                    answer_once(&json);
                }
                Err(err) => out.warn(&format!(
                    "ctx hook: {err:#} (the prompt goes on without context)"
                )),
            }
            Ok(Status::Success)
        }
        HookCommand::IndexWorker => {
            index_worker(ctx, out)?;
            Ok(Status::Success)
        }
        HookCommand::Uninstall(args) => {
            let report = ctx
                .workspace()?
                .uninstall_claude_code(&commands(&args.command))?;
            if out.is_json() {
                let files: Vec<_> = report
                    .iter()
                    .map(|(path, changed)| serde_json::json!({ "path": path, "changed": changed }))
                    .collect();
                out.json(&serde_json::json!({ "files": files }))?;
                return Ok(Status::Success);
            }
            if report.iter().all(|(_, changed)| !changed) {
                out.line("ctx's Claude Code hooks are not installed here; nothing changed")?;
            }
            for (path, _) in report.iter().filter(|(_, changed)| *changed) {
                out.line(&format!(
                    "{} {}",
                    out.paint(Style::Green, "removed ctx from"),
                    path.display()
                ))?;
            }
            Ok(Status::Success)
        }
        HookCommand::Install(args) => {
            let report = ctx
                .workspace()?
                .install_claude_code(&commands(&args.command), args.local)?;
            if out.is_json() {
                out.json(&report)?;
                return Ok(Status::Success);
            }
            let mut files = vec![(&report.settings_path, report.settings_changed)];
            if !args.local {
                files.push((&report.mcp_path, report.mcp_changed));
            }
            for (path, changed) in files {
                let state = if changed {
                    out.paint(Style::Green, "updated")
                } else {
                    out.paint(Style::Dim, "already set up")
                };
                out.line(&format!("{state} {}", path.display()))?;
            }
            if args.local {
                out.note("with --local, .mcp.json is left alone; add the MCP server for yourself with `claude mcp add ctx -- ctx mcp`");
            }
            Ok(Status::Success)
        }
    }
}

/// Whether the hook's answer has been printed (by the command or by its deadline).
static ANSWERED: std::sync::Mutex<bool> = std::sync::Mutex::new(false);

/// Prints the hook's answer unless the deadline already answered; `false` when it had.
fn answer_once(json: &str) -> bool {
    let mut answered = ANSWERED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if *answered {
        return false;
    }
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{json}");
    let _ = stdout.flush();
    *answered = true;
    true
}

/// A prompt starts a refresh of the index when the last background build ran longer ago
/// than this (each refresh walks the tree).
const REFRESH_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Hook input larger than this is refused (a prompt is a few KiB).
const MAX_INPUT_BYTES: u64 = 4 << 20;

fn answer(args: &ClaudeCodeArgs, ctx: &Context, out: &Output) -> Result<String> {
    let mut text = String::new();
    std::io::stdin()
        .take(MAX_INPUT_BYTES)
        .read_to_string(&mut text)?;
    let input = ctx::hooks::parse_hook_input(&text)?;
    // The session's directory, as Claude Code gives it; else where the hook was started.
    let dir = match input.cwd.as_deref().map(std::path::Path::new) {
        Some(cwd) if cwd.is_absolute() && cwd.is_dir() => cwd.to_path_buf(),
        Some(cwd) => anyhow::bail!(
            "the hook input's cwd `{}` is not an existing absolute directory",
            cwd.display()
        ),
        None => ctx.cwd.clone(),
    };
    let Some(project) = ctx::hooks::hook_project(&dir, ctx.home()) else {
        out.note(&format!(
            "hook: {} is not inside a project (no .git or .ctx above it, or it is your home or /); no context",
            dir.display()
        ));
        return Ok("{}".to_owned());
    };
    let ctx = ctx.with_cwd(dir.clone());
    let ws = ctx.workspace()?;
    let layers = ws.config();
    let limits = ctx::select::HookLimits {
        budget: args.budget,
        max_chars: usize::try_from(layers.count("hook.max_chars")?).unwrap_or(usize::MAX),
    };
    let deadline = std::time::Duration::from_millis(layers.count("hook.deadline_ms")?);
    let started = std::time::Instant::now();
    Context::store(&ws, out)?;
    let worker = Worker::new(&ctx, ws.hook_log()?);
    if matches!(input.event, ctx::select::HookEvent::SessionStart { .. }) {
        // A session start needs no index, but warms it for the prompts to come.
        if ws.hook_readiness()? == ctx::select::IndexReadiness::Missing {
            let _ = worker.spawn();
        }
        let answer = ws.hook_answer_without_index(&input, limits)?;
        return Ok(serde_json::to_string(&answer)?);
    }
    // A cold index is built by a detached worker; the hook waits for it until its deadline
    // (a small project is indexed in well under a second), else answers without it.
    let mut spawned: Option<std::process::Child> = None;
    loop {
        let readiness = ws.hook_readiness()?;
        match readiness {
            ctx::select::IndexReadiness::Ready => break,
            ctx::select::IndexReadiness::Missing if spawned.is_none() => {
                spawned = worker.spawn();
                if spawned.is_none() {
                    anyhow::bail!("could not start the background index build");
                }
            }
            _ => {}
        }
        let gave_up = spawned.as_mut().is_some_and(|child| {
            readiness == ctx::select::IndexReadiness::Missing
                && matches!(child.try_wait(), Ok(Some(_)))
        });
        if gave_up || started.elapsed() >= deadline {
            out.note(&format!(
                "hook: the index of {} is {}; context from a later prompt on (the background build's log: {})",
                project.display(),
                if gave_up {
                    "not built (see the log)"
                } else {
                    "being built"
                },
                worker.log.display()
            ));
            let answer = ws.hook_answer_without_index(&input, limits)?;
            return Ok(serde_json::to_string(&answer)?);
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    // The answer comes from the index as built, without a walk of the tree; a worker then
    // brings it up to date for the next prompt (it ends at once if one is running). Past the
    // deadline (a swap held up, a huge selection) a watchdog answers with nothing and ends
    // the process.
    let remaining = deadline.saturating_sub(started.elapsed());
    let note_dir = project.display().to_string();
    std::thread::spawn(move || {
        std::thread::sleep(remaining);
        let answered = ANSWERED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !*answered {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{{}}");
            let _ = stdout.flush();
            let _ = writeln!(
                std::io::stderr(),
                "ctx: hook: {note_dir}: no answer within the hook's deadline ({} ms, hook.deadline_ms)",
                deadline.as_millis()
            );
            std::process::exit(0);
        }
    });
    let value = ws.hook_answer(&input, limits, ctx::select::IndexUpdate::Elsewhere)?;
    let json = serde_json::to_string(&value)?;
    if spawned.is_none() && ctx::hooks::refresh_due(&worker.log, REFRESH_EVERY) {
        // Printed now, so Claude Code is not kept waiting for the refresh to start.
        answer_once(&json);
        let _ = worker.spawn();
    }
    Ok(serde_json::to_string(&value)?)
}

/// How to start the background index build for the hook's project.
struct Worker {
    exe: Option<std::path::PathBuf>,
    dir: std::path::PathBuf,
    store: Option<std::path::PathBuf>,
    log: std::path::PathBuf,
}

impl Worker {
    fn new(ctx: &Context, log: std::path::PathBuf) -> Self {
        Self {
            exe: std::env::current_exe().ok(),
            dir: ctx.cwd.clone(),
            store: ctx.explicit_store().map(std::path::Path::to_path_buf),
            log,
        }
    }

    /// Starts `ctx hook index-worker` detached (its own process group, no terminal, output to
    /// a log beside the index), so the hook can return before it ends and Claude Code does
    /// not wait for it. A worker started while another runs ends at once (it takes a lock).
    fn spawn(&self) -> Option<std::process::Child> {
        use std::os::unix::process::CommandExt as _;
        let exe = self.exe.as_ref()?;
        let log = ctx::hooks::open_background_log(&self.log).ok();
        let mut command = std::process::Command::new(exe);
        command.arg("-C").arg(&self.dir);
        if let Some(store) = &self.store {
            command.arg("--store").arg(store);
        }
        command
            .args(["hook", "index-worker"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(log.map_or_else(std::process::Stdio::null, std::process::Stdio::from))
            .process_group(0);
        command.spawn().ok()
    }
}

/// Bytes of files a hook's background build reads at most.
const WORKER_MAX_BYTES: u64 = 4 << 30;

/// `ctx hook index-worker`: builds (or updates) the workspace index for the hook, unless
/// another worker holds the lock or the tree is larger than `hook.max_files` files (or 4 GiB),
/// which it says in its log (the hook starts it again at a later prompt: counting stops at
/// the bound, so that costs little).
fn index_worker(ctx: &Context, out: &Output) -> Result<()> {
    let ws = ctx.workspace()?;
    Context::store(&ws, out)?;
    let Some(_lock) = ws.claim_background_build()? else {
        out.note("another background build of this index is running");
        return Ok(());
    };
    let max_files = ws.config().count("hook.max_files")?;
    let size = ws.tree_size(max_files, WORKER_MAX_BYTES)?;
    if size.over {
        out.note(&format!(
            "{} has more than {max_files} files or {WORKER_MAX_BYTES} bytes (stopped counting at {} files, {} bytes); the hook does not index it: run `ctx index build` there, or raise hook.max_files",
            ws.index_root().display(),
            size.files,
            size.bytes
        ));
        return Ok(());
    }
    let report = ws.index_update(&ctx::core::NoProgress)?;
    out.note(&format!(
        "index {}: {} documents ({} read, {} reused, {} removed)",
        report.name, report.documents, report.read, report.reused, report.removed
    ));
    Ok(())
}

/// The command lines Claude Code runs for ctx installed as `program`: the hooks run
/// `PROGRAM hook claude-code`, the MCP server `PROGRAM mcp`.
fn commands(program: &str) -> ctx::select::HookCommands {
    ctx::select::HookCommands {
        hook: format!("{program} hook claude-code"),
        mcp_program: program.to_owned(),
        mcp_args: vec!["mcp".to_owned()],
    }
}
