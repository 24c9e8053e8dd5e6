//! A long list of entries serialized as columns: a [`Summary`]'s flows
//! above [`PER_FLOW_LIMIT`] and its link directions above [`LINK_LIMIT`]
//! (a sweep's run record holds the summary). Each field's name is written
//! once instead of once per entry, which makes the JSON of 10,000 gateway
//! users 5.5 times smaller (8.7 MB to 1.6 MB). It stays JSON, the fields
//! in order of name:
//!
//! ```text
//! "flows": {"rows": 2, "columns": {"counters.acks_sent": [4, 7], ...,
//!           "name": ["a", "b"], ..., "srtt_ms": [10.0, null], ...}}
//! ```
//!
//! A nested object's fields are columns named by their dotted path. A
//! field an entry leaves out is `null` in its column, and a `null` is left
//! out again when the entry is read back, so every entry reads as it would
//! from its own object (numbers are written by the same code either way).
//! Reading takes either form. An object none of whose fields has a value
//! reads back as absent.
//!
//! [`Summary`]: crate::output::Summary

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, MapAccess, SeqAccess, Visitor};
use serde::ser::{self, SerializeMap};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::output::{FlowSummary, LinkSummary};
use crate::spread::{LINK_LIMIT, PER_FLOW_LIMIT};

/// A summary's flows: columns above [`PER_FLOW_LIMIT`] of them.
pub fn flows<S: Serializer>(rows: &[FlowSummary], s: S) -> Result<S::Ok, S::Error> {
    rows_or_columns(rows, PER_FLOW_LIMIT, s)
}

/// A summary's link directions: columns above [`LINK_LIMIT`] of them.
pub fn links<S: Serializer>(rows: &[LinkSummary], s: S) -> Result<S::Ok, S::Error> {
    rows_or_columns(rows, LINK_LIMIT, s)
}

/// `rows` as a list, or as columns when there are more than `limit`.
pub fn rows_or_columns<T: Serialize, S: Serializer>(
    rows: &[T],
    limit: usize,
    s: S,
) -> Result<S::Ok, S::Error> {
    if rows.len() <= limit {
        return rows.serialize(s);
    }
    let columns = columns(rows).map_err(ser::Error::custom)?;
    let mut map = s.serialize_map(Some(2))?;
    map.serialize_entry("rows", &rows.len())?;
    map.serialize_entry("columns", &columns)?;
    map.end()
}

/// Each field's cells, by the field's (dotted) name.
fn columns<T: Serialize>(rows: &[T]) -> Result<BTreeMap<String, Vec<Value>>, serde_json::Error> {
    let mut columns: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut cells = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        flatten(String::new(), serde_json::to_value(row)?, &mut cells);
        for (path, cell) in cells.drain(..) {
            let column = columns.entry(path).or_default();
            // Rows before this one that left the field out.
            column.resize(r, Value::Null);
            column.push(cell);
        }
    }
    for column in columns.values_mut() {
        column.resize(rows.len(), Value::Null);
    }
    Ok(columns)
}

/// `value`'s leaves as (dotted path, value): an object's fields in order.
fn flatten(prefix: String, value: Value, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(fields) => {
            for (k, v) in fields {
                let path = if prefix.is_empty() {
                    k
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(path, v, out);
            }
        }
        leaf => out.push((prefix, leaf)),
    }
}

/// Reads a list of entries written either way.
pub fn deserialize<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    d.deserialize_any(RowsOrColumns(PhantomData))
}

struct RowsOrColumns<T>(PhantomData<T>);

impl<'de, T: DeserializeOwned> Visitor<'de> for RowsOrColumns<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of entries, or {\"rows\": n, \"columns\": {...}}")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Vec<T>, A::Error> {
        Vec::deserialize(de::value::SeqAccessDeserializer::new(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Vec<T>, A::Error> {
        let table = Columns::deserialize(de::value::MapAccessDeserializer::new(map))?;
        table.rows().map_err(de::Error::custom)
    }
}

/// The columnar form as read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Columns {
    rows: usize,
    columns: BTreeMap<String, Vec<Value>>,
}

impl Columns {
    /// The entries, each made from its cells.
    fn rows<T: DeserializeOwned>(self) -> Result<Vec<T>, String> {
        let mut columns = Vec::with_capacity(self.columns.len());
        for (name, cells) in self.columns {
            if cells.len() != self.rows {
                let n = cells.len();
                return Err(format!("column {name:?} has {n} cells, not {}", self.rows));
            }
            let path: Vec<String> = name.split('.').map(str::to_string).collect();
            columns.push((path, cells.into_iter()));
        }
        let mut out = Vec::with_capacity(self.rows);
        for r in 0..self.rows {
            let mut entry = Map::new();
            for (path, cells) in &mut columns {
                let cell = cells.next().expect("every column has `rows` cells");
                if !cell.is_null() {
                    insert(&mut entry, path, cell);
                }
            }
            let row = T::deserialize(Value::Object(entry)).map_err(|e| format!("row {r}: {e}"))?;
            out.push(row);
        }
        Ok(out)
    }
}

/// Puts `cell` at `path` in `entry`, making the objects on the way.
fn insert(entry: &mut Map<String, Value>, path: &[String], cell: Value) {
    let (last, parents) = path.split_last().expect("a column has a name");
    let mut at = entry;
    for p in parents {
        let next = at
            .entry(p.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            *next = Value::Object(Map::new());
        }
        at = next.as_object_mut().expect("made an object");
    }
    at.insert(last.clone(), cell);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::FlowCounters;

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Inner {
        a: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        b: Option<f64>,
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Entry {
        name: String,
        x: f64,
        maybe: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        inner: Option<Inner>,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Holder {
        #[serde(serialize_with = "two", deserialize_with = "deserialize", default)]
        entries: Vec<Entry>,
        after: u8,
    }

    fn two<S: Serializer>(rows: &[Entry], s: S) -> Result<S::Ok, S::Error> {
        rows_or_columns(rows, 2, s)
    }

    fn entry(i: u64) -> Entry {
        Entry {
            name: format!("e{i}"),
            x: i as f64 / 2.0,
            maybe: i.is_multiple_of(2).then_some(0.1 * i as f64),
            // The nested object only from the second entry on, its optional
            // field only in the third.
            inner: (i > 0).then(|| Inner {
                a: i,
                b: (i == 2).then_some(2.5),
            }),
        }
    }

    #[test]
    fn at_the_limit_a_list_past_it_columns_and_both_read_back() {
        let two_rows = Holder {
            entries: (0..2).map(entry).collect(),
            after: 7,
        };
        let text = serde_json::to_string(&two_rows).unwrap();
        assert!(text.starts_with("{\"entries\":[{\"name\":\"e0\""), "{text}");
        assert_eq!(serde_json::from_str::<Holder>(&text).unwrap(), two_rows);

        let three = Holder {
            entries: (0..3).map(entry).collect(),
            after: 7,
        };
        let text = serde_json::to_string(&three).unwrap();
        assert_eq!(
            text,
            "{\"entries\":{\"rows\":3,\"columns\":{\
             \"inner.a\":[null,1,2],\
             \"inner.b\":[null,null,2.5],\
             \"maybe\":[0.0,null,0.2],\
             \"name\":[\"e0\",\"e1\",\"e2\"],\
             \"x\":[0.0,0.5,1.0]}},\"after\":7}"
        );
        // Every entry as it was: absent stays absent, present stays present.
        assert_eq!(serde_json::from_str::<Holder>(&text).unwrap(), three);
    }

    #[test]
    fn a_flow_summarys_every_field_survives_the_columns() {
        let f = |i: u64| FlowSummary {
            name: format!("f{i}"),
            from: "a".into(),
            to: format!("b{i}"),
            delivered_bytes: 1000 * i,
            goodput_mbps: 0.1 + i as f64 * 1e-7,
            segments_sent: i,
            retransmitted_segments: i / 2,
            fast_retransmits: 0,
            timeouts: i % 3,
            local_drops: 0,
            completion_s: (!i.is_multiple_of(2)).then_some(i as f64 * 0.001),
            srtt_ms: (i > 0).then_some(600.25),
            counters: (!i.is_multiple_of(5)).then(|| FlowCounters {
                acks_sent: i,
                ..FlowCounters::default()
            }),
            reverse: None,
        };
        let rows: Vec<FlowSummary> = (0..PER_FLOW_LIMIT as u64 + 1).map(f).collect();
        let mut text = Vec::new();
        flows(&rows, &mut serde_json::Serializer::new(&mut text)).unwrap();
        let back: Vec<FlowSummary> =
            deserialize(&mut serde_json::Deserializer::from_slice(&text)).unwrap();
        // As the entries read from their own objects (a number read back
        // may be a bit off, the same way in both).
        let own: Vec<FlowSummary> =
            serde_json::from_str(&serde_json::to_string(&rows).unwrap()).unwrap();
        assert_eq!(back, own);
        assert_ne!(own[1].goodput_mbps, rows[1].goodput_mbps, "off by a bit");
        // Each field's name is written once.
        let text = String::from_utf8(text).unwrap();
        assert_eq!(text.matches("\"goodput_mbps\"").count(), 1);
        assert!(text.starts_with("{\"rows\":1001,"), "{}", &text[..40]);
    }

    #[test]
    fn link_directions_are_columns_past_their_own_limit() {
        let l = |i: usize| LinkSummary {
            name: format!("r->u{i}"),
            tx_packets: i as u64,
            tx_bytes: 1500 * i as u64,
            utilisation: 0.5,
            queue_drops: 0,
            lost_packets: 0,
            max_queue_packets: 3,
            mean_queue_packets: i.is_multiple_of(2).then_some(1.5),
            sd_queue_packets: None,
            p99_queue_packets: None,
            p50_queue_delay_ms: None,
            p95_queue_delay_ms: None,
        };
        let text = |n: usize| {
            let rows: Vec<LinkSummary> = (0..n).map(l).collect();
            let mut text = Vec::new();
            links(&rows, &mut serde_json::Serializer::new(&mut text)).unwrap();
            let back: Vec<LinkSummary> =
                deserialize(&mut serde_json::Deserializer::from_slice(&text)).unwrap();
            assert_eq!(back, rows);
            String::from_utf8(text).unwrap()
        };
        assert!(text(LINK_LIMIT).starts_with("[{\"name\":\"r->u0\""));
        let columns = text(LINK_LIMIT + 1);
        assert!(columns.starts_with("{\"rows\":10001,\"columns\":{\"lost_packets\":[0,"));
        // A field no direction has is no column.
        assert!(!columns.contains("sd_queue_packets"));
    }

    #[test]
    fn a_table_that_does_not_add_up_is_refused_with_its_column() {
        let bad =
            "{\"entries\":{\"rows\":2,\"columns\":{\"name\":[\"a\"],\"x\":[1,2]}},\"after\":1}";
        let e = serde_json::from_str::<Holder>(bad).unwrap_err().to_string();
        assert!(e.contains("column \"name\" has 1 cells, not 2"), "{e}");
        let bad = "{\"entries\":{\"rows\":1,\"columns\":{\"name\":[\"a\"]}},\"after\":1}";
        let e = serde_json::from_str::<Holder>(bad).unwrap_err().to_string();
        assert!(e.contains("row 0: missing field `x`"), "{e}");
        let bad = "{\"entries\":{\"rows\":1,\"cols\":{}},\"after\":1}";
        let e = serde_json::from_str::<Holder>(bad).unwrap_err().to_string();
        assert!(e.contains("unknown field `cols`"), "{e}");
    }
}
