//! RFC 8785 (JSON Canonicalization Scheme) serialization, for hashing manifests.
//!
//! Object keys are sorted by their UTF-16 code units, numbers use the ECMAScript shortest
//! form, strings use the minimal escapes and there is no insignificant whitespace. Two equal
//! values therefore always give the same bytes, whatever produced them.

use serde::Serialize;

use crate::ContentHash;

/// Why a value could not be canonicalized.
#[derive(Debug, thiserror::Error)]
#[error("cannot write canonical JSON: {0}")]
pub struct CanonicalJsonError(#[from] serde_json::Error);

/// The RFC 8785 canonical JSON bytes of `value`.
pub fn to_vec<T: Serialize>(value: &T) -> Result<Vec<u8>, CanonicalJsonError> {
    Ok(serde_json_canonicalizer::to_vec(value)?)
}

/// The RFC 8785 canonical JSON text of `value`.
pub fn to_string<T: Serialize>(value: &T) -> Result<String, CanonicalJsonError> {
    Ok(serde_json_canonicalizer::to_string(value)?)
}

/// The content hash of `value`'s canonical JSON: the id of a manifest.
pub fn hash<T: Serialize>(value: &T) -> Result<ContentHash, CanonicalJsonError> {
    Ok(ContentHash::of(&to_vec(value)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn canon(text: &str) -> String {
        let value: Value = serde_json::from_str(text).expect("valid JSON");
        to_string(&value).expect("canonicalizes")
    }

    /// Vectors from RFC 8785 §3.2.2 and Appendix B, and the cyberphone test suite.
    #[test]
    fn rfc8785_vectors() {
        // §3.2.2 example: whitespace removed, numbers and escapes canonical.
        assert_eq!(
            canon(
                r#"{
                  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
                  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
                  "literals": [null, true, false]
                }"#
            ),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
        // §3.2.3: keys sorted by UTF-16 code units (not by UTF-8 bytes or code points).
        assert_eq!(
            canon(
                r#"{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}"#
            ),
            "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}"
        );
        // Appendix B number samples.
        for (input, want) in [
            ("0", "0"),
            ("-0", "0"),
            ("1", "1"),
            ("1e21", "1e+21"),
            ("1e20", "100000000000000000000"),
            ("0.000001", "0.000001"),
            ("0.0000001", "1e-7"),
            ("9007199254740992", "9007199254740992"),
            ("295147905179352830000", "295147905179352830000"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("5e-324", "5e-324"),
        ] {
            assert_eq!(canon(input), want, "number {input}");
        }
    }

    #[test]
    fn equal_values_hash_equal_regardless_of_key_order() {
        let a = json!({"b": 1, "a": [1, 2, {"y": true, "x": null}]});
        let b: Value =
            serde_json::from_str(r#"{ "a" : [1,2,{"x":null,"y":true}], "b":1 }"#).expect("valid");
        assert_eq!(hash(&a).expect("ok"), hash(&b).expect("ok"));
        assert_ne!(hash(&a).expect("ok"), hash(&json!({"b": 2})).expect("ok"));
    }
}
