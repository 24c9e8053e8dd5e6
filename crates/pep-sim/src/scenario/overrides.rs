//! Dotted-path overrides applied to the raw document before validation, for
//! sweeps and command-line tweaks: `link[1].rate = "20Mbps"`.
//!
//! Path syntax: keys joined by `.`; an array of tables (`node`, `link`,
//! `flow`) takes a selector, either an index `[1]` or a name: `[f1]`,
//! `["f1"]`, or `flow "f1"` as diagnostics print it. A link without a `name`
//! is matched by its default name `"a-b"`. Missing tables along the way are
//! created (`defaults.tcp.cc` works without a `[defaults]` table); missing
//! array elements are an error.

use toml::{Table, Value};

use super::error::{Diagnostic, ScenarioError};

const ORIGIN: &str = "<override>";

fn fail<T>(path: &str, message: impl Into<String>) -> Result<T, ScenarioError> {
    Err(ScenarioError::Invalid(vec![Diagnostic {
        origin: ORIGIN.into(),
        pos: None,
        field: path.into(),
        message: message.into(),
    }]))
}

#[derive(Debug, PartialEq, Eq)]
enum Sel {
    Index(usize),
    Name(String),
}

#[derive(Debug, PartialEq, Eq)]
struct Seg {
    key: String,
    sel: Option<Sel>,
}

fn parse_path(path: &str) -> Result<Vec<Seg>, String> {
    let mut segs = Vec::new();
    let mut rest = path.trim();
    loop {
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(rest.len());
        if end == 0 {
            return Err("expected a key (letters, digits, '_', '-')".into());
        }
        let key = rest[..end].to_string();
        rest = &rest[end..];
        let sel = if let Some(r) = rest.strip_prefix('[') {
            let close = r.find(']').ok_or("unclosed '['")?;
            let inner = r[..close].trim();
            rest = &r[close + 1..];
            Some(match inner.parse::<usize>() {
                Ok(i) => Sel::Index(i),
                Err(_) => Sel::Name(unquote(inner)?),
            })
        } else if let Some(r) = rest.strip_prefix(' ').map(str::trim_start) {
            let r = r.strip_prefix('"').ok_or("expected '\"' after a space")?;
            let close = r.find('"').ok_or("unclosed '\"'")?;
            rest = &r[close + 1..];
            Some(Sel::Name(r[..close].to_string()))
        } else {
            None
        };
        segs.push(Seg { key, sel });
        match rest.strip_prefix('.') {
            Some(r) => rest = r,
            None if rest.is_empty() => return Ok(segs),
            None => return Err(format!("unexpected {:?}", rest)),
        }
    }
}

fn unquote(s: &str) -> Result<String, String> {
    match s.strip_prefix('"') {
        Some(r) => r
            .strip_suffix('"')
            .map(str::to_string)
            .ok_or_else(|| "unclosed '\"'".to_string()),
        None if s.is_empty() => Err("empty selector".into()),
        None => Ok(s.to_string()),
    }
}

/// The default name of a `[[link]]` table without `name`: `"a-b"`.
fn auto_link_name(t: &Table) -> Option<String> {
    match t.get("between")?.as_array()?.as_slice() {
        [Value::String(a), Value::String(b)] => Some(format!("{a}-{b}")),
        _ => None,
    }
}

fn select<'a>(arr: &'a mut [Value], sel: &Sel, key: &str) -> Result<&'a mut Value, String> {
    let n = arr.len();
    let at = match sel {
        Sel::Index(i) => (*i < n).then_some(*i),
        Sel::Name(name) => arr.iter().position(|v| {
            v.as_table().is_some_and(|t| {
                t.get("name").and_then(Value::as_str) == Some(name.as_str())
                    || (!t.contains_key("name") && auto_link_name(t).as_deref() == Some(name))
            })
        }),
    };
    if let Some(i) = at {
        return Ok(&mut arr[i]);
    }
    Err(match sel {
        Sel::Index(i) => format!("{key}[{i}] does not exist: there are {n} [[{key}]] tables"),
        Sel::Name(name) => format!(
            "no [[{key}]] table is named {name:?}; the names are {}",
            names_of(arr)
        ),
    })
}

/// The names a selector can use, in file order: `"a", "b"`, or `none`;
/// a long list is cut after 20.
fn names_of(arr: &[Value]) -> String {
    let names: Vec<String> = arr
        .iter()
        .filter_map(Value::as_table)
        .filter_map(|t| match t.get("name").and_then(Value::as_str) {
            Some(n) => Some(n.to_string()),
            None => auto_link_name(t),
        })
        .collect();
    let mut out: Vec<String> = names.iter().take(20).map(|n| format!("{n:?}")).collect();
    if names.len() > 20 {
        out.push(format!("... ({} in all)", names.len()));
    }
    if out.is_empty() {
        "none".into()
    } else {
        out.join(", ")
    }
}

/// Whether `path` selects an array's table by its index (`link[1]`): an
/// index counts the tables after `[[repeat]]` copying, so such a path
/// cannot be applied to the tables written outside the groups.
pub(crate) fn selects_by_index(path: &str) -> bool {
    parse_path(path).map_or(true, |segs| {
        segs.iter().any(|s| matches!(s.sel, Some(Sel::Index(_))))
    })
}

/// Sets `path` to `value` in the document, creating tables as needed.
pub fn apply_override(doc: &mut Table, path: &str, value: Value) -> Result<(), ScenarioError> {
    let segs = match parse_path(path) {
        Ok(s) => s,
        Err(e) => return fail(path, format!("bad override path: {e}")),
    };
    let Some((last, inner)) = segs.split_last() else {
        return fail(path, "empty override path");
    };
    let mut table = doc;
    for seg in inner {
        let slot = match &seg.sel {
            None => table
                .entry(seg.key.clone())
                .or_insert_with(|| Value::Table(Table::new())),
            Some(sel) => match table.get_mut(&seg.key) {
                Some(Value::Array(arr)) => match select(arr, sel, &seg.key) {
                    Ok(v) => v,
                    Err(e) => return fail(path, e),
                },
                _ => return fail(path, format!("there is no [[{}]] array", seg.key)),
            },
        };
        table = match slot {
            Value::Table(t) => t,
            other => {
                let msg = format!("`{}` is a {}, not a table", seg.key, other.type_str());
                return fail(path, msg);
            }
        };
    }
    match &last.sel {
        None => {
            table.insert(last.key.clone(), value);
        }
        Some(sel) => match table.get_mut(&last.key) {
            Some(Value::Array(arr)) => match select(arr, sel, &last.key) {
                Ok(slot) => *slot = value,
                Err(e) => return fail(path, e),
            },
            _ => return fail(path, format!("there is no [[{}]] array", last.key)),
        },
    }
    Ok(())
}

/// Splits a command-line override `path=value`. The value is read as a TOML
/// value (`20`, `true`, `"20Mbps"`, `{ kind = "bernoulli", p = 0.01 }`); if
/// it is not one, as a bare string, so `link[1].rate=20Mbps` works.
pub fn parse_override(spec: &str) -> Result<(String, Value), ScenarioError> {
    // The first '=' outside quotes (a path may hold `flow "a=b"`).
    let mut quoted = false;
    let eq = spec.char_indices().find_map(|(i, c)| {
        if c == '"' {
            quoted = !quoted;
        }
        (c == '=' && !quoted).then_some(i)
    });
    let Some(eq) = eq else {
        return fail(spec, "expected path=value, like link[1].rate=20Mbps");
    };
    let (path, raw) = (spec[..eq].trim(), spec[eq + 1..].trim());
    if let Err(e) = parse_path(path) {
        return fail(path, format!("bad override path: {e}"));
    }
    let value = match toml::from_str::<Table>(&format!("v = {raw}")) {
        Ok(mut t) if t.len() == 1 => t.remove("v").unwrap_or(Value::String(raw.into())),
        _ => Value::String(raw.into()),
    };
    Ok((path.to_string(), value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Table {
        r#"
            [scenario]
            name = "x"
            [[link]]
            between = ["a", "b"]
            rate = "1Mbps"
            [[link]]
            name = "core"
            between = ["b", "c"]
            rate = "2Mbps"
            [[flow]]
            name = "f1"
        "#
        .parse()
        .unwrap()
    }

    fn get<'a>(t: &'a Table, path: &[&str]) -> &'a Value {
        let mut v = &t[path[0]];
        for k in &path[1..] {
            v = match k.parse::<usize>() {
                Ok(i) => &v[i],
                Err(_) => &v[*k],
            };
        }
        v
    }

    #[test]
    fn sets_fields_by_index_and_name() {
        let mut d = doc();
        apply_override(&mut d, "link[1].rate", "20Mbps".into()).unwrap();
        assert_eq!(get(&d, &["link", "1", "rate"]).as_str(), Some("20Mbps"));
        apply_override(&mut d, "link[core].delay", "5ms".into()).unwrap();
        assert_eq!(get(&d, &["link", "1", "delay"]).as_str(), Some("5ms"));
        apply_override(&mut d, "link[a-b].delay", "7ms".into()).unwrap();
        assert_eq!(get(&d, &["link", "0", "delay"]).as_str(), Some("7ms"));
        apply_override(&mut d, r#"flow "f1".start"#, "1s".into()).unwrap();
        apply_override(&mut d, r#"flow["f1"].tcp.cc"#, "reno".into()).unwrap();
        assert_eq!(get(&d, &["flow", "0", "start"]).as_str(), Some("1s"));
        assert_eq!(get(&d, &["flow", "0", "tcp", "cc"]).as_str(), Some("reno"));
        apply_override(&mut d, "scenario.seed", Value::Integer(7)).unwrap();
        assert_eq!(get(&d, &["scenario", "seed"]).as_integer(), Some(7));
    }

    #[test]
    fn creates_missing_tables() {
        let mut d = doc();
        apply_override(&mut d, "defaults.tcp.mss", "1000B".into()).unwrap();
        assert_eq!(get(&d, &["defaults", "tcp", "mss"]).as_str(), Some("1000B"));
        apply_override(&mut d, "link[0].forward.rate", "8Mbps".into()).unwrap();
        assert_eq!(
            get(&d, &["link", "0", "forward", "rate"]).as_str(),
            Some("8Mbps")
        );
    }

    #[test]
    fn replaces_an_array_element() {
        let mut d = doc();
        let mut t = Table::new();
        t.insert("name".into(), "g".into());
        apply_override(&mut d, "flow[0]", Value::Table(t)).unwrap();
        assert_eq!(get(&d, &["flow", "0", "name"]).as_str(), Some("g"));
    }

    #[test]
    fn refuses_bad_paths() {
        let mut d = doc();
        let msg = |r: Result<(), ScenarioError>| r.unwrap_err().to_string();
        assert_eq!(
            msg(apply_override(&mut d, "link[5].rate", "1Mbps".into())),
            "<override>: link[5].rate: link[5] does not exist: there are 2 [[link]] tables"
        );
        assert!(msg(apply_override(&mut d, "link[zz].rate", 1.into())).contains("named \"zz\""));
        assert!(msg(apply_override(&mut d, "node[0].name", 1.into())).contains("no [[node]]"));
        assert!(msg(apply_override(&mut d, "scenario.name.x", 1.into())).contains("not a table"));
        assert!(msg(apply_override(&mut d, "link[0", 1.into())).contains("unclosed"));
        assert!(msg(apply_override(&mut d, "", 1.into())).contains("expected a key"));
        assert!(msg(apply_override(&mut d, "a..b", 1.into())).contains("expected a key"));
        assert!(msg(apply_override(&mut d, "a!", 1.into())).contains("unexpected"));
    }

    #[test]
    fn parses_command_line_overrides() {
        let (p, v) = parse_override("link[1].rate=20Mbps").unwrap();
        assert_eq!(
            (p.as_str(), v),
            ("link[1].rate", Value::String("20Mbps".into()))
        );
        let (_, v) = parse_override("scenario.seed = 42").unwrap();
        assert_eq!(v, Value::Integer(42));
        let (_, v) = parse_override("link[0].rate=\"1Mbps\"").unwrap();
        assert_eq!(v, Value::String("1Mbps".into()));
        let (_, v) = parse_override("link[0].loss={ kind = \"bernoulli\", p = 0.01 }").unwrap();
        assert_eq!(v["p"].as_float(), Some(0.01));
        let (p, _) = parse_override(r#"flow "a=b".start=1s"#).unwrap();
        assert_eq!(p, r#"flow "a=b".start"#);
        assert!(parse_override("no-equals").is_err());
        assert!(parse_override("bad[=1").is_err());
    }
}
