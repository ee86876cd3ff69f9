//! `ctx config get|set|unset|list`.

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use ctx::config::{self, ConfigFile};

use crate::context::Context;
use crate::output::{Output, Status, Style};

/// Read and write settings.
///
/// Precedence, highest first: flag, environment (CTX_<KEY>), project (.ctx/config.toml),
/// global ($CTX_CONFIG_HOME/config.toml, else $CTX_HOME/config.toml, else
/// ~/.config/ctx/config.toml), default.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print a setting's effective value.
    ///
    /// Example: ctx config get tokenizer
    Get(GetArgs),
    /// Set a setting in the project (or, with --global, the global) config file.
    ///
    /// Examples:
    ///   ctx config set tokenizer cl100k_base
    ///   ctx config set --global tokenizer o200k_base
    #[command(verbatim_doc_comment)]
    Set(SetArgs),
    /// Remove a setting from the project (or, with --global, the global) config file, so
    /// the next layer's value applies.
    ///
    /// Examples:
    ///   ctx config unset tokenizer
    ///   ctx config unset --global budget
    #[command(verbatim_doc_comment)]
    Unset(UnsetArgs),
    /// List every setting with its value and where it comes from.
    ///
    /// Example: ctx config list
    List(ListArgs),
}

#[derive(Debug, Args)]
pub struct GetArgs {
    /// The setting's name.
    pub key: String,
}

#[derive(Debug, Args)]
pub struct SetArgs {
    /// The setting's name.
    pub key: String,
    /// Its new value.
    pub value: String,
    /// Write the global config file instead of the project's.
    #[arg(long)]
    pub global: bool,
}

#[derive(Debug, Args)]
pub struct UnsetArgs {
    /// The setting's name.
    pub key: String,
    /// Edit the global config file instead of the project's.
    #[arg(long)]
    pub global: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {}

fn config_path(ctx: &Context, global: bool) -> Result<std::path::PathBuf> {
    if global {
        ctx.global_config_path().context(
            "cannot find the global config: set CTX_CONFIG_HOME (or CTX_HOME, XDG_CONFIG_HOME or HOME)",
        )
    } else {
        ctx.project_config_path().context(
            "no project store here to hold the setting; run `ctx init` first, or pass --global",
        )
    }
}

pub fn run(command: ConfigCommand, ctx: &Context, out: &Output) -> Result<Status> {
    match command {
        ConfigCommand::Get(args) => {
            let key = config::key(&args.key)?;
            let resolved = ctx.config_layers()?.resolve(key)?;
            if out.is_json() {
                out.json(&resolved)?;
            } else {
                out.line(&resolved.value.to_string())?;
            }
        }
        ConfigCommand::Set(args) => {
            let key = config::key(&args.key)?;
            let path = config_path(ctx, args.global)?;
            let mut file = ConfigFile::load(&path)?;
            let value = file.set(key, &args.value)?;
            if out.is_json() {
                out.json(&serde_json::json!({
                    "key": key.name, "value": value, "file": path.display().to_string()
                }))?;
            } else {
                out.line(&format!("{} = {value}  ({})", key.name, path.display()))?;
            }
        }
        ConfigCommand::Unset(args) => {
            let key = config::key(&args.key)?;
            let path = config_path(ctx, args.global)?;
            let mut file = ConfigFile::load(&path)?;
            let removed = file.unset(key)?;
            let now = ctx.config_layers()?.resolve(key)?;
            if out.is_json() {
                out.json(&serde_json::json!({
                    "key": key.name, "removed": removed, "file": path.display().to_string(),
                    "value": now.value, "source": now.source,
                }))?;
            } else if removed {
                out.line(&format!(
                    "removed {} from {}; now {} ({})",
                    key.name,
                    path.display(),
                    now.value,
                    now.source
                ))?;
            } else {
                out.line(&format!(
                    "{} was not set in {}; it is {} ({})",
                    key.name,
                    path.display(),
                    now.value,
                    now.source
                ))?;
            }
        }
        ConfigCommand::List(ListArgs {}) => {
            let all = ctx.config_layers()?.resolve_all()?;
            if out.is_json() {
                out.json(&all)?;
            } else {
                for (resolved, key) in all.iter().zip(config::KEYS) {
                    out.line(&format!(
                        "{} = {}  {}",
                        out.paint(Style::Bold, resolved.key),
                        resolved.value,
                        out.paint(Style::Dim, &format!("# {}; {}", resolved.source, key.help)),
                    ))?;
                }
            }
        }
    }
    Ok(Status::Success)
}
