//! The benches' shared corpus: real source files from the local cargo registry (the crates
//! every Rust developer has), falling back to this workspace's own sources, in path order.

use std::path::{Path, PathBuf};

fn collect(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            collect(&path, extensions, out);
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| extensions.contains(&e))
        {
            out.push(path);
        }
    }
}

/// Text documents with one of `extensions`, until at least `max_bytes` are gathered.
pub fn documents(extensions: &[&str], max_bytes: usize) -> Vec<String> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let mut files = Vec::new();
    collect(&home.join(".cargo/registry/src"), extensions, &mut files);
    if files.is_empty() {
        collect(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
            extensions,
            &mut files,
        );
    }
    let mut documents = Vec::new();
    let mut total = 0;
    for file in files {
        if let Ok(content) = std::fs::read_to_string(&file) {
            total += content.len();
            documents.push(content);
            if total >= max_bytes {
                break;
            }
        }
    }
    documents
}
