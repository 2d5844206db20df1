use super::*;
use plotters::style::IntoFont;

fn parabola() -> Figure {
    let xs: Vec<f64> = (0..=20).map(|idx| idx as f64 / 10.0 - 1.0).collect();
    let ys = xs.iter().map(|x| x * x).collect();
    let ds = xs.iter().map(|x| 2.0 * x).collect();
    Figure {
        chart: Chart::Lines {
            series: vec![
                Series {
                    label: "f".into(),
                    xs: xs.clone(),
                    ys,
                },
                Series {
                    label: "f′".into(),
                    xs,
                    ys: ds,
                },
            ],
            index_axis: false,
        },
        labels: Labels {
            title: "f(x) = x * x".into(),
            x: "x".into(),
            y: String::new(),
        },
    }
}

fn decode(png: &[u8]) -> (u32, u32, Vec<u8>) {
    let decoder = ::png::Decoder::new(std::io::Cursor::new(png));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut rgb = vec![0; reader.output_buffer_size().expect("small")];
    let info = reader.next_frame(&mut rgb).expect("a frame");
    (info.width, info.height, rgb)
}

/// Pixels within a small distance of a colour (lines are anti-aliased).
fn near(rgb: &[u8], (r, g, b): (u8, u8, u8)) -> usize {
    rgb.chunks(3)
        .filter(|px| {
            let d = |a: u8, b: u8| (i32::from(a) - i32::from(b)).abs();
            d(px[0], r) + d(px[1], g) + d(px[2], b) < 40
        })
        .count()
}

#[test]
fn text_form_has_a_title_axes_and_a_legend_whose_markers_are_in_the_plot() {
    let text = parabola().to_text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + ROWS_OF_TEXT + 4, "{text}");
    assert_eq!(lines[0].trim(), "f(x) = x * x");
    assert!(lines[1].starts_with(" 2 ┤"), "{text}");
    assert!(lines[ROWS_OF_TEXT].starts_with("-2 ┤"), "{text}");
    assert_eq!(lines[ROWS_OF_TEXT + 3].trim(), "x");
    assert_eq!(lines[ROWS_OF_TEXT + 4].trim(), "● f   ○ f′");
    let plot: String = lines[1..=ROWS_OF_TEXT].join("\n");
    assert!(
        plot.contains('●') && plot.contains('○'),
        "markers in the plot:\n{text}"
    );
    assert!(text
        .chars()
        .any(|ch| ('\u{2801}'..='\u{28ff}').contains(&ch)));
    assert_eq!(text, parabola().to_text(), "the text form is stable");
    assert!(!text.contains('\x1b'));
}

const ROWS_OF_TEXT: usize = 15;

#[test]
fn the_terminal_form_colours_each_series() {
    let ansi = parabola().to_ansi();
    assert!(
        ansi.contains("\x1b[34m") && ansi.contains("\x1b[33m"),
        "{ansi}"
    );
    let plain: String = ansi
        .replace("\x1b[34m", "")
        .replace("\x1b[33m", "")
        .replace("\x1b[0m", "");
    assert_eq!(plain, parabola().to_text());
}

#[test]
fn png_shows_anti_aliased_curves_and_svg_the_words() {
    let (width, height, rgb) = decode(&parabola().to_png());
    assert_eq!((width, height), (640, 400));
    assert!(near(&rgb, PALETTE[0].0) > 300, "the first curve is drawn");
    assert!(near(&rgb, PALETTE[1].0) > 300, "the second curve is drawn");
    // Anti-aliasing: pixels part blue, part white, along the blue curve.
    let blends = rgb
        .chunks(3)
        .filter(|px| px[2] > px[0] && px[0] > 60 && px[0] < 220 && px[2] > 200)
        .count();
    assert!(blends > 100, "edges are blended: {blends}");
    let svg = parabola().to_svg().replace('\n', "");
    assert!(svg.starts_with("<svg") && svg.contains("</svg>"));
    for words in ["f(x) = x * x", ">x<", ">f′<"] {
        assert!(svg.contains(words), "{words} in the SVG");
    }
}

#[test]
fn index_axes_have_integer_ticks() {
    let figure = Figure {
        chart: Chart::Lines {
            series: vec![Series {
                label: String::new(),
                xs: vec![0.0, 1.0, 2.0, 3.0],
                ys: vec![1.0, 4.0, 9.0, 16.0],
            }],
            index_axis: true,
        },
        labels: Labels::default(),
    };
    let svg = figure.to_svg().replace('\n', "");
    assert!(svg.contains(">3<") && svg.contains(">0<"), "{svg}");
    assert!(!svg.contains(">0.5<") && !svg.contains(">2.5<"));
}

fn heatmap(n: usize) -> Figure {
    let rows = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| ((i * 7919 + j * 104729) % 1000) as f64)
                .collect()
        })
        .collect();
    Figure {
        chart: Chart::Heatmap(rows),
        labels: Labels {
            title: "noise".into(),
            ..Labels::default()
        },
    }
}

#[test]
fn heatmaps_are_an_image_with_a_colour_bar_and_stay_small() {
    let small = Figure {
        chart: Chart::Heatmap(vec![vec![0.0, 1.0], vec![2.0, 3.0]]),
        labels: Labels::default(),
    };
    assert_eq!(
        small.to_text(),
        "│ ░│\n│▓█│\n2×2 heatmap: ' ' = 0 … '█' = 3"
    );
    let big = heatmap(1000);
    let svg = big.to_svg();
    assert_eq!(svg.matches("<image").count(), 1, "the cells are one image");
    assert!(
        svg.matches("<rect").count() < 200,
        "a bounded number of elements"
    );
    assert!(svg.len() < 1_200_000, "{} bytes", svg.len());
    assert!(!big.svg_is_small(), "a notebook gets the PNG alone");
    let png = big.to_png();
    assert!(png.len() < 1_000_000, "{} bytes", png.len());
    // The colour bar: the ramp's ends, beside the plot.
    let (width, _, rgb) = decode(&png);
    let column =
        |x: usize| -> Vec<&[u8]> { rgb.chunks(3).skip(x).step_by(width as usize).collect() };
    let bar_columns = (560..640)
        .filter(|&x| {
            let column = column(x);
            column.iter().any(|px| near(px, viridis(0.0)) == 1)
                && column.iter().any(|px| near(px, viridis(1.0)) == 1)
        })
        .count();
    assert!(
        bar_columns >= 8,
        "a colour bar at the right: {bar_columns} columns"
    );
}

#[test]
fn a_million_point_line_stays_small() {
    let xs: Vec<f64> = (0..1_000_000).map(|idx| idx as f64).collect();
    let ys = xs
        .iter()
        .map(|x| (x * 0.001).sin() + (x * 0.37).sin() * 0.1)
        .collect();
    let figure = Figure {
        chart: Chart::Lines {
            series: vec![Series {
                label: String::new(),
                xs,
                ys,
            }],
            index_axis: true,
        },
        labels: Labels::default(),
    };
    let svg = figure.to_svg();
    assert!(svg.len() < 200_000, "{} bytes", svg.len());
    assert!(figure.to_png().len() < 1_000_000);
}

#[test]
fn degenerate_figures_draw() {
    let lines = |series| Chart::Lines {
        series,
        index_axis: false,
    };
    for chart in [
        lines(Vec::new()),
        lines(vec![Series {
            label: String::new(),
            xs: vec![1.0],
            ys: vec![f64::NAN],
        }]),
        lines(vec![Series {
            label: "one".into(),
            xs: vec![1.0],
            ys: vec![2.0],
        }]),
        Chart::Heatmap(Vec::new()),
        Chart::Heatmap(vec![vec![f64::NAN]]),
        Chart::Bars(Vec::new()),
        Chart::Bars(vec![1.0, -2.0, f64::NAN]),
        Chart::Bars((0..5000).map(|k| k as f64).collect()),
    ] {
        let figure = Figure {
            chart,
            labels: Labels::default(),
        };
        assert!(!figure.to_png().is_empty());
        assert!(figure.to_svg().contains("svg"));
        let _ = figure.to_text();
    }
}

#[test]
fn bars_in_text() {
    let bars = Figure {
        chart: Chart::Bars(vec![1.0, -2.0, f64::NAN]),
        labels: Labels {
            title: "grad".into(),
            ..Labels::default()
        },
    };
    assert!(bars.to_svg().contains("grad"));
    assert_eq!(bars.to_text().lines().next().map(str::trim), Some("grad"));
    assert!(bars.to_text().contains("1 │████"), "{}", bars.to_text());
}

/// A text element of a figure's SVG, as plotters writes it.
#[derive(Debug)]
struct Words {
    text: String,
    x: f64,
    y: f64,
    /// `start`, `middle` or `end`.
    anchor: String,
    /// The renderer's font size: plotters writes it divided by 1.24 into the SVG.
    size: f64,
    /// Degrees of a `rotate(…)` transform (the y axis's label), 0 when there is none.
    rotation: u32,
}

impl Words {
    /// The width and height of the words, measured with the renderer's font at the
    /// renderer's size (as the renderer measures its labels).
    fn size_in_pixels(&self) -> (f64, f64) {
        raster::register_font();
        let font = ("sans-serif", self.size).into_font();
        let (width, height) = font.box_size(&self.text).expect("the font measures text");
        (f64::from(width), f64::from(height))
    }

    fn width(&self) -> f64 {
        self.size_in_pixels().0
    }

    fn height(&self) -> f64 {
        self.size_in_pixels().1
    }

    /// Where the words start and end along the direction they run in: x when they are
    /// upright, y when they are turned.
    fn span(&self) -> (f64, f64) {
        let width = self.width();
        let (before, after) = match self.anchor.as_str() {
            "start" => (0.0, width),
            "end" => (-width, 0.0),
            _ => (-width / 2.0, width / 2.0),
        };
        match self.rotation {
            0 => (self.x + before, self.x + after),
            // Turned a quarter anticlockwise: the words run up the page.
            270 => (self.y - after, self.y - before),
            90 => (self.y + before, self.y + after),
            other => panic!("words turned by {other}°"),
        }
    }
}

fn parse_svg(svg: &str) -> roxmltree::Document<'_> {
    roxmltree::Document::parse(svg).unwrap_or_else(|err| panic!("the SVG parses: {err}"))
}

fn number(node: roxmltree::Node, attribute: &str) -> f64 {
    let text = node
        .attribute(attribute)
        .unwrap_or_else(|| panic!("<{}> has {attribute}", node.tag_name().name()));
    text.parse()
        .unwrap_or_else(|_| panic!("{attribute}=\"{text}\" is a number"))
}

/// The SVG's words that are drawn (plotters also writes empty text elements for absent axis
/// labels).
fn svg_words(svg: &str) -> Vec<Words> {
    let document = parse_svg(svg);
    assert_eq!(document.root_element().tag_name().name(), "svg");
    document
        .descendants()
        .filter(|node| node.has_tag_name("text"))
        .filter_map(|node| {
            let text = node.text().unwrap_or_default().trim().to_string();
            if text.is_empty() {
                return None;
            }
            let rotation = node.attribute("transform").map_or(0, |transform| {
                let degrees = transform
                    .strip_prefix("rotate(")
                    .and_then(|rest| rest.split(',').next())
                    .unwrap_or_else(|| panic!("a rotation: {transform}"));
                degrees.trim().parse().expect("whole degrees")
            });
            Some(Words {
                text,
                x: number(node, "x"),
                y: number(node, "y"),
                anchor: node.attribute("text-anchor").unwrap_or("start").into(),
                size: number(node, "font-size") * 1.24,
                rotation,
            })
        })
        .collect()
}

/// The tick labels under the x axis, left to right: upright, centred on their tick, in the
/// tick font (12 px), on one line.
fn x_tick_labels(words: &[Words]) -> Vec<&Words> {
    let mut labels: Vec<&Words> = words
        .iter()
        .filter(|words| {
            words.rotation == 0 && words.anchor == "middle" && (words.size - 12.0).abs() < 0.01
        })
        .collect();
    let lowest = labels.iter().map(|words| words.y).fold(f64::MIN, f64::max);
    labels.retain(|words| words.y == lowest);
    labels.sort_by(|a, b| a.x.total_cmp(&b.x));
    labels
}

/// The tick labels left of a vertical axis at `x`, top to bottom.
fn y_tick_labels(words: &[Words], x: f64) -> Vec<&Words> {
    let mut labels: Vec<&Words> = words
        .iter()
        .filter(|words| words.rotation == 0 && words.anchor == "end" && words.x == x)
        .collect();
    labels.sort_by(|a, b| a.y.total_cmp(&b.y));
    labels
}

fn line(xs: Vec<f64>, ys: Vec<f64>, label: &str, index_axis: bool) -> Figure {
    Figure {
        chart: Chart::Lines {
            series: vec![Series {
                label: label.into(),
                xs,
                ys,
            }],
            index_axis,
        },
        labels: Labels {
            title: "a title".into(),
            x: "along".into(),
            y: "up".into(),
        },
    }
}

/// A line over `0..=hi` whose last x tick sits at the right end of the axis.
fn wide(hi: f64, label: &str) -> Figure {
    line(vec![0.0, hi], vec![0.0, 1.0], label, false)
}

/// A line over an index axis of `n` points.
fn long_index(n: usize) -> Figure {
    let xs: Vec<f64> = (0..n).map(|idx| idx as f64).collect();
    let ys = xs.iter().map(|x| (x * 0.01).sin()).collect();
    line(xs, ys, "", true)
}

/// Figures whose tick labels are long or many, with and without a legend.
fn crowded_figures() -> Vec<(String, Figure)> {
    let mut figures = vec![
        ("0..1e9".to_string(), wide(1e9, "")),
        (
            "0..1e9 with a legend".to_string(),
            wide(1e9, "a long series name"),
        ),
        ("10⁴ indices".to_string(), long_index(10_000)),
        ("parabola".to_string(), parabola()),
        (
            "bars".to_string(),
            Figure {
                chart: Chart::Bars((0..5000).map(|k| k as f64).collect()),
                labels: Labels::default(),
            },
        ),
        ("heatmap".to_string(), heatmap(1000)),
        (
            "heatmap of big values".to_string(),
            scaled_heatmap(50, -1e7),
        ),
    ];
    for hi in [0.7, 1.5, 12345.0, 99999.0, 123456789.0, 7.3e-5, 3e12] {
        figures.push((format!("0..{hi}"), wide(hi, "")));
        figures.push((
            format!("-{hi}..{hi}"),
            line(vec![-hi, hi], vec![-hi, hi], "", false),
        ));
    }
    for n in [2, 11, 99, 1001, 12345, 123457] {
        figures.push((format!("{n} indices"), long_index(n)));
    }
    figures
}

#[test]
fn nothing_is_clipped_in_the_svg() {
    for (name, figure) in crowded_figures() {
        let svg = figure.to_svg();
        let words = svg_words(&svg);
        for words in &words {
            let (start, end) = words.span();
            let room = if words.rotation == 0 {
                f64::from(raster::HEIGHT)
            } else {
                f64::from(raster::WIDTH)
            };
            let across = if words.rotation == 0 {
                words.y
            } else {
                words.x
            };
            let limit = if words.rotation == 0 {
                raster::WIDTH
            } else {
                raster::HEIGHT
            };
            assert!(
                start >= 0.0 && end <= f64::from(limit),
                "{name}: {words:?} spans {start}..{end}, outside 0..{limit}"
            );
            assert!(
                (0.0..=room).contains(&across),
                "{name}: {words:?} is outside the figure"
            );
        }
        let ticks = x_tick_labels(&words);
        assert!(ticks.len() >= 2, "{name}: x tick labels: {ticks:?}");
        let last = ticks[ticks.len() - 1];
        assert!(
            last.span().1 <= f64::from(raster::WIDTH) - 4.0,
            "{name}: the last x tick label {last:?} ends at {}",
            last.span().1
        );
    }
}

#[test]
fn the_last_tick_label_is_not_cut_off_in_the_png() {
    for (name, figure) in crowded_figures() {
        let (width, height, rgb) = decode(&figure.to_png());
        let (width, height) = (width as usize, height as usize);
        // The figure's right edge is paper: no ink of a label running off the image.
        for x in width - 3..width {
            for y in 0..height {
                let px = &rgb[(y * width + x) * 3..][..3];
                assert!(
                    px.iter().all(|&channel| channel >= 245),
                    "{name}: ink {px:?} at ({x}, {y}), the figure's right edge"
                );
            }
        }
    }
}

#[test]
fn tick_labels_never_overlap() {
    for (name, figure) in crowded_figures() {
        let words = svg_words(&figure.to_svg());
        let ticks = x_tick_labels(&words);
        assert!(ticks.len() >= 2, "{name}: x tick labels: {ticks:?}");
        for pair in ticks.windows(2) {
            let (left, right) = (pair[0].span(), pair[1].span());
            assert!(
                left.1 + 4.0 <= right.0,
                "{name}: x tick labels {:?} ({left:?}) and {:?} ({right:?}) overlap",
                pair[0].text,
                pair[1].text
            );
        }
        // The y axis's labels (and a colour bar's), stacked: their heights do not overlap.
        let mut axes: Vec<f64> = words
            .iter()
            .filter(|words| words.anchor == "end" && words.rotation == 0)
            .map(|words| words.x)
            .collect();
        axes.dedup();
        assert!(!axes.is_empty(), "{name}: y tick labels");
        for x in axes {
            let ticks = y_tick_labels(&words, x);
            for pair in ticks.windows(2) {
                let (above, below) = (pair[0], pair[1]);
                assert!(
                    above.y + above.height() / 2.0 + 2.0 <= below.y - below.height() / 2.0,
                    "{name}: y tick labels {above:?} and {below:?} overlap"
                );
            }
        }
    }
}

#[test]
fn wide_axes_get_few_round_ticks() {
    let words = svg_words(&wide(1e9, "").to_svg());
    let ticks: Vec<f64> = x_tick_labels(&words)
        .iter()
        .map(|words| words.text.parse().expect("a number"))
        .collect();
    assert!((3..=8).contains(&ticks.len()), "{ticks:?}");
    assert_eq!(ticks[0], 0.0);
    assert_eq!(ticks[ticks.len() - 1], 1e9, "{ticks:?}");
    let words = svg_words(&long_index(10_000).to_svg());
    let ticks: Vec<f64> = x_tick_labels(&words)
        .iter()
        .map(|words| words.text.parse().expect("a number"))
        .collect();
    assert!((3..=12).contains(&ticks.len()), "{ticks:?}");
    assert!(ticks.iter().all(|tick| tick.fract() == 0.0), "{ticks:?}");
}

/// A heatmap whose values are `scale` times `heatmap`'s (long colour bar labels).
fn scaled_heatmap(n: usize, scale: f64) -> Figure {
    let mut figure = heatmap(n);
    if let Chart::Heatmap(rows) = &mut figure.chart {
        for value in rows.iter_mut().flatten() {
            *value *= scale;
        }
    }
    figure
}

#[test]
fn a_heatmaps_svg_is_an_image_and_a_colour_bar() {
    for scale in [1.0, 1e6, -1e7, -1e-7] {
        a_heatmaps_svg_is_an_image_and_a_colour_bar_at(scale);
    }
}

fn a_heatmaps_svg_is_an_image_and_a_colour_bar_at(scale: f64) {
    let figure = scaled_heatmap(300, scale);
    let svg = figure.to_svg();
    let document = parse_svg(&svg);
    let images: Vec<_> = document
        .descendants()
        .filter(|node| node.has_tag_name("image"))
        .collect();
    assert_eq!(images.len(), 1, "the cells are one image");
    let image = images[0];
    let href = image.attribute("href").expect("the image has a source");
    assert!(
        href.starts_with("data:image/png;base64,"),
        "an embedded PNG"
    );
    let (left, top) = (number(image, "x"), number(image, "y"));
    let (right, bottom) = (left + number(image, "width"), top + number(image, "height"));
    assert!(right - left > 200.0 && bottom - top > 200.0, "{svg:.300}");
    // The colour bar: the ramp's colours as rectangles right of the cells, as tall as they.
    let ramp: Vec<String> = (0..64)
        .map(|k| {
            let (r, g, b) = viridis((f64::from(k) + 0.5) / 64.0);
            format!("#{r:02X}{g:02X}{b:02X}")
        })
        .collect();
    let steps: Vec<_> = document
        .descendants()
        .filter(|node| node.has_tag_name("rect"))
        .filter(|node| {
            node.attribute("fill")
                .is_some_and(|fill| ramp.iter().any(|colour| colour.eq_ignore_ascii_case(fill)))
        })
        .collect();
    assert!(steps.len() >= 60, "the colour bar's steps: {}", steps.len());
    for step in &steps {
        assert!(
            number(*step, "x") >= right,
            "the colour bar is beside the cells"
        );
    }
    let bar_top = steps
        .iter()
        .map(|step| number(*step, "y"))
        .fold(f64::MAX, f64::min);
    let bar_bottom = steps
        .iter()
        .map(|step| number(*step, "y") + number(*step, "height"))
        .fold(f64::MIN, f64::max);
    assert!(
        (bar_top - top).abs() <= 2.0 && (bar_bottom - bottom).abs() <= 2.0,
        "the bar spans {bar_top}..{bar_bottom}, the cells {top}..{bottom}"
    );
    // Its scale: numbers between the cells and the bar, within the values' range.
    let words = svg_words(&svg);
    let bar_labels: Vec<&Words> = words
        .iter()
        .filter(|words| words.x > right && words.rotation == 0)
        .collect();
    let (lo, hi) = (0.0f64.min(999.0 * scale), 0.0f64.max(999.0 * scale));
    for label in &bar_labels {
        let value: f64 = label.text.parse().expect("a number on the colour bar");
        assert!(
            (lo..=hi).contains(&value),
            "{scale}: {value} outside {lo}..{hi}"
        );
        assert!(
            label.span().0 >= right + 2.0,
            "{scale}: the colour bar's label {label:?} runs onto the cells (which end at {right})"
        );
    }
    assert!(bar_labels.len() >= 3, "{scale}: {bar_labels:?}");
    assert!(words.iter().any(|words| words.text == "noise"), "the title");
    // Without the SVG elements of a colour bar there is no point drawing one in the PNG.
    assert!(!figure.svg_is_small());
}
