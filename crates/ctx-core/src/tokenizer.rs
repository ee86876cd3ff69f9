//! Token counting, exact for OpenAI's `o200k_base` and `cl100k_base`, approximate otherwise.
//!
//! The exact tokenizers are GitHub's linear-time BPE (the `bpe` crate) with `bpe-openai`'s
//! patterns and hash factor: their counts equal tiktoken's `encode_ordinary`, so text that
//! merely looks like a special token (`<|endoftext|>` inside a file) is counted as the ordinary
//! text it is. The build script builds the byte-pair tables from OpenAI's rank files
//! (`data/`) and stores what counting reads, LZ4-compressed (`build.rs`, `write_tokenizer`);
//! each is unpacked once, lazily, the first time [`TokenizerKind::tokenizer`] counts with it,
//! so commands that count nothing never pay for it.

use std::cell::RefCell;
use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;

use bpe::byte_pair_encoding::BytePairEncoding;
use regex_automata::meta::{Cache, Regex};
use regex_automata::{Anchored, Input};

use rustc_hash::FxHashMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod ascii;

/// Something that counts tokens in text.
pub trait Tokenizer: Send + Sync {
    /// Which tokenizer this is.
    fn kind(&self) -> TokenizerKind;

    /// The number of tokens `text` encodes to.
    fn count(&self, text: &str) -> usize;
}

/// The tokenizers ctx knows, by their tiktoken names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum TokenizerKind {
    /// GPT-4o / GPT-4.1 / o-series encoding; the default.
    #[default]
    O200kBase,
    /// GPT-4 / GPT-3.5 encoding.
    Cl100kBase,
    /// `ceil(bytes / 4)`: instant, roughly right for English and code, never exact.
    Approx,
}

/// A tokenizer name ctx does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tokenizer `{0}`; use one of: o200k_base, cl100k_base, approx")]
pub struct UnknownTokenizer(pub String);

impl TokenizerKind {
    /// Every tokenizer, in documentation order.
    pub const ALL: [Self; 3] = [Self::O200kBase, Self::Cl100kBase, Self::Approx];

    /// The tiktoken name (`o200k_base`, `cl100k_base`) or `approx`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
            Self::Approx => "approx",
        }
    }

    /// Whether counts equal tiktoken's.
    pub const fn is_exact(self) -> bool {
        !matches!(self, Self::Approx)
    }

    /// The tokenizer itself, built on first use and shared afterwards.
    pub fn tokenizer(self) -> &'static dyn Tokenizer {
        match self {
            Self::O200kBase => &O200K,
            Self::Cl100kBase => &CL100K,
            Self::Approx => &APPROX,
        }
    }

    /// Shorthand for `self.tokenizer().count(text)`.
    pub fn count(self, text: &str) -> usize {
        self.tokenizer().count(text)
    }

    /// Builds this tokenizer's tables now, if they are not built yet (otherwise the first
    /// count builds them). Building takes tens of milliseconds on one core, and every thread
    /// that counts waits for it: a caller about to count a tree can build them on a thread of
    /// their own while it lists and reads files.
    pub fn load(self) {
        match self {
            Self::O200kBase => {
                let _ = (O200K.load)();
            }
            Self::Cl100kBase => {
                let _ = (CL100K.load)();
            }
            Self::Approx => {}
        }
    }
}

impl fmt::Display for TokenizerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TokenizerKind {
    type Err = UnknownTokenizer;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| UnknownTokenizer(s.to_owned()))
    }
}

impl Serialize for TokenizerKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for TokenizerKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// An exact BPE tokenizer; the tables load on first count.
///
/// Counting splits the text with the encoding's pre-tokenization regex and byte-pair encodes
/// each piece. Source code repeats the same short pieces (keywords, identifiers, indentation)
/// over and over, so the count of each short piece is memoized per thread: the result is the
/// same, the BPE work is done once per distinct piece. This roughly halves the instructions per
/// byte on code (measured with callgrind on 3 MB of Rust: 953 M → 544 M for o200k_base).
struct Exact {
    kind: TokenizerKind,
    load: fn() -> &'static CountingBpe,
    split: &'static LazyLock<Splitter>,
}

/// An encoding's pre-tokenization split: the patterns and look-ahead emulation of
/// `bpe-openai` 0.3.2 (tiktoken's patterns, with `\s+(?!\S)` rewritten as a pattern whose
/// last character is dropped from the match), searched with a regex cache of this thread's.
/// `bpe-openai`'s own iterator takes a cache from its regex's shared pool for every piece;
/// with two threads counting, that pool's slow path was a tenth of a cold render's time.
/// `tests/it/token_vectors.rs` holds the counts to tiktoken's.
///
/// Where the bytes that decide a piece are ASCII, the piece is found by [`ascii::piece_end`]
/// without the regex (the patterns reduce to byte classes there); the regex finds the rest.
struct Splitter {
    regex: Regex,
    /// Per pattern: whether its last character is a look-ahead, dropped from the piece.
    lookahead: Vec<bool>,
    /// The same split's rules on ASCII bytes.
    rules: ascii::Rules,
}

impl Splitter {
    fn new(rules: ascii::Rules, patterns: &[(&str, bool)]) -> Self {
        let (patterns, lookahead): (Vec<&str>, Vec<bool>) = patterns.iter().copied().unzip();
        Self {
            regex: Regex::new_many(&patterns).expect("the tokenizer patterns compile"),
            lookahead,
            rules,
        }
    }

    /// Calls `piece` with the start and end of each piece of `text`, in order.
    fn for_each(&self, cache: &mut Cache, text: &str, mut piece: impl FnMut(usize, usize)) {
        let bytes = text.as_bytes();
        let mut last = 0;
        while last < text.len() {
            if bytes[last].is_ascii()
                && let Some(end) = ascii::piece_end(self.rules, bytes, last)
            {
                piece(last, end);
                last = end;
                continue;
            }
            // The regex decides (it matches something at every position of a text).
            let Some(end) = self.regex_piece_end(cache, text, last) else {
                break;
            };
            piece(last, end);
            last = end;
        }
    }

    /// The end of the piece at `start`, by the regex; `None` when it finds none (never, for
    /// these patterns).
    fn regex_piece_end(&self, cache: &mut Cache, text: &str, start: usize) -> Option<usize> {
        let input = Input::new(&text[start..]).anchored(Anchored::Yes);
        let found = self.regex.search_with(cache, &input)?;
        let mut end = start + found.range().end;
        if self.lookahead[found.pattern().as_usize()]
            && let Some(c) = text[start..end].chars().next_back()
        {
            end -= c.len_utf8();
        }
        // A look-ahead pattern consumes at least two characters (`\\s+\\s`).
        debug_assert_ne!(end, start, "a piece is never empty");
        (end != start).then_some(end)
    }
}

/// An encoding's byte-pair tables as `build.rs` stores them for counting: everything
/// [`BytePairEncoding::count`] reads, with the two overlapping-match automata (used only by
/// the crate's other encoders) left out. So this type offers `count` and nothing else.
struct CountingBpe(BytePairEncoding);

impl CountingBpe {
    /// Unpacks tables `build.rs` wrote (an LZ4 block of a MessagePack `BytePairEncoding`).
    fn unpack(name: &str, packed: &[u8]) -> Self {
        let bytes = lz4_flex::block::decompress_size_prepended(packed)
            .unwrap_or_else(|e| panic!("the build script's {name} tables unpack: {e}"));
        let bpe = rmp_serde::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("the build script's {name} tables deserialize: {e}"));
        Self(bpe)
    }

    fn count(&self, piece: &[u8]) -> usize {
        self.0.count(piece)
    }
}

static O200K_BPE: LazyLock<CountingBpe> = LazyLock::new(|| {
    CountingBpe::unpack(
        "o200k_base",
        include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.bpe.lz4")),
    )
});

static CL100K_BPE: LazyLock<CountingBpe> = LazyLock::new(|| {
    CountingBpe::unpack(
        "cl100k_base",
        include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.bpe.lz4")),
    )
});

static CL100K_SPLIT: LazyLock<Splitter> = LazyLock::new(|| {
    Splitter::new(
        ascii::Rules::Cl100k,
        &[
            (
                "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+$",
                false,
            ),
            ("\\s+\\s", true),
            ("\\s+", false),
        ],
    )
});

static O200K_SPLIT: LazyLock<Splitter> = LazyLock::new(|| {
    let first = [
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        "\\p{N}{1,3}",
        " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*",
        "\\s*[\\r\\n]+",
        "\\s+$",
    ]
    .join("|");
    Splitter::new(
        ascii::Rules::O200k,
        &[(&first, false), ("\\s+\\s", true), ("\\s+", false)],
    )
});

/// Pieces up to this many bytes are memoized; longer ones are rare and cheap to count once.
const MEMO_MAX_PIECE: usize = 32;
/// Entries in each generation of a memo's two maps: a generation that reaches it becomes the
/// old one (the older is dropped), so memory stays bounded while the pieces in use survive.
/// Seven eighths of a power of two, the most a map holds before it doubles its table: the
/// two generations of packed keys take about 4 MB, as one map of 65,536 entries did.
const MEMO_GENERATION: usize = 57_344;

thread_local! {
    static PIECE_COUNTS: RefCell<[Memo; 2]> = RefCell::new([Memo::default(), Memo::default()]);
    /// This thread's search caches of the two splitters (made on first use). Boxed: a cache
    /// is kilobytes, and a library loaded into a process (the Python module) has little
    /// static thread-local space ("cannot allocate memory in static TLS block").
    static SPLIT_CACHES: RefCell<[Option<Box<Cache>>; 2]> = const { RefCell::new([None, None]) };
}

/// One thread's token counts of the short pieces of one encoding.
///
/// A piece of at most [`PACKED_MAX`] bytes is keyed by its bytes and length packed into one
/// integer: most pieces of source code are that short, and an integer key is hashed and
/// compared without a call to `memcmp`. Longer pieces (up to [`MEMO_MAX_PIECE`]) are keyed by
/// their text.
#[derive(Default)]
struct Memo {
    packed: Generations<u128>,
    long: Generations<Box<str>>,
}

/// Counts in two generations: new entries and those found in the old generation go to the
/// new one; when it is full it becomes the old one. A tree's text has more distinct pieces
/// than a bounded memo holds (175,000 short ones in Django's sources, most of them in
/// translations); emptying a full memo outright lost the common pieces with the rare ones,
/// and on Django's sources missed 29% more pieces than two generations of the same memory.
struct Generations<K> {
    new: FxHashMap<K, u32>,
    old: FxHashMap<K, u32>,
}

impl<K> Default for Generations<K> {
    fn default() -> Self {
        Self {
            new: FxHashMap::default(),
            old: FxHashMap::default(),
        }
    }
}

impl<K: std::hash::Hash + Eq> Generations<K> {
    /// The count of `key`, moved to the new generation if it was in the old one (`owned`
    /// makes the key to move).
    fn get<Q>(&mut self, key: &Q, owned: impl FnOnce() -> K) -> Option<u32>
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ?Sized,
    {
        if let Some(&count) = self.new.get(key) {
            return Some(count);
        }
        let count = *self.old.get(key)?;
        self.insert(owned(), count);
        Some(count)
    }

    fn insert(&mut self, key: K, count: u32) {
        if self.new.len() >= MEMO_GENERATION {
            std::mem::swap(&mut self.new, &mut self.old);
            // Emptied, its table kept for the next generation.
            self.new.clear();
        }
        self.new.insert(key, count);
    }
}

/// Pieces of at most this many bytes are memoized under a packed key (the 16th byte holds the
/// length).
const PACKED_MAX: usize = 15;

/// `text[start..end]` (at most [`PACKED_MAX`] bytes) as one integer: its bytes in order from
/// the lowest, zeros after them, and its length in the highest byte. Distinct pieces have
/// distinct keys.
fn packed_key(text: &[u8], start: usize, end: usize) -> u128 {
    let len = end - start;
    debug_assert!(len <= PACKED_MAX);
    // Sixteen bytes at once where the text has them, the ones past the piece masked off.
    let bytes = if let Some(window) = text.get(start..start + 16) {
        let window: [u8; 16] = window.try_into().expect("a 16-byte window");
        u128::from_le_bytes(window) & ((1u128 << (8 * len)) - 1)
    } else {
        let mut window = [0u8; 16];
        window[..len].copy_from_slice(&text[start..end]);
        u128::from_le_bytes(window)
    };
    bytes | (len as u128) << 120
}

impl Memo {
    /// The count of `text[start..end]`, remembered, or from `bpe` (and remembered if short).
    fn count(
        &mut self,
        text: &str,
        start: usize,
        end: usize,
        bpe: impl FnOnce(&str) -> usize,
    ) -> usize {
        let len = end - start;
        // Every byte is a token of its own in both encodings (byte-level BPE), and a third of
        // the pieces of source code are one byte (brackets, commas, a space, a newline).
        if len == 1 {
            return 1;
        }
        let piece = &text[start..end];
        if len > MEMO_MAX_PIECE {
            return bpe(piece);
        }
        if len <= PACKED_MAX {
            let key = packed_key(text.as_bytes(), start, end);
            if let Some(count) = self.packed.get(&key, || key) {
                return count as usize;
            }
            let count = bpe(piece);
            self.packed.insert(key, short_count(count));
            return count;
        }
        if let Some(count) = self.long.get(piece, || piece.into()) {
            return count as usize;
        }
        let count = bpe(piece);
        self.long.insert(piece.into(), short_count(count));
        count
    }
}

fn short_count(count: usize) -> u32 {
    u32::try_from(count).expect("a short piece has few tokens")
}

impl Tokenizer for Exact {
    fn kind(&self) -> TokenizerKind {
        self.kind
    }

    fn count(&self, text: &str) -> usize {
        let tokenizer = (self.load)();
        let splitter: &Splitter = self.split;
        let slot = usize::from(self.kind == TokenizerKind::Cl100kBase);
        SPLIT_CACHES.with_borrow_mut(|caches| {
            let cache = caches[slot].get_or_insert_with(|| Box::new(splitter.regex.create_cache()));
            PIECE_COUNTS.with_borrow_mut(|memos| {
                let memo = &mut memos[slot];
                let mut total = 0usize;
                splitter.for_each(cache, text, |start, end| {
                    total +=
                        memo.count(text, start, end, |piece| tokenizer.count(piece.as_bytes()));
                });
                total
            })
        })
    }
}

static O200K: Exact = Exact {
    kind: TokenizerKind::O200kBase,
    load: || &O200K_BPE,
    split: &O200K_SPLIT,
};
static CL100K: Exact = Exact {
    kind: TokenizerKind::Cl100kBase,
    load: || &CL100K_BPE,
    split: &CL100K_SPLIT,
};
static APPROX: Approx = Approx;

/// `ceil(bytes / 4)`.
struct Approx;

impl Tokenizer for Approx {
    fn kind(&self) -> TokenizerKind {
        TokenizerKind::Approx
    }

    fn count(&self, text: &str) -> usize {
        text.len().div_ceil(4)
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    /// The split searched with a cache per thread counts what `bpe-openai`'s own split counts.
    #[test]
    fn the_cached_split_counts_what_bpe_openai_counts() {
        let mut texts: Vec<String> = vec![
            String::new(),
            " ".into(),
            "   \n\n  \t x".into(),
            "It's they'll WE'VE I'M you'd".into(),
            "1234567 3.14159 0x1F".into(),
            "line\r\nnext\r\n\r\n   \r\n".into(),
            "caf\u{e9} na\u{ef}ve \u{65e5}\u{672c}\u{8a9e} \u{1f600}\u{1f680} [x]".into(),
            "trailing spaces   ".into(),
            "a/b//c\\d path/to/file.rs\n".into(),
            include_str!("tokenizer.rs").into(),
            include_str!("redact/mod.rs").into(),
        ];
        let mut mixed = String::new();
        for i in 0..2000u32 {
            mixed.push(char::from_u32(0x20 + (i * 7919) % 0x2FF).unwrap_or(' '));
            if i % 13 == 0 {
                mixed.push_str(["  ", "\n", "\t\t", "'s ", "99999"][(i % 5) as usize]);
            }
        }
        texts.push(mixed);
        for text in &texts {
            assert_eq!(
                TokenizerKind::Cl100kBase.count(text),
                bpe_openai::cl100k_base().count(text.as_str()),
                "cl100k_base on {:?}",
                text.get(..40)
            );
            assert_eq!(
                TokenizerKind::O200kBase.count(text),
                bpe_openai::o200k_base().count(text.as_str()),
                "o200k_base on {:?}",
                text.get(..40)
            );
        }
    }

    /// The tables `build.rs` stores (without the overlapping-match automata) count every
    /// piece as `bpe-openai`'s whole tables do: each token's own bytes (one token), each
    /// token's bytes with the next token's first byte or two, and every line of this crate.
    #[test]
    fn the_stored_tables_count_what_bpe_openai_counts() {
        for (name, stored, plain) in [
            ("o200k_base", &*O200K_BPE, bpe_openai::o200k_base()),
            ("cl100k_base", &*CL100K_BPE, bpe_openai::cl100k_base()),
        ] {
            let tokens = plain.bpe.num_tokens();
            for id in 0..tokens {
                let bytes = plain
                    .bpe
                    .token_bytes(u32::try_from(id).expect("a token id"));
                assert_eq!(stored.count(bytes), 1, "{name}: token {id}");
                let next = plain
                    .bpe
                    .token_bytes(u32::try_from((id * 7919 + 1) % tokens).expect("a token id"));
                let joined = [bytes, &next[..next.len().min(2)]].concat();
                assert_eq!(
                    stored.count(&joined),
                    plain.bpe.count(&joined),
                    "{name}: {joined:?}"
                );
            }
            let sources = [include_str!("tokenizer.rs"), include_str!("redact/mod.rs")];
            for line in sources.iter().flat_map(|s| s.lines()) {
                assert_eq!(
                    stored.count(line.as_bytes()),
                    plain.bpe.count(line.as_bytes()),
                    "{name}: {line}"
                );
            }
        }
    }

    /// `splitter`'s pieces of `text`: as counting splits it (ASCII rules where they decide),
    /// and by the regex alone.
    fn both_splits(splitter: &Splitter, text: &str) -> (Vec<String>, Vec<String>) {
        let mut cache = splitter.regex.create_cache();
        let mut fast = Vec::new();
        splitter.for_each(&mut cache, text, |start, end| {
            fast.push(text[start..end].to_owned());
        });
        let mut slow = Vec::new();
        let mut last = 0;
        while let Some(end) = splitter.regex_piece_end(&mut cache, text, last) {
            slow.push(text[last..end].to_owned());
            last = end;
        }
        assert_eq!(last, text.len(), "the regex split covers {text:?}");
        (fast, slow)
    }

    /// The ASCII rules split exactly as the regex does, on generated text that crowds the
    /// cases the rules must get right (contractions in any case, words with and without a
    /// prefix byte, digit runs, symbol runs before newlines and slashes, whitespace runs
    /// before words, newlines and the end) and the non-ASCII characters next to them that
    /// only the regex can classify (letters, marks, digits, spaces, the long s and Kelvin
    /// sign that case-insensitive `s` and `k` match).
    #[test]
    fn the_ascii_rules_split_as_the_regex_does() {
        const ALPHABET: &[&str] = &[
            "a",
            "b",
            "k",
            "Z",
            "Q",
            "K",
            "s",
            "S",
            "t",
            "T",
            "e",
            "E",
            "l",
            "L",
            "r",
            "R",
            "v",
            "m",
            "d",
            "D",
            "0",
            "7",
            "9",
            "'",
            "'",
            " ",
            " ",
            "  ",
            "\t",
            "\n",
            "\r",
            "\r\n",
            "\u{b}",
            "\u{c}",
            "/",
            "+",
            "=",
            ".",
            "_",
            "-",
            "(",
            "#",
            "\"",
            "\0",
            "\u{7f}",
            "\u{e9}",
            "\u{c9}",
            "\u{17f}",
            "\u{212a}",
            "\u{a0}",
            "\u{85}",
            "\u{2028}",
            "\u{3000}",
            "\u{b2}",
            "\u{663}",
            "\u{301}",
            "\u{2c5}",
            "\u{65e5}",
            "\u{1f600}",
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        // xorshift64, taken below a bound that fits `usize`.
        let mut next = move |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            usize::try_from(state % bound as u64).expect("below a usize bound")
        };
        for splitter in [&*CL100K_SPLIT, &*O200K_SPLIT] {
            for _ in 0..100_000 {
                let len = next(24);
                let text: String = (0..len).map(|_| ALPHABET[next(ALPHABET.len())]).collect();
                let (fast, slow) = both_splits(splitter, &text);
                assert_eq!(fast, slow, "{:?} on {text:?}", splitter.rules);
            }
        }
    }

    /// The same on real text: this workspace's sources and documents.
    #[test]
    fn the_ascii_rules_split_real_text_as_the_regex_does() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut stack = vec![root];
        let mut texts = 0;
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let name = entry.file_name();
                if name.to_string_lossy().starts_with('.') || name == "target" {
                    continue;
                }
                if path.is_dir() {
                    stack.push(path);
                } else if let Ok(text) = std::fs::read_to_string(&path) {
                    texts += 1;
                    for splitter in [&*CL100K_SPLIT, &*O200K_SPLIT] {
                        let (fast, slow) = both_splits(splitter, &text);
                        assert!(fast == slow, "{:?} on {}", splitter.rules, path.display());
                    }
                }
            }
        }
        assert!(texts > 100, "only {texts} texts found");
    }

    #[test]
    fn names_round_trip() {
        for kind in TokenizerKind::ALL {
            assert_eq!(kind.name().parse::<TokenizerKind>(), Ok(kind));
            assert_eq!(kind.tokenizer().kind(), kind);
        }
        let err = "gpt2".parse::<TokenizerKind>().expect_err("unknown");
        assert!(err.to_string().contains("o200k_base"), "{err}");
    }

    #[test]
    fn approx_is_ceil_of_quarter_bytes() {
        let approx = TokenizerKind::Approx;
        assert_eq!(approx.count(""), 0);
        assert_eq!(approx.count("a"), 1);
        assert_eq!(approx.count("abcd"), 1);
        assert_eq!(approx.count("abcde"), 2);
        assert_eq!(approx.count("é"), 1); // two bytes
    }

    /// A piece in use survives any number of generations; one not met again is gone after
    /// two; the two generations never hold more than two generations' worth.
    #[test]
    fn generations_keep_the_pieces_in_use() {
        let mut memo = Generations::<u128>::default();
        memo.insert(u128::MAX, 7);
        memo.insert(u128::MAX - 1, 8);
        for key in 0..(5 * MEMO_GENERATION as u128) {
            if key % 1000 == 0 {
                assert_eq!(memo.get(&u128::MAX, || u128::MAX), Some(7), "at {key}");
            }
            memo.insert(key, 1);
            assert!(memo.new.len() <= MEMO_GENERATION && memo.old.len() <= MEMO_GENERATION);
        }
        assert_eq!(memo.get(&u128::MAX, || u128::MAX), Some(7));
        assert_eq!(memo.get(&(u128::MAX - 1), || u128::MAX - 1), None);
    }

    #[test]
    fn memoized_counts_equal_the_plain_bpe_counts() {
        // Enough distinct short pieces to fill several generations of both maps (the third
        // word is a piece of 18 to 22 bytes, past the packed keys).
        let mut text = String::new();
        for i in 0..(3 * MEMO_GENERATION) {
            let _ = write!(text, "w{i:x} ι{i} longword{i:x}suffix ");
        }
        text.push_str(&"x".repeat(100)); // a piece longer than the memo limit
        for (kind, plain) in [
            (TokenizerKind::O200kBase, bpe_openai::o200k_base()),
            (TokenizerKind::Cl100kBase, bpe_openai::cl100k_base()),
        ] {
            assert_eq!(kind.count(&text), plain.count(text.as_str()), "{kind}");
            assert_eq!(
                kind.count(&text),
                plain.count(text.as_str()),
                "{kind}, memo warm"
            );
        }
    }

    /// Two pieces get the same packed key exactly when their bytes are equal: pieces that
    /// differ only in length, in a zero byte, or in a byte past the end of the other, and
    /// pieces near the end of the text (read without the 16-byte window).
    #[test]
    fn packed_keys_are_equal_exactly_for_equal_pieces() {
        let text = b"ab\0ab\0\0abc ab\xffab\x01 \0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0ab";
        let mut pieces = Vec::new();
        for start in 0..text.len() {
            for end in start..=(start + PACKED_MAX).min(text.len()) {
                pieces.push((start, end));
            }
        }
        for &(s1, e1) in &pieces {
            for &(s2, e2) in &pieces {
                assert_eq!(
                    packed_key(text, s1, e1) == packed_key(text, s2, e2),
                    text[s1..e1] == text[s2..e2],
                    "{:?} and {:?}",
                    &text[s1..e1],
                    &text[s2..e2]
                );
            }
        }
    }

    /// The memo counts a one-byte piece as one token without asking: true of every byte a
    /// `str` piece can be (ASCII) in both encodings.
    #[test]
    fn every_ascii_byte_is_one_token() {
        for plain in [bpe_openai::o200k_base(), bpe_openai::cl100k_base()] {
            for byte in 0..128u8 {
                assert_eq!(plain.bpe.count(&[byte]), 1, "byte {byte:#04x}");
            }
        }
    }

    #[test]
    fn special_token_text_counts_as_ordinary_text() {
        // tiktoken's encode_ordinary: "<|endoftext|>" is 7 tokens of plain text, not 1 special.
        assert_eq!(TokenizerKind::Cl100kBase.count("<|endoftext|>"), 7);
        assert_eq!(TokenizerKind::O200kBase.count("<|endoftext|>"), 7);
    }
}
