//! Source positions of tokens and syntax nodes, the common ground on which analyzer items are
//! matched to the annotated function's statements.
//!
//! A [`Pos`] is (1-based line, 0-based character column) — the analyzer's `Loc` convention.
//! Inside a proc macro, proc-macro2's `span-locations` feature gives compiler spans their real
//! position on Rust ≥ 1.88; the structure file's spans have 1-based columns ([`from_span`]).
//! The extent of a node is computed from its first and last tokens, because joining compiler
//! spans (`Span::join`) is not available on stable Rust.

use mheta_format::Span;
use proc_macro2::{LineColumn, TokenStream, TokenTree};
use quote::ToTokens;

/// (1-based line, 0-based character column).
pub type Pos = (u32, u32);

/// A start and an end position (the end is exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub start: Pos,
    pub end: Pos,
}

fn pos(lc: LineColumn) -> Pos {
    (lc.line as u32, lc.column as u32)
}

/// The start of a token (a group starts at its opening delimiter).
pub fn token_start(t: &TokenTree) -> Pos {
    match t {
        TokenTree::Group(g) => pos(g.span_open().start()),
        _ => pos(t.span().start()),
    }
}

/// The end of a token (a group ends after its closing delimiter).
pub fn token_end(t: &TokenTree) -> Pos {
    match t {
        TokenTree::Group(g) => pos(g.span_close().end()),
        _ => pos(t.span().end()),
    }
}

/// The extent of a token stream, from its first token's start to its last token's end; `None`
/// for an empty stream or when the compiler gives no positions (line 0).
pub fn extent_of_tokens(tokens: TokenStream) -> Option<Extent> {
    let mut iter = tokens.into_iter();
    let first = iter.next()?;
    let start = token_start(&first);
    let end = match iter.last() {
        Some(last) => token_end(&last),
        None => token_end(&first),
    };
    (start.0 > 0).then_some(Extent { start, end })
}

/// The extent of a syntax node.
pub fn extent<T: ToTokens + ?Sized>(node: &T) -> Option<Extent> {
    extent_of_tokens(node.to_token_stream())
}

/// A structure-file span (1-based columns) as an [`Extent`].
pub fn from_span(span: &Span) -> Extent {
    let end = if span.end_line == 0 {
        (span.line, span.column.saturating_sub(1))
    } else {
        (span.end_line, span.end_column.saturating_sub(1))
    };
    Extent {
        start: (span.line, span.column.saturating_sub(1)),
        end,
    }
}

/// Every leaf token of a stream with its start position, groups' delimiters included, in order.
pub fn leaf_positions(tokens: TokenStream, out: &mut Vec<(Pos, proc_macro2::Span)>) {
    for t in tokens {
        match &t {
            TokenTree::Group(g) => {
                out.push((pos(g.span_open().start()), g.span_open()));
                leaf_positions(g.stream(), out);
                out.push((pos(g.span_close().start()), g.span_close()));
            }
            _ => out.push((token_start(&t), t.span())),
        }
    }
}

/// Rebuilds source text in which every token sits at its original line and column, so that an
/// analysis of the text reports the positions the compiler gives the tokens. Comments are lost
/// (doc comments come back as `#[doc = ".."]` attributes); when tokens would overlap, the later
/// one is pushed right and positions after it on that line no longer match.
pub fn layout_text(tokens: TokenStream) -> String {
    let mut text = String::new();
    let mut cursor: Pos = (1, 0);
    layout_into(tokens, &mut text, &mut cursor);
    text.push('\n');
    text
}

fn layout_into(tokens: TokenStream, text: &mut String, cursor: &mut Pos) {
    for t in tokens {
        match &t {
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    proc_macro2::Delimiter::Parenthesis => ("(", ")"),
                    proc_macro2::Delimiter::Brace => ("{", "}"),
                    proc_macro2::Delimiter::Bracket => ("[", "]"),
                    proc_macro2::Delimiter::None => ("", ""),
                };
                place(text, cursor, pos(g.span_open().start()), open);
                layout_into(g.stream(), text, cursor);
                place(text, cursor, pos(g.span_close().start()), close);
            }
            _ => place(text, cursor, token_start(&t), &t.to_string()),
        }
    }
}

fn place(text: &mut String, cursor: &mut Pos, at: Pos, token: &str) {
    if token.is_empty() {
        return;
    }
    if at.0 > cursor.0 {
        for _ in cursor.0..at.0 {
            text.push('\n');
        }
        *cursor = (at.0, 0);
    }
    if at.0 == cursor.0 && at.1 > cursor.1 {
        for _ in cursor.1..at.1 {
            text.push(' ');
        }
        cursor.1 = at.1;
    } else if at < *cursor {
        text.push(' ');
        cursor.1 += 1;
    }
    for ch in token.chars() {
        text.push(ch);
        if ch == '\n' {
            cursor.0 += 1;
            cursor.1 = 0;
        } else {
            cursor.1 += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structure_spans_convert_to_zero_based_columns() {
        let s = Span::range("src/main.rs", (4, 9), (6, 10));
        assert_eq!(
            from_span(&s),
            Extent {
                start: (4, 8),
                end: (6, 9)
            }
        );
        let only_start = Span::new("src/main.rs", 3, 1);
        assert_eq!(
            from_span(&only_start),
            Extent {
                start: (3, 0),
                end: (3, 0)
            }
        );
    }

    #[test]
    fn layout_puts_tokens_back_where_they_were() {
        // Parsed outside a proc macro, proc-macro2 gives tokens their positions in this text.
        let source = "fn f() {\n    let x = 1;\n\n      g(x , [2]);\n}";
        let tokens: TokenStream = source.parse().unwrap();
        let text = layout_text(tokens.clone());
        let again: TokenStream = text.parse().unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        leaf_positions(tokens, &mut a);
        leaf_positions(again, &mut b);
        let a: Vec<Pos> = a.into_iter().map(|(p, _)| p).collect();
        let b: Vec<Pos> = b.into_iter().map(|(p, _)| p).collect();
        assert_eq!(a, b);
    }
}
