//! Reading the last lines of a 1 GiB file reads a few kilobytes, not the file, and memory
//! stays flat. The measurement runs in a process of its own (this test binary, run again for
//! this one test), so the process's I/O counters and memory are this test's alone.

use std::io::{Seek, SeekFrom, Write};
use std::time::Instant;

use ctx_fs::read::{OpResult, Operation, ReadOptions, run_operation};
use ctx_fs::sandbox::Sandbox;

/// A field of /proc/self/io or /proc/self/status, in its unit (bytes or kB).
fn proc_field(file: &str, name: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/self/{file}")).expect("proc file");
    text.lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|rest| rest.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} in /proc/self/{file}"))
}

/// Set in the child process that measures.
const CHILD: &str = "CTX_TEST_LARGE_FILE_CHILD";

#[test]
fn the_tail_of_a_1_gib_file_is_read_without_reading_the_file() {
    if std::env::var_os(CHILD).is_some() {
        measure();
        return;
    }
    let module = module_path!()
        .split_once("::")
        .map_or(module_path!(), |(_, rest)| rest);
    let status = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            &format!("{module}::the_tail_of_a_1_gib_file_is_read_without_reading_the_file"),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .status()
        .expect("run the measuring process");
    assert!(status.success(), "the measuring process failed: {status}");
}

fn measure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.log");
    let mut file = std::fs::File::create(&path).expect("create");
    for i in 1..=5 {
        writeln!(file, "head line {i}").expect("write head");
    }
    // A hole of ~1 GiB (no disk, no memory), then the tail.
    file.seek(SeekFrom::Start(1 << 30)).expect("seek");
    writeln!(file).expect("end the long middle line");
    for i in 1..=1000 {
        writeln!(file, "tail line {i}").expect("write tail");
    }
    drop(file);
    let size = std::fs::metadata(&path).expect("meta").len();
    assert!(size > 1 << 30);

    let ws = Sandbox::open(dir.path()).expect("workspace");
    let options = ReadOptions::default();
    let read_before = proc_field("io", "rchar:");
    let rss_before = proc_field("status", "VmRSS:");
    let started = Instant::now();
    let tail = run_operation(
        &ws,
        &Operation::Line {
            path: "big.log".into(),
            start_line: -10,
            end_line: -1,
        },
        &options,
    )
    .expect("tail");
    let head = run_operation(
        &ws,
        &Operation::Line {
            path: "big.log".into(),
            start_line: 2,
            end_line: 3,
        },
        &options,
    )
    .expect("head");
    let elapsed = started.elapsed();
    let read = proc_field("io", "rchar:") - read_before;
    let rss_growth_kb = proc_field("status", "VmRSS:").saturating_sub(rss_before);

    let OpResult::Line(tail) = tail else {
        panic!("line result")
    };
    let want: Vec<String> = (991..=1000).map(|i| format!("tail line {i}")).collect();
    assert_eq!(tail.content, want.join("\n"));
    assert_eq!(tail.lines_returned, 10);
    assert_eq!(
        tail.total_lines, None,
        "the line count would need the whole file"
    );
    let OpResult::Line(head) = head else {
        panic!("line result")
    };
    assert_eq!(head.content, "head line 2\nhead line 3");
    assert_eq!(head.start_line, Some(2));

    assert!(read < 1 << 20, "read {read} bytes of a {size}-byte file");
    assert!(rss_growth_kb < 16 * 1024, "RSS grew by {rss_growth_kb} kB");
    assert!(elapsed.as_millis() < 2000, "took {elapsed:?}");
    // Figures for the notes (shown with --nocapture).
    let _ = std::io::stderr().write_all(
        format!("1 GiB tail+head: {elapsed:?}, {read} bytes read, RSS +{rss_growth_kb} kB\n")
            .as_bytes(),
    );
}
