//! JSON text for the files a program writes (its measurements, timings and trace) and for the
//! one it reads (a distribution file), without serde.
//!
//! A program links the formats it writes. Deriving `Serialize` for them pulled serde, serde_json
//! and their number formatters into every user crate's build (a fifth of a cold build's CPU
//! time, issue 20); the writer here is the few dozen lines those files need. The output is what
//! `serde_json` writes for the same document (`to_vec_pretty` or `to_vec`): two-space indents,
//! `"key": value`, non-finite numbers as `null`; the tools read it back with serde (feature
//! `read`), and the tests check the round trip.
//!
//! ```
//! use mheta_format::json::{self, Object, ToJson, Writer};
//!
//! struct Point { x: f64, label: &'static str }
//! impl ToJson for Point {
//!     fn write_json(&self, w: &mut Writer) {
//!         w.object(|o: &mut Object| {
//!             o.field("x", &self.x);
//!             o.field("label", &self.label);
//!         })
//!     }
//! }
//! let p = Point { x: 0.5, label: "a\"b" };
//! assert_eq!(json::compact(&p), r#"{"x":0.5,"label":"a\"b"}"#);
//! assert_eq!(json::pretty(&p), "{\n  \"x\": 0.5,\n  \"label\": \"a\\\"b\"\n}");
//! ```

/// A value that writes itself as JSON.
pub trait ToJson {
    /// Writes `self` at the writer's position.
    fn write_json(&self, w: &mut Writer);

    /// Whether a field holding this value is left out (`skip_serializing_if`): an empty list,
    /// `None`. Only [`Object::optional`] asks.
    fn is_absent(&self) -> bool {
        false
    }
}

/// The fields of an object, to be written inside another object's braces (`#[serde(flatten)]`).
pub trait Fields {
    /// Writes the fields into `o`.
    fn fields(&self, o: &mut Object<'_>);
}

/// JSON text being written, pretty (serde_json's two-space indents) or compact.
pub struct Writer {
    out: String,
    pretty: bool,
    depth: usize,
}

/// The inside of an object being written: its fields, each `"key": value`.
pub struct Object<'w> {
    w: &'w mut Writer,
    empty: bool,
}

/// `value` as pretty JSON, as `serde_json::to_string_pretty` writes it.
pub fn pretty<T: ToJson + ?Sized>(value: &T) -> String {
    write(value, true)
}

/// `value` as compact JSON, as `serde_json::to_string` writes it.
pub fn compact<T: ToJson + ?Sized>(value: &T) -> String {
    write(value, false)
}

fn write<T: ToJson + ?Sized>(value: &T, pretty: bool) -> String {
    let mut w = Writer {
        out: String::new(),
        pretty,
        depth: 0,
    };
    value.write_json(&mut w);
    w.out
}

impl Writer {
    /// An object whose fields `f` writes.
    pub fn object(&mut self, f: impl FnOnce(&mut Object<'_>)) {
        self.out.push('{');
        self.depth += 1;
        let mut o = Object {
            w: self,
            empty: true,
        };
        f(&mut o);
        let empty = o.empty;
        self.depth -= 1;
        if !empty {
            self.newline();
        }
        self.out.push('}');
    }

    /// An array of `items` (values or references: `&T` is a [`ToJson`] too), written as they
    /// come.
    pub fn array<T: ToJson>(&mut self, items: impl IntoIterator<Item = T>) {
        self.out.push('[');
        self.depth += 1;
        let mut empty = true;
        for item in items {
            if !empty {
                self.out.push(',');
            }
            empty = false;
            self.newline();
            item.write_json(self);
        }
        self.depth -= 1;
        if !empty {
            self.newline();
        }
        self.out.push(']');
    }

    /// A string, escaped as serde_json escapes it.
    pub fn string(&mut self, s: &str) {
        self.out.push('"');
        for c in s.chars() {
            match c {
                '"' => self.out.push_str("\\\""),
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                '\r' => self.out.push_str("\\r"),
                '\t' => self.out.push_str("\\t"),
                '\u{08}' => self.out.push_str("\\b"),
                '\u{0c}' => self.out.push_str("\\f"),
                c if (c as u32) < 0x20 => self.out.push_str(&format!("\\u{:04x}", c as u32)),
                c => self.out.push(c),
            }
        }
        self.out.push('"');
    }

    /// Text that is already a JSON token (a number, `null`, `true`).
    fn token(&mut self, t: impl std::fmt::Display) {
        use std::fmt::Write;
        let _ = write!(self.out, "{t}");
    }

    fn newline(&mut self) {
        if self.pretty {
            self.out.push('\n');
            for _ in 0..self.depth {
                self.out.push_str("  ");
            }
        }
    }
}

impl Object<'_> {
    /// Field `key` holding `value`.
    pub fn field<T: ToJson + ?Sized>(&mut self, key: &str, value: &T) {
        self.key(key);
        value.write_json(self.w);
    }

    /// Field `key` holding `value`, left out when the value [`ToJson::is_absent`].
    pub fn optional<T: ToJson + ?Sized>(&mut self, key: &str, value: &T) {
        if !value.is_absent() {
            self.field(key, value);
        }
    }

    /// Field `key` whose value `f` writes.
    pub fn field_with(&mut self, key: &str, f: impl FnOnce(&mut Writer)) {
        self.key(key);
        f(self.w);
    }

    fn key(&mut self, key: &str) {
        if !self.empty {
            self.w.out.push(',');
        }
        self.empty = false;
        self.w.newline();
        self.w.string(key);
        self.w.out.push(':');
        if self.w.pretty {
            self.w.out.push(' ');
        }
    }
}

impl ToJson for f64 {
    /// The shortest text that reads back as the same number (Rust's `{:?}`, which like
    /// serde_json's writes `1.0`, `0.1`, `1e-7`); `null` for NaN and the infinities, as
    /// serde_json writes them.
    fn write_json(&self, w: &mut Writer) {
        if self.is_finite() {
            w.token(format_args!("{self:?}"));
        } else {
            w.out.push_str("null");
        }
    }
}

macro_rules! display_tokens {
    ($($t:ty),*) => {$(
        impl ToJson for $t {
            fn write_json(&self, w: &mut Writer) {
                w.token(self);
            }
        }
    )*};
}
display_tokens!(u32, u64, usize, i64, bool);

impl ToJson for str {
    fn write_json(&self, w: &mut Writer) {
        w.string(self);
    }
}

impl ToJson for String {
    fn write_json(&self, w: &mut Writer) {
        w.string(self);
    }
}

impl<T: ToJson + ?Sized> ToJson for &T {
    fn write_json(&self, w: &mut Writer) {
        (**self).write_json(w);
    }

    fn is_absent(&self) -> bool {
        (**self).is_absent()
    }
}

impl<T: ToJson> ToJson for Vec<T> {
    fn write_json(&self, w: &mut Writer) {
        w.array(self);
    }

    fn is_absent(&self) -> bool {
        self.is_empty()
    }
}

impl<T: ToJson> ToJson for [T] {
    fn write_json(&self, w: &mut Writer) {
        w.array(self);
    }

    fn is_absent(&self) -> bool {
        self.is_empty()
    }
}

impl<T: ToJson> ToJson for Option<T> {
    fn write_json(&self, w: &mut Writer) {
        match self {
            Some(v) => v.write_json(w),
            None => w.out.push_str("null"),
        }
    }

    fn is_absent(&self) -> bool {
        self.is_none()
    }
}

/// `impl ToJson` and [`Fields`] for a struct whose JSON object is its fields in order:
/// `field name` writes `"name": self.name`; `field "json" = name` renames it; `optional name`
/// leaves it out when [`ToJson::is_absent`]; `flatten name` writes the fields of `self.name`
/// (a [`Fields`]) in its place.
#[macro_export]
#[doc(hidden)]
macro_rules! json_object {
    ($ty:ty { $($kind:ident $($json:literal =)? $field:ident),* $(,)? }) => {
        impl $crate::json::Fields for $ty {
            fn fields(&self, o: &mut $crate::json::Object<'_>) {
                let this = self;
                $( $crate::json_object!(@ o this $kind [$($json)?] $field); )*
            }
        }
        impl $crate::json::ToJson for $ty {
            fn write_json(&self, w: &mut $crate::json::Writer) {
                w.object(|o| $crate::json::Fields::fields(self, o))
            }
        }
    };
    (@ $o:ident $this:ident field [] $f:ident) => { $o.field(stringify!($f), &$this.$f) };
    (@ $o:ident $this:ident field [$json:literal] $f:ident) => { $o.field($json, &$this.$f) };
    (@ $o:ident $this:ident optional [] $f:ident) => { $o.optional(stringify!($f), &$this.$f) };
    (@ $o:ident $this:ident flatten [] $f:ident) => {
        $crate::json::Fields::fields(&$this.$f, $o)
    };
}

/// A JSON value as [`parse`] reads it: what a program needs to read a distribution file.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as its text (`12`, `-5`, `1.5e3`).
    Number(String),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object's fields, in the order written.
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The value of field `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// `value` through a serde serializer, fields in the order written: for a tool whose own
/// serde document holds a format type (`tune.json` holds the cluster).
#[cfg(feature = "serde")]
pub fn serialize<T: ToJson + ?Sized, S: serde::Serializer>(
    value: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::Serialize;
    // What `compact` writes always parses.
    parse(&compact(value))
        .map_err(serde::ser::Error::custom)?
        .serialize(serializer)
}

/// `impl serde::Serialize` by [`serialize`] (feature `serde`), for the whole files: the tools
/// write them into their own documents and tests.
#[macro_export]
#[doc(hidden)]
macro_rules! serialize_by_hand {
    ($($ty:ty),*) => {$(
        #[cfg(feature = "serde")]
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $crate::json::serialize(self, s)
            }
        }
    )*};
}

#[cfg(feature = "serde")]
impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Number(n) => {
                if let Ok(u) = n.parse::<u64>() {
                    s.serialize_u64(u)
                } else if let Ok(i) = n.parse::<i64>() {
                    s.serialize_i64(i)
                } else {
                    let x = n.parse::<f64>().map_err(serde::ser::Error::custom)?;
                    s.serialize_f64(x)
                }
            }
            Value::String(text) => s.serialize_str(text),
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Value::Object(fields) => {
                let mut map = s.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

/// Where and why a JSON text does not parse: `line` and `column` count from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The line of the offending character.
    pub line: usize,
    /// Its column, in characters.
    pub column: usize,
    /// What is wrong there.
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for ParseError {}

/// Arrays and objects nested deeper than this are refused rather than read on the stack.
const MAX_DEPTH: usize = 128;

/// Parses one JSON document (RFC 8259), whitespace around it allowed.
pub fn parse(text: &str) -> Result<Value, ParseError> {
    let mut p = Parser {
        text,
        pos: 0,
        depth: 0,
    };
    p.skip_ws();
    let value = p.value()?;
    p.skip_ws();
    if p.pos < text.len() {
        return Err(p.error("trailing characters after the document"));
    }
    Ok(value)
}

struct Parser<'t> {
    text: &'t str,
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> ParseError {
        let before = &self.text[..self.pos];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        ParseError {
            line,
            column,
            message: message.to_string(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, literal: &str, value: Value) -> Result<Value, ParseError> {
        if self.text[self.pos..].starts_with(literal) {
            self.pos += literal.len();
            Ok(value)
        } else {
            Err(self.error("expected a value"))
        }
    }

    fn value(&mut self) -> Result<Value, ParseError> {
        match self.peek() {
            None => Err(self.error("EOF while parsing a value")),
            Some(b'n') => self.expect("null", Value::Null),
            Some(b't') => self.expect("true", Value::Bool(true)),
            Some(b'f') => self.expect("false", Value::Bool(false)),
            Some(b'"') => self.string().map(Value::String),
            Some(b'[' | b'{') if self.depth >= MAX_DEPTH => {
                Err(self.error("nested more than 128 deep"))
            }
            Some(b'[') => {
                let mut items = Vec::new();
                self.elements(b']', |p| {
                    items.push(p.value()?);
                    Ok(())
                })?;
                Ok(Value::Array(items))
            }
            Some(b'{') => {
                let mut fields = Vec::new();
                self.elements(b'}', |p| {
                    if p.peek() != Some(b'"') {
                        return Err(p.error("expected a field name in double quotes"));
                    }
                    let key = p.string()?;
                    p.skip_ws();
                    if p.peek() != Some(b':') {
                        return Err(p.error("expected `:`"));
                    }
                    p.pos += 1;
                    p.skip_ws();
                    fields.push((key, p.value()?));
                    Ok(())
                })?;
                Ok(Value::Object(fields))
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error("expected a value")),
        }
    }

    /// The elements of an array or object from its opening bracket (at `pos`) to `close`, each
    /// read by `element` (at its first character), separated by commas.
    fn elements(
        &mut self,
        close: u8,
        mut element: impl FnMut(&mut Self) -> Result<(), ParseError>,
    ) -> Result<(), ParseError> {
        self.pos += 1;
        self.depth += 1;
        self.skip_ws();
        if self.peek() == Some(close) {
            self.pos += 1;
        } else {
            loop {
                self.skip_ws();
                element(self)?;
                self.skip_ws();
                match self.peek() {
                    Some(b',') => self.pos += 1,
                    Some(c) if c == close => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.error(&format!("expected `,` or `{}`", close as char))),
                }
            }
        }
        self.depth -= 1;
        Ok(())
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        let digits = |p: &mut Self| {
            let from = p.pos;
            while matches!(p.peek(), Some(b'0'..=b'9')) {
                p.pos += 1;
            }
            p.pos > from
        };
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        if self.peek() == Some(b'0') {
            self.pos += 1;
        } else if !digits(self) {
            return Err(self.error("invalid number"));
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if !digits(self) {
                return Err(self.error("invalid number"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if !digits(self) {
                return Err(self.error("invalid number"));
            }
        }
        Ok(Value::Number(self.text[start..self.pos].to_string()))
    }

    fn string(&mut self) -> Result<String, ParseError> {
        self.pos += 1; // the opening quote
        let mut out = String::new();
        loop {
            let rest = &self.text[self.pos..];
            let Some(c) = rest.chars().next() else {
                return Err(self.error("EOF while parsing a string"));
            };
            match c {
                '"' => {
                    self.pos += 1;
                    return Ok(out);
                }
                '\\' => {
                    let escaped = rest[1..].chars().next();
                    let simple = match escaped {
                        Some('"') => Some('"'),
                        Some('\\') => Some('\\'),
                        Some('/') => Some('/'),
                        Some('b') => Some('\u{08}'),
                        Some('f') => Some('\u{0c}'),
                        Some('n') => Some('\n'),
                        Some('r') => Some('\r'),
                        Some('t') => Some('\t'),
                        _ => None,
                    };
                    if let Some(s) = simple {
                        out.push(s);
                        self.pos += 2;
                    } else if escaped == Some('u') {
                        let hex = rest
                            .get(2..6)
                            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
                        let code = hex.and_then(|h| u32::from_str_radix(h, 16).ok());
                        // A surrogate stands for itself only in a pair; a distribution file
                        // has no use for either, so both read as the replacement character.
                        let Some(code) = code else {
                            return Err(self.error("invalid \\u escape"));
                        };
                        out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                        self.pos += 6;
                    } else {
                        return Err(self.error("invalid escape"));
                    }
                }
                c if (c as u32) < 0x20 => {
                    return Err(self.error("control character in a string"));
                }
                c => {
                    out.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Inner {
        a: u32,
        b: Option<u32>,
    }
    json_object!(Inner { field a, optional b });

    struct Outer {
        name: String,
        inner: Inner,
        list: Vec<f64>,
        skipped: Vec<u64>,
        nested: Vec<Inner>,
    }
    json_object!(Outer { field "crate" = name, flatten inner, field list, optional skipped, field nested });

    fn outer() -> Outer {
        Outer {
            name: "x\n\"y\"\u{1}".into(),
            inner: Inner { a: 1, b: None },
            list: vec![1.0, 0.1, 1e-7, f64::NAN, -0.0, 1e300],
            skipped: vec![],
            nested: vec![Inner { a: 2, b: Some(3) }],
        }
    }

    #[test]
    fn pretty_output_is_serde_jsons() {
        let expected = "{\n  \"crate\": \"x\\n\\\"y\\\"\\u0001\",\n  \"a\": 1,\n  \"list\": [\n    1.0,\n    0.1,\n    1e-7,\n    null,\n    -0.0,\n    1e300\n  ],\n  \"nested\": [\n    {\n      \"a\": 2,\n      \"b\": 3\n    }\n  ]\n}";
        assert_eq!(pretty(&outer()), expected);
    }

    #[test]
    fn compact_output_and_empty_containers() {
        assert_eq!(
            compact(&outer()),
            r#"{"crate":"x\n\"y\"\u0001","a":1,"list":[1.0,0.1,1e-7,null,-0.0,1e300],"nested":[{"a":2,"b":3}]}"#
        );
        let empty: Vec<u32> = Vec::new();
        assert_eq!(pretty(&empty), "[]");
        struct Nothing;
        impl ToJson for Nothing {
            fn write_json(&self, w: &mut Writer) {
                w.object(|_| {});
            }
        }
        assert_eq!(pretty(&Nothing), "{}");
    }

    #[test]
    fn parses_what_it_writes() {
        let v = parse(&pretty(&outer())).unwrap();
        assert_eq!(v.get("a"), Some(&Value::Number("1".into())));
        assert_eq!(v.get("crate"), Some(&Value::String("x\n\"y\"\u{1}".into())));
        let Some(Value::Array(list)) = v.get("list") else {
            panic!("list: {v:?}")
        };
        assert_eq!(list[2], Value::Number("1e-7".into()));
        assert_eq!(list[3], Value::Null);
        assert_eq!(
            parse(" [1, {\"rows\": [2]} , \"\\u00e9\\/\", true] ").unwrap(),
            Value::Array(vec![
                Value::Number("1".into()),
                Value::Object(vec![(
                    "rows".into(),
                    Value::Array(vec![Value::Number("2".into())])
                )]),
                Value::String("é/".into()),
                Value::Bool(true),
            ])
        );
    }

    #[test]
    fn parse_errors_say_where() {
        let cases = [
            ("[1, 2", 1, 6, "expected `,` or `]`"),
            ("{\"a\" 1}", 1, 6, "expected `:`"),
            ("[1,\n 01]", 2, 3, "expected `,` or `]`"),
            ("[-]", 1, 3, "invalid number"),
            ("[1.]", 1, 4, "invalid number"),
            ("\"abc", 1, 5, "EOF while parsing a string"),
            ("[1] x", 1, 5, "trailing characters after the document"),
            ("{1: 2}", 1, 2, "expected a field name in double quotes"),
            ("[nul]", 1, 2, "expected a value"),
            ("\"\\x\"", 1, 2, "invalid escape"),
            ("", 1, 1, "EOF while parsing a value"),
        ];
        for (text, line, column, message) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!(
                (e.line, e.column, e.message.as_str()),
                (line, column, message),
                "{text:?}"
            );
        }
        let deep = "[".repeat(10_000);
        assert_eq!(
            parse(&deep).unwrap_err().message,
            "nested more than 128 deep"
        );
    }
}
