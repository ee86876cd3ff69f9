//! Secrets cut by a window.
//!
//! Line reads, search contexts and diff hunks show a window of a file. A window may hold part
//! of a private key block: its header without its end, or body lines and the end without the
//! header. The rules in [`crate::redact`] match whole blocks (and a lone header), so the base64
//! body lines of a cut block would pass. [`redact_key_fragments`] replaces every base64-looking
//! line that is joined, through other such lines, to a key block's header or footer (or to a
//! redacted key), so no part of a key leaves in a window.

/// What replaces each body line of a cut key block.
pub const FRAGMENT: &str = "[REDACTED:PRIVATE_KEY_FRAGMENT]";

/// Redacts a window of a file with the built-in rules, then the body lines of key blocks the
/// window cut: what every exit that shows part of a file (line reads, search contexts, diff
/// hunks, code-intelligence answers) applies. `None` when nothing was replaced.
pub fn redact_window(text: &str) -> Option<(String, Vec<crate::redact::RedactionFinding>)> {
    let redacted = crate::redact::Redactor::builtin().redact(text);
    let mut findings = redacted.findings;
    let cut = redact_key_fragments(&redacted.text);
    if cut.is_some() {
        findings.push(crate::redact::RedactionFinding {
            rule: "PRIVATE_KEY_FRAGMENT".to_owned(),
            line: 1,
        });
    }
    match cut {
        Some(text) => Some((text, findings)),
        None if findings.is_empty() => None,
        None => Some((redacted.text.into_owned(), findings)),
    }
}

/// Redacts the window `window` (a byte range of whole lines) of `whole`, a file's text, from
/// the secrets found over the whole text ([`crate::redact::Redactor::secret_spans`], built-in
/// rules): every part of the window a secret covers is replaced, line by line, so the window
/// keeps its lines (and their numbers) and a secret whose first line is outside the window
/// (a PEM body under a header above it) is hidden all the same. Then the body lines of key
/// blocks the window cut ([`redact_key_fragments`]). `None` when nothing was replaced.
pub fn redact_window_of(
    whole: &str,
    window: std::ops::Range<usize>,
) -> Option<(String, Vec<crate::redact::RedactionFinding>)> {
    let text = whole.get(window.clone())?;
    let spans = crate::redact::Redactor::builtin().secret_spans(whole);
    let mut out = String::with_capacity(text.len());
    let mut findings = Vec::new();
    let mut copied = window.start;
    for (range, rule) in spans {
        if range.end <= window.start || range.start >= window.end {
            continue;
        }
        let start = range.start.max(window.start);
        let end = range.end.min(window.end);
        if start < copied {
            continue;
        }
        out.push_str(&whole[copied..start]);
        // One marker per line the secret covers in the window: its newlines stay.
        let covered = &whole[start..end];
        let mut first = true;
        for piece in covered.split('\n') {
            if !first {
                out.push('\n');
            }
            if !piece.is_empty() || first {
                out.push_str("[REDACTED:");
                out.push_str(rule);
                out.push(']');
            }
            first = false;
        }
        let line = whole[window.start..start].matches('\n').count() + 1;
        findings.push(crate::redact::RedactionFinding {
            rule: rule.to_owned(),
            line: u32::try_from(line).unwrap_or(u32::MAX),
        });
        copied = end;
    }
    out.push_str(&whole[copied..window.end]);
    let cut = redact_key_fragments(&out);
    if cut.is_some() {
        findings.push(crate::redact::RedactionFinding {
            rule: "PRIVATE_KEY_FRAGMENT".to_owned(),
            line: 1,
        });
    }
    match cut {
        Some(text) => Some((text, findings)),
        None if findings.is_empty() => None,
        None => Some((out, findings)),
    }
}

/// Whether a line marks a private key block (header, footer, or an already redacted key).
fn is_anchor(line: &str) -> bool {
    (line.contains("PRIVATE KEY") && (line.contains("-----BEGIN") || line.contains("-----END")))
        || line.contains("[REDACTED:PEM")
        || line.contains("PRIVATE_KEY]")
}

/// A line without the `  12: ` or `→ 12: ` prefix of a numbered context window.
fn unnumbered(line: &str) -> &str {
    let rest = line.trim_start();
    let rest = rest.strip_prefix('→').unwrap_or(rest).trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    match rest[digits..].strip_prefix(':') {
        Some(after) if digits > 0 => after,
        _ => line,
    }
}

/// Whether a line looks like a line of a PEM body (base64, at least 16 characters, maybe with
/// the quotes, commas or `\n` escapes of a string literal around it, or a window's line
/// number in front).
fn is_body(line: &str) -> bool {
    let trimmed = unnumbered(line)
        .trim()
        .trim_matches(|c: char| matches!(c, '"' | '\'' | ',' | '+'))
        .trim_end_matches("\\n");
    trimmed.len() >= 16
        && trimmed
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
}

/// Replaces the body lines of cut key blocks; `None` when there are none.
pub fn redact_key_fragments(text: &str) -> Option<String> {
    if !text.contains("PRIVATE KEY") && !text.contains("[REDACTED:") {
        return None;
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let mut redact = vec![false; lines.len()];
    for (i, line) in lines.iter().enumerate() {
        if !is_anchor(line) {
            continue;
        }
        for j in (0..i).rev() {
            if !is_body(lines[j]) {
                break;
            }
            redact[j] = true;
        }
        for j in i + 1..lines.len() {
            if !is_body(lines[j]) {
                break;
            }
            redact[j] = true;
        }
    }
    if !redact.contains(&true) {
        return None;
    }
    let out: Vec<String> = lines
        .iter()
        .zip(&redact)
        .map(|(line, r)| {
            if *r {
                // A window's line number stays.
                let number = &line[..line.len() - unnumbered(line).len()];
                format!(
                    "{number}{}{FRAGMENT}",
                    if number.is_empty() { "" } else { " " }
                )
            } else {
                (*line).to_owned()
            }
        })
        .collect();
    Some(out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MbtPkZc4dd7LH6Hy";

    #[test]
    fn a_header_without_its_end_takes_the_body_lines_after_it() {
        let text = format!("x = 1\n-----BEGIN RSA PRIVATE KEY-----\n{BODY}\n{BODY}");
        let out = redact_key_fragments(&text).expect("redacted");
        assert!(!out.contains(BODY), "{out}");
        assert!(out.starts_with("x = 1\n"));
        assert_eq!(out.lines().count(), 4, "line count kept");
    }

    #[test]
    fn an_end_without_its_header_takes_the_body_lines_before_it() {
        let text = format!("  \"{BODY}\\n\"\n{BODY}\n-----END PRIVATE KEY-----\nnext()");
        let out = redact_key_fragments(&text).expect("redacted");
        assert!(!out.contains(BODY), "{out}");
        assert!(out.ends_with("next()"));
    }

    #[test]
    fn numbered_context_windows_are_read_through_their_prefixes() {
        let text = format!(
            "  6: KEY = \"\"\"-----BEGIN RSA PRIVATE KEY-----\n  7: {BODY}\n→ 8: {BODY}\n  9: x = 1"
        );
        let out = redact_key_fragments(&text).expect("redacted");
        assert!(!out.contains(BODY), "{out}");
        assert!(out.ends_with("  9: x = 1"));
    }

    #[test]
    fn base64_away_from_keys_is_kept() {
        let text = format!("data = \"{BODY}\"\nother\n");
        assert_eq!(redact_key_fragments(&text), None);
        assert_eq!(redact_key_fragments("plain text"), None);
    }
}
