//! Reading JSON Lines logs: every non-blank line must be a JSON object.

use std::path::Path;

use serde_json::{Map, Value};

use super::{ImportOptions, ImportReport, ImportWarning, json_problem};
use crate::RunError;

/// JSON objects with their 1-based line numbers.
pub(crate) type Objects = Vec<(usize, Map<String, Value>)>;

/// The lines of `bytes` that are JSON objects, with their 1-based numbers. A line that is not
/// (not UTF-8, not JSON, truncated, not an object) fails the whole file, unless
/// `options.skip_bad_lines`: then it is reported as a warning and counted in the report.
pub(crate) fn objects(
    path: &Path,
    format: &'static str,
    bytes: &[u8],
    options: &ImportOptions,
    report: &mut ImportReport,
    warnings: &mut Vec<ImportWarning>,
) -> Result<Objects, RunError> {
    let mut out = Vec::new();
    for (n, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let line_no = n + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let problem = match std::str::from_utf8(line) {
            Err(e) => format!("it is not UTF-8 ({e})"),
            Ok(text) => match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(obj)) => {
                    out.push((line_no, obj));
                    continue;
                }
                Ok(_) => "not a JSON object".to_owned(),
                Err(err) => json_problem(&err),
            },
        };
        if !options.skip_bad_lines {
            return Err(RunError::BadLine {
                path: path.to_owned(),
                format,
                line: line_no,
                detail: problem,
            });
        }
        report.skipped_lines += 1;
        warnings.push(ImportWarning::at_line(line_no, problem));
    }
    Ok(out)
}
