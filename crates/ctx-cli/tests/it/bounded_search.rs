//! One search cannot take the host down: `ctx search` over a large log in which every line
//! matches keeps the first matches that fit its limit and counts the rest, with its peak
//! memory measured against a bound (before: about 28 times the bytes matched, so a 128 MiB
//! log grew the process to several gigabytes).
//!
//! The peak is the child's own (wait4 on its pid), whatever other tests run beside it.

use std::fs;
use std::io::Write as _;
use std::process::Stdio;

use crate::common::Env;

/// Bytes of log written.
const LOG_BYTES: usize = 128 << 20;
/// The most the search may hold at its peak.
const BOUND_MB: i64 = 200;

#[test]
fn a_search_over_a_large_log_stays_under_its_memory_bound() {
    let env = Env::new();
    let line = b"2026-11-27T12:00:00Z INFO request served in 3 ms by worker 7 of pool main\n";
    let lines = LOG_BYTES / line.len();
    {
        let file = fs::File::create(env.work().join("big.log")).expect("create log");
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        for _ in 0..lines {
            out.write_all(line).expect("write log");
        }
        out.flush().expect("flush log");
    }
    let answer = env.work().join("answer.json");
    let child = env
        .cmd(&["search", "INFO", "big.log", "--json"])
        .stdout(fs::File::create(&answer).expect("answer file"))
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ctx");
    let pid = libc::pid_t::try_from(child.id()).expect("pid");
    let mut status = 0;
    // wait4 is the one call that gives a child's peak memory as it is reaped.
    // SAFETY: an all-zero `rusage` is a valid value for wait4 to fill in.
    #[allow(unsafe_code)]
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for; the pointers are to live locals.
    #[allow(unsafe_code)]
    let waited = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
    assert_eq!(waited, pid, "wait4");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    let peak_mb = usage.ru_maxrss / 1024;
    assert!(
        peak_mb < BOUND_MB,
        "searching {} MiB peaked at {peak_mb} MB (bound {BOUND_MB} MB)",
        LOG_BYTES >> 20
    );
    let report: serde_json::Value =
        serde_json::from_slice(&fs::read(&answer).expect("answer")).expect("JSON answer");
    assert_eq!(report["total"], lines as u64, "every match is counted");
    assert_eq!(report["truncated"], true);
    let results = report["results"].as_array().expect("results");
    assert!(!results.is_empty());
    // The first matches, in order.
    for (i, m) in results.iter().enumerate() {
        assert_eq!(m["line"], i as u64 + 1);
    }
    drop(child);
}
