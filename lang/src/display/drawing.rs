//! Vector drawings (`:html` of a diagram of the `diagram` library): shapes in SVG pixels,
//! written as SVG for a notebook and drawn in braille for a terminal and literate files, as a
//! plot is. `session::diagram` makes a drawing from a diagram's value.

use std::fmt::Write;

use super::plot::{braille_cell, segment_dots, set_dot, COLUMNS};

/// Most rows of the text form's braille canvas (it is as wide as a plot's, `COLUMNS`).
const MAX_ROWS: usize = 30;

/// A drawing: the region `view` (`x`, `y`, width, height in pixels, `y` down) and the shapes
/// in it, in the order they are drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawing {
    pub view: (f64, f64, f64, f64),
    pub shapes: Vec<Shape>,
}

/// A shape with its style: colours as SVG writes them (`#rrggbb` or `none`), the stroke's
/// width in pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    pub geom: Geom,
    pub fill: String,
    pub stroke: String,
    pub stroke_width: f64,
}

/// A shape's geometry, in pixels.
#[derive(Clone, Debug, PartialEq)]
pub enum Geom {
    /// A dot (drawn as a disc of radius 1).
    Point {
        x: f64,
        y: f64,
    },
    Circle {
        x: f64,
        y: f64,
        r: f64,
    },
    /// A rectangle from its corner of least `x` and `y`.
    Rect {
        x: f64,
        y: f64,
        w: f64,
        h: f64,
    },
    Line {
        x1: f64,
        y1: f64,
        x2: f64,
        y2: f64,
    },
}

impl Drawing {
    /// The SVG text: the view's size, each shape in a group carrying its style.
    pub fn to_svg(&self) -> String {
        let (x, y, w, h) = self.view;
        let mut out = format!(
            "<svg width=\"{}\" height=\"{}\" viewBox=\"{} {} {} {}\">",
            number(w),
            number(h),
            number(x),
            number(y),
            number(w),
            number(h),
        );
        for shape in &self.shapes {
            let element = match shape.geom {
                Geom::Point { x, y } => circle(x, y, 1.0),
                Geom::Circle { x, y, r } => circle(x, y, r),
                Geom::Rect { x, y, w, h } => format!(
                    "<rect width=\"{}\" height=\"{}\" x=\"{}\" y=\"{}\"/>",
                    number(w),
                    number(h),
                    number(x),
                    number(y)
                ),
                Geom::Line { x1, y1, x2, y2 } => format!(
                    "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                    number(x1),
                    number(y1),
                    number(x2),
                    number(y2)
                ),
            };
            let _ = write!(
                out,
                "<g stroke=\"{}\" fill=\"{}\" stroke-width=\"{}\">{element}</g>",
                shape.stroke,
                shape.fill,
                number(shape.stroke_width)
            );
        }
        out.push_str("</svg>");
        out
    }

    /// The text form: the shapes in braille, `COLUMNS` characters wide and as tall as the
    /// view's proportions give (a braille dot is about square), filled shapes filled and the
    /// others outlined; a last line gives the size of the SVG.
    pub fn to_text(&self) -> String {
        let (view_x, view_y, view_w, view_h) = self.view;
        let dots_x = COLUMNS * 2;
        let rows = ((view_h / view_w.max(f64::MIN_POSITIVE) * dots_x as f64 / 4.0).ceil() as usize)
            .clamp(1, MAX_ROWS);
        let dots_y = rows * 4;
        let mut canvas = Canvas {
            dots: vec![vec![None; dots_x]; dots_y],
            scale: (
                (dots_x - 1) as f64 / view_w.max(f64::MIN_POSITIVE),
                (dots_y - 1) as f64 / view_h.max(f64::MIN_POSITIVE),
            ),
            origin: (view_x, view_y),
        };
        for shape in &self.shapes {
            canvas.draw(shape);
        }
        let mut lines: Vec<String> = (0..rows)
            .map(|row| {
                let line: String = (0..COLUMNS)
                    .map(|column| braille_cell(&canvas.dots, row, column).0)
                    .collect();
                line.trim_end_matches('\u{2800}').to_string()
            })
            .collect();
        lines.push(format!(
            "(drawing, {} × {} pixels as SVG)",
            number(view_w),
            number(view_h)
        ));
        lines.join("\n")
    }
}

/// A grid of braille dots over the view.
struct Canvas {
    dots: Vec<Vec<Option<usize>>>,
    /// Dots per pixel along `x` and `y`.
    scale: (f64, f64),
    origin: (f64, f64),
}

impl Canvas {
    /// The dot of a point in pixels (fractional).
    fn dot(&self, x: f64, y: f64) -> (f64, f64) {
        (
            (x - self.origin.0) * self.scale.0,
            (y - self.origin.1) * self.scale.1,
        )
    }

    fn set(&mut self, column: f64, row: f64) {
        set_dot(&mut self.dots, column, row, 0);
    }

    /// A segment between two points in pixels, a dot per dot it crosses.
    fn segment(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64)) {
        let (from, to) = (self.dot(x1, y1), self.dot(x2, y2));
        segment_dots(&mut self.dots, from, to, 0);
    }

    /// The dots whose centres lie in the box of pixels `(x, y, w, h)` and pass `inside` (a
    /// test in pixels).
    fn fill(&mut self, (x, y, w, h): (f64, f64, f64, f64), inside: impl Fn(f64, f64) -> bool) {
        let (c1, r1) = self.dot(x, y);
        let (c2, r2) = self.dot(x + w, y + h);
        let rows = dot_span(r1, r2, self.dots.len());
        let columns = dot_span(c1, c2, self.dots[0].len());
        for row in rows {
            for column in columns.clone() {
                let px = self.origin.0 + column as f64 / self.scale.0;
                let py = self.origin.1 + row as f64 / self.scale.1;
                if inside(px, py) {
                    self.dots[row][column] = Some(0);
                }
            }
        }
    }

    fn draw(&mut self, shape: &Shape) {
        let filled = shape.fill != "none";
        match shape.geom {
            Geom::Point { x, y } => {
                let (column, row) = self.dot(x, y);
                self.set(column, row);
            }
            Geom::Circle { x, y, r } => {
                if filled {
                    // At least the one dot of its centre, however small.
                    let (column, row) = self.dot(x, y);
                    self.set(column, row);
                    let inside = |px: f64, py: f64| (px - x).powi(2) + (py - y).powi(2) <= r * r;
                    self.fill((x - r, y - r, 2.0 * r, 2.0 * r), inside);
                } else {
                    let around = (std::f64::consts::TAU * r * self.scale.0.max(self.scale.1))
                        .ceil()
                        .clamp(8.0, 1e5) as usize;
                    for step in 0..around {
                        let angle = std::f64::consts::TAU * step as f64 / around as f64;
                        let (column, row) = self.dot(x + r * angle.cos(), y + r * angle.sin());
                        self.set(column, row);
                    }
                }
            }
            Geom::Rect { x, y, w, h } => {
                if filled {
                    self.fill((x, y, w, h), |_, _| true);
                }
                let corners = [(x, y), (x + w, y), (x + w, y + h), (x, y + h)];
                for (at, corner) in corners.iter().enumerate() {
                    self.segment(*corner, corners[(at + 1) % 4]);
                }
            }
            Geom::Line { x1, y1, x2, y2 } => self.segment((x1, y1), (x2, y2)),
        }
    }
}

/// The whole dots from `lo` to `hi` (fractional) among `n`: empty when none is in range.
fn dot_span(lo: f64, hi: f64, n: usize) -> std::ops::Range<usize> {
    lo.ceil().max(0.0) as usize..(hi.floor() + 1.0).clamp(0.0, n as f64) as usize
}

fn circle(x: f64, y: f64, r: f64) -> String {
    format!(
        "<circle cx=\"{}\" cy=\"{}\" r=\"{}\"/>",
        number(x),
        number(y),
        number(r)
    )
}

/// A coordinate as SVG text: at most three decimals, no trailing zeros (`12.5`, `-3`).
fn number(value: f64) -> String {
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    match text {
        "-0" => "0".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A drawing of one shape in the view from (-200, -100), 400 × 200 pixels.
    fn drawing(geom: Geom, fill: &str) -> Drawing {
        Drawing {
            view: (-200.0, -100.0, 400.0, 200.0),
            shapes: vec![Shape {
                geom,
                fill: fill.into(),
                stroke: "#000000".into(),
                stroke_width: 1.0,
            }],
        }
    }

    /// The dots set in the text form, as (row, column) of the braille grid.
    fn dots(text: &str) -> Vec<(usize, usize)> {
        const BITS: [[u32; 2]; 4] = [[0x01, 0x08], [0x02, 0x10], [0x04, 0x20], [0x40, 0x80]];
        let mut set = Vec::new();
        for (row, line) in text
            .lines()
            .filter(|line| !line.starts_with('('))
            .enumerate()
        {
            for (column, cell) in line.chars().enumerate() {
                let code = cell as u32 - 0x2800;
                for (dot_row, bits) in BITS.iter().enumerate() {
                    for (dot_column, bit) in bits.iter().enumerate() {
                        if code & bit != 0 {
                            set.push((row * 4 + dot_row, column * 2 + dot_column));
                        }
                    }
                }
            }
        }
        set
    }

    /// A filled disc fills the dots within its radius of its centre and no others; an
    /// outlined one leaves its centre empty; a line runs from corner to corner; the canvas
    /// keeps the view's proportions.
    #[test]
    fn shapes_are_drawn_where_they_are_in_the_view() {
        let circle = Geom::Circle {
            x: 100.0,
            y: 0.0,
            r: 50.0,
        };
        let disc = drawing(circle.clone(), "#ff0000");
        let text = disc.to_text();
        assert_eq!(text.lines().count(), 15 + 1, "{text}");
        assert!(
            text.ends_with("(drawing, 400 × 200 pixels as SVG)"),
            "{text}"
        );
        // 120 × 60 dots over 400 × 200 pixels: the centre (100, 0) is at dot column 89.25,
        // row 29.5, and the disc is about 15 dots across: every dot set is within it.
        let set = dots(&text);
        assert!(set.contains(&(30, 89)), "{text}");
        let pixel = |(row, column): (usize, usize)| {
            (
                column as f64 * 400.0 / 119.0 - 200.0,
                row as f64 * 200.0 / 59.0 - 100.0,
            )
        };
        for &dot in &set {
            let (x, y) = pixel(dot);
            assert!(
                (x - 100.0).hypot(y) <= 50.0,
                "dot {dot:?} outside the disc\n{text}"
            );
        }
        assert!(set.len() > 500, "{} dots\n{text}", set.len());
        let ring = drawing(circle, "none");
        let ring_dots = dots(&ring.to_text());
        assert!(!ring_dots.contains(&(30, 89)) && ring_dots.len() < 200);
        let line = drawing(
            Geom::Line {
                x1: -200.0,
                y1: -100.0,
                x2: 200.0,
                y2: 100.0,
            },
            "none",
        );
        let line_dots = dots(&line.to_text());
        assert!(line_dots.contains(&(0, 0)) && line_dots.contains(&(59, 119)));
        assert!(line_dots
            .iter()
            .all(|&(row, column)| (row as f64 - column as f64 / 2.0).abs() <= 1.0));
    }
}
