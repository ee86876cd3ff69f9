//! What a query says besides its words: the identifiers it names (in backticks, code lines,
//! calls, `snake_case`, `CamelCase`, dotted names), the module paths its dotted names spell,
//! the files a traceback walks through, quoted messages and error lines (to match string
//! literals verbatim), command-line flags, and its title (the first line of an issue).
//!
//! Everything here is general: nothing knows a project's names.

use crate::analyze::def_term;
use crate::text::query_terms;

/// Where an identifier was found, which says how sure we are that it is code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum IdentSource {
    /// In backticks, a call (`name(`), a dotted name, a traceback frame, or shaped like
    /// code (`snake_case`, `CamelCase`, `SCREAMING_CASE`).
    Prose,
    /// On a line that looks like code (indented, `>>>`, assignments, calls).
    CodeLine,
}

/// One identifier the query names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident {
    /// As written (`BoundWidget`, `id_for_label`).
    pub text: String,
    /// The whole-name term a definition look-up matches ([`def_term`]).
    pub term: String,
    /// Found in the first line.
    pub in_title: bool,
    pub source: IdentSource,
}

/// The features of one query.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    /// Search terms of the first non-empty line.
    pub title_terms: Vec<String>,
    /// Identifiers, distinct by term (first occurrence kept, title and prose preferred).
    pub idents: Vec<Ident>,
    /// `parent.name` definition terms from dotted names (`BoundWidget.id_for_label` →
    /// `boundwidget.idforlabel`).
    pub qualified: Vec<String>,
    /// Dotted or `::` names split into segments (`django.contrib.admin.utils`), for paths.
    pub module_paths: Vec<Vec<String>>,
    /// The same, found on code lines only (imports in a reporter's snippet).
    pub code_module_paths: Vec<Vec<String>>,
    /// Quoted messages and error-line messages, whitespace collapsed.
    pub messages: Vec<String>,
    /// Search terms of the messages and flags (matched against string literals).
    pub literal_terms: Vec<String>,
    /// The query has more than one non-empty line (an issue rather than a question).
    pub multiline: bool,
}

/// Reads the features of `raw`.
pub fn features(raw: &str) -> Features {
    let mut out = Features::default();
    let lines: Vec<&str> = raw.lines().filter(|l| !l.trim().is_empty()).collect();
    out.multiline = lines.len() > 1;
    let title = lines.first().copied().unwrap_or("");
    out.title_terms = query_terms(title);

    for (li, line) in lines.iter().enumerate() {
        let code_line = looks_like_code(line);
        scan_line(line, li == 0, code_line, &mut out);
        if let Some(message) = error_message(line) {
            push_message(&mut out, message);
        }
    }
    for quoted in quoted_spans(raw) {
        push_message(&mut out, quoted);
    }
    out.idents.sort_by(|a, b| {
        (a.source, !a.in_title)
            .cmp(&(b.source, !b.in_title))
            .then_with(|| a.term.cmp(&b.term))
    });
    let mut seen = std::collections::BTreeSet::new();
    out.idents.retain(|i| seen.insert(i.term.clone()));
    out.qualified.sort();
    out.qualified.dedup();
    out.module_paths.sort();
    out.module_paths.dedup();
    out.code_module_paths.sort();
    out.code_module_paths.dedup();
    out.code_module_paths
        .retain(|p| !out.module_paths.contains(p));
    out
}

fn push_message(out: &mut Features, message: &str) {
    let collapsed = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let words = collapsed.split(' ').filter(|w| w.len() > 1).count();
    if words < 2 || collapsed.len() > 300 {
        return;
    }
    for t in query_terms(&collapsed) {
        if !out.literal_terms.contains(&t) {
            out.literal_terms.push(t);
        }
    }
    if !out.messages.contains(&collapsed) {
        out.messages.push(collapsed);
    }
}

/// The parts of `messages` to look for verbatim in a file: runs of three or more words
/// (twelve characters or more) between quotes, numbers and format-like values, since a
/// message as printed has its placeholders filled in.
pub fn message_fragments(messages: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for message in messages {
        let mut run: Vec<&str> = Vec::new();
        let mut flush = |run: &mut Vec<&str>| {
            let text = run.join(" ");
            if run.len() >= 3 && text.len() >= 12 && !out.contains(&text) {
                out.push(text);
            }
            run.clear();
        };
        for word in message.split(' ') {
            let plain = !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_alphabetic() || matches!(c, ',' | '-' | '_'))
                && !word.ends_with(',');
            if plain {
                run.push(word);
            } else {
                // A word ending a sentence still belongs to the run before it.
                let stripped = word.trim_end_matches(['.', ':', ',', ';']);
                if !stripped.is_empty()
                    && stripped.len() < word.len()
                    && stripped.chars().all(char::is_alphabetic)
                {
                    run.push(stripped);
                }
                flush(&mut run);
            }
        }
        flush(&mut run);
    }
    out
}

/// Whether a line reads as code: indented by a tab or four spaces, a `>>>` prompt, or with
/// the punctuation of code (`=`, `(…)`, `{`, `;`) and few plain words.
fn looks_like_code(line: &str) -> bool {
    let trimmed = line.trim();
    if line.starts_with('\t') || line.starts_with("    ") || trimmed.starts_with(">>>") {
        return true;
    }
    let code_marks = trimmed
        .chars()
        .filter(|c| matches!(c, '=' | '(' | ')' | '{' | '}' | ';' | '[' | ']'))
        .count();
    let words = trimmed.split_whitespace().count();
    code_marks >= 2 && code_marks * 2 >= words
}

/// The message of an error line: `ValueError: message`, `error: message`,
/// `panicked at 'message'`.
fn error_message(line: &str) -> Option<&str> {
    let trimmed = line.trim();
    let (head, rest) = trimmed.split_once(": ")?;
    let head_word = head.rsplit(['.', ' ']).next().unwrap_or(head);
    let is_error = head_word.ends_with("Error")
        || head_word.ends_with("Exception")
        || head_word.ends_with("Warning")
        || matches!(
            head_word.to_ascii_lowercase().as_str(),
            "error" | "fatal" | "panic" | "warning"
        );
    (is_error && !head.contains(' ')).then_some(rest.trim())
}

/// Text between matching quotes on one line (`"…"`, `'…'`, `` `…` `` of three or more words).
fn quoted_spans(raw: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in raw.lines() {
        let bytes = line.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let q = bytes[i];
            if matches!(q, b'"' | b'\'' | b'`')
                && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
                && let Some(len) = bytes[i + 1..].iter().position(|&b| b == q)
            {
                let inner = &line[i + 1..i + 1 + len];
                if inner.split_whitespace().count() >= 3 {
                    out.push(inner);
                }
                i += len + 2;
                continue;
            }
            i += 1;
        }
    }
    out
}

/// Finds the identifiers, dotted names and flags of one line.
fn scan_line(line: &str, in_title: bool, code_line: bool, out: &mut Features) {
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let mut i = 0;
    let backticks: Vec<usize> = line.match_indices('`').map(|(p, _)| p).collect();
    let in_backticks = |pos: usize| {
        backticks
            .chunks(2)
            .any(|pair| pair.len() == 2 && pair[0] < pos && pos < pair[1])
    };
    while i < chars.len() {
        let (start, c) = chars[i];
        if !(c.is_alphanumeric() || c == '_') {
            // A command-line flag: `--settings`, `--no-color`.
            if c == '-'
                && line[start..].starts_with("--")
                && (start == 0 || !line[..start].ends_with(|p: char| p.is_alphanumeric()))
            {
                let flag: String = line[start + 2..]
                    .chars()
                    .take_while(|ch| ch.is_alphanumeric() || *ch == '-' || *ch == '_')
                    .collect();
                if flag.len() >= 3 {
                    for t in query_terms(&flag) {
                        if !out.literal_terms.contains(&t) {
                            out.literal_terms.push(t);
                        }
                    }
                }
            }
            i += 1;
            continue;
        }
        // A dotted run: segments of [A-Za-z0-9_] joined by `.` or `::` with no spaces.
        let mut end = i;
        let mut segments: Vec<&str> = Vec::new();
        let mut seg_start = start;
        loop {
            while end < chars.len() && (chars[end].1.is_alphanumeric() || chars[end].1 == '_') {
                end += 1;
            }
            let seg_end = chars.get(end).map_or(line.len(), |(p, _)| *p);
            segments.push(&line[seg_start..seg_end]);
            let sep = if line[seg_end..].starts_with("::") {
                2
            } else {
                usize::from(line[seg_end..].starts_with('.'))
            };
            let next_ok = sep > 0
                && line[seg_end + sep..]
                    .chars()
                    .next()
                    .is_some_and(|ch| ch.is_alphabetic() || ch == '_');
            if !next_ok {
                break;
            }
            end += sep;
            seg_start = chars.get(end).map_or(line.len(), |(p, _)| *p);
        }
        let run_end = chars.get(end).map_or(line.len(), |(p, _)| *p);
        let called = line[run_end..].starts_with('(');
        let quoted = in_backticks(start);
        let dotted = segments.len() > 1;
        // A file name (`app.py`) is a path, not a dotted name.
        let file_like = dotted
            && segments
                .last()
                .is_some_and(|s| s.len() <= 4 && s.chars().all(|c| c.is_ascii_lowercase()))
            && segments.len() == 2
            && !called;
        if dotted && !file_like {
            let path = segments.iter().map(|s| (*s).to_owned()).collect();
            if code_line && !quoted {
                out.code_module_paths.push(path);
            } else {
                out.module_paths.push(path);
            }
        }
        for (k, seg) in segments.iter().enumerate() {
            let last = k + 1 == segments.len();
            // In `models.Index` or `self.query.subquery` the leading segments are modules
            // and objects; the last one is what is defined somewhere.
            let code = quoted
                || (dotted && !file_like && last)
                || (last && called)
                || shaped_like_code(seg);
            let source = if code {
                IdentSource::Prose
            } else if code_line && seg.chars().count() >= 3 {
                IdentSource::CodeLine
            } else {
                continue;
            };
            if seg.chars().all(|c| c.is_ascii_digit()) {
                continue;
            }
            let term = def_term(seg);
            if term.len() < 2 {
                continue;
            }
            out.idents.push(Ident {
                text: (*seg).to_owned(),
                term,
                in_title,
                source,
            });
        }
        if dotted && !file_like {
            for pair in segments.windows(2) {
                let (a, b) = (def_term(pair[0]), def_term(pair[1]));
                if !a.is_empty() && !b.is_empty() {
                    out.qualified.push(format!("{a}.{b}"));
                }
            }
        }
        i = end.max(i + 1);
    }
}

/// `snake_case`, `CamelCase` (a lower-to-upper change inside), `SCREAMING_CASE`, `__dunder__`.
fn shaped_like_code(word: &str) -> bool {
    let inner_underscore = word.trim_matches('_').contains('_') || word.starts_with("__");
    let chars: Vec<char> = word.chars().collect();
    let camel = chars
        .windows(2)
        .any(|w| w[0].is_lowercase() && w[1].is_uppercase())
        || (chars.len() > 2
            && chars[0].is_uppercase()
            && chars[1].is_uppercase()
            && chars.iter().any(|c| c.is_lowercase()));
    inner_underscore || camel
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms_of(f: &Features) -> Vec<&str> {
        f.idents.iter().map(|i| i.term.as_str()).collect()
    }

    #[test]
    fn backticked_called_and_shaped_identifiers() {
        let f = features("Fix `render` so that method_decorator() keeps HttpResponse working");
        let t = terms_of(&f);
        assert!(t.contains(&"render"));
        assert!(t.contains(&"methoddecorator"));
        assert!(t.contains(&"httpresponse"));
        assert!(!t.contains(&"fix"));
        assert!(!t.contains(&"working"));
        assert!(f.idents.iter().all(|i| i.in_title));
    }

    #[test]
    fn dotted_names_give_paths_and_qualified_pairs() {
        let f = features(
            "call django.contrib.admin.utils.display_for_field and BoundWidget.id_for_label; see app.py.",
        );
        assert!(
            f.module_paths.contains(
                &["django", "contrib", "admin", "utils", "display_for_field"]
                    .map(str::to_owned)
                    .to_vec()
            )
        );
        assert!(f.qualified.contains(&"boundwidget.idforlabel".to_owned()));
        assert!(terms_of(&f).contains(&"displayforfield"));
        // A file name is not a dotted name.
        assert!(!f.module_paths.iter().any(|p| p == &["app", "py"]));
    }

    #[test]
    fn quoted_messages_tracebacks_and_flags() {
        let q = "Crash on save\nTraceback (most recent call last):\n  File \"/venv/lib/site/pkg/models/query.py\", line 12, in get_queryset\n    return self._fetch()\nValueError: The QuerySet value for an exact lookup must be limited\nRun with --no-color and it says \"cannot reorder query once a slice has been taken\".";
        let f = features(q);
        assert!(
            f.messages
                .iter()
                .any(|m| m.starts_with("The QuerySet value for an exact lookup"))
        );
        assert!(
            f.messages
                .contains(&"cannot reorder query once a slice has been taken".to_owned())
        );
        assert!(terms_of(&f).contains(&"getqueryset"));
        assert!(f.literal_terms.contains(&"color".to_owned()));
        assert!(f.literal_terms.contains(&"lookup".to_owned()));
        assert_eq!(f.title_terms, ["crash", "save"]);
        assert!(
            message_fragments(&f.messages)
                .contains(&"The QuerySet value for an exact lookup must be limited".to_owned())
        );
        assert_eq!(
            message_fragments(&[
                "Cannot resolve keyword 'foo' into field. Choices are: a, b".to_owned()
            ]),
            ["Cannot resolve keyword"]
        );
        assert!(f.multiline);
    }
}
