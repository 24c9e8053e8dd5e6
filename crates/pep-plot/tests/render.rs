//! Every chart kind renders to valid SVG and PNG showing its series;
//! output is byte-identical for the same input; bad data is skipped and
//! counted or reported clearly.

use crate::common;

use common::{decode_png, parse_svg, point_count};
use pep_plot::{
    render, render_png_bytes, render_svg_string, AckSample, Bins, Chart, CiPoint, CiSeries,
    FlowTrace, PlotError, Samples, Series, PALETTE,
};

fn wave(name: &str, k: f64) -> Series {
    Series::new(
        name,
        (0..200).map(|i| {
            let t = i as f64 * 0.05;
            (t, k * (1.0 + (t * k).sin()))
        }),
    )
}

fn lines() -> Chart {
    Chart::lines([wave("cubic", 1.0), wave("newreno", 2.0), wave("bbr", 3.0)])
        .title("Goodput")
        .x_label("time (s)")
        .y_label("goodput (Mbit/s)")
}

fn error_bars() -> Chart {
    let s = |name: &str, k: f64| {
        CiSeries::new(
            name,
            [1e-4, 1e-3, 1e-2, 1e-1].iter().map(|&p| {
                CiPoint::new(
                    p,
                    k / (1.0 + 100.0 * p),
                    0.9 * k / (1.0 + 100.0 * p),
                    1.1 * k / (1.0 + 100.0 * p),
                )
            }),
        )
    };
    Chart::error_bars([s("no PEP", 5.0), s("PEP", 9.0)])
        .title("Goodput vs loss")
        .x_label("loss probability")
        .y_label("goodput (Mbit/s)")
        .x_log()
}

fn samples(name: &str, k: u64) -> Samples {
    // Deterministic, skewed: 1..=k*10 repeated with decreasing frequency.
    Samples::new(
        name,
        (1..=300u64).map(|i| ((i * i * k) % (k * 10) + 1) as f64),
    )
}

fn histogram() -> Chart {
    Chart::histogram([samples("no PEP", 3), samples("PEP", 1)], Bins::Auto)
        .title("Burst sizes")
        .x_label("burst size (segments)")
}

fn cdf() -> Chart {
    Chart::cdf([samples("no PEP", 3), samples("PEP", 1)]).x_label("burst size (segments)")
}

fn scatter() -> Chart {
    let s = |name: &str, k: f64| {
        Series::new(
            name,
            (0..50).map(|i| ((i as f64 * k).sin().abs() * 20.0, 40.0 + i as f64 * 28.0)),
        )
    };
    Chart::scatter([s("no PEP", 0.7), s("PEP", 1.3)])
        .x_label("inter-arrival time (ms)")
        .y_label("size (bytes)")
}

fn flow() -> FlowTrace {
    let mut f = FlowTrace::new("bulk");
    f.sent = (0..40)
        .map(|i| (i as f64 * 0.01, i as f64 * 1448.0))
        .collect();
    f.retransmitted = vec![(0.5, 5.0 * 1448.0), (0.6, 9.0 * 1448.0)];
    f.acks = (1..10)
        .map(|i| AckSample::new(0.1 * i as f64, i as f64 * 4.0 * 1448.0, 20_000.0))
        .collect();
    f
}

fn time_sequence() -> Chart {
    Chart::time_sequence([flow()]).title("bulk")
}

fn all() -> Vec<(&'static str, Chart)> {
    vec![
        ("lines", lines()),
        ("error_bars", error_bars()),
        ("histogram", histogram()),
        ("cdf", cdf()),
        ("scatter", scatter()),
        ("time_sequence", time_sequence()),
    ]
}

#[test]
fn every_kind_renders_valid_svg_and_png_of_the_right_size() {
    for (name, chart) in all() {
        let svg = parse_svg(&render_svg_string(&chart).unwrap());
        assert_eq!((svg.width, svg.height), (900, 540), "{name}");
        assert!(svg.elements.len() > 20, "{name}: almost empty SVG");
        let png = decode_png(&render_png_bytes(&chart).unwrap());
        assert_eq!((png.width, png.height), (900, 540), "{name}");
        // Something in the first series colour is drawn.
        assert!(png.count(PALETTE[0]) > 20, "{name}: no blue pixels");
    }
    let small = lines().size(400, 250);
    assert_eq!(parse_svg(&render_svg_string(&small).unwrap()).width, 400);
    let png = decode_png(&render_png_bytes(&small).unwrap());
    assert_eq!((png.width, png.height), (400, 250));
}

#[test]
fn lines_one_polyline_per_series_and_a_legend() {
    let svg = parse_svg(&render_svg_string(&lines()).unwrap());
    assert_eq!(svg.data_polylines(), 3);
    for i in 0..3 {
        let l = svg.stroked("polyline", i);
        assert_eq!(l.len(), 1, "series {i}");
        assert_eq!(point_count(l[0]), 200);
    }
    for t in [
        "cubic",
        "newreno",
        "bbr",
        "Goodput",
        "time (s)",
        "goodput (Mbit/s)",
    ] {
        assert!(svg.has_text(t), "missing text {t:?}");
    }
    let png = decode_png(&render_png_bytes(&lines()).unwrap());
    for (i, c) in PALETTE.iter().take(3).enumerate() {
        assert!(png.count(*c) > 100, "series {i} not visible in the PNG");
    }
    // Without a legend, the names are gone.
    let svg = parse_svg(&render_svg_string(&lines().no_legend()).unwrap());
    assert!(!svg.has_text("cubic"));
    assert_eq!(svg.data_polylines(), 3);
}

#[test]
fn error_bars_draw_a_bar_and_marker_per_point() {
    let svg = parse_svg(&render_svg_string(&error_bars()).unwrap());
    assert_eq!(svg.data_polylines(), 2, "one mean line per series");
    // Each bar is three <line>s (stem and two caps); 4 points per series.
    assert_eq!(svg.stroked("line", 0).len(), 12);
    assert_eq!(svg.stroked("line", 1).len(), 12);
    // Markers: circles for series 0, triangles for series 1 (+1 each in the legend).
    assert_eq!(svg.filled("circle", 0).len(), 4 + 1);
    assert_eq!(svg.filled("polygon", 1).len(), 4 + 1);
    assert!(svg.has_text("no PEP") && svg.has_text("PEP"));
    // Log x axis: ticks at the decades, written 1e-N.
    for t in ["1e-4", "1e-3", "1e-2", "1e-1"] {
        assert!(svg.has_text(t), "tick {t}");
    }
}

#[test]
fn histogram_overlays_one_area_and_outline_per_series() {
    let svg = parse_svg(&render_svg_string(&histogram()).unwrap());
    assert_eq!(svg.filled("polygon", 0).len(), 1);
    assert_eq!(svg.filled("polygon", 1).len(), 1);
    assert_eq!(svg.data_polylines(), 2);
    assert!(svg.has_text("count"));
    // Explicit edges: 3 bins -> outline of 2*3 + 2 points.
    let c = Chart::histogram([samples("x", 3)], Bins::Edges(vec![0.0, 10.0, 20.0, 30.0]));
    let svg = parse_svg(&render_svg_string(&c).unwrap());
    assert_eq!(point_count(svg.stroked("polyline", 0)[0]), 8);
    let f = Chart::histogram_fraction([samples("x", 3)], Bins::Count(5));
    assert!(parse_svg(&render_svg_string(&f).unwrap()).has_text("fraction of samples"));
}

#[test]
fn cdf_one_step_line_per_series() {
    let svg = parse_svg(&render_svg_string(&cdf()).unwrap());
    assert_eq!(svg.data_polylines(), 2);
    assert!(svg.has_text("fraction ≤ x"));
    let c = Chart::ccdf([samples("a", 3)]).x_log().y_log();
    let svg = parse_svg(&render_svg_string(&c).unwrap());
    assert_eq!(svg.data_polylines(), 1);
}

#[test]
fn scatter_one_marker_per_point() {
    let svg = parse_svg(&render_svg_string(&scatter()).unwrap());
    assert_eq!(svg.filled("circle", 0).len(), 50 + 1);
    assert_eq!(svg.filled("polygon", 1).len(), 50 + 1);
    assert_eq!(svg.data_polylines(), 0);
}

#[test]
fn time_sequence_shows_each_role() {
    let svg = parse_svg(&render_svg_string(&time_sequence()).unwrap());
    for t in [
        "bulk: sent",
        "bulk: retransmitted",
        "bulk: ACK",
        "bulk: ACK + window",
    ] {
        assert!(svg.has_text(t), "legend entry {t:?}");
    }
    let legend: Vec<_> = svg
        .texts
        .iter()
        .filter(|t| t.text.starts_with("bulk: "))
        .map(|t| t.text.as_str())
        .collect();
    assert_eq!(
        legend,
        [
            "bulk: sent",
            "bulk: retransmitted",
            "bulk: ACK",
            "bulk: ACK + window"
        ]
    );
    // Sent: blue circles (40 + legend). Retransmissions: vermillion crosses,
    // two <line>s each (2 + legend). ACK: one green step line of 2n-1 points.
    assert_eq!(svg.filled("circle", 0).len(), 41);
    assert_eq!(svg.stroked("line", 1).len(), 2 * 3);
    let ack = svg.stroked("polyline", 2);
    assert_eq!(ack.len(), 1);
    assert_eq!(point_count(ack[0]), 2 * 9 - 1);
    assert_eq!(svg.stroked("polyline", 4).len(), 1, "window line");
    // Two flows: one colour each, four entries each.
    let mut other = flow();
    other.name = "web".into();
    let c = Chart::time_sequence([flow(), other]);
    let svg = parse_svg(&render_svg_string(&c).unwrap());
    assert!(svg.has_text("web: ACK") && svg.has_text("bulk: ACK"));
    assert_eq!(svg.stroked("polyline", 0).len(), 2);
    assert_eq!(svg.stroked("polyline", 1).len(), 2);
}

#[test]
fn same_input_gives_identical_bytes() {
    for (name, chart) in all() {
        let a = render_svg_string(&chart).unwrap();
        let b = render_svg_string(&chart.clone()).unwrap();
        assert!(a == b, "{name}: SVG differs between runs");
        let a = render_png_bytes(&chart).unwrap();
        let b = render_png_bytes(&chart).unwrap();
        assert!(a == b, "{name}: PNG differs between runs");
    }
    // Also across threads (the font registry is shared).
    let handles: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(|| render_png_bytes(&histogram()).unwrap()))
        .collect();
    let outs: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(outs[0] == outs[1]);
    // And a different input gives different bytes (the check can fail).
    assert!(render_png_bytes(&lines()).unwrap() != render_png_bytes(&lines().title("x")).unwrap());
}

#[test]
fn non_finite_points_are_skipped_and_counted() {
    let mut s = wave("a", 1.0);
    s.points[3].1 = f64::NAN;
    s.points[7].0 = f64::INFINITY;
    s.points[9].1 = f64::NEG_INFINITY;
    let chart = Chart::lines([s, Series::new("all bad", [(f64::NAN, 1.0)])]);
    let k = chart.skipped().unwrap();
    assert_eq!(k.non_finite, 4);
    assert_eq!(k.empty_series, 1);
    let svg = parse_svg(&render_svg_string(&chart).unwrap());
    assert_eq!(point_count(svg.stroked("polyline", 0)[0]), 197);
    assert!(
        !svg.has_text("all bad"),
        "empty series are left out of the legend"
    );
}

#[test]
fn log_axis_skips_non_positive_points() {
    let s = Series::new("loss", [(0.0, 1.0), (-1e-3, 2.0), (1e-4, 3.0), (1e-2, 4.0)]);
    let chart = Chart::lines([s]).x_log();
    assert_eq!(chart.skipped().unwrap().non_positive, 2);
    let svg = parse_svg(&render_svg_string(&chart).unwrap());
    assert_eq!(point_count(svg.stroked("polyline", 0)[0]), 2);

    let zeros = Chart::lines([Series::new("z", [(1.0, 0.0), (2.0, -1.0)])]).y_log();
    let err = render_svg_string(&zeros).unwrap_err();
    assert!(matches!(err, PlotError::NoData { .. }), "{err}");
    assert!(err.to_string().contains("2 non-positive"), "{err}");
}

#[test]
fn log_y_error_bars_keep_points_whose_interval_reaches_zero() {
    // Two seeds: a wide t interval with a negative lower bound.
    let two_seeds = CiSeries::new(
        "two seeds",
        [
            CiPoint::new(1.0, 1.666, -3.7, 7.03),
            CiPoint::new(2.0, 2.092, -4.0, 8.18),
        ],
    );
    let tight = CiSeries::new(
        "tight",
        [
            CiPoint::new(1.0, 3.0, 2.5, 3.5),
            CiPoint::new(2.0, 4.0, 3.5, 4.5),
            CiPoint::new(3.0, -1.0, -2.0, 0.5),
        ],
    );
    let chart = Chart::error_bars([two_seeds, tight]).y_log();
    let k = chart.skipped().unwrap();
    assert_eq!((k.non_positive, k.open_bars, k.empty_series), (1, 2, 0));
    assert_eq!(
        k.notes(),
        [
            "1 point with a zero or negative value on a log axis is not drawn",
            "2 error bars reach zero or below: drawn down to the bottom of the log axis, without a cap",
        ]
    );
    let svg = parse_svg(&render_svg_string(&chart).unwrap());
    assert!(
        svg.has_text("two seeds"),
        "the series keeps its legend entry"
    );
    let line0 = svg.stroked("polyline", 0);
    assert_eq!(line0.len(), 1);
    assert_eq!(point_count(line0[0]), 2, "both means are drawn");
    // Open bars: the stem and the upper cap only; capped bars: three lines.
    assert_eq!(svg.stroked("line", 0).len(), 2 * 2);
    assert_eq!(svg.stroked("line", 1).len(), 2 * 3);
    assert_eq!(point_count(svg.stroked("polyline", 1)[0]), 2);
    assert!(render_png_bytes(&chart).is_ok());
    // Nothing left out, nothing to say.
    assert!(error_bars().skipped().unwrap().notes().is_empty());
}

#[test]
fn empty_data_is_a_clear_error() {
    let err = render_png_bytes(&Chart::lines([]).title("Goodput")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "nothing to plot in chart 'Goodput': no series"
    );
    let err = render_svg_string(&Chart::cdf([Samples::new("a", [])])).unwrap_err();
    assert!(matches!(err, PlotError::NoData { .. }), "{err}");
    let err = render_svg_string(&Chart::histogram(
        [Samples::new("a", [f64::NAN])],
        Bins::Auto,
    ))
    .unwrap_err();
    assert!(err.to_string().contains("1 NaN/inf"), "{err}");
    let err = render_svg_string(&Chart::time_sequence([FlowTrace::new("f")])).unwrap_err();
    assert!(matches!(err, PlotError::NoData { .. }), "{err}");
}

#[test]
fn invalid_specs_are_errors() {
    let invalid = |c: Chart| match render_svg_string(&c) {
        Err(PlotError::Invalid { reason, .. }) => reason,
        other => panic!("expected Invalid, got {other:?}"),
    };
    let r = invalid(Chart::histogram(
        [samples("a", 1)],
        Bins::Edges(vec![0.0, 5.0, 5.0]),
    ));
    assert!(r.contains("strictly increasing"), "{r}");
    let r = invalid(Chart::error_bars([CiSeries::new(
        "a",
        [CiPoint::new(1.0, 2.0, 3.0, 1.0)],
    )]));
    assert!(r.contains("lo 3 > hi 1"), "{r}");
    assert!(invalid(lines().x_range(5.0, 5.0)).contains("x range"));
    assert!(invalid(lines().y_log().y_range(0.0, 1.0)).contains("log axis"));
    assert!(invalid(lines().size(100, 100)).contains("size"));
    assert!(invalid(histogram().y_log()).contains("CCDF"));
}

#[test]
fn fixed_ranges_clip_the_data() {
    // The wave leaves [0, 1.5] in y several times: the line splits in runs.
    let chart = Chart::lines([wave("a", 1.0)])
        .y_range(0.0, 1.5)
        .x_range(1.0, 9.0);
    let svg = parse_svg(&render_svg_string(&chart).unwrap());
    assert!(svg.data_polylines() >= 2, "clipping split the line");
    assert_eq!(
        chart.skipped().unwrap().points(),
        0,
        "clipping is not skipping"
    );
}

#[test]
fn x_tick_labels_do_not_overlap() {
    // Long labels ("0.00035") on narrow charts.
    let s = Series::new("a", [(0.0, 1.0), (0.000_37, 2.0)]);
    for w in [250, 400, 900] {
        let svg = parse_svg(&render_svg_string(&Chart::lines([s.clone()]).size(w, 300)).unwrap());
        // x tick labels: centred, unrotated, all on the lowest common row.
        let mut ticks: Vec<_> = svg
            .texts
            .iter()
            .filter(|t| t.anchor == "middle" && !t.rotated && !t.text.is_empty())
            .filter(|t| t.y > 150.0 && t.text.chars().any(|c| c.is_ascii_digit()))
            .collect();
        ticks.sort_by(|a, b| a.x.total_cmp(&b.x));
        assert!(ticks.len() >= 2, "width {w}: {} ticks", ticks.len());
        for p in ticks.windows(2) {
            // DejaVu Sans digits are 0.64 em wide; labels are 12.1 px.
            let half = |t: &common::TextEl| t.text.chars().count() as f64 * 0.64 * 12.1 / 2.0;
            assert!(
                p[1].x - p[0].x > half(p[0]) + half(p[1]),
                "width {w}: '{}' and '{}' overlap",
                p[0].text,
                p[1].text
            );
        }
    }
}

#[test]
fn render_picks_the_format_from_the_extension() {
    let dir = std::env::temp_dir().join(format!("pep-plot-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let chart = lines();
    render(&chart, dir.join("a.svg")).unwrap();
    render(&chart, dir.join("a.PNG")).unwrap();
    let svg = std::fs::read_to_string(dir.join("a.svg")).unwrap();
    assert_eq!(svg, render_svg_string(&chart).unwrap());
    let png = std::fs::read(dir.join("a.PNG")).unwrap();
    assert_eq!(png, render_png_bytes(&chart).unwrap());
    let err = render(&chart, dir.join("a.jpg")).unwrap_err();
    assert!(err.to_string().contains("use a .png or .svg"), "{err}");
    let err = render(&chart, dir.join("missing/a.svg")).unwrap_err();
    assert!(err.to_string().contains("missing/a.svg"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn data_too_wide_for_a_float_axis_is_an_error_not_a_hang() {
    // ±1e308: the padded axis range (and its width) overflows to inf.
    let invalid = |c: Chart| match render_svg_string(&c) {
        Err(PlotError::Invalid { reason, .. }) => reason,
        other => panic!("expected Invalid, got {other:?}"),
    };
    let wide = Series::new("f", [(1.0, 1e308), (2.0, -1e308)]);
    let r = invalid(Chart::lines([wide.clone()]));
    assert!(r.starts_with("y axis: the data span -1e308..1e308"), "{r}");
    assert!(r.contains("too wide to draw"), "{r}");
    let r = invalid(Chart::scatter([Series::new(
        "f",
        [(-1e308, 1.0), (1e308, 2.0)],
    )]));
    assert!(r.starts_with("x axis:"), "{r}");
    // One huge value alone: the padding overflows.
    let r = invalid(Chart::lines([Series::new(
        "f",
        [(1.0, 0.0), (2.0, f64::MAX)],
    )]));
    assert!(r.starts_with("y axis:"), "{r}");
    let r = invalid(Chart::histogram(
        [Samples::new("a", [1e308, -1e308])],
        Bins::Auto,
    ));
    assert!(r.starts_with("x axis:"), "{r}");
    let r = invalid(Chart::cdf([Samples::new("a", [1e308, -1e308])]));
    assert!(r.starts_with("x axis:"), "{r}");
    // A fixed range whose width overflows is refused too.
    assert!(invalid(lines().y_range(-1e308, 1e308)).contains("y range"));
    // Wide but drawable data still renders.
    render_svg_string(&Chart::lines([Series::new(
        "f",
        [(1.0, 1e300), (2.0, -1e300)],
    )]))
    .unwrap();
}
