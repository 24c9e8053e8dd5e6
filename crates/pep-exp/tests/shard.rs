//! Sweeps in shards: shards run in any order, one of them twice, then
//! merged, give the tables of one sweep byte for byte; a shard killed
//! part way runs only its missing tasks when run again.

use std::path::Path;

use pep_exp::shard::{self, Shard};
use pep_exp::{sweep, Experiment, Mode, SweepConfig};

/// 6 points x 2 seeds: the files python/tests use too.
fn experiment() -> Experiment {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/shards/shards.toml");
    Experiment::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn shards_in_any_order_then_merge_equal_one_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = experiment();
    let whole = tmp.path().join("whole");
    let cfg = SweepConfig {
        out: whole.clone(),
        jobs: 2,
        mode: Mode::Full,
        fresh: false,
        cancel: None,
    };
    let outcome = sweep(&exp, &cfg, &mut |_| {}).unwrap();
    assert_eq!(outcome.total, 12);

    let dir = tmp.path().join("pieces");
    let plan = shard::plan(&exp, Mode::Full, &dir).unwrap();
    assert_eq!(plan.tasks.len(), 12);
    assert!(shard::merge(&dir)
        .unwrap_err()
        .contains("12 of 12 runs have no record"));
    let mut ran = 0;
    // 3 shards of 4 tasks: 3, 1, 3 again (nothing left to run), 2.
    for (i, again) in [(3, false), (1, false), (3, true), (2, false)] {
        let o = shard::run_shard(&dir, Shard { index: i, count: 3 }, 2, None).unwrap();
        assert!(o.failures.is_empty(), "{:?}", o.failures);
        assert_eq!(o.total, 4);
        assert_eq!((o.ran, o.reused), if again { (0, 4) } else { (4, 0) });
        ran += o.ran;
        if i == 1 {
            assert!(shard::merge(&dir)
                .unwrap_err()
                .contains("4 of 12 runs have no record"));
        }
    }
    assert_eq!(ran, 12);
    shard::merge(&dir).unwrap();
    for name in ["results.csv", "aggregate.csv"] {
        assert_eq!(read(&dir, name), read(&whole, name), "{name}");
    }
    // The first seed's series, which over_time plots read, are there too.
    for p in &exp.points {
        let q = format!("points/{}/queues.csv", p.id);
        assert_eq!(read(&dir, &q), read(&whole, &q), "{q}");
    }
}

#[test]
fn a_killed_shard_runs_only_its_missing_tasks_again() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = experiment();
    let dir = tmp.path().join("pieces");
    shard::plan(&exp, Mode::Full, &dir).unwrap();
    let whole = Shard { index: 1, count: 1 };
    assert_eq!(shard::run_shard(&dir, whole, 2, None).unwrap().ran, 12);
    // What a kill leaves: some records written, the rest missing, one
    // half-written temporary file.
    let runs = dir.join("runs");
    let mut records: Vec<_> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    records.sort();
    for r in records.iter().step_by(3) {
        std::fs::remove_file(r).unwrap();
    }
    std::fs::write(runs.join("p1-s1.tmp4242"), "{\"key\":").unwrap();
    let kept: Vec<(std::path::PathBuf, String)> = records
        .iter()
        .filter(|r| r.exists())
        .map(|r| (r.clone(), std::fs::read_to_string(r).unwrap()))
        .collect();
    let stamp = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
    let before: Vec<_> = kept.iter().map(|(p, _)| stamp(p)).collect();
    assert_eq!(shard::missing(&dir).unwrap().len(), 4);

    let again = shard::run_shard(&dir, whole, 2, None).unwrap();
    assert_eq!((again.reused, again.ran), (8, 4));
    assert!(shard::missing(&dir).unwrap().is_empty());
    for ((p, text), t) in kept.iter().zip(before) {
        assert_eq!(&std::fs::read_to_string(p).unwrap(), text);
        assert_eq!(stamp(p), t, "{} was written again", p.display());
    }
    shard::merge(&dir).unwrap();
}

#[test]
fn a_shard_is_i_of_n() {
    assert_eq!("2/5".parse::<Shard>(), Ok(Shard { index: 2, count: 5 }));
    for bad in ["0/3", "4/3", "1", "a/b", "1/0"] {
        let e = bad.parse::<Shard>().unwrap_err();
        assert!(e.contains("expected i/N"), "{bad}: {e}");
    }
}
