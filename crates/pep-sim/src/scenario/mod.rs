//! Scenario files: TOML in, a validated [`Scenario`] out.
//!
//! The format is documented in `docs/scenario-format.md`, and
//! `scenarios/default.toml` is its annotated example. Loading runs in four
//! steps:
//!
//! 0. **repeat** (`repeat.rs`): `[[repeat]]` groups copied into plain
//!    tables, the text's positions kept for errors;
//! 1. **raw** (`raw.rs`): serde structs that mirror the file, denying unknown
//!    fields and parsing units, with source spans kept for later checks;
//! 2. **validate** (`validate.rs`, `links.rs`, `tagged.rs`): names resolved to
//!    indices, defaults layered, `count` expanded, every value checked;
//! 3. **routes** (`routes.rs`): static next hops by hop count.
//!
//! Errors name the file, the field path and the position
//! (`scenarios/x.toml:14:8: link[2].rate: ...`) and are collected, so one
//! run reports every independent problem. Warnings, placed the same way,
//! name settings that are valid but do nothing (`warn.rs`); a scenario
//! that loads carries them in [`Scenario::warnings`].
//!
//! Sweeps change the document, not the model: [`parse_document`], then
//! [`apply_override`] for each varied parameter, then
//! [`Scenario::from_table`].

mod agents;
mod assemble;
mod error;
mod links;
mod model;
mod overrides;
mod profile;
mod raw;
mod read;
mod repeat;
mod service;
mod span;
mod tagged;
mod trace;
mod validate;
mod warn;

#[cfg(test)]
mod cc_tests;
#[cfg(test)]
mod cut_tests;
#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod limits_tests;
#[cfg(test)]
mod netmodel_tests;
#[cfg(test)]
mod repeat_tests;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod warn_tests;

use std::path::Path;

pub(crate) use agents::private_flows;
pub use error::{field_at, tidy_number, Diagnostic, Pos, ScenarioError};
pub use model::{
    AckSpec, AgentSpec, AppReadSpec, CcKind, ClassifySpec, CutSpec, Dir, FlowSpec, LinkDirSpec,
    LinkSpec, LossSpec, MediumSpec, NodeKind, NodeSpec, OutputSpec, Profile, QueueSpec, ReadWhen,
    RecoveryKind, RedSpec, Scenario, Series, SinkSpec, SourceSpec, TcpSpec, TraceSpec, Warnings,
};
pub use overrides::{apply_override, parse_override};
pub use pep_model::route::Routes;
pub use read::{read_text, MAX_TEXT_BYTES};
pub use validate::{MAX_FLOWS, MAX_MSS, MAX_OUTPUT_ROWS, MAX_WINDOW, MIN_CUT_DELAY, MIN_RTO_BOUND};

use error::Ctx;

/// The text of `scenarios/default.toml`, built in.
pub const DEFAULT_SCENARIO_TOML: &str = include_str!("../../../../scenarios/default.toml");

impl Scenario {
    /// Parses and validates `text`; `origin` names it in errors (a path).
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        check(text, origin, true)
    }

    /// Reads and validates the file at `path`, which must be a regular
    /// file of at most 16 MiB (see [`read_text`]).
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = match read::read_bounded(path) {
            Ok(t) => t,
            Err(read::ReadError::Io(source)) => {
                return Err(ScenarioError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
            Err(e) => {
                let origin = path.display().to_string();
                let full = e.message(path, "scenario file");
                let msg = full.strip_prefix(&format!("{origin}: ")).unwrap_or(&full);
                let mut ctx = Ctx::new(&origin, None);
                ctx.err(None, "", msg);
                return ctx.into_result(None);
            }
        };
        Scenario::from_toml_str(&text, &path.display().to_string())
    }

    /// Validates a document held in memory (typically one changed by
    /// [`apply_override`]). Errors carry field paths but no line numbers.
    pub fn from_table(doc: toml::Table, origin: &str) -> Result<Scenario, ScenarioError> {
        // One code path for both: the table goes back to text, and the
        // spans into that text are not shown.
        match toml::to_string(&doc) {
            Ok(text) => check(&text, origin, false),
            Err(e) => {
                let mut ctx = Ctx::new(origin, None);
                ctx.err(None, "", format!("cannot encode the document: {e}"));
                ctx.into_result(None)
            }
        }
    }

    /// [`Scenario::from_table`] for a value that must be a table.
    pub fn from_toml_value(value: toml::Value, origin: &str) -> Result<Scenario, ScenarioError> {
        match value {
            toml::Value::Table(t) => Scenario::from_table(t, origin),
            other => {
                let mut ctx = Ctx::new(origin, None);
                let msg = format!("expected a table, found {}", other.type_str());
                ctx.err(None, "", msg);
                ctx.into_result(None)
            }
        }
    }

    /// Parses `text`, applies `overrides` in order, and validates. Errors
    /// in fields the overrides did not touch keep their line numbers.
    pub fn from_toml_str_with(
        text: &str,
        origin: &str,
        overrides: &[(String, toml::Value)],
    ) -> Result<Scenario, ScenarioError> {
        if overrides.is_empty() {
            return Scenario::from_toml_str(text, origin);
        }
        if let Some(result) = overridden_outside_groups(text, origin, overrides) {
            return result;
        }
        let mut doc = parse_document(text, origin)?;
        for (path, value) in overrides {
            apply_override(&mut doc, path, value.clone())?;
        }
        placed_in(Scenario::from_table(doc, origin), text, origin)
    }

    /// [`Scenario::from_toml_str_with`] read the fast way, or `None`: when
    /// `text` has `[[repeat]]` groups and every override reaches, and
    /// applies to, a table written outside them, the copies are read from
    /// the text as written and keep their lines in errors. `None` (no
    /// groups, an index, a path that does not apply) leaves the caller to
    /// change the whole document, which reports what is wrong.
    pub fn from_written_with(
        text: &str,
        origin: &str,
        overrides: &[(String, toml::Value)],
    ) -> Option<Result<Scenario, ScenarioError>> {
        overridden_outside_groups(text, origin, overrides)
    }

    /// The built-in scenario (`scenarios/default.toml`): one bulk NewReno
    /// flow over a 10 Mbit/s GEO-like path.
    pub fn builtin_default() -> Scenario {
        Scenario::from_toml_str(DEFAULT_SCENARIO_TOML, "scenarios/default.toml")
            .expect("scenarios/default.toml is valid (checked by the tests)")
    }
}

/// Parses TOML text into a document for [`apply_override`], reporting
/// syntax errors with their position.
/// `[[repeat]]` groups are expanded, so the document has the tables they
/// make, and paths such as `flow[f3]` reach them.
pub fn parse_document(text: &str, origin: &str) -> Result<toml::Table, ScenarioError> {
    let exp = expand(text, origin, true)?;
    let (read, mut ctx) = reading(text, exp.as_ref(), origin, true);
    match assemble::read::<toml::Table>(read, text, exp.as_ref()) {
        Ok(t) => ctx.into_result(Some(t)),
        Err(e) => {
            e.report(&mut ctx, exp.as_ref());
            ctx.into_result(None)
        }
    }
}

/// Whether `name` can be the default output directory `out/<name>`: one
/// plain path component (no `/`, `\` or control characters, not `.` or
/// `..`). Scenario and experiment names must be.
pub fn is_plain_name(name: &str) -> bool {
    // Control characters: a NUL cannot be in a path, a newline makes a
    // directory no shell listing shows as it is.
    !name.contains(['/', '\\'])
        && !name.chars().any(char::is_control)
        && name != "."
        && name != ".."
}

/// Whether `text` is TOML with a top-level `has` key and no `lacks` key:
/// how a scenario (`[scenario]`) and an experiment (`[experiment]`) tell
/// each other apart when one is handed to the other's command.
pub fn has_table_without(text: &str, has: &str, lacks: &str) -> bool {
    text.parse::<toml::Table>()
        .is_ok_and(|t| t.contains_key(has) && !t.contains_key(lacks))
}

/// [`Scenario::from_toml_str_with`] for a file with `[[repeat]]`s whose
/// overrides all reach tables written outside them (`scenario.duration`,
/// `defaults.tcp.cc`, `link[geo].rate`): they are applied to those tables
/// alone, and the copies are read from the file as written, one at a
/// time. Changing the whole document instead means writing it out as
/// one text, copies and all, and reading that: 16 s and 1.4 GB for
/// 100,000 users' `--duration`. `None` when this cannot be done (no
/// groups, an index or a name among the copies, or anything that fails):
/// the whole document is changed then, and reports what is wrong.
fn overridden_outside_groups(
    text: &str,
    origin: &str,
    overrides: &[(String, toml::Value)],
) -> Option<Result<Scenario, ScenarioError>> {
    if overrides
        .iter()
        .any(|(p, _)| overrides::selects_by_index(p))
    {
        return None;
    }
    let mut exp = expand(text, origin, false).ok()??;
    let mut rest: toml::Table = toml::from_str(&exp.text).ok()?;
    for (path, value) in overrides {
        apply_override(&mut rest, path, value.clone()).ok()?;
    }
    // Changing values adds no table to an array: the copies' places
    // among the written tables stay as they were. The copies are as
    // written, so their problems keep their lines and are counted per
    // place, not listed once per copy.
    exp.rewrite_rest(toml::to_string(&rest).ok()?);
    Some(placed_in(
        check_expanded(text, Some(&exp), origin, true),
        text,
        origin,
    ))
}

/// A scenario checked without positions (`text` changed by overrides),
/// its errors and warnings given the positions the same ones have in
/// `text` as written, where they have one there.
fn placed_in(
    checked: Result<Scenario, ScenarioError>,
    text: &str,
    origin: &str,
) -> Result<Scenario, ScenarioError> {
    let mut sc = checked.map_err(|e| locate(e, text, origin))?;
    if !sc.warnings.is_empty() {
        if let Ok(orig) = Scenario::from_toml_str(text, origin) {
            place(&mut sc.warnings.0, &orig.warnings);
        }
    }
    Ok(sc)
}

fn check(text: &str, origin: &str, positions: bool) -> Result<Scenario, ScenarioError> {
    let exp = expand(text, origin, positions)?;
    check_expanded(text, exp.as_ref(), origin, positions)
}

/// Checks `text`, whose `[[repeat]]`s (if any) `exp` expanded.
fn check_expanded(
    text: &str,
    exp: Option<&repeat::Expansion>,
    origin: &str,
    positions: bool,
) -> Result<Scenario, ScenarioError> {
    let (read, mut ctx) = reading(text, exp, origin, positions);
    let doc: raw::Doc = match assemble::read(read, text, exp) {
        Ok(d) => d,
        Err(e) => {
            if has_table_without(read, "experiment", "scenario") {
                let msg = "this is an experiment ([experiment], no [scenario]): \
                           `pep sim sweep` runs it";
                ctx.err(None, "", msg.to_string());
            } else {
                e.report(&mut ctx, exp);
            }
            return ctx.into_result(None);
        }
    };
    let scenario = validate::validate(&doc, &mut ctx);
    let mut scenario = scenario.filter(|sc| links::check_on_paths(&doc, &mut ctx, sc));
    if let Some(sc) = &mut scenario {
        warn::warn(&doc, &mut ctx, sc);
        sc.warnings = Warnings(ctx.take_warnings());
    }
    ctx.into_result(scenario)
}

/// `text` with its `[[repeat]]` groups expanded, if it has any.
fn expand(
    text: &str,
    origin: &str,
    positions: bool,
) -> Result<Option<repeat::Expansion>, ScenarioError> {
    let mut ctx = Ctx::new(origin, positions.then_some(text));
    match repeat::expand(text, &mut ctx) {
        repeat::Outcome::Plain => Ok(None),
        repeat::Outcome::Expanded(exp) => Ok(Some(exp)),
        repeat::Outcome::Invalid => ctx.into_result(None),
    }
}

/// The text to read (`text`, or its expansion) and a context that places
/// errors in `text`.
fn reading<'a>(
    text: &'a str,
    exp: Option<&'a repeat::Expansion>,
    origin: &str,
    positions: bool,
) -> (&'a str, Ctx<'a>) {
    match exp {
        Some(exp) => (&exp.text, Ctx::expanded(origin, text, exp, positions)),
        None => (text, Ctx::new(origin, positions.then_some(text))),
    }
}

/// Gives position-less diagnostics the position the same diagnostic has in
/// the original text, where it has one there.
fn locate(err: ScenarioError, text: &str, origin: &str) -> ScenarioError {
    let ScenarioError::Invalid(mut diags) = err else {
        return err;
    };
    if let Err(orig) = Scenario::from_toml_str(text, origin) {
        place(&mut diags, orig.diagnostics());
    }
    ScenarioError::Invalid(diags)
}

/// Gives each of `diags` without a position that of the same diagnostic
/// (field and message) in `orig`, if it has one there.
fn place(diags: &mut [Diagnostic], orig: &[Diagnostic]) {
    for d in diags.iter_mut().filter(|d| d.pos.is_none()) {
        let same = orig.iter().find(|o| o.same_problem(d));
        d.pos = same.and_then(|o| o.pos);
    }
}
