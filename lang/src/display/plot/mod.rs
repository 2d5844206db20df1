//! Figures (docs/language.md): line charts (`:plot ys`, `:plot (xs, ys…)`, `:plotgrad`), bar
//! charts (a gradient over an index set) and heatmaps (a 2-D table), with a title, axis
//! labels and named series, drawn three ways:
//!
//! - `raster`: PNG (anti-aliased by drawing at three times the size and averaging) and SVG,
//!   with plotters, for notebooks and `:plot … > "file.png"`. Matplotlib's defaults are the
//!   bar: a legend beside the data rather than on it, ticks at round numbers (integers on an
//!   index axis) no closer than their labels are wide, a colour bar beside a heatmap, nothing
//!   clipped. Both stay small whatever the data: a curve keeps at most a few points per
//!   pixel column (`decimate`), a heatmap is one image, not one element per cell.
//! - `braille`: Unicode braille text with axes, labels and a legend whose markers also mark
//!   each curve, for terminals (in colour) and the `>` lines of literate files (plain, a
//!   stable text form).
//!
//! Non-finite points are left out of every drawing (a curve breaks there).

mod braille;
pub(super) use braille::{braille as braille_cell, segment_dots, set_dot, COLUMNS};
mod decimate;
mod raster;
mod ticks;

/// Series colours (matplotlib's first ones), with the markers that name them in text.
const PALETTE: [((u8, u8, u8), char); 4] = [
    ((31, 119, 180), '●'),
    ((255, 127, 14), '○'),
    ((44, 160, 44), '◆'),
    ((214, 39, 40), '◇'),
];

/// A scatter plot with more points than this has no SVG form in a notebook.
const MAX_SVG_POINTS: usize = 2000;

/// A curve of a line chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub label: String,
    pub xs: Vec<f64>,
    pub ys: Vec<f64>,
}

/// The words around a figure; empty ones are not drawn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Labels {
    pub title: String,
    pub x: String,
    pub y: String,
}

/// What a figure shows.
#[derive(Clone, Debug, PartialEq)]
pub enum Chart {
    /// Curves over a shared x axis; `index_axis` when x is a table's index (integer ticks).
    Lines {
        series: Vec<Series>,
        index_axis: bool,
    },
    /// One bar per index (a gradient over an index set).
    Bars(Vec<f64>),
    /// A 2-D table: rows top to bottom, columns left to right.
    Heatmap(Vec<Vec<f64>>),
    /// A scatter plot (Dex's `plot` library): a point at each (x, y), coloured by its shade
    /// (scaled to the shades' range) when there are shades.
    Points {
        xs: Vec<f64>,
        ys: Vec<f64>,
        shades: Option<Vec<f64>>,
    },
}

/// A chart with its labels.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub chart: Chart,
    pub labels: Labels,
}

impl Figure {
    /// The figure as a PNG file.
    pub fn to_png(&self) -> Vec<u8> {
        raster::png(self)
    }

    /// The figure as an SVG document (a heatmap's cells as one embedded PNG image).
    pub fn to_svg(&self) -> String {
        raster::svg(self)
    }

    /// Whether the SVG form is small enough to send beside the PNG to a notebook: vector
    /// charts are (their elements are bounded); a heatmap's SVG embeds a second image of its
    /// cells, so a notebook gets the PNG alone.
    pub fn svg_is_small(&self) -> bool {
        match &self.chart {
            Chart::Heatmap(_) => false,
            // One SVG element per point: a big scatter plot is sent as its PNG alone.
            Chart::Points { xs, .. } => xs.len() <= MAX_SVG_POINTS,
            Chart::Lines { .. } | Chart::Bars(_) => true,
        }
    }

    /// The figure as braille text with axes, labels and a legend: the same for the same data.
    pub fn to_text(&self) -> String {
        braille::text(self, false)
    }

    /// `to_text` with each series in its colour (ANSI escapes), for a terminal.
    pub fn to_ansi(&self) -> String {
        braille::text(self, true)
    }
}

/// The range of the finite values, widened when it is a single point.
fn finite_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|value| value.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), value| {
            (lo.min(value), hi.max(value))
        });
    if lo > hi {
        (0.0, 1.0)
    } else if lo == hi {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    }
}

/// A number for an axis label: short (`%.4g`-like), through the float printer.
fn axis_label(value: f64) -> String {
    let rounded: f64 = format!("{value:.3e}").parse().unwrap_or(value);
    // `-0` reads as a mistake on an axis.
    let rounded = if rounded == 0.0 { 0.0 } else { rounded };
    let text = super::format_f64(rounded);
    text.strip_suffix('.').map(str::to_string).unwrap_or(text)
}

/// A colour ramp close to matplotlib's viridis, from dark purple through teal to yellow; `t`
/// in [0, 1] (NaN is grey).
fn viridis(t: f64) -> (u8, u8, u8) {
    if !t.is_finite() {
        return (128, 128, 128);
    }
    const STOPS: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let scaled = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
    let idx = (scaled.floor() as usize).min(STOPS.len() - 2);
    let local = scaled - idx as f64;
    let (from, to) = (STOPS[idx], STOPS[idx + 1]);
    let mix = |a: f64, b: f64| (a + (b - a) * local).round() as u8;
    (mix(from.0, to.0), mix(from.1, to.1), mix(from.2, to.2))
}

#[cfg(test)]
mod tests;
