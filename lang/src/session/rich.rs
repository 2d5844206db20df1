//! Rich outputs of a block (LANGUAGE.md §7): `:table` grids, `:plot` and `:plotgrad` figures,
//! and `:p "text"`. The session computes the numbers; `display` draws them in each medium.
//!
//! `:plot e > "file.png"` (or `.svg`) also saves the figure, and says where.
//!
//! `:plotgrad f lo hi` evaluates `f` and its derivative with dx's own reverse mode (not finite
//! differences) at `PLOTGRAD_POINTS` evenly spaced points of `[lo, hi]`: the derivative of a
//! scalar function at every point at once is the gradient of `\v. sum (for i. f v[i])`, since
//! each term depends on one point only. `:plotgrad f x` with a table `x` (for
//! `f : n=>Float -> Float`) draws the gradient at `x` as bars over the index set.

use super::{type_error, BlockCx, Diagnostic, ErrorKind, Evaluated, Output, Session};
use crate::check::infer::Infer;
use crate::core::ir::Scalar;
use crate::display::{DisplayValue, Figure, Grid, Series};
use crate::syntax::ast::{BinOp, Command, Expr, ExprKind, Lit};

/// Points at which `:plotgrad` evaluates a function and its derivative.
const PLOTGRAD_POINTS: usize = 201;

/// Longest source text of a function used as its legend label.
const MAX_LABEL_CHARS: usize = 24;

/// Whether `eval_rich` handles a command: every `:plot`, `:plotgrad` and `:table`, and `:p`
/// of a string literal (strings are not values in dx, but they can be printed).
pub(super) fn is_rich(command: Command, expr: &Expr) -> bool {
    match command {
        Command::Plot | Command::PlotGrad | Command::Table => true,
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
        let (output, mut evaluated) = match command {
            Command::Plot => {
                let (value, evaluated) = self.eval_display(expr, cx)?;
                let figure = figure_of(&value).ok_or_else(|| Diagnostic {
                    kind: ErrorKind::Type,
                    message: "`:plot` draws a 1-D table, a tuple (xs, ys, …) of equally indexed \
                              1-D tables, or a 2-D table (as a heatmap)"
                        .into(),
                    span: Some(expr.span),
                })?;
                (Output::Plot(figure), evaluated)
            }
            Command::PlotGrad => {
                let (figure, evaluated) = self.plotgrad(src, expr, cx)?;
                (Output::Plot(figure), evaluated)
            }
            Command::Table => {
                let (value, evaluated) = self.eval_display(expr, cx)?;
                let grid =
                    Grid::from_value(&value, self.config.summarise_tables).ok_or_else(|| {
                        Diagnostic {
                            kind: ErrorKind::Type,
                            message: "`:table` shows a 1-D or 2-D table, or a tuple of equally \
                                  indexed 1-D tables"
                                .into(),
                            span: Some(expr.span),
                        }
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
            let Output::Plot(figure) = &output else {
                return Err(Diagnostic {
                    kind: ErrorKind::Type,
                    message: "only plots can be saved to a file".into(),
                    span: Some(span),
                });
            };
            save_figure(figure, &path, span)?;
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
            return Err(Diagnostic {
                kind: ErrorKind::Type,
                message: format!("a function cannot be shown (its type is {})", texpr.ty),
                span: Some(texpr.span),
            });
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
        let usage = || Diagnostic {
            kind: ErrorKind::Type,
            message: "usage: `:plotgrad f lo hi` (f : Float -> Float over [lo, hi]) or \
                      `:plotgrad f x` (the gradient of f : n=>Float -> Float at x)"
                .into(),
            span: Some(expr.span),
        };
        let (func, args) = expr.spine();
        let label = {
            let func = text(func);
            if func.chars().count() <= MAX_LABEL_CHARS {
                func
            } else {
                "f".to_string()
            }
        };
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
            kind: diag.kind,
            message: format!("in `:plotgrad`: {}", diag.message),
            span: Some(expr.span),
        };
        let texpr = self.check_expr(&composed).map_err(on_command)?;
        let (value, evaluated) = self.run_display(&texpr, cx).map_err(on_command)?;
        let figure = if bars {
            let values = floats(&value).ok_or_else(usage)?;
            Figure::Bars {
                label: format!("gradient of {label}"),
                values,
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
            Figure::Lines(vec![
                Series {
                    label: label.clone(),
                    xs: xs.clone(),
                    ys: ys.clone(),
                },
                Series {
                    label: format!("{label}'"),
                    xs: xs.clone(),
                    ys: ds.clone(),
                },
            ])
        };
        Ok((figure, evaluated))
    }
}

/// `e > "file.png"`: the expression and the file to save its figure to.
fn split_save_target(expr: &Expr) -> (&Expr, Option<(String, crate::syntax::Span)>) {
    match &expr.kind {
        ExprKind::BinOp {
            op: BinOp::Gt,
            lhs,
            rhs,
        } => match &rhs.kind {
            ExprKind::Lit(Lit::Str(path)) => (lhs, Some((path.clone(), rhs.span))),
            _ => (expr, None),
        },
        _ => (expr, None),
    }
}

fn save_figure(figure: &Figure, path: &str, span: crate::syntax::Span) -> Result<(), Diagnostic> {
    let bytes = if path.ends_with(".png") {
        figure.to_png()
    } else if path.ends_with(".svg") {
        figure.to_svg().into_bytes()
    } else {
        return Err(Diagnostic {
            kind: ErrorKind::Type,
            message: "a plot is saved to a `.png` or `.svg` file".into(),
            span: Some(span),
        });
    };
    std::fs::write(path, bytes).map_err(|err| Diagnostic {
        kind: ErrorKind::Runtime,
        message: format!("cannot write {path}: {err}"),
        span: Some(span),
    })
}

fn scalar_value(scalar: Scalar) -> f64 {
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
fn floats(value: &DisplayValue) -> Option<Vec<f64>> {
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

/// The figure `:plot` draws for a value, if it draws one.
fn figure_of(value: &DisplayValue) -> Option<Figure> {
    if let Some(ys) = floats(value) {
        let xs = (0..ys.len()).map(|idx| idx as f64).collect();
        return Some(Figure::Lines(vec![Series {
            label: String::new(),
            xs,
            ys,
        }]));
    }
    match value {
        DisplayValue::Table(rows) => rows
            .iter()
            .map(floats)
            .collect::<Option<_>>()
            .map(Figure::Heatmap),
        DisplayValue::Tuple(parts) => {
            let columns: Vec<Vec<f64>> = parts.iter().map(floats).collect::<Option<_>>()?;
            let (xs, ys) = columns.split_first()?;
            if ys.is_empty() || ys.iter().any(|column| column.len() != xs.len()) {
                return None;
            }
            let several = ys.len() > 1;
            Some(Figure::Lines(
                ys.iter()
                    .enumerate()
                    .map(|(idx, ys)| Series {
                        label: if several {
                            format!("y{}", idx + 1)
                        } else {
                            String::new()
                        },
                        xs: xs.clone(),
                        ys: ys.clone(),
                    })
                    .collect(),
            ))
        }
        DisplayValue::Scalar(_) | DisplayValue::Con(..) | DisplayValue::Text(_) => None,
    }
}
