//! The `/tool` body decoder of `ctx serve`: any bytes become a call (workspace id and fs_read
//! input) or a 400 message; never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctx_fuzz::tool_body(data));
