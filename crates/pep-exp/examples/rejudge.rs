//! Decides a paper's claims again from a finished `pep reproduce` run's
//! saved results, without running anything: after a claim changes, the
//! hours of a `--full` run need not be spent again. Rewrites the run's
//! report.md, report.html and verdicts.tsv and prints the verdicts.
//! With `--run` it runs the reproduction first, as `pep reproduce` does
//! (reusing the records of runs already made by this build).
//!
//! cargo run -p pep-exp --example rejudge -- <paper> [--full] [--run] [-o out/reproduce]

use std::path::PathBuf;

use pep_exp::reproduce::{self, Options};
use pep_exp::Mode;

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut paper, mut full, mut run) = (None, false, false);
    let mut out = PathBuf::from("out/reproduce");
    while let Some(a) = args.next() {
        match a.as_str() {
            "--full" => full = true,
            "--run" => run = true,
            "-o" | "--out" => out = args.next().map(PathBuf::from).unwrap_or(out),
            _ if paper.is_none() => paper = Some(a),
            _ => fail(&format!("unexpected argument {a:?}")),
        }
    }
    let Some(name) = paper else {
        fail("usage: rejudge <paper> [--full] [--run] [-o out/reproduce]");
    };
    let paper = reproduce::find(&name).unwrap_or_else(|e| fail(&e));
    let opts = Options {
        scenarios: reproduce::default_scenarios_dir(),
        out,
        mode: if full { Mode::Full } else { Mode::Short },
        jobs: 2,
    };
    let experiments = reproduce::load(paper, &opts).unwrap_or_else(|e| fail(&e));
    let report = if run {
        reproduce::reproduce(paper, experiments, &opts, &mut |_, _| {})
    } else {
        reproduce::rejudge(paper, experiments, &opts)
    }
    .unwrap_or_else(|e| fail(&e));
    println!("{}: {}", paper.name, report.tally().line());
    print!("{}", reproduce::verdicts_tsv(&report));
}

fn fail(msg: &str) -> ! {
    eprintln!("rejudge: {msg}");
    std::process::exit(2)
}
