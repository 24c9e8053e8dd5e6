//! The Debian package (issue 38, packaging): `scripts/package-deb.sh`
//! builds it from a `pep` binary; it installs into a clean root with
//! dpkg (`--root`: the host is untouched, and a killed test leaves only a
//! temporary directory), holds the binary, the unit, the default config
//! as a conffile, the docs, the man pages and the shell completions
//! (pep.1 renders without a warning), its unit verifies with `systemd-analyze`,
//! and a purge removes every file.
//!
//! Packages `target/debug/pep` (or `$PEP_BINARY`): build it first with
//! `cargo build -p pep-cli`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// pep.1 as installed renders with groff and no warning (`-ww`), or,
/// without groff, at least carries the man macros' title line.
fn man_page_renders(gz: &Path) {
    let roff = run(Command::new("gzip").arg("-dc").arg(gz));
    assert!(roff.contains("\n.TH pep 1 "), "{roff}");
    assert!(
        roff.contains(".SH SUBCOMMANDS") && roff.contains("pep\\-proxy(1)"),
        "{roff}"
    );
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("pep.1");
    std::fs::write(&page, &roff).unwrap();
    match Command::new("groff")
        .args(["-man", "-ww", "-z"])
        .arg(&page)
        .output()
    {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("groff not installed: checked pep.1's header only")
        }
        Err(e) => panic!("groff: {e}"),
        Ok(out) => {
            let warnings = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() && warnings.is_empty(),
                "groff on pep.1: {warnings}"
            );
        }
    }
}

#[test]
#[ignore = "needs root"]
fn the_package_installs_in_a_clean_root_and_its_unit_verifies() {
    let _g = root_test("package");
    let bin = std::env::var_os("PEP_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/debug/pep"));
    assert!(
        bin.exists(),
        "{} missing: cargo build -p pep-cli (or set PEP_BINARY)",
        bin.display()
    );
    let out = tempfile::tempdir().unwrap();
    let deb = run(Command::new("sh")
        .arg(repo().join("scripts/package-deb.sh"))
        .arg(&bin)
        .arg(out.path()));
    let deb = deb.trim();

    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    for d in ["var/lib/dpkg/info", "var/lib/dpkg/updates"] {
        std::fs::create_dir_all(r.join(d)).unwrap();
    }
    std::fs::write(r.join("var/lib/dpkg/status"), "").unwrap();
    let dpkg = |args: &[&str]| {
        let mut c = Command::new("dpkg");
        // The clean root has no nftables or iproute2 to depend on.
        c.arg(format!("--root={}", r.display()))
            .arg("--force-depends")
            .args(args);
        run(&mut c)
    };
    dpkg(&["-i", deb]);
    let status = dpkg(&["-s", "pepkit"]);
    assert!(status.contains("Status: install ok installed"), "{status}");
    assert!(
        status.contains("/etc/pep/pep.toml"),
        "the config is a conffile: {status}"
    );
    let files = [
        "usr/bin/pep",
        "lib/systemd/system/pep-proxy.service",
        "etc/pep/pep.toml",
        "usr/share/doc/pepkit/daemon.md",
        "usr/share/man/man1/pep.1.gz",
        "usr/share/man/man1/pep-proxy-run.1.gz",
        "usr/share/bash-completion/completions/pep",
        "usr/share/zsh/vendor-completions/_pep",
        "usr/share/fish/vendor_completions.d/pep.fish",
    ];
    for f in files {
        assert!(r.join(f).is_file(), "{f} not installed");
    }
    man_page_renders(&r.join("usr/share/man/man1/pep.1.gz"));
    let bash =
        std::fs::read_to_string(r.join("usr/share/bash-completion/completions/pep")).unwrap();
    assert!(
        bash.contains("complete ") && bash.contains("proxy"),
        "{bash}"
    );
    // The installed binary runs, and its default config is the one shipped.
    let help = run(Command::new(r.join("usr/bin/pep")).args(["proxy", "--help"]));
    assert!(help.contains("run"), "{help}");
    let shipped = std::fs::read_to_string(r.join("etc/pep/pep.toml")).unwrap();
    pep_daemon::config::parse(&shipped, "/etc/pep/pep.toml").expect("the shipped config parses");

    // The unit, as installed, verified against this host's systemd; only
    // the binary's path is pointed into the clean root (the host has no
    // /usr/bin/pep).
    let unit = std::fs::read_to_string(r.join("lib/systemd/system/pep-proxy.service")).unwrap();
    assert!(unit.contains("ExecStart=/usr/bin/pep proxy run"), "{unit}");
    for want in [
        "Type=notify",
        "WatchdogSec=",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
    ] {
        assert!(unit.contains(want), "the unit lacks {want}");
    }
    let check = tempfile::tempdir().unwrap();
    let copy = check.path().join("pep-proxy.service");
    let pep = r.join("usr/bin/pep");
    std::fs::write(
        &copy,
        unit.replace("/usr/bin/pep", &pep.display().to_string()),
    )
    .unwrap();
    run(Command::new("systemd-analyze").arg("verify").arg(&copy));

    dpkg(&["-P", "pepkit"]);
    for f in files {
        assert!(!r.join(f).exists(), "{f} left after purge");
    }
}
