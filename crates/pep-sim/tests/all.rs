//! pep-sim's integration tests.
//! One module per file; `cargo test -p pep-sim --test sim <file>::` runs one file's tests.

mod ack_thin;
mod bbr;
mod bidirectional;
mod cut;
mod determinism;
mod gschwandtner;
mod johnson;
mod netmodels;
mod ns2_oracle;
mod osada2005;
mod pcap;
mod profiles;
mod queue_delay;
mod rack_tlp;
mod scale;
mod sender_models;
mod shared_split_pair;
mod shekhar;
mod shikama;
mod split_pair_tunnel;
mod spurious_rto;
mod support;
mod tcp_models;
mod tcp_paths;
mod traffic;
mod varying_links;

/// With `autotests = false` a new file under `tests/` would be silently
/// skipped: every crate that turns autotests off must name each of its
/// test files, as a module of its `tests/all.rs` or as a `[[test]]` path.
#[test]
fn every_test_file_is_built() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked = 0;
    for dir in std::fs::read_dir(&crates).unwrap() {
        let dir = dir.unwrap().path();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        if !manifest.contains("autotests = false") {
            continue;
        }
        let all = std::fs::read_to_string(dir.join("tests/all.rs")).unwrap_or_default();
        for f in std::fs::read_dir(dir.join("tests")).unwrap() {
            let f = f.unwrap().path();
            if f.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let stem = f.file_stem().unwrap().to_str().unwrap();
            if stem == "all" {
                continue;
            }
            let as_module = all.lines().any(|l| l.trim() == format!("mod {stem};"));
            let as_target = manifest.contains(&format!("path = \"tests/{stem}.rs\""));
            assert!(
                as_module || as_target,
                "{}: not built (add `mod {stem};` to tests/all.rs or a [[test]])",
                f.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 40, "found only {checked} test files");
}
