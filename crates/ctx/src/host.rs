//! What a program sets up once for its process, before any workspace is opened: the
//! allocators tree-sitter and glibc use, and where git keeps the user's global excludes
//! (found from the environment the front end read).

use std::path::PathBuf;

pub use ctx_code::symbols::{limit_malloc_arenas, use_mimalloc_for_tree_sitter};

/// Where git looks for its global excludes: `$XDG_CONFIG_HOME/git/ignore` (else
/// `~/.config/git/ignore`) and `~/.gitconfig`, whose `core.excludesFile` can name another.
pub fn global_git_ignore_files(
    xdg_config_home: Option<PathBuf>,
    home: Option<PathBuf>,
) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(config) = xdg_config_home.or_else(|| home.as_ref().map(|h| h.join(".config"))) {
        files.push(config.join("git").join("ignore"));
    }
    if let Some(home) = home {
        files.push(home.join(".gitconfig"));
    }
    files
}
