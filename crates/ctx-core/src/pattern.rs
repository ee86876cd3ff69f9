//! Limits on regular expressions that come from outside (a CLI argument, an MCP tool call, an
//! HTTP request), checked before anything is compiled.
//!
//! The `regex` engines run in linear time, but the memory a compiled pattern takes is not bounded
//! by the compiled-size limit alone: the PikeVM keeps a slot per capture group for every NFA
//! state, so `()` repeated 60,000 times asks for about 115 GB when the first search starts, and
//! the process aborts (an allocation failure cannot be caught). [`check`] refuses such patterns
//! with an error that names the limit. Engines that compile a checked pattern also set the
//! compiled-size limits below and keep no capture slots they do not read.

use std::fmt;

/// Longest pattern accepted, in bytes.
pub const MAX_PATTERN_BYTES: usize = 64 * 1024;
/// Most capture groups a pattern may have (searching never reads them; each one costs memory
/// per NFA state).
pub const MAX_CAPTURE_GROUPS: usize = 128;
/// Deepest nesting of groups, repetitions and alternations.
pub const MAX_NESTING: u32 = 64;
/// Compiled-size limit for the NFA (bytes of heap).
pub const NFA_SIZE_LIMIT: usize = 16 * 1024 * 1024;
/// Cache limit for the lazy DFA (bytes of heap).
pub const DFA_SIZE_LIMIT: usize = 16 * 1024 * 1024;

/// Why a pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternError {
    /// The pattern is longer than [`MAX_PATTERN_BYTES`].
    TooLong { bytes: usize },
    /// More than [`MAX_CAPTURE_GROUPS`] groups.
    TooManyGroups { groups: usize },
    /// The pattern does not parse (including nesting deeper than [`MAX_NESTING`]).
    Syntax { message: String },
    /// The compiled pattern is over the size limit (reported by the engine that compiles it).
    TooBig,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLong { bytes } => write!(
                f,
                "the regex is {bytes} bytes long, over the limit of {MAX_PATTERN_BYTES}; search for a shorter pattern"
            ),
            Self::TooManyGroups { groups } => write!(
                f,
                "the regex has {groups} capture groups, over the limit of {MAX_CAPTURE_GROUPS}; use fewer groups or non-capturing `(?:…)` groups"
            ),
            Self::Syntax { message } => f.write_str(message),
            Self::TooBig => write!(
                f,
                "the regex compiles to more than {} MiB; search for a simpler pattern",
                NFA_SIZE_LIMIT / (1024 * 1024)
            ),
        }
    }
}

impl std::error::Error for PatternError {}

/// Checks a regular expression against the limits above (length, groups, nesting) and its
/// syntax. Literal searches need no check: they are escaped and have no groups.
pub fn check(pattern: &str) -> Result<(), PatternError> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(PatternError::TooLong {
            bytes: pattern.len(),
        });
    }
    let ast = regex_syntax::ast::parse::ParserBuilder::new()
        .nest_limit(MAX_NESTING)
        .build()
        .parse(pattern)
        .map_err(|err| PatternError::Syntax {
            message: syntax_message(pattern, err.kind(), err.span().start.column),
        })?;
    let groups = count_groups(&ast);
    if groups > MAX_CAPTURE_GROUPS {
        return Err(PatternError::TooManyGroups { groups });
    }
    Ok(())
}

/// One line: the problem, its column and the text near it (patterns can be long, so the
/// pattern itself is shown only when short).
fn syntax_message(pattern: &str, kind: &dyn fmt::Display, column: usize) -> String {
    let near: String = pattern
        .chars()
        .skip(column.saturating_sub(1))
        .take(12)
        .collect();
    if pattern.chars().count() <= 60 {
        format!("{kind} at column {column} of `{pattern}` (near `{near}`)")
    } else {
        format!("{kind} at column {column} (near `{near}`)")
    }
}

/// Counts capture groups without recursion (the nesting limit bounds depth, but a stack keeps
/// this safe whatever the parser allows).
fn count_groups(ast: &regex_syntax::ast::Ast) -> usize {
    use regex_syntax::ast::{Ast, GroupKind};
    let mut stack = vec![ast];
    let mut groups = 0;
    while let Some(node) = stack.pop() {
        match node {
            Ast::Group(group) => {
                if !matches!(group.kind, GroupKind::NonCapturing(_)) {
                    groups += 1;
                }
                stack.push(&group.ast);
            }
            Ast::Repetition(rep) => stack.push(&rep.ast),
            Ast::Alternation(alt) => stack.extend(alt.asts.iter()),
            Ast::Concat(concat) => stack.extend(concat.asts.iter()),
            _ => {}
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_patterns_pass() {
        for p in [
            "fn \\w+",
            "(a|b)+c",
            "(?i)todo|fixme",
            "^use (crate|std)::",
            "\\bfoo\\b",
        ] {
            assert_eq!(check(p), Ok(()), "{p}");
        }
    }

    #[test]
    fn many_groups_are_refused_before_compiling() {
        let empty_groups = "()".repeat(30_000);
        assert!(matches!(
            check(&"()".repeat(60_000)),
            Err(PatternError::TooLong { bytes: 120_000 })
        ));
        assert!(matches!(
            check(&empty_groups),
            Err(PatternError::TooManyGroups { groups: 30_000 })
        ));
        let starred = "(a|b)*".repeat(20_000);
        assert!(matches!(
            check(&starred),
            Err(PatternError::TooLong { .. } | PatternError::TooManyGroups { .. })
        ));
        let starred = "(a|b)*".repeat(1_000);
        assert_eq!(
            check(&starred),
            Err(PatternError::TooManyGroups { groups: 1_000 })
        );
        // Non-capturing groups cost no slots.
        assert_eq!(check(&"(?:a|b)*".repeat(1_000)), Ok(()));
    }

    #[test]
    fn deep_nesting_and_long_patterns_are_refused() {
        let deep = format!("{}a{}", "(?:".repeat(500), ")".repeat(500));
        let err = check(&deep).expect_err("too deep");
        assert!(matches!(err, PatternError::Syntax { .. }), "{err:?}");
        assert!(err.to_string().contains("nest"), "{err}");
        assert!(matches!(
            check(&"a".repeat(MAX_PATTERN_BYTES + 1)),
            Err(PatternError::TooLong { .. })
        ));
    }

    #[test]
    fn errors_are_one_line_and_do_not_echo_long_patterns() {
        let long = format!("{}(", "a".repeat(100));
        let message = check(&long).expect_err("unclosed").to_string();
        assert!(!message.contains('\n'), "{message}");
        assert!(!message.contains(&"a".repeat(100)), "{message}");
        let short = check("fo(o").expect_err("unclosed").to_string();
        assert!(short.contains("`fo(o`"), "{short}");
    }
}
