//! `pep generate` (hidden): the man pages name every top-level subcommand
//! that `pep --help` lists, with a page of its own, so the packaged pages
//! cannot silently drift from the binary; the completion scripts of bash,
//! zsh and fish complete the same subcommands, and the bash one parses.

use std::path::Path;
use std::process::Command;

fn pep(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_pep"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pep {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The top-level subcommands as `pep --help` lists them (clap's help
/// renderer, not the man page generator), without `help` itself.
fn subcommands() -> Vec<String> {
    let help = pep(&["--help"]);
    let list = help
        .split("Commands:\n")
        .nth(1)
        .expect("`pep --help` has a Commands section");
    let names: Vec<String> = list
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_owned)
        .collect();
    // A parse that found nothing would make the checks below vacuous.
    for known in ["sim", "reproduce", "lab", "proxy", "amp"] {
        assert!(names.iter().any(|n| n == known), "{known} in {names:?}");
    }
    names
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn the_man_page_names_every_top_level_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    pep(&["generate", "man", path(dir.path())]);
    let page = std::fs::read_to_string(dir.path().join("pep.1")).unwrap();
    assert!(page.contains("\n.TH pep 1 "), "{page}");
    let section = page
        .split(".SH SUBCOMMANDS")
        .nth(1)
        .expect("pep.1 has a SUBCOMMANDS section");
    for sub in subcommands() {
        // clap_mangen lists each as `pep\-sub(1)`.
        assert!(
            section.contains(&format!("pep\\-{sub}(1)")),
            "pep.1 does not name `pep {sub}`:\n{section}"
        );
        let own = dir.path().join(format!("pep-{sub}.1"));
        let text =
            std::fs::read_to_string(&own).unwrap_or_else(|e| panic!("{}: {e}", own.display()));
        assert!(text.contains(&format!(".TH pep-{sub} 1 ")), "{text}");
        // Subcommand pages name the version too.
        let version = env!("CARGO_PKG_VERSION");
        assert!(
            text.contains(&format!("\"{sub} {version}\"")),
            "pep-{sub}.1 lacks the version:\n{}",
            text.lines().find(|l| l.starts_with(".TH")).unwrap_or("")
        );
    }
    // The packaging command itself is hidden from users.
    assert!(!page.contains("generate"), "{page}");
    assert!(!dir.path().join("pep-generate.1").exists());
}

#[test]
fn completions_for_bash_zsh_and_fish_complete_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let subs = subcommands();
    for (shell, file) in [("bash", "pep.bash"), ("zsh", "_pep"), ("fish", "pep.fish")] {
        let printed = pep(&["generate", "completions", shell, path(dir.path())]);
        let script = dir.path().join(file);
        assert_eq!(printed.trim(), path(&script), "{shell}");
        let text = std::fs::read_to_string(&script).unwrap();
        for sub in &subs {
            assert!(text.contains(sub.as_str()), "{shell} script lacks {sub}");
        }
    }
    // The hidden packaging command is not offered (bash's script has no
    // help texts that could name it otherwise).
    let bash = std::fs::read_to_string(dir.path().join("pep.bash")).unwrap();
    assert!(!bash.contains("generate"), "pep.bash offers `generate`");
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(dir.path().join("pep.bash"))
        .output()
        .unwrap();
    assert!(
        syntax.status.success(),
        "{}",
        String::from_utf8_lossy(&syntax.stderr)
    );
}

#[test]
fn an_unknown_shell_is_refused_by_name() {
    let out = Command::new(env!("CARGO_BIN_EXE_pep"))
        .args(["generate", "completions", "tcsh", "/nonexistent"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tcsh") && err.contains("bash"), "{err}");
}
