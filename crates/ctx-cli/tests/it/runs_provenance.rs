//! `ctx run keygen`, `ctx run attach`, `ctx run verify`: good artifacts (signed and unsigned),
//! a modified artifact, forged sidecars, a key that is not trusted, a run missing from the
//! store, and bad input.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::Stdio;

use crate::common::{Env, write_files};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

/// Records a run named `name` in the store of `dir` (relative to the work dir) with two calls.
fn record_run(env: &Env, dir: &str, name: &str) {
    let mut child = env
        .cmd(&["-C", dir, "mcp", "--record", name])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ctx mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "fs_read", "arguments": {"operations": [{"mode": "Line", "path": "input.txt"}]}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ctx_search", "arguments": {"pattern": "needle"}}}),
    ];
    for message in &messages {
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
        if message.get("id").is_some() {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).expect("read") > 0);
        }
    }
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A project with a recorded run `build` and an artifact `report.md`.
fn fixture() -> Env {
    let env = Env::new();
    write_files(
        &env.work(),
        &[
            ("input.txt", "a needle in a haystack\n"),
            ("report.md", "# Report\n\nThe needle was found.\n"),
        ],
    );
    env.run(&["init"]).ok();
    record_run(&env, ".", "build");
    env
}

fn checks(report: &Value) -> Vec<(String, String)> {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            (
                c["check"].as_str().expect("check").to_owned(),
                c["outcome"].as_str().expect("outcome").to_owned(),
            )
        })
        .collect()
}

fn outcome_of(report: &Value, check: &str) -> String {
    checks(report)
        .into_iter()
        .find(|(name, _)| name == check)
        .map_or_else(
            || panic!("no check {check} in {report}"),
            |(_, outcome)| outcome,
        )
}

fn sidecar(env: &Env) -> Value {
    let text = std::fs::read_to_string(env.work().join("report.md.ctx.json")).expect("sidecar");
    serde_json::from_str(&text).expect("sidecar JSON")
}

fn write_sidecar(env: &Env, value: &Value) {
    std::fs::write(
        env.work().join("report.md.ctx.json"),
        serde_json::to_vec_pretty(value).expect("json"),
    )
    .expect("write sidecar");
}

#[test]
fn unsigned_artifact_verifies() {
    let env = fixture();
    let attach = env.run(&["run", "attach", "build", "report.md", "--json"]);
    attach.ok();
    let statement = sidecar(&env);
    assert_eq!(statement["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(statement["predicateType"], "ctx://predicate/run/v1");
    assert_eq!(statement["subject"][0]["name"], "report.md");
    let digest = statement["subject"][0]["digest"]["sha256"]
        .as_str()
        .expect("digest");
    assert_eq!(digest.len(), 64);
    assert_eq!(
        statement["predicate"]["tools"],
        json!(["ctx_search", "fs_read"])
    );
    // The file the session read is the run's input, with its sha256.
    let inputs = &statement["predicate"]["inputs"];
    assert_eq!(inputs[0]["name"], "input.txt", "{statement}");
    assert_eq!(inputs.as_array().map(Vec::len), Some(1), "{statement}");
    let input_digest = inputs[0]["digest"]["sha256"]
        .as_str()
        .expect("input digest");
    assert_eq!(
        input_digest,
        ctx::core::ContentHash::of(b"a needle in a haystack\n").to_hex()
    );
    assert_eq!(
        attach.json()["run"],
        env.run(&["run", "show", "build", "--json"]).json()["run"]["id"]
    );

    let verify = env.run(&["run", "verify", "report.md", "--json"]);
    verify.ok();
    let report = verify.json();
    assert_eq!(report["verified"], true, "{report}");
    assert_eq!(
        checks(&report),
        [
            ("artifact_digest".to_owned(), "holds".to_owned()),
            ("signature".to_owned(), "not_checked".to_owned()),
            ("run_in_store".to_owned(), "holds".to_owned()),
            ("run_lists_artifact".to_owned(), "holds".to_owned()),
        ]
    );
    // Human output says what holds.
    let human = env.run(&["run", "verify", "report.md"]);
    human.ok();
    assert!(human.stdout.contains("run_in_store"), "{}", human.stdout);
    assert!(human.stdout.contains("holds"), "{}", human.stdout);
    assert!(human.stdout.trim_end().ends_with("verified"));

    // --require-signature fails an unsigned sidecar.
    let strict = env.run(&[
        "run",
        "verify",
        "report.md",
        "--require-signature",
        "--json",
    ]);
    assert_eq!(strict.code, 1);
    assert_eq!(outcome_of(&strict.json(), "signature"), "does_not_hold");

    // The attachment is a store object under a ref: the store still verifies.
    env.run(&["store", "verify"]).ok();
}

#[test]
fn signed_artifact_verifies_and_the_key_is_private() {
    let env = fixture();
    let keygen = env.run(&["run", "keygen", "--json"]);
    keygen.ok();
    let key = keygen.json();
    let keyid = key["keyid"].as_str().expect("keyid").to_owned();
    let private = key["private_key_file"].as_str().expect("private key file");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(private)
            .expect("key")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    let listed = env.run(&["run", "keygen", "--list", "--json"]);
    listed.ok();
    assert_eq!(listed.json()["signing_key"], keyid.as_str());

    env.run(&["run", "attach", "build", "report.md", "--sign"])
        .ok();
    let envelope = sidecar(&env);
    assert_eq!(envelope["payloadType"], "application/vnd.in-toto+json");
    assert_eq!(envelope["signatures"][0]["keyid"], keyid.as_str());
    let payload = BASE64
        .decode(envelope["payload"].as_str().expect("payload"))
        .expect("base64");
    let statement: Value = serde_json::from_slice(&payload).expect("statement");
    assert_eq!(statement["_type"], "https://in-toto.io/Statement/v1");

    let verify = env.run(&[
        "run",
        "verify",
        "report.md",
        "--json",
        "--require-signature",
    ]);
    verify.ok();
    let report = verify.json();
    assert_eq!(report["signed"], true);
    assert!(
        checks(&report).iter().all(|(_, o)| o == "holds"),
        "{report}"
    );
}

#[test]
fn modified_artifact_does_not_verify() {
    let env = fixture();
    env.run(&["run", "keygen"]).ok();
    env.run(&["run", "attach", "build", "report.md", "--sign"])
        .ok();
    std::fs::write(env.work().join("report.md"), "# Report\n\nNo needle.\n").expect("edit");
    let verify = env.run(&["run", "verify", "report.md", "--json"]);
    assert_eq!(verify.code, 1, "{}", verify.stderr);
    let report = verify.json();
    assert_eq!(report["verified"], false);
    assert_eq!(outcome_of(&report, "artifact_digest"), "does_not_hold");
    // The signature and the run are still good: only the artifact changed.
    assert_eq!(outcome_of(&report, "signature"), "holds");
    assert_eq!(outcome_of(&report, "run_in_store"), "holds");
    assert_eq!(outcome_of(&report, "run_lists_artifact"), "holds");
    let human = env.run(&["run", "verify", "report.md"]);
    assert_eq!(human.code, 1);
    assert!(human.stdout.contains("does not hold"), "{}", human.stdout);
    assert!(human.stdout.contains("NOT verified"), "{}", human.stdout);
}

#[test]
fn forged_sidecars_do_not_verify() {
    // Signed: edit the predicate inside the payload, keep the signature.
    let env = fixture();
    env.run(&["run", "keygen"]).ok();
    env.run(&["run", "attach", "build", "report.md", "--sign"])
        .ok();
    let mut envelope = sidecar(&env);
    let payload = BASE64
        .decode(envelope["payload"].as_str().expect("payload"))
        .expect("base64");
    let mut statement: Value = serde_json::from_slice(&payload).expect("statement");
    statement["predicate"]["tools"] = json!(["ctx_search"]);
    envelope["payload"] = json!(BASE64.encode(serde_json::to_vec(&statement).expect("json")));
    write_sidecar(&env, &envelope);
    let verify = env.run(&["run", "verify", "report.md", "--json"]);
    assert_eq!(verify.code, 1, "{}", verify.stderr);
    let report = verify.json();
    assert_eq!(
        outcome_of(&report, "signature"),
        "does_not_hold",
        "{report}"
    );
    assert_eq!(outcome_of(&report, "run_lists_artifact"), "does_not_hold");

    // Unsigned: the edited statement is not the one recorded at attach.
    let env = fixture();
    env.run(&["run", "attach", "build", "report.md"]).ok();
    let mut statement = sidecar(&env);
    statement["predicate"]["inputs"] = json!([{"name": "secret.txt", "digest": {"sha256": "00"}}]);
    write_sidecar(&env, &statement);
    let verify = env.run(&["run", "verify", "report.md", "--json"]);
    assert_eq!(verify.code, 1);
    let report = verify.json();
    assert_eq!(outcome_of(&report, "artifact_digest"), "holds");
    assert_eq!(outcome_of(&report, "run_lists_artifact"), "does_not_hold");
}

#[test]
fn a_key_that_is_not_trusted_does_not_verify() {
    let env = fixture();
    // Someone else's key: made in another store, its private key copied here but never trusted.
    std::fs::create_dir_all(env.root.join("other")).expect("mkdir");
    env.run(&["-C", "../other", "init"]).ok();
    let other = env.run(&["-C", "../other", "run", "keygen", "--json"]);
    other.ok();
    let other = other.json();
    let keyid = other["keyid"].as_str().expect("keyid");
    let keys = env.work().join(".ctx/keys");
    std::fs::create_dir_all(&keys).expect("keys dir");
    let private = Path::new(other["private_key_file"].as_str().expect("file"));
    std::fs::copy(private, keys.join(format!("{keyid}.key"))).expect("copy key");

    env.run(&[
        "run",
        "attach",
        "build",
        "report.md",
        "--sign",
        "--key",
        keyid,
    ])
    .ok();
    let verify = env.run(&["run", "verify", "report.md", "--json"]);
    assert_eq!(verify.code, 1, "{}", verify.stderr);
    let report = verify.json();
    assert_eq!(outcome_of(&report, "signature"), "does_not_hold");
    let detail = report["checks"][1]["detail"].as_str().expect("detail");
    assert!(detail.contains("not trusted"), "{detail}");

    // Trusting its public key for one check, or for good, makes it verify.
    let public = other["public_key_file"].as_str().expect("pub file");
    env.run(&["run", "verify", "report.md", "--trusted-key", public])
        .ok();
    std::fs::copy(public, env.work().join("alice.pub")).expect("copy pub");
    let trusted = env.run(&["run", "keygen", "--trust", "alice.pub", "--json"]);
    trusted.ok();
    assert_eq!(trusted.json()["keyid"], keyid);
    let listed = env.run(&["run", "keygen", "--list", "--json"]).json();
    assert_eq!(listed["trusted"][0]["origin"], "trusted", "{listed}");
    env.run(&["run", "verify", "report.md"]).ok();
    // The same key given as text is the same key.
    let public_text = other["public_key"].as_str().expect("public key");
    let again = env.run(&["run", "keygen", "--trust", public_text, "--json"]);
    assert_eq!(again.json()["keyid"], keyid);
}

#[test]
fn a_run_missing_from_the_store_does_not_verify() {
    let env = fixture();
    env.run(&["run", "attach", "build", "report.md"]).ok();
    // The artifact and its sidecar, taken to a project whose store never saw the run.
    let other = env.root.join("other");
    std::fs::create_dir_all(&other).expect("mkdir");
    for name in ["report.md", "report.md.ctx.json"] {
        std::fs::copy(env.work().join(name), other.join(name)).expect("copy");
    }
    env.run(&["-C", "../other", "init"]).ok();
    let verify = env.run(&["-C", "../other", "run", "verify", "report.md", "--json"]);
    assert_eq!(verify.code, 1, "{}", verify.stderr);
    let report = verify.json();
    assert_eq!(outcome_of(&report, "artifact_digest"), "holds");
    assert_eq!(outcome_of(&report, "run_in_store"), "does_not_hold");
    assert_eq!(outcome_of(&report, "run_lists_artifact"), "does_not_hold");
}

#[test]
fn bad_input_exits_2() {
    let env = fixture();
    env.run(&["run", "verify", "missing.md"])
        .bad_input("missing.md");
    // No sidecar yet.
    env.run(&["run", "verify", "report.md"])
        .bad_input("report.md.ctx.json");
    std::fs::write(env.work().join("report.md.ctx.json"), "not json {").expect("write");
    env.run(&["run", "verify", "report.md"])
        .bad_input("not JSON");
    std::fs::write(env.work().join("report.md.ctx.json"), "{\"_type\": \"x\"}").expect("write");
    env.run(&["run", "verify", "report.md"])
        .bad_input("not an in-toto statement");
    env.run(&["run", "attach", "build", "missing.md"])
        .bad_input("missing.md");
    env.run(&["run", "attach", "no-such-run", "report.md"])
        .bad_input("no-such-run");
    env.run(&["run", "attach", "build", "report.md", "--sign"])
        .bad_input("ctx run keygen");
    env.run(&["run", "keygen", "--trust", "ed25519:AAAA"])
        .bad_input("not an ed25519 public key");
    env.run(&["run", "verify", "report.md", "--trusted-key", "nonsense"])
        .bad_input("not an ed25519 public key");
}
