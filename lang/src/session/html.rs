//! `:html e` (docs/language.md, Libraries): what Dex shows as HTML, from the values of dx's
//! libraries. Dex's `plot` and `png` libraries build HTML text in Dex code; dx's keep the
//! data (a `Plot` struct of the points, a `Png` struct of the pixels) and `:html` draws it
//! with dx's own plotting, in every medium: a PNG (and SVG) in a notebook, text in a terminal
//! and in literate files. A text value is HTML markup, shown as such in a notebook and as its
//! text elsewhere.
//!
//! What `:html` recognises, by constructor and the shapes of the fields:
//! - `Plot(xs, ys, cs)` (`plot`: `xy_plot`, `y_plot`, `xyc_plot`, `show_plot`): a scatter
//!   plot; `cs` colours the points when it holds numbers (a `Plot n Float Float Float`), and
//!   is a table of `()` otherwise.
//! - `Png(pixels)` (`png`: `imshow`, `img_to_png`; `plot`: `matshow`): `n=>m=>(Fin 3)=>Float`
//!   in [0, 1], red, green, blue.
//! - `Animation(frames, delay)` (`png`: `imseqshow`, `pngs_to_gif`): `t=>n=>m=>(Fin 3)=>Float`,
//!   an animated image showing each frame for `delay` hundredths of a second.
//! - `RenderedDiagram(diagram, bounds)` (`diagram`: `render_svg`, `render_scaled_svg`): the
//!   shapes as a drawing (`session/diagram.rs`): SVG in a notebook, braille as text.
//! - a `String`.

use super::rich::floats;
use super::{Code, Diagnostic, Output};
use crate::display::{Chart, DisplayValue, Figure, Image, Labels};
use crate::syntax::Span;

/// The rich output of `:html` for a value, or an error that says what `:html` shows.
pub(super) fn html_output(value: &DisplayValue, span: Span) -> Result<Output, Diagnostic> {
    let shown = match value {
        DisplayValue::Text(quoted) if quoted.starts_with('"') => {
            Some(Output::Html(unquote(quoted)))
        }
        DisplayValue::Struct(name, fields) => match (name.as_str(), fields.as_slice()) {
            ("Plot", [xs, ys, cs]) => scatter(xs, ys, cs).map(Output::Plot),
            ("Png", [pixels]) => image(pixels).map(Output::Image),
            ("Animation", [DisplayValue::Table(frames), delay]) => animation(frames)
                .map(|image| image.with_frame_delay(centiseconds(delay)))
                .map(Output::Image),
            ("RenderedDiagram", [diagram, bounds]) => {
                super::diagram::drawing(diagram, bounds).map(Output::Drawing)
            }
            _ => None,
        },
        _ => None,
    };
    shown.ok_or_else(|| {
        Diagnostic::new(
            Code::Type,
            "`:html` shows a plot (`show_plot`, `xy_plot`, … of `import plot`), an image \
                  (`imshow` or `imseqshow` of `import png`, `matshow`), a diagram (`render_svg` of `import \
                  diagram`) or a `String` of HTML",
            Some(span),
        )
    })
}

fn scatter(xs: &DisplayValue, ys: &DisplayValue, cs: &DisplayValue) -> Option<Figure> {
    let (xs, ys) = (floats(xs)?, floats(ys)?);
    if xs.len() != ys.len() {
        return None;
    }
    // A `Plot n Float Float ()` has a table of units as its colours.
    let shades = floats(cs).filter(|shades| shades.len() == xs.len());
    Some(Figure {
        chart: Chart::Points { xs, ys, shades },
        labels: Labels::default(),
    })
}

fn image(pixels: &DisplayValue) -> Option<Image> {
    animation(std::slice::from_ref(pixels))
}

/// Frames of the same size, each `n=>m=>(Fin 3)=>Float` (one frame is an image).
fn animation(frames: &[DisplayValue]) -> Option<Image> {
    let mut values = Vec::new();
    let mut size = None;
    for frame in frames {
        let DisplayValue::Table(rows) = frame else {
            return None;
        };
        let mut width = None;
        for row in rows {
            let DisplayValue::Table(row) = row else {
                return None;
            };
            if *width.get_or_insert(row.len()) != row.len() {
                return None;
            }
            for pixel in row {
                let channels = floats(pixel)?;
                if channels.len() != 3 {
                    return None;
                }
                values.extend(channels);
            }
        }
        let frame_size = (width.unwrap_or(0), rows.len());
        if *size.get_or_insert(frame_size) != frame_size {
            return None;
        }
    }
    let (width, height) = size?;
    Some(Image::from_unit_floats(width, height, &values))
}

/// A frame delay in hundredths of a second (an `Int` field), as milliseconds.
fn centiseconds(delay: &DisplayValue) -> u16 {
    let hundredths = floats(delay)
        .and_then(|values| values.first().copied())
        .unwrap_or(50.0);
    (hundredths.clamp(0.0, 6553.0) * 10.0) as u16
}

/// The text of a string as Dex prints it (`"a\"b"`, `"caf\195\169"`): quotes removed, escapes
/// undone (`syntax::escape`), the bytes read as UTF-8.
fn unquote(quoted: &str) -> String {
    let inner = quoted
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or(quoted);
    let text = crate::syntax::escape::unescape(inner).unwrap_or_else(|| inner.to_string());
    // Every byte above 127 of a shown string is an escape, so each character is one byte.
    let bytes: Vec<u8> = text
        .chars()
        .map(|ch| u8::try_from(ch).unwrap_or(b'?'))
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ir::Scalar;

    #[test]
    fn strings_lose_their_quotes_and_escapes() {
        assert_eq!(unquote(r#""<b>\"hi\"</b>\n""#), "<b>\"hi\"</b>\n");
        assert_eq!(unquote(r#""caf\195\169""#), "café");
    }

    #[test]
    fn a_plot_without_colours_is_a_plain_scatter() {
        let table = |xs: &[f32]| {
            DisplayValue::Table(
                xs.iter()
                    .map(|&x| DisplayValue::Scalar(Scalar::F32(x)))
                    .collect(),
            )
        };
        let units = DisplayValue::Table(vec![DisplayValue::Tuple(Vec::new()); 2]);
        let plot = DisplayValue::Struct(
            "Plot".into(),
            vec![table(&[0.0, 1.0]), table(&[2.0, 3.0]), units],
        );
        let Ok(Output::Plot(figure)) = html_output(&plot, Span::default()) else {
            panic!("a plot");
        };
        assert_eq!(
            figure.chart,
            Chart::Points {
                xs: vec![0.0, 1.0],
                ys: vec![2.0, 3.0],
                shades: None
            }
        );
        let coloured = DisplayValue::Struct(
            "Plot".into(),
            vec![table(&[0.0]), table(&[2.0]), table(&[5.0])],
        );
        assert!(matches!(
            html_output(&coloured, Span::default()),
            Ok(Output::Plot(Figure {
                chart: Chart::Points {
                    shades: Some(_),
                    ..
                },
                ..
            }))
        ));
        assert!(html_output(&table(&[1.0]), Span::default()).is_err());
    }
}
