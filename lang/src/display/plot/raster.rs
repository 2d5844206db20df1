//! PNG and SVG figures with plotters (the module above says what they show).
//!
//! Layout, from the top: the title; the plot with its axes, tick labels and axis labels; to
//! its right, the legend (line charts with named series) or the colour bar (heatmaps), so
//! neither covers the data. A PNG is drawn at `SUPERSAMPLE` times its size and averaged down,
//! which anti-aliases lines and text. A heatmap's cells are painted as pixels, not drawn as
//! elements: into the PNG's buffer, and into the SVG as one embedded PNG image.
//!
//! Text uses DejaVu Sans, embedded in the binary (`assets/`), so no system font is needed.

use std::ops::Range;
use std::sync::Once;

use plotters::backend::{BitMapBackend, DrawingBackend, SVGBackend};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    axis_label, decimate, finite_range, ticks, viridis, Chart, Figure, Labels, Series, PALETTE,
};

/// Size of PNG and SVG figures, in pixels.
pub const WIDTH: u32 = 640;
pub const HEIGHT: u32 = 400;

/// A PNG is drawn this many times larger in each direction, then averaged down.
const SUPERSAMPLE: u32 = 3;

/// Colour bar steps of a heatmap (SVG rectangles).
const COLOUR_STEPS: usize = 64;

/// Most pixels of a heatmap's embedded image along each axis (more cells are sampled).
const MAX_IMAGE_SIDE: usize = 512;

type BoxError = Box<dyn std::error::Error>;
type Axes = Cartesian2d<Ticked, Ticked>;
/// The plot's pixels (x range, y range) in the backend's coordinates.
type PixelRect = (Range<i32>, Range<i32>);

/// A linear axis whose ticks are the ones `ticks` chose (plotters' own are not always round
/// and may crowd their labels); it has no minor grid lines.
struct Ticked {
    linear: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ticked {
    fn new(range: Range<f64>, ticks: Vec<f64>) -> Ticked {
        Ticked {
            linear: range.into(),
            ticks,
        }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.linear.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.linear.range()
    }
}

pub(super) fn register_font() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        let font: &'static [u8] = include_bytes!("../../../assets/DejaVuSans.ttf");
        // A failure leaves text undrawn; the figure itself is still drawn.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, font);
    });
}

fn rgb((r, g, b): (u8, u8, u8)) -> RGBColor {
    RGBColor(r, g, b)
}

/// The figure as a PNG file.
pub fn png(figure: &Figure) -> Vec<u8> {
    register_font();
    let (width, height) = (WIDTH * SUPERSAMPLE, HEIGHT * SUPERSAMPLE);
    let mut pixels = vec![255u8; width as usize * height as usize * 3];
    let cells_at = {
        let root = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
        // On failure the picture is what was drawn so far; it is still a PNG.
        draw(figure, &root, SUPERSAMPLE).ok().flatten()
    };
    if let (Chart::Heatmap(rows), Some(rect)) = (&figure.chart, cells_at) {
        paint_cells(&mut pixels, width as usize, &rect, rows);
    }
    let small = downsample(
        &pixels,
        width as usize,
        height as usize,
        SUPERSAMPLE as usize,
    );
    crate::display::encode_png(&small, WIDTH, HEIGHT)
}

/// The figure as an SVG document.
pub fn svg(figure: &Figure) -> String {
    register_font();
    let mut svg = String::new();
    let cells_at = {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        match draw(figure, &root, 1) {
            Ok(cells_at) => cells_at,
            Err(err) => {
                return format!("<svg xmlns=\"http://www.w3.org/2000/svg\"><!-- {err} --></svg>")
            }
        }
    };
    if let (Chart::Heatmap(rows), Some(rect)) = (&figure.chart, cells_at) {
        if let Some(end) = svg.rfind("</svg>") {
            svg.insert_str(end, &cells_image(&rect, rows));
        }
    }
    svg
}

/// Draws everything but a heatmap's cells, whose place it returns.
fn draw<DB: DrawingBackend>(
    figure: &Figure,
    root: &DrawingArea<DB, Shift>,
    scale: u32,
) -> Result<Option<PixelRect>, BoxError>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let s = f64::from(scale);
    let root = root.margin(8.0 * s, 6.0 * s, 6.0 * s, 6.0 * s);
    let body = if figure.labels.title.is_empty() {
        root
    } else {
        root.titled(&figure.labels.title, ("sans-serif", 16.0 * s))?
    };
    let cells_at = match &figure.chart {
        Chart::Lines { series, index_axis } => {
            draw_lines(&body, series, *index_axis, &figure.labels, s)?;
            None
        }
        Chart::Bars(values) => {
            draw_bars(&body, values, &figure.labels, s)?;
            None
        }
        Chart::Heatmap(rows) => Some(draw_heatmap(&body, rows, &figure.labels, s)?),
        Chart::Points { xs, ys, shades } => {
            draw_points(&body, xs, ys, shades.as_deref(), &figure.labels, s)?;
            None
        }
    };
    body.present()?;
    Ok(cells_at)
}

/// Where the axes go and how their ticks are chosen.
struct AxisSpec {
    x: (f64, f64),
    y: (f64, f64),
    x_integer: bool,
    y_integer: bool,
    /// Rows top to bottom (a heatmap).
    y_down: bool,
}

impl AxisSpec {
    /// Axes over `x` and `y` with ticks anywhere, rows bottom to top.
    fn over(x: (f64, f64), y: (f64, f64)) -> AxisSpec {
        AxisSpec {
            x,
            y,
            x_integer: false,
            y_integer: false,
            y_down: false,
        }
    }
}

/// A chart on `area` with round ticks that never crowd their labels, light grid lines and
/// the axis labels.
fn axes_on<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    spec: &AxisSpec,
    labels: &Labels,
    s: f64,
    grid: bool,
) -> Result<ChartContext<'a, DB, Axes>, BoxError>
where
    DB::ErrorType: 'static,
{
    let tick_font = ("sans-serif", 12.0 * s);
    let label_width = |value: f64| -> f64 {
        area.estimate_text_size(&axis_label(value), &tick_font.into_text_style(area))
            .map_or(40.0 * s, |(width, _)| f64::from(width))
    };
    let widest = |ticks: &[f64]| {
        ticks
            .iter()
            .map(|&value| label_width(value))
            .fold(0.0, f64::max)
    };
    let (x_lo, x_hi) = spec.x;
    let (y_lo, y_hi) = spec.y;
    let x_area = x_label_area(labels, s);
    let (width, height) = area.dim_in_pixel();
    let plot_height = f64::from(height) - x_area - 8.0 * s;
    let y_ticks = ticks::ticks(
        y_lo,
        y_hi,
        ticks::fitting(plot_height, 12.0 * s, 18.0 * s),
        spec.y_integer,
    );
    // The widest y tick label sets the room on the left; the x labels' width their density.
    let y_label_px = widest(&y_ticks);
    let y_area = y_label_px + 12.0 * s + if labels.y.is_empty() { 0.0 } else { 20.0 * s };
    let plot_width = f64::from(width) - y_area - 16.0 * s;
    // Measured on a first guess at the ticks, then on the ticks that width allows, until
    // the labels measured are the labels drawn (other ticks may have longer labels).
    let mut x_label_px = widest(&ticks::ticks(x_lo, x_hi, 8, spec.x_integer));
    let mut x_ticks = Vec::new();
    for _ in 0..3 {
        let count = ticks::fitting(plot_width, x_label_px, 18.0 * s);
        x_ticks = ticks::ticks(x_lo, x_hi, count, spec.x_integer);
        let drawn = widest(&x_ticks);
        if drawn <= x_label_px {
            break;
        }
        x_label_px = drawn;
    }
    let (n_x, n_y) = (x_ticks.len(), y_ticks.len());
    let y_range = if spec.y_down { y_hi..y_lo } else { y_lo..y_hi };
    let mut chart = ChartBuilder::on(area)
        // Room on the right for half of the last x tick label: nothing is clipped.
        .margin_right((x_label_px / 2.0 + 4.0 * s) as u32)
        .margin_top((8.0 * s) as u32)
        .x_label_area_size(x_area as u32)
        .y_label_area_size(y_area as u32)
        .build_cartesian_2d(
            Ticked::new(x_lo..x_hi, x_ticks),
            Ticked::new(y_range, y_ticks),
        )?;
    let light = RGBColor(232, 232, 232);
    let mut mesh = chart.configure_mesh();
    mesh.x_labels(n_x)
        .y_labels(n_y)
        .x_label_formatter(&|x| axis_label(*x))
        .y_label_formatter(&|y| axis_label(*y))
        .label_style(tick_font)
        .axis_desc_style(("sans-serif", 13.0 * s))
        .axis_style(RGBColor(90, 90, 90).stroke_width(scale_width(s, 1.0)))
        .bold_line_style(light.stroke_width(scale_width(s, 1.0)))
        .light_line_style(TRANSPARENT)
        .x_desc(labels.x.as_str())
        .y_desc(labels.y.as_str());
    if !grid {
        mesh.disable_mesh();
    }
    mesh.draw()?;
    Ok(chart)
}

/// The room under a plot for the x tick labels and the x axis's label.
fn x_label_area(labels: &Labels, s: f64) -> f64 {
    24.0 * s + if labels.x.is_empty() { 0.0 } else { 20.0 * s }
}

fn scale_width(s: f64, width: f64) -> u32 {
    (width * s).round().max(1.0) as u32
}

/// The width of a legend beside the plot: the longest label and its line sample.
fn legend_width<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[Series],
    s: f64,
) -> f64 {
    let font = ("sans-serif", 13.0 * s).into_text_style(area);
    let longest = series
        .iter()
        .map(|curve| {
            area.estimate_text_size(&curve.label, &font)
                .map_or(0.0, |(width, _)| f64::from(width))
        })
        .fold(0.0, f64::max);
    longest + 46.0 * s
}

fn draw_lines<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[Series],
    index_axis: bool,
    labels: &Labels,
    s: f64,
) -> Result<(), BoxError>
where
    DB::ErrorType: 'static,
{
    let named = series.iter().any(|curve| !curve.label.is_empty());
    let (plot_area, legend_area) = if named {
        let width = f64::from(area.dim_in_pixel().0);
        let (left, right) = area.split_horizontally((width - legend_width(area, series, s)) as u32);
        (left, Some(right))
    } else {
        (area.clone(), None)
    };
    let spec = AxisSpec {
        x_integer: index_axis,
        ..AxisSpec::over(
            finite_range(series.iter().flat_map(|curve| curve.xs.iter().copied())),
            finite_range(series.iter().flat_map(|curve| curve.ys.iter().copied())),
        )
    };
    let mut chart = axes_on(&plot_area, &spec, labels, s, true)?;
    let columns = chart.plotting_area().dim_in_pixel().0 as usize;
    for (idx, curve) in series.iter().enumerate() {
        let colour = rgb(PALETTE[idx % PALETTE.len()].0);
        let style = colour.stroke_width(scale_width(s, 1.75));
        for segment in decimate::segments(&curve.xs, &curve.ys, spec.x.0, spec.x.1, columns) {
            if let [point] = segment.as_slice() {
                chart.draw_series(std::iter::once(Circle::new(
                    *point,
                    scale_width(s, 2.0),
                    colour.filled(),
                )))?;
            } else {
                chart.draw_series(std::iter::once(PathElement::new(segment, style)))?;
            }
        }
    }
    if let Some(legend) = legend_area {
        let top = chart.plotting_area().get_pixel_range().1.start - legend.get_base_pixel().1;
        draw_legend(&legend, series, top, s)?;
    }
    Ok(())
}

/// A scatter plot: a dot per finite point, in the first series colour or, with shades, in
/// the viridis colour of its shade.
fn draw_points<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    xs: &[f64],
    ys: &[f64],
    shades: Option<&[f64]>,
    labels: &Labels,
    s: f64,
) -> Result<(), BoxError>
where
    DB::ErrorType: 'static,
{
    let spec = AxisSpec::over(
        finite_range(xs.iter().copied()),
        finite_range(ys.iter().copied()),
    );
    let mut chart = axes_on(area, &spec, labels, s, true)?;
    let (lo, hi) = finite_range(shades.unwrap_or_default().iter().copied());
    let colour = |idx: usize| match shades {
        Some(shades) => {
            let shade = shades.get(idx).copied().unwrap_or(f64::NAN);
            rgb(viridis((shade - lo) / (hi - lo)))
        }
        None => rgb(PALETTE[0].0),
    };
    let dots = (0..xs.len().min(ys.len()))
        .filter(|&idx| xs[idx].is_finite() && ys[idx].is_finite())
        .map(|idx| {
            Circle::new(
                (xs[idx], ys[idx]),
                scale_width(s, 2.5),
                colour(idx).filled(),
            )
        });
    chart.draw_series(dots)?;
    Ok(())
}

/// The legend: a line sample and a label per series, top-aligned with the plot.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[Series],
    top: i32,
    s: f64,
) -> Result<(), BoxError>
where
    DB::ErrorType: 'static,
{
    let row = (20.0 * s) as i32;
    let x0 = (12.0 * s) as i32;
    let sample = (22.0 * s) as i32;
    let font = ("sans-serif", 13.0 * s).into_font().color(&BLACK);
    for (idx, curve) in series
        .iter()
        .enumerate()
        .filter(|(_, curve)| !curve.label.is_empty())
    {
        let y = top + (8.0 * s) as i32 + row * idx as i32;
        let colour = rgb(PALETTE[idx % PALETTE.len()].0);
        area.draw(&PathElement::new(
            vec![(x0, y), (x0 + sample, y)],
            colour.stroke_width(scale_width(s, 2.0)),
        ))?;
        area.draw(&Text::new(
            curve.label.clone(),
            (x0 + sample + (6.0 * s) as i32, y - (7.0 * s) as i32),
            font.clone(),
        ))?;
    }
    Ok(())
}

fn draw_bars<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    values: &[f64],
    labels: &Labels,
    s: f64,
) -> Result<(), BoxError>
where
    DB::ErrorType: 'static,
{
    let spec = AxisSpec {
        x_integer: true,
        ..AxisSpec::over(
            (-0.5, values.len().max(1) as f64 - 0.5),
            finite_range(values.iter().copied().chain([0.0])),
        )
    };
    let mut chart = axes_on(area, &spec, labels, s, true)?;
    let colour = rgb(PALETTE[0].0);
    let columns = chart.plotting_area().dim_in_pixel().0 as usize;
    if values.len() <= columns / 2 {
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
    } else {
        // More bars than pixels: their outline, thinned per pixel column.
        let xs: Vec<f64> = (0..values.len()).map(|idx| idx as f64).collect();
        for segment in decimate::segments(&xs, values, spec.x.0, spec.x.1, columns) {
            let mut outline = vec![(segment[0].0, 0.0)];
            outline.extend(&segment);
            outline.push((segment[segment.len() - 1].0, 0.0));
            chart.draw_series(std::iter::once(Polygon::new(outline, colour.filled())))?;
        }
    }
    Ok(())
}

/// The axes and colour bar of a heatmap; returns where its cells go.
fn draw_heatmap<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    rows: &[Vec<f64>],
    labels: &Labels,
    s: f64,
) -> Result<PixelRect, BoxError>
where
    DB::ErrorType: 'static,
{
    let n_rows = rows.len().max(1);
    let n_columns = rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let (lo, hi) = finite_range(rows.iter().flatten().copied());
    let (width, height) = area.dim_in_pixel();
    // The colour bar's ticks, for a bar as tall as the plot (`axes_on` leaves the same room
    // above and below it); their widest label sets the room beside the bar.
    let bar_font = ("sans-serif", 12.0 * s);
    let bar_height = f64::from(height) - x_label_area(labels, s) - 8.0 * s;
    let bar_ticks = ticks::ticks(
        lo,
        hi,
        ticks::fitting(bar_height, 12.0 * s, 18.0 * s),
        false,
    );
    let bar_label_px = bar_ticks
        .iter()
        .map(|&value| {
            area.estimate_text_size(&axis_label(value), &bar_font.into_text_style(area))
                .map_or(40.0 * s, |(width, _)| f64::from(width))
        })
        .fold(0.0, f64::max);
    let bar_label_area = (bar_label_px + 12.0 * s).max(52.0 * s);
    let (plot_area, bar_area) =
        area.split_horizontally((f64::from(width) - bar_label_area - 38.0 * s) as u32);
    let spec = AxisSpec {
        x: (-0.5, n_columns as f64 - 0.5),
        y: (-0.5, n_rows as f64 - 0.5),
        x_integer: true,
        y_integer: true,
        y_down: true,
    };
    let chart = axes_on(&plot_area, &spec, labels, s, false)?;
    let cells = chart.plotting_area().get_pixel_range();
    // The colour bar: as tall as the plot, its own value axis on the left.
    let top = cells.1.start - bar_area.get_base_pixel().1;
    let bottom =
        f64::from(bar_area.dim_in_pixel().1) - f64::from(cells.1.end - bar_area.get_base_pixel().1);
    let n_ticks = bar_ticks.len();
    let mut bar = ChartBuilder::on(&bar_area)
        .margin_top(top.max(0) as u32)
        .margin_bottom(bottom.max(0.0) as u32)
        .margin_right((6.0 * s) as u32)
        .y_label_area_size(bar_label_area as u32)
        .build_cartesian_2d(
            Ticked::new(0.0..1.0, Vec::new()),
            Ticked::new(lo..hi, bar_ticks),
        )?;
    bar.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_labels(n_ticks)
        .y_label_formatter(&|y| axis_label(*y))
        .label_style(bar_font)
        .axis_style(RGBColor(90, 90, 90).stroke_width(scale_width(s, 1.0)))
        .draw()?;
    let step = (hi - lo) / COLOUR_STEPS as f64;
    bar.draw_series((0..COLOUR_STEPS).map(|k| {
        let from = lo + step * k as f64;
        let colour = rgb(viridis((k as f64 + 0.5) / COLOUR_STEPS as f64));
        Rectangle::new([(0.0, from), (1.0, from + step)], colour.filled())
    }))?;
    Ok(cells)
}

/// The cell of a table under each pixel of a `len`-pixel side with `n_cells` cells.
fn cell_of(pixel: usize, len: usize, n_cells: usize) -> usize {
    (pixel * n_cells / len.max(1)).min(n_cells.saturating_sub(1))
}

/// Paints a heatmap's cells into an RGB buffer `width` pixels wide.
fn paint_cells(pixels: &mut [u8], width: usize, rect: &PixelRect, rows: &[Vec<f64>]) {
    if rows.is_empty() {
        return;
    }
    let (lo, hi) = finite_range(rows.iter().flatten().copied());
    let (x_range, y_range) = (rect.0.clone(), rect.1.clone());
    let (w, h) = (
        (x_range.end - x_range.start).max(0) as usize,
        (y_range.end - y_range.start).max(0) as usize,
    );
    for py in 0..h {
        let row = &rows[cell_of(py, h, rows.len())];
        for px in 0..w {
            let value = row
                .get(cell_of(px, w, row.len()))
                .copied()
                .unwrap_or(f64::NAN);
            let (r, g, b) = viridis((value - lo) / (hi - lo));
            let at = ((y_range.start as usize + py) * width + x_range.start as usize + px) * 3;
            if let Some(pixel) = pixels.get_mut(at..at + 3) {
                pixel.copy_from_slice(&[r, g, b]);
            }
        }
    }
}

/// A heatmap's cells as an SVG `<image>` holding a PNG, one pixel per cell (sampled beyond
/// `MAX_IMAGE_SIDE`), stretched over the plot without smoothing.
fn cells_image(rect: &PixelRect, rows: &[Vec<f64>]) -> String {
    let n_rows = rows.len();
    let n_columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let (w, h) = (
        n_columns.clamp(1, MAX_IMAGE_SIDE),
        n_rows.clamp(1, MAX_IMAGE_SIDE),
    );
    let mut pixels = vec![128u8; w * h * 3];
    if n_rows > 0 && n_columns > 0 {
        paint_cells(&mut pixels, w, &(0..w as i32, 0..h as i32), rows);
    }
    let png = crate::display::encode_png(&pixels, w as u32, h as u32);
    format!(
        "<image x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" preserveAspectRatio=\"none\" \
         style=\"image-rendering:pixelated;image-rendering:crisp-edges\" \
         href=\"data:image/png;base64,{}\"/>\n",
        rect.0.start,
        rect.1.start,
        rect.0.end - rect.0.start,
        rect.1.end - rect.1.start,
        base64(&png)
    )
}

/// Averages `factor × factor` blocks of an RGB image.
fn downsample(pixels: &[u8], width: usize, height: usize, factor: usize) -> Vec<u8> {
    let (small_w, small_h) = (width / factor, height / factor);
    let mut small = vec![0u8; small_w * small_h * 3];
    let n = (factor * factor) as u32;
    for y in 0..small_h {
        for x in 0..small_w {
            let mut sum = [0u32; 3];
            for dy in 0..factor {
                let row = ((y * factor + dy) * width + x * factor) * 3;
                for channel_values in pixels[row..row + factor * 3].chunks(3) {
                    for (total, &value) in sum.iter_mut().zip(channel_values) {
                        *total += u32::from(value);
                    }
                }
            }
            let at = (y * small_w + x) * 3;
            for (channel, total) in sum.iter().enumerate() {
                small[at + channel] = ((total + n / 2) / n) as u8;
            }
        }
    }
    small
}

/// Standard base64 (RFC 4648, with padding), for data URIs.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let word = chunk.iter().enumerate().fold(0u32, |word, (idx, &byte)| {
            word | u32::from(byte) << (16 - 8 * idx)
        });
        for position in 0..4 {
            if position <= chunk.len() {
                text.push(ALPHABET[(word >> (18 - 6 * position) & 63) as usize] as char);
            } else {
                text.push('=');
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn downsampling_averages_blocks() {
        let pixels = [0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255, 255];
        assert_eq!(downsample(&pixels, 2, 2, 2), [191, 191, 191]);
    }
}
