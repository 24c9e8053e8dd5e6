//! Bounds that keep a scenario from panicking, hanging or filling the
//! memory: each refused at load time, naming the field.

use std::path::PathBuf;

use super::cut_tests::cut_at;
use super::tests::{base_plus, base_with, expect, load, two_routers, BASE};

/// [`two_routers`] with `extra` appended.
fn pair_plus(extra: &str) -> String {
    format!("{}{extra}", two_routers())
}
use super::*;

#[test]
fn a_huge_watermark_buffer_is_refused() {
    for n in ["4294967295", "9223372036854775807", "1000001"] {
        let t = base_plus(&format!(
            "\n[[agent]]\nkind = \"watermark\"\nnode = \"r\"\nbuffer = {n}\nwatermark = 30\n"
        ));
        expect(
            &t,
            "agent[0].buffer",
            "[[agent]]",
            &format!("must be at most 1000000 packets, got {n}"),
        );
    }
    let ok =
        "\n[[agent]]\nkind = \"watermark\"\nnode = \"r\"\nbuffer = 1000000\nwatermark = 1000000\n";
    assert!(load(&base_plus(ok)).is_ok());
}

#[test]
fn windows_near_the_sequence_space_are_refused() {
    // The sink's window: at most 65535 x 2^14.
    let t = base_plus("sink = { rwnd = \"4294967295B\" }\n");
    expect(
        &t,
        "flow \"f1\".sink.rwnd",
        "rwnd",
        "must be at most 1073725440B (65535 x 2^14, TCP's largest window with window scale 14)",
    );
    assert!(load(&base_plus("sink = { rwnd = \"1073725440B\" }\n")).is_ok());
    let t = base_with("[[node]]", "[defaults.sink]\nrwnd = \"1GiB\"\n\n[[node]]");
    expect(
        &t,
        "defaults.sink.rwnd",
        "rwnd",
        "must be at most 1073725440B",
    );

    // The MSS: at most an IPv4 packet less 40 B of headers.
    let t = base_plus("tcp = { mss = \"4294967295B\", init_cwnd = 1 }\n");
    expect(
        &t,
        "flow \"f1\".tcp.mss",
        "mss",
        "must be at most 65495B (an IPv4 packet of 65535 B less 40 B of headers), got 4294967295B",
    );
    let t = base_with("[[node]]", "[defaults.tcp]\nmss = \"65496B\"\n\n[[node]]");
    expect(&t, "defaults.tcp.mss", "mss", "must be at most 65495B");
    assert!(load(&base_plus("tcp = { mss = \"65495B\" }\n")).is_ok());

    // The initial window.
    let t = base_plus("tcp = { mss = \"1000B\", init_cwnd = 4294967 }\n");
    expect(
        &t,
        "flow \"f1\".tcp.init_cwnd",
        "init_cwnd",
        "init_cwnd x mss (4294967 x 1000B = 4294967000B) exceeds 1073725440B",
    );
    let t = base_with(
        "[[node]]",
        "[defaults.tcp]\ninit_cwnd = 1000000\n\n[[node]]",
    );
    expect(
        &t,
        "defaults.tcp.init_cwnd",
        "init_cwnd",
        "exceeds 1073725440B",
    );
    // A default window a flow's MSS makes too large is reported at the flow.
    let t = base_with("[[node]]", "[defaults.tcp]\ninit_cwnd = 20000\n\n[[node]]")
        + "tcp = { mss = \"60000B\" }\n";
    expect(&t, "flow \"f1\".tcp.mss", "mss = ", "exceeds 1073725440B");
}

#[test]
fn a_cut_needs_a_millisecond_of_delay() {
    let t = cut_at("r-b", "").replacen("delay = \"10ms\"", "delay = \"1ns\"", 1);
    expect(
        &t,
        "scenario.cut",
        "cut = ",
        "link \"r-b\" has a delay of 1ns: a cut needs at least 1ms of delay to pay off",
    );
    let t = cut_at("r-b", "").replacen(
        "delay = \"10ms\"",
        "forward = { delay = \"10ms\" }\nreverse = { delay = \"999us\" }",
        1,
    );
    let d = expect(&t, "scenario.cut", "cut = ", "a delay of 999us");
    assert!(d.message.contains("remove `cut`"), "{d}");
    let t = cut_at("r-b", "").replacen("delay = \"10ms\"", "delay = \"1ms\"", 1);
    assert!(load(&t).is_ok());
}

#[test]
fn a_polling_split_pair_needs_a_microsecond() {
    let agent = "\n[[agent]]\nkind = \"split-pair\"\nnodes = [\"r\", \"b\"]\n";
    let t = pair_plus(&format!("{agent}send_check_interval = \"1ns\"\n"));
    expect(
        &t,
        "agent[0].send_check_interval",
        "[[agent]]",
        "must be at least 1us, got 1ns",
    );
    let t = pair_plus(&format!("{agent}send_check_interval = \"999ns\"\n"));
    expect(
        &t,
        "agent[0].send_check_interval",
        "[[agent]]",
        "must be at least 1us",
    );
    assert!(load(&pair_plus(&format!(
        "{agent}send_check_interval = \"1us\"\n"
    )))
    .is_ok());
    // Without polling the interval is unused.
    let event = format!("{agent}check = \"event\"\nsend_check_interval = \"1ns\"\n");
    assert!(load(&pair_plus(&event)).is_ok());
}

#[test]
fn a_split_pair_that_could_never_send_is_refused() {
    // Each of these ran before and delivered nothing (or 33 bytes) in 20 s.
    let agent = "\n[[agent]]\nkind = \"split-pair\"\nnodes = [\"r\", \"b\"]\n";
    let cases = [
        (
            "buffer_start = 0",
            "agent[0].buffer_start",
            "must be at least 1 packet",
        ),
        (
            "tunnel_rwnd = 0",
            "agent[0].tunnel_rwnd",
            "must be from one segment",
        ),
        (
            "tunnel_rwnd = 4294967295",
            "agent[0].tunnel_rwnd",
            "got 4294967295B",
        ),
        (
            "tunnel_ssthresh = 0",
            "agent[0].tunnel_ssthresh",
            "at least 2 packets",
        ),
        (
            "tunnel_ssthresh = 1",
            "agent[0].tunnel_ssthresh",
            "at least 2 packets",
        ),
    ];
    for (line, field, msg) in cases {
        expect(
            &pair_plus(&format!("{agent}{line}\n")),
            field,
            "[[agent]]",
            msg,
        );
    }
    for line in [
        "tunnel_rwnd = 1073725440",
        "tunnel_ssthresh = 2",
        "buffer_start = 1",
    ] {
        assert!(
            load(&pair_plus(&format!("{agent}{line}\n"))).is_ok(),
            "{line}"
        );
    }
}

#[test]
fn an_agent_off_its_flows_path_is_refused() {
    // Each of these ran before and delivered nothing through the PEP.
    let split = |node: &str, flows: &str| {
        base_plus(&format!(
            "\n[[agent]]\nkind = \"split\"\nnode = \"{node}\"\n{flows}"
        ))
    };
    for end in ["a", "b"] {
        let msg =
            format!("no flow passes node \"{end}\" between its ends (flows go f1: a -> r -> b)");
        expect(&split(end, ""), "agent[0].node", "[[agent]]", &msg);
    }
    assert!(load(&split("r", "")).is_ok());
    let listed = split("b", "flows = [\"f1\"]\n");
    let msg = "flow \"f1\" does not pass node \"b\" between its ends (its path: a -> r -> b)";
    expect(&listed, "agent[0].flows", "[[agent]]", msg);
    expect(
        &split("r", "flows = []\n"),
        "agent[0].flows",
        "[[agent]]",
        "lists no flow",
    );
    // A meter counts what arrives at a host: either end, not a router.
    let meter = |node: &str| {
        base_plus(&format!(
            "\n[[agent]]\nkind = \"meter\"\nnode = \"{node}\"\n"
        ))
    };
    assert!(load(&meter("a")).is_ok() && load(&meter("b")).is_ok());
    expect(
        &meter("r"),
        "agent[0].node",
        "[[agent]]",
        "no flow starts or ends at node \"r\"",
    );
    // A split pair's nodes must come in the data's order.
    let pair = |nodes: &str| {
        pair_plus(&format!(
            "\n[[agent]]\nkind = \"split-pair\"\nnodes = {nodes}\nflows = [\"f1\"]\n"
        ))
    };
    assert!(load(&pair("[\"r\", \"b\"]")).is_ok());
    let msg = "flow \"f1\" does not pass \"b\" and then \"r\" in that order, between its ends";
    expect(&pair("[\"b\", \"r\"]"), "agent[0].flows", "[[agent]]", msg);
}

#[test]
fn agent_settings_that_starve_or_swamp_a_run_are_refused() {
    // Each was accepted before: a window or buffer under one segment
    // crawled, a 1 ns meter interval took 4 GB, a min_rto over max_rto was
    // clamped without a word, a poll as long as the run never polled.
    let agent = |kind: &str, node: &str, extra: &str| {
        base_plus(&format!(
            "\n[[agent]]\nkind = \"{kind}\"\nnode = \"{node}\"\n{extra}\n"
        ))
    };
    let wm = "buffer = 50\nwatermark = 40\n";
    let cases = [
        (
            agent("split", "r", "rwnd = \"1459B\""),
            "rwnd",
            "must be from one segment (1460B, the flows' mss) to 1073725440B",
        ),
        (
            agent("split", "r", "rwnd = \"2147483647B\""),
            "rwnd",
            "got 2147483647B",
        ),
        (
            agent("split", "r", "buffer = \"1B\""),
            "buffer",
            "less than one segment",
        ),
        (
            agent("split", "r", "sndbuf = \"1B\""),
            "sndbuf",
            "less than one segment",
        ),
        (
            agent("split", "r", "shape_rate = \"1bps\"\nshape_burst = \"2GB\""),
            "shape_burst",
            "at most 1073725440B",
        ),
        (
            agent("split", "r", "mitigation = \"maxburst-+3\""),
            "mitigation",
            "unknown mitigation",
        ),
        (
            agent("watermark", "r", &format!("{wm}window = \"1B\"")),
            "window",
            "from one segment (1460B",
        ),
        (
            agent("watermark", "r", &format!("{wm}window = \"4GB\"")),
            "window",
            "got 4000000000B",
        ),
        (
            agent("watermark", "r", &format!("{wm}min_rto = \"61s\"")),
            "min_rto",
            "61s is above the largest RTO (60s)",
        ),
        (
            agent("meter", "b", "interval = \"999ns\""),
            "interval",
            "999ns gives 10010010 intervals",
        ),
        (
            agent("ack-regen", "a", "mss = \"100000B\""),
            "mss",
            "must be at most 65495B",
        ),
    ];
    for (text, field, says) in &cases {
        expect(text, &format!("agent[0].{field}"), "[[agent]]", says);
    }
    for ok in [
        agent(
            "split",
            "r",
            "rwnd = \"1460B\"\nbuffer = \"1460B\"\nsndbuf = \"1460B\"",
        ),
        agent(
            "watermark",
            "r",
            &format!("{wm}window = \"1460B\"\nmin_rto = \"60s\""),
        ),
        agent("meter", "b", "interval = \"1ms\""),
    ] {
        assert!(load(&ok).is_ok(), "{ok}");
    }
    let pair = |extra: &str| {
        pair_plus(&format!(
            "\n[[agent]]\nkind = \"split-pair\"\nnodes = [\"r\", \"b\"]\n{extra}\n"
        ))
    };
    let never = "10s is not shorter than the run (10s): split start would never poll";
    expect(
        &pair("send_check_interval = \"10s\""),
        "agent[0].send_check_interval",
        "[[agent]]",
        never,
    );
    // A disabled pair is checked all the same: a sweep over `enabled`
    // must not meet the error only where the PEP is on.
    let off = pair("enabled = false\nlocal_queue = \"bogus\"");
    expect(
        &off,
        "agent[0].local_queue",
        "[[agent]]",
        "expected \"red\" or \"droptail\"",
    );
    assert!(load(&pair("enabled = false")).is_ok());
}

#[test]
fn an_integer_beyond_i64_is_named_by_its_field() {
    // toml fails in its tokenizer, before serde knows the field.
    let big = "99999999999999999999";
    let t = base_with(
        "delay = \"10ms\"",
        &format!("delay = \"10ms\"\nqueue = {{ limit = {big} }}"),
    );
    let d = expect(&t, "link[1].queue.limit", big, "integer too large");
    assert!(d.message.contains("9223372036854775807"), "{d}");
    let t = base_with("[scenario]", &format!("[scenario]\nseed = {big}"));
    expect(&t, "scenario.seed", big, "integer too large");
    // A syntax error after the number leaves no value to name.
    let t = base_with("[scenario]", &format!("[scenario]\nseed = {big} 1"));
    expect(&t, "", big, "integer too large");
}

#[test]
fn output_rows_are_capped() {
    let t = base_plus("[output]\ninterval = \"1ns\"\n");
    expect(
        &t,
        "output.interval",
        "interval",
        "1ns over a 10s run is 10000000000 rows per series per flow; at most 10000000 are \
         allowed: use a longer interval",
    );
    let t = base_plus("[output]\nsample = \"999ns\"\n");
    expect(&t, "output.sample", "sample", "use a longer sample");
    // Exactly ten million is fine (one series of one flow: the total is
    // capped too).
    let ok = "[output]\nsample = \"1us\"\nseries = [\"cwnd\"]\n";
    assert!(load(&base_plus(ok)).is_ok());
    // The default sample (100 ms) over a very long run: at the duration.
    let t = base_with("duration = \"10s\"", "duration = \"2000000s\"");
    expect(
        &t,
        "output.sample",
        "duration",
        "100ms (the default) over a 2000000s run is 20000000 rows",
    );
}

/// Each series is capped per flow or link direction, and all of them
/// together: ten million bins of one flow's goodput are fine, but with
/// the four link directions' rows too they took 2.7 GB.
#[test]
fn all_series_together_are_capped() {
    let t = base_plus("[output]\ninterval = \"1us\"\nseries = [\"goodput\", \"links\"]\n");
    expect(
        &t,
        "output",
        "interval",
        "50000000 rows in all (goodput: bins x flows = 10000000, links: bins x link \
         directions = 40000000); at most 40000000",
    );
    let ok = "[output]\ninterval = \"1us\"\nseries = [\"goodput\"]\n";
    assert!(load(&base_plus(ok)).is_ok());
    // Many flows at the default interval and sample, at the duration.
    let t = base_with("to = \"b\"", "to = \"b\"\ncount = 100000");
    assert!(load(&t).is_ok(), "10 s: 11000404 rows");
    let t = t.replace("duration = \"10s\"", "duration = \"100s\"");
    expect(
        &t,
        "output",
        "duration",
        "cwnd: samples x flows = 100000000",
    );
}

#[test]
fn a_run_ends_before_the_clock_does() {
    // At u64::MAX the periodic samples saturated at the run's end and
    // fired forever, filling the memory.
    let long = "[output]\ninterval = \"1000000h\"\nsample = \"1000000h\"\n";
    let t = base_with(
        "duration = \"10s\"",
        "duration = \"18446744073709551615ns\"",
    );
    expect(
        &format!("{t}{long}"),
        "scenario.duration",
        "duration",
        "is longer than",
    );
    let t = base_with("duration = \"10s\"", "duration = \"9223372036854775808ns\"");
    assert!(load(&format!("{t}{long}")).is_ok());
}

#[test]
fn rto_bounds_need_a_millisecond() {
    let t = base_plus("tcp = { min_rto = \"0s\", initial_rto = \"1ns\", max_rto = \"1ns\" }\n");
    expect(
        &t,
        "flow \"f1\".tcp.initial_rto",
        "tcp =",
        "must be at least 1ms, got 1ns",
    );
    expect(
        &t,
        "flow \"f1\".tcp.max_rto",
        "tcp =",
        "must be at least 1ms, got 1ns",
    );
    let t = base_with(
        "[[node]]",
        "[defaults.tcp]\nmax_rto = \"999us\"\n\n[[node]]",
    );
    expect(
        &t,
        "defaults.tcp.max_rto",
        "max_rto",
        "must be at least 1ms",
    );
    let ok = "tcp = { min_rto = \"0s\", initial_rto = \"1ms\", max_rto = \"1ms\" }\n";
    assert!(load(&base_plus(ok)).is_ok());
}

#[test]
fn the_name_is_one_path_component() {
    let control = ["x\\u0000y", "a\\nb", "tab\\there"];
    for bad in ["/tmp/x", "../../../escaped", "a/b", "a\\\\b", ".", ".."]
        .into_iter()
        .chain(control)
    {
        let t = base_with("name = \"t\"", &format!("name = \"{bad}\""));
        expect(
            &t,
            "scenario.name",
            "name = ",
            "must be one plain path component",
        );
    }
    for good in ["..x", ".hidden", "a.b", "x y"] {
        let t = base_with("name = \"t\"", &format!("name = \"{good}\""));
        assert!(load(&t).is_ok(), "{good}");
    }
}

#[test]
fn trace_files_end_in_pcap() {
    for bad in ["summary.json", "goodput.csv", "x.pcapng", "pcap"] {
        let t = base_plus(&format!("\n[[trace]]\nlink = \"r->b\"\nfile = \"{bad}\"\n"));
        expect(
            &t,
            "trace[0].file",
            "file = ",
            "a capture's file name must end in \".pcap\"",
        );
    }
    let t = base_plus("\n[[trace]]\nlink = \"r->b\"\nfile = \"x.pcap\"\n");
    assert_eq!(load(&t).unwrap().traces[0].file, "x.pcap");
}

/// A fresh directory under the target dir for files made by one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pep-sim-limits-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_loader_reads_regular_files_of_at_most_16_mib() {
    let dir = scratch("read");
    // A directory.
    let e = Scenario::load(&dir).unwrap_err().to_string();
    let want = format!(
        "{}: the scenario file must be a regular file, but this is a directory",
        dir.display()
    );
    assert_eq!(e, want);
    // Too large: refused after reading 16 MiB + 1 byte.
    let big = dir.join("big.toml");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(MAX_TEXT_BYTES + 1).unwrap();
    let e = Scenario::load(&big).unwrap_err().to_string();
    assert_eq!(
        e,
        format!("{}: the scenario file is larger than 16 MiB", big.display())
    );
    let e = read_text(&big, "experiment file").unwrap_err();
    assert_eq!(
        e,
        format!(
            "{}: the experiment file is larger than 16 MiB",
            big.display()
        )
    );
    // Exactly at the limit: read (and then found to be bad TOML, not too big).
    let edge = dir.join("edge.toml");
    let mut text = BASE.to_string();
    text.push_str(&"#".repeat(MAX_TEXT_BYTES as usize - BASE.len()));
    std::fs::write(&edge, &text).unwrap();
    assert_eq!(read_text(&edge, "scenario file").unwrap().len(), text.len());
    assert!(Scenario::load(&edge).is_ok());
    // A device that never ends.
    #[cfg(unix)]
    {
        let e = Scenario::load(std::path::Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "/dev/zero: the scenario file must be a regular file, but this is a device"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn a_named_pipe_is_refused_without_blocking() {
    let dir = scratch("fifo");
    let fifo = dir.join("pipe.toml");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        // A skip under CI (PEP_REQUIRE_ALL) is a failure.
        assert!(
            std::env::var_os("PEP_REQUIRE_ALL").is_none(),
            "no mkfifo, and PEP_REQUIRE_ALL asks for every check"
        );
        eprintln!("no mkfifo: skipped");
        return;
    }
    let e = read_text(&fifo, "scenario file").unwrap_err();
    assert_eq!(
        e,
        format!(
            "{}: the scenario file must be a regular file, but this is a named pipe (FIFO)",
            fifo.display()
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_segment_fits_an_ipv4_packet() {
    let t = base_plus("tcp = { mss = \"1460B\", header = \"4294967295B\" }\n");
    expect(
        &t,
        "flow \"f1\".tcp.header",
        "header",
        "mss + header (1460B + 4294967295B) exceeds 65535B, the largest IPv4 packet",
    );
    assert!(load(&base_plus("tcp = { mss = \"65495B\", header = \"40B\" }\n")).is_ok());
}

/// A send buffer below one segment sent one-byte segments (72 in 3 s,
/// 0.0002 Mbit/s): refused as `rwnd` below the MSS is.
#[test]
fn a_send_buffer_holds_one_segment() {
    let t = base_plus("tcp = { sndbuf = \"1B\" }\n");
    expect(
        &t,
        "flow \"f1\".tcp.sndbuf",
        "sndbuf",
        "sndbuf (1B) is smaller than the MSS (1460B)",
    );
    assert!(load(&base_plus("tcp = { sndbuf = \"1460B\" }\n")).is_ok());
}

/// A capture holds IPv4 packets of at most 65535 B: a full segment with
/// SACK blocks was 65555 B, and the run failed after it had run.
#[test]
fn a_traced_segment_fits_a_capture() {
    let trace = "[[trace]]\nlink = \"a-r\"\n";
    let t = base_plus(&format!(
        "tcp = {{ mss = \"65495B\", init_cwnd = 1 }}\n{trace}"
    ));
    expect(
        &t,
        "trace[0].link",
        "link = \"a-r\"",
        "flow \"f1\": mss 65495B + 40B header + up to 40B of TCP options exceeds 65535B",
    );
    let ok = format!("tcp = {{ mss = \"65455B\", init_cwnd = 1 }}\n{trace}");
    assert!(load(&base_plus(&ok)).is_ok());
}
