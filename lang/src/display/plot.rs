//! Figures (LANGUAGE.md §7): line charts (`:plot ys`, `:plot (xs, ys…)`, `:plotgrad`), bar
//! charts (a gradient over an index set) and heatmaps (a 2-D table), drawn three ways:
//! PNG and SVG with plotters (for notebooks and `:plot … > "file.png"`), and Unicode braille
//! text with axes and a legend (for terminals and the `>` lines of literate files, where it is
//! a stable text form).
//!
//! Text in PNG and SVG uses DejaVu Sans, embedded in the binary (`assets/`), so no system font
//! is needed. Non-finite points are left out of every drawing.

use std::sync::Once;

use plotters::backend::{BitMapBackend, DrawingBackend, SVGBackend};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::format_f64;

/// Pixel size of PNG and SVG figures.
const WIDTH: u32 = 640;
const HEIGHT: u32 = 400;

/// Braille canvas of the text form, in characters (each is 2 × 4 dots).
const TEXT_COLUMNS: usize = 60;
const TEXT_ROWS: usize = 15;

/// Series colours (matplotlib's first ones), with their names in the text legend.
const PALETTE: [(RGBColor, char); 4] = [
    (RGBColor(31, 119, 180), '●'),
    (RGBColor(255, 127, 14), '○'),
    (RGBColor(44, 160, 44), '◆'),
    (RGBColor(214, 39, 40), '◇'),
];

/// A curve of a line chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub label: String,
    pub xs: Vec<f64>,
    pub ys: Vec<f64>,
}

/// What a figure shows.
#[derive(Clone, Debug, PartialEq)]
pub enum Figure {
    /// Curves over a shared x axis.
    Lines(Vec<Series>),
    /// One bar per index (a gradient over an index set).
    Bars { label: String, values: Vec<f64> },
    /// A 2-D table: rows top to bottom, columns left to right.
    Heatmap(Vec<Vec<f64>>),
}

/// An error while drawing (only a bug in plotters or an empty canvas can cause one).
type DrawResult = Result<(), String>;

fn register_font() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        let font: &'static [u8] = include_bytes!("../../assets/DejaVuSans.ttf");
        // A failure leaves text undrawn; the figure itself is still drawn.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, font);
    });
}

impl Figure {
    /// The figure as an SVG document.
    pub fn to_svg(&self) -> String {
        register_font();
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
            if let Err(err) = self.draw(&root) {
                return format!("<svg xmlns=\"http://www.w3.org/2000/svg\"><!-- {err} --></svg>");
            }
        }
        svg
    }

    /// The figure as a PNG file.
    pub fn to_png(&self) -> Vec<u8> {
        register_font();
        let mut rgb = vec![255u8; WIDTH as usize * HEIGHT as usize * 3];
        {
            let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
            // On failure the picture is what was drawn so far; it is still a PNG.
            let _ = self.draw(&root);
        }
        super::encode_png(&rgb, WIDTH, HEIGHT)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(|err| err.to_string())?;
        match self {
            Figure::Lines(series) => draw_lines(root, series),
            Figure::Bars { label, values } => draw_bars(root, label, values),
            Figure::Heatmap(rows) => draw_heatmap(root, rows),
        }
        .map_err(|err| err.to_string())?;
        root.present().map_err(|err| err.to_string())
    }

    /// The figure as braille text with axes labels and a legend: the same for the same data.
    pub fn to_text(&self) -> String {
        match self {
            Figure::Lines(series) => text_lines(series),
            Figure::Bars { label, values } => text_bars(label, values),
            Figure::Heatmap(rows) => text_heatmap(rows),
        }
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

type BoxError = Box<dyn std::error::Error>;

fn draw_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    series: &[Series],
) -> Result<(), BoxError>
where
    DB::ErrorType: 'static,
{
    let x_range = finite_range(series.iter().flat_map(|curve| curve.xs.iter().copied()));
    let y_range = finite_range(series.iter().flat_map(|curve| curve.ys.iter().copied()));
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(32)
        .y_label_area_size(56)
        .build_cartesian_2d(x_range.0..x_range.1, y_range.0..y_range.1)?;
    chart
        .configure_mesh()
        .light_line_style(RGBColor(235, 235, 235))
        .label_style(("sans-serif", 13))
        .draw()?;
    for (idx, curve) in series.iter().enumerate() {
        let colour = PALETTE[idx % PALETTE.len()].0;
        let points = curve
            .xs
            .iter()
            .zip(&curve.ys)
            .map(|(&x, &y)| (x, y))
            .filter(|(x, y)| x.is_finite() && y.is_finite());
        chart
            .draw_series(LineSeries::new(points, colour.stroke_width(2)))?
            .label(curve.label.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
            });
    }
    if series.len() > 1 || series.iter().any(|curve| !curve.label.is_empty()) {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .label_font(("sans-serif", 13))
            .draw()?;
    }
    Ok(())
}

fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    label: &str,
    values: &[f64],
) -> Result<(), BoxError>
where
    DB::ErrorType: 'static,
{
    let (lo, hi) = finite_range(values.iter().copied().chain([0.0]));
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .caption(label, ("sans-serif", 15))
        .x_label_area_size(32)
        .y_label_area_size(56)
        .build_cartesian_2d(-0.5..values.len() as f64 - 0.5, lo..hi)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .label_style(("sans-serif", 13))
        .draw()?;
    let colour = PALETTE[0].0;
    chart.draw_series(
        values
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .map(|(idx, &value)| {
                let x = idx as f64;
                Rectangle::new([(x - 0.4, 0.0), (x + 0.4, value)], colour.filled())
            }),
    )?;
    Ok(())
}

fn draw_heatmap<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    rows: &[Vec<f64>],
) -> Result<(), BoxError>
where
    DB::ErrorType: 'static,
{
    let n_rows = rows.len();
    let n_columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let (lo, hi) = finite_range(rows.iter().flatten().copied());
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(32)
        .y_label_area_size(40)
        .build_cartesian_2d(0.0..n_columns.max(1) as f64, n_rows.max(1) as f64..0.0)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .label_style(("sans-serif", 13))
        .draw()?;
    chart.draw_series(rows.iter().enumerate().flat_map(|(row, values)| {
        values.iter().enumerate().map(move |(column, &value)| {
            let (x, y) = (column as f64, row as f64);
            let colour = viridis_like((value - lo) / (hi - lo));
            Rectangle::new([(x, y), (x + 1.0, y + 1.0)], colour.filled())
        })
    }))?;
    Ok(())
}

/// A colour ramp from dark blue through teal to yellow; `t` in [0, 1] (NaN is grey).
fn viridis_like(t: f64) -> RGBColor {
    if !t.is_finite() {
        return RGBColor(128, 128, 128);
    }
    let stops = [
        (68.0, 1.0, 84.0),
        (33.0, 145.0, 140.0),
        (253.0, 231.0, 37.0),
    ];
    let t = t.clamp(0.0, 1.0) * 2.0;
    let (from, to, local) = if t <= 1.0 {
        (stops[0], stops[1], t)
    } else {
        (stops[1], stops[2], t - 1.0)
    };
    let mix = |a: f64, b: f64| (a + (b - a) * local).round() as u8;
    RGBColor(mix(from.0, to.0), mix(from.1, to.1), mix(from.2, to.2))
}

/// A number for an axis label: short (`%.4g`-like), through the float printer.
fn axis_label(value: f64) -> String {
    let rounded: f64 = format!("{value:.3e}").parse().unwrap_or(value);
    let text = format_f64(rounded);
    text.strip_suffix('.').map(str::to_string).unwrap_or(text)
}

/// Line charts as braille: each character cell holds 2 × 4 dots. Every series is drawn with
/// lines between its points; the legend names each series with its marker.
fn text_lines(series: &[Series]) -> String {
    let (x_lo, x_hi) = finite_range(series.iter().flat_map(|curve| curve.xs.iter().copied()));
    let (y_lo, y_hi) = finite_range(series.iter().flat_map(|curve| curve.ys.iter().copied()));
    let (dots_x, dots_y) = (TEXT_COLUMNS * 2, TEXT_ROWS * 4);
    let mut dots = vec![vec![false; dots_x]; dots_y];
    let to_dot = |x: f64, y: f64| {
        let column = (x - x_lo) / (x_hi - x_lo) * (dots_x - 1) as f64;
        let row = (y_hi - y) / (y_hi - y_lo) * (dots_y - 1) as f64;
        (column, row)
    };
    for curve in series {
        let points: Vec<(f64, f64)> = curve
            .xs
            .iter()
            .zip(&curve.ys)
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .map(|(&x, &y)| to_dot(x, y))
            .collect();
        for pair in points.windows(2) {
            let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
            let steps = (x1 - x0).abs().max((y1 - y0).abs()).ceil().max(1.0) as usize;
            for step in 0..=steps {
                let t = step as f64 / steps as f64;
                set_dot(&mut dots, x0 + (x1 - x0) * t, y0 + (y1 - y0) * t);
            }
        }
        if let [(x, y)] = points.as_slice() {
            set_dot(&mut dots, *x, *y);
        }
    }
    let top = axis_label(y_hi);
    let bottom = axis_label(y_lo);
    let margin = top.chars().count().max(bottom.chars().count());
    let mut lines = Vec::new();
    for row in 0..TEXT_ROWS {
        let label = match row {
            0 => top.clone(),
            _ if row == TEXT_ROWS - 1 => bottom.clone(),
            _ => String::new(),
        };
        let cells: String = (0..TEXT_COLUMNS)
            .map(|column| braille(&dots, row, column))
            .collect();
        lines.push(format!(
            "{label:>margin$} ┤{}",
            cells.trim_end_matches('\u{2800}')
        ));
    }
    lines.push(format!("{:margin$} └{}", "", "─".repeat(TEXT_COLUMNS)));
    let (left, right) = (axis_label(x_lo), axis_label(x_hi));
    let gap = TEXT_COLUMNS.saturating_sub(left.chars().count() + right.chars().count());
    lines.push(format!("{:margin$}  {left}{}{right}", "", " ".repeat(gap)));
    let legend: Vec<String> = series
        .iter()
        .enumerate()
        .filter(|(_, curve)| !curve.label.is_empty())
        .map(|(idx, curve)| format!("{} {}", PALETTE[idx % PALETTE.len()].1, curve.label))
        .collect();
    if !legend.is_empty() {
        lines.push(format!("{:margin$}  {}", "", legend.join("   ")));
    }
    lines
        .iter()
        .map(|line| line.trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

fn set_dot(dots: &mut [Vec<bool>], column: f64, row: f64) {
    let (column, row) = (column.round(), row.round());
    if column < 0.0 || row < 0.0 {
        return;
    }
    if let Some(dot) = dots
        .get_mut(row as usize)
        .and_then(|line| line.get_mut(column as usize))
    {
        *dot = true;
    }
}

/// The braille character of text cell (`row`, `column`).
fn braille(dots: &[Vec<bool>], row: usize, column: usize) -> char {
    // Bit of each dot of a cell, by (dot row, dot column): Unicode's braille numbering.
    const BITS: [[u32; 2]; 4] = [[0x01, 0x08], [0x02, 0x10], [0x04, 0x20], [0x40, 0x80]];
    let mut code = 0;
    for (dot_row, bits) in BITS.iter().enumerate() {
        for (dot_column, bit) in bits.iter().enumerate() {
            if dots[row * 4 + dot_row][column * 2 + dot_column] {
                code |= bit;
            }
        }
    }
    char::from_u32(0x2800 + code).unwrap_or(' ')
}

/// Bars as text: one row per index (at most `TEXT_ROWS * 2`, the ends kept around `...`),
/// each a bar of `█` from a shared zero column and the value.
fn text_bars(label: &str, values: &[f64]) -> String {
    let (lo, hi) = finite_range(values.iter().copied().chain([0.0]));
    let width = TEXT_COLUMNS as f64;
    let zero = ((0.0 - lo) / (hi - lo) * width).round() as usize;
    let index_width = values.len().saturating_sub(1).to_string().len();
    let mut lines = vec![label.to_string()];
    let shown: Vec<Option<usize>> = if values.len() > TEXT_ROWS * 2 {
        (0..TEXT_ROWS)
            .map(Some)
            .chain([None])
            .chain((values.len() - TEXT_ROWS..values.len()).map(Some))
            .collect()
    } else {
        (0..values.len()).map(Some).collect()
    };
    for idx in shown {
        let Some(idx) = idx else {
            lines.push(format!("{:>index_width$} │", "..."));
            continue;
        };
        let value = values[idx];
        let end = if value.is_finite() {
            ((value - lo) / (hi - lo) * width).round() as usize
        } else {
            zero
        };
        let (from, to) = (zero.min(end), zero.max(end));
        let bar = format!("{}{}", " ".repeat(from), "█".repeat(to - from));
        let pad = TEXT_COLUMNS.saturating_sub(to);
        lines.push(format!(
            "{idx:>index_width$} │{bar}{} {}",
            " ".repeat(pad),
            format_f64(value)
        ));
    }
    lines.join("\n")
}

/// A heatmap as shaded blocks, one character per cell (rows of at most `TEXT_COLUMNS` cells
/// and `TEXT_ROWS * 2` rows are sampled evenly), with the value range.
fn text_heatmap(rows: &[Vec<f64>]) -> String {
    const SHADES: [char; 5] = [' ', '░', '▒', '▓', '█'];
    let (lo, hi) = finite_range(rows.iter().flatten().copied());
    let sample = |len: usize, max: usize| -> Vec<usize> {
        let shown = len.min(max);
        (0..shown).map(|idx| idx * len / shown.max(1)).collect()
    };
    let mut lines = Vec::new();
    for row in sample(rows.len(), TEXT_ROWS * 2) {
        let line: String = sample(rows[row].len(), TEXT_COLUMNS)
            .into_iter()
            .map(|column| {
                let t = (rows[row][column] - lo) / (hi - lo);
                if t.is_finite() {
                    SHADES[((t * 4.0).round() as usize).min(4)]
                } else {
                    '?'
                }
            })
            .collect();
        lines.push(format!("│{line}│"));
    }
    lines.push(format!(
        "{}×{} heatmap: ' ' = {} … '█' = {}",
        rows.len(),
        rows.iter().map(Vec::len).max().unwrap_or(0),
        axis_label(lo),
        axis_label(hi)
    ));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parabola() -> Figure {
        let xs: Vec<f64> = (0..=20).map(|idx| idx as f64 / 10.0 - 1.0).collect();
        let ys = xs.iter().map(|x| x * x).collect();
        let ds = xs.iter().map(|x| 2.0 * x).collect();
        Figure::Lines(vec![
            Series {
                label: "f".into(),
                xs: xs.clone(),
                ys,
            },
            Series {
                label: "f'".into(),
                xs,
                ys: ds,
            },
        ])
    }

    #[test]
    fn text_form_has_axes_and_a_legend() {
        let text = parabola().to_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), TEXT_ROWS + 3);
        assert!(lines[0].starts_with(" 2 ┤"), "{text}");
        assert!(lines[TEXT_ROWS - 1].starts_with("-2 ┤"), "{text}");
        assert!(lines[TEXT_ROWS + 1].contains("-1") && lines[TEXT_ROWS + 1].ends_with('1'));
        assert_eq!(lines[TEXT_ROWS + 2].trim(), "● f   ○ f'");
        assert!(text
            .chars()
            .any(|ch| ('\u{2801}'..='\u{28ff}').contains(&ch)));
        assert_eq!(text, parabola().to_text(), "the text form is stable");
    }

    #[test]
    fn png_and_svg_show_the_curves() {
        let png = parabola().to_png();
        let decoder = png::Decoder::new(std::io::Cursor::new(png));
        let mut reader = decoder.read_info().expect("a PNG");
        let mut rgb = vec![0; reader.output_buffer_size().expect("small")];
        reader.next_frame(&mut rgb).expect("a frame");
        let count = |colour: RGBColor| {
            rgb.chunks(3)
                .filter(|px| px == &[colour.0, colour.1, colour.2])
                .count()
        };
        assert!(count(PALETTE[0].0) > 200, "the first curve is drawn");
        assert!(count(PALETTE[1].0) > 200, "the second curve is drawn");
        let svg = parabola().to_svg();
        assert!(svg.starts_with("<svg") && svg.contains("</svg>"));
        // The legend names f' (the SVG escapes the apostrophe).
        assert!(svg.contains("f&apos;"), "the legend is in the SVG");
    }

    #[test]
    fn heatmaps_and_bars() {
        let heatmap = Figure::Heatmap(vec![vec![0.0, 1.0], vec![2.0, 3.0]]);
        assert_eq!(
            heatmap.to_text(),
            "│ ░│\n│▓█│\n2×2 heatmap: ' ' = 0 … '█' = 3"
        );
        assert!(!heatmap.to_png().is_empty());
        let bars = Figure::Bars {
            label: "grad".into(),
            values: vec![1.0, -2.0, f64::NAN],
        };
        assert!(bars.to_svg().contains("grad"));
        assert_eq!(bars.to_text().lines().next(), Some("grad"));
        assert!(bars.to_text().contains("1 │████"), "{}", bars.to_text());
    }

    #[test]
    fn degenerate_figures_draw() {
        for figure in [
            Figure::Lines(Vec::new()),
            Figure::Lines(vec![Series {
                label: String::new(),
                xs: vec![1.0],
                ys: vec![f64::NAN],
            }]),
            Figure::Heatmap(Vec::new()),
            Figure::Bars {
                label: String::new(),
                values: Vec::new(),
            },
        ] {
            assert!(!figure.to_png().is_empty());
            assert!(figure.to_svg().contains("svg"));
            let _ = figure.to_text();
        }
    }
}
