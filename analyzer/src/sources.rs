//! Where analysed code comes from: the text of every loaded file ([`SourceMap`]) and locations
//! in it ([`Loc`]), with the inline sites through which inlined code was reached. Every pass
//! and the diagnostics use these; this module uses none of them.

use mheta_format::Span;

/// A file in the [`SourceMap`].
pub type FileId = usize;

/// A source range: `file`, start and end as (1-based line, 0-based character column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Loc {
    /// The file, an index into [`SourceMap::files`].
    pub file: FileId,
    /// The first character: (1-based line, 0-based character column).
    pub start: (u32, u32),
    /// Just past the last character: (1-based line, 0-based character column).
    pub end: (u32, u32),
    /// Where the analysis reached this code through inlined calls: 0 in the function itself,
    /// else an inline site of the [`SourceMap`] ([`SourceMap::inline_site`]), so two inlined
    /// copies of one callee have different locations.
    pub via: u32,
}

impl Loc {
    /// The location of a syn/proc-macro2 span in `file`.
    pub fn of(file: FileId, span: proc_macro2::Span) -> Loc {
        let (s, e) = (span.start(), span.end());
        Loc {
            file,
            start: (s.line as u32, s.column as u32),
            end: (e.line as u32, e.column as u32),
            via: 0,
        }
    }

    /// The same location reached through inline site `via`.
    pub fn via(self, via: u32) -> Loc {
        Loc { via, ..self }
    }

    /// The smallest location covering both (the start of `self` to the end of `other` when they
    /// are in the same file and reached through the same inline site, `self` otherwise: lines of
    /// a callee and of its caller make no span, even in one file).
    pub fn to(self, other: Loc) -> Loc {
        if self.file != other.file || self.via != other.via {
            return self;
        }
        Loc {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
            via: self.via,
        }
    }
}

/// The text of every loaded file, for spans, snippets and rendering.
#[derive(Debug, Default, Clone)]
pub struct SourceMap {
    files: Vec<SourceFile>,
    /// Inline sites: the call expression each inlined copy of a callee was reached through
    /// (itself inside a callee when its `via` is not 0). Site `k` is entry `k - 1`.
    inline_sites: std::cell::RefCell<InlineSites>,
}

/// The inline sites of a [`SourceMap`]: site `k` is `calls[k - 1]`, found again by its call.
#[derive(Debug, Default, Clone)]
struct InlineSites {
    calls: Vec<Loc>,
    by_call: crate::hash::HashMap<Loc, u32>,
}

/// One loaded file.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The name shown in spans: relative to the crate root, or the path as given.
    pub name: String,
    /// The file's whole text, as read.
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceMap {
    /// Adds a file under the name shown in spans; returns its id.
    pub fn add(&mut self, name: String, text: String) -> FileId {
        let mut line_starts = vec![0];
        line_starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        self.files.push(SourceFile {
            name,
            text,
            line_starts,
        });
        self.files.len() - 1
    }

    /// Every file, in the order added ([`FileId`] order).
    pub fn files(&self) -> &[SourceFile] {
        &self.files
    }

    /// The inline site of a call expression (`call.via` is the site the call itself was reached
    /// through): the same call always gets the same site.
    pub fn inline_site(&self, call: Loc) -> u32 {
        let mut sites = self.inline_sites.borrow_mut();
        let next = sites.calls.len() as u32 + 1;
        let site = *sites.by_call.entry(call).or_insert(next);
        if site == next {
            sites.calls.push(call);
        }
        site
    }

    /// The outermost call of inline site `via`'s chain: the call written in the function being
    /// built (its own `via` is 0). `None` for site 0 (no inlining) or an unknown site.
    pub fn outermost_call(&self, via: u32) -> Option<Loc> {
        self.call_in(via, 0)
    }

    /// The call of inline site `via`'s chain written in the code reached through site `context`
    /// (0: the function being built): where that code calls into what `via` reached. `None`
    /// when the chain does not pass through `context`.
    pub fn call_in(&self, via: u32, context: u32) -> Option<Loc> {
        let sites = self.inline_sites.borrow();
        let mut call = *via
            .checked_sub(1)
            .and_then(|i| sites.calls.get(i as usize))?;
        loop {
            if call.via == context {
                return Some(call);
            }
            call = *call
                .via
                .checked_sub(1)
                .and_then(|i| sites.calls.get(i as usize))?;
        }
    }

    /// The structure-file span of a location (1-based columns), with the call sites it was
    /// reached through (`via`, outermost first).
    pub fn span(&self, loc: Loc) -> Span {
        let mut span = self.plain_span(loc);
        let sites = self.inline_sites.borrow();
        let mut at = loc.via;
        while let Some(call) = at.checked_sub(1).and_then(|i| sites.calls.get(i as usize)) {
            span.via.insert(0, self.plain_span(*call));
            at = call.via;
        }
        span
    }

    fn plain_span(&self, loc: Loc) -> Span {
        let name = self
            .files
            .get(loc.file)
            .map(|f| f.name.clone())
            .unwrap_or_default();
        Span::range(
            name,
            (loc.start.0, loc.start.1 + 1),
            (loc.end.0, loc.end.1 + 1),
        )
    }

    /// Byte offset of a (1-based line, 0-based character column) position.
    fn offset(&self, file: FileId, (line, column): (u32, u32)) -> Option<usize> {
        let f = self.files.get(file)?;
        let start = *f.line_starts.get((line as usize).checked_sub(1)?)?;
        // Where the characters before the column are ASCII, the column counts bytes.
        let ascii_end = start + column as usize;
        if f.text
            .as_bytes()
            .get(start..ascii_end)
            .is_some_and(<[u8]>::is_ascii)
        {
            return Some(ascii_end);
        }
        let rest = &f.text[start..];
        let within = rest
            .char_indices()
            .nth(column as usize)
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        Some(start + within)
    }

    /// The byte range of a location, if it lies inside its file.
    pub fn byte_range(&self, loc: Loc) -> Option<std::ops::Range<usize>> {
        let (a, b) = (
            self.offset(loc.file, loc.start)?,
            self.offset(loc.file, loc.end)?,
        );
        (a <= b).then_some(a..b)
    }

    /// The source text of a location with runs of whitespace collapsed to one space.
    pub fn snippet(&self, loc: Loc) -> Option<String> {
        let range = self.byte_range(loc)?;
        let text = self.files.get(loc.file)?.text.get(range)?;
        let mut out = String::with_capacity(text.len());
        for word in text.split_whitespace() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A callee's lines and its caller's make no span, even in one file: joined, the first
    /// location stays as it is (it used to run from the callee's line to the caller's).
    #[test]
    fn locations_of_different_inline_sites_do_not_join() {
        let at = |start: u32, end: u32, via: u32| Loc {
            file: 0,
            start: (start, 4),
            end: (end, 8),
            via,
        };
        assert_eq!(at(28, 28, 1).to(at(104, 104, 0)), at(28, 28, 1));
        assert_eq!(at(104, 104, 0).to(at(28, 28, 1)), at(104, 104, 0));
        assert_eq!(at(20, 21, 1).to(at(28, 29, 1)), at(20, 29, 1));
    }

    /// The byte offset of every (line, column) position, columns past a line's end included,
    /// is the one counting characters from the line's start gives, in ASCII and non-ASCII text.
    #[test]
    fn offsets_count_characters() {
        let text = "let a = 1;\n// é ü ∑ 🦀 done\nlet café = \"naïve\"; x\n\nend";
        let mut map = SourceMap::default();
        let file = map.add("t.rs".into(), text.into());
        let line_starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        for (l, &start) in line_starts.iter().enumerate() {
            for column in 0..40u32 {
                let rest = &text[start..];
                let expected = start
                    + rest
                        .char_indices()
                        .nth(column as usize)
                        .map_or(rest.len(), |(i, _)| i);
                let at = map.offset(file, (l as u32 + 1, column));
                assert_eq!(at, Some(expected), "line {} column {column}", l + 1);
            }
        }
        assert_eq!(map.offset(file, (0, 0)), None);
        assert_eq!(map.offset(file, (99, 0)), None);
        let loc = Loc {
            file,
            start: (3, 4),
            end: (3, 18),
            via: 0,
        };
        assert_eq!(map.snippet(loc).as_deref(), Some("café = \"naïve\""));
    }
}
