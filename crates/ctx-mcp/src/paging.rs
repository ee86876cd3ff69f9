//! Token-capped answers: an answer larger than `max_tokens` is cut into pages at item
//! boundaries, never silently, and `next_cursor` fetches the rest.
//!
//! A tool builds its whole answer as JSON and names the fields that may be split: arrays (split
//! between items) and long texts (split after a line, or every 1 KiB inside a long line). The
//! units of all such fields, in order, form one sequence; a page is a contiguous run of it, and
//! a cursor is the index of the next unit plus a pin that ties it to the call that made it. The
//! page's text (what the tool renders from the page for the model, plus a line saying how to
//! continue) is measured exactly with the workspace tokenizer; texts no longer in bytes than
//! the cap are never tokenized, since a token is at least one byte.

use std::fmt::Write as _;

use ctx::core::TokenizerKind;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::ToolError;

/// The smallest cap an answer may ask for.
pub const MIN_MAX_TOKENS: u64 = 64;

/// The longest piece of text one unit holds.
const TEXT_UNIT_BYTES: usize = 1024;

/// Where a page sits in the whole answer.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct PageInfo {
    /// Index of this page's first unit (an item of a list, or a line or 1 KiB piece of text).
    pub start: u64,
    /// Units on this page.
    pub count: u64,
    /// Units in the whole answer.
    pub total: u64,
    /// For an answer with a payload: the bytes of it this page carries, as the first block of
    /// the text content (0 when none), so the pages concatenate to its exact bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_bytes: Option<u64>,
}

/// A field that may be split across pages.
#[derive(Debug, Clone, Copy)]
pub enum Section {
    /// An array, split between items.
    Items(&'static str),
    /// A string, split after lines (or inside lines longer than 1 KiB).
    Text(&'static str),
}

impl Section {
    fn name(self) -> &'static str {
        match self {
            Self::Items(name) | Self::Text(name) => name,
        }
    }
}

/// Where to start and how much to return.
#[derive(Debug, Clone)]
pub struct PageRequest {
    pub max_tokens: u64,
    pub start: usize,
    /// Ties cursors to the call that handed them out.
    pub pin: String,
    pub tokenizer: TokenizerKind,
}

/// A parsed `cursor` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub start: usize,
    pub pin: String,
}

impl Cursor {
    /// The cursor's text form, `<start>.<pin>`.
    pub fn encode(&self) -> String {
        format!("{}.{}", self.start, self.pin)
    }

    /// Parses a cursor a previous answer handed out.
    pub fn parse(text: &str) -> Result<Self, ToolError> {
        let bad = || {
            ToolError::BadCursor(format!(
                "`{text}` is not a cursor this server handed out; pass `next_cursor` exactly as returned, or leave `cursor` out to start from the beginning"
            ))
        };
        let (start, pin) = text.split_once('.').ok_or_else(bad)?;
        let start = start.parse().map_err(|_| bad())?;
        if pin.is_empty() || !pin.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        Ok(Self {
            start,
            pin: pin.to_owned(),
        })
    }

    /// Checks the cursor was handed out for a call with this pin.
    pub fn check_pin(&self, pin: &str) -> Result<(), ToolError> {
        if self.pin == pin {
            Ok(())
        } else {
            Err(ToolError::BadCursor(
                "this cursor belongs to a different call (other tool or other arguments); repeat the call that returned it with only `cursor` changed, or leave `cursor` out to start over".to_owned(),
            ))
        }
    }
}

/// A pin for a call: a hash of the tool's name and its arguments without `cursor` and
/// `max_tokens`, so a cursor only continues the call that handed it out.
pub fn pin_for(tool: &str, arguments: &Map<String, Value>) -> String {
    let mut args = arguments.clone();
    args.remove("cursor");
    args.remove("max_tokens");
    let mut hasher = Sha256::new();
    hasher.update(tool.as_bytes());
    hasher.update([0]);
    hasher.update(Value::Object(args).to_string().as_bytes());
    hex::encode(&hasher.finalize()[..8])
}

/// One unit of a split field.
enum Unit {
    Item(Value),
    Text(String),
}

/// Splits text after each newline, and long lines every `TEXT_UNIT_BYTES` (at a character
/// boundary), so that the pieces concatenate to the text.
fn text_units(text: &str) -> Vec<String> {
    let mut units = Vec::new();
    for line in text.split_inclusive('\n') {
        let mut rest = line;
        while rest.len() > TEXT_UNIT_BYTES {
            let mut cut = TEXT_UNIT_BYTES;
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            units.push(rest[..cut].to_owned());
            rest = &rest[cut..];
        }
        if !rest.is_empty() {
            units.push(rest.to_owned());
        }
    }
    units
}

struct Split {
    base: Map<String, Value>,
    /// Per section: present in the answer, and its kind.
    sections: Vec<(Section, bool)>,
    /// (section index, unit) in order.
    units: Vec<(usize, Unit)>,
}

impl Split {
    fn new(answer: Value, sections: &[Section]) -> Self {
        let Value::Object(mut base) = answer else {
            unreachable!("tool answers are JSON objects")
        };
        let mut units = Vec::new();
        let mut present = Vec::new();
        for (index, section) in sections.iter().enumerate() {
            let value = base.remove(section.name());
            let is_present = !matches!(value, None | Some(Value::Null));
            match (section, value) {
                (Section::Items(_), Some(Value::Array(items))) => {
                    units.extend(items.into_iter().map(|item| (index, Unit::Item(item))));
                }
                (Section::Text(_), Some(Value::String(text))) => {
                    units.extend(
                        text_units(&text)
                            .into_iter()
                            .map(|t| (index, Unit::Text(t))),
                    );
                }
                _ => {}
            }
            present.push((*section, is_present));
        }
        Self {
            base,
            sections: present,
            units,
        }
    }

    /// The answer holding units `start..end`.
    fn page(&self, start: usize, end: usize, pin: &str) -> Value {
        let mut object = self.base.clone();
        for (index, (section, present)) in self.sections.iter().enumerate() {
            if !present {
                continue;
            }
            let mine = self.units[start..end].iter().filter(|(s, _)| *s == index);
            let value = match section {
                Section::Items(_) => Value::Array(
                    mine.map(|(_, unit)| match unit {
                        Unit::Item(v) => v.clone(),
                        Unit::Text(t) => Value::String(t.clone()),
                    })
                    .collect(),
                ),
                Section::Text(_) => Value::String(
                    mine.map(|(_, unit)| match unit {
                        Unit::Text(t) => t.as_str(),
                        Unit::Item(_) => "",
                    })
                    .collect(),
                ),
            };
            object.insert(section.name().to_owned(), value);
        }
        let total = self.units.len();
        let next = (end < total).then(|| {
            Cursor {
                start: end,
                pin: pin.to_owned(),
            }
            .encode()
        });
        object.insert(
            "next_cursor".to_owned(),
            next.map_or(Value::Null, Value::String),
        );
        object.insert(
            "page".to_owned(),
            serde_json::json!({ "start": start, "count": end - start, "total": total }),
        );
        Value::Object(object)
    }
}

/// Tokens of `text`, or `None` when it is surely within `max` (no more bytes than `max`).
fn tokens_over(text: &str, max: u64, tokenizer: TokenizerKind) -> Option<u64> {
    if text.len() as u64 <= max {
        return None;
    }
    let tokens = tokenizer.count(text) as u64;
    (tokens > max).then_some(tokens)
}

/// Turns a page (the answer's JSON, cut) into the text the model reads.
pub type Render = fn(&Value) -> String;

/// A page: the structured answer and the text rendered from it.
#[derive(Debug, Clone)]
pub struct Page {
    pub structured: Value,
    /// The page's text: its rendering, then, when more follows, how to get it.
    pub text: String,
    /// Where the rendering ends in `text` when a line on how to continue follows it: the
    /// answer's content then has two text blocks, the rendering (so the pages of a payload
    /// concatenate to its exact bytes) and that line.
    pub rendered: Option<usize>,
}

impl Page {
    /// A page that is all rendering.
    pub fn whole(structured: Value, text: String) -> Self {
        Self {
            structured,
            text,
            rendered: None,
        }
    }

    /// The text as content blocks: the rendering, then the line on how to continue.
    pub fn blocks(&self) -> Vec<&str> {
        match self.rendered {
            Some(at) if at < self.text.len() => {
                let (rendering, more) = self.text.split_at(at);
                let more = more.trim_start_matches('\n');
                if rendering.is_empty() {
                    vec![more]
                } else {
                    vec![rendering, more]
                }
            }
            _ => vec![self.text.as_str()],
        }
    }
}

/// The text of a page: its rendering, then, when more follows, how to get it; and where the
/// rendering ends, when something follows it.
fn page_text(page: &Value, render: Render) -> (String, Option<usize>) {
    let mut text = render(page);
    let rendered = text.len();
    if let (Some(cursor), Some(info)) = (page["next_cursor"].as_str(), page.get("page")) {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let start = info["start"].as_u64().unwrap_or(0);
        let count = info["count"].as_u64().unwrap_or(0);
        let total = info["total"].as_u64().unwrap_or(0);
        let _ = writeln!(
            text,
            "[parts {}-{} of {total}; for the rest call again with cursor \"{cursor}\"]",
            start + 1,
            start + count
        );
        return (text, Some(rendered));
    }
    (text, None)
}

/// Cuts `answer` to the page `request` asks for; the page's text (`render` of it, plus how to
/// continue) holds at most `max_tokens` tokens, counted exactly.
pub fn paginate(
    answer: Value,
    sections: &[Section],
    request: &PageRequest,
    render: Render,
) -> Result<Page, ToolError> {
    let split = Split::new(answer, sections);
    let total = split.units.len();
    let start = request.start;
    if start > total {
        return Err(ToolError::BadCursor(format!(
            "the cursor points past the end of this answer ({total} units); leave `cursor` out to start over"
        )));
    }
    let max = request.max_tokens;
    let tokenizer = request.tokenizer;
    let finish = |structured: Value| {
        let (text, rendered) = page_text(&structured, render);
        Page {
            structured,
            text,
            rendered,
        }
    };
    let whole = finish(split.page(start, total, &request.pin));
    let Some(_) = tokens_over(&whole.text, max, tokenizer) else {
        return Ok(whole);
    };
    // The page's fixed part: its text with no unit and a cursor.
    let (header, _) = page_text(&split.page(start, start, &request.pin), render);
    let header_tokens = tokenizer.count(&header) as u64;
    if header_tokens > max {
        return Err(ToolError::TooLarge(format!(
            "max_tokens {max} cannot hold even this answer's summary (about {header_tokens} tokens); raise max_tokens to at least {}",
            header_tokens + 64
        )));
    }
    // Estimate unit by unit (what one unit adds to the text), then check the page itself
    // and shrink until it fits.
    let bare = tokenizer.count(&render(&split.page(start, start, &request.pin))) as u64;
    let mut used = header_tokens;
    let mut end = start;
    for index in start..total {
        let alone = tokenizer.count(&render(&split.page(index, index + 1, &request.pin))) as u64;
        let cost = alone.saturating_sub(bare).max(1);
        if used + cost > max {
            if end == start {
                let section = split.sections[split.units[start].0].0.name();
                return Err(ToolError::TooLarge(format!(
                    "the next part of `{section}` alone is about {cost} tokens, over max_tokens {max}; raise max_tokens to at least {}, or narrow the request",
                    header_tokens + cost + 16
                )));
            }
            break;
        }
        used += cost;
        end += 1;
    }
    loop {
        let page = finish(split.page(start, end, &request.pin));
        match tokens_over(&page.text, max, tokenizer) {
            None => return Ok(page),
            Some(actual) => {
                let count = end - start;
                let scaled = usize::try_from((count as u64) * max / actual.max(1)).unwrap_or(0);
                let shrunk = scaled.min(count - 1);
                if shrunk == 0 {
                    let section = split.sections[split.units[start].0].0.name();
                    return Err(ToolError::TooLarge(format!(
                        "the next part of `{section}` does not fit in max_tokens {max} (the page needs about {actual} tokens); raise max_tokens"
                    )));
                }
                end = start + shrunk;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn json_text(value: &Value) -> String {
        value.to_string()
    }

    fn request(max_tokens: u64, start: usize) -> PageRequest {
        PageRequest {
            max_tokens,
            start,
            pin: "abcd".into(),
            tokenizer: TokenizerKind::O200kBase,
        }
    }

    #[test]
    fn small_answers_come_whole() {
        let answer = json!({ "query": "x", "results": [1, 2, 3], "next_cursor": null, "page": {} });
        let page = paginate(
            answer,
            &[Section::Items("results")],
            &request(1000, 0),
            json_text,
        )
        .expect("page")
        .structured;
        assert_eq!(page["results"], json!([1, 2, 3]));
        assert_eq!(page["next_cursor"], Value::Null);
        assert_eq!(page["page"], json!({ "start": 0, "count": 3, "total": 3 }));
    }

    #[test]
    fn pages_cover_every_item_once_and_each_fits() {
        let items: Vec<Value> = (0..500)
            .map(|i| json!({ "path": format!("src/file_{i}.rs"), "line": i, "text": "fn main() { println!(\"hello\"); }" }))
            .collect();
        let answer = json!({ "results": items.clone(), "next_cursor": null, "page": {} });
        let mut seen = Vec::new();
        let mut start = 0;
        let mut pages = 0;
        loop {
            let page = paginate(
                answer.clone(),
                &[Section::Items("results")],
                &request(300, start),
                json_text,
            )
            .expect("page");
            let text = page.text;
            let page = page.structured;
            assert!(
                TokenizerKind::O200kBase.count(&text) <= 300,
                "page over the cap"
            );
            seen.extend(page["results"].as_array().expect("array").iter().cloned());
            pages += 1;
            match page["next_cursor"].as_str() {
                Some(cursor) => start = Cursor::parse(cursor).expect("cursor").start,
                None => break,
            }
        }
        assert!(pages > 5, "{pages} pages");
        assert_eq!(seen, items);
    }

    #[test]
    fn text_pages_concatenate_to_the_text() {
        let mut text = String::new();
        for i in 0..400 {
            writeln!(text, "line {i}: \"quoted\" \\ text with ünïcode").expect("write");
        }
        text.push_str(&"x".repeat(5000)); // a long last line without a newline
        let answer = json!({ "payload": text.clone(), "next_cursor": null, "page": {} });
        let mut joined = String::new();
        let mut start = 0;
        loop {
            let page = paginate(
                answer.clone(),
                &[Section::Text("payload")],
                &request(500, start),
                json_text,
            )
            .expect("page");
            assert!(TokenizerKind::O200kBase.count(&page.text) <= 500);
            let page = page.structured;
            joined.push_str(page["payload"].as_str().expect("text"));
            match page["next_cursor"].as_str() {
                Some(cursor) => start = Cursor::parse(cursor).expect("cursor").start,
                None => break,
            }
        }
        assert_eq!(joined, text);
    }

    #[test]
    fn an_item_larger_than_the_cap_is_an_error_not_a_cut() {
        let answer = json!({ "results": ["word ".repeat(400)], "next_cursor": null, "page": {} });
        let err = paginate(
            answer,
            &[Section::Items("results")],
            &request(100, 0),
            json_text,
        )
        .expect_err("too large");
        assert!(err.to_string().contains("raise max_tokens"), "{err}");
    }

    #[test]
    fn cursors_parse_and_check_their_pin() {
        let cursor = Cursor::parse("12.00ff").expect("parse");
        assert_eq!(
            cursor,
            Cursor {
                start: 12,
                pin: "00ff".into()
            }
        );
        assert!(cursor.check_pin("00ff").is_ok());
        assert!(cursor.check_pin("1234").is_err());
        for bad in ["", "12", "x.00ff", "12.", "12.zz"] {
            assert!(Cursor::parse(bad).is_err(), "{bad}");
        }
        let a =
            serde_json::from_value(json!({ "pattern": "x", "cursor": "1.ab", "max_tokens": 5 }))
                .expect("object");
        let b = serde_json::from_value(json!({ "pattern": "x" })).expect("object");
        assert_eq!(pin_for("ctx_search", &a), pin_for("ctx_search", &b));
        assert_ne!(pin_for("ctx_search", &b), pin_for("ctx_map", &b));
    }
}
