//! Reading a scenario whose `[[repeat]]`s were expanded: the text outside
//! the groups first, then each copy on its own, its tables put in their
//! place among the others (repeat.rs says why).

use serde::de::DeserializeOwned;
use toml::{Table, Value};

use super::error::Ctx;
use super::raw;
use super::repeat::{CopyError, Expansion, REPEATABLE};

/// A document the copies' tables can be put into.
pub(crate) trait Document: DeserializeOwned {
    /// Reads the copies of `exp` (expanded from `written`) and puts their
    /// tables in place among those of `self`, read from `exp.text`.
    fn assemble(self, exp: &Expansion, written: &str) -> Result<Self, Box<CopyError>>;
}

/// Why a text could not be read.
pub(crate) enum Failure {
    /// The text outside the groups (or the whole text, if it has none).
    Text(serde_path_to_error::Error<toml::de::Error>),
    Copy(Box<CopyError>),
}

impl Failure {
    /// Records the failure in `ctx`, with the field path and position it
    /// has in the expanded document.
    pub(crate) fn report(&self, ctx: &mut Ctx, exp: Option<&Expansion>) {
        let kind = |key: &str| REPEATABLE.iter().position(|t| *t == key);
        match (self, exp) {
            (Failure::Text(e), None) => ctx.serde_err_placed(e, "", None, &|_, n| n, None),
            (Failure::Text(e), Some(exp)) => {
                let index = |key: &str, n| kind(key).map_or(n, |k| exp.index(k, n));
                ctx.serde_err_placed(e, "", None, &index, None);
            }
            (Failure::Copy(c), exp) => {
                let exp = exp.expect("copies come from an expansion");
                let index = |key: &str, n| kind(key).map_or(n, |k| exp.copy_index(c, k, n));
                ctx.serde_err_placed(&c.error, "", None, &index, Some((&c.text, c.start)));
            }
        }
    }
}

/// Reads `text` as a `D`: the whole text, or, with `exp`, its `text`
/// and then the copies made from `written`.
pub(crate) fn read<D: Document>(
    text: &str,
    written: &str,
    exp: Option<&Expansion>,
) -> Result<D, Failure> {
    let doc: D =
        serde_path_to_error::deserialize(toml::Deserializer::new(text)).map_err(Failure::Text)?;
    match exp {
        Some(exp) => doc.assemble(exp, written).map_err(Failure::Copy),
        None => Ok(doc),
    }
}

/// A list of tables read from the text outside the groups, with copies'
/// tables put in among them.
struct Splice<T> {
    written: std::vec::IntoIter<T>,
    taken: usize,
    out: Vec<T>,
}

impl<T> Splice<T> {
    /// The `kind`th of [`REPEATABLE`], `written` as read from the text
    /// outside the groups.
    fn new(written: Vec<T>, exp: &Expansion, kind: usize) -> Self {
        // Sized once: grown by doubling, a million flows' tables were
        // copied (and their pages touched) again and again.
        let all = exp.index(kind, written.len());
        Splice {
            written: written.into_iter(),
            taken: 0,
            out: Vec::with_capacity(all),
        }
    }

    /// Takes the written tables up to the `n`th.
    fn upto(&mut self, n: usize) {
        while self.taken < n {
            match self.written.next() {
                Some(t) => self.out.push(t),
                None => break,
            }
            self.taken += 1;
        }
    }

    fn finish(mut self) -> Vec<T> {
        self.out.extend(self.written);
        self.out
    }
}

impl Document for raw::Doc {
    fn assemble(mut self, exp: &Expansion, written: &str) -> Result<Self, Box<CopyError>> {
        let places: Vec<[usize; 5]> = exp.places().collect();
        let mut nodes = Splice::new(std::mem::take(&mut self.nodes), exp, 0);
        let mut links = Splice::new(std::mem::take(&mut self.links), exp, 1);
        let mut flows = Splice::new(std::mem::take(&mut self.flows), exp, 2);
        let mut agents = Splice::new(std::mem::take(&mut self.agents), exp, 3);
        let mut traces = Splice::new(std::mem::take(&mut self.traces), exp, 4);
        let mut group = None;
        exp.read_copies(written, |g, c: raw::CopyTables| {
            if group != Some(g) {
                group = Some(g);
                let [n, l, f, a, t] = places[g];
                nodes.upto(n);
                links.upto(l);
                flows.upto(f);
                agents.upto(a);
                traces.upto(t);
            }
            nodes.out.extend(c.node);
            links.out.extend(c.link);
            flows.out.extend(c.flow);
            agents.out.extend(c.agent);
            traces.out.extend(c.trace);
        })?;
        self.nodes = nodes.finish();
        self.links = links.finish();
        self.flows = flows.finish();
        self.agents = agents.finish();
        self.traces = traces.finish();
        Ok(self)
    }
}

impl Document for Table {
    fn assemble(mut self, exp: &Expansion, written: &str) -> Result<Self, Box<CopyError>> {
        let places: Vec<[usize; 5]> = exp.places().collect();
        // A key that is not an array of tables is left as written: the
        // check that reads the document refuses it.
        let mut lists: [Option<Splice<Value>>; 5] = std::array::from_fn(|k| {
            let key = REPEATABLE[k];
            match self.remove(key) {
                Some(Value::Array(a)) => Some(Splice::new(a, exp, k)),
                Some(other) => {
                    self.insert(key.to_string(), other);
                    None
                }
                None => Some(Splice::new(Vec::new(), exp, k)),
            }
        });
        let mut group = None;
        exp.read_copies(written, |g, mut c: Table| {
            for (k, list) in lists.iter_mut().enumerate() {
                let Some(list) = list else { continue };
                if group != Some(g) {
                    list.upto(places[g][k]);
                }
                if let Some(Value::Array(a)) = c.remove(REPEATABLE[k]) {
                    list.out.extend(a);
                }
            }
            group = Some(g);
        })?;
        for (key, list) in REPEATABLE.iter().zip(lists) {
            let Some(list) = list else { continue };
            let all = list.finish();
            if !all.is_empty() {
                self.insert(key.to_string(), Value::Array(all));
            }
        }
        Ok(self)
    }
}
