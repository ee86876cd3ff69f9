//! The fs_read request parser: any JSON value becomes an input (each operation valid or an
//! error entry) or one error for a malformed request; never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctx_fuzz::fs_read_input(data));
