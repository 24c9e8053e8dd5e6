//! Where a field of an experiment file is written: a field as errors name
//! it (`plot[1].y`, `vary."link[0].rate"`, `point[3]`) looked up in the
//! file parsed with its spans.

use std::ops::Range;

use toml_edit::{ArrayOfTables, ImDocument, Item, TableLike, Value};

/// One step of a field path.
#[derive(Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The span of the key (for a table, its header) or array element that
/// `path` names, if it is a path and the document has it.
pub(crate) fn span(doc: &ImDocument<&str>, path: &str) -> Option<Range<usize>> {
    let mut node = Node::Table(doc.as_table());
    let mut span = None;
    for step in steps(path)? {
        (node, span) = match step {
            Step::Key(k) => {
                let (key, item) = node.table()?.get_key_value(&k)?;
                (Node::of(item)?, key.span())
            }
            Step::Index(n) => match node {
                Node::Tables(a) => {
                    let t = a.get(n)?;
                    (Node::Table(t), t.span())
                }
                Node::Value(v) => {
                    let x = v.as_array()?.get(n)?;
                    (Node::Value(x), x.span())
                }
                Node::Table(_) => return None,
            },
        };
    }
    span
}

/// What a step has reached: a table (`[t]` or inline), an array of
/// `[[t]]` tables, or a value.
#[derive(Clone, Copy)]
enum Node<'a> {
    Table(&'a dyn TableLike),
    Tables(&'a ArrayOfTables),
    Value(&'a Value),
}

impl<'a> Node<'a> {
    fn of(item: &'a Item) -> Option<Node<'a>> {
        match item {
            Item::None => None,
            Item::Table(t) => Some(Node::Table(t)),
            Item::ArrayOfTables(a) => Some(Node::Tables(a)),
            Item::Value(v) => Some(Node::Value(v)),
        }
    }

    fn table(self) -> Option<&'a dyn TableLike> {
        match self {
            Node::Table(t) => Some(t),
            Node::Value(v) => v.as_inline_table().map(|t| t as &dyn TableLike),
            Node::Tables(_) => None,
        }
    }
}

/// The steps of `path`: keys, bare (`plot`) or quoted as Rust's `{:?}`
/// quotes (`"link[0].rate"`: fields name override paths so), joined by
/// `.`, each followed by any number of `[n]`. None for a field that is
/// not a path (`point p001`).
fn steps(path: &str) -> Option<Vec<Step>> {
    let mut out = Vec::new();
    let mut rest = path;
    loop {
        let (key, after) = match rest.strip_prefix('"') {
            Some(quoted) => unquote(quoted)?,
            None => {
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                    .unwrap_or(rest.len());
                if end == 0 {
                    return None;
                }
                (rest[..end].to_string(), &rest[end..])
            }
        };
        out.push(Step::Key(key));
        rest = after;
        while let Some(r) = rest.strip_prefix('[') {
            let (n, r) = r.split_once(']')?;
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            out.push(Step::Index(n.parse().ok()?));
            rest = r;
        }
        match rest.strip_prefix('.') {
            Some(r) => rest = r,
            None if rest.is_empty() => return Some(out),
            None => return None,
        }
    }
}

/// A string as `{:?}` writes it, the opening quote already read: its text
/// and what follows the closing quote.
fn unquote(s: &str) -> Option<(String, &str)> {
    let mut text = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((text, &s[i + 1..])),
            '\\' => text.push(match chars.next()?.1 {
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                '0' => '\0',
                'u' => {
                    // \u{1f600}
                    if chars.next()?.1 != '{' {
                        return None;
                    }
                    let mut code = 0u32;
                    loop {
                        match chars.next()?.1 {
                            '}' => break,
                            h => code = code.checked_mul(16)? + h.to_digit(16)?,
                        }
                    }
                    char::from_u32(code)?
                }
                // \" \\ \'
                other => other,
            }),
            _ => text.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"[experiment]
name = "x"
measures = [
  "a",
  "b",
]
[vary]
"link[0].rate" = ["1Mbps", "2Mbps"]
"a \"q\"\tb" = [1]
[short]
set = { "x.y" = 1 }
[[point]]
"x.y" = 1
[[point]]
"x.y" = 2
"#;

    fn line(path: &str) -> Option<usize> {
        let doc = ImDocument::parse(TEXT).unwrap();
        span(&doc, path).map(|s| TEXT[..s.start].matches('\n').count() + 1)
    }

    #[test]
    fn paths_find_their_keys_tables_and_elements() {
        assert_eq!(line("experiment.name"), Some(2));
        assert_eq!(line("experiment.measures"), Some(3));
        assert_eq!(line("experiment.measures[1]"), Some(5));
        assert_eq!(line("vary"), Some(7));
        assert_eq!(line(&format!("vary.{:?}", "link[0].rate")), Some(8));
        assert_eq!(line(&format!("vary.{:?}[1]", "link[0].rate")), Some(8));
        assert_eq!(line(&format!("vary.{:?}", "a \"q\"\tb")), Some(9));
        assert_eq!(line(&format!("short.set.{:?}", "x.y")), Some(11));
        assert_eq!(line("point[1]"), Some(14));
        assert_eq!(line(&format!("point[1].{:?}", "x.y")), Some(15));
    }

    #[test]
    fn other_fields_are_not_found() {
        for field in [
            "points",
            "point p001",
            "point p001 (x.y = 2)",
            "point[2]",
            "point[1].z",
            "experiment.name[0]",
            "vary[0]",
            "vary.\"unterminated",
            "",
        ] {
            assert_eq!(line(field), None, "{field}");
        }
    }

    #[test]
    fn debug_quoting_is_undone() {
        for key in ["link[0].rate", "", "a\"b\\c", "tab\there", "\u{301}é", "\n"] {
            let quoted = format!("{key:?}.rest");
            let (got, rest) = unquote(&quoted[1..]).unwrap();
            assert_eq!((got.as_str(), rest), (key, ".rest"), "{quoted}");
        }
    }
}
