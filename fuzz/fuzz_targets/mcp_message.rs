//! The MCP stdio decoder: every line is forwarded as a well-formed message, ignored (a bad
//! notification or response), or answered with a JSON-RPC error that carries the request's
//! id when it has a valid one; never a panic. Cursors (`next_cursor` passed back by an
//! agent) are parsed from the same bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctx_fuzz::mcp_message(data));
