//! Clipping layers to the axis rectangle (plotters does not clip).

use crate::prepare::{Axis, Layer};

/// Clip a layer to the axes. Lines may split into several runs; polygons
/// are clipped (Sutherland–Hodgman); markers and bars outside are dropped
/// and bars are cut at the y range, losing the cap at a cut end. Works in axis space (log10 on log axes)
/// so the cut points lie on the straight segments as drawn.
pub(crate) fn clip(layer: Layer, x: &Axis, y: &Axis) -> Vec<Layer> {
    let inside = |p: &(f64, f64)| x.lo <= p.0 && p.0 <= x.hi && y.lo <= p.1 && p.1 <= y.hi;
    match layer {
        Layer::Line {
            points,
            color,
            width,
        } => {
            if points.iter().all(inside) {
                return vec![Layer::Line {
                    points,
                    color,
                    width,
                }];
            }
            clip_polyline(&points, x, y)
                .into_iter()
                .map(|points| Layer::Line {
                    points,
                    color,
                    width,
                })
                .collect()
        }
        Layer::Area {
            points,
            color,
            opacity,
        } => {
            let points = if points.iter().all(inside) {
                points
            } else {
                clip_polygon(&points, x, y)
            };
            if points.len() < 3 {
                return vec![];
            }
            vec![Layer::Area {
                points,
                color,
                opacity,
            }]
        }
        Layer::Markers {
            mut points,
            marker,
            color,
            size,
            opacity,
        } => {
            points.retain(inside);
            if points.is_empty() {
                return vec![];
            }
            vec![Layer::Markers {
                points,
                marker,
                color,
                size,
                opacity,
            }]
        }
        Layer::Bars { mut bars, color } => {
            bars.retain(|b| x.lo <= b.x && b.x <= x.hi && b.hi >= y.lo && b.lo <= y.hi);
            bars.iter_mut().for_each(|b| {
                if b.lo < y.lo {
                    b.lo = y.lo;
                    b.lo_cap = false;
                }
                if b.hi > y.hi {
                    b.hi = y.hi;
                    b.hi_cap = false;
                }
            });
            if bars.is_empty() {
                return vec![];
            }
            vec![Layer::Bars { bars, color }]
        }
    }
}

/// Liang–Barsky clipping of each segment; consecutive visible segments are
/// joined into runs.
fn clip_polyline(points: &[(f64, f64)], x: &Axis, y: &Axis) -> Vec<Vec<(f64, f64)>> {
    let (x0, x1, y0, y1) = (x.t(x.lo), x.t(x.hi), y.t(y.lo), y.t(y.hi));
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    if points.len() == 1 {
        let p = points[0];
        if x.lo <= p.0 && p.0 <= x.hi && y.lo <= p.1 && p.1 <= y.hi {
            return vec![vec![p]];
        }
        return vec![];
    }
    for w in points.windows(2) {
        let (ax, ay) = (x.t(w[0].0), y.t(w[0].1));
        let (bx, by) = (x.t(w[1].0), y.t(w[1].1));
        let (dx, dy) = (bx - ax, by - ay);
        let (mut t0, mut t1) = (0f64, 1f64);
        let mut visible = true;
        for (p, q) in [(-dx, ax - x0), (dx, x1 - ax), (-dy, ay - y0), (dy, y1 - ay)] {
            if p == 0.0 {
                if q < 0.0 {
                    visible = false;
                }
            } else {
                let r = q / p;
                if p < 0.0 {
                    t0 = t0.max(r);
                } else {
                    t1 = t1.min(r);
                }
            }
        }
        if !visible || t0 > t1 {
            if !cur.is_empty() {
                runs.push(std::mem::take(&mut cur));
            }
            continue;
        }
        let at = |t: f64, orig: (f64, f64)| {
            if t == 0.0 || t == 1.0 {
                orig
            } else {
                (x.inv(ax + t * dx), y.inv(ay + t * dy))
            }
        };
        let start = at(t0, w[0]);
        let end = if t1 == 1.0 { w[1] } else { at(t1, w[1]) };
        if cur.is_empty() || t0 > 0.0 {
            if !cur.is_empty() {
                runs.push(std::mem::take(&mut cur));
            }
            cur.push(start);
        }
        cur.push(end);
        if t1 < 1.0 {
            runs.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        runs.push(cur);
    }
    runs
}

/// Sutherland–Hodgman clipping of a polygon against the axis rectangle.
fn clip_polygon(points: &[(f64, f64)], x: &Axis, y: &Axis) -> Vec<(f64, f64)> {
    let mut poly: Vec<(f64, f64)> = points.iter().map(|p| (x.t(p.0), y.t(p.1))).collect();
    let (x0, x1, y0, y1) = (x.t(x.lo), x.t(x.hi), y.t(y.lo), y.t(y.hi));
    // Each edge: (is the point inside, intersection of segment a-b with it).
    type Edge = (
        Box<dyn Fn((f64, f64)) -> bool>,
        Box<dyn Fn((f64, f64), (f64, f64)) -> (f64, f64)>,
    );
    let vert = |c: f64| {
        move |a: (f64, f64), b: (f64, f64)| (c, a.1 + (b.1 - a.1) * (c - a.0) / (b.0 - a.0))
    };
    let horiz = |c: f64| {
        move |a: (f64, f64), b: (f64, f64)| (a.0 + (b.0 - a.0) * (c - a.1) / (b.1 - a.1), c)
    };
    let edges: [Edge; 4] = [
        (Box::new(move |p| p.0 >= x0), Box::new(vert(x0))),
        (Box::new(move |p| p.0 <= x1), Box::new(vert(x1))),
        (Box::new(move |p| p.1 >= y0), Box::new(horiz(y0))),
        (Box::new(move |p| p.1 <= y1), Box::new(horiz(y1))),
    ];
    for (ins, cut) in &edges {
        if poly.is_empty() {
            break;
        }
        let mut out = Vec::with_capacity(poly.len() + 4);
        for i in 0..poly.len() {
            let cur = poly[i];
            let prev = poly[(i + poly.len() - 1) % poly.len()];
            match (ins(cur), ins(prev)) {
                (true, true) => out.push(cur),
                (true, false) => {
                    out.push(cut(prev, cur));
                    out.push(cur);
                }
                (false, true) => out.push(cut(prev, cur)),
                (false, false) => {}
            }
        }
        poly = out;
    }
    poly.into_iter().map(|p| (x.inv(p.0), y.inv(p.1))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::Axis;

    fn lin(lo: f64, hi: f64) -> Axis {
        Axis { lo, hi, log: false }
    }

    #[test]
    fn polyline_clipping_splits_runs() {
        let pts = [(0.0, 0.0), (2.0, 2.0), (4.0, 0.0), (6.0, 2.0)];
        let runs = clip_polyline(&pts, &lin(0.0, 6.0), &lin(0.0, 1.0));
        assert_eq!(
            runs,
            vec![
                vec![(0.0, 0.0), (1.0, 1.0)],
                vec![(3.0, 1.0), (4.0, 0.0), (5.0, 1.0)]
            ]
        );
        // Entirely inside: one run, untouched.
        let runs = clip_polyline(&pts, &lin(0.0, 6.0), &lin(0.0, 2.0));
        assert_eq!(runs, vec![pts.to_vec()]);
    }

    #[test]
    fn polygon_clipping_cuts_a_bar() {
        let bar = [(0.0, 0.0), (0.0, 5.0), (2.0, 5.0), (2.0, 0.0)];
        let got = clip_polygon(&bar, &lin(1.0, 3.0), &lin(0.0, 3.0));
        assert_eq!(got, vec![(1.0, 0.0), (1.0, 3.0), (2.0, 3.0), (2.0, 0.0)]);
    }
}
