//! What a chart is: plain data plus a few presentation options.
//!
//! Nothing here draws; [`crate::render`] and friends do.

/// A named sequence of `(x, y)` points, drawn in the given order.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Shown in the legend.
    pub name: String,
    /// The points. NaN/inf points are skipped when drawing (and counted).
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// A series from any iterator of points.
    pub fn new(name: impl Into<String>, points: impl IntoIterator<Item = (f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points: points.into_iter().collect(),
        }
    }
}

/// One summarised measurement: a mean with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CiPoint {
    /// The parameter value.
    pub x: f64,
    /// The point estimate (usually the mean over runs).
    pub mean: f64,
    /// Lower end of the interval.
    pub lo: f64,
    /// Upper end of the interval (must be `>= lo`).
    pub hi: f64,
}

impl CiPoint {
    /// A point from its four numbers.
    pub fn new(x: f64, mean: f64, lo: f64, hi: f64) -> Self {
        CiPoint { x, mean, lo, hi }
    }
}

/// A named sequence of [`CiPoint`]s (one line on a measure-vs-parameter plot).
#[derive(Debug, Clone, PartialEq)]
pub struct CiSeries {
    /// Shown in the legend.
    pub name: String,
    /// The points; drawn sorted by `x`.
    pub points: Vec<CiPoint>,
}

impl CiSeries {
    /// A series from any iterator of points.
    pub fn new(name: impl Into<String>, points: impl IntoIterator<Item = CiPoint>) -> Self {
        CiSeries {
            name: name.into(),
            points: points.into_iter().collect(),
        }
    }
}

/// Raw samples of one quantity (for histograms and CDFs).
#[derive(Debug, Clone, PartialEq)]
pub struct Samples {
    /// Shown in the legend.
    pub name: String,
    /// The samples, in any order.
    pub values: Vec<f64>,
}

impl Samples {
    /// Samples from any iterator of values.
    pub fn new(name: impl Into<String>, values: impl IntoIterator<Item = f64>) -> Self {
        Samples {
            name: name.into(),
            values: values.into_iter().collect(),
        }
    }
}

/// How a histogram's bins are chosen. Overlaid series always share bins.
#[derive(Debug, Clone, PartialEq)]
pub enum Bins {
    /// Freedman–Diaconis width over all series' samples pooled (Sturges when
    /// the interquartile range is zero), clamped to 1..=200 bins.
    Auto,
    /// This many equal-width bins between the smallest and largest sample
    /// (equal width in log space on a log x axis).
    Count(usize),
    /// Explicit, strictly increasing edges: `n + 1` edges make `n` bins.
    /// Bins are `[e_i, e_{i+1})`, the last one closed. Samples outside the
    /// edges are skipped and counted in [`Skipped::outside_bins`].
    Edges(Vec<f64>),
}

/// What a histogram's bar heights show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistScale {
    /// Number of samples in the bin.
    Count,
    /// Fraction of the series' samples in the bin (compare series of
    /// different sizes).
    Fraction,
}

/// One TCP flow's trace for a time-sequence graph. All sequence numbers are
/// plain numbers (bytes), usually relative to the flow's initial sequence
/// number; times are seconds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FlowTrace {
    /// Flow name, used in the legend.
    pub name: String,
    /// `(time, sequence)` of each first transmission of a segment.
    pub sent: Vec<(f64, f64)>,
    /// `(time, sequence)` of each retransmission.
    pub retransmitted: Vec<(f64, f64)>,
    /// ACKs as seen by the sender, in time order.
    pub acks: Vec<AckSample>,
}

impl FlowTrace {
    /// An empty trace with a name; fill the public fields.
    pub fn new(name: impl Into<String>) -> Self {
        FlowTrace {
            name: name.into(),
            ..Default::default()
        }
    }
}

/// One ACK: the cumulative acknowledgement and the advertised window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AckSample {
    /// Time (s).
    pub t: f64,
    /// Cumulative ACK number (bytes).
    pub ack: f64,
    /// Advertised receive window (bytes); the window limit line is `ack + window`.
    pub window: f64,
}

impl AckSample {
    /// An ACK sample.
    pub fn new(t: f64, ack: f64, window: f64) -> Self {
        AckSample { t, ack, window }
    }
}

/// The data of a chart; the variant is the chart kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Plot {
    /// Lines over time (or over anything): one polyline per series.
    Lines(Vec<Series>),
    /// Measure vs parameter: mean markers joined by a line, with vertical
    /// CI bars. With several series, x positions are spread ("dodged") by
    /// up to ±2.5% of the axis width so bars do not hide each other;
    /// `dodge: false` draws them at their exact x.
    ErrorBars {
        /// The series.
        series: Vec<CiSeries>,
        /// Spread overlapping series horizontally.
        dodge: bool,
    },
    /// Histogram of raw samples; several series are overlaid as translucent
    /// step areas over shared bins.
    Histogram {
        /// The samples, one entry per series.
        series: Vec<Samples>,
        /// How bins are chosen.
        bins: Bins,
        /// Counts or fractions.
        scale: HistScale,
    },
    /// Empirical CDF (or complementary CDF, `1 - F`, for tails on log-log
    /// axes) of raw samples, one step line per series.
    Cdf {
        /// The samples, one entry per series.
        series: Vec<Samples>,
        /// Draw `P(X > x)` instead of `P(X <= x)`.
        complementary: bool,
    },
    /// Scatter: one marker shape and colour per series.
    Scatter(Vec<Series>),
    /// TCP time-sequence graph (tcptrace style): segments sent, retransmissions,
    /// the ACK step line and the advertised-window limit (ack + window).
    TimeSequence(Vec<FlowTrace>),
}

impl Plot {
    /// A short name of the kind, for messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Plot::Lines(_) => "lines",
            Plot::ErrorBars { .. } => "error bars",
            Plot::Histogram { .. } => "histogram",
            Plot::Cdf { .. } => "CDF",
            Plot::Scatter(_) => "scatter",
            Plot::TimeSequence(_) => "time-sequence",
        }
    }
}

/// Linear or logarithmic (base 10) axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scale {
    /// Linear.
    #[default]
    Linear,
    /// Base-10 logarithmic. Points with a non-positive coordinate on this
    /// axis are skipped and counted in [`Skipped::non_positive`] (they are
    /// not an error unless nothing is left to draw). On error bars, only the
    /// mean counts: a confidence interval reaching zero or below keeps its
    /// point, and its bar runs uncapped to the bottom of the plot (counted
    /// in [`Skipped::open_bars`]).
    Log,
}

/// A chart: the data ([`Plot`]) plus title, axis labels, size and scales.
///
/// Build one with a constructor per kind and chain the options:
///
/// ```
/// use pep_plot::{Chart, Series};
/// let chart = Chart::lines([Series::new("cubic", [(0.0, 1.0), (1.0, 9.5)])])
///     .title("Goodput")
///     .x_label("time (s)")
///     .y_label("goodput (Mbit/s)");
/// let svg = pep_plot::render_svg_string(&chart).unwrap();
/// assert!(svg.contains("Goodput"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// The data and the kind.
    pub plot: Plot,
    /// Drawn centred above the plot; empty for none.
    pub title: String,
    /// X axis label with its unit, e.g. `"time (s)"`.
    pub x_label: String,
    /// Y axis label with its unit, e.g. `"goodput (Mbit/s)"`.
    pub y_label: String,
    /// Image width in pixels (default 900).
    pub width: u32,
    /// Image height in pixels (default 540).
    pub height: u32,
    /// X axis scale.
    pub x_scale: Scale,
    /// Y axis scale.
    pub y_scale: Scale,
    /// Fixed x range; `None` fits the data with a little padding. Data
    /// outside a fixed range is clipped (not counted as skipped).
    pub x_range: Option<(f64, f64)>,
    /// Fixed y range; `None` fits the data.
    pub y_range: Option<(f64, f64)>,
    /// Draw the legend (to the right of the plot). Default true.
    pub legend: bool,
}

/// Default image size: readable on a laptop screen and in a report.
pub const DEFAULT_SIZE: (u32, u32) = (900, 540);

impl Chart {
    /// A chart of any kind with default options and the kind's default axis
    /// labels (which you will usually replace).
    pub fn new(plot: Plot) -> Self {
        let (x, y) = match &plot {
            Plot::Lines(_) | Plot::Scatter(_) => ("x", "y"),
            Plot::ErrorBars { .. } => ("parameter", "mean (95% CI)"),
            Plot::Histogram { scale, .. } => match scale {
                HistScale::Count => ("value", "count"),
                HistScale::Fraction => ("value", "fraction of samples"),
            },
            Plot::Cdf { complementary, .. } => {
                if *complementary {
                    ("value", "fraction > x")
                } else {
                    ("value", "fraction ≤ x")
                }
            }
            Plot::TimeSequence(_) => ("time (s)", "sequence number (bytes)"),
        };
        Chart {
            plot,
            title: String::new(),
            x_label: x.to_string(),
            y_label: y.to_string(),
            width: DEFAULT_SIZE.0,
            height: DEFAULT_SIZE.1,
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            x_range: None,
            y_range: None,
            legend: true,
        }
    }

    /// Lines over time: one line per series.
    pub fn lines(series: impl IntoIterator<Item = Series>) -> Self {
        Chart::new(Plot::Lines(series.into_iter().collect()))
    }

    /// Measure vs parameter with confidence-interval bars (dodged when there
    /// are several series).
    pub fn error_bars(series: impl IntoIterator<Item = CiSeries>) -> Self {
        Chart::new(Plot::ErrorBars {
            series: series.into_iter().collect(),
            dodge: true,
        })
    }

    /// Histogram of counts per bin.
    pub fn histogram(series: impl IntoIterator<Item = Samples>, bins: Bins) -> Self {
        Chart::new(Plot::Histogram {
            series: series.into_iter().collect(),
            bins,
            scale: HistScale::Count,
        })
    }

    /// Histogram of the fraction of each series' samples per bin.
    pub fn histogram_fraction(series: impl IntoIterator<Item = Samples>, bins: Bins) -> Self {
        Chart::new(Plot::Histogram {
            series: series.into_iter().collect(),
            bins,
            scale: HistScale::Fraction,
        })
    }

    /// Empirical CDF, `P(X <= x)`.
    pub fn cdf(series: impl IntoIterator<Item = Samples>) -> Self {
        Chart::new(Plot::Cdf {
            series: series.into_iter().collect(),
            complementary: false,
        })
    }

    /// Complementary CDF, `P(X > x)`; pair with `.x_log().y_log()` for tails.
    pub fn ccdf(series: impl IntoIterator<Item = Samples>) -> Self {
        Chart::new(Plot::Cdf {
            series: series.into_iter().collect(),
            complementary: true,
        })
    }

    /// Scatter plot.
    pub fn scatter(series: impl IntoIterator<Item = Series>) -> Self {
        Chart::new(Plot::Scatter(series.into_iter().collect()))
    }

    /// TCP time-sequence graph of one or more flows.
    pub fn time_sequence(flows: impl IntoIterator<Item = FlowTrace>) -> Self {
        Chart::new(Plot::TimeSequence(flows.into_iter().collect()))
    }

    /// Set the title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }

    /// Set the x axis label (include the unit).
    pub fn x_label(mut self, label: impl Into<String>) -> Self {
        self.x_label = label.into();
        self
    }

    /// Set the y axis label (include the unit).
    pub fn y_label(mut self, label: impl Into<String>) -> Self {
        self.y_label = label.into();
        self
    }

    /// Set the image size in pixels (at least 200 x 150).
    pub fn size(mut self, width: u32, height: u32) -> Self {
        self.width = width;
        self.height = height;
        self
    }

    /// Logarithmic x axis (e.g. loss probability 1e-4..1e-1).
    pub fn x_log(mut self) -> Self {
        self.x_scale = Scale::Log;
        self
    }

    /// Logarithmic y axis.
    pub fn y_log(mut self) -> Self {
        self.y_scale = Scale::Log;
        self
    }

    /// Fix the x range instead of fitting the data.
    pub fn x_range(mut self, lo: f64, hi: f64) -> Self {
        self.x_range = Some((lo, hi));
        self
    }

    /// Fix the y range instead of fitting the data.
    pub fn y_range(mut self, lo: f64, hi: f64) -> Self {
        self.y_range = Some((lo, hi));
        self
    }

    /// Do not draw a legend (the plot gets the full width).
    pub fn no_legend(mut self) -> Self {
        self.legend = false;
        self
    }

    /// The title, or the kind's name when untitled (for messages).
    pub(crate) fn display_name(&self) -> String {
        if self.title.is_empty() {
            self.plot.kind_name().to_string()
        } else {
            self.title.clone()
        }
    }
}

/// Points left out of a chart, by reason, and error bars drawn cut short.
/// Skipping is not an error unless nothing at all is left to draw; callers
/// should show [`Skipped::notes`] so that it is not silent either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Skipped {
    /// Points (or samples, or CI points) with a NaN or infinite coordinate.
    pub non_finite: usize,
    /// Points with a zero or negative coordinate on a log axis (for error
    /// bars: x, or the mean on a log y axis).
    pub non_positive: usize,
    /// Histogram samples outside explicit bin edges.
    pub outside_bins: usize,
    /// Series with no drawable point left (drawn nowhere, not in the legend).
    pub empty_series: usize,
    /// Error bars drawn, with their point, whose interval reaches zero or
    /// below on a log y axis: the bar runs uncapped to the bottom of the
    /// plot. Not a point left out (not in [`Skipped::points`]).
    pub open_bars: usize,
}

impl Skipped {
    /// Total points left out (not counting empty series).
    pub fn points(&self) -> usize {
        self.non_finite + self.non_positive + self.outside_bins
    }

    /// One sentence per reason with a non-zero count, for a warning under
    /// the chart's name; empty when the chart shows all of its data.
    ///
    /// ```
    /// let k = pep_plot::Skipped { non_positive: 2, open_bars: 1, ..Default::default() };
    /// assert_eq!(k.notes(), [
    ///     "2 points with a zero or negative value on a log axis are not drawn",
    ///     "1 error bar reaches zero or below: drawn down to the bottom of the log axis, without a cap",
    /// ]);
    /// ```
    pub fn notes(&self) -> Vec<String> {
        // (count, subject and verb for one, for many, the rest)
        let reasons = [
            (
                self.non_finite,
                "point with a NaN or infinite value is",
                "points with a NaN or infinite value are",
                "not drawn",
            ),
            (
                self.non_positive,
                "point with a zero or negative value on a log axis is",
                "points with a zero or negative value on a log axis are",
                "not drawn",
            ),
            (
                self.outside_bins,
                "sample outside the bin edges is",
                "samples outside the bin edges are",
                "not counted",
            ),
            (
                self.empty_series,
                "series has",
                "series have",
                "nothing to draw (left out, legend included)",
            ),
            (
                self.open_bars,
                "error bar reaches",
                "error bars reach",
                "zero or below: drawn down to the bottom of the log axis, without a cap",
            ),
        ];
        reasons
            .into_iter()
            .filter(|r| r.0 > 0)
            .map(|(k, one, many, rest)| format!("{k} {} {rest}", if k == 1 { one } else { many }))
            .collect()
    }
}
