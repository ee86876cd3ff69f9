//! Time formatting without a clock: the caller passes times in as Unix seconds.

pub use ctx_fs::time::rfc3339;

/// A short relative age: `just now`, `5m ago`, `3h ago`, `2d ago`, `4w ago`, `7mo ago`, `2y ago`.
pub fn ago(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..60 => "just now".to_owned(),
        60..3_600 => format!("{}m ago", s / 60),
        3_600..86_400 => format!("{}h ago", s / 3_600),
        86_400..1_209_600 => format!("{}d ago", s / 86_400),
        1_209_600..5_184_000 => format!("{}w ago", s / 604_800),
        5_184_000..31_536_000 => format!("{}mo ago", s / 2_592_000),
        _ => format!("{}y ago", s / 31_536_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(ago(30), "just now");
        assert_eq!(ago(7_200), "2h ago");
        assert_eq!(ago(3 * 86_400), "3d ago");
    }
}
