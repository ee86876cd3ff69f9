//! The answers every front end gives: one type per answer, serialized as the CLI's `--json`,
//! as MCP's `structuredContent` (with its paging fields beside it) and as the Python module's
//! dicts. `JsonSchema` gives MCP its output schemas.
//!
//! Paths in answers are relative to the workspace's sandbox root (the project, or the
//! directory a server serves); what lies outside it is left out.

use schemars::JsonSchema;
use serde::Serialize;

/// A related file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RelatedItem {
    /// Path relative to the workspace root.
    pub path: String,
    /// Why it is related.
    pub reason: String,
}

/// The files related to one file: imports both ways, files changed with it, its tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RelatedAnswer {
    /// The file asked about, relative to the workspace root.
    pub file: String,
    /// Why some relations are missing (outside a git repository).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Files it imports.
    pub imports: Vec<RelatedItem>,
    /// Files that import it.
    pub imported_by: Vec<RelatedItem>,
    /// Files changed in the same commits, most often first.
    pub co_changed: Vec<RelatedItem>,
    /// Its tests.
    pub test_files: Vec<RelatedItem>,
}

/// Repository-relative paths as the workspace shows them: `prefix` is the workspace root
/// relative to the repository's top (empty when they are one).
#[derive(Debug, Clone)]
pub(crate) struct InWorkspace {
    prefix: String,
}

impl InWorkspace {
    /// The rule for a workspace rooted at `root`: the nearest directory at or above it that
    /// holds `.git` is the repository's top.
    pub(crate) fn at(root: &std::path::Path) -> Self {
        let prefix = root
            .ancestors()
            .find(|dir| dir.join(".git").exists())
            .and_then(|top| root.strip_prefix(top).ok())
            .map(|rel| {
                rel.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_default();
        Self { prefix }
    }

    /// A repository-relative path made relative to the workspace (`.` for the workspace
    /// itself), or `None` if it is outside.
    pub(crate) fn path(&self, path: &str) -> Option<String> {
        if self.prefix.is_empty() {
            Some(path.to_owned())
        } else if path == self.prefix {
            Some(".".to_owned())
        } else {
            path.strip_prefix(&self.prefix)
                .and_then(|rest| rest.strip_prefix('/'))
                .map(str::to_owned)
        }
    }

    /// The related files of `report` that lie in the workspace.
    pub(crate) fn related(&self, report: crate::code::RelatedReport) -> RelatedAnswer {
        let keep = |files: Vec<crate::code::RelatedFile>| -> Vec<RelatedItem> {
            files
                .into_iter()
                .filter_map(|f| {
                    self.path(&f.path).map(|path| RelatedItem {
                        path,
                        reason: f.reason,
                    })
                })
                .collect()
        };
        let r = report.related;
        RelatedAnswer {
            file: self.path(&r.source).unwrap_or(r.source),
            note: report.note,
            imports: keep(r.imports),
            imported_by: keep(r.imported_by),
            co_changed: keep(r.co_changed),
            test_files: keep(r.test_files),
        }
    }
}
