//! Drawing prepared layers with plotters, on any backend (SVG or bitmap).
//!
//! Layout: title on top, legend in a column on the right (outside the data,
//! so it never hides a line), the plot with its axes in the rest. Tick
//! counts are chosen from the measured width of the tick labels so they do
//! not overlap.

use plotters::coord::Shift;
use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_backend::{BackendCoord, DrawingErrorKind};

use crate::axis::{choose_ticks, AxisKind, LinAxis, LogAxis};
use crate::chart::Chart;
use crate::prepare::{Layer, Prepared, Swatch};
use crate::style::{Marker, Rgb};
use crate::PlotError;

/// The font family every text uses; [`crate::font`] registers the embedded
/// font under this name, and SVG viewers fall back to their own sans-serif.
const FONT: &str = "sans-serif";
const TITLE_SIZE: u32 = 22;
const LABEL_SIZE: u32 = 15;
const DESC_SIZE: u32 = 16;
const LEGEND_SIZE: u32 = 15;
const LEGEND_ROW: i32 = 24;
const SWATCH_W: i32 = 28;
const MARGIN: u32 = 14;

fn color(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

fn derr<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> PlotError {
    PlotError::Draw(e.to_string())
}

/// Draw a whole chart on `root`.
pub(crate) fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    chart: &Chart,
    p: &Prepared,
) -> Result<(), PlotError> {
    root.fill(&WHITE).map_err(derr)?;
    let area = if chart.title.is_empty() {
        root.clone()
    } else {
        root.titled(&chart.title, (FONT, TITLE_SIZE).into_font().color(&BLACK))
            .map_err(derr)?
    };
    let (w, _) = area.dim_in_pixel();
    let (plot_area, legend) = if chart.legend && !p.legend.is_empty() {
        let font: TextStyle = (FONT, LEGEND_SIZE).into();
        let max_w = (w as f64 * 0.35) as u32;
        let mut names = Vec::new();
        let mut widest = 0;
        for e in &p.legend {
            let name = fit_text(
                &area,
                &e.name,
                &font,
                max_w.saturating_sub(SWATCH_W as u32 + 30),
            )?;
            widest = widest.max(text_w(&area, &name, &font)?);
            names.push(name);
        }
        let lw = widest + SWATCH_W as u32 + 8 + 2 * MARGIN;
        let (a, b) = area.split_horizontally(w - lw);
        (a, Some((b, names)))
    } else {
        (area, None)
    };
    let (xr, yr) = (p.x.lo..p.x.hi, p.y.lo..p.y.hi);
    match (p.x.log, p.y.log) {
        (false, false) => body(&plot_area, chart, p, LinAxis(xr), LinAxis(yr)),
        (true, false) => body(&plot_area, chart, p, LogAxis(xr), LinAxis(yr)),
        (false, true) => body(&plot_area, chart, p, LinAxis(xr), LogAxis(yr)),
        (true, true) => body(&plot_area, chart, p, LogAxis(xr), LogAxis(yr)),
    }?;
    if let Some((area, names)) = legend {
        draw_legend(&area, p, &names)?;
    }
    root.present().map_err(derr)
}

fn text_w<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    font: &TextStyle,
) -> Result<u32, PlotError> {
    Ok(area.estimate_text_size(text, font).map_err(derr)?.0)
}

/// `text`, shortened with an ellipsis until it is at most `max_w` pixels.
fn fit_text<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    font: &TextStyle,
    max_w: u32,
) -> Result<String, PlotError> {
    let mut s = text.to_string();
    let mut chars: Vec<char> = text.chars().collect();
    while text_w(area, &s, font)? > max_w && chars.len() > 1 {
        chars.pop();
        s = chars.iter().collect::<String>() + "…";
    }
    Ok(s)
}

fn body<DB, X, Y>(
    area: &DrawingArea<DB, Shift>,
    chart: &Chart,
    p: &Prepared,
    xa: X,
    ya: Y,
) -> Result<(), PlotError>
where
    DB: DrawingBackend,
    X: AxisKind,
    Y: AxisKind,
{
    let label_font: TextStyle = (FONT, LABEL_SIZE).into();
    let measure = |s: &str| text_w(area, s, &label_font);
    let (w, h) = area.dim_in_pixel();
    let label_h = area.estimate_text_size("0", &label_font).map_err(derr)?.1;
    let x_area = label_h + DESC_SIZE + 26;
    let plot_h = h.saturating_sub(x_area + 2 * MARGIN);
    // Vertical room: a label height plus 24 px between y labels.
    let (ny, yfmt) = choose_ticks(&ya, 10, plot_h, |_| Ok(label_h + 12))?;
    let mut y_widest = 0;
    for k in ya.keys(ny) {
        y_widest = y_widest.max(measure(&yfmt.format(k))?);
    }
    let y_area = y_widest + DESC_SIZE + 22;
    let plot_w = w.saturating_sub(y_area + 2 * MARGIN);
    let (nx, xfmt) = choose_ticks(&xa, 12, plot_w, measure)?;

    let mut ctx = ChartBuilder::on(area)
        .margin(MARGIN)
        .x_label_area_size(x_area)
        .y_label_area_size(y_area)
        .build_cartesian_2d(xa.build(nx), ya.build(ny))
        .map_err(derr)?;
    let fx = |v: &f64| xfmt.format(*v);
    let fy = |v: &f64| yfmt.format(*v);
    ctx.configure_mesh()
        .x_labels(nx)
        .y_labels(ny)
        .x_label_formatter(&fx)
        .y_label_formatter(&fy)
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .label_style((FONT, LABEL_SIZE))
        .axis_desc_style((FONT, DESC_SIZE))
        .bold_line_style(RGBColor(222, 222, 222))
        .light_line_style(RGBColor(243, 243, 243))
        .max_light_lines(4)
        .axis_style(RGBColor(80, 80, 80))
        .draw()
        .map_err(derr)?;

    for layer in &p.layers {
        match layer {
            Layer::Line {
                points,
                color: c,
                width,
            } => {
                ctx.draw_series(std::iter::once(PathElement::new(
                    points.clone(),
                    color(*c).stroke_width(*width),
                )))
                .map_err(derr)?;
            }
            Layer::Area {
                points,
                color: c,
                opacity,
            } => {
                ctx.draw_series(std::iter::once(Polygon::new(
                    points.clone(),
                    color(*c).mix(*opacity).filled(),
                )))
                .map_err(derr)?;
            }
            Layer::Markers {
                points,
                marker,
                color: c,
                size,
                opacity,
            } => {
                ctx.draw_series(points.iter().map(|&at| MarkerElem {
                    at,
                    marker: *marker,
                    style: color(*c).mix(*opacity).filled(),
                    size: *size as i32,
                }))
                .map_err(derr)?;
            }
            Layer::Bars { bars, color: c } => {
                ctx.draw_series(bars.iter().map(|b| VBar {
                    ends: [(b.x, b.lo), (b.x, b.hi)],
                    caps: [b.lo_cap, b.hi_cap],
                    style: color(*c).stroke_width(2),
                }))
                .map_err(derr)?;
            }
        }
    }
    Ok(())
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &Prepared,
    names: &[String],
) -> Result<(), PlotError> {
    let font = (FONT, LEGEND_SIZE)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let x0 = MARGIN as i32 / 2;
    for (i, (entry, name)) in p.legend.iter().zip(names).enumerate() {
        let cy = MARGIN as i32 + LEGEND_ROW / 2 + i as i32 * LEGEND_ROW;
        let mid = (x0 + SWATCH_W / 2, cy);
        // Swatch lines are thin rectangles, so an SVG's <polyline> elements
        // are exactly the data lines.
        let bar = |c: Rgb, w: u32| {
            let half = (w as i32).max(1);
            Rectangle::new(
                [(x0, cy - half / 2), (x0 + SWATCH_W, cy - half / 2 + half)],
                color(c).filled(),
            )
        };
        match entry.swatch {
            Swatch::Line(c, w) => area.draw(&bar(c, w)).map_err(derr)?,
            Swatch::Marker(m, c) => area.draw(&marker_at(mid, m, c, 4)).map_err(derr)?,
            Swatch::LineMarker(m, c) => {
                area.draw(&bar(c, 2)).map_err(derr)?;
                area.draw(&marker_at(mid, m, c, 4)).map_err(derr)?;
            }
            Swatch::Area(c) => {
                let r = [(x0, cy - 7), (x0 + SWATCH_W, cy + 7)];
                area.draw(&Rectangle::new(r, color(c).mix(0.25).filled()))
                    .map_err(derr)?;
                area.draw(&Rectangle::new(r, color(c).stroke_width(2)))
                    .map_err(derr)?;
            }
        }
        area.draw(&Text::new(
            name.as_str(),
            (x0 + SWATCH_W + 8, cy),
            font.clone(),
        ))
        .map_err(derr)?;
    }
    Ok(())
}

fn marker_at(at: (i32, i32), marker: Marker, c: Rgb, size: i32) -> MarkerElem<(i32, i32)> {
    MarkerElem {
        at,
        marker,
        style: color(c).filled(),
        size,
    }
}

/// A marker centred on one point; `size` is the radius in pixels.
struct MarkerElem<C> {
    at: C,
    marker: Marker,
    style: ShapeStyle,
    size: i32,
}

impl<'a, C: 'a> PointCollection<'a, C> for &'a MarkerElem<C> {
    type Point = &'a C;
    type IntoIter = std::iter::Once<&'a C>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.at)
    }
}

impl<C, DB: DrawingBackend> Drawable<DB> for MarkerElem<C> {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut pos: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let Some((x, y)) = pos.next() else {
            return Ok(());
        };
        let s = self.size;
        match self.marker {
            Marker::Circle => backend.draw_circle((x, y), s as u32, &self.style, true),
            Marker::Square => backend.draw_rect((x - s, y - s), (x + s, y + s), &self.style, true),
            Marker::Triangle => {
                let h = s + s / 3;
                backend.fill_polygon([(x, y - h), (x + h, y + s), (x - h, y + s)], &self.style)
            }
            Marker::Diamond => {
                let h = s + s / 3;
                backend.fill_polygon(
                    [(x, y - h), (x + h, y), (x, y + h), (x - h, y)],
                    &self.style,
                )
            }
            Marker::Cross => {
                let st = self.style.stroke_width(2);
                backend.draw_line((x - s, y - s), (x + s, y + s), &st)?;
                backend.draw_line((x - s, y + s), (x + s, y - s), &st)
            }
        }
    }
}

/// A vertical interval between two data points, with a cap at each end
/// that `caps` (low, high) asks for.
struct VBar {
    ends: [(f64, f64); 2],
    caps: [bool; 2],
    style: ShapeStyle,
}

impl<'a> PointCollection<'a, (f64, f64)> for &'a VBar {
    type Point = &'a (f64, f64);
    type IntoIter = std::slice::Iter<'a, (f64, f64)>;
    fn point_iter(self) -> Self::IntoIter {
        self.ends.iter()
    }
}

impl<DB: DrawingBackend> Drawable<DB> for VBar {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut pos: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let (Some(lo), Some(hi)) = (pos.next(), pos.next()) else {
            return Ok(());
        };
        const CAP: i32 = 5;
        backend.draw_line(lo, hi, &self.style)?;
        for (end, cap) in [lo, hi].into_iter().zip(self.caps) {
            if cap {
                backend.draw_line((end.0 - CAP, end.1), (end.0 + CAP, end.1), &self.style)?;
            }
        }
        Ok(())
    }
}
