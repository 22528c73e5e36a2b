//! Typed JSON documents whose JSON schema is generated from their fields: the
//! [`json_doc!`](crate::json_doc) macro declares a serde struct (keys in field order, so files
//! keep their byte layout) and, from the same field list, its [`DocSchema`] (one property per
//! field, in order, with the field's Rust type turned into a schema by [`FieldSchema`]). A field
//! added to such a struct is a property of its schema; `tests/schema.rs` then fails until the
//! checked-in `docs/schema/*.json` is regenerated.
//!
//! A field's schema is the one of its Rust type, with the keys of an optional fragment (JSON
//! text: `description`, `pattern`, `minimum`, …) added. A fragment that itself says what the
//! value is (`type`, `enum`, `const`, `oneOf` or `$ref`) replaces the type's schema: for strings
//! limited to a few values and constants.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde_json::{json, Map, Value};

/// One property of a document's schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    /// The JSON key (serde's name of the field).
    pub key: &'static str,
    /// Whether the key is in the schema's `required` list.
    pub required: bool,
    /// The property's schema.
    pub schema: Value,
}

impl Property {
    /// The property of a field of type `T`: `T`'s schema, merged with `fragment` (see the
    /// module docs).
    pub fn new<T: FieldSchema + ?Sized>(
        key: &'static str,
        required: bool,
        fragment: Option<&str>,
    ) -> Property {
        Property {
            key,
            required,
            schema: merge(T::field_schema(), key, fragment),
        }
    }
}

/// Keys of a fragment that say what the value is: such a fragment replaces the type's schema.
const OVERRIDING: [&str; 5] = ["type", "enum", "const", "oneOf", "$ref"];

fn merge(base: Value, key: &str, fragment: Option<&str>) -> Value {
    let Some(text) = fragment else {
        return base;
    };
    let frag: Map<String, Value> = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("schema fragment of `{key}` is not a JSON object: {e}"));
    if OVERRIDING.iter().any(|k| frag.contains_key(*k)) {
        return Value::Object(frag);
    }
    let mut out = match base {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    for (k, v) in frag {
        out.insert(k, v);
    }
    Value::Object(out)
}

/// A document as servebench writes it to a file: pretty JSON (two-space indent) and a final
/// newline.
pub fn file_text<T: serde::Serialize + ?Sized>(doc: &T) -> String {
    let mut s = serde_json::to_string_pretty(doc).expect("a document serializes to JSON");
    s.push('\n');
    s
}

/// A JSON object document with a schema generated from its fields (implemented by
/// [`json_doc!`](crate::json_doc)).
pub trait DocSchema {
    /// The properties, in key order (the order serde writes them).
    fn properties() -> Vec<Property>;

    /// The keys, in order.
    fn keys() -> Vec<&'static str> {
        Self::properties().iter().map(|p| p.key).collect()
    }
}

/// The schema of an object with the properties of `T`: `type`, `required`, `properties`,
/// `additionalProperties: false`.
pub fn object_schema_of<T: DocSchema + ?Sized>() -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    for p in T::properties() {
        if p.required {
            required.push(Value::from(p.key));
        }
        props.insert(p.key.to_string(), p.schema);
    }
    json!({
        "type": "object",
        "required": required,
        "properties": props,
        "additionalProperties": false,
    })
}

/// The JSON schema of a Rust type used as a document field.
pub trait FieldSchema {
    /// The schema fragment (without description).
    fn field_schema() -> Value;
}

macro_rules! leaf_schema {
    ($t:literal: $($ty:ty),*) => {
        $(impl FieldSchema for $ty {
            fn field_schema() -> Value {
                json!({"type": $t})
            }
        })*
    };
}
leaf_schema!("string": String);
leaf_schema!("boolean": bool);
leaf_schema!("integer": u32, u64, usize, i64);
leaf_schema!("number": f64);
leaf_schema!("null": ());

impl FieldSchema for Value {
    fn field_schema() -> Value {
        json!({})
    }
}

impl<T: FieldSchema> FieldSchema for Option<T> {
    /// `T`'s schema with `"null"` added to its `type` (or, for a schema without a type, one of
    /// `T` or null).
    fn field_schema() -> Value {
        let mut s = T::field_schema();
        if s.as_object().is_some_and(Map::is_empty) {
            return s;
        }
        match s.get("type").cloned() {
            Some(Value::String(t)) => {
                s["type"] = json!([t, "null"]);
                s
            }
            Some(Value::Array(mut ts)) => {
                ts.push(json!("null"));
                s["type"] = Value::Array(ts);
                s
            }
            _ => json!({"oneOf": [s, {"type": "null"}]}),
        }
    }
}

impl<T: FieldSchema> FieldSchema for Vec<T> {
    fn field_schema() -> Value {
        json!({"type": "array", "items": T::field_schema()})
    }
}

impl<T: FieldSchema> FieldSchema for BTreeMap<String, T> {
    fn field_schema() -> Value {
        json!({"type": "object", "additionalProperties": T::field_schema()})
    }
}

impl<T: FieldSchema> FieldSchema for IndexMap<String, T> {
    fn field_schema() -> Value {
        json!({"type": "object", "additionalProperties": T::field_schema()})
    }
}

impl FieldSchema for crate::PointStatus {
    fn field_schema() -> Value {
        json!({"enum": ["ok", "failed", "partial", "invalid"]})
    }
}

impl FieldSchema for crate::AggRow {
    /// A reference to the agg row's own schema (`agg-row.schema.json`, beside the others).
    fn field_schema() -> Value {
        json!({"$ref": "agg-row.schema.json"})
    }
}

/// Declares a document struct and its [`DocSchema`](crate::doc::DocSchema) from one field
/// list. Each field carries `#[key("json key", required|optional)]` or
/// `#[key("json key", required|optional, r#"{schema fragment}"#)]` after its doc comment and
/// before any other attributes; the struct's own attributes (derives, serde) are passed
/// through, and every field gets `#[serde(rename = "json key")]`.
#[macro_export]
macro_rules! json_doc {
    (@req required) => { true };
    (@req optional) => { false };
    (@frag) => { None };
    (@frag $f:literal) => { Some($f) };
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                #[key($key:literal, $req:ident $(, $frag:literal)?)]
                $(#[$fmeta:meta])*
                pub $field:ident : $ty:ty,
            )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $(
                $(#[doc = $doc])*
                #[serde(rename = $key)]
                $(#[$fmeta])*
                pub $field: $ty,
            )*
        }

        impl $crate::doc::DocSchema for $name {
            fn properties() -> Vec<$crate::doc::Property> {
                vec![$(
                    $crate::doc::Property::new::<$ty>(
                        $key,
                        $crate::json_doc!(@req $req),
                        $crate::json_doc!(@frag $($frag)?),
                    ),
                )*]
            }
        }

        impl $crate::doc::FieldSchema for $name {
            fn field_schema() -> serde_json::Value {
                $crate::doc::object_schema_of::<$name>()
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;

    crate::json_doc! {
        /// A test document.
        #[derive(Debug, Serialize, Deserialize, PartialEq)]
        pub struct Doc {
            /// A count.
            #[key("n", required)]
            pub n: u64,
            /// A colon in the key.
            #[key("odd:", required, r#"{"description": "kept"}"#)]
            pub odd: Option<f64>,
            /// Skipped when absent.
            #[key("tags", optional, r#"{"enum": ["a"]}"#)]
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            pub tags: Vec<String>,
        }
    }

    #[test]
    fn the_schema_follows_the_fields_and_serde_writes_their_keys() {
        assert_eq!(Doc::keys(), ["n", "odd:", "tags"]);
        let s = object_schema_of::<Doc>();
        assert_eq!(s["required"], json!(["n", "odd:"]));
        assert_eq!(s["properties"]["n"], json!({"type": "integer"}));
        assert_eq!(
            s["properties"]["odd:"],
            json!({"type": ["number", "null"], "description": "kept"})
        );
        assert_eq!(s["properties"]["tags"], json!({"enum": ["a"]}));
        let d = Doc {
            n: 3,
            odd: None,
            tags: vec![],
        };
        assert_eq!(serde_json::to_string(&d).unwrap(), r#"{"n":3,"odd:":null}"#);
        let back: Doc = serde_json::from_str(r#"{"n":3,"odd:":1.5,"tags":["a"]}"#).unwrap();
        assert_eq!(back.odd, Some(1.5));
        assert_eq!(back.tags, ["a"]);
    }

    #[test]
    fn option_adds_null_to_the_type() {
        assert_eq!(
            Option::<Vec<u64>>::field_schema(),
            json!({"type": ["array", "null"], "items": {"type": "integer"}})
        );
        assert_eq!(
            Option::<crate::AggRow>::field_schema(),
            json!({"oneOf": [{"$ref": "agg-row.schema.json"}, {"type": "null"}]})
        );
        assert_eq!(Option::<Value>::field_schema(), json!({}));
    }
}
