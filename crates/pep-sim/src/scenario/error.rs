//! Errors that name the file, the field and the position.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

use super::repeat::Expansion;

/// A 1-based line and column (columns count characters, not bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

/// One problem in a scenario, displayed as
/// `scenarios/x.toml:14:8: link[2].rate: expected a rate like ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Where the text came from: a path, or a label such as `"<overrides>"`.
    pub origin: String,
    /// Position in the source text; `None` when there is no text to point
    /// into (a document built or modified in memory).
    pub pos: Option<Pos>,
    /// The field path (`link[2].rate`, `flow "f1".to`); empty for errors that
    /// are not about one field, such as TOML syntax.
    pub field: String,
    pub message: String,
}

impl Diagnostic {
    /// Whether `other` reports the same problem (field and message),
    /// wherever and in whichever text it was found.
    pub fn same_problem(&self, other: &Diagnostic) -> bool {
        self.field == other.field && self.message == other.message
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if let Some(p) = self.pos {
            write!(f, ":{}:{}", p.line, p.column)?;
        }
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Why a scenario could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{}: cannot read the scenario: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// One or more problems in the text, in source order where known.
    #[error("{}", DisplayAll(.0))]
    Invalid(Vec<Diagnostic>),
}

impl ScenarioError {
    /// The problems found; empty for [`ScenarioError::Read`].
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            ScenarioError::Read { .. } => &[],
            ScenarioError::Invalid(d) => d,
        }
    }
}

struct DisplayAll<'a>(&'a [Diagnostic]);

impl fmt::Display for DisplayAll<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

/// Collects diagnostics while a document is checked.
pub(crate) struct Ctx<'t> {
    origin: String,
    /// The text spans point into, if they point anywhere meaningful.
    text: Option<&'t str>,
    /// When `text` is the expansion of `[[repeat]]`s: the text as written,
    /// which positions are given in, and the map into it.
    written: Option<(&'t str, &'t Expansion)>,
    pub(crate) errors: Vec<Diagnostic>,
    /// For each of `errors`, the `[[repeat]]` copy it was found in.
    copies: Vec<Option<i64>>,
    /// Warnings found in a copy (position and message): the other copies
    /// have them too, and are not warned about again.
    copy_warnings: Vec<(Option<Pos>, String)>,
    /// Settings that are valid but do nothing: reported, never refused.
    pub(crate) warnings: Vec<Diagnostic>,
    /// Fields found to have an effect: never warned about (`acts`).
    acting: Vec<String>,
}

impl<'t> Ctx<'t> {
    pub(crate) fn new(origin: &str, text: Option<&'t str>) -> Self {
        Ctx {
            origin: origin.to_string(),
            text,
            written: None,
            errors: Vec::new(),
            copies: Vec::new(),
            copy_warnings: Vec::new(),
            warnings: Vec::new(),
            acting: Vec::new(),
        }
    }

    /// A context for the expansion of `written`, placing positions in
    /// `written` (if `positions`) and naming the copy of a `[[repeat]]`.
    pub(crate) fn expanded(
        origin: &str,
        written: &'t str,
        exp: &'t Expansion,
        positions: bool,
    ) -> Self {
        let mut ctx = Ctx::new(origin, positions.then_some(exp.text.as_str()));
        ctx.written = positions.then_some((written, exp));
        ctx
    }

    /// Where the text came from (a path): files it names are relative
    /// to its directory.
    pub(crate) fn origin(&self) -> &str {
        &self.origin
    }

    /// Records a problem with `field` at `span` (a byte range of the text).
    pub(crate) fn err(
        &mut self,
        span: Option<Range<usize>>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) {
        let (d, copy) = self.diagnostic(span, field.into(), message.into());
        self.errors.push(d);
        self.copies.push(copy);
    }

    /// Records a setting with no effect, placed as [`Ctx::err`] places
    /// errors; once per field (a default is warned about once, not once
    /// per flow or link that takes it).
    pub(crate) fn warn(
        &mut self,
        span: Option<Range<usize>>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) {
        let (mut d, copy) = self.diagnostic(span, field.into(), message.into());
        if let Some(i) = copy {
            let seen = (d.pos, d.message.clone());
            if self.copy_warnings.contains(&seen) {
                return;
            }
            self.copy_warnings.push(seen);
            d.message.push_str(&copy_note(i, 0));
        }
        let known = |f: &String| *f == d.field;
        if !self.warnings.iter().any(|w| known(&w.field)) && !self.acting.iter().any(known) {
            self.warnings.push(d);
        }
    }

    /// Records that `field` has an effect somewhere (a default that one
    /// flow uses and another ignores): no warning about it, now or later.
    pub(crate) fn acts(&mut self, field: &str) {
        self.warnings.retain(|w| w.field != field);
        if !self.acting.iter().any(|f| f == field) {
            self.acting.push(field.to_string());
        }
    }

    /// The diagnostic, placed in the text as written, and the index of the
    /// `[[repeat]]` copy it is in, if any.
    fn diagnostic(
        &self,
        span: Option<Range<usize>>,
        field: String,
        message: String,
    ) -> (Diagnostic, Option<i64>) {
        let (pos, copy) = match (self.text, span, self.written) {
            (Some(_), Some(s), Some((written, exp))) => {
                let (at, copy) = exp.source_of(written, s.start);
                (at.map(|at| pos_of(written, at)), copy)
            }
            (Some(t), Some(s), None) => (Some(pos_of(t, s.start)), None),
            _ => (None, None),
        };
        let d = Diagnostic {
            origin: self.origin.clone(),
            pos,
            field,
            message,
        };
        (d, copy)
    }

    /// The warnings, in source order (those without a position last).
    pub(crate) fn take_warnings(&mut self) -> Vec<Diagnostic> {
        let mut w = std::mem::take(&mut self.warnings);
        w.sort_by_key(source_order);
        w
    }

    /// Records a serde error, prefixing its path with `prefix` (the field
    /// that held the value deserialized) and using `span` when the error
    /// itself carries none.
    pub(crate) fn serde_err(
        &mut self,
        e: serde_path_to_error::Error<toml::de::Error>,
        prefix: &str,
        span: Option<Range<usize>>,
    ) {
        self.serde_err_placed(&e, prefix, span, &|_, n| n, None);
    }

    /// [`Ctx::serde_err`] for a text read apart from the others it is
    /// placed among (`[[repeat]]`): `index(table, n)` is the place of
    /// the `n`th `[[table]]` read, and `copy`, when the text was a copy,
    /// its text and the offset it starts at.
    pub(crate) fn serde_err_placed(
        &mut self,
        e: &serde_path_to_error::Error<toml::de::Error>,
        prefix: &str,
        span: Option<Range<usize>>,
        index: &dyn Fn(&str, usize) -> usize,
        copy: Option<(&str, usize)>,
    ) {
        let mut field = join(prefix, &render_path(e.path(), index));
        let span = e.inner().span().or(span);
        let (text, start) = match copy {
            Some((text, start)) => (Some(text), start),
            None => (self.text, 0),
        };
        if field.is_empty() {
            // The tokenizer (an integer beyond i64, say) fails before serde
            // has a path; find the key holding the bad value instead.
            if let (Some(text), Some(s)) = (text, span.clone()) {
                field = join(prefix, &field_at(text, s).unwrap_or_default());
            }
        }
        let msg = tidy_number(tidy(e.inner().message()));
        self.err(span.map(|s| s.start + start..s.end + start), field, msg)
    }

    pub(crate) fn into_result<T>(mut self, value: Option<T>) -> Result<T, super::ScenarioError> {
        match value {
            Some(v) if self.errors.is_empty() => Ok(v),
            _ => {
                if self.errors.is_empty() {
                    self.err(None, "", "invalid scenario");
                }
                let mut errors = collapse_copies(self.errors, &self.copies);
                // Source order reads best; errors without a position go last.
                errors.sort_by_key(source_order);
                Err(super::ScenarioError::Invalid(errors))
            }
        }
    }
}

/// ` (in copy i = 3 of a [[repeat]])`, and how many other copies have the
/// same problem.
pub(crate) fn copy_note(i: i64, more: usize) -> String {
    match more {
        0 => format!(" (in copy i = {i} of a [[repeat]])"),
        1 => format!(" (in copy i = {i} of a [[repeat]], and in 1 more copy)"),
        n => format!(" (in copy i = {i} of a [[repeat]], and in {n} more copies)"),
    }
}

/// Different problems of copies at one place of a `[[repeat]]` shown in
/// full; the rest are counted in the last one shown. A mistake in a group
/// of 100,000 copies whose message names each copy's own values (a flow's
/// name, its start) is then a few lines, not 100,000.
pub(crate) const SHOWN_PER_PLACE: usize = 3;

/// A problem [`collapse_copies`] keeps: the copy it was found in and how
/// many more copies have it, and how many other problems at its place
/// are not shown.
struct Kept {
    d: Diagnostic,
    copy: Option<(i64, usize)>,
    hidden: usize,
}

/// `errors` with the copy each was found in named, and a problem that
/// several copies of a `[[repeat]]` share (same place, same message)
/// reported once, at the first, with how many more have it. Past
/// [`SHOWN_PER_PLACE`] different problems at one place, the others are
/// counted, not listed. One pass, with the problems seen kept in maps: a
/// search of those already kept, per problem, was quadratic in copies.
fn collapse_copies(errors: Vec<Diagnostic>, copies: &[Option<i64>]) -> Vec<Diagnostic> {
    use std::collections::btree_map::{BTreeMap, Entry};
    let mut out: Vec<Kept> = Vec::new();
    // Where each (place, message) of a copy went in `out`.
    let mut kept: BTreeMap<(Option<Pos>, String), usize> = BTreeMap::new();
    // Per place: how many different problems are shown, and the last one.
    let mut places: BTreeMap<Option<Pos>, (usize, usize)> = BTreeMap::new();
    for (d, &copy) in errors.into_iter().zip(copies) {
        let Some(i) = copy else {
            out.push(Kept {
                d,
                copy: None,
                hidden: 0,
            });
            continue;
        };
        let place = places.entry(d.pos).or_insert((0, 0));
        match kept.entry((d.pos, d.message.clone())) {
            Entry::Occupied(k) => {
                if let Some((_, more)) = &mut out[*k.get()].copy {
                    *more += 1;
                }
            }
            Entry::Vacant(_) if place.0 == SHOWN_PER_PLACE => out[place.1].hidden += 1,
            Entry::Vacant(k) => {
                *place = (place.0 + 1, out.len());
                k.insert(out.len());
                out.push(Kept {
                    d,
                    copy: Some((i, 0)),
                    hidden: 0,
                });
            }
        }
    }
    out.into_iter()
        .map(
            |Kept {
                 mut d,
                 copy,
                 hidden,
             }| {
                if let Some((i, more)) = copy {
                    d.message.push_str(&copy_note(i, more));
                }
                match hidden {
                    0 => {}
                    1 => d
                        .message
                        .push_str("; 1 other problem of another copy here not shown"),
                    n => d.message.push_str(&format!(
                        "; {n} other problems of other copies here not shown"
                    )),
                }
                d
            },
        )
        .collect()
}

/// Sorts diagnostics by position, those without one last.
fn source_order(d: &Diagnostic) -> (usize, usize) {
    d.pos.map_or((usize::MAX, 0), |p| (p.line, p.column))
}

/// `a.b`, or just one side when the other is empty.
pub(crate) fn join(prefix: &str, rest: &str) -> String {
    match (prefix.is_empty(), rest.is_empty()) {
        (true, _) => rest.to_string(),
        (false, true) => prefix.to_string(),
        (false, false) if rest.starts_with('[') => format!("{prefix}{rest}"),
        (false, false) => format!("{prefix}.{rest}"),
    }
}

/// Renders a serde path as `link[2].forward.rate`, hiding the keys that
/// `toml::Spanned` uses internally; a top-level array's index `n` is
/// shown as `index(key, n)`.
fn render_path(path: &serde_path_to_error::Path, index: &dyn Fn(&str, usize) -> usize) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    let mut top: Option<&str> = None;
    for seg in path.iter() {
        match seg {
            Segment::Seq { index: n } => {
                let n = match top.take() {
                    Some(key) if out == key => index(key, *n),
                    _ => *n,
                };
                out.push_str(&format!("[{n}]"));
            }
            Segment::Map { key } if key.starts_with("$__serde_spanned") => {}
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if out.is_empty() {
                    top = Some(key);
                } else {
                    top = None;
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Unknown => {}
        }
    }
    out
}

/// One line: toml's messages sometimes span several.
/// The dotted path (`link[2].queue.limit`) of the value at `span`, found by
/// putting a marker string in its place and looking for it in the parsed
/// document; `None` when the text still does not parse that way (a syntax
/// error, not a bad value).
pub fn field_at(text: &str, span: Range<usize>) -> Option<String> {
    // Plain ASCII: written into the TOML as is, no escapes needed.
    const MARK: &str = "<<pep: the value that failed>>";
    // toml's span may cover only the token's first character.
    let rest = text.get(span.start..)?;
    let token = rest
        .find([' ', '\t', '\r', '\n', ',', '}', ']', '#'])
        .unwrap_or(rest.len());
    let span = span.start..span.end.max(span.start + token);
    let patched = format!(
        "{}\"{MARK}\"{}",
        text.get(..span.start)?,
        text.get(span.end..)?
    );
    let doc: toml::Table = patched.parse().ok()?;
    fn find(v: &toml::Value, path: &mut String) -> bool {
        let steps: Vec<(String, &toml::Value)> = match v {
            toml::Value::String(s) => return s == MARK,
            toml::Value::Table(t) => {
                let dot = if path.is_empty() { "" } else { "." };
                t.iter().map(|(k, v)| (format!("{dot}{k}"), v)).collect()
            }
            toml::Value::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("[{i}]"), v))
                .collect(),
            _ => return false,
        };
        steps.into_iter().any(|(step, v)| {
            let len = path.len();
            path.push_str(&step);
            find(v, path) || {
                path.truncate(len);
                false
            }
        })
    }
    let mut path = String::new();
    find(&toml::Value::Table(doc), &mut path).then_some(path)
}

/// toml's words for an integer beyond i64, with the limit they leave out.
pub fn tidy_number(msg: String) -> String {
    if msg == "number too large to fit in target type" {
        "integer too large (TOML integers go up to 9223372036854775807)".into()
    } else {
        msg
    }
}

fn tidy(msg: &str) -> String {
    msg.trim()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(": ")
}

/// Line and column of byte `offset` in `text`.
pub(crate) fn pos_of(text: &str, offset: usize) -> Pos {
    let mut off = offset.min(text.len());
    while !text.is_char_boundary(off) {
        off -= 1;
    }
    let before = &text[..off];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Pos {
        line: before.matches('\n').count() + 1,
        column: before[line_start..].chars().count() + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based_and_count_chars() {
        let t = "a = 1\nµ = \"x\"\n";
        assert_eq!(pos_of(t, 0), Pos { line: 1, column: 1 });
        assert_eq!(pos_of(t, 6), Pos { line: 2, column: 1 });
        // 'µ' is two bytes but one column.
        assert_eq!(pos_of(t, 8), Pos { line: 2, column: 2 });
        assert_eq!(pos_of(t, 7), Pos { line: 2, column: 1 });
        assert_eq!(pos_of(t, 999), Pos { line: 3, column: 1 });
    }

    #[test]
    fn display_format() {
        let d = Diagnostic {
            origin: "x.toml".into(),
            pos: Some(Pos {
                line: 14,
                column: 8,
            }),
            field: "link[2].rate".into(),
            message: "bad".into(),
        };
        assert_eq!(d.to_string(), "x.toml:14:8: link[2].rate: bad");
        let d = Diagnostic {
            pos: None,
            field: String::new(),
            ..d
        };
        assert_eq!(d.to_string(), "x.toml: bad");
    }
}
