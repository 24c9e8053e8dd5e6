//! Where in `pep.toml` a field is: `file:line:col` for config errors, as
//! the scenario loader gives them (issue 38).

use std::ops::Range;

use toml_edit::{ImDocument, Item};

/// The span of `path` (`route[0].server_leg.cc`, `intercept.interfaces[1]`)
/// in `text`: the value if it is there, else the nearest enclosing table
/// or key that is (a missing field is reported at its section).
pub fn span_of(text: &str, path: &str) -> Option<Range<usize>> {
    let doc = ImDocument::parse(text).ok()?;
    let mut cur: &Item = doc.as_item();
    let mut best = None;
    for seg in path.split('.') {
        let (name, index) = match seg.split_once('[') {
            Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (seg, None),
        };
        let Some(next) = cur.get(name) else { break };
        cur = next;
        best = cur.span().or(best);
        if let Some(i) = index {
            let Some(next) = cur.get(i) else { break };
            cur = next;
            best = cur.span().or(best);
        }
    }
    best
}

/// 1-based line and column (in characters) of byte `at` of `text`.
pub fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// `file:line:col` of `path` in `text`, or `file` alone.
pub fn locate(file: &str, text: &str, path: &str) -> String {
    match span_of(text, path) {
        Some(s) => {
            let (l, c) = line_col(text, s.start);
            format!("{file}:{l}:{c}")
        }
        None => file.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_found_where_written() {
        let t = "[proxy]\nport = 1\n\n[intercept]\ninterfaces = [\"a\", \"b\"]\n\
                 [[route]]\ndst = \"x\"\n[[route]]\ndst = \"y\"\nserver_leg = { cc = \"q\" }\n";
        let at = |p: &str| span_of(t, p).map(|s| line_col(t, s.start));
        assert_eq!(at("proxy.port"), Some((2, 8)));
        assert_eq!(at("intercept.interfaces[1]"), Some((5, 20)));
        assert_eq!(at("route[1].server_leg.cc"), Some((10, 21)));
        // Missing: its section.
        assert_eq!(at("proxy.buffer"), Some((1, 1)));
        assert_eq!(at("tunnel.role"), None);
        assert_eq!(locate("f", t, "tunnel.role"), "f");
    }
}
