//! Flat, sorted document metadata.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A metadata value: a string or a 64-bit integer, nothing nested.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MetadataValue {
    Integer(i64),
    String(String),
}

impl From<&str> for MetadataValue {
    fn from(value: &str) -> Self {
        Self::String(value.to_owned())
    }
}

impl From<String> for MetadataValue {
    fn from(value: String) -> Self {
        Self::String(value)
    }
}

impl From<i64> for MetadataValue {
    fn from(value: i64) -> Self {
        Self::Integer(value)
    }
}

/// Document metadata: keys in byte order, so iteration and serialization are deterministic.
///
/// Metadata never affects a document's version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Metadata(BTreeMap<String, MetadataValue>);

/// Which side wins when [`Metadata::merge`] meets the same key twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergePrecedence {
    /// Values already present are kept.
    KeepExisting,
    /// Values from the other map replace existing ones.
    PreferOther,
}

impl Metadata {
    /// Empty metadata.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value`, returning the previous value.
    pub fn insert(
        &mut self,
        key: impl Into<String>,
        value: impl Into<MetadataValue>,
    ) -> Option<MetadataValue> {
        self.0.insert(key.into(), value.into())
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&MetadataValue> {
        self.0.get(key)
    }

    /// Entries in key byte order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &MetadataValue)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Merges `other` into `self`, the caller deciding which side wins on a shared key.
    pub fn merge(&mut self, other: Self, precedence: MergePrecedence) {
        for (key, value) in other.0 {
            match precedence {
                MergePrecedence::PreferOther => {
                    self.0.insert(key, value);
                }
                MergePrecedence::KeepExisting => {
                    self.0.entry(key).or_insert(value);
                }
            }
        }
    }
}

impl FromIterator<(String, MetadataValue)> for Metadata {
    fn from_iter<T: IntoIterator<Item = (String, MetadataValue)>>(iter: T) -> Self {
        Self(iter.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_sorted_with_typed_values() {
        let mut m = Metadata::new();
        m.insert("zeta", 3);
        m.insert("alpha", "x");
        m.insert("Beta", -1);
        assert_eq!(
            serde_json::to_string(&m).expect("serializes"),
            r#"{"Beta":-1,"alpha":"x","zeta":3}"#
        );
        let back: Metadata = serde_json::from_str(r#"{"n":7,"s":"7"}"#).expect("parses");
        assert_eq!(back.get("n"), Some(&MetadataValue::Integer(7)));
        assert_eq!(back.get("s"), Some(&MetadataValue::String("7".into())));
    }

    #[test]
    fn nested_and_float_values_are_rejected() {
        assert!(serde_json::from_str::<Metadata>(r#"{"a":{"b":1}}"#).is_err());
        assert!(serde_json::from_str::<Metadata>(r#"{"a":1.5}"#).is_err());
        assert!(serde_json::from_str::<Metadata>(r#"{"a":[1]}"#).is_err());
    }

    #[test]
    fn merge_respects_the_callers_precedence() {
        let mut base = Metadata::new();
        base.insert("k", "base");
        base.insert("only_base", 1);
        let mut other = Metadata::new();
        other.insert("k", "other");
        other.insert("only_other", 2);

        let mut keep = base.clone();
        keep.merge(other.clone(), MergePrecedence::KeepExisting);
        assert_eq!(keep.get("k"), Some(&"base".into()));
        assert_eq!(keep.len(), 3);

        let mut prefer = base;
        prefer.merge(other, MergePrecedence::PreferOther);
        assert_eq!(prefer.get("k"), Some(&"other".into()));
        assert_eq!(prefer.len(), 3);
    }
}
