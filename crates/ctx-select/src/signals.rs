//! Seed 001's relevance signals that look at paths and the query text: a full path or a file
//! name mentioned in the query, and file types the query names ("the rust tests", "docs").

/// Words that name a file type, and the file-name endings they mean.
const FILE_TYPES: &[(&[&str], &[&str])] = &[
    (&["rust"], &[".rs"]),
    (&["python", "py"], &[".py", ".pyi"]),
    (
        &["javascript", "js", "node"],
        &[".js", ".mjs", ".cjs", ".jsx"],
    ),
    (&["typescript", "ts"], &[".ts", ".tsx", ".mts"]),
    (&["go", "golang"], &[".go"]),
    (&["java"], &[".java"]),
    (&["cpp", "c++"], &[".cc", ".cpp", ".cxx", ".hpp", ".hh"]),
    (
        &["markdown", "doc", "docs", "documentation", "readme"],
        &[".md", ".rst", ".txt"],
    ),
    (&["toml", "cargo"], &[".toml"]),
    (&["yaml", "yml"], &[".yml", ".yaml"]),
    (&["json"], &[".json"]),
    (&["shell", "bash", "script"], &[".sh", ".bash"]),
    (&["css", "style", "stylesheet"], &[".css", ".scss"]),
    (&["html", "template"], &[".html", ".htm"]),
    (&["sql", "migration"], &[".sql"]),
    (&["test", "tests", "testing", "spec"], &["test", "spec"]),
];

/// The file-name patterns of the types the query names.
pub fn file_types_named(terms: &[String], raw_lower: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (words, endings) in FILE_TYPES {
        let named = words
            .iter()
            .any(|w| terms.iter().any(|t| t == w) || (w.contains('+') && raw_lower.contains(w)));
        if named {
            out.extend_from_slice(endings);
        }
    }
    out
}

/// Whether `id` is of one of `types` (an ending, or for tests a path part).
pub fn has_named_type(types: &[&str], id: &str) -> bool {
    types.iter().any(|t| {
        if t.starts_with('.') {
            id.ends_with(t)
        } else {
            id.split(['/', '_', '.', '-'])
                .any(|part| part == *t || part == format!("{t}s"))
        }
    })
}

/// 2 when the query names `id` by path (whole, or a suffix of two or more components), 1
/// when it names its file name (`walk.rs`), 0 otherwise. Matches must stand alone: not
/// inside a longer name.
pub fn mention(query: &str, id: &str) -> u8 {
    if contains_bounded(query, id) {
        return 2;
    }
    let mut rest = id;
    while let Some((_, tail)) = rest.split_once('/') {
        if tail.contains('/') && contains_bounded(query, tail) {
            return 2;
        }
        rest = tail;
    }
    let name = id.rsplit('/').next().unwrap_or(id);
    if name.len() >= 3
        && name.contains('.')
        && !name.starts_with('.')
        && contains_bounded(query, name)
    {
        return 1;
    }
    0
}

fn contains_bounded(haystack: &str, needle: &str) -> bool {
    if needle.is_empty() || needle.len() > haystack.len() {
        return false;
    }
    let is_name_char = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    let mut from = 0;
    while let Some(pos) = haystack[from..].find(needle) {
        let start = from + pos;
        let end = start + needle.len();
        let before = haystack[..start].chars().next_back();
        let after = haystack[end..].chars().next();
        // A trailing sentence dot after a name is not part of it.
        let after_ok = match after {
            None => true,
            Some('.') => haystack[end + 1..]
                .chars()
                .next()
                .is_none_or(|c| !is_name_char(c)),
            Some(c) => !is_name_char(c),
        };
        // A path may be named from further up (`/venv/lib/pkg/mod.py` names `pkg/mod.py`).
        let before_ok =
            before.is_none_or(|c| !is_name_char(c) || (c == '/' && needle.contains('/')));
        if before_ok && after_ok {
            return true;
        }
        from = start + haystack[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// The files dotted names spell as module paths (`django.contrib.admin.utils.f` →
/// `django/contrib/admin/utils.py`; `flask.json` → `src/flask/json/__init__.py`;
/// `index::db` → `src/index/db.rs`): for each name the longest prefix of two or more
/// segments that is the end of a file's path without its extension (or of its directory,
/// for `__init__`, `mod` and `index` files). Leading `crate`, `self` and `super` are dropped.
pub fn module_files(paths: &[Vec<String>], rows: &[crate::index::DocRow]) -> Vec<(u32, bool)> {
    let mut out = Vec::new();
    if paths.is_empty() {
        return out;
    }
    let keys: Vec<(u32, String)> = rows
        .iter()
        .map(|r| {
            let no_ext = r.id.rsplit_once('.').map_or(r.id.as_str(), |(a, b)| {
                if b.contains('/') { r.id.as_str() } else { a }
            });
            let key = match no_ext.rsplit_once('/') {
                Some((dir, "__init__" | "mod" | "index")) => dir,
                _ => no_ext,
            };
            (r.num, key.to_owned())
        })
        .collect();
    for segments in paths {
        let skip = segments
            .iter()
            .take_while(|s| matches!(s.as_str(), "crate" | "self" | "super" | "this"))
            .count();
        let segments = &segments[skip..];
        for k in (2..=segments.len()).rev() {
            let path = segments[..k].join("/");
            let suffix = format!("/{path}");
            let mut found = false;
            for (num, key) in &keys {
                if *key == path || key.ends_with(&suffix) {
                    out.push((*num, true));
                    found = true;
                }
            }
            if found {
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_need_whole_names() {
        assert_eq!(
            mention(
                "fix crates/ctx-fs/src/walk.rs please",
                "crates/ctx-fs/src/walk.rs"
            ),
            2
        );
        assert_eq!(
            mention("look at ctx-fs/src/walk.rs.", "crates/ctx-fs/src/walk.rs"),
            2
        );
        assert_eq!(
            mention("why is walk.rs slow?", "crates/ctx-fs/src/walk.rs"),
            1
        );
        assert_eq!(
            mention("why is sidewalk.rs slow?", "crates/ctx-fs/src/walk.rs"),
            0
        );
        assert_eq!(
            mention("why is walk.rsx slow?", "crates/ctx-fs/src/walk.rs"),
            0
        );
        assert_eq!(mention("the walker", "crates/ctx-fs/src/walk.rs"), 0);
        assert_eq!(mention("see `README.md`", "README.md"), 2);
        assert_eq!(
            mention(
                "File \"/venv/lib/site-packages/django/db/models/query.py\", line 3",
                "django/db/models/query.py"
            ),
            2
        );
    }

    #[test]
    fn named_file_types() {
        let terms = vec!["rust".to_owned(), "test".to_owned()];
        let types = file_types_named(&terms, "the rust tests");
        assert!(has_named_type(&types, "src/lib.rs"));
        assert!(has_named_type(&types, "tests/parse_test.py"));
        assert!(!has_named_type(&types, "src/app.py"));
    }
}
