//! Experiment files: a base scenario, the parameters to vary, seeds, the
//! measures to keep and the plots to draw. The format is documented in
//! docs/experiments.md.
//!
//! A point is a list of scenario overrides (`pep_sim::scenario::apply_override`
//! paths); a run is a point and a seed. Points come from `[vary]` (a grid,
//! last key fastest) times `[[point]]` (an explicit list), in that order.

use std::cell::OnceCell;
use std::fmt;
use std::path::{Path, PathBuf};

use pep_sim::scenario::{
    self, field_at, has_table_without, tidy_number, Diagnostic, Dir, Scenario,
};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use toml::Value;
use toml_edit::{ImDocument, Item};

use crate::measure::Measure;
use crate::place;
use crate::plotspec::{self, PlotSpec, RawPlot};

/// An `over_time` plot's `select` is `"*"` or names a flow (goodput, cwnd)
/// or a link direction (links, queues) of the scenario, as the CSV's rows do: checked
/// on the first point, before anything runs.
fn check_selects(errs: &Errs, plots: &[PlotSpec], sc: &Scenario) -> Result<(), ExpError> {
    for (i, p) in plots.iter().enumerate() {
        let plotspec::PlotKind::OverTime {
            csv,
            select: Some(sel),
            ..
        } = &p.kind
        else {
            continue;
        };
        if sel == "*" {
            // The mean over all rows.
            continue;
        }
        let names: Vec<String> = if csv == "goodput" || csv == "cwnd" {
            sc.flows.iter().map(|f| f.name.clone()).collect()
        } else {
            sc.link_directions()
        };
        if !names.contains(sel) {
            let shown: Vec<&str> = names.iter().map(String::as_str).take(12).collect();
            let msg = format!(
                "{csv}.csv has no rows for {sel:?}; it has {} (on the first point)",
                shown.join(", ")
            );
            return Err(errs.at(sel, format!("plot[{i}].select"), msg));
        }
    }
    Ok(())
}

/// Two points that resolve to the same scenario (`[0, 0.0]`, `"80000B"`
/// and `"80KB"`, a `[[point]]` given twice) would run it twice and draw it
/// as two: refused, naming both. Scenarios are compared by a hash of their
/// full description, and equal hashes by value.
fn same_scenarios(errs: &Errs, exp: &Experiment, points: &[Resolved]) -> Result<(), ExpError> {
    use std::hash::{DefaultHasher, Hasher};
    struct Hashing(DefaultHasher);
    impl fmt::Write for Hashing {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0.write(s.as_bytes());
            Ok(())
        }
    }
    let mut seen: std::collections::HashMap<u64, Vec<usize>> = Default::default();
    for (i, r) in points.iter().enumerate() {
        let mut h = Hashing(DefaultHasher::new());
        let _ = fmt::write(&mut h, format_args!("{:?}", r.scenario));
        let same = seen.entry(h.0.finish()).or_default();
        if let Some(&j) = same.iter().find(|&&j| points[j].scenario == r.scenario) {
            let msg = format!(
                "points {} ({}) and {} ({}) are the same scenario: each would run twice",
                points[j].point.id,
                exp.describe(&points[j].point),
                r.point.id,
                exp.describe(&r.point)
            );
            // At what makes the second one: the first value in which they
            // differ, or its [[point]] table when none does (given twice).
            let (first, second) = (&points[j].point.values, &r.point.values);
            let differs = (0..first.len()).find(|&k| first[k] != second[k]);
            let key = differs.map(|k| exp.params[k].as_str());
            let place = errs.point_path(i, points.len(), key);
            return Err(errs.placed(&place, "", "points", msg));
        }
        same.push(i);
    }
    Ok(())
}

/// Most points, and most runs (points x seeds), in one experiment: every
/// point's scenario is resolved and checked, and a sweep plans every run,
/// before the first starts (about 13 KB a point, 1 KB a run).
pub const MAX_RUNS: usize = 100_000;

/// A problem in an experiment file: `file:line: field: message`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ExpError {
    pub origin: String,
    /// 1-based line, when the problem can be placed.
    pub line: Option<usize>,
    pub field: String,
    pub message: String,
    /// The file's other problems, found in the same pass: each is
    /// displayed on a line of its own after this one.
    pub also: Vec<ExpError>,
}

impl ExpError {
    /// The first of `found` carrying the others, or `None` for none.
    fn all(mut found: Vec<ExpError>) -> Option<ExpError> {
        if found.is_empty() {
            return None;
        }
        let mut first = found.remove(0);
        first.also.extend(found);
        Some(first)
    }
}

impl fmt::Display for ExpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        write!(f, ": {}", self.message)?;
        for e in &self.also {
            write!(f, "\n{e}")?;
        }
        Ok(())
    }
}

/// Builds [`ExpError`]s for one file, placing them on the line that writes
/// what they are about.
pub(crate) struct Errs<'a> {
    origin: &'a str,
    text: &'a str,
    /// `text` with its spans: parsed for the first error placed, so a good
    /// file is parsed once.
    doc: OnceCell<Option<ImDocument<&'a str>>>,
}

impl<'a> Errs<'a> {
    pub fn new(origin: &'a str, text: &'a str) -> Errs<'a> {
        Errs {
            origin,
            text,
            doc: OnceCell::new(),
        }
    }

    /// An error about `field`, placed on the line of the key, `[[table]]`
    /// or list element it names when it is a path into the file
    /// (`plot[1].y`, `vary."link[0].rate"[2]`, `point[3]`), else on the
    /// first line containing `needle`.
    pub fn at(&self, needle: &str, field: impl Into<String>, msg: impl Into<String>) -> ExpError {
        let field = field.into();
        let line = self.line(&field, needle);
        self.error(line, field, msg)
    }

    /// An error about `field`, placed as [`Errs::at`] places the path
    /// `place`: for a field shown otherwise (`point p003`, `points`).
    pub fn placed(
        &self,
        place: &str,
        needle: &str,
        field: impl Into<String>,
        msg: impl Into<String>,
    ) -> ExpError {
        self.error(self.line(place, needle), field.into(), msg)
    }

    /// Where point `n` of `total` takes `key` from (with no key, the point
    /// itself): its `[vary]` key, else its `[[point]]` table's key, else
    /// the table; a path for [`Errs::placed`], empty when none is written.
    pub fn point_path(&self, n: usize, total: usize, key: Option<&str>) -> String {
        let tables = match self.doc().and_then(|d| d.get("point")) {
            Some(Item::ArrayOfTables(a)) => a.len(),
            Some(Item::Value(toml_edit::Value::Array(a))) => a.len(),
            _ => 0,
        };
        // Points are each [[point]] table times the [vary] grid, in order.
        let table = (tables > 0).then(|| format!("point[{}]", n / (total / tables).max(1)));
        let with_key = |prefix: &str| key.map(|k| format!("{prefix}.{k:?}"));
        [with_key("vary"), table.as_deref().and_then(with_key), table]
            .into_iter()
            .flatten()
            .find(|p| self.span(p).is_some())
            .unwrap_or_default()
    }

    fn error(&self, line: Option<usize>, field: String, msg: impl Into<String>) -> ExpError {
        ExpError {
            origin: self.origin.to_string(),
            line,
            field,
            message: msg.into(),
            also: Vec::new(),
        }
    }

    /// The 1-based line of `path`, else of the first line containing
    /// `needle` (for the paths not written in the file).
    fn line(&self, path: &str, needle: &str) -> Option<usize> {
        match self.span(path) {
            Some(s) => Some(self.text[..s.start].matches('\n').count() + 1),
            None => (!needle.is_empty())
                .then(|| self.text.lines().position(|l| l.contains(needle)))
                .flatten()
                .map(|i| i + 1),
        }
    }

    fn span(&self, path: &str) -> Option<std::ops::Range<usize>> {
        place::span(self.doc()?, path)
    }

    fn doc(&self) -> Option<&ImDocument<&'a str>> {
        self.doc
            .get_or_init(|| ImDocument::parse(self.text).ok())
            .as_ref()
    }
}

/// `(path, value)` pairs in the order the file writes them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ordered(pub Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table of \"override.path\" = value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut v = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    v.push((k, map.next_value::<Value>()?));
                }
                Ok(Ordered(v))
            }
        }
        d.deserialize_map(V)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    experiment: RawHeader,
    set: Option<Ordered>,
    vary: Option<Ordered>,
    #[serde(default, rename = "point")]
    points: Vec<Ordered>,
    short: Option<RawShort>,
    #[serde(default, rename = "plot")]
    plots: Vec<RawPlot>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeader {
    name: String,
    description: Option<String>,
    base: String,
    seeds: Option<Value>,
    measures: Vec<String>,
    outputs: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawShort {
    seeds: Option<Value>,
    set: Option<Ordered>,
}

/// One point: a value (or nothing: the base's) for each parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// `p000`, `p001`, ... in point order.
    pub id: String,
    /// Aligned with [`Experiment::params`].
    pub values: Vec<Option<Value>>,
}

/// Which version of the experiment to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// As written.
    #[default]
    Full,
    /// With `[short]` applied (what `pep reproduce` runs by default).
    Short,
}

/// A parsed, checked experiment.
#[derive(Clone, Debug)]
pub struct Experiment {
    pub name: String,
    pub description: String,
    /// The experiment file, as given.
    pub origin: String,
    /// Its text (copied next to the results).
    pub text: String,
    pub base_path: PathBuf,
    pub base_text: String,
    pub set: Vec<(String, Value)>,
    /// Varied override paths: `[vary]` keys in file order, then those of
    /// `[[point]]` tables in first appearance.
    pub params: Vec<String>,
    pub points: Vec<Point>,
    pub seeds: Vec<u64>,
    pub measures: Vec<Measure>,
    pub plots: Vec<PlotSpec>,
    pub short_seeds: Option<Vec<u64>>,
    pub short_set: Vec<(String, Value)>,
    /// Keep each point's CSV series and summary for its first seed
    /// (`points/<id>/`); forced on by `over_time` plots.
    pub outputs: bool,
    /// The points' scenario warnings, full and short mode (empty when the
    /// base was not read): see [`Experiment::warnings`].
    warnings: Vec<ExpWarning>,
    short_warnings: Vec<ExpWarning>,
    /// The points [`Experiment::load`] resolved, for the first
    /// [`Experiment::resolve`] of the same ones.
    resolved: Resolutions,
}

/// Points resolved once and kept for one later [`Experiment::resolve`]
/// that asks for the same: reading a scenario of 100,000 users takes
/// seconds, and a sweep would otherwise read each point twice before
/// running it. Each entry is keyed by what the points are made of, so a
/// changed experiment resolves afresh; a clone starts empty.
#[derive(Default)]
struct Resolutions(std::sync::Mutex<Vec<(u64, Vec<Resolved>)>>);

impl Resolutions {
    fn keep(&self, key: u64, points: Vec<Resolved>) {
        if let Ok(mut kept) = self.0.lock() {
            kept.push((key, points));
        }
    }

    /// The points kept under `key`, taken out, and the others dropped (a
    /// sweep runs one mode).
    fn take(&self, key: u64) -> Option<Vec<Resolved>> {
        let mut kept = self.0.lock().ok()?;
        let i = kept.iter().position(|(k, _)| *k == key)?;
        let points = kept.swap_remove(i).1;
        kept.clear();
        Some(points)
    }
}

impl Clone for Resolutions {
    fn clone(&self) -> Self {
        Resolutions::default()
    }
}

impl fmt::Debug for Resolutions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Resolutions")
    }
}

/// A scenario warning (a setting that loads but does nothing) of an
/// experiment's points, once for all the points that have it. Displays
/// on one line as `<diagnostic> (in 12 of 40 points of exp.toml, first
/// p003: link[0].rate = 10Mbps)`.
#[derive(Clone, Debug, PartialEq)]
pub struct ExpWarning {
    /// As the first point that has it got it: at its line in the base
    /// file when the base alone warns the same, else at the merged
    /// document (`base.toml + overrides`), which has no lines.
    pub diagnostic: Diagnostic,
    /// The experiment file.
    pub experiment: String,
    /// The first point that has it: its id and [`Experiment::describe`],
    /// empty when the point sets nothing.
    pub point: String,
    pub point_values: String,
    /// How many points have it, of how many.
    pub points: usize,
    pub of: usize,
    /// [`Mode::Short`] when found with `[short]` applied.
    pub mode: Mode,
}

impl fmt::Display for ExpWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (exp, id) = (&self.experiment, &self.point);
        // The values, when the point has any: a long list cut short, so
        // the warning stays one readable line.
        let values = match self.point_values.as_str() {
            "" => String::new(),
            v if v.chars().count() > 100 => {
                format!(": {}...", v.chars().take(97).collect::<String>())
            }
            v => format!(": {v}"),
        };
        let short = if self.mode == Mode::Short {
            "with [short], "
        } else {
            ""
        };
        write!(f, "{} ({short}", self.diagnostic)?;
        match (self.points, self.of) {
            (n, of) if n == of && of > 1 => write!(f, "all {of} points of {exp})"),
            (1, _) => write!(f, "point {id} of {exp}{values})"),
            (n, of) => write!(f, "in {n} of {of} points of {exp}, first {id}{values})"),
        }
    }
}

/// A point made concrete: what its scenario is read from and its
/// validated model.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub point: Point,
    pub source: Source,
    pub scenario: Scenario,
}

/// What a point's scenario is read from (seed not yet set).
#[derive(Clone, Debug)]
pub enum Source {
    /// Base + `[set]` (+ `[short].set`) + the point's values, in one
    /// document.
    Document(toml::Table),
    /// The base file as written, `[[repeat]]` groups and all, and those
    /// overrides in order: every one reaches a table written outside the
    /// groups. A task then carries the file's few kilobytes, not every
    /// copy (tens of megabytes for 100,000 users), and reads it as fast as
    /// `pep sim run` does.
    Written(Vec<(String, Value)>),
}

impl Experiment {
    /// Reads an experiment file and the base scenario it names.
    pub fn load(path: &Path) -> Result<Experiment, ExpError> {
        let origin = path.display().to_string();
        // The error names the path; `origin` says it once.
        let text = scenario::read_text(path, "experiment file").map_err(|m| ExpError {
            origin: origin.clone(),
            line: None,
            field: String::new(),
            message: m.strip_prefix(&format!("{origin}: ")).unwrap_or(&m).into(),
            also: Vec::new(),
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Experiment::parse(&text, &origin, Some(dir))
    }

    /// Parses `text`; `origin` names it in errors. With `dir`, `base` is
    /// read relative to it and every point is checked; without, the base is
    /// not read (for re-plotting a finished sweep from its copy).
    pub fn parse(text: &str, origin: &str, dir: Option<&Path>) -> Result<Experiment, ExpError> {
        let errs = Errs::new(origin, text);
        let raw: RawFile = match serde_path_to_error::deserialize(toml::Deserializer::new(text)) {
            Ok(r) => r,
            // Only a file that is not an experiment is parsed a second time.
            Err(_) if has_table_without(text, "scenario", "experiment") => {
                return Err(ExpError {
                    origin: origin.into(),
                    line: None,
                    field: String::new(),
                    message: "this is a scenario ([scenario], no [experiment]): \
                              `pep sim run` runs it; a sweep needs an experiment \
                              whose `base` names it (docs/experiments.md)"
                        .into(),
                    also: Vec::new(),
                });
            }
            Err(e) => {
                let line = e
                    .inner()
                    .span()
                    .map(|s| text[..s.start].matches('\n').count() + 1);
                let msg = e.inner().message().trim().replace('\n', ": ");
                let mut field = e.path().to_string().replace("?", "");
                if field == "." {
                    // The tokenizer failed before serde had a path.
                    let at = e.inner().span().and_then(|s| field_at(text, s));
                    field = at.unwrap_or_default();
                }
                return Err(ExpError {
                    origin: origin.into(),
                    line,
                    field,
                    message: tidy_number(msg),
                    also: Vec::new(),
                });
            }
        };
        let h = raw.experiment;
        // Every problem is collected, then reported at once: first those
        // the base scenario finds (an unknown link or flow name), which
        // may cause others (a plot naming the path the typo hides).
        let mut found: Vec<ExpError> = Vec::new();
        if h.name.trim().is_empty() {
            found.push(errs.at("name", "experiment.name", "must not be empty"));
        } else if !scenario::is_plain_name(&h.name) {
            // The name is the default output directory, out/<name>.
            let msg = format!(
                "{:?} is not a plain name: it names the output directory out/<name>, \
                 so it must not contain '/' or '\\' nor be \".\" or \"..\"",
                h.name
            );
            found.push(errs.at("name", "experiment.name", msg));
        }
        let seeds = keep(
            &mut found,
            parse_seeds(&errs, h.seeds.as_ref(), "experiment.seeds"),
        )
        .flatten()
        .unwrap_or(vec![1]);
        if h.measures.is_empty() {
            let msg = "list at least one measure, e.g. [\"total_goodput_mbps\"]";
            found.push(errs.at("measures", "experiment.measures", msg));
        }
        let mut measures: Vec<Measure> = Vec::new();
        for (i, m) in h.measures.iter().enumerate() {
            let field = format!("experiment.measures[{i}]");
            let Some(parsed) = keep(
                &mut found,
                Measure::parse(m).map_err(|e| errs.at(m, &field, e.0)),
            ) else {
                continue;
            };
            if measures.iter().any(|x| x.text == parsed.text) {
                found.push(errs.at(m, field, format!("{m:?} is listed twice")));
                continue;
            }
            measures.push(parsed);
        }
        let set = keep(
            &mut found,
            overrides(&errs, raw.set.unwrap_or_default(), "set"),
        )
        .unwrap_or_default();
        let grid: Vec<String> = raw
            .vary
            .as_ref()
            .map_or(Vec::new(), |v| v.0.iter().map(|(k, _)| k.clone()).collect());
        let (params, points) =
            keep(&mut found, points(&errs, raw.vary, raw.points)).unwrap_or_default();
        let (short_seeds, short_set) = match raw.short {
            Some(s) => (
                keep(
                    &mut found,
                    parse_seeds(&errs, s.seeds.as_ref(), "short.seeds"),
                )
                .flatten(),
                keep(
                    &mut found,
                    overrides(&errs, s.set.unwrap_or_default(), "short.set"),
                )
                .unwrap_or_default(),
            ),
            None => (None, Vec::new()),
        };
        // Every point takes a [vary] value, which overrides these.
        for (table, list) in [("set", &set), ("short.set", &short_set)] {
            if let Some((path, _)) = list.iter().find(|(p, _)| grid.contains(p)) {
                let msg = "is varied by [vary] too, whose values override it: give it in one place";
                found.push(errs.at(path, format!("{table}.{path:?}"), msg));
            }
        }
        let counts = [
            ("experiment.seeds", Some(&seeds)),
            ("short.seeds", short_seeds.as_ref()),
        ];
        for (field, list) in counts {
            let n = list.map_or(0, Vec::len);
            let runs = n.saturating_mul(points.len());
            if runs > MAX_RUNS {
                let msg = format!(
                    "{} points x {n} seeds = {runs} runs: at most {MAX_RUNS} (a sweep plans \
                     them all before the first starts)",
                    points.len()
                );
                found.push(errs.at("seeds", field, msg));
            }
        }
        let plots = keep(
            &mut found,
            plotspec::validate(&errs, raw.plots, &params, &measures),
        )
        .unwrap_or_default();
        let outputs = h.outputs.unwrap_or(false) || plots.iter().any(PlotSpec::needs_outputs);
        let (base_path, base_text) = match dir {
            Some(d) => {
                let p = d.join(&h.base);
                let t = keep(
                    &mut found,
                    scenario::read_text(&p, "base scenario")
                        .map_err(|msg| errs.at("base", "experiment.base", msg)),
                );
                (p, t)
            }
            None => (PathBuf::from(&h.base), Some(String::new())),
        };
        let read = base_text.is_some();
        let mut exp = Experiment {
            name: h.name,
            description: h.description.unwrap_or_default(),
            origin: origin.to_string(),
            text: text.to_string(),
            base_path,
            base_text: base_text.unwrap_or_default(),
            set,
            params,
            points,
            seeds,
            measures,
            plots,
            short_seeds,
            short_set,
            outputs,
            warnings: Vec::new(),
            short_warnings: Vec::new(),
            resolved: Resolutions::default(),
        };
        if dir.is_some() && read {
            // The points as far as the file could be read: what the base
            // refuses (a name it does not have) comes first.
            match exp.resolve(Mode::Full) {
                Ok(points) if found.is_empty() => {
                    if let Some(first) = points.first() {
                        check_selects(&errs, &exp.plots, &first.scenario)?;
                    }
                    exp.warnings = exp.gather_warnings(&points, Mode::Full);
                    exp.resolved.keep(exp.inputs_key(Mode::Full), points);
                }
                Ok(_) => {}
                Err(e) => found.insert(0, e),
            }
            if found.is_empty() && exp.has_short() {
                let points = exp.resolve(Mode::Short)?;
                exp.short_warnings = exp.gather_warnings(&points, Mode::Short);
                exp.resolved.keep(exp.inputs_key(Mode::Short), points);
            }
        }
        match ExpError::all(found) {
            Some(e) => Err(e),
            None => Ok(exp),
        }
    }

    /// Whether a `[short]` table changes anything: without one, short mode
    /// runs the experiment as written.
    pub fn has_short(&self) -> bool {
        self.short_seeds.is_some() || !self.short_set.is_empty()
    }

    /// The points' scenario warnings in `mode`, each once for all the
    /// points that have it, in point order. Found by [`Experiment::load`]
    /// (and [`Experiment::parse`] given a directory), which resolve every
    /// point; empty when the base was not read.
    pub fn warnings(&self, mode: Mode) -> &[ExpWarning] {
        if mode == Mode::Short && self.has_short() {
            &self.short_warnings
        } else {
            &self.warnings
        }
    }

    /// The warnings of both modes, as `pep sim check` checks both: the
    /// full ones, then those `[short]` alone gives.
    pub fn all_warnings(&self) -> Vec<&ExpWarning> {
        let full = self.warnings(Mode::Full);
        let short_only = self.short_warnings.iter().filter(|w| {
            !full
                .iter()
                .any(|x| x.diagnostic.same_problem(&w.diagnostic))
        });
        full.iter().chain(short_only).collect()
    }

    /// One [`ExpWarning`] per distinct warning (field and message) of the
    /// points' scenarios: many points share one, from the base or `[set]`.
    fn gather_warnings(&self, points: &[Resolved], mode: Mode) -> Vec<ExpWarning> {
        let mut out: Vec<ExpWarning> = Vec::new();
        let mut seen: std::collections::HashMap<(&str, &str), usize> = Default::default();
        for r in points {
            for d in r.scenario.warnings.iter() {
                let key = (d.field.as_str(), d.message.as_str());
                if let Some(&i) = seen.get(&key) {
                    // A field warns once per scenario; counted once anyway.
                    if out[i].point != r.point.id {
                        out[i].points += 1;
                    }
                    continue;
                }
                seen.insert(key, out.len());
                out.push(ExpWarning {
                    diagnostic: d.clone(),
                    experiment: self.origin.clone(),
                    point: r.point.id.clone(),
                    point_values: if r.point.values.iter().any(Option::is_some) {
                        self.describe(&r.point)
                    } else {
                        String::new()
                    },
                    points: 1,
                    of: points.len(),
                    mode,
                });
            }
        }
        if out.is_empty() {
            return out;
        }
        // What the base alone warns of has a line there: shown at it.
        let base_origin = self.base_path.display().to_string();
        if let Ok(base) = Scenario::from_toml_str(&self.base_text, &base_origin) {
            for w in &mut out {
                let d = &w.diagnostic;
                if let Some(b) = base.warnings.iter().find(|b| b.same_problem(d)) {
                    w.diagnostic = b.clone();
                }
            }
        }
        out
    }

    /// The seeds run in `mode`.
    pub fn seeds(&self, mode: Mode) -> &[u64] {
        match (mode, &self.short_seeds) {
            (Mode::Short, Some(s)) => s,
            _ => &self.seeds,
        }
    }

    /// Builds and validates every point's scenario; checks the measures
    /// name flows and links that exist.
    pub fn resolve(&self, mode: Mode) -> Result<Vec<Resolved>, ExpError> {
        if let Some(points) = self.resolved.take(self.inputs_key(mode)) {
            return Ok(points);
        }
        let errs = Errs::new(&self.origin, &self.text);
        let out = match self.resolve_written(&errs, mode)? {
            Some(out) => out,
            None => self.resolve_documents(&errs, mode)?,
        };
        same_scenarios(&errs, self, &out)?;
        if let Some(first) = out.first() {
            let (flows, links) = names(&first.scenario);
            let agents: Vec<String> = first
                .scenario
                .agents
                .iter()
                .map(|a| a.name.clone())
                .collect();
            for (i, m) in self.measures.iter().enumerate() {
                m.check(&flows, &links, &agents)
                    .map_err(|e| errs.at(&m.text, format!("experiment.measures[{i}]"), e.0))?;
            }
        }
        Ok(out)
    }

    /// A hash of everything the points of `mode` are made of: the base,
    /// the overrides, the points and the measures checked against them.
    fn inputs_key(&self, mode: Mode) -> u64 {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let mut h = DefaultHasher::new();
        let what = (
            mode,
            &self.base_path,
            &self.base_text,
            &self.set,
            &self.short_set,
            &self.params,
            &self.points,
            &self.measures,
        );
        format!("{what:?}").hash(&mut h);
        h.finish()
    }

    /// The overrides of point `p` in `mode`, in the order they apply:
    /// `[set]`, `[short].set`, then the point's values.
    fn overrides(&self, p: &Point, mode: Mode) -> Vec<(String, Value)> {
        let mut out: Vec<(String, Value)> = self.set.clone();
        if mode == Mode::Short {
            out.extend(self.short_set.iter().cloned());
        }
        let values = self.params.iter().zip(&p.values);
        out.extend(values.filter_map(|(path, v)| Some((path.clone(), v.clone()?))));
        out
    }

    /// Every point as [`Source::Written`], when the base has `[[repeat]]`
    /// groups and each point's overrides all reach tables written outside
    /// them; `None` otherwise, and the whole document is changed per point
    /// ([`Experiment::resolve_documents`], which reports a path that does
    /// not apply). A scenario the overrides make invalid is reported here,
    /// a copy's problem at its line in the base and counted over copies.
    fn resolve_written(&self, errs: &Errs, mode: Mode) -> Result<Option<Vec<Resolved>>, ExpError> {
        let has_groups = self
            .base_text
            .parse::<toml::Table>()
            .is_ok_and(|t| t.contains_key("repeat"));
        if !has_groups {
            return Ok(None);
        }
        let base_origin = self.base_path.display().to_string();
        let merged_origin = format!("{base_origin} + overrides");
        let mut out = Vec::with_capacity(self.points.len());
        for p in &self.points {
            let overrides = self.overrides(p, mode);
            match Scenario::from_written_with(&self.base_text, &merged_origin, &overrides) {
                None => return Ok(None),
                Some(Ok(scenario)) => out.push(Resolved {
                    point: p.clone(),
                    source: Source::Written(overrides),
                    scenario,
                }),
                Some(Err(e)) => return Err(self.point_invalid(errs, p, mode, &e)),
            }
        }
        Ok(Some(out))
    }

    /// The error for point `p`, whose scenario is invalid (`e`): the base
    /// is blamed, with its line:column, if it is invalid on its own.
    fn point_invalid(&self, errs: &Errs, p: &Point, mode: Mode, e: &dyn fmt::Display) -> ExpError {
        let mut with: Vec<String> = Vec::new();
        if !self.set.is_empty() {
            with.push("this experiment's [set]".into());
        }
        if mode == Mode::Short && !self.short_set.is_empty() {
            with.push("this experiment's [short].set".into());
        }
        let what = self.describe(p);
        let field = if p.values.iter().any(Option::is_some) {
            with.push("the point's values".into());
            format!("point {} ({what})", p.id)
        } else {
            format!("point {}", p.id)
        };
        let msg = if with.is_empty() {
            base_invalid(e)
        } else {
            format!(
                "the base scenario with {} is invalid:\n{e}",
                join_and(&with)
            )
        };
        self.or_base(errs, errs.at("", field, msg))
    }

    /// `e`, or the base's own error when the base is invalid on its own.
    /// (Only then: a base may be a template whose gaps every point fills.)
    fn or_base(&self, errs: &Errs, e: ExpError) -> ExpError {
        let base_origin = self.base_path.display().to_string();
        match Scenario::from_toml_str(&self.base_text, &base_origin) {
            Err(be) => errs.at("base", "experiment.base", base_invalid(&be)),
            Ok(_) => e,
        }
    }

    /// Every point as [`Source::Document`]: the base document, `[set]`
    /// applied once, then each point's values on a copy of it.
    fn resolve_documents(&self, errs: &Errs, mode: Mode) -> Result<Vec<Resolved>, ExpError> {
        let base_origin = self.base_path.display().to_string();
        let mut doc0 = scenario::parse_document(&self.base_text, &base_origin)
            .map_err(|e| errs.at("base", "experiment.base", base_invalid(&e)))?;
        let mut fixed: Vec<(&str, &String, &Value)> =
            self.set.iter().map(|(p, v)| ("set", p, v)).collect();
        if mode == Mode::Short {
            fixed.extend(self.short_set.iter().map(|(p, v)| ("short.set", p, v)));
        }
        for (table, path, v) in fixed {
            scenario::apply_override(&mut doc0, path, v.clone()).map_err(|e| {
                self.or_base(
                    errs,
                    errs.at(path, format!("{table}.{path:?}"), e.to_string()),
                )
            })?;
        }
        // Errors in the merged document are reported against this origin,
        // not the base file, which may well be fine on its own.
        let merged_origin = format!("{base_origin} + overrides");
        let mut out = Vec::with_capacity(self.points.len());
        for (n, p) in self.points.iter().enumerate() {
            let mut doc = doc0.clone();
            for (path, v) in self.params.iter().zip(&p.values) {
                if let Some(v) = v {
                    scenario::apply_override(&mut doc, path, v.clone()).map_err(|e| {
                        let place = errs.point_path(n, self.points.len(), Some(path));
                        let field = format!("point {}", p.id);
                        self.or_base(errs, errs.placed(&place, path, field, e.to_string()))
                    })?;
                }
            }
            let sc = Scenario::from_table(doc.clone(), &merged_origin)
                .map_err(|e| self.point_invalid(errs, p, mode, &e))?;
            // A task's scenario text is parsed again on its own (by
            // `run_task`, maybe on another machine), where a trace path
            // relative to the base file would no longer resolve.
            absolute_traces(&mut doc, self.base_path.parent().unwrap_or(Path::new("")));
            out.push(Resolved {
                point: p.clone(),
                source: Source::Document(doc),
                scenario: sc,
            });
        }
        Ok(out)
    }

    /// `link[1].rate = 10Mbps, defaults.tcp.cc = reno`, or `base` for a
    /// point that changes nothing.
    pub fn describe(&self, p: &Point) -> String {
        let parts: Vec<String> = self
            .params
            .iter()
            .zip(&p.values)
            .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} = {}", value_text(v))))
            .collect();
        if parts.is_empty() {
            "base".into()
        } else {
            parts.join(", ")
        }
    }
}

/// `r`'s value, or `None` with its error kept in `found`.
fn keep<T>(found: &mut Vec<ExpError>, r: Result<T, ExpError>) -> Option<T> {
    r.map_err(|e| found.push(e)).ok()
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Flow names and link-direction names ("a->b") of a scenario.
pub fn names(sc: &Scenario) -> (Vec<String>, Vec<String>) {
    let flows = sc.flows.iter().map(|f| f.name.clone()).collect();
    let links = sc
        .links
        .iter()
        .flat_map(|l| {
            [Dir::Forward, Dir::Reverse].map(|d| {
                format!(
                    "{}->{}",
                    sc.nodes[l.from_node(d)].name,
                    sc.nodes[l.to_node(d)].name
                )
            })
        })
        .collect();
    (flows, links)
}

/// A parameter value as a cell or a legend shows it: strings bare, other
/// values as TOML.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => {
            let mut t = toml::Table::new();
            t.insert("v".into(), other.clone());
            let s = toml::to_string(&t).unwrap_or_default();
            s.trim()
                .strip_prefix("v = ")
                .unwrap_or(s.trim())
                .to_string()
        }
    }
}

/// A parameter value as a number on an axis, with its unit: rates in
/// Mbit/s, durations in ms, sizes in bytes, bare numbers as they are.
pub fn value_number(v: &Value) -> Option<(f64, &'static str)> {
    use pep_sim::units;
    match v {
        Value::Integer(i) => Some((*i as f64, "")),
        Value::Float(f) => Some((*f, "")),
        Value::String(s) => {
            if let Ok(r) = units::parse_rate(s) {
                Some((r.as_mbps_f64(), "Mbit/s"))
            } else if let Ok(d) = units::parse_duration(s) {
                Some((d.as_millis_f64(), "ms"))
            } else if let Ok(b) = units::parse_bytes(s) {
                Some((b as f64, "B"))
            } else {
                s.trim().parse::<f64>().ok().map(|x| (x, ""))
            }
        }
        _ => None,
    }
}

fn parse_seeds(errs: &Errs, v: Option<&Value>, field: &str) -> Result<Option<Vec<u64>>, ExpError> {
    let key = field.rsplit('.').next().unwrap_or(field);
    let bad = |msg: &str| errs.at(key, field, msg.to_string());
    match v {
        None => Ok(None),
        Some(Value::Integer(n)) if (1..=100_000).contains(n) => Ok(Some((1..=*n as u64).collect())),
        Some(Value::Integer(_)) => Err(bad("a seed count must be within 1..=100000")),
        Some(Value::Array(a)) if !a.is_empty() => {
            let mut out: Vec<u64> = Vec::new();
            for (i, x) in a.iter().enumerate() {
                // On the entry's own line, in a list written over several.
                let bad_seed = |msg: String| errs.placed(&format!("{field}[{i}]"), key, field, msg);
                match x.as_integer() {
                    Some(s) if s >= 0 && !out.contains(&(s as u64)) => out.push(s as u64),
                    Some(s) if s >= 0 => return Err(bad_seed(format!("seed {s} is listed twice"))),
                    _ => return Err(bad_seed("seeds must be integers >= 0".into())),
                }
            }
            Ok(Some(out))
        }
        Some(_) => Err(bad(
            "expected a count (seeds = 3 runs seeds 1, 2, 3) or a list (seeds = [1, 7, 42])",
        )),
    }
}

/// Checks override paths: at least `table.field`, never the seed.
fn overrides(errs: &Errs, o: Ordered, table: &str) -> Result<Vec<(String, Value)>, ExpError> {
    for (path, _) in &o.0 {
        check_path(errs, path, &format!("{table}.{path:?}"))?;
    }
    Ok(o.0)
}

fn check_path(errs: &Errs, path: &str, field: &str) -> Result<(), ExpError> {
    if path.trim() == "scenario.seed" {
        let msg = "the seed is set by `seeds`, not as a parameter";
        return Err(errs.at(path, field, msg));
    }
    if path.trim().is_empty() {
        let msg = "an empty key: write the full path of a field, such as \
                   \"link[0].rate\" = [...]";
        return Err(errs.at("\"\" =", field, msg));
    }
    if !path.contains('.') && !path.contains('[') {
        let msg = format!(
            "`{path}` is a whole table: write the full path of a field as a quoted key, \
             such as \"{path}.duration\" = ... (an unquoted a.b = ... is a nested table in TOML)"
        );
        return Err(errs.at(path, field, msg));
    }
    // Syntax only: whether the path exists is known once applied to the base.
    let mut probe = toml::Table::new();
    match scenario::apply_override(&mut probe, path, Value::Boolean(true)) {
        Err(e) if e.to_string().contains("bad override path") => {
            let msg = e
                .diagnostics()
                .first()
                .map_or(e.to_string(), |d| d.message.clone());
            Err(errs.at(path, field, msg))
        }
        _ => Ok(()),
    }
}

fn points(
    errs: &Errs,
    vary: Option<Ordered>,
    explicit: Vec<Ordered>,
) -> Result<(Vec<String>, Vec<Point>), ExpError> {
    let vary = vary.unwrap_or_default().0;
    let mut params: Vec<String> = Vec::new();
    let mut axes: Vec<Vec<Value>> = Vec::new();
    for (path, v) in vary {
        let field = format!("vary.{path:?}");
        check_path(errs, &path, &field)?;
        match v {
            Value::Array(a) if !a.is_empty() => {
                for (i, x) in a.iter().enumerate() {
                    if a[..i].contains(x) {
                        let msg = format!("{} is listed twice", value_text(x));
                        return Err(errs.placed(&format!("{field}[{i}]"), &path, field, msg));
                    }
                }
                params.push(path);
                axes.push(a);
            }
            _ => {
                let msg = "expected a non-empty list of values, e.g. [\"10Mbps\", \"20Mbps\"]";
                return Err(errs.at(&path, field, msg));
            }
        }
    }
    let n_grid = params.len();
    for (i, p) in explicit.iter().enumerate() {
        if p.0.is_empty() {
            return Err(errs.at("[[point]]", format!("point[{i}]"), "sets nothing"));
        }
        for (path, _) in &p.0 {
            let field = format!("point[{i}].{path:?}");
            check_path(errs, path, &field)?;
            if params[..n_grid].contains(path) {
                let msg = "is varied by [vary] too: give it in one place";
                return Err(errs.at(path, field, msg));
            }
            if !params.contains(path) {
                params.push(path.clone());
            }
        }
    }
    // Explicit points (or one empty one), each times the grid, last key fastest.
    let rows: Vec<Vec<Option<Value>>> = if explicit.is_empty() {
        vec![vec![None; params.len()]]
    } else {
        explicit
            .iter()
            .map(|p| {
                params
                    .iter()
                    .map(|k| p.0.iter().find(|(pk, _)| pk == k).map(|(_, v)| v.clone()))
                    .collect()
            })
            .collect()
    };
    let grid_len: usize = axes.iter().map(Vec::len).product();
    let total = rows.len() * grid_len;
    if total > MAX_RUNS {
        let msg =
            format!("{total} points: at most {MAX_RUNS} (each is checked and held in memory)");
        return Err(errs.at("[vary]", "vary", msg));
    }
    let width = (total.saturating_sub(1)).to_string().len().max(3);
    let mut points = Vec::with_capacity(total);
    for row in &rows {
        for g in 0..grid_len {
            let mut values = row.clone();
            let mut rest = g;
            for (k, axis) in axes.iter().enumerate().rev() {
                values[k] = Some(axis[rest % axis.len()].clone());
                rest /= axis.len();
            }
            let id = format!("p{:0width$}", points.len());
            points.push(Point { id, values });
        }
    }
    Ok((params, points))
}

/// The message for a base scenario that is invalid (`e`).
fn base_invalid(e: &dyn fmt::Display) -> String {
    format!("the base scenario is invalid:\n{e}")
}

/// Makes every `trace` path of `doc`'s links (`link[i].trace`,
/// `link[i].forward.trace`, `link[i].reverse.trace`) relative to `dir`
/// absolute, as `pep_sim` would resolve it from the base file.
fn absolute_traces(doc: &mut toml::Table, dir: &Path) {
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let Some(Value::Array(links)) = doc.get_mut("link") else {
        return;
    };
    for link in links.iter_mut().filter_map(Value::as_table_mut) {
        let fix = |t: &mut toml::Table| {
            if let Some(Value::String(p)) = t.get_mut("trace") {
                if Path::new(p.as_str()).is_relative() {
                    *p = dir.join(p.as_str()).display().to_string();
                }
            }
        };
        fix(link);
        for d in ["forward", "reverse"] {
            if let Some(Value::Table(t)) = link.get_mut(d) {
                fix(t);
            }
        }
    }
}
