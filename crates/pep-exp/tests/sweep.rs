//! Sweeps end to end: a grid of 2 x 3 values x 3 seeds and its 18 rows, resuming after an
//! interruption, the aggregate against an independent computation, byte
//! identical tables whatever the number of jobs, and the plots.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use pep_exp::{plots, sweep, Experiment, Mode, Outcome, Results, SweepConfig};

const BASE: &str = r#"
[scenario]
name = "two"
duration = "4s"
[defaults.tcp]
mss = "1000B"
init_cwnd = 4
[defaults.sink]
rwnd = "200000B"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "10Mbps"
delay = "10ms"
queue = { limit = 50 }
[link.forward]
loss = { kind = "bernoulli", p = 0.002 }
[[flow]]
name = "f"
from = "a"
to = "b"
[output]
series = ["goodput", "queues"]
"#;

const EXPERIMENT: &str = r#"
[experiment]
name = "grid"
base = "base.toml"
seeds = 3
measures = ["flow.f.goodput_mbps", "link.a->b.utilisation", "flow.f.retransmitted_segments"]

[vary]
"link[a-b].rate" = ["5Mbps", "20Mbps"]
"link[0].forward.loss.p" = [0.001, 0.002, 0.01]

[[plot]]
name = "goodput"
kind = "measure"
x = "link[0].forward.loss.p"
y = "flow.f.goodput_mbps"
series = "link[a-b].rate"
x_log = true

[[plot]]
name = "queue"
kind = "over_time"
csv = "queues"
select = "a->b"

[[plot]]
name = "cdf"
kind = "cdf"
y = "flow.f.goodput_mbps"
series = "link[a-b].rate"

[[plot]]
name = "scatter"
kind = "scatter"
x = "link.a->b.utilisation"
y = "flow.f.goodput_mbps"

[[plot]]
name = "hist"
kind = "histogram"
y = "flow.f.retransmitted_segments"
"#;

fn setup(dir: &Path, experiment: &str) -> Experiment {
    std::fs::write(dir.join("base.toml"), BASE).unwrap();
    std::fs::write(dir.join("grid.toml"), experiment).unwrap();
    Experiment::load(&dir.join("grid.toml")).unwrap_or_else(|e| panic!("{e}"))
}

/// A full-mode sweep into `out`, stopped by `cancel` if given.
fn config<'a>(out: &Path, jobs: usize, cancel: Option<&'a AtomicBool>) -> SweepConfig<'a> {
    SweepConfig {
        out: out.to_path_buf(),
        jobs,
        mode: Mode::Full,
        fresh: false,
        cancel,
    }
}

fn run(exp: &Experiment, out: &Path, jobs: usize, cancel: Option<(&AtomicBool, usize)>) -> Outcome {
    let cfg = config(out, jobs, cancel.map(|c| c.0));
    sweep(exp, &cfg, &mut |p| {
        if let Some((flag, after)) = cancel {
            if p.done - p.reused >= after {
                flag.store(true, Ordering::Relaxed);
            }
        }
    })
    .unwrap()
}

fn csv(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(String::from).collect())
        .collect()
}

fn records(out: &Path) -> BTreeMap<PathBuf, (String, std::time::SystemTime)> {
    std::fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let m = std::fs::metadata(&p).unwrap().modified().unwrap();
            (p.clone(), (std::fs::read_to_string(&p).unwrap(), m))
        })
        .collect()
}

#[test]
fn grid_gives_one_row_per_point_and_seed() {
    let dir = tempfile::tempdir().unwrap();
    let exp = setup(dir.path(), EXPERIMENT);
    let out = dir.path().join("out");
    let o = run(&exp, &out, 2, None);
    assert_eq!((o.total, o.ran, o.reused), (18, 18, 0));
    // sweep.json names the build whose records these are.
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(info["pep_build"], pep_exp::runner::build_identity());
    let rows = csv(&out.join("results.csv"));
    assert_eq!(
        rows[0],
        [
            "point",
            "seed",
            "link[a-b].rate",
            "link[0].forward.loss.p",
            "flow.f.goodput_mbps",
            "link.a->b.utilisation",
            "flow.f.retransmitted_segments"
        ]
    );
    assert_eq!(rows.len(), 1 + 18);
    // Last key fastest, seeds innermost.
    let mut i = 1;
    for (pi, rate) in ["5Mbps", "20Mbps"].iter().enumerate() {
        for (pj, p) in ["0.001", "0.002", "0.01"].iter().enumerate() {
            for seed in 1..=3 {
                let r = &rows[i];
                assert_eq!(r[0], format!("p{:03}", pi * 3 + pj));
                assert_eq!(
                    (r[1].as_str(), &r[2], &r[3]),
                    (&*seed.to_string(), &rate.to_string(), &p.to_string())
                );
                i += 1;
            }
        }
    }
    // The parameters reached the simulation: goodput is below each rate,
    // and random loss makes seeds differ.
    for r in &rows[1..] {
        let rate: f64 = r[2].trim_end_matches("Mbps").parse().unwrap();
        let g: f64 = r[4].parse().unwrap();
        assert!(g > 0.0 && g < rate, "{r:?}");
    }
    assert_ne!(rows[1][4], rows[2][4]);
}

#[test]
fn interrupted_sweep_resumes_with_only_the_missing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let exp = setup(dir.path(), EXPERIMENT);
    let out = dir.path().join("out");
    let stop = AtomicBool::new(false);
    let first = run(&exp, &out, 1, Some((&stop, 5)));
    assert!(first.cancelled && first.results.is_none());
    assert!(!out.join("results.csv").exists());
    let before = records(&out);
    assert!((5..18).contains(&before.len()), "{}", before.len());
    assert_eq!(first.ran, before.len());

    let second = run(&exp, &out, 2, None);
    assert_eq!(second.reused, before.len());
    assert_eq!(second.ran, 18 - before.len());
    let after = records(&out);
    assert_eq!(after.len(), 18);
    for (p, rec) in &before {
        assert_eq!(&after[p], rec, "{} was rewritten", p.display());
    }
    // A rerun of a finished sweep runs nothing and writes the same tables.
    let table = std::fs::read(out.join("results.csv")).unwrap();
    let third = run(&exp, &out, 2, None);
    assert_eq!((third.ran, third.reused), (0, 18));
    assert_eq!(std::fs::read(out.join("results.csv")).unwrap(), table);

    // Changing the experiment's definition makes old records stale.
    let changed = EXPERIMENT.replace("[vary]", "[set]\n\"scenario.duration\" = \"3s\"\n[vary]");
    let exp2 = setup(dir.path(), &changed);
    let fourth = run(&exp2, &out, 2, None);
    assert_eq!((fourth.ran, fourth.reused), (18, 0));
}

#[test]
fn tables_are_identical_whatever_the_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let exp = setup(dir.path(), EXPERIMENT);
    let (one, two) = (dir.path().join("j1"), dir.path().join("j2"));
    run(&exp, &one, 1, None);
    run(&exp, &two, 2, None);
    for f in ["results.csv", "aggregate.csv"] {
        assert_eq!(
            std::fs::read(one.join(f)).unwrap(),
            std::fs::read(two.join(f)).unwrap(),
            "{f}"
        );
    }
}

/// Student t, 0.975 quantile, for 2 degrees of freedom (3 seeds).
const T_2: f64 = 4.302_652_729_911_275;

#[test]
fn aggregate_matches_an_independent_computation() {
    let dir = tempfile::tempdir().unwrap();
    let exp = setup(dir.path(), EXPERIMENT);
    let out = dir.path().join("out");
    run(&exp, &out, 2, None);
    let rows = csv(&out.join("results.csv"));
    let agg = csv(&out.join("aggregate.csv"));
    assert_eq!(
        agg[0],
        [
            "point",
            "link[a-b].rate",
            "link[0].forward.loss.p",
            "measure",
            "n",
            "mean",
            "sd",
            "ci95_lo",
            "ci95_hi"
        ]
    );
    assert_eq!(agg.len(), 1 + 6 * 3);
    let measures = &rows[0][4..];
    for a in &agg[1..] {
        let m = measures.iter().position(|x| *x == a[3]).unwrap();
        let xs: Vec<f64> = rows[1..]
            .iter()
            .filter(|r| r[0] == a[0])
            .map(|r| r[4 + m].parse().unwrap())
            .collect();
        assert_eq!(xs.len(), 3);
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        let half = T_2 * sd / n.sqrt();
        let got: Vec<f64> = a[5..9].iter().map(|c| c.parse().unwrap()).collect();
        let close = |x: f64, y: f64, tol: f64| (x - y).abs() <= tol * y.abs().max(1e-9);
        assert_eq!(a[4], "3");
        assert!(close(got[0], mean, 1e-12), "{a:?} mean {mean}");
        assert!(close(got[1], sd, 1e-9), "{a:?} sd {sd}");
        // pep-plot's t table has three decimals (4.303).
        assert!(close(got[2] - mean, -half, 2e-4) || sd == 0.0, "{a:?} lo");
        assert!(close(got[3] - mean, half, 2e-4) || sd == 0.0, "{a:?} hi");
    }
}

fn palette_polylines(svg: &str) -> usize {
    let colours: Vec<String> = pep_plot::PALETTE
        .iter()
        .map(|c| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2))
        .collect();
    let doc = roxmltree::Document::parse(svg).expect("SVG parses as XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.tag_name().name() == "polyline")
        .filter(|n| {
            n.attribute("stroke")
                .is_some_and(|s| colours.iter().any(|c| c.eq_ignore_ascii_case(s)))
        })
        .count()
}

fn texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| n.tag_name().name() == "text")
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .collect()
}

fn check_png(path: &Path) {
    let b = std::fs::read(path).unwrap();
    assert!(b.len() > 1000, "{} is tiny", path.display());
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "{}", path.display());
    assert_eq!(&b[12..16], b"IHDR");
    let w = u32::from_be_bytes([b[16], b[17], b[18], b[19]]);
    let h = u32::from_be_bytes([b[20], b[21], b[22], b[23]]);
    assert_eq!((w, h), (900, 540));
}

#[test]
fn sweep_plots_have_the_expected_series() {
    let dir = tempfile::tempdir().unwrap();
    let exp = setup(dir.path(), EXPERIMENT);
    let out = dir.path().join("out");
    let o = run(&exp, &out, 2, None);
    let r = o.results.unwrap();
    let charts = plots::sweep_charts(&exp.plots, &r, &out).unwrap();
    let files = plots::write(&charts, &out.join("plots")).unwrap();
    assert_eq!(files.len(), 10);
    let svg =
        |n: &str| std::fs::read_to_string(out.join("plots").join(format!("{n}.svg"))).unwrap();
    for n in ["goodput", "queue", "cdf", "scatter", "hist"] {
        check_png(&out.join("plots").join(format!("{n}.png")));
    }
    // Measure vs parameter: one mean line per rate, named by the rate.
    let g = svg("goodput");
    assert_eq!(palette_polylines(&g), 2);
    let t = texts(&g);
    for name in ["5Mbps", "20Mbps", "flow.f.goodput_mbps (Mbit/s)"] {
        assert!(t.iter().any(|x| x == name), "{name} not in {t:?}");
    }
    // Over time: one line per point (6), from the kept per-point series.
    assert_eq!(palette_polylines(&svg("queue")), 6);
    assert!(texts(&svg("queue"))
        .iter()
        .any(|x| x == "queue length (packets)"));
    // CDF: one step line per rate.
    assert_eq!(palette_polylines(&svg("cdf")), 2);
}

#[test]
fn a_damaged_results_file_is_named_with_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let exp = setup(dir.path(), EXPERIMENT);
    let out = dir.path().join("out");
    run(&exp, &out, 2, None);
    let path = out.join("results.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(Results::load(&out, &exp).is_ok());
    // Cut off after the second cell of its second data row (line 3).
    let row = text.match_indices('\n').nth(1).unwrap().0 + 1;
    let cut = row + text[row..].match_indices(',').nth(1).unwrap().0;
    std::fs::write(&path, &text[..cut]).unwrap();
    let e = Results::load(&out, &exp).unwrap_err();
    assert!(e.contains("results.csv:3: "), "{e}");
    assert!(e.contains("cells, but the header has"), "{e}");
    assert!(e.contains("a truncated file?"), "{e}");
    // A measure that is not a number is named by its column.
    let head = text.lines().next().unwrap();
    let measure = head.rsplit(',').next().unwrap();
    let mut rows: Vec<String> = text.lines().map(String::from).collect();
    let mut cells: Vec<&str> = rows[1].split(',').collect();
    *cells.last_mut().unwrap() = "oops";
    rows[1] = cells.join(",");
    std::fs::write(&path, rows.join("\n")).unwrap();
    let e = Results::load(&out, &exp).unwrap_err();
    assert!(
        e.contains(&format!(
            "results.csv:2: column '{measure}': cannot read \"oops\" as a number"
        )),
        "{e}"
    );
}

#[test]
fn run_directory_plots() {
    let dir = tempfile::tempdir().unwrap();
    let exp = setup(dir.path(), EXPERIMENT);
    let out = dir.path().join("out");
    run(&exp, &out, 2, None);
    let charts = plots::run_charts(&out.join("points/p000"), &[]).unwrap();
    let names: Vec<&str> = charts.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["goodput", "queue_cdf", "queues"]);
    let svg = pep_plot::render_svg_string(&charts[0].chart).unwrap();
    assert_eq!(palette_polylines(&svg), 1, "one flow");
    let e = plots::run_charts(&out.join("points/p000"), &["bogus".into()]).unwrap_err();
    assert!(
        e.starts_with("unknown plot kind \"bogus\"; kinds are: goodput,"),
        "{e}"
    );
}

/// A 2 x `loss` grid, 2 seeds, outputs kept (`points/<id>/`).
fn renumbered(loss: &str) -> String {
    format!(
        r#"
[experiment]
name = "grid"
base = "base.toml"
seeds = 2
outputs = true
measures = ["flow.f.goodput_mbps", "flow.f.retransmitted_segments"]

[set]
"scenario.duration" = "2s"

[vary]
"link[a-b].rate" = ["5Mbps", "20Mbps"]
"link[0].forward.loss.p" = {loss}
"#
    )
}

/// Every file under `dir`, by path relative to it, with its bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Every file a fresh sweep of `experiment` writes (but `sweep.json`, the
/// wall time) is in `out` with the same bytes: tables, records (their point
/// ids too) and the kept outputs.
fn same_as_fresh(dir: &Path, experiment: &str, out: &Path) {
    let fresh = dir.join(format!("fresh-{}", experiment.len()));
    let exp = setup(dir, experiment);
    let o = run(&exp, &fresh, 2, None);
    assert_eq!(o.reused, 0);
    let got = tree(out);
    let want = tree(&fresh);
    assert!(want.contains_key(Path::new("points/p000/goodput.csv")));
    for (p, bytes) in want.iter().filter(|(p, _)| *p != Path::new("sweep.json")) {
        let g = got
            .get(p)
            .unwrap_or_else(|| panic!("{} missing", p.display()));
        assert!(g == bytes, "{} differs from a fresh sweep's", p.display());
    }
    // No staging directory is left behind.
    assert!(got
        .keys()
        .all(|p| !p.to_string_lossy().contains(".moving-")));
    std::fs::remove_dir_all(fresh).unwrap();
}

#[test]
fn a_value_inserted_mid_list_runs_only_the_new_point() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let sweep_of = |loss: &str| run(&setup(dir.path(), &renumbered(loss)), &out, 2, None);
    let o = sweep_of("[0.001, 0.002, 0.01]");
    assert_eq!((o.total, o.reused, o.ran), (12, 0, 12));

    // p001..p005 become p002, p003, p005, p006, p007: only the two new
    // points (0.0015 at each rate) run, 2 seeds each.
    let inserted = "[0.001, 0.0015, 0.002, 0.01]";
    let o = sweep_of(inserted);
    assert_eq!((o.total, o.reused, o.ran), (16, 12, 4));
    same_as_fresh(dir.path(), &renumbered(inserted), &out);

    // Back again: nothing runs.
    let o = sweep_of("[0.001, 0.002, 0.01]");
    assert_eq!((o.total, o.reused, o.ran), (12, 12, 0));
    same_as_fresh(dir.path(), &renumbered("[0.001, 0.002, 0.01]"), &out);

    // Reversed: the ids are swapped (p000 <-> p002, ...), outputs included.
    let reversed = "[0.01, 0.002, 0.001]";
    let o = sweep_of(reversed);
    assert_eq!((o.total, o.reused, o.ran), (12, 12, 0));
    same_as_fresh(dir.path(), &renumbered(reversed), &out);

    // A value removed: the later points move down, nothing runs.
    let removed = "[0.01, 0.001]";
    let o = sweep_of(removed);
    assert_eq!((o.total, o.reused, o.ran), (8, 8, 0));
    same_as_fresh(dir.path(), &renumbered(removed), &out);
}

#[test]
fn a_renumbering_stopped_halfway_loses_no_record() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let list = renumbered("[0.001, 0.002, 0.01]");
    let exp = setup(dir.path(), &list);
    run(&exp, &out, 2, None);
    // What a renumbering stopped midway leaves: a record under its staging
    // name, an outputs directory no record vouches for.
    let runs = out.join("runs");
    std::fs::rename(runs.join("p004-s2.json"), runs.join(".moving-0.json")).unwrap();
    std::fs::create_dir_all(out.join("points/.moving-p004")).unwrap();
    std::fs::write(out.join("points/.moving-p004/goodput.csv"), "junk").unwrap();
    let o = run(&exp, &out, 2, None);
    assert_eq!((o.total, o.reused, o.ran), (12, 12, 0));
    same_as_fresh(dir.path(), &list, &out);
    assert!(!runs.join(".moving-0.json").exists());
    assert!(!out.join("points/.moving-p004").exists());
}

/// A sweep into a directory holding another experiment's sweep is refused
/// before it touches a record (it used to overwrite some of them and
/// leave the rest beside its own).
#[test]
fn another_experiments_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let exp = setup(dir.path(), EXPERIMENT);
    let out = dir.path().join("out");
    let first = run(&exp, &out, 2, None);
    let before = records(&out);
    let other = setup(
        dir.path(),
        &EXPERIMENT.replace("name = \"grid\"", "name = \"other\""),
    );
    let e = sweep(&other, &config(&out, 1, None), &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("holds the sweep of another experiment, \"grid\"") && e.contains("\"other\""),
        "{e}"
    );
    assert_eq!(records(&out), before);
    // Its own experiment still resumes there.
    let again = run(&exp, &out, 2, None);
    assert_eq!(again.reused, first.total);
}

/// `sweep.json` says what ran: short mode on an experiment without a
/// `[short]` table runs it as written, the full sweep's records reused.
#[test]
fn short_mode_without_a_short_table_is_recorded_as_full() {
    let dir = tempfile::tempdir().unwrap();
    let text = "[experiment]\nname = \"grid\"\nbase = \"base.toml\"\n\
                measures = [\"flow.f.goodput_mbps\"]\n\
                [set]\n\"scenario.duration\" = \"200ms\"\n";
    let mode_of = |exp: &Experiment, mode: Mode| {
        let out = dir.path().join("out");
        let cfg = SweepConfig {
            mode,
            ..config(&out, 1, None)
        };
        let o = sweep(exp, &cfg, &mut |_| {}).unwrap();
        let info: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap())
                .unwrap();
        (info["mode"].as_str().unwrap().to_string(), o.reused)
    };
    let plain = setup(dir.path(), text);
    assert!(!plain.has_short());
    assert_eq!(mode_of(&plain, Mode::Full), ("full".into(), 0));
    assert_eq!(mode_of(&plain, Mode::Short), ("full".into(), 1));
    let short = setup(dir.path(), &format!("{text}[short]\nseeds = [2]\n"));
    assert!(short.has_short());
    assert_eq!(mode_of(&short, Mode::Short), ("short".into(), 0));
}
