//! `ctx config get|set|list`.

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use ctx::config::{self, ConfigFile};

use crate::context::Context;
use crate::output::{Output, Status, Style};

/// Read and write settings.
///
/// Precedence, highest first: flag, environment (CTX_<KEY>), project (.ctx/config.toml),
/// global (~/.config/ctx/config.toml), default.
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
    /// List every setting with its value and where it comes from.
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
pub struct ListArgs {}

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
            let path = if args.global {
                ctx.global_config_path().context(
                    "cannot find the global config: neither XDG_CONFIG_HOME nor HOME is set",
                )?
            } else {
                ctx.project_config_path().context(
                    "no project store here to hold the setting; run `ctx init` first, or pass --global",
                )?
            };
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
