//! `[[repeat]]`: tables written once and copied `count` times, with the
//! copy's index `i` filled into their strings (`name = "s{i}"`).
//!
//! Expansion works on the text, before anything else reads it: each copy
//! is the group's tables as written, their headers without `repeat.` and
//! their strings filled in, so the expanded file is the one a generator
//! would have written, table for table and in the same order (copy 0's
//! tables, then copy 1's, ...), at the place of the `[[repeat]]`. A map
//! from the expanded text back to the written one keeps every later error
//! on the line that caused it, and says which copy it was.

use std::ops::Range;

use toml_edit::{ImDocument, Item, Table, Value};

use super::error::{copy_note, Ctx};

/// Most copies one `[[repeat]]` makes: the most flows a scenario may have.
pub(crate) const MAX_COUNT: i64 = super::validate::MAX_FLOWS as i64;

/// Most bytes of text the copies may add up to (a guard against a large
/// `count` of large tables; the written file is at most 16 MiB).
const MAX_EXPANDED_BYTES: usize = 64 << 20;

/// The tables a `[[repeat]]` may hold.
const REPEATABLE: [&str; 5] = ["node", "link", "flow", "agent", "trace"];

/// What expansion made of a text.
pub(crate) enum Outcome {
    /// No `[[repeat]]` (or TOML that does not parse, which the next step
    /// reports): read the text as written.
    Plain,
    Expanded(Expansion),
    /// Errors were reported to the context.
    Invalid,
}

/// The expanded text and where each piece of it was written.
pub(crate) struct Expansion {
    pub(crate) text: String,
    /// In order of `out`.
    segs: Vec<Seg>,
}

/// A piece of the expanded text.
struct Seg {
    /// Where it starts in the expanded text.
    out: usize,
    /// Where it was written.
    src: usize,
    /// Copied as written, so offsets inside it map one to one; otherwise
    /// (a rewritten header or string) the whole piece maps to `src`.
    verbatim: bool,
    /// The copy's index, for text made by a `[[repeat]]`.
    copy: Option<i64>,
}

impl Expansion {
    /// The offset in the written text that byte `off` of the expanded text
    /// came from, and the index of the copy it belongs to, if any.
    pub(crate) fn source_of(&self, off: usize) -> (usize, Option<i64>) {
        let k = self.segs.partition_point(|s| s.out <= off);
        let Some(s) = k.checked_sub(1).map(|k| &self.segs[k]) else {
            return (off, None);
        };
        let src = if s.verbatim {
            s.src + (off - s.out)
        } else {
            s.src
        };
        (src, s.copy)
    }

    fn push(&mut self, piece: &str, src: usize, verbatim: bool, copy: Option<i64>) {
        if piece.is_empty() {
            return;
        }
        self.segs.push(Seg {
            out: self.text.len(),
            src,
            verbatim,
            copy,
        });
        self.text.push_str(piece);
    }

    /// Ends the text with a newline, so the next table's header starts a
    /// line of its own.
    fn end_line(&mut self, src: usize, copy: Option<i64>) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.push("\n", src, false, copy);
        }
    }
}

/// A table header as written, `[a.b]` or `[[a.b]]`, and the text up to
/// the next header.
struct Region<'d> {
    path: Vec<String>,
    array: bool,
    table: &'d Table,
    /// From the header's `[` to the next header (or the end).
    span: Range<usize>,
    /// Where the header's closing bracket ends.
    body: usize,
}

/// Expands every `[[repeat]]` of `text`; errors go to `ctx`, placed in
/// `text` (which `ctx` must hold).
pub(crate) fn expand(text: &str, ctx: &mut Ctx) -> Outcome {
    if !text.contains("repeat") {
        return Outcome::Plain;
    }
    let Ok(doc) = ImDocument::parse(text) else {
        return Outcome::Plain;
    };
    let Some(item) = doc.as_table().get("repeat") else {
        return Outcome::Plain;
    };
    if !item.is_array_of_tables() {
        let span = doc.as_table().key("repeat").and_then(|k| k.span());
        let msg = "write each group as a [[repeat]] table with `count`, \
                   followed by its [[repeat.node]], [[repeat.link]], ... tables";
        ctx.err(span, "repeat", msg);
        return Outcome::Invalid;
    }
    let regions = regions(&doc, text);
    let before = ctx.errors.len();
    let mut exp = Expansion {
        text: String::with_capacity(text.len()),
        segs: Vec::new(),
    };
    let first = regions.first().map_or(text.len(), |r| r.span.start);
    exp.push(&text[..first], 0, true, None);
    let mut group = 0;
    let mut k = 0;
    while k < regions.len() {
        let r = &regions[k];
        k += 1;
        if r.path[0] != "repeat" {
            exp.end_line(r.span.start, None);
            exp.push(&text[r.span.clone()], r.span.start, true, None);
            continue;
        }
        if r.path.len() > 1 {
            let msg = format!(
                "{} belongs to the [[repeat]] above it, but other tables come between: \
                 write a group's tables right after its [[repeat]]",
                header(&r.path, r.array)
            );
            ctx.err(Some(r.span.start..r.body), r.path.join("."), msg);
            continue;
        }
        let members: Vec<&Region> = regions[k..]
            .iter()
            .take_while(|m| m.path[0] == "repeat" && m.path.len() > 1)
            .collect();
        k += members.len();
        if let Some(count) = check_group(r, &members, group, text, ctx) {
            copy_group(&mut exp, &members, count, group, text, ctx);
        }
        group += 1;
    }
    if ctx.errors.len() > before {
        return Outcome::Invalid;
    }
    Outcome::Expanded(exp)
}

/// Every table header written in `doc`, in the order written.
fn regions<'d>(doc: &'d ImDocument<&str>, text: &str) -> Vec<Region<'d>> {
    fn walk<'d>(t: &'d Table, path: &mut Vec<String>, text: &str, out: &mut Vec<Region<'d>>) {
        for (key, item) in t.iter() {
            path.push(key.to_string());
            let tables: Vec<(&Table, bool)> = match item {
                Item::Table(t) => vec![(t, false)],
                Item::ArrayOfTables(a) => a.iter().map(|t| (t, true)).collect(),
                _ => Vec::new(),
            };
            for (t, array) in tables {
                // Implicit and dotted tables have no header of their own.
                if let Some(span) = t.span().filter(|_| !t.is_implicit() && !t.is_dotted()) {
                    out.push(Region {
                        path: path.clone(),
                        array,
                        table: t,
                        body: header_end(text, span.start),
                        span,
                    });
                }
                walk(t, path, text, out);
            }
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(doc.as_table(), &mut Vec::new(), text, &mut out);
    out.sort_by_key(|r| r.span.start);
    let ends: Vec<usize> = out
        .iter()
        .skip(1)
        .map(|r| r.span.start)
        .chain([text.len()])
        .collect();
    for (r, end) in out.iter_mut().zip(ends) {
        r.span.end = end;
    }
    out
}

/// Where the header starting at `start` ends: after its closing `]` or
/// `]]`, skipping brackets inside quoted keys.
fn header_end(text: &str, start: usize) -> usize {
    let mut quote = None;
    let mut escaped = false;
    for (k, c) in text[start..].char_indices().skip(1) {
        match (quote, c) {
            (Some('"'), '\\') if !escaped => escaped = true,
            (Some(q), c) if c == q && !escaped => quote = None,
            (Some(_), _) => escaped = false,
            (None, '"' | '\'') => quote = Some(c),
            (None, ']') => {
                let end = start + k + 1;
                return end + usize::from(text[end..].starts_with(']'));
            }
            _ => {}
        }
    }
    text.len()
}

/// The header of a table at `path`: `[a.b]`, or `[[a.b]]` for an array.
fn header(path: &[String], array: bool) -> String {
    let keys: Vec<String> = path.iter().map(|k| key_text(k)).collect();
    let inner = keys.join(".");
    if array {
        format!("[[{inner}]]")
    } else {
        format!("[{inner}]")
    }
}

/// A key as TOML writes it: bare if it can be.
fn key_text(k: &str) -> String {
    let bare = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        k.to_string()
    } else {
        Value::from(k).to_string().trim().to_string()
    }
}

/// The group's `count`, once the `[[repeat]]` table and its members are
/// found sound; errors go to `ctx`.
fn check_group(
    r: &Region,
    members: &[&Region],
    group: usize,
    text: &str,
    ctx: &mut Ctx,
) -> Option<i64> {
    let prefix = format!("repeat[{group}]");
    let head = Some(r.span.start..r.body);
    let mut ok = true;
    for (key, item) in r.table.iter() {
        let span = r.table.key(key).and_then(|k| k.span());
        let field = format!("{prefix}.{key}");
        if key == "count" || REPEATABLE.contains(&key) && item.is_array_of_tables() {
            continue;
        }
        let msg = if REPEATABLE.contains(&key) {
            format!("write each table to repeat as [[repeat.{key}]], after the [[repeat]]")
        } else {
            format!(
                "unknown field `{key}`: a [[repeat]] has `count` and tables {}",
                REPEATABLE.map(|t| format!("[[repeat.{t}]]")).join(", ")
            )
        };
        ctx.err(span, field, msg);
        ok = false;
    }
    for m in members {
        let field = format!("{prefix}.{}", m.path[1..].join("."));
        let span = Some(m.span.start..m.body);
        if !REPEATABLE.contains(&m.path[1].as_str()) {
            let msg = format!(
                "a [[repeat]] repeats only {} tables",
                REPEATABLE.map(|t| format!("`{t}`")).join(", ")
            );
            ctx.err(span, field, msg);
            ok = false;
        } else if m.path.len() == 2 && !m.array {
            let msg = format!("write [[repeat.{}]]: each copy adds one table", m.path[1]);
            ctx.err(span, field, msg);
            ok = false;
        }
    }
    let count = match r.table.get("count") {
        None => {
            let msg = "missing field `count`: how many copies to make (i = 0 .. count - 1)";
            ctx.err(head.clone(), prefix.clone(), msg);
            None
        }
        Some(c) => match c.as_integer() {
            Some(n) if (1..=MAX_COUNT).contains(&n) => Some(n),
            _ => {
                let span = c.span().or(head.clone());
                let msg = format!("must be an integer from 1 to {MAX_COUNT}");
                ctx.err(span, format!("{prefix}.count"), msg);
                None
            }
        },
    };
    if members.is_empty() {
        let msg = "nothing to repeat: write the tables to copy after the [[repeat]], \
                   as [[repeat.node]], [[repeat.link]], [[repeat.flow]]";
        ctx.err(head, prefix.clone(), msg);
        ok = false;
    }
    let bytes: usize = members.iter().map(|m| text[m.span.clone()].len()).sum();
    if let Some(n) = count {
        if bytes.saturating_mul(n as usize) > MAX_EXPANDED_BYTES {
            let msg = format!("{n} copies of these tables would be more than 64 MiB of text");
            ctx.err(
                r.table.get("count").and_then(Item::span),
                format!("{prefix}.count"),
                msg,
            );
            ok = false;
        }
    }
    count.filter(|_| ok)
}

/// A string of a member table to fill in for each copy.
struct Template {
    span: Range<usize>,
    value: String,
    field: String,
}

/// Appends `count` copies of the group's `members` to `exp`.
fn copy_group(
    exp: &mut Expansion,
    members: &[&Region],
    count: i64,
    group: usize,
    text: &str,
    ctx: &mut Ctx,
) {
    // The index of each member among the group's tables of its path
    // (`repeat[0].link[1]`), for field paths.
    let mut seen: Vec<&[String]> = Vec::new();
    let mut templates: Vec<Vec<Template>> = Vec::new();
    for m in members {
        let n = seen.iter().filter(|p| **p == m.path.as_slice()).count();
        seen.push(&m.path);
        let mut field = format!("repeat[{group}].{}", m.path[1..].join("."));
        if m.array {
            field.push_str(&format!("[{n}]"));
        }
        let mut strings = Vec::new();
        strings_of_table(m.table, &field, &mut strings);
        strings.retain(|t| t.span.start >= m.body && t.span.end <= m.span.end);
        strings.sort_by_key(|t| t.span.start);
        templates.push(strings);
    }
    // A string that cannot be filled in is reported once, not per copy.
    let mut failed: Vec<Vec<bool>> = templates.iter().map(|t| vec![false; t.len()]).collect();
    for i in 0..count {
        for (mk, m) in members.iter().enumerate() {
            let copy = Some(i);
            exp.end_line(m.span.start, copy);
            exp.push(&header(&m.path[1..], m.array), m.span.start, false, copy);
            let mut at = m.body;
            for (sk, t) in templates[mk].iter().enumerate() {
                if !t.value.contains(['{', '}']) {
                    continue;
                }
                exp.push(&text[at..t.span.start], at, true, copy);
                match fill(&t.value, i) {
                    Ok(s) => exp.push(Value::from(s).to_string().trim(), t.span.start, false, copy),
                    Err(e) if !failed[mk][sk] => {
                        failed[mk][sk] = true;
                        let msg = format!("{e}{}", copy_note(i, 0));
                        ctx.err(Some(t.span.clone()), &t.field, msg);
                    }
                    Err(_) => {}
                }
                at = t.span.end;
            }
            exp.push(&text[at..m.span.end], at, true, copy);
        }
    }
}

fn strings_of_table(t: &Table, field: &str, out: &mut Vec<Template>) {
    for (key, item) in t.iter() {
        let f = format!("{field}.{key}");
        match item {
            Item::Value(v) => strings_of_value(v, &f, out),
            // A dotted key's table (`tcp.cc = ...`) is written in this
            // table's text; a header's table is a region of its own.
            Item::Table(t) => strings_of_table(t, &f, out),
            _ => {}
        }
    }
}

fn strings_of_value(v: &Value, field: &str, out: &mut Vec<Template>) {
    match v {
        Value::String(s) => {
            if let Some(span) = s.span() {
                out.push(Template {
                    span,
                    value: s.value().clone(),
                    field: field.to_string(),
                });
            }
        }
        Value::Array(a) => {
            for (k, v) in a.iter().enumerate() {
                strings_of_value(v, &format!("{field}[{k}]"), out);
            }
        }
        Value::InlineTable(t) => {
            for (key, v) in t.iter() {
                strings_of_value(v, &format!("{field}.{key}"), out);
            }
        }
        _ => {}
    }
}

/// `template` with each `{expression}` replaced by its value at index
/// `i`; `{{` and `}}` stand for `{` and `}`.
pub(crate) fn fill(template: &str, i: i64) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(k) = rest.find(['{', '}']) {
        out.push_str(&rest[..k]);
        let brace = &rest[k..k + 1];
        let after = &rest[k + 1..];
        if after.starts_with(brace) {
            out.push_str(brace);
            rest = &after[1..];
            continue;
        }
        if brace == "}" {
            return Err(format!(
                "a lone `}}` in {template:?}: write `}}}}` for a brace"
            ));
        }
        let Some(end) = after.find('}') else {
            return Err(format!(
                "`{{` without its `}}` in {template:?}: write `{{{{` for a brace"
            ));
        };
        let expr = &after[..end];
        let v = Expr::new(expr, i)
            .eval()
            .map_err(|e| format!("{{{expr}}} in {template:?}: {e}"))?;
        out.push_str(&v.to_string());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Integer arithmetic on `i`: `+ - * / %`, parentheses, unary minus.
struct Expr<'a> {
    rest: &'a str,
    i: i64,
}

impl<'a> Expr<'a> {
    fn new(text: &'a str, i: i64) -> Self {
        Expr { rest: text, i }
    }

    fn eval(mut self) -> Result<i64, String> {
        let v = self.sum()?;
        self.skip_space();
        match self.rest.chars().next() {
            None => Ok(v),
            Some(c) => Err(format!("unexpected `{c}`")),
        }
    }

    fn skip_space(&mut self) {
        self.rest = self.rest.trim_start();
    }

    /// The next character, if it is one of `ops`, taken.
    fn op(&mut self, ops: &[char]) -> Option<char> {
        self.skip_space();
        let c = self.rest.chars().next().filter(|c| ops.contains(c))?;
        self.rest = &self.rest[1..];
        Some(c)
    }

    fn sum(&mut self) -> Result<i64, String> {
        let mut v = self.product()?;
        while let Some(op) = self.op(&['+', '-']) {
            let w = self.product()?;
            v = match op {
                '+' => v.checked_add(w),
                _ => v.checked_sub(w),
            }
            .ok_or_else(too_large)?;
        }
        Ok(v)
    }

    fn product(&mut self) -> Result<i64, String> {
        let mut v = self.factor()?;
        while let Some(op) = self.op(&['*', '/', '%']) {
            let w = self.factor()?;
            if op != '*' && w == 0 {
                return Err("division by zero".into());
            }
            v = match op {
                '*' => v.checked_mul(w),
                '/' => v.checked_div(w),
                _ => v.checked_rem(w),
            }
            .ok_or_else(too_large)?;
        }
        Ok(v)
    }

    fn factor(&mut self) -> Result<i64, String> {
        if self.op(&['-']).is_some() {
            return self.factor()?.checked_neg().ok_or_else(too_large);
        }
        if self.op(&['(']).is_some() {
            let v = self.sum()?;
            return match self.op(&[')']) {
                Some(_) => Ok(v),
                None => Err("a `(` without its `)`".into()),
            };
        }
        self.skip_space();
        let len = self
            .rest
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(self.rest.len());
        let (word, rest) = self.rest.split_at(len);
        self.rest = rest;
        match word {
            "" => Err(match self.rest.chars().next() {
                Some(c) => format!("unexpected `{c}`"),
                None => "an expression ends too soon".into(),
            }),
            "i" => Ok(self.i),
            w if w.bytes().all(|b| b.is_ascii_digit()) => w
                .parse()
                .map_err(|_| format!("{w} is too large (at most {})", i64::MAX)),
            w => Err(format!(
                "unknown name `{w}`: the copy's index is `i`, and numbers are integers"
            )),
        }
    }
}

fn too_large() -> String {
    "the result is too large for a 64-bit integer".into()
}
