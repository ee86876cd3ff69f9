//! The command line, as clap sees it. Doc comments are the help text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::commands;

/// ctx: the context layer for AI coding agents.
///
/// Decides what an agent sees, proves what it saw, and records what it did.
#[derive(Debug, Parser)]
#[command(name = "ctx", version, propagate_version = true, max_term_width = 100)]
#[command(
    after_help = "Examples:\n  ctx pack . -o context.md          put this directory into one prompt\n  ctx select \"why does login fail\"  the files that matter for a question\n  ctx hook install claude-code       give Claude Code context on every prompt\n  ctx --json store verify"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command takes.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// Run as if ctx was started in DIR.
    #[arg(short = 'C', global = true, value_name = "DIR")]
    pub chdir: Option<PathBuf>,
    /// Use the store in DIR instead of discovering one.
    #[arg(long, global = true, value_name = "DIR", env = "CTX_STORE")]
    pub store: Option<PathBuf>,
    /// Keep the store's metadata or objects in a shared backend: postgres://… for the
    /// metadata, s3://BUCKET/PREFIX for the objects (repeat for both; overrides `[store]` in
    /// config.toml and CTX_STORE_METADATA / CTX_STORE_OBJECTS; AWS_* give S3 credentials).
    #[arg(long, global = true, value_name = "URL")]
    pub store_url: Vec<String>,
    /// Output format [default: human; JSON for `run show` and `run diff`].
    #[arg(long, global = true, value_enum)]
    pub format: Option<Format>,
    /// Shorthand for --format json.
    #[arg(long, global = true, conflicts_with = "compact")]
    pub json: bool,
    /// Shorthand for --format compact (one-line JSON).
    #[arg(long, global = true)]
    pub compact: bool,
    /// When to use colour (NO_COLOR is respected).
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Print only results and errors.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Log more to stderr (-v info, -vv debug, -vvv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Readable text.
    Human,
    /// Pretty JSON.
    Json,
    /// One-line JSON.
    Compact,
    /// `run export` only: OTLP-JSON spans with gen_ai.* attributes.
    #[value(hide = true)]
    Otel,
    /// `run export` only: an in-toto Statement.
    #[value(name = "in-toto", hide = true)]
    InToto,
    /// `run export` only: ctx's own run JSON (re-importable, same run id).
    #[value(hide = true)]
    Ctx,
}

/// Colour choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    Init(commands::init::InitArgs),
    /// Read and write settings.
    #[command(subcommand)]
    Config(commands::config::ConfigCommand),
    /// Check and clean the store.
    #[command(subcommand)]
    Store(commands::store::StoreCommand),
    Pack(commands::pack::PackArgs),
    Tokens(commands::tokens::TokensArgs),
    Status(commands::status::StatusArgs),
    Map(commands::map::MapArgs),
    Summarize(commands::summarize::SummarizeArgs),
    Search(commands::search::SearchArgs),
    Related(commands::related::RelatedArgs),
    DiffContext(commands::diff_context::DiffContextArgs),
    Mcp(commands::mcp::McpArgs),
    /// Document indexes: build, verify, inspect, list.
    #[command(subcommand)]
    Index(commands::index::IndexCommand),
    Select(commands::select::SelectArgs),
    Inject(commands::inject::InjectArgs),
    /// Agent hooks (Claude Code).
    #[command(subcommand)]
    Hook(commands::hook::HookCommand),
    Read(commands::read::ReadArgs),
    Serve(commands::serve::ServeArgs),
    #[command(subcommand)]
    Run(commands::run::RunCommand),
    Completions(commands::completions::CompletionsArgs),
}

/// A token count as people write it: `8000`, `8_000`, `10k`, `1.5M` (k = 1,000, M =
/// 1,000,000). Zero is refused: a budget of no tokens holds nothing.
pub fn parse_budget(text: &str) -> Result<u64, String> {
    let cleaned: String = text
        .trim()
        .chars()
        .filter(|c| *c != '_' && *c != ',')
        .collect();
    let (number, scale) = match cleaned.char_indices().last() {
        Some((at, 'k' | 'K')) => (&cleaned[..at], 1_000.0),
        Some((at, 'm' | 'M')) => (&cleaned[..at], 1_000_000.0),
        _ => (cleaned.as_str(), 1.0),
    };
    let bad = || format!("`{text}` is not a number of tokens; write it as 8000, 8k or 1.5M");
    if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    let value: f64 = number.parse().map_err(|_| bad())?;
    let tokens = value * scale;
    if !tokens.is_finite() || tokens > 1e15 || tokens.fract() != 0.0 {
        return Err(bad());
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked just above
    let tokens = tokens as u64;
    if tokens == 0 {
        return Err(
            "a budget of 0 tokens holds nothing; give at least the tokens of one file (8k is a good start)"
                .to_owned(),
        );
    }
    Ok(tokens)
}

#[cfg(test)]
mod budget_tests {
    use super::parse_budget;

    #[test]
    fn budgets_take_suffixes_and_refuse_zero() {
        for (text, want) in [
            ("8000", 8000),
            ("8_000", 8000),
            ("10k", 10_000),
            ("10K", 10_000),
            ("1.5M", 1_500_000),
            ("0.5k", 500),
            ("128000", 128_000),
        ] {
            assert_eq!(parse_budget(text), Ok(want), "{text}");
        }
        for text in ["0", "0k", "", "k", "ten", "1.5", "-5", "1e3", "2.0001k"] {
            assert!(parse_budget(text).is_err(), "{text}");
        }
        assert!(parse_budget("0").expect_err("zero").contains("8k"));
    }
}
