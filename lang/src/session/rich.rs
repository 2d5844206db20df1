//! Rich outputs of a block (docs/language.md): `:table` grids, `:plot` and `:plotgrad` figures,
//! and `:p "text"`. The session computes the numbers; `display` draws them in each medium.
//!
//! `:plot e > "file.png"` (or `.svg`) also saves the figure, and says where.
//!
//! `:plotgrad f lo hi` evaluates `f` and its derivative with dx's own reverse mode (not finite
//! differences) at `PLOTGRAD_POINTS` evenly spaced points of `[lo, hi]`: the derivative of a
//! scalar function at every point at once is the gradient of `\v. sum (for i. f v[i])`, since
//! each term depends on one point only. `:plotgrad f x` with a table `x` (for
//! `f : n=>Float -> Float`) draws the gradient at `x` as bars over the index set.

use super::{type_error, BlockCx, Code, Diagnostic, Evaluated, Output, Session};
use crate::check::infer::Infer;
use crate::core::ir::Scalar;
use crate::display::{Chart, DisplayValue, Figure, Grid, Labels, Series};
use crate::syntax::ast::{BinOp, Command, Expr, ExprKind, Lit};

/// Points at which `:plotgrad` evaluates a function and its derivative.
const PLOTGRAD_POINTS: usize = 201;

/// Longest source text of a function or a tuple component used as a legend label.
const MAX_LABEL_CHARS: usize = 24;

/// Longest source text of an expression used as a title.
const MAX_TITLE_CHARS: usize = 60;

/// Whether `eval_rich` handles a command: every `:plot`, `:plotgrad` and `:table`, and `:p`
/// of a string literal (strings are not values in dx, but they can be printed).
pub(super) fn is_rich(command: Command, expr: &Expr) -> bool {
    match command {
        Command::Plot | Command::PlotGrad | Command::Table | Command::Html => true,
        Command::Print => matches!(&expr.kind, ExprKind::Lit(Lit::Str(_))),
        Command::Type | Command::Stages | Command::Help | Command::Export => false,
    }
}

/// Whether a value is a 1-D table (printed on one line; no grid needed).
pub(super) fn is_vector(value: &DisplayValue) -> bool {
    matches!(value, DisplayValue::Table(items) if items.iter().all(|item| matches!(item, DisplayValue::Scalar(_))))
}

impl Session {
    pub(super) fn eval_rich(
        &mut self,
        src: &str,
        command: Command,
        expr: &Expr,
        cx: &BlockCx,
    ) -> Result<Evaluated, Diagnostic> {
        let (expr, save_to) = split_save_target(expr);
        let expr = expr.as_ref();
        let (output, mut evaluated) = match command {
            Command::Plot => {
                let (expr, words) = split_words(expr);
                let (value, evaluated) = self.eval_display(expr, cx)?;
                let figure =
                    figure_of(&value, &PlotText::new(src, expr, words)).ok_or_else(|| {
                        Diagnostic::new(
                            Code::Type,
                            "`:plot` draws a 1-D table, a tuple (xs, ys, …) of equally indexed \
                              1-D tables, or a 2-D table (as a heatmap)",
                            Some(expr.span),
                        )
                    })?;
                (Output::Plot(figure), evaluated)
            }
            Command::Html => {
                let (value, evaluated) = self.eval_display(expr, cx)?;
                (super::html::html_output(&value, expr.span)?, evaluated)
            }
            Command::PlotGrad => {
                let (figure, evaluated) = self.plotgrad(src, expr, cx)?;
                (Output::Plot(figure), evaluated)
            }
            Command::Table => {
                let (value, evaluated) = self.eval_display(expr, cx)?;
                let grid =
                    Grid::from_value(&value, self.config.summarise_tables).ok_or_else(|| {
                        Diagnostic::new(
                            Code::Type,
                            "`:table` shows a 1-D or 2-D table, or a tuple of equally \
                                  indexed 1-D tables",
                            Some(expr.span),
                        )
                    })?;
                let output = Output::Table {
                    text: grid.to_text(),
                    grid,
                };
                (output, evaluated)
            }
            Command::Print | Command::Type | Command::Stages | Command::Help | Command::Export => {
                match &expr.kind {
                    ExprKind::Lit(Lit::Str(text)) => {
                        (Output::Text(text.clone()), Evaluated::default())
                    }
                    _ => return Err(super::internal_diagnostic("not a rich command")),
                }
            }
        };
        if let Some((path, span)) = save_to {
            save_output(&output, &path, span)?;
            evaluated.outputs.push(output);
            evaluated
                .outputs
                .push(Output::Text(format!("saved to {path}")));
        } else {
            evaluated.outputs.push(output);
        }
        Ok(evaluated)
    }

    /// Checks, compiles and runs an expression of the block.
    fn eval_display(
        &mut self,
        expr: &Expr,
        cx: &BlockCx,
    ) -> Result<(DisplayValue, Evaluated), Diagnostic> {
        let texpr = Infer::new(&mut self.env)
            .infer_top_expr(expr)
            .map_err(|err| type_error(&mut self.more_errors, err))?;
        if texpr.ty.contains_fun() {
            return Err(Diagnostic::new(
                Code::Type,
                format!("a function cannot be shown (its type is {})", texpr.ty),
                Some(texpr.span),
            ));
        }
        self.run_display(&texpr, cx)
    }

    /// `:plotgrad f lo hi` (curves of `f` and `f'`) or `:plotgrad f x` (bars of `grad f x`).
    fn plotgrad(
        &mut self,
        src: &str,
        expr: &Expr,
        cx: &BlockCx,
    ) -> Result<(Figure, Evaluated), Diagnostic> {
        let text = |part: &Expr| src.get(part.span.range()).unwrap_or("").to_string();
        let usage = || {
            Diagnostic::new(
                Code::Type,
                "usage: `:plotgrad f lo hi` (f : Float -> Float over [lo, hi]) or \
                      `:plotgrad f x` (the gradient of f : n=>Float -> Float at x)",
                Some(expr.span),
            )
        };
        let (func, args) = expr.spine();
        let (label, title) = function_words(func, &text(func));
        let (composed, bars) = match args.as_slice() {
            [lo, hi] => {
                let (func, lo, hi) = (text(func), text(lo), text(hi));
                let last = PLOTGRAD_POINTS - 1;
                (
                    format!(
                        "(\\xs. (xs, for i. ({func}) xs[i], grad (\\v. sum (for i. ({func}) v[i])) xs)) \
                         (for i:(Fin {PLOTGRAD_POINTS}). ({lo}) + (({hi}) - ({lo})) * n_to_f (ordinal i) / {last}.0)"
                    ),
                    false,
                )
            }
            [point] => (format!("grad ({}) ({})", text(func), text(point)), true),
            _ => return Err(usage()),
        };
        // The composed expression is new text: its errors are reported on the command.
        let on_command = |diag: Diagnostic| Diagnostic {
            message: format!("in `:plotgrad`: {}", diag.message),
            span: Some(expr.span),
            ..diag
        };
        let texpr = self.check_expr(&composed).map_err(on_command)?;
        let (value, evaluated) = self.run_display(&texpr, cx).map_err(on_command)?;
        let figure = if bars {
            let values = floats(&value).ok_or_else(usage)?;
            let at = args.first().map(|point| text(point)).unwrap_or_default();
            Figure {
                chart: Chart::Bars(values),
                labels: Labels {
                    title: shorten(format!("gradient of {label} at {at}"), MAX_TITLE_CHARS),
                    x: "index".into(),
                    y: format!("∂{label}/∂x[i]"),
                },
            }
        } else {
            let DisplayValue::Tuple(parts) = &value else {
                return Err(usage());
            };
            let columns: Vec<Vec<f64>> = parts
                .iter()
                .map(floats)
                .collect::<Option<_>>()
                .ok_or_else(usage)?;
            let [xs, ys, ds] = columns.as_slice() else {
                return Err(usage());
            };
            let series = vec![
                Series {
                    label: label.clone(),
                    xs: xs.clone(),
                    ys: ys.clone(),
                },
                Series {
                    label: format!("{label}′"),
                    xs: xs.clone(),
                    ys: ds.clone(),
                },
            ];
            Figure {
                chart: Chart::Lines {
                    series,
                    index_axis: false,
                },
                labels: Labels {
                    title,
                    x: "x".into(),
                    y: String::new(),
                },
            }
        };
        Ok((figure, evaluated))
    }
}

/// `e > "file.png"`: the expression and the file to save its figure to. The `> "file"` may
/// also end the body of a trailing `for`, lambda, `if` or `$` (`:plot for i. f i > "a.png"`
/// parses that way): it is taken out of there.
fn split_save_target(
    expr: &Expr,
) -> (
    std::borrow::Cow<'_, Expr>,
    Option<(String, crate::syntax::Span)>,
) {
    if let Some((path, span)) = save_target(expr) {
        if let ExprKind::BinOp { lhs, .. } = &expr.kind {
            return (std::borrow::Cow::Borrowed(lhs), Some((path, span)));
        }
    }
    let mut rewritten = expr.clone();
    match take_trailing_save(&mut rewritten) {
        Some(target) => (std::borrow::Cow::Owned(rewritten), Some(target)),
        None => (std::borrow::Cow::Borrowed(expr), None),
    }
}

/// The file of `e > "file"`.
fn save_target(expr: &Expr) -> Option<(String, crate::syntax::Span)> {
    match &expr.kind {
        ExprKind::BinOp {
            op: BinOp::Gt, rhs, ..
        } => match &rhs.kind {
            ExprKind::Lit(Lit::Str(path)) => Some((path.clone(), rhs.span)),
            _ => None,
        },
        _ => None,
    }
}

/// Replaces a `e > "file"` that ends `expr` (the last part of a `for`, lambda, `if` or
/// application) by `e`; returns the file.
fn take_trailing_save(expr: &mut Expr) -> Option<(String, crate::syntax::Span)> {
    let last: &mut Expr = match &mut expr.kind {
        ExprKind::For { body, .. } | ExprKind::Lam { body, .. } => body,
        ExprKind::If { else_branch, .. } => else_branch,
        ExprKind::App { arg, .. } => arg,
        _ => return None,
    };
    if let Some(target) = save_target(last) {
        if let ExprKind::BinOp { lhs, .. } = &last.kind {
            let lhs = (**lhs).clone();
            *last = lhs;
            expr.span = crate::syntax::Span::new(expr.span.range().start, last.span.range().end);
            return Some(target);
        }
    }
    let target = take_trailing_save(last)?;
    expr.span = crate::syntax::Span::new(expr.span.range().start, last.span.range().end);
    Some(target)
}

/// `:plot e "title" "x label" "y label" "series 1" …`: the expression and the words after it.
fn split_words(expr: &Expr) -> (&Expr, Vec<String>) {
    let mut words = Vec::new();
    let mut current = expr;
    while let Some((func, arg)) = current.positional_app() {
        let ExprKind::Lit(Lit::Str(word)) = &arg.kind else {
            break;
        };
        words.push(word.clone());
        current = func;
    }
    words.reverse();
    (current, words)
}

/// `text` when it is at most `max` characters, else its start and `…`.
fn shorten(text: String, max: usize) -> String {
    if text.chars().count() <= max {
        text
    } else {
        let start: String = text.chars().take(max - 1).collect();
        format!("{}…", start.trim_end())
    }
}

/// A function's name in a legend and the title of its `:plotgrad`: a named function is
/// itself (`sin`, "sin and its derivative"); a lambda `\x. body` is `f`, "f(x) = body".
fn function_words(func: &Expr, text: &str) -> (String, String) {
    match &func.kind {
        ExprKind::Var(ident) => (
            ident.name.clone(),
            format!("{} and its derivative", ident.name),
        ),
        ExprKind::Lam { params, .. } if params.len() == 1 => {
            let param = params[0]
                .pat
                .names()
                .first()
                .map_or("x".to_string(), |ident| ident.name.clone());
            let body = text.split_once('.').map_or(text, |(_, body)| body).trim();
            (
                "f".into(),
                shorten(format!("f({param}) = {body}"), MAX_TITLE_CHARS),
            )
        }
        _ if text.chars().count() <= MAX_LABEL_CHARS => {
            (text.to_string(), format!("{text} and its derivative"))
        }
        _ => ("f".into(), "f and its derivative".into()),
    }
}

/// Saves a plot (`.png`, `.svg`), an image (`.png`) or HTML (`.html`) to a file.
fn save_output(output: &Output, path: &str, span: crate::syntax::Span) -> Result<(), Diagnostic> {
    let extension = path.rsplit_once('.').map_or("", |(_, extension)| extension);
    let bytes = match (output, extension) {
        (Output::Plot(figure), "png") => Ok(figure.to_png()),
        (Output::Plot(figure), "svg") => Ok(figure.to_svg().into_bytes()),
        (Output::Plot(_), _) => Err("a plot is saved to a `.png` or `.svg` file"),
        (Output::Image(image), "png") => Ok(image.to_png()),
        (Output::Image(_), _) => Err("an image is saved to a `.png` file"),
        (Output::Drawing(drawing), "svg" | "html") => Ok(drawing.to_svg().into_bytes()),
        (Output::Drawing(_), _) => Err("a drawing is saved to a `.svg` or `.html` file"),
        (Output::Html(markup), "html") => Ok(markup.clone().into_bytes()),
        (Output::Html(_), _) => Err("HTML is saved to a `.html` file"),
        _ => Err("only plots, images and HTML can be saved to a file"),
    }
    .map_err(|message| Diagnostic::new(Code::Type, message, Some(span)))?;
    std::fs::write(path, bytes).map_err(|err| {
        Diagnostic::new(
            Code::File,
            format!("cannot write {path}: {err}"),
            Some(span),
        )
    })
}

pub(super) fn scalar_value(scalar: Scalar) -> f64 {
    match scalar {
        Scalar::F32(x) => f64::from(x),
        Scalar::F64(x) => x,
        Scalar::I32(n) => f64::from(n),
        Scalar::I64(n) => n as f64,
        Scalar::U32(n) => f64::from(n),
        Scalar::U64(n) => n as f64,
        Scalar::Bool(b) => f64::from(u8::from(b)),
    }
}

/// The numbers of a 1-D table.
pub(super) fn floats(value: &DisplayValue) -> Option<Vec<f64>> {
    match value {
        DisplayValue::Table(items) => items
            .iter()
            .map(|item| match item {
                DisplayValue::Scalar(scalar) => Some(scalar_value(*scalar)),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// The words of a `:plot`: given after the expression (title, x label, y label, then the
/// series' names), or else taken from the expression's text (the title; for a tuple
/// `(xs, ys…)` written out, its components name the x axis and the series).
struct PlotText {
    whole: String,
    components: Vec<String>,
    words: Vec<String>,
}

impl PlotText {
    fn new(src: &str, expr: &Expr, words: Vec<String>) -> PlotText {
        let text = |part: &Expr| src.get(part.span.range()).unwrap_or("").trim().to_string();
        let components = match &expr.kind {
            ExprKind::Tuple(items) => items.iter().map(text).collect(),
            _ => Vec::new(),
        };
        PlotText {
            whole: text(expr),
            components,
            words,
        }
    }

    /// Given word `idx`, or `default`.
    fn word(&self, idx: usize, default: impl FnOnce() -> String) -> String {
        self.words.get(idx).cloned().unwrap_or_else(default)
    }

    fn labels(&self, x: &str, y: impl FnOnce() -> String) -> Labels {
        Labels {
            title: self.word(0, || shorten(self.whole.clone(), MAX_TITLE_CHARS)),
            x: self.word(1, || {
                self.components
                    .first()
                    .filter(|text| text.chars().count() <= MAX_LABEL_CHARS)
                    .cloned()
                    .unwrap_or_else(|| x.to_string())
            }),
            y: self.word(2, y),
        }
    }

    /// The name of series `idx` of `n_series`.
    fn series(&self, idx: usize, n_series: usize) -> String {
        self.word(3 + idx, || match self.components.get(1 + idx) {
            Some(text) if n_series > 1 && text.chars().count() <= MAX_LABEL_CHARS => text.clone(),
            _ if n_series > 1 => format!("y{}", idx + 1),
            _ => String::new(),
        })
    }
}

/// The figure `:plot` draws for a value, if it draws one.
fn figure_of(value: &DisplayValue, text: &PlotText) -> Option<Figure> {
    if let Some(ys) = floats(value) {
        let xs = (0..ys.len()).map(|idx| idx as f64).collect();
        return Some(Figure {
            chart: Chart::Lines {
                series: vec![Series {
                    label: text.series(0, 1),
                    xs,
                    ys,
                }],
                index_axis: true,
            },
            labels: text.labels("index", String::new),
        });
    }
    match value {
        DisplayValue::Table(rows) => {
            let rows = rows.iter().map(floats).collect::<Option<_>>()?;
            Some(Figure {
                chart: Chart::Heatmap(rows),
                labels: text.labels("column", || "row".into()),
            })
        }
        DisplayValue::Tuple(parts) => {
            let columns: Vec<Vec<f64>> = parts.iter().map(floats).collect::<Option<_>>()?;
            let (xs, ys) = columns.split_first()?;
            if ys.is_empty() || ys.iter().any(|column| column.len() != xs.len()) {
                return None;
            }
            let series = ys
                .iter()
                .enumerate()
                .map(|(idx, ys)| Series {
                    label: text.series(idx, ys.len().max(columns.len() - 1)),
                    xs: xs.clone(),
                    ys: ys.clone(),
                })
                .collect();
            let y = || match (ys.len(), text.components.get(1)) {
                (1, Some(component)) if component.chars().count() <= MAX_LABEL_CHARS => {
                    component.clone()
                }
                _ => String::new(),
            };
            Some(Figure {
                chart: Chart::Lines {
                    series,
                    index_axis: false,
                },
                labels: text.labels("x", y),
            })
        }
        DisplayValue::Scalar(_)
        | DisplayValue::Con(..)
        | DisplayValue::Struct(..)
        | DisplayValue::Text(_) => None,
    }
}
