//! Checking a TOML document by hand (`cluster.toml`, `mheta.toml`, a crate's `Cargo.toml`).
//!
//! toml's parser gives a document of values that keep their source spans; the readers of each
//! file walk it with these helpers — a table's keys against the fields it may have, each value's
//! type — and every problem is a [`Problem`] at a span, which the reader turns into its own
//! error with the file, line, column and field. Nothing here panics. (Serde's derived
//! deserializers did this before; instantiated over toml's deserializer they were half the
//! compiled code of the crates that read these files, which every program built.)

use std::ops::Range;

pub use toml::de::{DeTable, DeValue};
pub use toml::Spanned;

/// A value of the document with its span.
pub type Value<'i> = Spanned<DeValue<'i>>;

/// A problem at a place in the document.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Byte offsets of what is wrong (or of the table a field is missing from).
    pub span: Range<usize>,
    /// The field the problem is in, when it has a name.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl Problem {
    /// A problem in the field `field`.
    pub fn new(span: Range<usize>, field: &str, message: impl Into<String>) -> Problem {
        Problem {
            span,
            field: Some(field.to_string()),
            message: message.into(),
        }
    }

    /// 1-based line and column (in characters) of the problem in `text`.
    pub fn line_column(&self, text: &str) -> (usize, usize) {
        line_column(text, self.span.start)
    }
}

/// Parses a TOML document. A syntax error names the key written on its line, if there is one.
pub fn parse(text: &str) -> Result<Spanned<DeTable<'_>>, Problem> {
    DeTable::parse(text).map_err(|error| {
        let span = error.span().unwrap_or(0..0);
        Problem {
            field: key_on_line(text, span.start),
            span,
            message: error.message().trim().to_string(),
        }
    })
}

/// A table whose keys were checked against the fields it may have.
pub struct Fields<'t, 'i> {
    table: &'t DeTable<'i>,
    /// The table's span, where a missing field is reported.
    span: Range<usize>,
}

impl<'t, 'i> Fields<'t, 'i> {
    /// `table`'s keys checked against `known`: a key not among them is a problem at the key,
    /// naming it (the first in the file if there are several).
    pub fn check(
        table: &'t DeTable<'i>,
        span: Range<usize>,
        known: &[&str],
    ) -> Result<Fields<'t, 'i>, Problem> {
        let unknown = table
            .keys()
            .filter(|key| !known.contains(&key.get_ref().as_ref()))
            .min_by_key(|key| key.span().start);
        if let Some(key) = unknown {
            let name = key.get_ref().as_ref();
            let expected: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
            let expected = match expected.as_slice() {
                [] => "none".to_string(),
                [one] => one.clone(),
                [a, b] => format!("{a} or {b}"),
                all => format!("one of {}", all.join(", ")),
            };
            return Err(Problem::new(
                key.span(),
                name,
                format!("unknown field `{name}`, expected {expected}"),
            ));
        }
        Ok(Fields { table, span })
    }

    /// The value of field `name`, if the table has it.
    pub fn get(&self, name: &str) -> Option<&'t Value<'i>> {
        self.table.get(name)
    }

    /// The value of field `name`; its absence is a problem at the table.
    pub fn required(&self, name: &str) -> Result<&'t Value<'i>, Problem> {
        self.get(name)
            .ok_or_else(|| Problem::new(self.span.clone(), name, format!("missing field `{name}`")))
    }
}

/// `value` as a table (`[field]`), checked against the fields it may have.
pub fn table<'t, 'i>(
    value: &'t Value<'i>,
    field: &str,
    known: &[&str],
) -> Result<Fields<'t, 'i>, Problem> {
    match value.get_ref() {
        DeValue::Table(table) => Fields::check(table, value.span(), known),
        other => Err(Problem::new(
            value.span(),
            field,
            format!("expected a table `[{field}]`, found {}", describe(other)),
        )),
    }
}

/// `value` as an array of tables (`[[field]]`).
pub fn tables<'t, 'i>(value: &'t Value<'i>, field: &str) -> Result<&'t [Value<'i>], Problem> {
    match value.get_ref() {
        DeValue::Array(tables) => Ok(tables),
        other => Err(Problem::new(
            value.span(),
            field,
            format!("expected `[[{field}]]` tables, found {}", describe(other)),
        )),
    }
}

/// `value` as a string.
pub fn string<'t>(value: &'t Value<'_>, field: &str) -> Result<&'t str, Problem> {
    match value.get_ref() {
        DeValue::String(s) => Ok(s),
        other => Err(Problem::new(
            value.span(),
            field,
            format!("expected a quoted string, found {}", describe(other)),
        )),
    }
}

/// `value` as an array of strings (`["a", "b"]`).
pub fn strings(value: &Value<'_>, field: &str) -> Result<Vec<String>, Problem> {
    let DeValue::Array(items) = value.get_ref() else {
        return Err(Problem::new(
            value.span(),
            field,
            format!(
                "expected an array of strings such as [\"a\", \"b\"], found {}",
                describe(value.get_ref())
            ),
        ));
    };
    items
        .iter()
        .map(|item| string(item, field).map(str::to_string))
        .collect()
}

/// The value of a TOML integer, `None` for anything else or one beyond `i64`.
pub fn integer(value: &DeValue<'_>) -> Option<i64> {
    match value {
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix()).ok(),
        _ => None,
    }
}

/// The value of a TOML integer or float, `None` for anything else.
pub fn number(value: &DeValue<'_>) -> Option<f64> {
    match value {
        DeValue::Float(f) => f.as_str().parse::<f64>().ok(),
        DeValue::Integer(_) => integer(value).map(|i| i as f64),
        _ => None,
    }
}

/// A value as a message shows it: "the string \"x\"", "the number 5", "a table".
pub fn describe(value: &DeValue<'_>) -> String {
    match value {
        DeValue::String(s) => format!("the string \"{s}\""),
        DeValue::Integer(i) => format!("the number {i}"),
        DeValue::Float(f) => format!("the number {f}"),
        DeValue::Boolean(b) => format!("the boolean {b}"),
        DeValue::Datetime(d) => format!("the date {d}"),
        DeValue::Array(_) => "an array".to_string(),
        DeValue::Table(_) => "a table".to_string(),
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// The bare key of a `key = value` line containing `offset`, if that line has one.
fn key_on_line(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let start = text.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next()?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    let is_bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    is_bare.then(|| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based_and_count_characters() {
        let text = "ab\nµcd\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 3), (2, 1));
        // "µ" is two bytes: the byte offset 5 is the third character of line 2.
        assert_eq!(line_column(text, 5), (2, 2));
        assert_eq!(line_column(text, 100), (3, 1));
    }

    #[test]
    fn key_on_line_finds_bare_keys_only() {
        let text = "[node]\ncpu = \"x\"\n\"quoted key\" = 1\n";
        assert_eq!(key_on_line(text, 10), Some("cpu".to_string()));
        assert_eq!(key_on_line(text, 0), None);
        assert_eq!(key_on_line(text, 20), None);
    }

    #[test]
    fn tables_are_checked_field_by_field() {
        let text = "[a]\nx = 1\nzz = 2\nyy = [\"p\", 3]\n";
        let doc = parse(text).unwrap();
        let top = Fields::check(doc.get_ref(), doc.span(), &["a"]).unwrap();
        let a = top.required("a").unwrap();
        let err = table(a, "a", &["x"]).err().unwrap();
        // Two unknown keys: the first in the file is named, at its place.
        assert_eq!(err.field.as_deref(), Some("zz"));
        assert_eq!(err.line_column(text), (3, 1));
        assert_eq!(err.message, "unknown field `zz`, expected `x`");

        let a = table(a, "a", &["x", "zz", "yy", "w"]).unwrap();
        assert_eq!(integer(a.required("x").unwrap().get_ref()), Some(1));
        let missing = a.required("w").err().unwrap();
        assert_eq!(missing.message, "missing field `w`");
        let mixed = strings(a.required("yy").unwrap(), "a.yy").err().unwrap();
        assert_eq!(
            mixed.message,
            "expected a quoted string, found the number 3"
        );
        assert_eq!(mixed.line_column(text), (4, 12));
        assert!(table(a.required("x").unwrap(), "x", &[]).is_err());
    }

    #[test]
    fn numbers_read_as_written() {
        let doc =
            parse("a = 0x10\nb = 1_000\nc = 2.5e3\nd = -inf\ne = 99999999999999999999\n").unwrap();
        let get = |k: &str| doc.get_ref().get(k).unwrap().get_ref().clone();
        assert_eq!(integer(&get("a")), Some(16));
        assert_eq!(integer(&get("b")), Some(1000));
        assert_eq!(number(&get("c")), Some(2500.0));
        assert_eq!(number(&get("d")), Some(f64::NEG_INFINITY));
        assert_eq!(integer(&get("e")), None);
        assert_eq!(integer(&get("c")), None);
    }

    #[test]
    fn a_syntax_error_names_the_key_on_its_line() {
        let text = "[a]\nx = = 1\n";
        let err = parse(text).err().unwrap();
        assert_eq!(err.field.as_deref(), Some("x"));
        assert_eq!(err.line_column(text).0, 2);
    }
}
