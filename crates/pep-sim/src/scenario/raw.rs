//! The document as written: serde structs that mirror the TOML one to one.
//!
//! Every table denies unknown fields. Scalars that later checks may complain
//! about are `Spanned` so the complaint can point at them; tables are not,
//! because toml has no span for a table made implicitly by dotted keys
//! (`tcp.cc = "reno"`) and `Spanned` then fails. Unit strings are
//! parsed here, during deserialization, so a bad unit is reported with the
//! field path and position serde and toml already track.
//!
//! Tables tagged by `kind` (queue, loss, medium, ack, source) are kept as raw
//! `toml::Value`s ([`Located`]): they layer (defaults, link, direction)
//! before their kind is known, and `tagged.rs` reads them once layered.

use std::fmt;
use std::ops::Range;

use pep_core::queue::QueueLimit;
use pep_core::{Duration, Rate};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_spanned::__unstable as spanned;
use toml::{Table, Value};

use super::model::{CcKind, NodeKind, Profile, RecoveryKind, Series};
use crate::units::{self, UnitError};

pub(crate) use super::span::S;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Doc {
    pub scenario: Header,
    pub defaults: Option<Defaults>,
    #[serde(default, rename = "node")]
    pub nodes: Vec<Node>,
    #[serde(default, rename = "link")]
    pub links: Vec<Link>,
    #[serde(default, rename = "flow")]
    pub flows: Vec<Flow>,
    pub output: Option<Output>,
    #[serde(default, rename = "trace")]
    pub traces: Vec<Trace>,
    /// Kept whole: each kind reads its own parameters.
    #[serde(default, rename = "agent")]
    pub agents: Vec<Located>,
}

/// The tables one copy of a `[[repeat]]` makes (repeat.rs), under their
/// plain names, as [`Doc`] has them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CopyTables {
    #[serde(default)]
    pub node: Vec<Node>,
    #[serde(default)]
    pub link: Vec<Link>,
    #[serde(default)]
    pub flow: Vec<Flow>,
    #[serde(default)]
    pub agent: Vec<Located>,
    #[serde(default)]
    pub trace: Vec<Trace>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Header {
    pub name: S<String>,
    pub description: Option<String>,
    pub duration: S<Dur>,
    pub seed: Option<u64>,
    /// A link to cut the run at: each side runs on its own thread.
    pub cut: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Defaults {
    pub tcp: Option<Tcp>,
    pub sink: Option<Sink>,
    pub queue: Option<Located>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Node {
    pub name: S<String>,
    pub kind: Option<NodeKind>,
    pub processing: Option<Processing>,
}

/// A node's per-packet processing cost.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Processing {
    pub data: Option<Dur>,
    pub ack: Option<Dur>,
    pub jitter: Option<Dur>,
}

/// Link-wide values; `forward`/`reverse` override them per direction.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Link {
    pub name: Option<S<String>>,
    pub between: S<Vec<S<String>>>,
    pub rate: Option<S<RateV>>,
    pub delay: Option<S<Dur>>,
    pub queue: Option<Located>,
    pub loss: Option<Located>,
    pub medium: Option<Located>,
    pub schedule: Option<Vec<Step>>,
    pub trace: Option<S<String>>,
    /// `"leo"`: both directions follow the LEO preset ([`Leo`] overrides).
    pub preset: Option<S<String>>,
    pub leo: Option<Leo>,
    pub forward: Option<LinkDir>,
    pub reverse: Option<LinkDir>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LinkDir {
    pub rate: Option<S<RateV>>,
    pub delay: Option<S<Dur>>,
    pub queue: Option<Located>,
    pub loss: Option<Located>,
    pub schedule: Option<Vec<Step>>,
    pub trace: Option<S<String>>,
}

/// One step of a link's schedule: what changes at `at`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Step {
    pub at: S<Dur>,
    pub rate: Option<S<RateV>>,
    pub delay: Option<S<Dur>>,
    pub loss: Option<S<f64>>,
    pub ramp: Option<bool>,
}

/// Overrides of the LEO preset's parameters.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Leo {
    pub interval: Option<S<Dur>>,
    pub phase: Option<S<Dur>>,
    pub min_delay: Option<S<Dur>>,
    pub max_delay: Option<S<Dur>>,
    pub burst_loss: Option<S<f64>>,
    pub burst_before: Option<S<Dur>>,
    pub burst_after: Option<S<Dur>>,
    pub loss: Option<S<f64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Flow {
    pub name: S<String>,
    pub from: S<String>,
    pub to: S<String>,
    pub start: Option<S<Dur>>,
    pub source: Option<Located>,
    pub reverse: Option<Located>,
    pub tcp: Option<Tcp>,
    pub sink: Option<Sink>,
    pub count: Option<S<u32>>,
    pub stagger: Option<S<Dur>>,
}

/// TCP sender settings; every field optional so that tables layer.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Tcp {
    pub cc: Option<S<CcKind>>,
    pub recovery: Option<S<RecoveryKind>>,
    pub mss: Option<S<Size>>,
    pub header: Option<S<Size>>,
    pub init_cwnd: Option<S<u32>>,
    pub min_rto: Option<S<Dur>>,
    pub initial_rto: Option<S<Dur>>,
    pub max_rto: Option<S<Dur>>,
    pub clock_granularity: Option<S<Dur>>,
    pub handshake: Option<S<bool>>,
    pub max_burst: Option<S<u32>>,
    pub pacing: Option<S<bool>>,
    pub max_pacing_rate: Option<S<RateV>>,
    pub sndbuf: Option<S<Size>>,
    pub rack: Option<S<bool>>,
    pub profile: Option<S<Profile>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Sink {
    pub rwnd: Option<S<Size>>,
    pub ack: Option<Located>,
    pub sack: Option<S<bool>>,
    pub app: Option<Located>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Output {
    pub interval: Option<S<Dur>>,
    pub sample: Option<S<Dur>>,
    pub series: Option<Vec<S<Series>>>,
    pub per_flow: Option<S<bool>>,
}

/// A pcap capture of one link, or one direction of it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Trace {
    pub link: S<String>,
    pub dir: Option<S<String>>,
    pub snaplen: Option<S<Size>>,
    pub file: Option<S<String>>,
}

// The fields of each `kind`, read from a tagged table once `kind` is removed.

/// For kinds without parameters (`"none"`, `"every"`, `"bulk"`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoFields {}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DropTail {
    pub limit: Limit,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Red {
    pub limit: Option<Limit>,
    pub auto: Option<bool>,
    pub min_th: Option<f64>,
    pub max_th: Option<f64>,
    pub q_w: Option<f64>,
    pub max_p: Option<f64>,
    pub gentle: Option<bool>,
    pub wait: Option<bool>,
    pub bytes: Option<bool>,
    pub mean_pktsize: Option<Size>,
    pub target_delay: Option<Dur>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Priority {
    pub limit: Option<Limit>,
    pub classify: Option<String>,
    pub bands: Option<u8>,
    /// Flow name -> band, with `classify = "flow"`.
    pub flows: Option<std::collections::BTreeMap<String, u8>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TwoClass {
    pub limit: Option<Limit>,
    pub data_share: f64,
}

/// `kind = "sad"`: SAD over a DropTail queue, or over a two-class queue
/// when `data_share` is given.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Sad {
    pub limit: Option<Limit>,
    pub data_share: Option<f64>,
    pub max_flows: Option<u32>,
}

/// `applies_to` of a loss model.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum AppliesTo {
    All,
    Data,
    Acks,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Bernoulli {
    pub p: f64,
    pub applies_to: Option<AppliesTo>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GilbertElliott {
    pub p: Option<f64>,
    pub r: Option<f64>,
    pub loss_good: Option<f64>,
    pub loss_bad: Option<f64>,
    pub mean_loss: Option<f64>,
    pub mean_burst: Option<f64>,
    pub applies_to: Option<AppliesTo>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HalfDuplex {
    pub backoff: Option<Dur>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScriptedDrop {
    pub flow: String,
    pub segments: Vec<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DelayedAck {
    pub count: Option<u32>,
    pub timeout: Option<Dur>,
    pub tick: Option<Dur>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AdaptiveAck {
    pub min: Option<u32>,
    pub max: Option<u32>,
    pub timeout: Option<Dur>,
    pub tick: Option<Dur>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Reader {
    pub chunk: Option<Size>,
    pub when: Option<crate::scenario::model::ReadWhen>,
    pub work: Option<Dur>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Pareto {
    pub rate: Option<RateV>,
    pub packet: Option<Size>,
    pub burst_time: Option<Dur>,
    pub idle_time: Option<Dur>,
    pub shape: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Finite {
    pub size: Size,
}

// Unit-bearing values. Each accepts a string with a unit; numbers are taken
// only to explain why they are refused (or, for queue limits, as packets).

#[derive(Clone, Copy, Debug)]
pub(crate) struct RateV(pub Rate);
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dur(pub Duration);
/// Bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Size(pub u64);
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limit(pub QueueLimit);

/// A scalar as written: the unit parsers decide what it means.
enum Lit {
    Str(String),
    Int(i64),
    Float(f64),
}

impl Lit {
    /// The text a parser sees; numbers become bare numbers, which the
    /// parsers refuse as ambiguous.
    fn text(&self) -> String {
        match self {
            Lit::Str(s) => s.clone(),
            Lit::Int(i) => i.to_string(),
            Lit::Float(f) => f.to_string(),
        }
    }
}

impl<'de> Deserialize<'de> for Lit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Lit;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // Shared by rates, durations, sizes and queue limits.
                f.write_str(
                    "a value with its unit, such as \"10Mbps\", \"250ms\" or \"64KiB\" \
                     (a queue limit may also be a packet count, such as 100)",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Lit, E> {
                Ok(Lit::Str(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Lit, E> {
                Ok(Lit::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Lit, E> {
                Ok(i64::try_from(v).map_or(Lit::Float(v as f64), Lit::Int))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Lit, E> {
                Ok(Lit::Float(v))
            }
        }
        d.deserialize_any(V)
    }
}

fn unit<'de, D, T>(d: D, parse: fn(&str) -> Result<T, UnitError>) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let lit = Lit::deserialize(d)?;
    parse(&lit.text()).map_err(de::Error::custom)
}

impl<'de> Deserialize<'de> for RateV {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        unit(d, units::parse_rate).map(RateV)
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        unit(d, units::parse_duration).map(Dur)
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        unit(d, units::parse_bytes).map(Size)
    }
}

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = match Lit::deserialize(d)? {
            Lit::Int(n) => units::queue_limit_packets(n),
            lit => units::parse_queue_limit(&lit.text()),
        };
        r.map(Limit).map_err(de::Error::custom)
    }
}

/// A TOML value with its span when toml knows one (see the module doc for
/// why `toml::Spanned` will not do for tables).
#[derive(Clone, Debug)]
pub(crate) struct Located {
    pub value: Value,
    pub span: Option<Range<usize>>,
}

impl<'de> Deserialize<'de> for Located {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        fn plain(value: Value) -> Located {
            Located { value, span: None }
        }
        impl<'de> Visitor<'de> for V {
            type Value = Located;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a TOML value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Located, A::Error> {
                let mut table = Table::new();
                let Some(first) = map.next_key::<String>()? else {
                    return Ok(plain(Value::Table(table)));
                };
                if first != spanned::START_FIELD {
                    // A table toml has no span for: read it as it is.
                    table.insert(first, map.next_value()?);
                    while let Some(k) = map.next_key::<String>()? {
                        table.insert(k, map.next_value()?);
                    }
                    return Ok(plain(Value::Table(table)));
                }
                let start: usize = map.next_value()?;
                let (mut end, mut value) = (None, None);
                while let Some(k) = map.next_key::<String>()? {
                    if k == spanned::END_FIELD {
                        end = Some(map.next_value::<usize>()?);
                    } else {
                        value = Some(map.next_value::<Value>()?);
                    }
                }
                let value = value.ok_or_else(|| de::Error::missing_field("value"))?;
                let span = end.map(|end| super::span::placed(start..end));
                Ok(Located { value, span })
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Located, E> {
                Ok(plain(Value::String(v.to_string())))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Located, E> {
                Ok(plain(Value::Integer(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Located, E> {
                Ok(plain(
                    i64::try_from(v).map_or(Value::Float(v as f64), Value::Integer),
                ))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Located, E> {
                Ok(plain(Value::Float(v)))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Located, E> {
                Ok(plain(Value::Boolean(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Located, A::Error> {
                let mut items = Vec::new();
                while let Some(v) = seq.next_element::<Value>()? {
                    items.push(v);
                }
                Ok(plain(Value::Array(items)))
            }
        }
        static FIELDS: [&str; 3] = [
            spanned::START_FIELD,
            spanned::END_FIELD,
            spanned::VALUE_FIELD,
        ];
        d.deserialize_struct(spanned::NAME, &FIELDS, V)
    }
}
