//! Measures: small paths into a run's [`Summary`], each giving one number.
//!
//! ```text
//! total_goodput_mbps                 a run-wide figure
//! flow.bulk.goodput_mbps             one flow's field
//! link.r1->r2.utilisation            one link direction's field ("a->b")
//! mean(flow.a.*.goodput_mbps)        an aggregate over the flows (or links)
//! jain(flow.*.goodput_mbps)          whose names match a pattern ('*' = any text)
//! ```
//!
//! Names may contain dots (`flow.a.3.timeouts`): the field is the last
//! component. Aggregates: `mean`, `sum`, `min`, `max`, `count` (how many
//! have a value), `jain` (Jain's fairness index, (Σx)² / (n Σx²)). A
//! pattern that can match several names needs an aggregate. A field with no
//! value in a run (`completion_s` of an unfinished flow) is left out of
//! aggregates; alone it gives an empty cell.

use std::fmt;

use pep_sim::output::{FlowCounters, FlowSummary, LinkSummary, Summary};

/// Run-wide fields of [`Summary`].
pub const RUN_FIELDS: &[&str] = &[
    "total_goodput_mbps",
    "total_delivered_bytes",
    "total_retransmitted_segments",
    "duration_s",
    "events",
    "packets_forwarded",
];
/// Fields of [`FlowSummary`].
pub const FLOW_FIELDS: &[&str] = &[
    "goodput_mbps",
    "delivered_bytes",
    "segments_sent",
    "retransmitted_segments",
    "fast_retransmits",
    "timeouts",
    "local_drops",
    "completion_s",
    "srtt_ms",
    // Per-connection counters (FlowCounters).
    "acks_sent",
    "acks_by_count",
    "acks_by_timer",
    "acks_immediate",
    "acks_window_update",
    "count_increments",
    "ack_interval",
    "data_bytes_sent",
    "retransmitted_bytes",
    "segments_received",
    "bytes_received",
    "bytes_duplicate_only",
    "bytes_partly_duplicate",
    "acks_received",
    "dup_acks_received",
];
/// Fields of [`LinkSummary`].
pub const LINK_FIELDS: &[&str] = &[
    "utilisation",
    "tx_packets",
    "tx_bytes",
    "queue_drops",
    "lost_packets",
    "max_queue_packets",
    "mean_queue_packets",
    "sd_queue_packets",
    "p99_queue_packets",
    "p50_queue_delay_ms",
    "p95_queue_delay_ms",
];
/// Aggregate functions.
pub const AGGREGATES: &[&str] = &["mean", "sum", "min", "max", "count", "jain"];

/// A parsed measure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measure {
    /// As written (trimmed): the column name in results tables.
    pub text: String,
    agg: Option<Agg>,
    target: Target,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Agg {
    Mean,
    Sum,
    Min,
    Max,
    Count,
    Jain,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    Run(&'static str),
    Flow {
        pattern: String,
        field: &'static str,
    },
    Link {
        pattern: String,
        field: &'static str,
    },
    /// `agent.<name>.<key>`: a number in the agent's `stats` object; `key`
    /// may be a dotted path into nested objects.
    Agent {
        name: String,
        key: String,
    },
}

/// Why a measure could not be read or applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeasureError(pub String);

impl fmt::Display for MeasureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn known(list: &[&'static str], word: &str) -> Option<&'static str> {
    list.iter().copied().find(|f| *f == word)
}

impl Measure {
    /// Parses a measure path; the message says what is wrong and what would
    /// be right.
    pub fn parse(text: &str) -> Result<Measure, MeasureError> {
        let text = text.trim();
        let err = |m: String| Err(MeasureError(m));
        let (agg, inner) = match text.split_once('(') {
            Some((name, rest)) => {
                let Some(inner) = rest.strip_suffix(')') else {
                    return err(format!("{text:?}: missing ')'"));
                };
                let agg = match name.trim() {
                    "mean" => Agg::Mean,
                    "sum" => Agg::Sum,
                    "min" => Agg::Min,
                    "max" => Agg::Max,
                    "count" => Agg::Count,
                    "jain" => Agg::Jain,
                    other => {
                        return err(format!(
                            "unknown aggregate {other:?}; aggregates are: {}",
                            AGGREGATES.join(", ")
                        ))
                    }
                };
                (Some(agg), inner.trim())
            }
            None => (None, text),
        };
        let target = if let Some(rest) = inner.strip_prefix("flow.") {
            let (pattern, field) = split_field(rest, inner, "flow", FLOW_FIELDS)?;
            Target::Flow { pattern, field }
        } else if let Some(rest) = inner.strip_prefix("link.") {
            let (pattern, field) = split_field(rest, inner, "link", LINK_FIELDS)?;
            Target::Link { pattern, field }
        } else if let Some(rest) = inner.strip_prefix("agent.") {
            match rest.split_once('.') {
                Some((name, key)) if !name.is_empty() && !key.is_empty() => Target::Agent {
                    name: name.to_string(),
                    key: key.to_string(),
                },
                _ => return err(format!("{inner:?}: expected agent.<name>.<stat>")),
            }
        } else if let Some(f) = known(RUN_FIELDS, inner) {
            Target::Run(f)
        } else {
            return err(format!(
                "unknown measure {inner:?}: write a run field ({}), flow.<name>.<field> or \
                 link.<a->b>.<field>",
                RUN_FIELDS.join(", ")
            ));
        };
        let multi = match &target {
            Target::Flow { pattern, .. } | Target::Link { pattern, .. } => pattern.contains('*'),
            Target::Run(_) | Target::Agent { .. } => false,
        };
        if multi && agg.is_none() {
            return err(format!(
                "{inner:?} can match several names: wrap it in an aggregate ({})",
                AGGREGATES.join(", ")
            ));
        }
        if agg.is_some() && matches!(target, Target::Run(_) | Target::Agent { .. }) {
            return err(format!(
                "{text:?}: aggregates apply to flow.* or link.* paths, not run or agent fields"
            ));
        }
        Ok(Measure {
            text: text.to_string(),
            agg,
            target,
        })
    }

    /// Checks the names this measure refers to exist among `flows` (after
    /// `count` expansion), `links` (directions, "a->b") and `agents` (the
    /// `[[agent]]` names, `<kind>@<node>` by default). An agent's stat is
    /// not checked: each kind has its own, and an unknown one reads as an
    /// empty cell.
    pub fn check(
        &self,
        flows: &[String],
        links: &[String],
        agents: &[String],
    ) -> Result<(), MeasureError> {
        let (kind, pattern, names) = match &self.target {
            Target::Run(_) => return Ok(()),
            Target::Agent { name, .. } => ("agent", name, agents),
            Target::Flow { pattern, .. } => ("flow", pattern, flows),
            Target::Link { pattern, .. } => ("link", pattern, links),
        };
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let found = match &self.target {
            Target::Agent { .. } => names.contains(&pattern.as_str()),
            _ => names.iter().any(|n| glob(pattern, n)),
        };
        if found {
            return Ok(());
        }
        if names.is_empty() {
            return Err(MeasureError(format!(
                "{}: no {kind} is named {pattern:?}; the scenario has no {kind}s",
                self.text
            )));
        }
        let mut shown: Vec<&str> = names.iter().copied().take(12).collect();
        if names.len() > shown.len() {
            shown.push("...");
        }
        Err(MeasureError(format!(
            "{}: no {kind} is named {pattern:?}; {kind}s are: {}",
            self.text,
            shown.join(", ")
        )))
    }

    /// The measure's value in `s`; `None` when there is none (an empty
    /// cell).
    pub fn eval(&self, s: &Summary) -> Option<f64> {
        let values: Vec<f64> = match &self.target {
            Target::Run(f) => return run_field(s, f),
            Target::Agent { name, key } => {
                let a = s.agents.iter().find(|a| &a.name == name)?;
                let v = key.split('.').try_fold(&a.stats, |v, k| v.get(k))?;
                return v.as_f64();
            }
            Target::Flow { pattern, field } => s
                .flows
                .iter()
                .filter(|f| glob(pattern, &f.name))
                .filter_map(|f| flow_field(f, field))
                .collect(),
            Target::Link { pattern, field } => s
                .links
                .iter()
                .filter(|l| glob(pattern, &l.name))
                .filter_map(|l| link_field(l, field))
                .collect(),
        };
        let Some(agg) = self.agg else {
            return values.first().copied();
        };
        let n = values.len() as f64;
        let sum: f64 = values.iter().sum();
        match agg {
            Agg::Count => Some(n),
            _ if values.is_empty() => None,
            Agg::Sum => Some(sum),
            Agg::Mean => Some(sum / n),
            Agg::Min => values.iter().copied().reduce(f64::min),
            Agg::Max => values.iter().copied().reduce(f64::max),
            Agg::Jain => {
                let sq: f64 = values.iter().map(|v| v * v).sum();
                (sq > 0.0).then(|| sum * sum / (n * sq))
            }
        }
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Splits `name.field` at the last dot and checks the field.
fn split_field(
    rest: &str,
    whole: &str,
    kind: &str,
    fields: &[&'static str],
) -> Result<(String, &'static str), MeasureError> {
    let Some((name, field)) = rest.rsplit_once('.') else {
        return Err(MeasureError(format!(
            "{whole:?}: expected {kind}.<name>.<field>, fields are: {}",
            fields.join(", ")
        )));
    };
    if name.is_empty() {
        return Err(MeasureError(format!("{whole:?}: the {kind} name is empty")));
    }
    match known(fields, field) {
        Some(f) => Ok((name.to_string(), f)),
        None => Err(MeasureError(format!(
            "{whole:?}: unknown {kind} field {field:?}; {kind} fields are: {}",
            fields.join(", ")
        ))),
    }
}

/// `*` matches any run of characters; everything else matches itself.
fn glob(pattern: &str, name: &str) -> bool {
    let Some((head, tail)) = pattern.split_once('*') else {
        return pattern == name;
    };
    let Some(rest) = name.strip_prefix(head) else {
        return false;
    };
    if !tail.contains('*') {
        return rest.len() >= tail.len() && rest.ends_with(tail);
    }
    (0..=rest.len())
        .filter(|&i| rest.is_char_boundary(i))
        .any(|i| glob(tail, &rest[i..]))
}

fn run_field(s: &Summary, f: &str) -> Option<f64> {
    Some(match f {
        "total_goodput_mbps" => s.total_goodput_mbps,
        "total_delivered_bytes" => s.total_delivered_bytes as f64,
        "total_retransmitted_segments" => s.total_retransmitted_segments as f64,
        "duration_s" => s.duration_s,
        "events" => s.events as f64,
        "packets_forwarded" => s.packets_forwarded as f64,
        _ => return None,
    })
}

fn flow_field(f: &FlowSummary, field: &str) -> Option<f64> {
    Some(match field {
        "goodput_mbps" => f.goodput_mbps,
        "delivered_bytes" => f.delivered_bytes as f64,
        "segments_sent" => f.segments_sent as f64,
        "retransmitted_segments" => f.retransmitted_segments as f64,
        "fast_retransmits" => f.fast_retransmits as f64,
        "timeouts" => f.timeouts as f64,
        "local_drops" => f.local_drops as f64,
        "completion_s" => return f.completion_s,
        "srtt_ms" => return f.srtt_ms,
        _ => return counter_field(f.counters.as_ref()?, field),
    })
}

fn counter_field(c: &FlowCounters, field: &str) -> Option<f64> {
    Some(match field {
        "acks_sent" => c.acks_sent,
        "acks_by_count" => c.acks_by_count,
        "acks_by_timer" => c.acks_by_timer,
        "acks_immediate" => c.acks_immediate,
        "acks_window_update" => c.acks_window_update,
        "count_increments" => c.count_increments,
        "ack_interval" => c.ack_interval as u64,
        "data_bytes_sent" => c.data_bytes_sent,
        "retransmitted_bytes" => c.retransmitted_bytes,
        "segments_received" => c.segments_received,
        "bytes_received" => c.bytes_received,
        "bytes_duplicate_only" => c.bytes_duplicate_only,
        "bytes_partly_duplicate" => c.bytes_partly_duplicate,
        "acks_received" => c.acks_received,
        "dup_acks_received" => c.dup_acks_received,
        _ => return None,
    } as f64)
}

fn link_field(l: &LinkSummary, field: &str) -> Option<f64> {
    Some(match field {
        "utilisation" => l.utilisation,
        "tx_packets" => l.tx_packets as f64,
        "tx_bytes" => l.tx_bytes as f64,
        "queue_drops" => l.queue_drops as f64,
        "lost_packets" => l.lost_packets as f64,
        "max_queue_packets" => l.max_queue_packets as f64,
        "mean_queue_packets" => l.mean_queue_packets?,
        "sd_queue_packets" => l.sd_queue_packets?,
        "p99_queue_packets" => l.p99_queue_packets?,
        "p50_queue_delay_ms" => l.p50_queue_delay_ms?,
        "p95_queue_delay_ms" => l.p95_queue_delay_ms?,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(name: &str, goodput: f64, done: Option<f64>) -> FlowSummary {
        FlowSummary {
            name: name.into(),
            from: "a".into(),
            to: "b".into(),
            delivered_bytes: 1000,
            goodput_mbps: goodput,
            segments_sent: 3,
            retransmitted_segments: 1,
            fast_retransmits: 1,
            timeouts: 0,
            local_drops: 0,
            completion_s: done,
            srtt_ms: None,
            counters: Some(FlowCounters {
                acks_sent: 7,
                ..FlowCounters::default()
            }),
            reverse: None,
        }
    }

    fn summary() -> Summary {
        Summary {
            scenario: "s".into(),
            seed: 1,
            duration_s: 10.0,
            flows: vec![
                flow("a.0", 2.0, Some(1.5)),
                flow("a.1", 4.0, None),
                flow("bulk", 6.0, None),
            ],
            flow_stats: None,
            total_delivered_bytes: 3000,
            total_goodput_mbps: 12.0,
            total_retransmitted_segments: 3,
            links: vec![LinkSummary {
                name: "r1->r2".into(),
                tx_packets: 10,
                tx_bytes: 10_400,
                utilisation: 0.5,
                queue_drops: 2,
                lost_packets: 0,
                max_queue_packets: 7,
                mean_queue_packets: Some(1.5),
                sd_queue_packets: None,
                p99_queue_packets: None,
                p50_queue_delay_ms: None,
                p95_queue_delay_ms: None,
            }],
            events: 99,
            packets_forwarded: 20,
            agents: vec![pep_sim::output::AgentSummary {
                name: "wm".into(),
                kind: "watermark".into(),
                nodes: vec!["r".into()],
                stats: serde_json::json!({ "premature_acks": 12, "buffer": { "max": 7.5 } }),
            }],
        }
    }

    fn eval(m: &str) -> Option<f64> {
        Measure::parse(m).unwrap().eval(&summary())
    }

    #[test]
    fn reads_fields() {
        assert_eq!(eval("total_goodput_mbps"), Some(12.0));
        assert_eq!(eval(" events "), Some(99.0));
        assert_eq!(eval("flow.bulk.goodput_mbps"), Some(6.0));
        assert_eq!(eval("flow.a.0.completion_s"), Some(1.5));
        assert_eq!(eval("flow.a.1.completion_s"), None);
        assert_eq!(eval("link.r1->r2.utilisation"), Some(0.5));
        assert_eq!(eval("link.r1->r2.max_queue_packets"), Some(7.0));
        assert_eq!(eval("flow.bulk.acks_sent"), Some(7.0));
        assert_eq!(eval("sum(flow.*.acks_by_timer)"), Some(0.0));
        assert_eq!(eval("link.r1->r2.mean_queue_packets"), Some(1.5));
        assert_eq!(eval("link.r1->r2.sd_queue_packets"), None);
        assert_eq!(eval("agent.wm.premature_acks"), Some(12.0));
        assert_eq!(eval("agent.wm.buffer.max"), Some(7.5));
        assert_eq!(eval("agent.wm.nothing"), None);
        assert_eq!(eval("agent.other.premature_acks"), None);
        assert!(Measure::parse("agent.wm").is_err());
        assert!(Measure::parse("sum(agent.wm.x)").is_err());
    }

    #[test]
    fn aggregates_over_patterns() {
        assert_eq!(eval("mean(flow.a.*.goodput_mbps)"), Some(3.0));
        assert_eq!(eval("sum(flow.*.goodput_mbps)"), Some(12.0));
        assert_eq!(eval("min(flow.*.goodput_mbps)"), Some(2.0));
        assert_eq!(eval("max(flow.*.goodput_mbps)"), Some(6.0));
        assert_eq!(eval("count(flow.*.completion_s)"), Some(1.0));
        assert_eq!(eval("mean(flow.*.completion_s)"), Some(1.5));
        assert_eq!(eval("mean(flow.zz*.completion_s)"), None);
        // (2+4+6)^2 / (3 (4+16+36)) = 144/168
        let j = eval("jain(flow.*.goodput_mbps)").unwrap();
        assert!((j - 144.0 / 168.0).abs() < 1e-12);
        assert_eq!(eval("sum(link.*.queue_drops)"), Some(2.0));
    }

    #[test]
    fn globs() {
        assert!(glob("a.*", "a.10"));
        assert!(glob("*", ""));
        assert!(glob("*->r2", "r1->r2"));
        assert!(glob("a*c*e", "abcde"));
        assert!(!glob("a*c*e", "abcd"));
        assert!(!glob("a.*", "b.1"));
        assert!(!glob("a", "ab"));
    }

    #[test]
    fn errors_say_what_would_be_right() {
        let e = |m: &str| Measure::parse(m).unwrap_err().0;
        assert_eq!(
            e("goodput"),
            "unknown measure \"goodput\": write a run field (total_goodput_mbps, \
             total_delivered_bytes, total_retransmitted_segments, duration_s, events, \
             packets_forwarded), flow.<name>.<field> or link.<a->b>.<field>"
        );
        assert!(e("flow.bulk.goodput").contains(
            "unknown flow field \"goodput\"; flow fields are: goodput_mbps, delivered_bytes"
        ));
        assert!(e("flow.goodput_mbps").contains("expected flow.<name>.<field>"));
        assert!(e("flow.*.goodput_mbps").contains("wrap it in an aggregate"));
        assert!(e("avg(flow.*.goodput_mbps)").starts_with("unknown aggregate \"avg\""));
        assert!(e("mean(flow.*.goodput_mbps").contains("missing ')'"));
        assert!(e("sum(events)").contains("not run or agent fields"));
        assert!(e("link.r1->r2.util").contains("link fields are: utilisation"));
    }

    #[test]
    fn checks_names_against_a_run() {
        let s = summary();
        let flows: Vec<String> = s.flows.iter().map(|f| f.name.clone()).collect();
        let links: Vec<String> = s.links.iter().map(|l| l.name.clone()).collect();
        assert!(Measure::parse("flow.a.*.timeouts").is_err());
        Measure::parse("mean(flow.a.*.timeouts)")
            .unwrap()
            .check(&flows, &links, &[])
            .unwrap();
        let e = Measure::parse("link.r2->r1.utilisation")
            .unwrap()
            .check(&flows, &links, &[])
            .unwrap_err();
        assert_eq!(
            e.0,
            "link.r2->r1.utilisation: no link is named \"r2->r1\"; links are: r1->r2"
        );
        // An agent's name is checked, its stat is not (each kind has its own).
        let agents = ["wm".to_string(), "split_pair@r".to_string()];
        let check = |m: &str| Measure::parse(m).unwrap().check(&flows, &links, &agents);
        check("agent.wm.premature_acks").unwrap();
        check("agent.wm.no_such_stat").unwrap();
        assert_eq!(
            check("agent.x.y").unwrap_err().0,
            "agent.x.y: no agent is named \"x\"; agents are: wm, split_pair@r"
        );
        // A name is not a pattern.
        assert!(check("agent.w*.premature_acks").is_err());
        let e = Measure::parse("agent.wm.x")
            .unwrap()
            .check(&flows, &links, &[])
            .unwrap_err();
        assert_eq!(
            e.0,
            "agent.wm.x: no agent is named \"wm\"; the scenario has no agents"
        );
    }
}
