//! The HTTP tool server (axum): /tool, /health, /mcp.
//!
//! The crate boundary exists so the dependency rule in ARCHITECTURE.md holds from the start;
//! its contents arrive with the issue that builds this part.
