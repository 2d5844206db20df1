//! Figures as text: Unicode braille (each character cell holds 2 × 4 dots) for curves, block
//! characters for bars and heatmaps, with the title, axis labels and a legend. The legend's
//! marker of each series also marks the series' last point in the plot, so curves can be told
//! apart in plain text; in a terminal each series is drawn in its colour as well.

use super::{axis_label, finite_range, Chart, Figure, Labels, Series, PALETTE};
use crate::display::format_f64;

/// Braille canvas of the text form, in characters.
pub(in crate::display) const COLUMNS: usize = 60;
const ROWS: usize = 15;

/// ANSI colours of the palette's series (blue, yellow for orange, green, red).
const ANSI: [&str; 4] = ["\x1b[34m", "\x1b[33m", "\x1b[32m", "\x1b[31m"];
const RESET: &str = "\x1b[0m";

pub fn text(figure: &Figure, colour: bool) -> String {
    let body = match &figure.chart {
        Chart::Lines { series, .. } => lines(series, &figure.labels, colour, true),
        Chart::Points { xs, ys, .. } => {
            let points = Series {
                label: String::new(),
                xs: xs.clone(),
                ys: ys.clone(),
            };
            lines(&[points], &figure.labels, colour, false)
        }
        Chart::Bars(values) => bars(values),
        Chart::Heatmap(rows) => heatmap(rows),
    };
    let mut out = Vec::new();
    if !figure.labels.title.is_empty() {
        let pad = (COLUMNS + 6).saturating_sub(figure.labels.title.chars().count()) / 2;
        out.push(format!("{}{}", " ".repeat(pad), figure.labels.title));
    }
    out.push(body);
    out.join("\n")
}

fn paint(text: String, series: Option<usize>, colour: bool) -> String {
    match series {
        Some(idx) if colour => format!("{}{text}{RESET}", ANSI[idx % ANSI.len()]),
        _ => text,
    }
}

/// Curves: lines between consecutive finite points (when `joined`; dots alone otherwise), the
/// last point of each marked.
fn lines(series: &[Series], labels: &Labels, colour: bool, joined: bool) -> String {
    let (x_lo, x_hi) = finite_range(series.iter().flat_map(|curve| curve.xs.iter().copied()));
    let (y_lo, y_hi) = finite_range(series.iter().flat_map(|curve| curve.ys.iter().copied()));
    let (dots_x, dots_y) = (COLUMNS * 2, ROWS * 4);
    // Each dot remembers the series that set it last.
    let mut dots: Vec<Vec<Option<usize>>> = vec![vec![None; dots_x]; dots_y];
    let mut markers: Vec<Option<usize>> = vec![None; COLUMNS * ROWS];
    let to_dot = |x: f64, y: f64| {
        let column = (x - x_lo) / (x_hi - x_lo) * (dots_x - 1) as f64;
        let row = (y_hi - y) / (y_hi - y_lo) * (dots_y - 1) as f64;
        (column, row)
    };
    let named = series.iter().any(|curve| !curve.label.is_empty());
    for (idx, curve) in series.iter().enumerate() {
        let mut last: Option<(f64, f64)> = None;
        let mut previous: Option<(f64, f64)> = None;
        for (&x, &y) in curve.xs.iter().zip(&curve.ys) {
            if !(x.is_finite() && y.is_finite()) {
                previous = None;
                continue;
            }
            let (column, row) = to_dot(x, y);
            match previous.filter(|_| joined) {
                Some(from) => segment_dots(&mut dots, from, (column, row), idx),
                None => set_dot(&mut dots, column, row, idx),
            }
            previous = Some((column, row));
            last = Some((column, row));
        }
        if let (Some((column, row)), true) = (last, named) {
            let cell = (row.round() as usize / 4).min(ROWS - 1) * COLUMNS
                + (column.round() as usize / 2).min(COLUMNS - 1);
            markers[cell] = Some(idx);
        }
    }
    let top = axis_label(y_hi);
    let bottom = axis_label(y_lo);
    let margin = top.chars().count().max(bottom.chars().count());
    let mut out = Vec::new();
    if !labels.y.is_empty() {
        out.push(labels.y.clone());
    }
    for row in 0..ROWS {
        let label = match row {
            0 => top.clone(),
            _ if row == ROWS - 1 => bottom.clone(),
            _ => String::new(),
        };
        let mut cells: Vec<(String, Option<usize>)> = (0..COLUMNS)
            .map(|column| match markers[row * COLUMNS + column] {
                Some(idx) => (PALETTE[idx % PALETTE.len()].1.to_string(), Some(idx)),
                None => braille(&dots, row, column),
            })
            .collect();
        while cells.last().is_some_and(|(text, _)| text == "\u{2800}") {
            cells.pop();
        }
        let cells: String = cells
            .into_iter()
            .map(|(text, idx)| paint(text, idx, colour))
            .collect();
        out.push(format!("{label:>margin$} ┤{cells}"));
    }
    out.push(format!("{:margin$} └{}", "", "─".repeat(COLUMNS)));
    let (left, right) = (axis_label(x_lo), axis_label(x_hi));
    let gap = COLUMNS.saturating_sub(left.chars().count() + right.chars().count());
    out.push(format!("{:margin$}  {left}{}{right}", "", " ".repeat(gap)));
    if !labels.x.is_empty() {
        let pad = margin + 2 + COLUMNS.saturating_sub(labels.x.chars().count()) / 2;
        out.push(format!("{}{}", " ".repeat(pad), labels.x));
    }
    let legend: Vec<String> = series
        .iter()
        .enumerate()
        .filter(|(_, curve)| !curve.label.is_empty())
        .map(|(idx, curve)| {
            let marker = paint(
                PALETTE[idx % PALETTE.len()].1.to_string(),
                Some(idx),
                colour,
            );
            format!("{marker} {}", curve.label)
        })
        .collect();
    if !legend.is_empty() {
        out.push(format!("{:margin$}  {}", "", legend.join("   ")));
    }
    out.iter()
        .map(|line| line.trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The dots of a segment between two dots (fractional), one per dot it crosses.
pub(in crate::display) fn segment_dots(
    dots: &mut [Vec<Option<usize>>],
    (c1, r1): (f64, f64),
    (c2, r2): (f64, f64),
    series: usize,
) {
    let steps = (c2 - c1).abs().max((r2 - r1).abs()).ceil().clamp(1.0, 1e5) as usize;
    for step in 0..=steps {
        let t = step as f64 / steps as f64;
        set_dot(dots, c1 + (c2 - c1) * t, r1 + (r2 - r1) * t, series);
    }
}

/// Sets the dot nearest to (`column`, `row`) to `series`, if it is on the canvas.
pub(in crate::display) fn set_dot(
    dots: &mut [Vec<Option<usize>>],
    column: f64,
    row: f64,
    series: usize,
) {
    let (column, row) = (column.round(), row.round());
    if column < 0.0 || row < 0.0 {
        return;
    }
    if let Some(dot) = dots
        .get_mut(row as usize)
        .and_then(|line| line.get_mut(column as usize))
    {
        *dot = Some(series);
    }
}

/// The braille character of text cell (`row`, `column`), and the series with most dots in it.
pub(in crate::display) fn braille(
    dots: &[Vec<Option<usize>>],
    row: usize,
    column: usize,
) -> (String, Option<usize>) {
    // Bit of each dot of a cell, by (dot row, dot column): Unicode's braille numbering.
    const BITS: [[u32; 2]; 4] = [[0x01, 0x08], [0x02, 0x10], [0x04, 0x20], [0x40, 0x80]];
    let mut code = 0;
    let mut counts = [0usize; PALETTE.len()];
    for (dot_row, bits) in BITS.iter().enumerate() {
        for (dot_column, bit) in bits.iter().enumerate() {
            if let Some(series) = dots[row * 4 + dot_row][column * 2 + dot_column] {
                code |= bit;
                counts[series % PALETTE.len()] += 1;
            }
        }
    }
    let owner = (code != 0).then(|| {
        (0..counts.len())
            .max_by_key(|&idx| (counts[idx], std::cmp::Reverse(idx)))
            .unwrap_or(0)
    });
    (
        char::from_u32(0x2800 + code).unwrap_or(' ').to_string(),
        owner,
    )
}

/// Bars as text: one row per index (at most `ROWS * 2`, the ends kept around `...`), each a
/// bar of `█` from a shared zero column and the value.
fn bars(values: &[f64]) -> String {
    let (lo, hi) = finite_range(values.iter().copied().chain([0.0]));
    let width = COLUMNS as f64;
    let zero = ((0.0 - lo) / (hi - lo) * width).round() as usize;
    let index_width = values.len().saturating_sub(1).to_string().len();
    let mut out = Vec::new();
    let shown: Vec<Option<usize>> = if values.len() > ROWS * 2 {
        (0..ROWS)
            .map(Some)
            .chain([None])
            .chain((values.len() - ROWS..values.len()).map(Some))
            .collect()
    } else {
        (0..values.len()).map(Some).collect()
    };
    for idx in shown {
        let Some(idx) = idx else {
            out.push(format!("{:>index_width$} │", "..."));
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
        let pad = COLUMNS.saturating_sub(to);
        out.push(format!(
            "{idx:>index_width$} │{bar}{} {}",
            " ".repeat(pad),
            format_f64(value)
        ));
    }
    out.join("\n")
}

/// A heatmap as shaded blocks, one character per cell (rows of at most `COLUMNS` cells and
/// `ROWS * 2` rows are sampled evenly), with the value range.
fn heatmap(rows: &[Vec<f64>]) -> String {
    const SHADES: [char; 5] = [' ', '░', '▒', '▓', '█'];
    let (lo, hi) = finite_range(rows.iter().flatten().copied());
    let sample = |len: usize, max: usize| -> Vec<usize> {
        let shown = len.min(max);
        (0..shown).map(|idx| idx * len / shown.max(1)).collect()
    };
    let mut out = Vec::new();
    for row in sample(rows.len(), ROWS * 2) {
        let line: String = sample(rows[row].len(), COLUMNS)
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
        out.push(format!("│{line}│"));
    }
    out.push(format!(
        "{}×{} heatmap: ' ' = {} … '█' = {}",
        rows.len(),
        rows.iter().map(Vec::len).max().unwrap_or(0),
        axis_label(lo),
        axis_label(hi)
    ));
    out.join("\n")
}
