//! Content hashes: the public `sha256:<64 hex>` identifiers.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

const PREFIX: &str = "sha256:";

/// A SHA-256 digest, written `sha256:<64 lowercase hex>`.
///
/// Every public identifier in ctx (document versions, objects, snapshots, runs) is one of these.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContentHash([u8; 32]);

/// Why a string is not a [`ContentHash`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentHashError {
    #[error("`{0}` is not a content hash: expected `sha256:` followed by 64 lowercase hex digits")]
    Malformed(String),
}

impl ContentHash {
    /// Hashes `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// Wraps a raw digest.
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The raw digest.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The 64 lowercase hex digits, without the `sha256:` prefix.
    pub fn to_hex(&self) -> String {
        // `hex::encode` collects a `char` at a time; a render makes thousands of these.
        let mut digits = [0u8; 64];
        hex::encode_to_slice(self.0, &mut digits).expect("64 digits for 32 bytes");
        String::from_utf8(digits.to_vec()).expect("hex digits are ASCII")
    }

    /// `sha256:<64 hex>`, as [`fmt::Display`] writes it, without allocating.
    pub fn to_text(&self) -> HashText {
        let mut text = [0u8; PREFIX.len() + 64];
        text[..PREFIX.len()].copy_from_slice(PREFIX.as_bytes());
        hex::encode_to_slice(self.0, &mut text[PREFIX.len()..]).expect("64 digits for 32 bytes");
        HashText(text)
    }

    /// Parses 64 lowercase hex digits without the prefix.
    pub fn from_hex(hex_digits: &str) -> Result<Self, ContentHashError> {
        let malformed = || ContentHashError::Malformed(hex_digits.to_owned());
        if hex_digits.len() != 64 || hex_digits.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(malformed());
        }
        let mut out = [0u8; 32];
        hex::decode_to_slice(hex_digits, &mut out).map_err(|_| malformed())?;
        Ok(Self(out))
    }
}

/// A [`ContentHash`] as text, on the stack (see [`ContentHash::to_text`]).
#[derive(Clone, Copy)]
pub struct HashText([u8; PREFIX.len() + 64]);

impl HashText {
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("a prefix and hex digits are ASCII")
    }
}

impl fmt::Display for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX}{}", self.to_hex())
    }
}

impl fmt::Debug for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for ContentHash {
    type Err = ContentHashError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let digits = s
            .strip_prefix(PREFIX)
            .ok_or_else(|| ContentHashError::Malformed(s.to_owned()))?;
        Self::from_hex(digits).map_err(|_| ContentHashError::Malformed(s.to_owned()))
    }
}

impl Serialize for ContentHash {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ContentHash {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Incremental hashing, for content that arrives in pieces (streams, large files).
#[derive(Default, Clone)]
pub struct ContentHasher(Sha256);

impl ContentHasher {
    /// A hasher with nothing fed yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds more bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The hash of everything fed so far.
    pub fn finish(self) -> ContentHash {
        ContentHash(self.0.finalize().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_input_has_the_known_sha256() {
        assert_eq!(
            ContentHash::of(b"").to_string(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn display_and_parse_round_trip() {
        let h = ContentHash::of(b"hello");
        assert_eq!(h.to_string().parse::<ContentHash>(), Ok(h));
        assert_eq!(h.to_text().as_str(), h.to_string());
        let json = serde_json::to_string(&h).expect("serializes");
        assert_eq!(json, format!("\"{h}\""));
        assert_eq!(
            serde_json::from_str::<ContentHash>(&json).expect("parses"),
            h
        );
    }

    #[test]
    fn streaming_equals_one_shot() {
        let mut hasher = ContentHasher::new();
        hasher.update(b"hel");
        hasher.update(b"lo");
        assert_eq!(hasher.finish(), ContentHash::of(b"hello"));
    }

    #[test]
    fn malformed_hashes_are_rejected() {
        let good = ContentHash::of(b"x").to_hex();
        for bad in [
            String::new(),
            good.clone(),                              // no prefix
            format!("sha1:{good}"),                    // wrong algorithm
            format!("sha256:{}", &good[..63]),         // short
            format!("sha256:{good}0"),                 // long
            format!("sha256:{}", good.to_uppercase()), // upper case
            format!("sha256:{}g", &good[..63]),        // not hex
        ] {
            assert!(
                bad.parse::<ContentHash>().is_err(),
                "{bad} should not parse"
            );
        }
        assert!(serde_json::from_str::<ContentHash>("\"sha256:zz\"").is_err());
    }
}
