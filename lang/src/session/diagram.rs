//! The SVG of a diagram of the `diagram` library (`:html render_svg d bounds`): Dex's
//! `render_svg` writes it in Dex code; dx's library keeps the shapes as data
//! (`RenderedDiagram(Diagram(shapes), (low, high))`) and this module writes the same SVG:
//! 400 pixels wide, the region `bounds` scaled to fit, `y` upwards, each shape in a group
//! carrying its stroke and fill.

use std::fmt::Write;

use super::rich::scalar_value;
use crate::display::DisplayValue;

/// The width Dex's `render_svg` draws at, in pixels.
const WIDTH: f64 = 400.0;

/// The SVG text of a `RenderedDiagram`'s fields, or `None` when they are not one.
pub(super) fn svg(diagram: &DisplayValue, bounds: &DisplayValue) -> Option<String> {
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
    let mut out = format!(
        "<svg width=\"{}\" height=\"{}\" viewBox=\"{} {} {} {}\">",
        number(WIDTH),
        number(height),
        number(x_min * scale),
        number(-y_max * scale),
        number(WIDTH),
        number(height),
    );
    for shape in shapes {
        let DisplayValue::Tuple(parts) = shape else {
            return None;
        };
        let [style, position, geom] = parts.as_slice() else {
            return None;
        };
        let (x, y) = point(position)?;
        // Flipped so that `y` goes up, then scaled (Dex's `flip_y` and `scale`).
        let (x, y) = (x * scale, -y * scale);
        out.push_str(&shape_svg(style, (x, y), geom, scale)?);
    }
    out.push_str("</svg>");
    Some(out)
}

/// One shape, in a group carrying its style.
fn shape_svg(
    style: &DisplayValue,
    (x, y): (f64, f64),
    geom: &DisplayValue,
    scale: f64,
) -> Option<String> {
    let DisplayValue::Struct(_, fields) = style else {
        return None;
    };
    let [fill, stroke, width] = fields.as_slice() else {
        return None;
    };
    let (fill, stroke, width) = (color(fill)?, color(stroke)?, scalar(width)?);
    let DisplayValue::Con(kind, args) = geom else {
        return None;
    };
    let args: Vec<&DisplayValue> = args.iter().collect();
    // A point is drawn solid, in its stroke colour.
    let (fill, element) = match (kind.as_str(), args.as_slice()) {
        ("PointGeom", []) => (
            stroke.clone(),
            format!(
                "<circle cx=\"{}\" cy=\"{}\" r=\"1\"/>",
                number(x),
                number(y)
            ),
        ),
        ("Circle", [r]) => (
            fill,
            format!(
                "<circle cx=\"{}\" cy=\"{}\" r=\"{}\"/>",
                number(x),
                number(y),
                number(scalar(r)? * scale)
            ),
        ),
        ("Rectangle", [w, h]) => {
            let (w, h) = (scalar(w)? * scale, scalar(h)? * scale);
            (
                fill,
                format!(
                    "<rect width=\"{}\" height=\"{}\" x=\"{}\" y=\"{}\"/>",
                    number(w),
                    number(h),
                    number(x - w / 2.0),
                    number(y - h / 2.0)
                ),
            )
        }
        ("Line", [to]) => {
            let (dx, dy) = point(to)?;
            (
                fill,
                format!(
                    "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                    number(x),
                    number(y),
                    number(x + dx * scale),
                    number(y - dy * scale)
                ),
            )
        }
        _ => return None,
    };
    let mut group = String::new();
    write!(
        group,
        "<g stroke=\"{stroke}\" fill=\"{fill}\" stroke-width=\"{}\">{element}</g>",
        number(width)
    )
    .ok()?;
    Some(group)
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
                write!(text, "{byte:02x}").ok()?;
            }
            Some(text)
        }
        _ => None,
    }
}

/// A number: a scalar, or a word as dx prints it (`0xff`).
fn scalar(value: &DisplayValue) -> Option<f64> {
    match value {
        DisplayValue::Scalar(scalar) => Some(scalar_value(*scalar)),
        DisplayValue::Text(text) => {
            let hex = text.strip_prefix("0x")?;
            u64::from_str_radix(hex, 16).ok().map(|n| n as f64)
        }
        _ => None,
    }
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
                        DisplayValue::Text("0xff".into()),
                        DisplayValue::Text("0x0".into()),
                        DisplayValue::Text("0x0".into()),
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
        let text = svg(&diagram, &bounds).expect("a diagram");
        // 400 / 4 = 100 pixels a unit; y = 1 is 100 pixels above the x axis.
        assert_eq!(
            text,
            "<svg width=\"400\" height=\"200\" viewBox=\"0 -200 400 200\">\
             <g stroke=\"#ff0000\" fill=\"none\" stroke-width=\"2\">\
             <circle cx=\"100\" cy=\"-100\" r=\"50\"/></g></svg>"
        );
        assert!(svg(&float(1.0), &float(2.0)).is_none());
    }
}
