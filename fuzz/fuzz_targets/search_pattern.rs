//! The search pattern compiler (`ctx search`, `ctx_search`): literal or regex, either case;
//! a pattern compiles or is refused with an error; never a panic. The first byte picks the
//! flags, the rest is the pattern.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctx_fuzz::search_pattern(data));
