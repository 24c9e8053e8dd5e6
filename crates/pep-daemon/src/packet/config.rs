//! `[packet]`: the packet mode's section of `pep.toml`, and its validation.

use pep_core::ack_regen::AckRegenConfig;
use pep_core::{Duration, Rate};
use serde::Deserialize;

use crate::units::{parse_duration, parse_rate};

pub use super::watermark::WatermarkSettings;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPacket {
    a: Option<String>,
    b: Option<String>,
    rate: Option<String>,
    queue: Option<i64>,
    sad: Option<bool>,
    ack_thin: Option<i64>,
    max_hold: Option<String>,
    ack_regen: Option<i64>,
    regen_spacing: Option<bool>,
    max_spacing: Option<String>,
    mss: Option<i64>,
    max_flows: Option<i64>,
    realtime: Option<bool>,
    watermark: Option<RawWatermark>,
}

/// `[packet.watermark]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWatermark {
    buffer: Option<i64>,
    watermark: Option<i64>,
    min_rto: Option<String>,
    dupthresh: Option<i64>,
    adaptive: Option<bool>,
    flows: Option<i64>,
}

/// The validated `[packet]` section. Mechanisms act on frames going from
/// `a` to `b`: put `a` on the side of the data receivers (whose ACKs it
/// regulates) and `b` toward the data senders. Frames from `b` to `a`
/// pass untouched.
#[derive(Clone, Debug, PartialEq)]
pub struct PacketSettings {
    pub a: String,
    pub b: String,
    /// The daemon's own egress queue toward `b`, at this rate (counted
    /// over IP packets): the slow uplink, so ACKs wait here, where SAD can
    /// see them. `None`: no queue, frames go out as they come.
    pub rate: Option<Rate>,
    /// Packets that queue holds (DropTail).
    pub queue: u32,
    /// The Smart ACK Dropper on that queue.
    pub sad: bool,
    /// Pass every N-th pure ACK of a flow (`None`: off).
    pub ack_thin: Option<u32>,
    /// Longest a thinned-out ACK waits for a successor before it passes.
    pub max_hold: Duration,
    /// ACK regeneration toward `b` (the far end of the slow link).
    pub ack_regen: Option<AckRegenConfig>,
    /// Bound of every per-flow table.
    pub max_flows: usize,
    /// Run the packet thread under `SCHED_FIFO` (best effort).
    pub realtime: bool,
    /// Premature ACKs with a watermark for data from `b` to `a` (`None`:
    /// off).
    pub watermark: Option<WatermarkSettings>,
}

impl PacketSettings {
    /// Frames from `a` to `b` with the `[packet]` section's defaults: no
    /// egress queue (50 packets once a rate is set), no mechanism on,
    /// ACKs held at most 20 ms, tables of 65,536 flows, no `SCHED_FIFO`.
    /// Set the rest with struct update syntax.
    pub fn new(a: impl Into<String>, b: impl Into<String>) -> Self {
        PacketSettings {
            a: a.into(),
            b: b.into(),
            rate: None,
            queue: 50,
            sad: false,
            ack_thin: None,
            max_hold: Duration::from_millis(20),
            ack_regen: None,
            max_flows: 65_536,
            realtime: false,
            watermark: None,
        }
    }

    /// One line for `pep proxy check`.
    pub fn summary(&self) -> String {
        let mut v = vec![format!("{} -> {}", self.a, self.b)];
        match self.rate {
            Some(r) => v.push(format!(
                "egress queue {} kbit/s, {} packets",
                r.as_bps() as f64 / 1e3,
                self.queue
            )),
            None => v.push("no egress queue".into()),
        }
        if self.sad {
            v.push("SAD".into());
        }
        if let Some(n) = self.ack_thin {
            v.push(format!(
                "ACK thinning every {n} (max hold {})",
                self.max_hold
            ));
        }
        if let Some(r) = &self.ack_regen {
            v.push(format!(
                "ACK regeneration R = {}, MSS {}, spacing {}",
                r.factor, r.mss, r.spacing
            ));
        }
        if let Some(w) = &self.watermark {
            v.push(format!(
                "premature ACKs N = {}, W = {}{} (senders on {}), at most {} connections",
                w.core.capacity,
                w.core.watermark,
                if w.core.adaptive { " adaptive" } else { "" },
                self.b,
                w.flows
            ));
        }
        v.push(format!("at most {} flows", self.max_flows));
        v.join(", ")
    }
}

// Every field compares exactly (no floats), as `Settings` needs.
impl Eq for PacketSettings {}

type FieldResult<T> = Result<T, (String, String)>;

fn ifname(field: &str, v: &Option<String>) -> FieldResult<String> {
    let Some(n) = v else {
        return Err((
            field.into(),
            "missing: the interface name (the daemon bridges packet.a and packet.b)".into(),
        ));
    };
    let ok = !n.is_empty()
        && n.len() < 16
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.@".contains(&b));
    if !ok {
        return Err((field.into(), format!("{n:?} is not an interface name")));
    }
    Ok(n.clone())
}

fn int(field: &str, v: Option<i64>, default: i64, lo: i64, hi: i64) -> FieldResult<i64> {
    let v = v.unwrap_or(default);
    if !(lo..=hi).contains(&v) {
        return Err((field.into(), format!("{v} is not in {lo}..={hi}")));
    }
    Ok(v)
}

fn dur(field: &str, v: &Option<String>, default: Duration) -> FieldResult<Duration> {
    let Some(v) = v else {
        return Ok(default);
    };
    let d = parse_duration(v).map_err(|e| (field.into(), e))?;
    Ok(Duration(d.as_nanos().min(u64::MAX as u128) as u64))
}

pub(crate) fn validate(r: &RawPacket) -> FieldResult<PacketSettings> {
    let a = ifname("packet.a", &r.a)?;
    let b = ifname("packet.b", &r.b)?;
    let d = PacketSettings::new("", "");
    if a == b {
        return Err(("packet.b".into(), "must differ from packet.a".into()));
    }
    let rate = match &r.rate {
        Some(s) => {
            let bps = parse_rate(s).map_err(|e| ("packet.rate".to_string(), e))?;
            if bps < 1_000 {
                return Err(("packet.rate".into(), format!("{s:?}: below 1 kbit/s")));
            }
            Some(Rate(bps))
        }
        None => None,
    };
    let sad = r.sad.unwrap_or(false);
    if sad && rate.is_none() {
        return Err((
            "packet.sad".into(),
            "needs packet.rate: SAD only helps where ACKs queue, so the daemon must own the \
             queue of the slow link (set packet.rate to its rate)"
                .into(),
        ));
    }
    let thin = int("packet.ack_thin", r.ack_thin, 0, 0, 1_000)? as u32;
    let regen = int("packet.ack_regen", r.ack_regen, 0, 0, 64)? as u32;
    let max_flows = int(
        "packet.max_flows",
        r.max_flows,
        d.max_flows as i64,
        1,
        1 << 22,
    )? as usize;
    if regen > 0 && (sad || thin > 1) {
        return Err((
            "packet.ack_regen".into(),
            "regenerates ACKs at the far end of the slow link; SAD and thinning belong at the \
             near end: run one instance at each end"
                .into(),
        ));
    }
    // Settings that only mean something with another one: refused alone
    // rather than ignored.
    for (set, name, needs) in [
        (
            r.queue.is_some() && rate.is_none(),
            "packet.queue",
            "packet.rate (the queue it sizes)",
        ),
        (
            r.mss.is_some() && regen == 0,
            "packet.mss",
            "packet.ack_regen",
        ),
        (
            r.max_spacing.is_some() && regen == 0,
            "packet.max_spacing",
            "packet.ack_regen",
        ),
    ] {
        if set {
            return Err((name.into(), format!("has no effect without {needs}")));
        }
    }
    let mss = int("packet.mss", r.mss, 1448, 88, 65_495)? as u32;
    let max_spacing = dur(
        "packet.max_spacing",
        &r.max_spacing,
        Duration::from_millis(100),
    )?;
    let max_hold = dur("packet.max_hold", &r.max_hold, d.max_hold)?;
    if thin > 1 && max_hold == Duration::ZERO {
        return Err((
            "packet.max_hold".into(),
            "must be positive with packet.ack_thin (a held ACK would never wait)".into(),
        ));
    }
    let watermark = match &r.watermark {
        Some(w) => {
            if sad || thin > 1 || regen > 0 {
                return Err((
                    "packet.watermark".into(),
                    "runs without packet.sad, packet.ack_thin and packet.ack_regen: those \
                     regulate ACKs on a slow return link, the watermark PEP sits on the \
                     router in front of a slow forward link (run one instance for each)"
                        .into(),
                ));
            }
            Some(watermark(w)?)
        }
        None => None,
    };
    Ok(PacketSettings {
        a,
        b,
        rate,
        queue: int("packet.queue", r.queue, d.queue as i64, 1, 1 << 20)? as u32,
        sad,
        ack_thin: (thin > 1).then_some(thin),
        max_hold,
        ack_regen: (regen > 0).then_some(AckRegenConfig {
            factor: regen,
            mss,
            spacing: r.regen_spacing.unwrap_or(true),
            max_spacing,
            max_flows,
        }),
        max_flows,
        realtime: r.realtime.unwrap_or(d.realtime),
        watermark,
    })
}

fn watermark(r: &RawWatermark) -> FieldResult<WatermarkSettings> {
    let Some(n) = r.buffer else {
        return Err((
            "packet.watermark.buffer".into(),
            "missing: N, the copies the PEP holds per connection (the paper uses 50)".into(),
        ));
    };
    let n = int("packet.watermark.buffer", Some(n), 0, 1, 100_000)? as usize;
    let Some(w) = r.watermark else {
        return Err((
            "packet.watermark.watermark".into(),
            "missing: W, 0..=buffer (0 passes every frame untouched)".into(),
        ));
    };
    let w = int("packet.watermark.watermark", Some(w), 0, 0, n as i64)? as usize;
    let mut core = pep_core::watermark::WatermarkConfig::new(n, w);
    if r.min_rto.is_some() {
        let d = dur(
            "packet.watermark.min_rto",
            &r.min_rto,
            Duration::from_millis(200),
        )?;
        if d == Duration::ZERO {
            return Err((
                "packet.watermark.min_rto".into(),
                "must be positive (a copy would be resent at once)".into(),
            ));
        }
        core.rtt.min_rto = d;
        core.rtt.initial_rto = core.rtt.initial_rto.max(d);
    }
    core.dupthresh = int("packet.watermark.dupthresh", r.dupthresh, 3, 1, 1_000)? as u32;
    core.adaptive = r.adaptive.unwrap_or(false);
    core.validate()
        .map_err(|(f, m)| (format!("packet.watermark.{f}"), m))?;
    Ok(WatermarkSettings {
        core,
        flows: int("packet.watermark.flows", r.flows, 1024, 1, 1 << 20)? as usize,
    })
}

/// `[packet]`, validated, if present. Packet mode runs alone: with
/// `[intercept]` as well the operator wants two things one process does
/// not do at once.
pub(crate) fn check(
    r: &Option<RawPacket>,
    intercepting: bool,
    tunnel: bool,
    routes: bool,
) -> FieldResult<Option<PacketSettings>> {
    let Some(r) = r else { return Ok(None) };
    if intercepting {
        return Err((
            "packet".into(),
            "packet mode runs without [intercept] (the TPROXY relay): run a second instance \
             for the relay"
                .into(),
        ));
    }
    // What packet mode would silently ignore.
    for (set, what) in [(tunnel, "[tunnel]"), (routes, "[[route]]")] {
        if set {
            let msg = format!("packet mode runs without {what}, which only the relay uses: run a second instance for it");
            return Err(("packet".into(), msg));
        }
    }
    validate(r).map(Some)
}

#[cfg(test)]
mod tests {
    use crate::config::parse;

    fn err(section: &str) -> String {
        parse(&format!("[packet]\n{section}"), "pep.toml")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn packet_mode_needs_no_intercept_section() {
        let s = parse(
            "[packet]\na = \"eth1\"\nb = \"eth2\"\nrate = \"64kbps\"\nsad = true\nack_thin = 2\n",
            "pep.toml",
        )
        .unwrap();
        let p = s.packet.unwrap();
        assert_eq!(p.rate, Some(pep_core::Rate::kbps(64)));
        assert!(p.sad);
        assert_eq!((p.queue, p.ack_thin, p.max_flows), (50, Some(2), 65_536));
        assert!(p.ack_regen.is_none());
        let s = parse(
            "[packet]\na = \"x\"\nb = \"y\"\nack_regen = 2\nregen_spacing = false\n",
            "f",
        )
        .unwrap();
        let r = s.packet.unwrap().ack_regen.unwrap();
        assert_eq!((r.factor, r.mss, r.spacing), (2, 1448, false));
    }

    #[test]
    fn settings_packet_mode_would_ignore_are_refused() {
        let ab = "a = \"e1\"\nb = \"e2\"\n";
        let e = err(&format!("{ab}queue = 100"));
        assert!(
            e.contains("packet.queue: has no effect without packet.rate"),
            "{e}"
        );
        assert!(err(&format!("{ab}mss = 1000"))
            .contains("packet.mss: has no effect without packet.ack_regen"));
        assert!(err(&format!("{ab}max_spacing = \"50ms\"")).contains("packet.max_spacing"));
        for (extra, what) in [
            ("[[route]]\ndst = \"192.0.2.0/24\"\n", "[[route]]"),
            (
                "[tunnel]\nrole = \"split-end\"\nlisten = \"0.0.0.0:4433\"\nallow = [\"0.0.0.0/0\"]\n\
                 cert = \"a\"\nkey = \"b\"\npeer_cert = \"c\"\n",
                "[tunnel]",
            ),
        ] {
            let e = parse(&format!("[packet]\n{ab}{extra}"), "f")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("packet mode runs without {what}")),
                "{e}"
            );
        }
        assert!(parse(
            &format!("[packet]\n{ab}rate = \"1Mbps\"\nqueue = 100\n"),
            "f"
        )
        .is_ok());
    }

    #[test]
    fn errors_name_the_field() {
        assert!(err("b = \"eth2\"").contains("packet.a: missing"));
        assert!(err("a = \"eth1\"\nb = \"eth1\"").contains("packet.b: must differ"));
        assert!(err("a = \"e 1\"\nb = \"e2\"").contains("packet.a"));
        assert!(err("a = \"e1\"\nb = \"e2\"\nsad = true").contains("packet.sad: needs packet.rate"));
        assert!(err("a = \"e1\"\nb = \"e2\"\nrate = \"fast\"").contains("packet.rate"));
        assert!(err("a = \"e1\"\nb = \"e2\"\nack_thin = -1").contains("packet.ack_thin"));
        assert!(
            err("a = \"e1\"\nb = \"e2\"\nrate = \"1Mbps\"\nsad = true\nack_regen = 1")
                .contains("packet.ack_regen")
        );
        assert!(err("a = \"e1\"\nb = \"e2\"\nbogus = 1").contains("bogus"));
        let e = parse(
            "[packet]\na = \"e1\"\nb = \"e2\"\n[intercept]\ninterfaces = [\"e3\"]\nsubnets = [\"10.0.0.0/8\"]\n",
            "f",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("packet") && e.contains("intercept"), "{e}");
    }
}
