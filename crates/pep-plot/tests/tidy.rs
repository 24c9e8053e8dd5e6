//! The tidy CSV loader: grouping, empty cells, and error messages that name
//! the file, line and column.

use crate::common;

use pep_plot::tidy::{load, Table};
use pep_plot::{render_svg_string, Chart, PlotError};

/// Shaped like the simulator's goodput.csv (docs/simulator.md).
const GOODPUT: &str = "time_s,flow,bytes,goodput_mbps
0.5,bulk,62500,1
0.5,web,0,0
1,bulk,125000,2
1,web,12500,0.2
1.5,web,25000,0.4
1.5,bulk,250000,4
";

/// Shaped like cwnd.csv: ssthresh is empty while unset.
const CWND: &str = "time_s,flow,cwnd_bytes,ssthresh_bytes
0.1,bulk,14600,
0.2,bulk,29200,
0.3,bulk,14600,14600
";

#[test]
fn groups_in_first_appearance_order_with_points_in_row_order() {
    let t = Table::parse("goodput.csv", GOODPUT).unwrap();
    assert_eq!(t.len(), 6);
    assert_eq!(t.columns(), ["time_s", "flow", "bytes", "goodput_mbps"]);
    let s = t.series_by("flow", "time_s", "goodput_mbps").unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].name, "bulk");
    assert_eq!(s[0].points, vec![(0.5, 1.0), (1.0, 2.0), (1.5, 4.0)]);
    assert_eq!(s[1].name, "web");
    assert_eq!(s[1].points, vec![(0.5, 0.0), (1.0, 0.2), (1.5, 0.4)]);
    let by = t.samples_by("flow", "bytes").unwrap();
    assert_eq!(by[1].values, vec![0.0, 12500.0, 25000.0]);
    assert_eq!(t.samples("all", "bytes").unwrap().values.len(), 6);
    assert_eq!(t.series("all", "time_s", "bytes").unwrap().points.len(), 6);
}

#[test]
fn empty_cells_are_left_out() {
    let t = Table::parse("cwnd.csv", CWND).unwrap();
    let s = t.series_by("flow", "time_s", "ssthresh_bytes").unwrap();
    assert_eq!(s[0].points, vec![(0.3, 14600.0)]);
    assert_eq!(
        t.numbers("ssthresh_bytes").unwrap(),
        vec![None, None, Some(14600.0)]
    );
}

#[test]
fn missing_column_names_file_column_and_columns() {
    let t = Table::parse("goodput.csv", GOODPUT).unwrap();
    let err = t.series_by("flow", "time_s", "goodput").unwrap_err();
    assert_eq!(
        err.to_string(),
        "goodput.csv: no column 'goodput'; columns are: time_s, flow, bytes, goodput_mbps"
    );
    let err = t.series_by("link", "time_s", "bytes").unwrap_err();
    assert!(err.to_string().contains("no column 'link'"), "{err}");
}

#[test]
fn empty_and_header_only_files_are_errors() {
    let err = Table::parse("queues.csv", "").unwrap_err();
    assert_eq!(err.to_string(), "queues.csv: empty file (no header row)");
    let err = Table::parse("queues.csv", "\n  \n").unwrap_err();
    assert!(matches!(err, PlotError::EmptyFile { .. }));
    let err = Table::parse("queues.csv", "time_s,link,packets,bytes\n").unwrap_err();
    assert_eq!(err.to_string(), "queues.csv: no data rows under the header");
}

#[test]
fn malformed_rows_name_the_line() {
    let err = Table::parse("links.csv", "a,b\n1,2\n3\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "links.csv:3: 1 cells, but the header has 2 columns"
    );
    let t = Table::parse("links.csv", "a,b\n1,2\n\n3,x\n").unwrap();
    let err = t.series("s", "a", "b").unwrap_err();
    assert_eq!(
        err.to_string(),
        "links.csv:4: column 'b': cannot read 'x' as a number"
    );
    // NaN and inf parse; the chart skips and counts them.
    let t = Table::parse("x.csv", "a,b\r\n1,nan\r\n2,inf\r\n3,4\r\n").unwrap();
    let chart = Chart::lines([t.series("s", "a", "b").unwrap()]);
    assert_eq!(chart.skipped().unwrap().non_finite, 2);
}

#[test]
fn quoted_cells_and_byte_order_mark() {
    let t = Table::parse(
        "l.csv",
        "\u{feff}link,bytes\n\"a->b, fwd\",3\n\"say \"\"hi\"\"\",4\n",
    )
    .unwrap();
    assert_eq!(t.text("link").unwrap(), ["a->b, fwd", "say \"hi\""]);
}

#[test]
fn load_reads_a_file_and_names_missing_ones() {
    let dir = std::env::temp_dir().join(format!("pep-plot-tidy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("goodput.csv");
    std::fs::write(&path, GOODPUT).unwrap();
    let t = load(&path).unwrap();
    assert_eq!(t.name(), path.display().to_string());
    let err = t.series_by("flow", "time_s", "nope").unwrap_err();
    assert!(err
        .to_string()
        .starts_with(&format!("{}: no column 'nope'", path.display())));
    // Loaded straight into a chart: one line per flow.
    let chart = Chart::lines(t.series_by("flow", "time_s", "goodput_mbps").unwrap());
    let svg = common::parse_svg(&render_svg_string(&chart).unwrap());
    assert_eq!(svg.data_polylines(), 2);
    assert!(svg.has_text("bulk") && svg.has_text("web"));

    let missing = dir.join("nope.csv");
    let err = load(&missing).unwrap_err();
    assert!(
        err.to_string().starts_with(&missing.display().to_string()),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Quotes a cell as pep-exp's results.csv writer does (RFC 4180).
fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[test]
fn quoted_newlines_and_quotes_round_trip() {
    // A sweep varying `scenario.description` writes cells like these.
    let descriptions = ["first\nsecond", "plain, with comma \"q\"", "last"];
    let mut csv = String::from("point,seed,scenario.description,goodput_mbps\n");
    for (i, d) in descriptions.iter().enumerate() {
        csv += &format!("p{i},1,{},{}\n", quote(d), i + 1);
    }
    let t = Table::parse("results.csv", &csv).unwrap();
    assert_eq!(t.len(), 3);
    assert_eq!(t.text("scenario.description").unwrap(), descriptions);
    assert_eq!(
        t.numbers("goodput_mbps").unwrap(),
        [Some(1.0), Some(2.0), Some(3.0)]
    );
    // Errors name the line a record starts on, after a multi-line record.
    let err = Table::parse("results.csv", &(csv.clone() + "p3,1,\"a\nb\",x\n"))
        .unwrap()
        .numbers("goodput_mbps")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "results.csv:6: column 'goodput_mbps': cannot read 'x' as a number"
    );
    let err = Table::parse("results.csv", &(csv + "p3,\"1\n\"\n")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "results.csv:6: 2 cells, but the header has 4 columns"
    );
}
