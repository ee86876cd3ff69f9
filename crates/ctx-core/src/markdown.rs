//! Markdown code fences that hold any content: the one copy of the rule, for packs, selection
//! payloads, hooks and MCP answers.

/// The longest run of backticks in `bytes`.
pub fn longest_backtick_run(bytes: &[u8]) -> usize {
    let (mut longest, mut at) = (0, 0);
    while let Some(offset) = memchr::memchr(b'`', &bytes[at..]) {
        let start = at + offset;
        let run = bytes[start..].iter().take_while(|&&b| b == b'`').count();
        longest = longest.max(run);
        at = start + run;
    }
    longest
}

/// A fence for `content`: three backticks, or one more than its longest run of them, so no
/// line of the content can close the block.
pub fn fence_for(content: &str) -> String {
    "`".repeat(longest_backtick_run(content.as_bytes()).max(2) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backtick_runs_are_measured() {
        assert_eq!(longest_backtick_run(b""), 0);
        assert_eq!(longest_backtick_run(b"a `b` ``c`` d"), 2);
        assert_eq!(longest_backtick_run(b"````"), 4);
        assert_eq!(longest_backtick_run(b"x```y`"), 3);
    }

    #[test]
    fn fences_outgrow_the_content_s_backticks() {
        assert_eq!(fence_for(""), "```");
        assert_eq!(fence_for("a `b` ``c``"), "```");
        assert_eq!(fence_for("a ``` b"), "````");
        assert_eq!(fence_for("`````"), "``````");
    }
}
