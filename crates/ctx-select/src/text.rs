//! Turning text into search terms: words split on case changes, `_` and punctuation, lower
//! cased and lightly stemmed, so `ContextCache`, `context_cache` and "context caches" meet.

/// English words that carry no meaning in a query ("how does the parser work" → parser, work).
pub const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as",
    "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by",
    "can", "could", "did", "do", "does", "doing", "done", "down", "during", "each", "few", "for",
    "from", "further", "get", "gets", "got", "had", "has", "have", "having", "he", "her", "here",
    "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just",
    "let", "like", "make", "me", "more", "most", "my", "need", "no", "nor", "not", "now", "of",
    "off", "on", "once", "only", "or", "other", "our", "ours", "out", "over", "own", "please",
    "same", "she", "should", "show", "so", "some", "such", "tell", "than", "that", "the", "their",
    "them", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under",
    "until", "up", "us", "use", "used", "using", "very", "want", "was", "we", "were", "what",
    "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you",
    "your", "yours",
];

/// Words of a task that say what to do, not where: they rank like any term, but a file
/// matching only these is not relevant (`fix the parser` in a project without a parser
/// selects nothing).
pub const FILLER_WORDS: &[&str] = &[
    "add",
    "added",
    "adding",
    "allow",
    "bug",
    "change",
    "changed",
    "code",
    "correct",
    "crash",
    "description",
    "doesn",
    "don",
    "error",
    "example",
    "expected",
    "fail",
    "fails",
    "feature",
    "file",
    "fix",
    "fixed",
    "fixing",
    "function",
    "help",
    "implement",
    "improve",
    "instead",
    "issue",
    "method",
    "new",
    "problem",
    "project",
    "refactor",
    "remove",
    "support",
    "thing",
    "update",
    "way",
    "work",
    "working",
    "wrong",
];

/// Words of conversation and of instructions to an agent that name no code: what a prompt
/// like "thanks, looks good", "run the tests" or "commit and push" is made of (as search
/// terms: stemmed). A prompt with no other word than these, stop words and filler words has
/// no code subject, and the Claude Code hook stays silent on it.
pub const CHAT_WORDS: &[&str] = &[
    "actually",
    "again",
    "agree",
    "agreed",
    "ahead",
    "already",
    "alright",
    "also",
    "amend",
    "answer",
    "anything",
    "approach",
    "ask",
    "asking",
    "awesome",
    "begin",
    "better",
    "brief",
    "broke",
    "broken",
    "build",
    "bye",
    "careful",
    "carefully",
    "cargo",
    "change",
    "check",
    "clarify",
    "cleaner",
    "clippy",
    "commit",
    "concise",
    "continue",
    "cool",
    "detail",
    "detailed",
    "diff",
    "different",
    "done",
    "double",
    "elaborate",
    "everything",
    "exactly",
    "excellent",
    "explain",
    "fail",
    "failed",
    "failing",
    "faster",
    "fine",
    "finish",
    "finished",
    "first",
    "fmt",
    "format",
    "formatter",
    "git",
    "go",
    "going",
    "good",
    "great",
    "happen",
    "happened",
    "happening",
    "hello",
    "hey",
    "hi",
    "hm",
    "hmm",
    "idea",
    "instead",
    "keep",
    "last",
    "lgtm",
    "lint",
    "linter",
    "lol",
    "longer",
    "look",
    "maybe",
    "mean",
    "meant",
    "merge",
    "message",
    "mind",
    "mistake",
    "next",
    "nice",
    "nope",
    "now",
    "npm",
    "ok",
    "okay",
    "one",
    "open",
    "opinion",
    "perfect",
    "pip",
    "plan",
    "pnpm",
    "pr",
    "previous",
    "proceed",
    "pull",
    "push",
    "pytest",
    "question",
    "quick",
    "quickly",
    "really",
    "rebase",
    "redo",
    "rerun",
    "retry",
    "revert",
    "right",
    "rollback",
    "run",
    "running",
    "said",
    "say",
    "second",
    "seem",
    "ship",
    "shorter",
    "show",
    "simpler",
    "slower",
    "something",
    "sorry",
    "sound",
    "squash",
    "start",
    "stash",
    "step",
    "still",
    "stop",
    "stuff",
    "summarize",
    "summary",
    "sure",
    "tell",
    "test",
    "testing",
    "thank",
    "thing",
    "think",
    "thx",
    "time",
    "tox",
    "try",
    "two",
    "ty",
    "undo",
    "verbose",
    "verify",
    "wait",
    "whatever",
    "work",
    "worked",
    "wow",
    "write",
    "wrote",
    "yarn",
    "yeah",
    "yep",
    "yes",
    "yet",
    "yup",
];

/// Whether `term` (a search term) is a word of conversation or of an instruction to an
/// agent ([`CHAT_WORDS`]).
pub fn is_chat_word(term: &str) -> bool {
    CHAT_WORDS.binary_search(&term).is_ok()
}

/// The terms of `prompt` that can name code: its query terms less stop, filler and chat
/// words, in first-seen order. Empty for small talk and code-less instructions.
pub fn subject_terms(prompt: &str) -> Vec<String> {
    query_terms(prompt)
        .into_iter()
        .filter(|t| !is_filler_word(t) && !is_chat_word(t))
        .collect()
}

/// Whether `term` (a search term) is a filler word.
pub fn is_filler_word(term: &str) -> bool {
    FILLER_WORDS.binary_search(&term).is_ok()
}

/// Whether `word` (lower case) is a stop word.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// Splits `text` into terms: alphanumeric runs, then identifier parts (camelCase, `_`,
/// letter/digit boundaries), lower cased and stemmed; a multi-part identifier also yields
/// itself joined (`ContextCache` → `context`, `cache`, `contextcache`). One-character parts
/// and pure numbers are dropped.
pub fn terms(text: &str, mut emit: impl FnMut(&str)) {
    // Reused across words: an index build splits every word of every document.
    let mut joined = String::new();
    let mut lower = String::new();
    let mut parts: Vec<(usize, usize)> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric() && c != '_') {
        if word.is_empty() {
            continue;
        }
        if word.is_ascii() {
            ascii_part_ranges(word.as_bytes(), &mut lower, &mut parts);
            let lower = lower.as_str();
            let parts = parts.iter().map(|&(from, to)| &lower[from..to]);
            emit_word_terms(parts, &mut joined, &mut emit);
        } else {
            let parts = char_identifier_parts(word);
            emit_word_terms(parts.iter().map(String::as_str), &mut joined, &mut emit);
        }
    }
}

/// The terms of one word split into `parts`: the parts joined (when more than one), then each
/// part of two characters or more that is not all digits.
fn emit_word_terms<'p>(
    parts: impl Iterator<Item = &'p str> + Clone,
    joined: &mut String,
    emit: &mut impl FnMut(&str),
) {
    if parts.clone().nth(1).is_some() {
        joined.clear();
        joined.extend(parts.clone());
        if joined.len() > 2 && joined.len() <= 64 {
            emit(&stem_of(joined));
        }
    }
    for part in parts {
        if part.chars().nth(1).is_none() || part.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if part.len() <= 64 {
            emit(&stem_of(part));
        }
    }
}

/// The parts of an ASCII word without an allocation per part: `word` lower cased into
/// `lower`, and the parts' byte ranges in it into `parts` (the boundaries of
/// [`identifier_parts`]: ASCII letters and digits are what `char`'s classes say of them).
fn ascii_part_ranges(word: &[u8], lower: &mut String, parts: &mut Vec<(usize, usize)>) {
    lower.clear();
    parts.clear();
    let mut start = 0;
    for (i, &c) in word.iter().enumerate() {
        if c == b'_' {
            if start < i {
                parts.push((start, i));
            }
            lower.push('_');
            start = i + 1;
            continue;
        }
        if i > 0 {
            let prev = word[i - 1];
            let next = word.get(i + 1).copied();
            let boundary = (prev.is_ascii_lowercase() && c.is_ascii_uppercase())
                || (prev.is_ascii_uppercase()
                    && c.is_ascii_uppercase()
                    && next.is_some_and(|n| n.is_ascii_lowercase()))
                || (prev.is_ascii_alphabetic() && c.is_ascii_digit())
                || (prev.is_ascii_digit() && c.is_ascii_alphabetic());
            if boundary && start < i {
                parts.push((start, i));
                start = i;
            }
        }
        lower.push(char::from(c.to_ascii_lowercase()));
    }
    if start < word.len() {
        parts.push((start, word.len()));
    }
}

/// The parts of one identifier, lower cased: `HTTPServer2x` → `http`, `server`, `2`, `x`.
pub fn identifier_parts(word: &str) -> Vec<String> {
    if word.is_ascii() {
        let (mut lower, mut parts) = (String::new(), Vec::new());
        ascii_part_ranges(word.as_bytes(), &mut lower, &mut parts);
        return parts
            .iter()
            .map(|&(from, to)| lower[from..to].to_owned())
            .collect();
    }
    char_identifier_parts(word)
}

/// [`identifier_parts`] of any word, by `char`.
fn char_identifier_parts(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    let mut parts = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' {
            if !current.is_empty() {
                parts.push(std::mem::take(&mut current));
            }
            continue;
        }
        if let Some(&prev) = i.checked_sub(1).and_then(|p| chars.get(p)) {
            let next = chars.get(i + 1).copied();
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase()
                    && c.is_uppercase()
                    && next.is_some_and(char::is_lowercase))
                || (prev.is_alphabetic() && c.is_ascii_digit())
                || (prev.is_ascii_digit() && c.is_alphabetic());
            if boundary && !current.is_empty() {
                parts.push(std::mem::take(&mut current));
            }
        }
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

/// A light, predictable stemmer: plural endings only (`caches` → `cache`, `queries` → `query`).
pub fn stem(word: &str) -> String {
    stem_of(word).into_owned()
}

/// [`stem`], borrowing the word when it is its own stem (most are).
fn stem_of(word: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    let n = word.len();
    if !word.is_ascii() || n <= 3 {
        return Cow::Borrowed(word);
    }
    if let Some(base) = word.strip_suffix("ies")
        && n > 4
    {
        return Cow::Owned(format!("{base}y"));
    }
    if word.ends_with("ss") || word.ends_with("us") || word.ends_with("is") {
        return Cow::Borrowed(word);
    }
    Cow::Borrowed(word.strip_suffix('s').unwrap_or(word))
}

/// The distinct query terms of `query`, stop words removed, in first-seen order.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric() && c != '_') {
        if word.is_empty() || is_stop_word(&word.to_lowercase()) {
            continue;
        }
        terms(word, |t| {
            if !is_stop_word(t) && !out.iter().any(|o| o == t) {
                out.push(t.to_owned());
            }
        });
    }
    out
}

/// The keywords of a prompt for display (`[KEYWORDS: …]`): words of three or more characters
/// that are not stop words, lower cased, in first-seen order, identifiers kept whole.
pub fn keywords(prompt: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in prompt.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-') {
        let word = word.trim_matches('-').to_lowercase();
        if word.chars().count() < 3
            || is_stop_word(&word)
            || word.chars().all(|c| c.is_ascii_digit())
        {
            continue;
        }
        if !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn ascii_words_split_as_any_word_does(word in "[A-Za-z0-9_]{0,24}") {
            proptest::prop_assert_eq!(
                identifier_parts(&word),
                char_identifier_parts(&word)
            );
        }

        #[test]
        fn ascii_text_gives_the_terms_any_text_does(text in "[A-Za-z0-9_ .:()]{0,64}") {
            let mut fast = Vec::new();
            terms(&text, |t| fast.push(t.to_owned()));
            let mut slow = Vec::new();
            let mut joined = String::new();
            for word in text.split(|c: char| !c.is_alphanumeric() && c != '_') {
                if !word.is_empty() {
                    let mut emit = |t: &str| slow.push(t.to_owned());
                    let parts = char_identifier_parts(word);
                    emit_word_terms(parts.iter().map(String::as_str), &mut joined, &mut emit);
                }
            }
            proptest::prop_assert_eq!(fast, slow);
        }
    }

    fn all(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        terms(text, |t| out.push(t.to_owned()));
        out
    }

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOP_WORDS);
    }

    #[test]
    fn filler_words_are_sorted_for_binary_search() {
        let mut chat = CHAT_WORDS.to_vec();
        chat.sort_unstable();
        chat.dedup();
        assert_eq!(chat, CHAT_WORDS, "sorted, once each");
        for word in CHAT_WORDS {
            assert_eq!(stem(word), *word, "{word} is stored as its stem");
        }
        let mut sorted = FILLER_WORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, FILLER_WORDS);
    }

    #[test]
    fn small_talk_and_instructions_have_no_subject_terms() {
        for prompt in [
            "thanks, looks good",
            "run the tests",
            "commit and push",
            "explain your last answer",
            "ok",
            "try again",
            "LGTM, ship it!",
        ] {
            assert_eq!(subject_terms(prompt), Vec::<String>::new(), "{prompt}");
        }
        assert_eq!(
            subject_terms("thanks! now fix the redirect handling in _client.py"),
            ["redirect", "handling", "client", "py"]
        );
        assert_eq!(subject_terms("run the parser tests"), ["parser"]);
    }

    #[test]
    fn identifiers_split_on_case_underscore_and_digits() {
        assert_eq!(identifier_parts("ContextCache"), ["context", "cache"]);
        assert_eq!(identifier_parts("parse_file"), ["parse", "file"]);
        assert_eq!(identifier_parts("HTTPServer"), ["http", "server"]);
        assert_eq!(identifier_parts("sha256sum"), ["sha", "256", "sum"]);
        assert_eq!(
            all("ContextCache::load()"),
            ["contextcache", "context", "cache", "load"]
        );
    }

    #[test]
    fn stemming_meets_plurals() {
        assert_eq!(stem("caches"), "cache");
        assert_eq!(stem("queries"), "query");
        assert_eq!(stem("class"), "class");
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("parsing"), "parsing");
        assert_eq!(stem("parser"), "parser");
    }

    #[test]
    fn query_terms_drop_stop_words_and_punctuation() {
        assert_eq!(
            query_terms("How does the Parser work?!"),
            ["parser", "work"]
        );
        assert!(query_terms("the of and").is_empty());
        assert!(query_terms("?!... ---").is_empty());
        assert_eq!(
            query_terms("fix `src/walk.rs`"),
            ["fix", "src", "walk", "rs"]
        );
    }

    #[test]
    fn keywords_keep_identifiers_whole() {
        assert_eq!(
            keywords("fix the tree-sitter parser"),
            ["fix", "tree-sitter", "parser"]
        );
    }
}
