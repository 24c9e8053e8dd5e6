//! `[[repeat]]`: tables written once and copied `count` times, with the
//! copy's index `i` filled into their strings (`name = "s{i}"`).
//!
//! A copy is the group's tables as written, their headers without
//! `repeat.` and their strings filled in: the text a generator would have
//! written, table for table and in the same order (copy 0's tables, then
//! copy 1's, ...), at the place of the `[[repeat]]`. That expanded text is
//! never built whole: parsed at once, 100,000 copies took over a gigabyte.
//! The written text without its groups is read first, then each copy from
//! a short text of its own, and the copies' tables are put in their place
//! ([`Expansion::read_copies`], [`Expansion::index`]). Offsets count as
//! though the copies followed the rest of the text, one after another; a
//! map back to the written text keeps every later error on the line that
//! caused it, and says which copy it was.

use std::ops::Range;

use serde::de::DeserializeOwned;
use toml_edit::{ImDocument, Item, Table, Value};

use super::error::{copy_note, Ctx};
use super::span;

/// Most copies one `[[repeat]]` makes: the most flows a scenario may have.
pub(crate) const MAX_COUNT: i64 = super::validate::MAX_FLOWS as i64;

/// Copies read on one core: below this, starting threads costs more
/// than it saves.
const READ_ALONE: usize = 4096;

/// Consecutive copies one reader takes at a time.
const RUN: usize = 1024;

/// A run's copies read, each with its group's index, and the failure
/// that ended it early, if one did.
type Run<T> = (Vec<(usize, T)>, Option<Box<CopyError>>);

/// Most bytes of text the copies may add up to: a guard against a `count`
/// mistyped by some digits, which would otherwise run out of memory after
/// minutes. A run takes about 25 bytes of memory per byte of the group's
/// tables (a million gateway users: 301 MB of tables, 7.4 GB), so this
/// allows runs of about 13 GB.
const MAX_EXPANDED_BYTES: usize = 512 << 20;

/// The tables a `[[repeat]]` may hold, and the order of [`Group::at`].
pub(crate) const REPEATABLE: [&str; 5] = ["node", "link", "flow", "agent", "trace"];

/// What expansion made of a text.
pub(crate) enum Outcome {
    /// No `[[repeat]]` (or TOML that does not parse, which the next step
    /// reports): read the text as written.
    Plain,
    Expanded(Expansion),
    /// Errors were reported to the context.
    Invalid,
}

/// The written text without its groups, the groups, and where each piece
/// was written.
pub(crate) struct Expansion {
    /// The text outside the groups, read first.
    pub(crate) text: String,
    /// In order of `out`; for `text`.
    segs: Vec<Seg>,
    groups: Vec<Group>,
    /// Where each copy's text starts, over all groups in order, and where
    /// the last ends: the first starts at the end of `text`.
    starts: Vec<usize>,
    /// Whether offsets in `text` map to the written text (`segs`); not
    /// after [`Expansion::rewrite_rest`].
    rest_placed: bool,
}

/// A `[[repeat]]` found sound.
struct Group {
    members: Vec<Member>,
    count: i64,
    /// For each of [`REPEATABLE`]: how many such tables `text` has before
    /// the group's place.
    at: [usize; 5],
    /// For each of [`REPEATABLE`]: how many such tables one copy makes.
    per_copy: [usize; 5],
    /// The index of the group's copy 0 in `starts`.
    first: usize,
}

/// A table of a group, as written.
struct Member {
    path: Vec<String>,
    array: bool,
    /// From the header's `[` to the next header.
    span: Range<usize>,
    /// Where the header's closing bracket ends.
    body: usize,
    /// Its strings, in order.
    templates: Vec<Template>,
}

/// A piece of a text that expansion made.
struct Seg {
    /// Where it starts in that text.
    out: usize,
    /// Where it was written.
    src: usize,
    /// Copied as written, so offsets inside it map one to one; otherwise
    /// (a rewritten header or string) the whole piece maps to `src`.
    verbatim: bool,
}

/// A text that expansion made, and where its pieces were written.
#[derive(Default)]
struct Made {
    text: String,
    segs: Vec<Seg>,
}

impl Made {
    fn push(&mut self, piece: &str, src: usize, verbatim: bool) {
        if piece.is_empty() {
            return;
        }
        self.segs.push(Seg {
            out: self.text.len(),
            src,
            verbatim,
        });
        self.text.push_str(piece);
    }

    /// Ends the text with a newline, so the next table's header starts a
    /// line of its own.
    fn end_line(&mut self, src: usize) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.push("\n", src, false);
        }
    }
}

/// A copy that could not be read: the error, and what places it.
pub(crate) struct CopyError {
    pub(crate) error: serde_path_to_error::Error<toml::de::Error>,
    /// The copy's text, where the error's range points.
    pub(crate) text: String,
    /// Where that text starts in the expansion's offsets.
    pub(crate) start: usize,
    group: usize,
    copy: i64,
}

impl Expansion {
    /// Replaces the text outside the groups by `text`: the same tables,
    /// some values changed (overrides). The copies now follow it, and are
    /// still placed in the written text; offsets in `text` no longer are.
    pub(crate) fn rewrite_rest(&mut self, text: String) {
        let (from, to) = (self.text.len(), text.len());
        for s in &mut self.starts {
            *s = *s - from + to;
        }
        self.text = text;
        self.segs.clear();
        self.rest_placed = false;
    }

    /// The offset in the written text (`written`) that offset `off` came
    /// from, if known, and the index of the copy it belongs to, if any.
    pub(crate) fn source_of(&self, written: &str, off: usize) -> (Option<usize>, Option<i64>) {
        if off < self.text.len() {
            return (self.rest_placed.then(|| source_in(&self.segs, off)), None);
        }
        // The copy whose text holds `off`, made again: errors are few.
        let k = self.starts.partition_point(|&s| s <= off).saturating_sub(1);
        let k = k.min(self.starts.len().saturating_sub(2));
        let g = self.groups.partition_point(|g| g.first <= k) - 1;
        let group = &self.groups[g];
        let i = (k - group.first) as i64;
        let made = filled_copy(group, written, i);
        (Some(source_in(&made.segs, off - self.starts[k])), Some(i))
    }

    /// Reads each copy of each group, in order, as a `T` (the copy's tables
    /// under their plain names: `node`, `link`, ...), with ranges in the
    /// expansion's offsets, and hands it to `each` with its group's index.
    /// Stops at the first copy that cannot be read.
    ///
    /// Past [`READ_ALONE`] copies they are read on every core, in runs of
    /// [`RUN`] consecutive copies, and handed over in order: each copy is
    /// read from its own text, so the result does not depend on who read
    /// it. Reading is most of loading a large group (100,000 copies: 2 of
    /// 3 seconds on one core).
    pub(crate) fn read_copies<T: DeserializeOwned + Send>(
        &self,
        written: &str,
        mut each: impl FnMut(usize, T),
    ) -> Result<(), Box<CopyError>> {
        let copies = self.starts.len().saturating_sub(1);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let readers = cores.min(copies.div_ceil(RUN));
        // A run's copies to `each`, then its failure, if any.
        let mut hand = |(read, failed): Run<T>| {
            read.into_iter().for_each(|(g, t)| each(g, t));
            failed.map_or(Ok(()), Err)
        };
        if copies <= READ_ALONE || readers < 2 {
            for from in (0..copies).step_by(RUN) {
                hand(self.read_run(written, from..copies.min(from + RUN), None))?;
            }
            return Ok(());
        }
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel();
            for _ in 0..readers {
                let (tx, next, stop) = (tx.clone(), &next, &stop);
                s.spawn(move || loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let from = k * RUN;
                    if from >= copies || stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let run = self.read_run(written, from..copies.min(from + RUN), Some(stop));
                    if tx.send((k, run)).is_err() {
                        return;
                    }
                });
            }
            drop(tx);
            // Runs that arrive early wait for those before them.
            let mut waiting = std::collections::BTreeMap::new();
            let mut due = 0;
            for (k, run) in rx {
                waiting.insert(k, run);
                while let Some(run) = waiting.remove(&due) {
                    if let Err(e) = hand(run) {
                        stop.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                    due += 1;
                }
            }
            Ok(())
        })
    }

    /// Reads copies `run` (counted over all groups in order), up to the
    /// first that cannot be read, or until `stop` is set (a copy before
    /// the run could not be read; what this run read is then not used).
    fn read_run<T: DeserializeOwned>(
        &self,
        written: &str,
        run: Range<usize>,
        stop: Option<&std::sync::atomic::AtomicBool>,
    ) -> Run<T> {
        let mut out = Vec::with_capacity(run.len());
        let mut g = self.groups.partition_point(|g| g.first <= run.start) - 1;
        for k in run {
            if stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
                break;
            }
            while g + 1 < self.groups.len() && self.groups[g + 1].first <= k {
                g += 1;
            }
            let group = &self.groups[g];
            let i = (k - group.first) as i64;
            let start = self.starts[k];
            let made = filled_copy(group, written, i);
            let read = span::with_base(start, || {
                serde_path_to_error::deserialize(toml::Deserializer::new(&made.text))
            });
            match read {
                Ok(t) => out.push((g, t)),
                Err(error) => {
                    let e = CopyError {
                        error,
                        text: made.text,
                        start,
                        group: g,
                        copy: i,
                    };
                    return (out, Some(Box::new(e)));
                }
            }
        }
        (out, None)
    }

    /// For each group in order: where its copies go among each of
    /// [`REPEATABLE`]'s tables read from `text`.
    pub(crate) fn places(&self) -> impl Iterator<Item = [usize; 5]> + '_ {
        self.groups.iter().map(|g| g.at)
    }

    /// The index, once the copies are in place, of the `n`th table of
    /// [`REPEATABLE`]`[kind]` read from `text`.
    pub(crate) fn index(&self, kind: usize, n: usize) -> usize {
        let before: usize = self
            .groups
            .iter()
            .filter(|g| g.at[kind] <= n)
            .map(|g| g.count as usize * g.per_copy[kind])
            .sum();
        n + before
    }

    /// The index, once the copies are in place, of the `n`th table of
    /// [`REPEATABLE`]`[kind]` in copy `e.copy` of group `e.group`.
    pub(crate) fn copy_index(&self, e: &CopyError, kind: usize, n: usize) -> usize {
        let earlier: usize = self.groups[..e.group]
            .iter()
            .map(|g| g.count as usize * g.per_copy[kind])
            .sum();
        let g = &self.groups[e.group];
        g.at[kind] + earlier + e.copy as usize * g.per_copy[kind] + n
    }
}

/// The offset in the written text that byte `off` of a made text came
/// from, given the made text's pieces.
fn source_in(segs: &[Seg], off: usize) -> usize {
    let k = segs.partition_point(|s| s.out <= off);
    let Some(s) = k.checked_sub(1).map(|k| &segs[k]) else {
        return off;
    };
    if s.verbatim {
        s.src + (off - s.out)
    } else {
        s.src
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
    let mut rest = Made::default();
    let first = regions.first().map_or(text.len(), |r| r.span.start);
    rest.push(&text[..first], 0, true);
    let mut groups = Vec::new();
    // How many tables of each of REPEATABLE `rest` has so far.
    let mut seen = [0; 5];
    let mut group = 0;
    let mut k = 0;
    while k < regions.len() {
        let r = &regions[k];
        k += 1;
        if r.path[0] != "repeat" {
            rest.end_line(r.span.start);
            rest.push(&text[r.span.clone()], r.span.start, true);
            if let (true, [name]) = (r.array, r.path.as_slice()) {
                if let Some(kind) = REPEATABLE.iter().position(|t| t == name) {
                    seen[kind] += 1;
                }
            }
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
            groups.push(Group {
                members: group_members(&members, group),
                count,
                at: seen,
                per_copy: REPEATABLE.map(|t| {
                    let own = |m: &&&Region| m.array && m.path.len() == 2 && m.path[1] == t;
                    members.iter().filter(own).count()
                }),
                first: 0,
            });
        }
        group += 1;
    }
    if ctx.errors.len() > before {
        return Outcome::Invalid;
    }
    let Some(starts) = starts(&mut groups, rest.text.len(), text, ctx) else {
        return Outcome::Invalid;
    };
    Outcome::Expanded(Expansion {
        text: rest.text,
        segs: rest.segs,
        groups,
        starts,
        rest_placed: true,
    })
}

/// Where each copy's text starts (the first at `from`), and where the last
/// ends; fills in each group's `first`. A string that cannot be filled in
/// is reported to `ctx` once, at the first copy it fails in, and gives
/// `None`.
fn starts(groups: &mut [Group], from: usize, text: &str, ctx: &mut Ctx) -> Option<Vec<usize>> {
    let mut starts = vec![from];
    let mut ok = true;
    for g in groups.iter_mut() {
        g.first = starts.len() - 1;
        let mut failed: Vec<Vec<bool>> = g
            .members
            .iter()
            .map(|m| vec![false; m.templates.len()])
            .collect();
        for i in 0..g.count {
            let made = copy_text(g, text, i, &mut |mk, sk, e| {
                if !failed[mk][sk] {
                    failed[mk][sk] = true;
                    let t = &g.members[mk].templates[sk];
                    let msg = format!("{e}{}", copy_note(i, 0));
                    ctx.err(Some(t.span.clone()), &t.field, msg);
                    ok = false;
                }
            });
            starts.push(starts[starts.len() - 1] + made.text.len());
        }
    }
    ok.then_some(starts)
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
            let msg = format!("{n} copies of these tables would be more than 512 MiB of text");
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

/// The group's tables as `Member`s, with the strings to fill in.
fn group_members(regions: &[&Region], group: usize) -> Vec<Member> {
    // The index of each member among the group's tables of its path
    // (`repeat[0].link[1]`), for field paths.
    let mut seen: Vec<&[String]> = Vec::new();
    let mut out = Vec::new();
    for m in regions {
        let n = seen.iter().filter(|p| **p == m.path.as_slice()).count();
        seen.push(&m.path);
        let mut field = format!("repeat[{group}].{}", m.path[1..].join("."));
        if m.array {
            field.push_str(&format!("[{n}]"));
        }
        let mut templates = Vec::new();
        strings_of_table(m.table, &field, &mut templates);
        templates.retain(|t| {
            t.span.start >= m.body && t.span.end <= m.span.end && t.value.contains(['{', '}'])
        });
        templates.sort_by_key(|t| t.span.start);
        out.push(Member {
            path: m.path.clone(),
            array: m.array,
            span: m.span.clone(),
            body: m.body,
            templates,
        });
    }
    out
}

/// The text of copy `i` of `group`, made from the written `text`. A
/// string that cannot be filled in is left out and handed to `failed`
/// with its member's and its own index.
fn copy_text(
    group: &Group,
    text: &str,
    i: i64,
    failed: &mut dyn FnMut(usize, usize, String),
) -> Made {
    let mut made = Made::default();
    for (mk, m) in group.members.iter().enumerate() {
        made.end_line(m.span.start);
        made.push(&header(&m.path[1..], m.array), m.span.start, false);
        let mut at = m.body;
        for (sk, t) in m.templates.iter().enumerate() {
            made.push(&text[at..t.span.start], at, true);
            match fill(&t.value, i) {
                Ok(s) => made.push(Value::from(s).to_string().trim(), t.span.start, false),
                Err(e) => failed(mk, sk, e),
            }
            at = t.span.end;
        }
        made.push(&text[at..m.span.end], at, true);
    }
    made
}

/// A copy's text where every string fills in (as `expand` made sure).
fn filled_copy(group: &Group, text: &str, i: i64) -> Made {
    copy_text(group, text, i, &mut |_, _, _| {})
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
