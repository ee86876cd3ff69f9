//! `pack add` source URIs and their line ranges (`file:PATH#L10-L50`): any string either
//! parses into a spec whose paths stay inside the root, or is refused with an error; never a
//! panic. The root is a temp dir holding one file, so `file:` URIs reach the range parser.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctx_fuzz::source_uri(data));
