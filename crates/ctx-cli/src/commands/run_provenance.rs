//! `ctx run keygen`, `ctx run attach`, `ctx run verify`: provenance sidecars (seed 004 §6).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use ctx::runs::provenance::Outcome;

use crate::context::Context;
use crate::output::{Output, Status, Style};

/// Make an ed25519 signing key for provenance sidecars, or trust another one's public key.
///
/// The private key is stored in the store's keys/ directory, readable by you only; its public
/// key is added to the store's trusted keys and it becomes the key `ctx run attach --sign`
/// uses. Share the printed public key (or the .pub file) with whoever verifies your artifacts.
///
/// Examples:
///   ctx run keygen
///   ctx run keygen --trust ed25519:3q2+7w...=      # trust a colleague's key
///   ctx run keygen --trust ~/alice.pub
///   ctx run keygen --list --json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct KeygenArgs {
    /// Trust this public key (`ed25519:<base64>` or a .pub file) instead of making a key.
    #[arg(long, value_name = "PUBLIC_KEY", conflicts_with = "list")]
    pub trust: Option<String>,
    /// List the trusted keys and the signing key instead of making a key.
    #[arg(long)]
    pub list: bool,
}

/// Write ARTIFACT.ctx.json: an in-toto statement that run ID made ARTIFACT.
///
/// The statement's subject is the artifact's sha256; its predicate names the run, its inputs
/// and the tools it called. With --sign it is wrapped in a DSSE envelope signed with your key
/// (see `ctx run keygen`). The attachment is also recorded in the store, so `ctx run verify`
/// can check that the run lists the artifact.
///
/// Examples:
///   ctx run attach latest report.md
///   ctx run attach 3fa9c1 dist/app.tar.gz --sign
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct AttachArgs {
    /// The run: an id, a prefix of one (4+ hex digits), or a ref (`latest`, a tag).
    pub id: String,
    /// The file the run produced.
    pub artifact: PathBuf,
    /// Sign the statement (DSSE envelope, ed25519).
    #[arg(long)]
    pub sign: bool,
    /// Sign with this key id instead of the default key.
    #[arg(long, value_name = "KEYID", requires = "sign")]
    pub key: Option<String>,
}

/// Check an artifact against its provenance sidecar (ARTIFACT.ctx.json).
///
/// Checks that the artifact's sha256 is the statement's, that the signature is by a trusted
/// key (an unsigned sidecar is reported, not failed, unless --require-signature), that the run
/// is in this store, and that the run lists the artifact. Prints each check with "holds" or
/// "does not hold"; exits 1 when any does not hold, 2 on unreadable input.
///
/// Examples:
///   ctx run verify report.md
///   ctx run verify dist/app.tar.gz --require-signature --json
///   ctx run verify out.bin --trusted-key ed25519:3q2+7w...=
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct VerifyArgs {
    /// The artifact.
    pub artifact: PathBuf,
    /// The sidecar (default: ARTIFACT.ctx.json).
    #[arg(long, value_name = "FILE")]
    pub sidecar: Option<PathBuf>,
    /// Also trust this public key (`ed25519:<base64>` or a .pub file), for this check only.
    #[arg(long = "trusted-key", value_name = "PUBLIC_KEY")]
    pub trusted_keys: Vec<String>,
    /// Fail an unsigned sidecar.
    #[arg(long)]
    pub require_signature: bool,
}

pub fn keygen(args: &KeygenArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let ws = ctx.open(out)?;
    let ring = ws.run_keys()?;
    if args.list {
        let keys = ring.trusted()?;
        let default = ring.default_keyid()?;
        if out.is_json() {
            out.json(&serde_json::json!({ "signing_key": default, "trusted": keys }))?;
        } else if keys.is_empty() {
            out.line("no trusted keys; make one with `ctx run keygen`")?;
        } else {
            for key in &keys {
                let mark = if default.as_deref() == Some(key.keyid.as_str()) {
                    " (signing key)"
                } else {
                    ""
                };
                out.line(&format!(
                    "{}  {}  {}{mark}",
                    key.keyid, key.origin, key.public_key
                ))?;
            }
        }
        return Ok(Status::Success);
    }
    let info = match &args.trust {
        // A .pub file is named relative to the working directory (-C included).
        Some(key) if ctx.cwd.join(key).is_file() => {
            ring.trust(&ctx.cwd.join(key).display().to_string())?
        }
        Some(key) => ring.trust(key)?,
        None => ring.generate()?,
    };
    if out.is_json() {
        out.json(&info)?;
    } else if let Some(private) = &info.private_key_file {
        out.line(&format!("key {}", info.keyid))?;
        out.line(&format!("public key   {}", info.public_key))?;
        out.line(&format!(
            "private key  {} (owner-only; never share it)",
            private.display()
        ))?;
        out.line("trusted, and the default key for `ctx run attach --sign`")?;
    } else {
        out.line(&format!("trusted key {}", info.keyid))?;
        out.line(&format!("public key   {}", info.public_key))?;
    }
    Ok(Status::Success)
}

pub fn attach(args: &AttachArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let ws = ctx.open(out)?;
    let attachment = ws.run_attach(&args.id, &args.artifact, args.sign, args.key.as_deref())?;
    if out.is_json() {
        out.json(&serde_json::json!({
            "run": attachment.run,
            "artifact": args.artifact,
            "digest": attachment.digest,
            "sidecar": attachment.sidecar,
            "statement_object": attachment.statement_object,
            "signed_by": attachment.signed_by,
            "statement": attachment.statement,
        }))?;
    } else {
        let how = attachment
            .signed_by
            .as_deref()
            .map_or_else(|| "unsigned".to_owned(), |k| format!("signed by {k}"));
        out.line(&format!(
            "wrote {} ({how}): {} sha256:{} made by run {}",
            attachment.sidecar.display(),
            args.artifact.display(),
            attachment.digest.to_hex(),
            attachment.run
        ))?;
    }
    Ok(Status::Success)
}

pub fn verify(args: &VerifyArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let ws = ctx.open(out)?;
    let trusted = args
        .trusted_keys
        .iter()
        .map(|text| {
            let path = ctx.cwd.join(text);
            let key_text = if path.is_file() {
                let bytes = ctx::fs::input::read_named_file(&ctx.cwd, std::path::Path::new(text))
                    .map_err(|err| anyhow::anyhow!("--trusted-key {err}"))?;
                String::from_utf8_lossy(&bytes).into_owned()
            } else {
                text.clone()
            };
            Ok(key_text)
        })
        .collect::<Result<Vec<_>>>()?;
    let report = ws.run_verify(
        &args.artifact,
        args.sidecar.as_deref(),
        &trusted,
        args.require_signature,
    )?;
    if out.is_json() {
        out.json(&report)?;
    } else {
        out.line(&format!(
            "{} ({}) — run {}",
            report.artifact,
            if report.signed { "signed" } else { "unsigned" },
            report.run
        ))?;
        for check in &report.checks {
            let style = match check.outcome {
                Outcome::Holds => Style::Green,
                Outcome::DoesNotHold => Style::Red,
                Outcome::NotChecked => Style::Yellow,
            };
            out.line(&format!(
                "  {:<20} {} {}",
                check.check,
                out.paint(style, &format!("{:<14}", check.outcome.words())),
                check.detail
            ))?;
        }
        out.line(if report.verified {
            "verified"
        } else {
            "NOT verified"
        })?;
    }
    Ok(if report.verified {
        Status::Success
    } else {
        Status::Found
    })
}
