//! Every paper's report.html opens in a real browser (Debian's headless
//! Chromium): no script or console error, no resource that fails to load,
//! every image (inline SVG or <img>) drawn with a size. CI installs
//! chromium (.ci/run); elsewhere the test is ignored, and with
//! PEP_REQUIRE_ALL=1 a missing chromium fails it.

use std::path::Path;
use std::process::Command;

use pep_exp::reproduce;

use crate::reproduce::short_report;

/// Put first in <head>: records errors from the start, and at load writes
/// what it saw into `<pre id="pep-check">` for --dump-dom to show.
const PROBE: &str = r#"<script>
window.__pepErrors = [];
window.addEventListener('error', function (e) {
  var t = e.target;
  window.__pepErrors.push(t && t !== window ? 'load failed: ' + (t.src || t.href || t.tagName) : 'error: ' + e.message);
}, true);
var __pepConsoleError = console.error;
console.error = function () { window.__pepErrors.push('console.error: ' + Array.prototype.join.call(arguments, ' ')); __pepConsoleError.apply(console, arguments); };
window.addEventListener('load', function () {
  var bad = [];
  Array.prototype.forEach.call(document.images, function (i) { if (!i.complete || i.naturalWidth === 0) bad.push('img ' + i.src); });
  var svgs = document.querySelectorAll('figure > svg');
  Array.prototype.forEach.call(svgs, function (s, k) { var b = s.getBoundingClientRect(); if (b.width < 10 || b.height < 10) bad.push('svg ' + k + ' has no size'); });
  var pre = document.createElement('pre');
  pre.id = 'pep-check';
  pre.textContent = 'figures=' + svgs.length + ' images=' + document.images.length + ' problems=' + JSON.stringify(window.__pepErrors.concat(bad));
  document.body.appendChild(pre);
});
</script>"#;

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// What the probe saw in `html`: (figures, problems), or the browser's
/// failure.
fn open(browser: &str, html: &str, dir: &Path) -> Result<(usize, String), String> {
    let page = dir.join("probe.html");
    std::fs::write(&page, html.replacen("<head>", &format!("<head>{PROBE}"), 1))
        .map_err(|e| e.to_string())?;
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .map_err(|e| format!("{browser}: {e}"))?;
    let dom = String::from_utf8_lossy(&out.stdout);
    let line = dom
        .lines()
        .find_map(|l| l.split("<pre id=\"pep-check\">").nth(1))
        .ok_or_else(|| {
            format!(
                "no probe result (the page did not load): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
    let figures = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("figures="))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let problems = line
        .split("problems=")
        .nth(1)
        .unwrap_or("")
        // The dumped DOM may close the page on the same line.
        .split("</pre>")
        .next()
        .unwrap_or("")
        .replace("&quot;", "\"")
        .to_string();
    Ok((figures, problems))
}

#[test]
#[ignore = "needs chromium (CI installs it)"]
fn every_report_opens_in_chromium() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("PEP_REQUIRE_ALL").is_none(),
            "PEP_REQUIRE_ALL=1 and no chromium"
        );
        eprintln!("skipped: no chromium");
        return;
    };
    let out = tempfile::tempdir().unwrap();
    // The probe must see a broken page as broken.
    let broken = "<!DOCTYPE html><html><head></head><body><img src=\"missing.png\">\
                  <script>nosuch();</script></body></html>";
    let (_, p) = open(browser, broken, out.path()).unwrap();
    assert!(p.contains("load failed") && p.contains("error"), "{p}");
    for paper in reproduce::registry() {
        let report = short_report(paper, out.path());
        let html = std::fs::read_to_string(report.dir.join("report.html")).unwrap();
        let (figures, problems) = open(browser, &html, out.path()).unwrap();
        let charts: usize = report.experiments.iter().map(|e| e.charts.len()).sum();
        assert_eq!(problems, "[]", "{}: {problems}", paper.name);
        assert_eq!(figures, charts, "{}: figures drawn", paper.name);
    }
}
