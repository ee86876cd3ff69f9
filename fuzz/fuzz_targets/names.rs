//! Pack and index names: the validators accept exactly letters, digits, `.`, `_`, `-`,
//! starting with a letter or digit, at most 100 bytes; never a panic, and no accepted name
//! can name a path outside its directory.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctx_fuzz::names(data));
