//! `serde` deserialization from a positioned YAML [`Node`] tree.
//!
//! The typed catalog model derives `Deserialize` with `deny_unknown_fields`; this deserializer
//! feeds it from [`Node`]s and turns every serde error into a [`DeError`] that knows *where*
//! (line:column of the offending node) and *which field path* (`scenarios.fixed-seq-len[0].
//! search-space[2].pp`) went wrong.

use std::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

use crate::yaml::{Kind, Mark, Node};

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// A mapping key.
    Key(String),
    /// A sequence index.
    Index(usize),
}

/// Renders a path as `a.b[2].c`.
pub fn path_string(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => {
                s.push_str(&format!("[{i}]"));
            }
        }
    }
    s
}

/// A deserialization error with the position of the node and the path to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeError {
    /// What is wrong.
    pub message: String,
    /// Where (set by the innermost node that knows).
    pub mark: Option<Mark>,
    /// Field path from the deserialized root.
    pub path: Vec<Seg>,
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError {
            message: msg.to_string(),
            mark: None,
            path: Vec::new(),
        }
    }

    fn invalid_type(unexp: de::Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        let got = match unexp {
            de::Unexpected::Str(s) => format!("string {s:?}"),
            de::Unexpected::Signed(i) => format!("integer `{i}`"),
            de::Unexpected::Unsigned(i) => format!("integer `{i}`"),
            de::Unexpected::Float(x) => format!("float `{}`", crate::pyjson::py_float_repr(x)),
            de::Unexpected::Bool(b) => format!("boolean `{b}`"),
            de::Unexpected::Unit => "null".to_string(),
            de::Unexpected::Seq => "a list".to_string(),
            de::Unexpected::Map => "a mapping".to_string(),
            other => other.to_string(),
        };
        DeError::custom(format_args!("expected {exp}, got {got}"))
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        if field == "trace-source" {
            return DeError::custom(
                "unknown field 'trace-source': trace selection lives in the benchmark scripts \
                 (CONFIGS.md documents it, but the InferenceX validator rejects it)",
            );
        }
        DeError::custom(format_args!(
            "unknown field '{field}' (allowed: {})",
            expected.join(", ")
        ))
    }

    fn missing_field(field: &'static str) -> Self {
        DeError::custom(format_args!("missing required field '{field}'"))
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        DeError::custom(format_args!(
            "'{variant}' is not one of: {}",
            expected.join(", ")
        ))
    }
}

fn at(mut e: DeError, mark: Mark) -> DeError {
    if e.mark.is_none() {
        e.mark = Some(mark);
    }
    e
}

/// Deserializes `T` from `node`.
pub fn from_node<'a, T: de::Deserialize<'a>>(node: &'a Node) -> Result<T, DeError> {
    T::deserialize(NodeDe(node)).map_err(|e| at(e, node.mark))
}

/// The deserializer over one node.
#[derive(Clone, Copy)]
pub struct NodeDe<'a>(pub &'a Node);

impl<'a> NodeDe<'a> {
    fn err_type(&self, exp: &dyn de::Expected) -> DeError {
        let got = self.0.kind.describe();
        DeError {
            message: format!("expected {exp}, got {got}"),
            mark: Some(self.0.mark),
            path: Vec::new(),
        }
    }
}

struct SeqAccess<'a> {
    items: std::slice::Iter<'a, Node>,
    index: usize,
}

impl<'de> de::SeqAccess<'de> for SeqAccess<'de> {
    type Error = DeError;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        match self.items.next() {
            None => Ok(None),
            Some(node) => {
                let i = self.index;
                self.index += 1;
                seed.deserialize(NodeDe(node)).map(Some).map_err(|mut e| {
                    e.path.insert(0, Seg::Index(i));
                    at(e, node.mark)
                })
            }
        }
    }
}

struct MapAccess<'a> {
    entries: std::slice::Iter<'a, (Node, Node)>,
    value: Option<(&'a Node, String)>,
}

impl<'de> de::MapAccess<'de> for MapAccess<'de> {
    type Error = DeError;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        match self.entries.next() {
            None => Ok(None),
            Some((k, v)) => {
                let name = match &k.kind {
                    Kind::Str(s) => s.clone(),
                    other => {
                        return Err(DeError {
                            message: format!(
                                "mapping key must be a string, got {}",
                                other.describe()
                            ),
                            mark: Some(k.mark),
                            path: Vec::new(),
                        })
                    }
                };
                self.value = Some((v, name));
                seed.deserialize(NodeDe(k))
                    .map(Some)
                    .map_err(|e| at(e, k.mark))
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let (node, name) = self.value.take().expect("value after key");
        seed.deserialize(NodeDe(node)).map_err(|mut e| {
            e.path.insert(0, Seg::Key(name));
            at(e, node.mark)
        })
    }
}

struct EnumAccess<'a>(&'a Node, &'a str);

impl<'de> de::EnumAccess<'de> for EnumAccess<'de> {
    type Error = DeError;
    type Variant = UnitOnly;
    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, UnitOnly), DeError> {
        let de: de::value::StrDeserializer<'_, DeError> = self.1.into_deserializer();
        let v = seed.deserialize(de).map_err(|e| at(e, self.0.mark))?;
        Ok((v, UnitOnly))
    }
}

/// Only unit variants (string literals) are used in the catalog schema.
pub struct UnitOnly;

impl<'de> de::VariantAccess<'de> for UnitOnly {
    type Error = DeError;
    fn unit_variant(self) -> Result<(), DeError> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _: T) -> Result<T::Value, DeError> {
        Err(de::Error::custom("expected a plain string value"))
    }
    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, DeError> {
        Err(de::Error::custom("expected a plain string value"))
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, DeError> {
        Err(de::Error::custom("expected a plain string value"))
    }
}

impl<'de> de::Deserializer<'de> for NodeDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let r = match &self.0.kind {
            Kind::Null => visitor.visit_unit(),
            Kind::Bool(b) => visitor.visit_bool(*b),
            Kind::Int(i) => visitor.visit_i64(*i),
            Kind::Float(x) => visitor.visit_f64(*x),
            Kind::Str(s) | Kind::Timestamp(s) => visitor.visit_borrowed_str(s),
            Kind::Seq(items) => visitor.visit_seq(SeqAccess {
                items: items.iter(),
                index: 0,
            }),
            Kind::Map(entries) => visitor.visit_map(MapAccess {
                entries: entries.iter(),
                value: None,
            }),
        };
        r.map_err(|e| at(e, self.0.mark))
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.0.kind {
            Kind::Bool(b) => visitor.visit_bool(*b).map_err(|e| at(e, self.0.mark)),
            _ => Err(self.err_type(&"a boolean")),
        }
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.0.kind {
            Kind::Int(i) => visitor.visit_i64(*i).map_err(|e| at(e, self.0.mark)),
            _ => Err(self.err_type(&"an integer")),
        }
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_i64(visitor)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_i64(visitor)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.0.kind {
            Kind::Float(x) => visitor.visit_f64(*x).map_err(|e| at(e, self.0.mark)),
            Kind::Int(i) => visitor.visit_f64(*i as f64).map_err(|e| at(e, self.0.mark)),
            _ => Err(self.err_type(&"a number")),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.0.kind {
            Kind::Str(s) => visitor
                .visit_borrowed_str(s)
                .map_err(|e| at(e, self.0.mark)),
            _ => Err(self.err_type(&"a string")),
        }
    }
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.0.kind {
            Kind::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.0.kind {
            Kind::Seq(items) => visitor
                .visit_seq(SeqAccess {
                    items: items.iter(),
                    index: 0,
                })
                .map_err(|e| at(e, self.0.mark)),
            _ => Err(self.err_type(&"a list")),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.0.kind {
            Kind::Map(entries) => visitor
                .visit_map(MapAccess {
                    entries: entries.iter(),
                    value: None,
                })
                .map_err(|e| at(e, self.0.mark)),
            _ => Err(self.err_type(&"a mapping")),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match &self.0.kind {
            Kind::Str(s) => visitor
                .visit_enum(EnumAccess(self.0, s))
                .map_err(|e| at(e, self.0.mark)),
            _ => Err(self.err_type(&"a string")),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        i8 i16 i128 u8 u16 u128 f32 char bytes byte_buf unit unit_struct tuple tuple_struct ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields, rename_all = "kebab-case")]
    #[allow(dead_code)]
    struct Inner {
        tp: i64,
        #[serde(default)]
        dp_attn: Option<bool>,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        items: Vec<Inner>,
    }

    #[test]
    fn errors_carry_path_and_position() {
        let n = crate::yaml::parse("items:\n  - tp: 4\n  - tp: four\n").unwrap();
        let e = from_node::<Outer>(&n).unwrap_err();
        assert_eq!(path_string(&e.path), "items[1].tp");
        assert_eq!(e.mark, Some(Mark { line: 3, col: 9 }));
        assert_eq!(e.message, "expected an integer, got string \"four\"");

        let n = crate::yaml::parse("items:\n  - tp: 4\n    bogus: 1\n").unwrap();
        let e = from_node::<Outer>(&n).unwrap_err();
        assert_eq!(path_string(&e.path), "items[0]");
        assert_eq!(e.mark, Some(Mark { line: 3, col: 5 }));
        assert_eq!(e.message, "unknown field 'bogus' (allowed: tp, dp-attn)");

        let n = crate::yaml::parse("items:\n  - dp-attn: true\n").unwrap();
        let e = from_node::<Outer>(&n).unwrap_err();
        assert_eq!(path_string(&e.path), "items[0]");
        assert_eq!(e.message, "missing required field 'tp'");
        assert_eq!(e.mark, Some(Mark { line: 2, col: 5 }));
    }
}
