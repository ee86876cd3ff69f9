//! The MCP server on rmcp, over stdio and Streamable HTTP.
//!
//! The crate boundary exists so the dependency rule in ARCHITECTURE.md holds from the start;
//! its contents arrive with the issue that builds this part.
