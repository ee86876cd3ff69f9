//! Per-document analysis done once at index time: search terms of six fields (content, path
//! segments, defined symbol names split into words, string literals, comments and
//! docstrings, whole defined names) with their frequencies, symbol names and import
//! statements (tree-sitter, through ctx-code), so selection never tokenizes content.

use std::path::Path;

use ctx_code::Language;

use crate::text::terms;

/// Bumped whenever analysis changes what it produces for the same document, so an index
/// written by an older ctx is re-analyzed instead of reused.
pub const ANALYZER_VERSION: u32 = 2;

/// Documents larger than this are indexed for text but not parsed for symbols.
pub const MAX_PARSE_BYTES: usize = 1024 * 1024;

/// How many fields a document has.
pub const FIELDS: usize = 6;

/// The fields terms are counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Field {
    /// Every term of the text.
    Content = 0,
    /// The path's segments.
    Path = 1,
    /// The words of the names the file defines (`parse_file` → `parse`, `file`, `parsefile`).
    Symbols = 2,
    /// Terms inside string literals (error messages, flags, setting names).
    Strings = 3,
    /// Terms inside comments and docstrings.
    Comments = 4,
    /// Whole defined names, one term each (`parsefile`), and `parent.name` pairs
    /// (`contextcache.load`): what a definition look-up matches.
    Defs = 5,
}

impl Field {
    pub const ALL: [Self; FIELDS] = [
        Self::Content,
        Self::Path,
        Self::Symbols,
        Self::Strings,
        Self::Comments,
        Self::Defs,
    ];

    /// The column name of the field's length in `search.db`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Content => "content",
            Self::Path => "path",
            Self::Symbols => "symbols",
            Self::Strings => "strings",
            Self::Comments => "comments",
            Self::Defs => "defs",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    /// The name of the text score's part from this field, as a selection's reasons give it:
    /// `bm25_` and [`Field::name`].
    pub fn signal(self) -> &'static str {
        match self {
            Self::Content => "bm25_content",
            Self::Path => "bm25_path",
            Self::Symbols => "bm25_symbols",
            Self::Strings => "bm25_strings",
            Self::Comments => "bm25_comments",
            Self::Defs => "bm25_defs",
        }
    }
}

/// What the index keeps about one document besides its file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Per field, sorted by term: (term, frequency).
    pub fields: [Vec<(String, u32)>; FIELDS],
    /// Distinct names of the symbols the document defines, sorted.
    pub symbols: Vec<String>,
    /// Import statements as written, in source order.
    pub imports: Vec<String>,
    /// The language, when ctx-code knows it.
    pub language: Option<Language>,
}

impl Analysis {
    /// Number of term occurrences in `field` (the BM25 document length).
    pub fn length(&self, field: Field) -> u32 {
        self.fields[field.index()].iter().map(|(_, n)| n).sum()
    }
}

/// Analyzes one document.
pub fn analyze(id: &str, content: &str) -> Analysis {
    let language = Language::from_path(Path::new(id));
    let mut out = Analysis {
        language,
        ..Analysis::default()
    };
    out.fields[Field::Content.index()] = count_terms(|emit| terms(content, emit));
    out.fields[Field::Path.index()] = count_terms(|emit| terms(id, emit));
    if content.len() <= MAX_PARSE_BYTES {
        let lexed = crate::lexical::lex(id, content);
        out.fields[Field::Strings.index()] = count_terms(|emit| terms(&lexed.strings, emit));
        out.fields[Field::Comments.index()] = count_terms(|emit| terms(&lexed.comments, emit));
    }
    if let Some(lang) = language
        && content.len() <= MAX_PARSE_BYTES
    {
        let extracted = ctx_code::symbols::extract(lang, content.as_bytes());
        let mut defs: Vec<String> = Vec::new();
        for symbol in &extracted.symbols {
            let whole = def_term(&symbol.name);
            if whole.is_empty() {
                continue;
            }
            if let Some(parent) = symbol.parent.as_deref() {
                let parent = parent
                    .rsplit(['.', ':'])
                    .find(|p| !p.is_empty())
                    .map(def_term)
                    .unwrap_or_default();
                if !parent.is_empty() {
                    defs.push(format!("{parent}.{whole}"));
                }
            }
            defs.push(whole);
        }
        defs.sort();
        defs.dedup();
        out.fields[Field::Defs.index()] = defs.into_iter().map(|d| (d, 1)).collect();
        let mut names: Vec<String> = extracted.symbols.into_iter().map(|s| s.name).collect();
        names.sort();
        names.dedup();
        out.fields[Field::Symbols.index()] = count_terms(|emit| {
            for name in &names {
                terms(name, &mut *emit);
            }
        });
        out.symbols = names;
        out.imports = extracted.imports;
    }
    out
}

/// A whole identifier as one term: its parts joined, lower cased and stemmed
/// (`ContextCache`, `context_cache` → `contextcache`); empty for names that are not
/// identifiers.
pub fn def_term(name: &str) -> String {
    let parts = crate::text::identifier_parts(name);
    let joined = parts.concat();
    if joined.is_empty() || joined.len() > 64 || !joined.chars().all(char::is_alphanumeric) {
        return String::new();
    }
    crate::text::stem(&joined)
}

fn count_terms(feed: impl FnOnce(&mut dyn FnMut(&str))) -> Vec<(String, u32)> {
    // Hashed while counting (a term repeats many times in a file), sorted once at the end.
    let mut counts: std::collections::HashMap<String, u32, rustc_hash::FxBuildHasher> =
        std::collections::HashMap::default();
    let mut emit = |t: &str| {
        if let Some(n) = counts.get_mut(t) {
            *n += 1;
        } else {
            counts.insert(t.to_owned(), 1);
        }
    };
    feed(&mut emit);
    let mut out: Vec<(String, u32)> = counts.into_iter().collect();
    out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Appends `value` as a LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// The bytes [`put_varint`] writes for `value`.
fn varint_len(value: u64) -> usize {
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

/// Reads a LEB128 varint at `*pos`, advancing it; `None` on truncated input.
pub fn get_varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let byte = *bytes.get(*pos)?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// The per-field term lists as one blob (stored for incremental rebuilds).
pub fn encode_fields(fields: &[Vec<(String, u32)>; FIELDS]) -> Vec<u8> {
    // Sized exactly: an index build holds a chunk of these, and a grown vector's spare half
    // would be held with it.
    let size: usize = fields
        .iter()
        .map(|field| {
            varint_len(field.len() as u64)
                + field
                    .iter()
                    .map(|(t, n)| varint_len(t.len() as u64) + t.len() + varint_len(u64::from(*n)))
                    .sum::<usize>()
        })
        .sum();
    let mut out = Vec::with_capacity(size);
    for field in fields {
        put_varint(&mut out, field.len() as u64);
        for (term, n) in field {
            put_varint(&mut out, term.len() as u64);
            out.extend_from_slice(term.as_bytes());
            put_varint(&mut out, u64::from(*n));
        }
    }
    out
}

/// Calls `visit(field index, term, frequency)` for each term of the first `fields` fields of
/// a blob of [`encode_fields`], in order, without unpacking it; `None` if the part read is
/// damaged (or, reading every field, if bytes are left over). A damaged blob may have been
/// visited in part.
pub fn visit_terms(
    bytes: &[u8],
    fields: usize,
    mut visit: impl FnMut(usize, &str, u32),
) -> Option<()> {
    let mut pos = 0;
    for field in 0..fields.min(FIELDS) {
        let n = get_varint(bytes, &mut pos)?;
        for _ in 0..n {
            let len = usize::try_from(get_varint(bytes, &mut pos)?).ok()?;
            let term = std::str::from_utf8(bytes.get(pos..pos.checked_add(len)?)?).ok()?;
            pos += len;
            let tf = u32::try_from(get_varint(bytes, &mut pos)?).ok()?;
            visit(field, term, tf);
        }
    }
    (fields < FIELDS || pos == bytes.len()).then_some(())
}

/// Inverse of [`encode_fields`]; `None` if the blob is damaged.
pub fn decode_fields(bytes: &[u8]) -> Option<[Vec<(String, u32)>; FIELDS]> {
    let mut pos = 0;
    let mut out: [Vec<(String, u32)>; FIELDS] = Default::default();
    for field in &mut out {
        let n = usize::try_from(get_varint(bytes, &mut pos)?).ok()?;
        field.reserve(n.min(1 << 20));
        for _ in 0..n {
            let len = usize::try_from(get_varint(bytes, &mut pos)?).ok()?;
            let term = std::str::from_utf8(bytes.get(pos..pos.checked_add(len)?)?).ok()?;
            pos += len;
            let tf = u32::try_from(get_varint(bytes, &mut pos)?).ok()?;
            field.push((term.to_owned(), tf));
        }
    }
    (pos == bytes.len()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_s_signal_is_bm25_and_its_name() {
        for field in Field::ALL {
            assert_eq!(field.signal(), format!("bm25_{}", field.name()));
        }
    }

    #[test]
    fn fields_round_trip_and_damage_is_detected() {
        let a = analyze(
            "src/context_cache.rs",
            "pub struct ContextCache;\nfn load() {}\n",
        );
        assert!(a.symbols.contains(&"ContextCache".to_owned()));
        assert!(
            a.fields[Field::Path.index()]
                .iter()
                .any(|(t, _)| t == "cache")
        );
        let blob = encode_fields(&a.fields);
        assert_eq!(blob.len(), blob.capacity());
        for value in [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut bytes = Vec::new();
            put_varint(&mut bytes, value);
            assert_eq!(varint_len(value), bytes.len(), "{value}");
        }
        assert_eq!(decode_fields(&blob).as_ref(), Some(&a.fields));
        assert_eq!(decode_fields(&blob[..blob.len() - 1]), None);
        let mut visited: [Vec<(String, u32)>; FIELDS] = Default::default();
        visit_terms(&blob, FIELDS, |f, t, n| visited[f].push((t.to_owned(), n))).expect("whole");
        assert_eq!(visited, a.fields);
        let mut content = Vec::new();
        visit_terms(&blob, 1, |f, t, n| content.push((f, t.to_owned(), n))).expect("first");
        assert_eq!(content.len(), a.fields[0].len());
        assert!(visit_terms(&blob[..blob.len() - 1], FIELDS, |_, _, _| {}).is_none());
    }

    #[test]
    fn varints_round_trip() {
        for v in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut buf = Vec::new();
            put_varint(&mut buf, v);
            let mut pos = 0;
            assert_eq!(get_varint(&buf, &mut pos), Some(v));
            assert_eq!(pos, buf.len());
        }
    }
}
