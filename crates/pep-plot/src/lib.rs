//! Deterministic charts for pepkit results, as PNG and SVG.
//!
//! `pep-plot` turns plain data — named series of `(x, y)` points, raw
//! samples, confidence intervals, TCP traces — into charts. It knows nothing
//! about the simulator, the lab or the daemon; they convert their results
//! into these types (or load their tidy CSV files with [`tidy`]).
//!
//! # Chart kinds
//!
//! | constructor | for |
//! | --- | --- |
//! | [`Chart::lines`] | goodput, queue length, cwnd over time, one line per flow/link/parameter value |
//! | [`Chart::error_bars`] | a measure vs a parameter, mean and 95% CI over runs ([`ci95`] computes them) |
//! | [`Chart::histogram`], [`Chart::histogram_fraction`] | distributions (burst sizes), series overlaid on shared bins |
//! | [`Chart::cdf`], [`Chart::ccdf`] | empirical (complementary) CDFs of raw samples |
//! | [`Chart::scatter`] | one quantity against another (inter-arrival time vs size) |
//! | [`Chart::time_sequence`] | tcptrace-style TCP time-sequence graph |
//!
//! Options chain on the chart: `.title()`, `.x_label()`, `.y_label()`
//! (write the unit: `"goodput (Mbit/s)"`), `.size()`, `.x_log()`,
//! `.y_log()`, `.x_range()`, `.y_range()`, `.no_legend()`.
//!
//! # Output
//!
//! [`render`] writes a `.png` or `.svg` file (chosen by extension);
//! [`render_svg_string`] and [`render_png_bytes`] return the image for
//! embedding in reports. The same chart always gives the same bytes: no
//! timestamps, no system fonts (DejaVu Sans is embedded), no hash-order
//! iteration.
//!
//! # Bad data
//!
//! Points with NaN or infinite coordinates are skipped, and so are points
//! with a zero or negative coordinate on a log axis (on a log axis these are
//! *skipped and counted*, not an error). On error bars with a log y axis
//! only the mean must be positive: an interval reaching zero or below (few
//! runs, wide spread) is drawn down to the bottom of the plot without a cap.
//! [`Chart::skipped`] tells how many of each; [`render`] returns the same
//! counts, and [`Skipped::notes`] says it in sentences for a warning. Only
//! when nothing at all is left to draw is it an error ([`PlotError::NoData`]).
//!
//! # Example
//!
//! ```no_run
//! use pep_plot::{render, tidy, Chart};
//! # fn main() -> Result<(), pep_plot::PlotError> {
//! let table = tidy::load("out/geo-default/goodput.csv")?;
//! let chart = Chart::lines(table.series_by("flow", "time_s", "goodput_mbps")?)
//!     .title("Goodput per flow")
//!     .x_label("time (s)")
//!     .y_label("goodput (Mbit/s)");
//! let skipped = render(&chart, "goodput.svg")?;
//! for note in skipped.notes() {
//!     eprintln!("warning: goodput.svg: {note}");
//! }
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod axis;
mod chart;
mod clip;
mod draw;
mod error;
mod prepare;
mod stats;
mod style;
pub mod tidy;

use std::path::Path;
use std::sync::OnceLock;

pub use chart::{
    AckSample, Bins, Chart, CiPoint, CiSeries, FlowTrace, HistScale, Plot, Samples, Scale, Series,
    Skipped, DEFAULT_SIZE,
};
pub use error::PlotError;
pub use stats::{ci95, t975};
pub use style::{series_color, Rgb, PALETTE};

/// DejaVu Sans (Bitstream Vera licence, see `assets/DejaVuSans-LICENSE.txt`),
/// from Debian's fonts-dejavu-core 2.37.
static FONT_TTF: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// Register the embedded font with plotters once per process.
fn font() -> Result<(), PlotError> {
    static DONE: OnceLock<bool> = OnceLock::new();
    let ok = *DONE.get_or_init(|| {
        plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, FONT_TTF)
            .is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(PlotError::Draw(
            "the embedded font could not be loaded".into(),
        ))
    }
}

impl Chart {
    /// What rendering this chart would leave out, by reason, without
    /// rendering it.
    pub fn skipped(&self) -> Result<Skipped, PlotError> {
        Ok(prepare::prepare(self)?.skipped)
    }
}

/// Render `chart` as an SVG document.
pub fn render_svg_string(chart: &Chart) -> Result<String, PlotError> {
    Ok(svg(chart)?.0)
}

fn svg(chart: &Chart) -> Result<(String, Skipped), PlotError> {
    font()?;
    let p = prepare::prepare(chart)?;
    let mut out = String::new();
    {
        let backend =
            plotters::prelude::SVGBackend::with_string(&mut out, (chart.width, chart.height));
        draw::draw(
            plotters::prelude::IntoDrawingArea::into_drawing_area(backend),
            chart,
            &p,
        )?;
    }
    Ok((out, p.skipped))
}

/// Render `chart` as a PNG image (8-bit RGB).
pub fn render_png_bytes(chart: &Chart) -> Result<Vec<u8>, PlotError> {
    Ok(png(chart)?.0)
}

fn png(chart: &Chart) -> Result<(Vec<u8>, Skipped), PlotError> {
    font()?;
    let p = prepare::prepare(chart)?;
    let (w, h) = (chart.width, chart.height);
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let backend = plotters::prelude::BitMapBackend::with_buffer(&mut rgb, (w, h));
        draw::draw(
            plotters::prelude::IntoDrawingArea::into_drawing_area(backend),
            chart,
            &p,
        )?;
    }
    let mut out = Vec::new();
    let perr = |e: png::EncodingError| PlotError::Png(e.to_string());
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(perr)?;
        writer.write_image_data(&rgb).map_err(perr)?;
        writer.finish().map_err(perr)?;
    }
    Ok((out, p.skipped))
}

/// Render `chart` to `path`: PNG for `.png`, SVG for `.svg` (case
/// insensitive). Returns what was skipped (see [`Skipped`]).
pub fn render(chart: &Chart, path: impl AsRef<Path>) -> Result<Skipped, PlotError> {
    let path = path.as_ref();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase());
    let (bytes, skipped) = match ext.as_deref() {
        Some("png") => png(chart)?,
        Some("svg") => {
            let (s, k) = svg(chart)?;
            (s.into_bytes(), k)
        }
        _ => {
            return Err(PlotError::UnknownFormat {
                path: path.to_path_buf(),
            })
        }
    };
    std::fs::write(path, bytes).map_err(|source| PlotError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(skipped)
}
