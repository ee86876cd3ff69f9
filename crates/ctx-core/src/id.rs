//! Document ids: workspace-relative, `/`-separated paths.

use std::fmt;
use std::path::{Component, Path};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A document's identity: its path relative to the workspace root.
///
/// Always `/`-separated, never starting with `./` or `/`, with no `.` or `..` components and no
/// empty components; case is kept as the file system spells it (two ids differing only in case
/// are two documents). Ordering is byte order of the UTF-8 string, so sorting is locale-free.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DocumentId(String);

/// Why a path cannot be a [`DocumentId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocumentIdError {
    #[error("`{path}` is outside the workspace root; name a path inside it")]
    OutsideRoot { path: String },
    #[error("`{path}` is not valid UTF-8; ctx ids must be UTF-8 paths, rename the file")]
    InvalidUtf8 { path: String },
    #[error("`{path}` names the workspace root itself, not a document inside it")]
    Empty { path: String },
    #[error("`{path}` contains a NUL byte, which no file name can hold")]
    ContainsNul { path: String },
}

impl DocumentId {
    /// Normalizes a relative, `/`-separated path: drops `.` and empty components, resolves `..`
    /// lexically, and refuses anything that would leave the root (a leading `/` included).
    pub fn new(relative: &str) -> Result<Self, DocumentIdError> {
        if relative.contains('\0') {
            return Err(DocumentIdError::ContainsNul {
                path: relative.escape_debug().to_string(),
            });
        }
        if relative.starts_with('/') {
            return Err(DocumentIdError::OutsideRoot {
                path: relative.to_owned(),
            });
        }
        let mut parts: Vec<&str> = Vec::new();
        for part in relative.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    if parts.pop().is_none() {
                        return Err(DocumentIdError::OutsideRoot {
                            path: relative.to_owned(),
                        });
                    }
                }
                other => parts.push(other),
            }
        }
        if parts.is_empty() {
            return Err(DocumentIdError::Empty {
                path: relative.to_owned(),
            });
        }
        Ok(Self(parts.join("/")))
    }

    /// The id of `path` inside `root`, by lexical comparison (no file system access).
    ///
    /// A relative `path` is taken relative to `root`; an absolute one must lie under `root`.
    /// `root` should be absolute and already normalized (the workspace layer canonicalizes it).
    pub fn from_path(root: &Path, path: &Path) -> Result<Self, DocumentIdError> {
        let shown = || path.display().to_string();
        let relative = if path.is_absolute() {
            let normalized = lexical_components(path)
                .ok_or_else(|| DocumentIdError::OutsideRoot { path: shown() })?;
            let root_parts = lexical_components(root)
                .ok_or_else(|| DocumentIdError::OutsideRoot { path: shown() })?;
            if normalized.len() < root_parts.len()
                || normalized[..root_parts.len()] != root_parts[..]
            {
                return Err(DocumentIdError::OutsideRoot { path: shown() });
            }
            normalized[root_parts.len()..].to_vec()
        } else {
            path.components()
                .map(|c| c.as_os_str().to_owned())
                .collect()
        };
        let mut joined = String::new();
        for part in &relative {
            let part = part
                .to_str()
                .ok_or_else(|| DocumentIdError::InvalidUtf8 { path: shown() })?;
            if !joined.is_empty() {
                joined.push('/');
            }
            joined.push_str(part);
        }
        Self::new(&joined).map_err(|err| match err {
            DocumentIdError::OutsideRoot { .. } => DocumentIdError::OutsideRoot { path: shown() },
            DocumentIdError::Empty { .. } => DocumentIdError::Empty { path: shown() },
            other => other,
        })
    }

    /// The id as a `/`-separated string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The last component (the file name).
    pub fn file_name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }
}

/// Absolute path components with `.` dropped and `..` resolved; `None` if `..` passes `/`.
fn lexical_components(path: &Path) -> Option<Vec<std::ffi::OsString>> {
    let mut out = Vec::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                out.pop()?;
            }
            Component::Normal(part) => out.push(part.to_owned()),
        }
    }
    Some(out)
}

impl fmt::Display for DocumentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for DocumentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl AsRef<str> for DocumentId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Serialize for DocumentId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for DocumentId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        let id = Self::new(&s).map_err(serde::de::Error::custom)?;
        if id.0 != s {
            return Err(serde::de::Error::custom(format!(
                "document id `{s}` is not normalized (expected `{id}`)"
            )));
        }
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn relative_ids_are_normalized() {
        let cases = [
            ("src/main.rs", "src/main.rs"),
            ("./src/main.rs", "src/main.rs"),
            ("src//main.rs", "src/main.rs"),
            ("src/./lib/../main.rs", "src/main.rs"),
            ("a/b/", "a/b"),
            ("README.md", "README.md"),
            ("Docs/ReadMe.MD", "Docs/ReadMe.MD"),
            ("dir with space/ü.txt", "dir with space/ü.txt"),
        ];
        for (input, want) in cases {
            assert_eq!(
                DocumentId::new(input).expect(input).as_str(),
                want,
                "{input}"
            );
        }
    }

    #[test]
    fn escapes_and_non_documents_are_refused() {
        for bad in [
            "..",
            "../x",
            "a/../../x",
            "/etc/passwd",
            "//x",
            "a/b/../../..",
        ] {
            assert!(
                matches!(
                    DocumentId::new(bad),
                    Err(DocumentIdError::OutsideRoot { .. })
                ),
                "{bad}"
            );
        }
        for empty in ["", ".", "./", "a/..", "./."] {
            assert!(
                matches!(DocumentId::new(empty), Err(DocumentIdError::Empty { .. })),
                "{empty:?}"
            );
        }
        assert!(matches!(
            DocumentId::new("a\0b"),
            Err(DocumentIdError::ContainsNul { .. })
        ));
    }

    #[test]
    fn case_is_kept_so_case_variants_are_distinct() {
        let upper = DocumentId::new("README.md").expect("valid");
        let lower = DocumentId::new("readme.md").expect("valid");
        assert_ne!(upper, lower);
        assert!(upper < lower, "byte order puts upper case first");
    }

    #[test]
    fn ids_from_paths_under_a_root() {
        let root = PathBuf::from("/work/repo");
        let id = |p: &str| DocumentId::from_path(&root, Path::new(p));
        assert_eq!(
            id("/work/repo/src/lib.rs").expect("inside").as_str(),
            "src/lib.rs"
        );
        assert_eq!(
            id("/work/repo/./src/../lib.rs").expect("inside").as_str(),
            "lib.rs"
        );
        assert_eq!(id("src/lib.rs").expect("relative").as_str(), "src/lib.rs");
        assert!(matches!(
            id("/work/other/x.rs"),
            Err(DocumentIdError::OutsideRoot { .. })
        ));
        assert!(matches!(
            id("/work/repo2/x.rs"),
            Err(DocumentIdError::OutsideRoot { .. })
        ));
        assert!(matches!(
            id("/work/repo/../x.rs"),
            Err(DocumentIdError::OutsideRoot { .. })
        ));
        assert!(matches!(
            id("../x.rs"),
            Err(DocumentIdError::OutsideRoot { .. })
        ));
        assert!(matches!(
            id("/work/repo"),
            Err(DocumentIdError::Empty { .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_paths_are_refused() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let path = Path::new(OsStr::from_bytes(b"bad\xff.txt"));
        assert!(matches!(
            DocumentId::from_path(Path::new("/r"), path),
            Err(DocumentIdError::InvalidUtf8 { .. })
        ));
    }

    #[test]
    fn deserializing_requires_a_normalized_id() {
        assert!(serde_json::from_str::<DocumentId>("\"src/a.rs\"").is_ok());
        assert!(serde_json::from_str::<DocumentId>("\"./src/a.rs\"").is_err());
        assert!(serde_json::from_str::<DocumentId>("\"../a.rs\"").is_err());
    }
}
