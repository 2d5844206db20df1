use super::*;

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
