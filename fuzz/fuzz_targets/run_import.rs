//! Run importers: format detection, each adapter's parser (Claude Code, OpenHands,
//! SWE-agent) on any bytes, ctx's own export format and manifest decoding, and RFC 3339
//! timestamps. Parsers never touch a store; a bad file is an error, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctx_fuzz::run_import(data));
