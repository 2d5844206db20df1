//! The drawing of a diagram of the `diagram` library (`:html render_svg d bounds`): Dex's
//! `render_svg` writes SVG in Dex code; dx's library keeps the shapes as data
//! (`RenderedDiagram(Diagram(shapes), (low, high))`) and this module makes them a
//! `display::Drawing`, whose SVG is Dex's: 400 pixels wide, the region `bounds` scaled to
//! fit, `y` upwards, each shape in a group carrying its stroke and fill.

use super::rich::scalar_value;
use crate::display::{DisplayValue, Drawing, Geom, Shape};

/// The width Dex's `render_svg` draws at, in pixels.
const WIDTH: f64 = 400.0;

/// The drawing of a `RenderedDiagram`'s fields, or `None` when they are not one.
pub(super) fn drawing(diagram: &DisplayValue, bounds: &DisplayValue) -> Option<Drawing> {
    let DisplayValue::Struct(name, fields) = diagram else {
        return None;
    };
    let ([list], "Diagram") = (fields.as_slice(), name.as_str()) else {
        return None;
    };
    let DisplayValue::Con(con, parts) = list else {
        return None;
    };
    let ("AsList", [_, DisplayValue::Table(shapes)]) = (con.as_str(), parts.as_slice()) else {
        return None;
    };
    let DisplayValue::Tuple(corners) = bounds else {
        return None;
    };
    let [low, high] = corners.as_slice() else {
        return None;
    };
    let ((x_min, y_min), (x_max, y_max)) = (point(low)?, point(high)?);
    let scale = WIDTH / (x_max - x_min);
    let height = (y_max - y_min) * scale;
    let shapes = (shapes.iter())
        .map(|shape| {
            let DisplayValue::Tuple(parts) = shape else {
                return None;
            };
            let [style, position, geom] = parts.as_slice() else {
                return None;
            };
            let (x, y) = point(position)?;
            // Flipped so that `y` goes up, then scaled (Dex's `flip_y` and `scale`).
            styled(style, (x * scale, -y * scale), geom, scale)
        })
        .collect::<Option<Vec<Shape>>>()?;
    Some(Drawing {
        view: (x_min * scale, -y_max * scale, WIDTH, height),
        shapes,
    })
}

/// One shape at `(x, y)` in pixels, with its style.
fn styled(
    style: &DisplayValue,
    (x, y): (f64, f64),
    geom: &DisplayValue,
    scale: f64,
) -> Option<Shape> {
    let DisplayValue::Struct(_, fields) = style else {
        return None;
    };
    let [fill, stroke, width] = fields.as_slice() else {
        return None;
    };
    let (fill, stroke, stroke_width) = (color(fill)?, color(stroke)?, scalar(width)?);
    let DisplayValue::Con(kind, args) = geom else {
        return None;
    };
    let args: Vec<&DisplayValue> = args.iter().collect();
    // A point is drawn solid, in its stroke colour.
    let (fill, geom) = match (kind.as_str(), args.as_slice()) {
        ("PointGeom", []) => (stroke.clone(), Geom::Point { x, y }),
        ("Circle", [r]) => (
            fill,
            Geom::Circle {
                x,
                y,
                r: scalar(r)? * scale,
            },
        ),
        ("Rectangle", [w, h]) => {
            let (w, h) = (scalar(w)? * scale, scalar(h)? * scale);
            let corner = (x - w / 2.0, y - h / 2.0);
            let (x, y) = corner;
            (fill, Geom::Rect { x, y, w, h })
        }
        ("Line", [to]) => {
            let (dx, dy) = point(to)?;
            let (x2, y2) = (x + dx * scale, y - dy * scale);
            (
                fill,
                Geom::Line {
                    x1: x,
                    y1: y,
                    x2,
                    y2,
                },
            )
        }
        _ => return None,
    };
    Some(Shape {
        geom,
        fill,
        stroke,
        stroke_width,
    })
}

/// `Point(x, y)`.
fn point(value: &DisplayValue) -> Option<(f64, f64)> {
    let DisplayValue::Struct(_, fields) = value else {
        return None;
    };
    let [x, y] = fields.as_slice() else {
        return None;
    };
    Some((scalar(x)?, scalar(y)?))
}

/// A `Maybe HtmlColor`: `#rrggbb`, or `none`.
fn color(value: &DisplayValue) -> Option<String> {
    let DisplayValue::Con(con, args) = value else {
        return None;
    };
    match (con.as_str(), args.as_slice()) {
        ("Nothing", []) => Some("none".to_string()),
        ("Just", [DisplayValue::Table(channels)]) if channels.len() == 3 => {
            let mut text = String::from("#");
            for channel in channels {
                let byte = scalar(channel)?.clamp(0.0, 255.0) as u8;
                text.push_str(&format!("{byte:02x}"));
            }
            Some(text)
        }
        _ => None,
    }
}

/// A number: a scalar, or a word as dx prints it (`0xff`, a byte `'\255'`).
fn scalar(value: &DisplayValue) -> Option<f64> {
    match value {
        DisplayValue::Scalar(scalar) => Some(scalar_value(*scalar)),
        DisplayValue::Text(text) => match text.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok().map(|n| n as f64),
            None => crate::syntax::escape::char_byte(text).map(f64::from),
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ir::Scalar;

    fn float(x: f32) -> DisplayValue {
        DisplayValue::Scalar(Scalar::F32(x))
    }

    fn point_value(x: f32, y: f32) -> DisplayValue {
        DisplayValue::Struct("Point".into(), vec![float(x), float(y)])
    }

    #[test]
    fn a_circle_is_scaled_flipped_and_styled() {
        let style = DisplayValue::Struct(
            "GeomStyle".into(),
            vec![
                DisplayValue::Con("Nothing".into(), Vec::new()),
                DisplayValue::Con(
                    "Just".into(),
                    vec![DisplayValue::Table(vec![
                        DisplayValue::Text("'\\255'".into()),
                        DisplayValue::Text("'\\NUL'".into()),
                        DisplayValue::Text("'\\NUL'".into()),
                    ])],
                ),
                DisplayValue::Scalar(Scalar::I32(2)),
            ],
        );
        let shape = DisplayValue::Tuple(vec![
            style,
            point_value(1.0, 1.0),
            DisplayValue::Con("Circle".into(), vec![float(0.5)]),
        ]);
        let diagram = DisplayValue::Struct(
            "Diagram".into(),
            vec![DisplayValue::Con(
                "AsList".into(),
                vec![
                    DisplayValue::Scalar(Scalar::U32(1)),
                    DisplayValue::Table(vec![shape]),
                ],
            )],
        );
        let bounds = DisplayValue::Tuple(vec![point_value(0.0, 0.0), point_value(4.0, 2.0)]);
        let text = drawing(&diagram, &bounds).expect("a diagram").to_svg();
        // 400 / 4 = 100 pixels a unit; y = 1 is 100 pixels above the x axis.
        assert_eq!(
            text,
            "<svg width=\"400\" height=\"200\" viewBox=\"0 -200 400 200\">\
             <g stroke=\"#ff0000\" fill=\"none\" stroke-width=\"2\">\
             <circle cx=\"100\" cy=\"-100\" r=\"50\"/></g></svg>"
        );
        assert!(drawing(&float(1.0), &float(2.0)).is_none());
    }
}
