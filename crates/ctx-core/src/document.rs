//! Documents: content with an identity and a version derived from its bytes.

use serde::{Deserialize, Serialize};

use crate::{ContentHash, DocumentId, Metadata};

/// A text document, the unit every part of ctx works on.
///
/// Invariants, kept by [`Document::ingest`] (the only constructor) and re-checked on
/// deserialization: the content is valid UTF-8, and `version` is the [`ContentHash`] of the
/// content bytes exactly as read (no newline or Unicode normalization), so metadata and source
/// never change it. Serialized field order is fixed: `id`, `version`, `source`, `content`,
/// `metadata`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "UncheckedDocument")]
pub struct Document {
    id: DocumentId,
    version: ContentHash,
    source: String,
    content: String,
    metadata: Metadata,
}

/// Why bytes could not become a [`Document`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocumentError {
    #[error(
        "`{id}` is not valid UTF-8 (first bad byte at offset {valid_up_to}); ctx reads text files only"
    )]
    InvalidUtf8 { id: DocumentId, valid_up_to: usize },
    #[error("document `{id}` claims version {claimed} but its content hashes to {actual}")]
    VersionMismatch {
        id: DocumentId,
        claimed: ContentHash,
        actual: ContentHash,
    },
}

impl Document {
    /// Builds a document from raw bytes, rejecting invalid UTF-8.
    pub fn ingest(
        id: DocumentId,
        source: impl Into<String>,
        bytes: Vec<u8>,
        metadata: Metadata,
    ) -> Result<Self, DocumentError> {
        let version = ContentHash::of(&bytes);
        let content = String::from_utf8(bytes).map_err(|err| DocumentError::InvalidUtf8 {
            id: id.clone(),
            valid_up_to: err.utf8_error().valid_up_to(),
        })?;
        Ok(Self {
            id,
            version,
            source: source.into(),
            content,
            metadata,
        })
    }

    /// The document's id.
    pub fn id(&self) -> &DocumentId {
        &self.id
    }

    /// The hash of the content bytes.
    pub fn version(&self) -> ContentHash {
        self.version
    }

    /// Where the document came from (a source URI or connector name).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The text.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// The metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Replaces the metadata; the version stays, since it covers content only.
    pub fn set_metadata(&mut self, metadata: Metadata) {
        self.metadata = metadata;
    }
}

#[derive(Deserialize)]
struct UncheckedDocument {
    id: DocumentId,
    version: ContentHash,
    source: String,
    content: String,
    #[serde(default)]
    metadata: Metadata,
}

impl TryFrom<UncheckedDocument> for Document {
    type Error = DocumentError;

    fn try_from(raw: UncheckedDocument) -> Result<Self, Self::Error> {
        let doc = Self::ingest(raw.id, raw.source, raw.content.into_bytes(), raw.metadata)?;
        if doc.version != raw.version {
            return Err(DocumentError::VersionMismatch {
                id: doc.id,
                claimed: raw.version,
                actual: doc.version,
            });
        }
        Ok(doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> DocumentId {
        DocumentId::new(s).expect("valid id")
    }

    #[test]
    fn version_is_the_hash_of_the_bytes() {
        let doc = Document::ingest(
            id("a.txt"),
            "file:a.txt",
            b"hello".to_vec(),
            Metadata::new(),
        )
        .expect("valid");
        assert_eq!(doc.version(), ContentHash::of(b"hello"));
        assert_eq!(doc.content(), "hello");
    }

    #[test]
    fn invalid_utf8_is_rejected_with_its_offset() {
        let err = Document::ingest(
            id("bin.dat"),
            "file:bin.dat",
            b"ok\xff\xfe".to_vec(),
            Metadata::new(),
        )
        .expect_err("invalid");
        assert_eq!(
            err,
            DocumentError::InvalidUtf8 {
                id: id("bin.dat"),
                valid_up_to: 2
            }
        );
        assert!(err.to_string().contains("bin.dat"), "{err}");
    }

    #[test]
    fn version_is_independent_of_metadata_and_source() {
        let mut m = Metadata::new();
        m.insert("lang", "rust");
        let a = Document::ingest(id("a"), "one", b"same".to_vec(), Metadata::new()).expect("ok");
        let mut b = Document::ingest(id("b"), "two", b"same".to_vec(), m.clone()).expect("ok");
        assert_eq!(a.version(), b.version());
        b.set_metadata(Metadata::new());
        assert_eq!(a.version(), b.version());
    }

    #[test]
    fn newlines_are_not_normalized() {
        let lf = Document::ingest(id("a"), "s", b"x\n".to_vec(), Metadata::new()).expect("ok");
        let crlf = Document::ingest(id("a"), "s", b"x\r\n".to_vec(), Metadata::new()).expect("ok");
        assert_ne!(lf.version(), crlf.version());
    }

    #[test]
    fn serialization_has_fixed_field_order_and_is_checked_on_load() {
        let doc = Document::ingest(id("a.md"), "file:a.md", b"# hi\n".to_vec(), Metadata::new())
            .expect("ok");
        let json = serde_json::to_string(&doc).expect("serializes");
        assert_eq!(
            json,
            format!(
                r##"{{"id":"a.md","version":"{}","source":"file:a.md","content":"# hi\n","metadata":{{}}}}"##,
                doc.version()
            )
        );
        assert_eq!(
            serde_json::from_str::<Document>(&json).expect("round trip"),
            doc
        );
        let tampered = json.replace("# hi", "# ho");
        let err = serde_json::from_str::<Document>(&tampered).expect_err("version mismatch");
        assert!(err.to_string().contains("claims version"), "{err}");
    }
}
