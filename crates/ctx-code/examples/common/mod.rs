//! What the examples share: the source files of a tree as a summary sees them.

use std::path::Path;

use ctx_code::Language;

/// Every file under `dir` a summary would parse (walked as ctx walks, in a supported
/// language, at most 8 MiB, not binary), with its language and bytes.
pub fn source_files(dir: &str) -> Vec<(String, Language, Vec<u8>)> {
    let entries = ctx_fs::walk(Path::new(dir), &ctx_fs::WalkOptions::default()).expect("walk");
    entries
        .iter()
        .filter(|e| !e.is_dir)
        .filter_map(|entry| {
            let lang = Language::from_path(Path::new(&entry.rel))?;
            let bytes = std::fs::read(&entry.path).ok()?;
            if bytes.len() > 8 << 20 || ctx_code::summary::is_binary(&bytes) {
                return None;
            }
            let lang = Language::detect(Path::new(&entry.rel), &bytes).unwrap_or(lang);
            Some((entry.rel.clone(), lang, bytes))
        })
        .collect()
}
