//! Effects in the lowering (docs/language.md, Effects): `State`, `Accum` and `Read` references become the
//! pure program, so no pass after `lower` sees an effect.

// Note [Effects as cells]
// ~~~~~~~~~~~~~~~~~~~~~~~
// The lowering is a partial evaluator: it runs the typed program at compile time, emitting a
// statement for every operation on arrays. A handler (`with_state`, `yield_accum`,
// `with_reader`) makes a *cell* that holds the reference's current value as a compile-time
// value (`SVal`), and the reference is `SVal::Ref { cell, path }` (`path`: the element indices of
// `ref!i!j`). In straight-line code a write replaces the cell's value and a read returns it:
// this is SSA construction by evaluation, and no write is left in the program. Control flow
// is where values must meet:
//
// - a branch (`if`, `case`) lowers both sides from the same cell values; the cells either side
//   changed become extra results of the `cond`, and the cells take its binders;
// - a loop (`for`, `fold`, `scan`) lowers its body once; the cells of `State` it wrote become
//   carries (the body is lowered again with them as parameters) and the loop runs in order as a
//   `fold`/`scan`, as Dex runs a `for` with `State`. A `for` that writes no state stays a
//   parallel `build1`;
// - `acc += v` on an additive accumulator from inside a loop does not make the loop
//   sequential: it is recorded as a contribution (`Record`: the element indices and the
//   values), the loop stacks every contribution as one more output, and at the loop level of
//   the accumulator the stacked contributions are added at once: summed over the loops' axes
//   (`sumOuter`) when they carry no index, added as a whole when the indices are the loops' own
//   (`acc!i += v` in `for i`), and scattered (`scatter`, a scatter-add) when the indices are
//   data (a histogram). Accumulation is the transpose of indexing (dual arrays,
//   [HuotShaikhha] §4): the contributions of `acc!k += v` are the cotangent of a read `x[k]`,
//   and they are added in the fixed order of `scatter`, so the bits do not depend on the
//   thread count. Other
//   monoids (`MulMonoid`, `AndMonoid`, …) accumulate in order, as state.
//
// A reference escaping its handler (returned from the body) is an error at the handler.
//
// Note [Exceptions]
// ~~~~~~~~~~~~~~~~~
// `catch(\. body)` is a handler too: its cell is a `Bool` flag, false at first, that
// `throw()` sets (so it is merged through branches and carried through loops as state is: a
// loop that may throw runs in order). What the body computes after a throw is computed all
// the same (every operation is total), but its writes to references from outside the
// `catch` are masked by the flag (`select thrown old new`; a contribution is zero), and the
// `catch` gives `Nothing` when the flag is set.
//
// Note [Runtime errors]
// ~~~~~~~~~~~~~~~~~~~~~
// `error "message"` counts, in an accumulator of its own at the top level of the block, the
// times it is reached: in a vectorised branch only the lanes that take the branch add 1, and
// from inside loops it is a reduction as any accumulation. The counts are extra results of
// the block's program; the session checks them after the run and reports the first error
// of the block (in the order the calls were met) that was reached, as `Runtime error:
// message` at its position. The value `error` gives is zero of the expected type.
//
// A text computed when the block runs (`error ("bad: " <> show x)`) is kept, with a flag, in a
// state cell of the site: the first time the site is reached it takes the text, later times
// keep it. A state cell makes a `for` around the site run in order (a `scan`), so "first" is
// the first in the program's order; the text is one more result of the program. `print`
// keeps every line instead (Note [The print log]).

use std::rc::Rc;

use crate::check::builtins::{EffectOp, NamedMonoid};
use crate::check::types::{Size, Ty};
use crate::core::ir::{
    ArrTy, Atom, BlockId, Build1, Cond, Expr, Fold, Index, Scalar, Scan, Scatter, SumOuter,
    Transpose, VarId, While,
};
use crate::prim::Prim;
use crate::syntax::Span;

use super::lower::{bug, error, Lowerer, Result, SVal};

/// What a reference's handler does with writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellKind {
    State,
    Accum(Combine),
    Reader,
    /// The flag of a `catch`: whether its body has thrown.
    Thrown,
}

/// How an accumulator combines: a built-in monoid, or the user's monoid number `k` of
/// `Effects::user_monoids` (Note [Named monoids]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    Named(NamedMonoid),
    User(usize),
}

/// A monoid passed to `yield_accum`.
#[derive(Clone, Debug)]
pub enum AccumMonoid {
    Named(NamedMonoid),
    User(Rc<UserMonoid>),
}

// Note [Named monoids]
// ~~~~~~~~~~~~~~~~~~~~
// `named-instance MaxMonoid : Monoid(Float)` with `mempty` and `<>` is, to the checker, a
// definition `MaxMonoid : Monoid(Float)` whose body makes a monoid value of the two methods
// (`check::declare::named_instance_def`); parameters (`named-instance AddMonoid(a|Add) ->
// Monoid(a)`) make it a function of types. An accumulator of a user's monoid holds the
// base type `b` or tables of it, as Dex's lifted monoids: its identity is `mempty` at every
// element, and `acc!i += v` combines element by element with the user's `<>`. The `<>` is
// any function, not a sum, so the contributions of a loop cannot be stacked and added at the
// end: the accumulator is carried through the loop as state is (the loop runs in order).

/// A user's monoid: its identity and combining function at the base type `base`.
#[derive(Debug)]
pub struct UserMonoid {
    pub base: Ty,
    pub empty: SVal,
    pub combine: SVal,
}

/// The value behind one reference (Note [Effects as cells]).
#[derive(Clone, Debug)]
pub struct Cell {
    value: SVal,
    /// The value before the handler's body: what a snapshot taken before the cell existed
    /// holds (a cell made while lowering a branch or a loop body, as `error`'s are).
    init: SVal,
    ty: Ty,
    kind: CellKind,
    /// The loop depth of the handler: writes from deeper loops are contributions or carries.
    depth: usize,
    live: bool,
}

/// A contribution `acc!path += values` made inside loops deeper than the accumulator.
#[derive(Clone, Debug)]
struct Record {
    cell: usize,
    /// One step per element index of the reference.
    path: Vec<Step>,
    /// The leaves of the added value, with `batch` leading axes of the enclosing loops.
    values: Vec<Atom>,
    batch: usize,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    /// The index of batch axis `k` (0: the outermost loop stacked so far).
    Axis(usize),
    /// An index computed from data: an atom whose axes are the outermost batch axes, as many
    /// as its rank (an index computed outside a loop is not stacked by it, and stays a scalar).
    Data(Atom),
    /// An index the loop being emitted stacks: its binder is the next output of the loop.
    Stacked,
}

/// The effect state of a lowering.
#[derive(Default)]
pub struct Effects {
    cells: Vec<Cell>,
    /// The user's monoids of the accumulators made so far (`Combine::User`).
    user_monoids: Vec<Rc<UserMonoid>>,
    depth: usize,
    /// The contributions made in each enclosing loop body, innermost last.
    frames: Vec<Vec<Record>>,
    /// The enclosing `catch`es: their flag cell, and how many cells existed when they began.
    catches: Vec<(usize, usize)>,
    /// The loop depths of the bodies of the enclosing `while`s, innermost last: a `while`
    /// cannot stack contributions, so what is counted inside it is counted at its level.
    while_depths: Vec<usize>,
    /// The `error` and `print` calls met, in order, each with the cell counting how many
    /// times it was reached (Note [Runtime errors]).
    pub sites: Vec<Site>,
    /// The print log's cells: the number of lines, the site of each line (Note [The print
    /// log]).
    log: Option<(usize, usize)>,
}

/// How many cells made while a loop's body is lowered (the text cells of its sites, Note
/// [Runtime errors]) the loop may come to carry.
const MAX_NEW_CARRIES: usize = 256;

/// The text type `error` or `print` takes, from the built-in's type.
fn text_param(ty: &Ty, span: Span) -> Result<Ty> {
    match ty {
        Ty::Fun { param, .. } => Ok((**param).clone()),
        _ => bug(span, "`error`/`print` of a non-function type"),
    }
}

/// What an `error` or `print` call site does when it is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SiteKind {
    Error,
    Print,
}

/// An `error` or `print` call: its kind, position and text, and its counting cell.
#[derive(Clone, Debug)]
pub struct Site {
    pub kind: SiteKind,
    pub span: Span,
    /// The text, or for a text computed when the block runs what comes before it (`in
    /// `f`: `).
    pub text: String,
    pub cell: usize,
    /// For an `error` with a computed text: the state cell holding (reached before, the
    /// first text). For a `print` with a computed text: the cell of its texts by line of the
    /// print log (Note [The print log]).
    pub text_cell: Option<usize>,
    /// The call's own position (inside a definition, `span` is where the block calls it).
    origin: Span,
}

impl Site {
    /// Whether `cell` is one of this site's own cells.
    fn owns(&self, cell: usize) -> bool {
        self.cell == cell || self.text_cell == Some(cell)
    }
}

// Note [The print log]
// ~~~~~~~~~~~~~~~~~~~~
// `print` lines come out in the order the program reaches them, also from loops (two prints
// in a loop alternate) and with texts computed when the block runs (each line its own text).
// A block that prints keeps a log in two state cells: the number of lines so far and, for the
// first `PRINT_LOG_LINES` of them, the site that printed each. A print whose text is computed
// also writes its text at the line's place in a table of texts of its own. State makes a loop
// around a print run in order (as Dex runs effects in order), so the log is in program order;
// lines past `PRINT_LOG_LINES` are counted, not kept.

/// The lines of a block's print log that are kept (Note [The print log]).
pub const PRINT_LOG_LINES: usize = 1000;

/// The cells of the texts of the prints with computed texts, each once, in the order of the
/// sites (the order of the print log's text results).
pub fn print_buffers(sites: &[Site]) -> Vec<usize> {
    let mut cells = Vec::new();
    for site in sites {
        if let (SiteKind::Print, Some(cell)) = (site.kind, site.text_cell) {
            if !cells.contains(&cell) {
                cells.push(cell);
            }
        }
    }
    cells
}

impl Effects {
    pub(super) fn cell_value(&self, cell: usize) -> SVal {
        self.cells[cell].value.clone()
    }

    /// The print log's cells, the number of lines and the sites by line, if the block
    /// prints (Note [The print log]).
    pub fn print_log(&self) -> Option<(usize, usize)> {
        self.log
    }

    /// Whether `cell` belongs to an `error` or `print` site or the print log.
    fn is_site_cell(&self, cell: usize) -> bool {
        self.sites.iter().any(|site| site.owns(cell))
            || self
                .log
                .is_some_and(|(count, lines)| cell == count || cell == lines)
    }
}

/// What a loop body gives: the next user carries and the step's outputs.
pub(super) type StepResult = Result<(Vec<Atom>, Vec<Atom>)>;

/// A lowered loop: the final user carries and the stacked outputs.
pub(super) struct LoopOut {
    pub carries: Vec<Atom>,
    pub ys: Vec<Atom>,
}

impl Lowerer<'_> {
    /// Applies an effect built-in to its arguments; `ty` is its full concrete type.
    pub(super) fn lower_effect(
        &mut self,
        op: EffectOp,
        args: Vec<SVal>,
        ty: &Ty,
        result_ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let mut args = args.into_iter();
        let mut next = || args.next().map_or_else(|| bug(span, "effect arity"), Ok);
        match op {
            EffectOp::RunState | EffectOp::WithState | EffectOp::YieldState => {
                let init = next()?;
                let action = next()?;
                let (res, last) =
                    self.handle(CellKind::State, init, ref_value_ty(ty)?, action, span)?;
                Ok(match op {
                    EffectOp::RunState => SVal::Tuple(vec![res, last]),
                    EffectOp::WithState => res,
                    _ => last,
                })
            }
            EffectOp::WithReader => {
                let init = next()?;
                let action = next()?;
                let (res, _) =
                    self.handle(CellKind::Reader, init, ref_value_ty(ty)?, action, span)?;
                Ok(res)
            }
            EffectOp::RunAccum | EffectOp::YieldAccum => {
                let SVal::Monoid(monoid) = next()? else {
                    return bug(span, "an accumulator without its monoid");
                };
                let action = next()?;
                let value_ty = self.concrete(&ref_value_ty(ty)?, span)?;
                let combine = match monoid {
                    AccumMonoid::Named(named) => Combine::Named(named),
                    AccumMonoid::User(user) => {
                        self.effects.user_monoids.push(user);
                        Combine::User(self.effects.user_monoids.len() - 1)
                    }
                };
                let init = self.monoid_identity(combine, &value_ty, span)?;
                let (res, last) =
                    self.handle(CellKind::Accum(combine), init, value_ty, action, span)?;
                Ok(if op == EffectOp::RunAccum {
                    SVal::Tuple(vec![res, last])
                } else {
                    last
                })
            }
            EffectOp::Monoid(monoid) => Ok(SVal::Monoid(AccumMonoid::Named(monoid))),
            EffectOp::MakeMonoid => {
                let empty = next()?;
                let combine = next()?;
                let Ty::Fun { param, .. } = ty else {
                    return bug(span, "a monoid's type");
                };
                let base = self.concrete(param, span)?;
                Ok(SVal::Monoid(AccumMonoid::User(Rc::new(UserMonoid {
                    base,
                    empty,
                    combine,
                }))))
            }
            EffectOp::Get | EffectOp::Ask => {
                let (cell, path, fields) = self.field_reference(next()?, span)?;
                if let CellKind::Accum(_) = self.effects.cells[cell].kind {
                    return error(
                        span,
                        "an accumulator cannot be read: it is written with `+=`, and its \
                         handler (`yield_accum`, `run_accum`) gives the total",
                    );
                }
                let mut value = self.effects.cells[cell].value.clone();
                for field in fields {
                    value = match value {
                        SVal::Tuple(items) => items.into_iter().nth(field),
                        _ => None,
                    }
                    .map_or_else(|| bug(span, "a field of a value that has none"), Ok)?;
                }
                for index in path {
                    value = self.index_value(&value, index, span)?;
                }
                Ok(value)
            }
            EffectOp::Put => {
                let (cell, path, fields) = self.field_reference(next()?, span)?;
                let value = next()?;
                match self.effects.cells[cell].kind {
                    CellKind::State => {}
                    CellKind::Accum(_) => {
                        return error(
                            span,
                            "`:=` writes a `State` reference; this one is an accumulator: add \
                             to it with `+=`",
                        )
                    }
                    CellKind::Reader | CellKind::Thrown => {
                        return error(
                            span,
                            "`:=` writes a `State` reference; this one is read-only \
                             (`with_reader`)",
                        )
                    }
                }
                let whole = self.effects.cells[cell].value.clone();
                let leaves = self.field_leaves(&whole, &fields, span)?;
                self.update_cell_leaves(cell, leaves, &path, value, None, span)?;
                Ok(SVal::Tuple(Vec::new()))
            }
            EffectOp::Extend => {
                let (cell, path, fields) = self.field_reference(next()?, span)?;
                let mut value = next()?;
                let CellKind::Accum(combine) = self.effects.cells[cell].kind else {
                    return error(
                        span,
                        "`+=` adds to an accumulator (from `yield_accum` or `run_accum`); this \
                         reference is a `State` one: write `ref := get ref + v`",
                    );
                };
                if !fields.is_empty() {
                    value = self.widen_to_element(cell, combine, &path, &fields, value, span)?;
                }
                self.extend(cell, path, value, span)?;
                Ok(SVal::Tuple(Vec::new()))
            }
            EffectOp::RefIndex => {
                let (cell, mut path, fields) = self.field_reference(next()?, span)?;
                let index = next()?;
                let Ty::Fun { param, .. } = ty else {
                    return bug(span, "`!` type");
                };
                let Ty::Con(_, ref_args) = &**param else {
                    return bug(span, "`!` of a non-reference");
                };
                let Some(Ty::Table(ix, _)) = ref_args.get(1) else {
                    return bug(span, "`!` of a reference to a non-table");
                };
                let ix = (**ix).clone();
                path.push(self.flat_index(&index, &ix, span)?);
                Ok(SVal::Ref { cell, path, fields })
            }
            EffectOp::Catch => {
                let action = next()?;
                self.catch(action, result_ty, span)
            }
            EffectOp::Throw => {
                let Some(&(flag, _)) = self.effects.catches.last() else {
                    return error(
                        span,
                        "`throw` outside every `catch`: wrap the code that throws in \
                         `catch(\\. …)`",
                    );
                };
                self.effects.cells[flag].value = SVal::Arr(Atom::Lit(Scalar::Bool(true)));
                self.value_never_used(result_ty, span)
            }
            // A text computed when the block runs: the lowering of `error` and `print` with a
            // literal (`lower`) does not come here.
            EffectOp::Error => {
                let message = (next()?, text_param(ty, span)?);
                let prefix = self.site_prefix();
                self.count_site(SiteKind::Error, prefix, Some(message), span)?;
                self.value_never_used(result_ty, span)
            }
            EffectOp::Print => {
                let text = (next()?, text_param(ty, span)?);
                self.log_print(String::new(), Some(text), span)?;
                Ok(SVal::Tuple(Vec::new()))
            }
            EffectOp::UnsafeIo => {
                let body = next()?;
                self.apply(body, SVal::Tuple(Vec::new()), span)
            }
            EffectOp::While => {
                let body = next()?;
                self.effect_while(Vec::new(), span, |cx, _| {
                    match cx.apply(body.clone(), SVal::Tuple(Vec::new()), span)? {
                        SVal::Arr(go_on) => Ok((go_on, Vec::new())),
                        _ => bug(span, "a while body's result is not a Bool"),
                    }
                })?;
                Ok(SVal::Tuple(Vec::new()))
            }
            EffectOp::Iter => {
                let body = next()?;
                self.iter(body, None, result_ty, span)
            }
            EffectOp::BoundedIter => {
                let max = next()?;
                let fallback = next()?;
                let body = next()?;
                self.iter(body, Some((max, fallback)), result_ty, span)
            }
        }
    }

    /// Runs `action` with a new reference to `init`; gives the action's result and the final
    /// value behind the reference.
    fn handle(
        &mut self,
        kind: CellKind,
        init: SVal,
        ty: Ty,
        action: SVal,
        span: Span,
    ) -> Result<(SVal, SVal)> {
        let cell = self.new_cell(kind, init, ty);
        let res = self.apply(
            action,
            SVal::Ref {
                cell,
                path: Vec::new(),
                fields: Vec::new(),
            },
            span,
        );
        self.effects.cells[cell].live = false;
        let res = res?;
        if holds_reference(&res) {
            return error(
                span,
                "a reference escapes its handler: the handler's body returns it, but it can \
                 only be used inside the body",
            );
        }
        let last = self.effects.cells[cell].value.clone();
        Ok((res, last))
    }

    fn new_cell(&mut self, kind: CellKind, init: SVal, ty: Ty) -> usize {
        self.effects.cells.push(Cell {
            value: init.clone(),
            init,
            ty,
            kind,
            depth: self.effects.depth,
            live: true,
        });
        self.effects.cells.len() - 1
    }

    /// `catch(action)`: a flag cell that `throw` sets; writes after a throw are masked by it
    /// (Note [Exceptions]).
    fn catch(&mut self, action: SVal, result_ty: &Ty, span: Span) -> Result<SVal> {
        let flag = self.new_cell(
            CellKind::Thrown,
            SVal::Arr(Atom::Lit(Scalar::Bool(false))),
            Ty::bool(),
        );
        let first_cell = self.effects.cells.len();
        self.effects.catches.push((flag, first_cell));
        let res = self.apply(action, SVal::Tuple(Vec::new()), span);
        self.effects.catches.pop();
        self.effects.cells[flag].live = false;
        let res = res?;
        let SVal::Arr(thrown) = self.effects.cells[flag].value.clone() else {
            return bug(span, "a catch flag that is not a scalar");
        };
        let Ty::Data(maybe) = result_ty else {
            return bug(span, "catch's result is not a Maybe");
        };
        let just = self.constructor(maybe.clone(), 1, vec![res], span)?;
        let SVal::Tuple(mut items) = just else {
            return bug(span, "a Maybe that is not tagged");
        };
        // `Nothing` (tag 0) when thrown, `Just` (tag 1) otherwise.
        let tag = self.prim(
            Prim::Select,
            vec![thrown, Atom::Lit(Scalar::U32(0)), Atom::Lit(Scalar::U32(1))],
            span,
        )?;
        items[0] = SVal::Arr(tag);
        Ok(SVal::Tuple(items))
    }

    /// Whether a `catch` around this point has thrown, for a write to `cell` (made before
    /// the catch began): `None` outside every catch.
    fn thrown_for(&mut self, cell: usize, span: Span) -> Result<Option<Atom>> {
        let flags: Vec<usize> = self
            .effects
            .catches
            .iter()
            .filter(|(_, first)| cell < *first)
            .map(|(flag, _)| *flag)
            .collect();
        let mut any: Option<Atom> = None;
        for flag in flags {
            let SVal::Arr(thrown) = self.effects.cells[flag].value.clone() else {
                return bug(span, "a catch flag that is not a scalar");
            };
            if thrown == Atom::Lit(Scalar::Bool(false)) {
                continue;
            }
            any = Some(match any {
                None => thrown,
                Some(other) => self.prim(Prim::Or, vec![other, thrown], span)?,
            });
        }
        Ok(any)
    }

    /// `error "message"` reached here: counts it in the error's cell and gives a zero of the
    /// type the context wants (Note [Runtime errors]).
    pub(super) fn runtime_error(&mut self, message: String, ty: &Ty, span: Span) -> Result<SVal> {
        let message = format!("{}{message}", self.site_prefix());
        self.count_site(SiteKind::Error, message, None, span)?;
        self.value_never_used(ty, span)
    }

    /// `print "text"` reached here: a line of the print log (Note [The print log]).
    pub(super) fn print_line(&mut self, text: String, span: Span) -> Result<SVal> {
        self.log_print(text, None, span)?;
        Ok(SVal::Tuple(Vec::new()))
    }

    /// A `print` reached here, of `text` or of a text computed when the block runs: the next
    /// line of the print log (Note [The print log]).
    fn log_print(&mut self, text: String, computed: Option<(SVal, Ty)>, span: Span) -> Result<()> {
        self.count_site(SiteKind::Print, text, None, span)?;
        let site = self.effects.sites.len() - 1;
        let int = Ty::Base(crate::check::types::BaseTy::Int64);
        let (count, lines) = match self.effects.log {
            Some(log) => log,
            None => {
                let lines_ty = Ty::table(Ty::Fin(Size::Const(PRINT_LOG_LINES as u64)), int.clone());
                let count = self.new_top_cell(int, span)?;
                let lines = self.new_top_cell(lines_ty, span)?;
                self.effects.log = Some((count, lines));
                (count, lines)
            }
        };
        let SVal::Arr(line) = self.effects.cells[count].value.clone() else {
            return bug(span, "the print log's count is not a number");
        };
        if let Some((message, ty)) = computed {
            let buffer = self.print_buffer(site, ty, span)?;
            self.effects.sites[site].text_cell = Some(buffer);
            self.update_cell(buffer, &[line], message, None, span)?;
        }
        let site_id = SVal::Arr(Atom::Lit(Scalar::I64(site as i64)));
        self.update_cell(lines, &[line], site_id, None, span)?;
        let next = self.prim(Prim::Add, vec![line, Atom::Lit(Scalar::I64(1))], span)?;
        self.update_cell(count, &[], SVal::Arr(next), None, span)
    }

    /// The texts by log line of the `print` at `site` (the same cell when a loop lowers its
    /// body again, found by the site's position).
    fn print_buffer(&mut self, site: usize, text_ty: Ty, span: Span) -> Result<usize> {
        let (site_span, origin) = (
            self.effects.sites[site].span,
            self.effects.sites[site].origin,
        );
        let known = self.effects.sites[..site].iter().find(|other| {
            other.kind == SiteKind::Print
                && (other.span, other.origin) == (site_span, origin)
                && other.text_cell.is_some()
        });
        if let Some(cell) = known.and_then(|other| other.text_cell) {
            return Ok(cell);
        }
        let ty = Ty::table(Ty::Fin(Size::Const(PRINT_LOG_LINES as u64)), text_ty);
        self.new_top_cell(ty, span)
    }

    /// A state cell of the block's top level, zero at first (made in the block's main body,
    /// which every use of the cell can see).
    fn new_top_cell(&mut self, ty: Ty, span: Span) -> Result<usize> {
        let here = std::mem::replace(&mut self.block, self.program.main);
        let init = self.zeros_of(&ty, span);
        self.block = here;
        let cell = self.new_cell(CellKind::State, init?, ty);
        self.effects.cells[cell].depth = 0;
        Ok(cell)
    }

    /// Counts a site's reach; `computed` is its text when it is computed when the block
    /// runs (Note [Runtime errors]).
    fn count_site(
        &mut self,
        kind: SiteKind,
        text: String,
        computed: Option<(SVal, Ty)>,
        span: Span,
    ) -> Result<()> {
        let origin = span;
        let span = self.in_def_call_site().map_or(span, |(_, call)| call);
        let cell = self.new_cell(
            CellKind::Accum(Combine::Named(NamedMonoid::Add)),
            SVal::Arr(Atom::Lit(Scalar::I32(0))),
            Ty::Base(crate::check::types::BaseTy::Int32),
        );
        // Counted at the top level of the block (or of the innermost `while`), whatever the
        // loop it is reached in.
        self.effects.cells[cell].depth = self.effects.while_depths.last().copied().unwrap_or(0);
        let text_cell = match computed {
            Some((message, ty)) => Some(self.first_text(kind, message, ty, origin)?),
            None => None,
        };
        self.effects.sites.push(Site {
            kind,
            span,
            text,
            cell,
            text_cell,
            origin,
        });
        self.extend(cell, Vec::new(), SVal::Arr(Atom::Lit(Scalar::I32(1))), span)
    }

    /// What an error message of a site here starts with: the definition it is in.
    fn site_prefix(&self) -> String {
        match self.in_def_call_site() {
            Some((def, _)) => format!("in `{def}`: "),
            None => String::new(),
        }
    }

    /// The state cell of a site whose text is computed (Note [Runtime errors]), written with
    /// `message` unless it was reached before. A loop lowers its body more than once (until
    /// the cells it carries are known), so the cell of a site is made once and found again
    /// by the site's position.
    fn first_text(&mut self, kind: SiteKind, message: SVal, ty: Ty, span: Span) -> Result<usize> {
        let site_span = self.in_def_call_site().map_or(span, |(_, call)| call);
        let known = self.effects.sites.iter().find(|site| {
            site.kind == kind
                && (site.span, site.origin) == (site_span, span)
                && site.text_cell.is_some()
        });
        let cell = match known.and_then(|site| site.text_cell) {
            Some(cell) => cell,
            None => {
                let cell_ty = Ty::Tuple(vec![Ty::bool(), ty.clone()]);
                // Made in the block's main body, which every use of the cell can see.
                let here = std::mem::replace(&mut self.block, self.program.main);
                let init = self.zeros_of(&cell_ty, span);
                self.block = here;
                let init = init?;
                let cell = self.new_cell(CellKind::State, init, cell_ty);
                self.effects.cells[cell].depth =
                    self.effects.while_depths.last().copied().unwrap_or(0);
                cell
            }
        };
        let before = self.leaves(&self.effects.cells[cell].value.clone(), span)?;
        let new = self.leaves(&message, span)?;
        let mut next = vec![Atom::Lit(Scalar::Bool(true))];
        for (old, new) in before[1..].iter().zip(new) {
            next.push(self.prim(Prim::Select, vec![before[0], *old, new], span)?);
        }
        let cell_ty = self.effects.cells[cell].ty.clone();
        let value = self.assemble(&cell_ty, next);
        self.update_cell(cell, &[], value, None, span)?;
        Ok(cell)
    }

    /// What `throw` and `error` give: zero of the type the context wants, or `()` when nothing
    /// decides the type (a statement `throw()`).
    fn value_never_used(&mut self, ty: &Ty, span: Span) -> Result<SVal> {
        if ty.any(&mut |ty| matches!(ty, Ty::Var(_))) {
            return Ok(SVal::Tuple(Vec::new()));
        }
        self.zeros_of(ty, span)
    }

    /// `cell!path += value`: eagerly at the accumulator's level, else as a contribution of
    /// the loop (Note [Effects as cells]).
    fn extend(&mut self, cell: usize, path: Vec<Atom>, value: SVal, span: Span) -> Result<()> {
        let monoid = match self.effects.cells[cell].kind {
            CellKind::Accum(Combine::Named(monoid)) => monoid,
            CellKind::Accum(Combine::User(user)) => {
                let user = self.effects.user_monoids[user].clone();
                let mut ty = self.effects.cells[cell].ty.clone();
                let mut current = self.effects.cells[cell].value.clone();
                for &index in &path {
                    let Ty::Table(_, elem) = ty else {
                        return bug(span, "an element reference into a non-table");
                    };
                    ty = *elem;
                    current = self.index_value(&current, index, span)?;
                }
                let combined = self.combine_user(&user, &ty, current, value, span)?;
                return self.update_cell(cell, &path, combined, None, span);
            }
            _ => return bug(span, "extending a cell that is not an accumulator"),
        };
        let deeper = self.effects.cells[cell].depth < self.effects.depth;
        if deeper && monoid == NamedMonoid::Add {
            let mut values = self.leaves(&value, span)?;
            if let Some(thrown) = self.thrown_for(cell, span)? {
                for value in &mut values {
                    let ty = self.atom_ty(value);
                    let zero = Atom::Lit(Scalar::zero(ty.elem));
                    let zero = self.broadcast(zero, &ty.shape, span);
                    *value = self.prim(Prim::Select, vec![thrown, zero, *value], span)?;
                }
            }
            let record = Record {
                cell,
                path: path.into_iter().map(Step::Data).collect(),
                values,
                batch: 0,
            };
            match self.effects.frames.last_mut() {
                Some(frame) => frame.push(record),
                None => return bug(span, "a contribution outside every loop"),
            }
            Ok(())
        } else {
            self.update_cell(cell, &path, value, Some(monoid), span)
        }
    }

    /// A reference's cell, element indices and fields (`ref.x!i`).
    fn field_reference(&self, value: SVal, span: Span) -> Result<(usize, Vec<Atom>, Vec<usize>)> {
        let SVal::Ref { cell, path, fields } = value else {
            return bug(span, "a reference operation on a non-reference");
        };
        if !self.effects.cells[cell].live {
            return error(
                span,
                "this reference is used outside its handler (`with_state`, `yield_accum`, …)",
            );
        }
        Ok((cell, path, fields))
    }

    /// `ref.x`: the reference to field `field` of what `ref` refers to.
    pub(super) fn field_of_reference(&self, value: SVal, field: usize, span: Span) -> Result<SVal> {
        let (cell, path, mut fields) = self.field_reference(value, span)?;
        fields.push(field);
        Ok(SVal::Ref { cell, path, fields })
    }

    /// `acc.x += v` (at element `path` of the accumulator): `v` in field `x` of a value that
    /// is the monoid's identity everywhere else, so adding it adds `v` to the field.
    fn widen_to_element(
        &mut self,
        cell: usize,
        combine: Combine,
        path: &[Atom],
        fields: &[usize],
        value: SVal,
        span: Span,
    ) -> Result<SVal> {
        if let Combine::User(_) = combine {
            return error(
                span,
                "`+=` to a field of an accumulator of a user's monoid: add a whole value",
            );
        }
        let mut ty = self.effects.cells[cell].ty.clone();
        for _ in path {
            let Ty::Table(_, elem) = ty else {
                return bug(span, "an element reference into a non-table");
            };
            ty = *elem;
        }
        let identity = self.monoid_identity(combine, &ty, span)?;
        let (start, count) = self.field_leaves(&identity, fields, span)?;
        let mut leaves = self.leaves(&identity, span)?;
        let new = self.leaves(&value, span)?;
        if new.len() != count {
            return bug(span, "a field's value of another shape than the field's");
        }
        leaves.splice(start..start + count, new);
        Ok(self.assemble(&ty, leaves))
    }

    /// The leaves of `value` that field `fields` of it holds: their first position and their
    /// number.
    fn field_leaves(&self, value: &SVal, fields: &[usize], span: Span) -> Result<(usize, usize)> {
        let mut value = value.clone();
        let mut start = 0;
        for &field in fields {
            let SVal::Tuple(items) = value else {
                return bug(span, "a field of a value that has none");
            };
            for item in items.iter().take(field) {
                start += self.leaves(item, span)?.len();
            }
            let Some(item) = items.into_iter().nth(field) else {
                return bug(span, "a field past a value's last");
            };
            value = item;
        }
        Ok((start, self.leaves(&value, span)?.len()))
    }

    /// `old <> new` in a user's monoid, lifted to tables of its base type element by element
    /// (Note [Named monoids]).
    fn combine_user(
        &mut self,
        user: &UserMonoid,
        ty: &Ty,
        old: SVal,
        new: SVal,
        span: Span,
    ) -> Result<SVal> {
        if *ty == user.base {
            let partial = self.apply(user.combine.clone(), old, span)?;
            return self.apply(partial, new, span);
        }
        let Ty::Table(_, elem) = ty else {
            return self.not_of_monoid(user, ty, span);
        };
        self.build_table(ty, "combined", span, |cx, index| {
            let old = cx.index_value(&old, index, span)?;
            let new = cx.index_value(&new, index, span)?;
            let combined = cx.combine_user(user, elem, old, new, span)?;
            cx.leaves(&combined, span)
        })
    }

    /// A user's monoid's `mempty` at `ty`: its base type or tables of it.
    fn user_identity(&mut self, user: &UserMonoid, ty: &Ty, span: Span) -> Result<SVal> {
        if *ty == user.base {
            return Ok(user.empty.clone());
        }
        let Ty::Table(_, elem) = ty else {
            return self.not_of_monoid(user, ty, span);
        };
        self.build_table(ty, "mempty", span, |cx, _| {
            let empty = cx.user_identity(user, elem, span)?;
            cx.leaves(&empty, span)
        })
    }

    fn not_of_monoid<T>(&self, user: &UserMonoid, ty: &Ty, span: Span) -> Result<T> {
        error(
            span,
            format!(
                "this accumulator holds `{ty}`, but its monoid combines `{}`: an accumulator \
                 holds the monoid's type or tables of it",
                user.base
            ),
        )
    }

    /// The identity of `monoid` at `ty` (a table of the monoid's values is its identity at
    /// every element, as Dex's lifted monoids).
    fn monoid_identity(&mut self, monoid: Combine, ty: &Ty, span: Span) -> Result<SVal> {
        let monoid = match monoid {
            Combine::Named(monoid) => monoid,
            Combine::User(user) => {
                let user = self.effects.user_monoids[user].clone();
                return self.user_identity(&user, ty, span);
            }
        };
        let tys = self.leaf_types(ty, span)?;
        let mut leaves = Vec::with_capacity(tys.len());
        for leaf in tys {
            let scalar = match monoid {
                NamedMonoid::Add => Scalar::zero(leaf.elem),
                NamedMonoid::Mul => Prim::Cast(leaf.elem).eval(&[Scalar::I64(1)]),
                NamedMonoid::And => Scalar::Bool(true),
                NamedMonoid::Or => Scalar::Bool(false),
            };
            leaves.push(self.broadcast(Atom::Lit(scalar), &leaf.shape, span));
        }
        Ok(self.assemble(ty, leaves))
    }

    /// `cell!path := value` (`combine: None`) or `cell!path += value` in the monoid.
    fn update_cell(
        &mut self,
        cell: usize,
        path: &[Atom],
        value: SVal,
        combine: Option<NamedMonoid>,
        span: Span,
    ) -> Result<()> {
        let all = (0, self.leaves(&self.effects.cells[cell].value, span)?.len());
        self.update_cell_leaves(cell, all, path, value, combine, span)
    }

    /// `update_cell` of the leaves `start..start + count` of the cell's value (a field, Note
    /// [Effects as cells]); `value` has those leaves.
    fn update_cell_leaves(
        &mut self,
        cell: usize,
        (start, count): (usize, usize),
        path: &[Atom],
        value: SVal,
        combine: Option<NamedMonoid>,
        span: Span,
    ) -> Result<()> {
        let thrown = self.thrown_for(cell, span)?;
        let old = self.effects.cells[cell].value.clone();
        let mut leaves = self.leaves(&old, span)?;
        let whole = start == 0 && count == leaves.len();
        if whole && path.is_empty() && combine.is_none() && thrown.is_none() {
            self.effects.cells[cell].value = value;
            return Ok(());
        }
        let new_leaves = self.leaves(&value, span)?;
        if new_leaves.len() != count || start + count > leaves.len() {
            return bug(span, "a write of another shape than its reference's");
        }
        for (slot, new) in leaves[start..start + count].iter_mut().zip(new_leaves) {
            let old = *slot;
            let mut updated = self.update_leaf(old, path, new, combine, span)?;
            // After a throw, the write does not happen (Note [Exceptions]).
            if let Some(thrown) = thrown {
                updated = self.prim(Prim::Select, vec![thrown, old, updated], span)?;
            }
            *slot = updated;
        }
        let ty = self.effects.cells[cell].ty.clone();
        self.effects.cells[cell].value = self.assemble(&ty, leaves);
        Ok(())
    }

    /// `old` with the element at `path` replaced by `new` (or combined with it): a `build1`
    /// over the indexed axis that selects the new element at the index.
    fn update_leaf(
        &mut self,
        old: Atom,
        path: &[Atom],
        new: Atom,
        combine: Option<NamedMonoid>,
        span: Span,
    ) -> Result<Atom> {
        let Some((&first, rest)) = path.split_first() else {
            return match combine {
                None => Ok(new),
                Some(monoid) => self.prim(monoid_prim(monoid), vec![old, new], span),
            };
        };
        let ty = self.atom_ty(&old);
        let Some((&size, elem_shape)) = ty.shape.split_first() else {
            return bug(span, "an element reference into a scalar");
        };
        let index = self
            .program
            .new_var(ArrTy::scalar(crate::core::ir::Elem::I64), "k");
        let body = self.in_block(vec![index], |cx| {
            let elem_ty = ArrTy::new(elem_shape.to_vec(), ty.elem);
            let current = cx.emit1(
                Expr::from(Index {
                    array: old,
                    index: vec![Atom::Var(index)],
                }),
                elem_ty,
                "ix",
                span,
            );
            let updated = cx.update_leaf(current, rest, new, combine, span)?;
            let here = cx.prim(Prim::Eq, vec![Atom::Var(index), first], span)?;
            Ok(vec![cx.prim(
                Prim::Select,
                vec![here, updated, current],
                span,
            )?])
        })?;
        Ok(self.emit1(Expr::from(Build1 { size, body }), ty, "upd", span))
    }

    // ----- control flow -----

    fn snapshot(&self) -> Vec<SVal> {
        self.effects
            .cells
            .iter()
            .map(|cell| cell.value.clone())
            .collect()
    }

    /// The cells' values as in `snapshot` (a cell made since: its initial value).
    fn restore(&mut self, snapshot: &[SVal]) {
        for (index, cell) in self.effects.cells.iter_mut().enumerate() {
            cell.value = snapshot.get(index).unwrap_or(&cell.init).clone();
        }
    }

    /// The value of `cell` in `snapshot`.
    fn snapshot_value<'s>(&'s self, snapshot: &'s [SVal], cell: usize) -> &'s SVal {
        snapshot.get(cell).unwrap_or(&self.effects.cells[cell].init)
    }

    /// The live cells whose value differs from `snapshot`.
    fn changed(&self, snapshot: &[SVal], span: Span) -> Result<Vec<usize>> {
        let mut out = Vec::new();
        for (index, cell) in self.effects.cells.iter().enumerate() {
            let before = self.snapshot_value(snapshot, index);
            if cell.live && self.leaves(&cell.value, span)? != self.leaves(before, span)? {
                out.push(index);
            }
        }
        Ok(out)
    }

    /// The cells' values and the number of contributions of the innermost loop, before a
    /// function is lowered into a block of its own (`seal_function`).
    pub(super) fn effects_before(&self) -> (Vec<SVal>, usize) {
        (
            self.snapshot(),
            self.effects.frames.last().map_or(0, Vec::len),
        )
    }

    /// After lowering a function that is differentiated into a block of its own: a write to
    /// a reference from outside it is an error (its derivative would have to carry the
    /// reference); the `error` and `print` calls inside it are not counted (their counts
    /// would be values of the derivative's block).
    pub(super) fn seal_function(&mut self, before: (Vec<SVal>, usize), span: Span) -> Result<()> {
        let (snapshot, frame_len) = before;
        let is_site = |effects: &Effects, cell: usize| effects.is_site_cell(cell);
        let records = match self.effects.frames.last_mut() {
            Some(frame) => frame.split_off(frame_len.min(frame.len())),
            None => Vec::new(),
        };
        let outside_write = self
            .changed(&snapshot, span)?
            .into_iter()
            .chain(records.iter().map(|record| record.cell))
            .any(|cell| !is_site(&self.effects, cell));
        self.restore(&snapshot);
        if outside_write {
            return error(
                span,
                "a function that is differentiated cannot write a reference from outside it: \
                 make the reference's handler part of the function",
            );
        }
        Ok(())
    }

    /// `cond c then else` whose branches may use effects: the cells either branch changed,
    /// and the contributions either made, leave the `cond` as extra results.
    pub(super) fn effect_cond(
        &mut self,
        cond: Atom,
        result_tys: Vec<ArrTy>,
        hint: &str,
        span: Span,
        then_branch: impl FnOnce(&mut Self) -> Result<Vec<Atom>>,
        else_branch: impl FnOnce(&mut Self) -> Result<Vec<Atom>>,
    ) -> Result<Vec<Atom>> {
        let before = self.snapshot();
        let frame_len = self.effects.frames.last().map_or(0, Vec::len);
        let mut sides = Vec::new();
        for branch in [
            Box::new(then_branch) as Box<dyn FnOnce(&mut Self) -> Result<Vec<Atom>>>,
            Box::new(else_branch),
        ] {
            let mut after = None;
            let mut records = Vec::new();
            let block = self.in_block(Vec::new(), |cx| {
                let res = branch(cx)?;
                after = Some(cx.snapshot());
                if let Some(frame) = cx.effects.frames.last_mut() {
                    records = frame.split_off(frame_len);
                }
                Ok(res)
            });
            self.restore(&before);
            if let Some(frame) = self.effects.frames.last_mut() {
                frame.truncate(frame_len);
            }
            let block = block?;
            sides.push((block, after.unwrap_or_else(|| before.clone()), records));
        }
        // The cells either side changed.
        let mut changed = Vec::new();
        for (_, after, _) in &sides {
            self.restore(after);
            for cell in self.changed(&before, span)? {
                if !changed.contains(&cell) {
                    changed.push(cell);
                }
            }
            self.restore(&before);
        }
        let mut tys = result_tys;
        let n_user = tys.len();
        for &cell in &changed {
            let value = self.effects.cells[cell].value.clone();
            for leaf in self.leaves(&value, span)? {
                tys.push(self.atom_ty(&leaf));
            }
        }
        // Every contribution of either side, with zeros (at index -1, dropped) from the other
        // side. Indices computed outside the branch stay as they are.
        let n_then = sides[0].2.len();
        let records: Vec<Record> = sides
            .iter()
            .flat_map(|(_, _, records)| records.iter().cloned())
            .collect();
        let locals: Vec<std::collections::HashSet<VarId>> = sides
            .iter()
            .map(|(block, _, _)| {
                self.program.blocks[*block]
                    .stmts
                    .iter()
                    .flat_map(|stmt| stmt.binders.iter().copied())
                    .collect()
            })
            .collect();
        let routed: Vec<Vec<bool>> = records
            .iter()
            .enumerate()
            .map(|(position, record)| {
                let owner = usize::from(position >= n_then);
                record
                    .path
                    .iter()
                    .map(|step| matches!(step, Step::Data(Atom::Var(var)) if locals[owner].contains(var)))
                    .collect()
            })
            .collect();
        for (record, routed) in records.iter().zip(&routed) {
            for (step, routed) in record.path.iter().zip(routed) {
                if let (Step::Data(atom), true) = (step, routed) {
                    tys.push(self.atom_ty(atom));
                }
            }
            for value in &record.values {
                tys.push(self.atom_ty(value));
            }
        }
        for (side, (block, after, _)) in sides.iter().enumerate() {
            let mut extra = Vec::new();
            self.restore(after);
            for &cell in &changed {
                let value = self.effects.cells[cell].value.clone();
                extra.extend(self.leaves(&value, span)?);
            }
            self.restore(&before);
            let outer = std::mem::replace(&mut self.block, *block);
            for (position, (record, routed)) in records.iter().zip(&routed).enumerate() {
                let mine = usize::from(position >= n_then) == side;
                for (step, routed) in record.path.iter().zip(routed) {
                    if let (Step::Data(atom), true) = (step, routed) {
                        if mine {
                            extra.push(*atom);
                        } else {
                            let ty = self.atom_ty(atom);
                            let none = Prim::Cast(ty.elem).eval(&[Scalar::I64(-1)]);
                            extra.push(self.broadcast(Atom::Lit(none), &ty.shape, span));
                        }
                    }
                }
                for value in &record.values {
                    if mine {
                        extra.push(*value);
                    } else {
                        let ty = self.atom_ty(value);
                        let zero = Atom::Lit(Scalar::zero(ty.elem));
                        extra.push(self.broadcast(zero, &ty.shape, span));
                    }
                }
            }
            self.block = outer;
            self.program.blocks[*block].results.extend(extra);
        }
        let (then_block, else_block) = (sides[0].0, sides[1].0);
        let binders: Vec<Atom> = self
            .emit(
                Expr::from(Cond {
                    cond,
                    then_block,
                    else_block,
                }),
                tys,
                hint,
                span,
            )
            .into_iter()
            .map(Atom::Var)
            .collect();
        let mut rest = binders[n_user..].iter().copied();
        for &cell in &changed {
            let ty = self.effects.cells[cell].ty.clone();
            let count = self
                .leaves(&self.effects.cells[cell].value.clone(), span)?
                .len();
            let leaves: Vec<Atom> = rest.by_ref().take(count).collect();
            self.effects.cells[cell].value = self.assemble(&ty, leaves);
        }
        for (mut record, routed) in records.into_iter().zip(routed) {
            for (step, routed) in record.path.iter_mut().zip(routed) {
                if let (Step::Data(atom), true) = (step, routed) {
                    *atom = rest.next().map_or_else(|| bug(span, "cond results"), Ok)?;
                }
            }
            for value in &mut record.values {
                *value = rest.next().map_or_else(|| bug(span, "cond results"), Ok)?;
            }
            match self.effects.frames.last_mut() {
                Some(frame) => frame.push(record),
                None => return bug(span, "a contribution outside every loop"),
            }
        }
        Ok(binders[..n_user].to_vec())
    }

    /// A loop of `size` steps whose body may use effects (Note [Effects as cells]). `init` are
    /// the user's carries; `step` gets the index and the carries and gives the next carries and
    /// the step's outputs. With no carries and `parallel`, and when the body writes no state,
    /// the loop is a `build1`; otherwise a `fold` or `scan`.
    pub(super) fn effect_loop(
        &mut self,
        size: usize,
        init: Vec<Atom>,
        parallel: bool,
        hint: &str,
        span: Span,
        mut step: impl FnMut(&mut Self, Atom, Vec<Atom>) -> StepResult,
    ) -> Result<LoopOut> {
        let (carried, attempt) = self.settled_body(&init, true, span, &mut step)?;
        self.emit_loop(size, init, carried, parallel, attempt, hint, span)
    }

    /// The body of a loop lowered again until the cells it writes are all carried: each
    /// attempt carries the live cells the one before wrote (Note [Effects as cells]). Each
    /// attempt carries at least one more cell, of the cells made before the loop or kept
    /// across attempts, so carries that grow past those plus `MAX_NEW_CARRIES` are a bug (a
    /// cell made anew by every attempt), reported rather than looped on.
    fn settled_body(
        &mut self,
        init: &[Atom],
        counted: bool,
        span: Span,
        step: &mut impl FnMut(&mut Self, Atom, Vec<Atom>) -> StepResult,
    ) -> Result<(Vec<usize>, LoopBody)> {
        let mut carried: Vec<usize> = Vec::new();
        let most = self.effects.cells.len() + MAX_NEW_CARRIES;
        loop {
            if carried.len() > most {
                return bug(span, "the cells a loop carries do not settle");
            }
            let attempt = self.loop_body(init, &carried, counted, span, step)?;
            let mut grown = false;
            for &cell in &attempt.written {
                if !carried.contains(&cell) {
                    carried.push(cell);
                    grown = true;
                }
            }
            if !grown {
                return Ok((carried, attempt));
            }
        }
    }

    fn loop_body(
        &mut self,
        init: &[Atom],
        carried: &[usize],
        counted: bool,
        span: Span,
        step: &mut impl FnMut(&mut Self, Atom, Vec<Atom>) -> StepResult,
    ) -> Result<LoopBody> {
        let before = self.snapshot();
        let depths: Vec<usize> = self.effects.cells.iter().map(|cell| cell.depth).collect();
        let index = self
            .program
            .new_var(ArrTy::scalar(crate::core::ir::Elem::I64), "i");
        // A `while` has no index, and cannot stack contributions (its trip count is data):
        // it carries the accumulators it adds to.
        let mut params = if counted { vec![index] } else { Vec::new() };
        let carry_vars: Vec<VarId> = init
            .iter()
            .map(|atom| {
                let ty = self.atom_ty(atom);
                self.program.new_var(ty, "c")
            })
            .collect();
        params.extend(&carry_vars);
        let mut cell_counts = Vec::new();
        for &cell in carried {
            let value = self.effects.cells[cell].value.clone();
            let leaves = self.leaves(&value, span)?;
            cell_counts.push(leaves.len());
            let vars: Vec<VarId> = leaves
                .iter()
                .map(|leaf| {
                    let ty = self.atom_ty(leaf);
                    self.program.new_var(ty, "s")
                })
                .collect();
            params.extend(&vars);
            let ty = self.effects.cells[cell].ty.clone();
            self.effects.cells[cell].value =
                self.assemble(&ty, vars.into_iter().map(Atom::Var).collect());
        }
        self.effects.depth += 1;
        for &cell in carried {
            self.effects.cells[cell].depth = self.effects.depth;
        }
        if !counted {
            for cell in &mut self.effects.cells {
                if matches!(cell.kind, CellKind::Accum(_)) {
                    cell.depth = self.effects.depth;
                }
            }
        }
        self.effects.frames.push(Vec::new());
        if !counted {
            self.effects.while_depths.push(self.effects.depth);
        }
        let mut written = Vec::new();
        let mut n_next = 0;
        let mut n_ys = 0;
        let body = self.in_block(params, |cx| {
            let (next, ys) = step(
                cx,
                Atom::Var(index),
                carry_vars.iter().copied().map(Atom::Var).collect(),
            )?;
            n_next = next.len();
            n_ys = ys.len();
            let mut results = next;
            for &cell in carried {
                let value = cx.effects.cells[cell].value.clone();
                results.extend(cx.leaves(&value, span)?);
            }
            results.extend(ys);
            for cell in 0..cx.effects.cells.len() {
                if carried.contains(&cell) || !cx.effects.cells[cell].live {
                    continue;
                }
                // A cell made in the body belongs to the loop's level or an outer one when
                // its depth says so (the text cell of an `error` site, Note [Runtime
                // errors]); the body's own handlers' cells are deeper.
                if cell >= before.len() && cx.effects.cells[cell].depth >= cx.effects.depth {
                    continue;
                }
                let value = cx.snapshot_value(&before, cell).clone();
                if cx.leaves(&cx.effects.cells[cell].value, span)? != cx.leaves(&value, span)? {
                    written.push(cell);
                }
            }
            Ok(results)
        });
        self.effects.depth -= 1;
        if !counted {
            self.effects.while_depths.pop();
        }
        let records = self.effects.frames.pop().unwrap_or_default();
        self.restore(&before);
        for (cell, depth) in self.effects.cells.iter_mut().zip(depths) {
            cell.depth = depth;
        }
        let body = body?;
        let block = &self.program.blocks[body];
        let local: std::collections::HashSet<VarId> = block
            .stmts
            .iter()
            .flat_map(|stmt| stmt.binders.iter().copied())
            .chain(block.params.iter().copied())
            .collect();
        let mut extra = Vec::new();
        let mut records = records;
        for record in &mut records {
            // Shift the axes of the loops inside this one; index or stack the rest.
            for step in &mut record.path {
                *step = match *step {
                    Step::Axis(axis) => Step::Axis(axis + 1),
                    Step::Data(atom) if atom == Atom::Var(index) => Step::Axis(0),
                    Step::Data(Atom::Var(var)) if local.contains(&var) => {
                        extra.push(Atom::Var(var));
                        Step::Stacked
                    }
                    // Computed outside the loop: the same at every step.
                    step => step,
                };
            }
            extra.extend(&record.values);
        }
        self.program.blocks[body].results.extend(extra);
        Ok(LoopBody {
            body,
            written,
            records,
            n_next,
            n_ys,
            cell_counts,
        })
    }

    /// A loop whose trip count is data (`while`, `iter`): a core `while` carrying the user's
    /// carries `init` and the cells the body writes. `step` gets the carries and gives the
    /// next ones and whether to go on.
    pub(super) fn effect_while(
        &mut self,
        init: Vec<Atom>,
        span: Span,
        mut step: impl FnMut(&mut Self, Vec<Atom>) -> Result<(Atom, Vec<Atom>)>,
    ) -> Result<Vec<Atom>> {
        let mut step = |cx: &mut Self, _: Atom, carries: Vec<Atom>| -> StepResult {
            let (go_on, next) = step(cx, carries)?;
            Ok((next, vec![go_on]))
        };
        let (carried, attempt) = self.settled_body(&init, false, span, &mut step)?;
        if !attempt.records.is_empty() {
            return bug(span, "a contribution stacked by a while");
        }
        // The body's results are `[next…, cells…, continue]`: the flag goes first.
        self.program.blocks[attempt.body].results.rotate_right(1);
        let mut all_init = init;
        for &cell in &carried {
            let value = self.effects.cells[cell].value.clone();
            all_init.extend(self.leaves(&value, span)?);
        }
        let tys: Vec<ArrTy> = all_init.iter().map(|atom| self.atom_ty(atom)).collect();
        let binders: Vec<Atom> = self
            .emit(
                Expr::from(While {
                    init: all_init,
                    body: attempt.body,
                }),
                tys,
                "while",
                span,
            )
            .into_iter()
            .map(Atom::Var)
            .collect();
        let mut rest = binders.into_iter();
        let carries: Vec<Atom> = rest.by_ref().take(attempt.n_next).collect();
        for (&cell, count) in carried.iter().zip(attempt.cell_counts) {
            let ty = self.effects.cells[cell].ty.clone();
            let leaves: Vec<Atom> = rest.by_ref().take(count).collect();
            self.effects.cells[cell].value = self.assemble(&ty, leaves);
        }
        Ok(carries)
    }

    /// `iter(\i. body)`: the body's `IterResult` says whether to go on; `bounded` adds the
    /// step bound and the fallback of `bounded_iter`. Carries the step and the result.
    fn iter(
        &mut self,
        body: SVal,
        bounded: Option<(SVal, SVal)>,
        result_ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let result_zero = self.zeros_of(result_ty, span)?;
        let mut init = vec![Atom::Lit(Scalar::U32(0))];
        init.extend(self.leaves(&result_zero, span)?);
        let n_result = init.len() - 1;
        let result_tys = self.leaf_types(result_ty, span)?;
        let carries = self.effect_while(init, span, |cx, carries| {
            let step = carries[0];
            let at = SVal::Arr(step);
            // The step's `IterResult`, as the leaves of its representation.
            let outcome_ty = cx.iter_result_ty(result_ty, span)?;
            let outcome_tys = cx.leaf_types(&outcome_ty, span)?;
            let outcome = match &bounded {
                None => {
                    let res = cx.apply(body.clone(), at, span)?;
                    cx.leaves(&res, span)?
                }
                Some((max, fallback)) => {
                    let SVal::Arr(max) = max else {
                        return bug(span, "bounded_iter's bound is not a scalar");
                    };
                    let beyond = cx.prim(Prim::Ge, vec![step, *max], span)?;
                    let Ty::Data(data) = &outcome_ty else {
                        return bug(span, "IterResult is not a user type");
                    };
                    let data = data.clone();
                    let fallback = fallback.clone();
                    let body = body.clone();
                    cx.effect_cond(
                        beyond,
                        outcome_tys,
                        "bounded",
                        span,
                        |cx| {
                            let done = cx.constructor(data, 1, vec![fallback], span)?;
                            cx.leaves(&done, span)
                        },
                        |cx| {
                            let res = cx.apply(body, at, span)?;
                            cx.leaves(&res, span)
                        },
                    )?
                }
            };
            // `Continue` is constructor 0, `Done(x)` constructor 1: [tag, (), (x…)].
            let tag = outcome[0];
            let done_value = &outcome[1..];
            let go_on = cx.prim(Prim::Eq, vec![tag, Atom::Lit(Scalar::U32(0))], span)?;
            let next_step = cx.prim(Prim::Add, vec![step, Atom::Lit(Scalar::U32(1))], span)?;
            let mut next = vec![next_step];
            for (position, _) in result_tys.iter().enumerate() {
                let old = carries[1 + position];
                next.push(cx.prim(Prim::Select, vec![go_on, old, done_value[position]], span)?);
            }
            let _ = n_result;
            Ok((go_on, next))
        })?;
        Ok(self.assemble(result_ty, carries[1..].to_vec()))
    }

    fn iter_result_ty(&mut self, result_ty: &Ty, span: Span) -> Result<Ty> {
        match self.env.data_types.get("IterResult") {
            Some(def) => Ok(Ty::Data(crate::check::data::DataTy {
                def: def.clone(),
                args: vec![result_ty.clone()],
            })),
            None => bug(span, "the prelude defines no IterResult"),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn emit_loop(
        &mut self,
        size: usize,
        init: Vec<Atom>,
        carried: Vec<usize>,
        parallel: bool,
        attempt: LoopBody,
        hint: &str,
        span: Span,
    ) -> Result<LoopOut> {
        let LoopBody {
            body,
            records,
            n_next,
            n_ys,
            cell_counts,
            ..
        } = attempt;
        let results = self.program.blocks[body].results.clone();
        let n_carries = n_next + cell_counts.iter().sum::<usize>();
        let mut all_init = init;
        for &cell in &carried {
            let value = self.effects.cells[cell].value.clone();
            all_init.extend(self.leaves(&value, span)?);
        }
        let carry_tys: Vec<ArrTy> = all_init.iter().map(|atom| self.atom_ty(atom)).collect();
        let stacked_tys: Vec<ArrTy> = results[n_carries..]
            .iter()
            .map(|atom| {
                let ty = self.atom_ty(atom);
                let mut shape = vec![size];
                shape.extend(ty.shape);
                ArrTy::new(shape, ty.elem)
            })
            .collect();
        let binders: Vec<Atom> = if n_carries == 0 && parallel {
            // Only the index is a parameter.
            self.emit(Expr::from(Build1 { size, body }), stacked_tys, hint, span)
        } else if results.len() == n_carries {
            self.emit(
                Expr::from(Fold {
                    size,
                    init: all_init,
                    body,
                }),
                carry_tys,
                hint,
                span,
            )
        } else {
            let mut tys = carry_tys;
            tys.extend(stacked_tys);
            self.emit(
                Expr::from(Scan {
                    size,
                    init: all_init,
                    body,
                }),
                tys,
                hint,
                span,
            )
        }
        .into_iter()
        .map(Atom::Var)
        .collect();
        let mut rest = binders.into_iter();
        let carries: Vec<Atom> = rest.by_ref().take(n_next).collect();
        for (&cell, count) in carried.iter().zip(cell_counts) {
            let ty = self.effects.cells[cell].ty.clone();
            let leaves: Vec<Atom> = rest.by_ref().take(count).collect();
            self.effects.cells[cell].value = self.assemble(&ty, leaves);
        }
        let ys: Vec<Atom> = rest.by_ref().take(n_ys).collect();
        for mut record in records {
            // The contribution stacked along the new outermost axis.
            for step in &mut record.path {
                if *step == Step::Stacked {
                    *step = Step::Data(rest.next().map_or_else(|| bug(span, "loop results"), Ok)?);
                }
            }
            for value in &mut record.values {
                *value = rest.next().map_or_else(|| bug(span, "loop results"), Ok)?;
            }
            record.batch += 1;
            if self.effects.cells[record.cell].depth == self.effects.depth {
                self.apply_record(record, span)?;
            } else {
                match self.effects.frames.last_mut() {
                    Some(frame) => frame.push(record),
                    None => return bug(span, "a contribution outside every loop"),
                }
            }
        }
        Ok(LoopOut { carries, ys })
    }

    /// Adds the stacked contributions of `record` to its accumulator (Note [Effects as
    /// cells]).
    fn apply_record(&mut self, record: Record, span: Span) -> Result<()> {
        let cell = record.cell;
        let value = self.effects.cells[cell].value.clone();
        let old = self.leaves(&value, span)?;
        // Indices that are all loop axes: the other axes are summed, the indexed ones put in
        // the order of the indices (no scatter).
        let axes: Option<Vec<usize>> = record
            .path
            .iter()
            .map(|step| match step {
                Step::Axis(axis) => Some(*axis),
                _ => None,
            })
            .collect();
        let axes = axes.filter(|axes| {
            let mut seen = axes.clone();
            seen.sort_unstable();
            seen.dedup();
            seen.len() == axes.len()
        });
        let mut leaves = Vec::with_capacity(old.len());
        for (old, added) in old.into_iter().zip(record.values) {
            let total = match &axes {
                Some(axes) => self.sum_other_axes(added, axes, record.batch, span),
                None => self.scatter_record(&old, &record.path, added, record.batch, span)?,
            };
            leaves.push(self.prim(Prim::Add, vec![old, total], span)?);
        }
        let ty = self.effects.cells[cell].ty.clone();
        self.effects.cells[cell].value = self.assemble(&ty, leaves);
        Ok(())
    }

    /// `added` (with `batch` leading axes) summed over the batch axes not in `kept`, the kept
    /// ones in the order of `kept`.
    fn sum_other_axes(&mut self, added: Atom, kept: &[usize], batch: usize, span: Span) -> Atom {
        let mut order: Vec<usize> = (0..batch).filter(|axis| !kept.contains(axis)).collect();
        order.extend(kept);
        let mut res = added;
        if order
            .iter()
            .enumerate()
            .any(|(position, axis)| position != *axis)
        {
            let ty = self.atom_ty(&res);
            let mut shape: Vec<usize> = order.iter().map(|axis| ty.shape[*axis]).collect();
            shape.extend(&ty.shape[batch..]);
            res = self.emit1(
                Expr::from(Transpose {
                    perm: order.clone(),
                    array: res,
                }),
                ArrTy::new(shape, ty.elem),
                "acc",
                span,
            );
        }
        for _ in kept.len()..batch {
            let ty = self.atom_ty(&res);
            let rest = ArrTy::new(ty.shape[1..].to_vec(), ty.elem);
            res = self.emit1(Expr::from(SumOuter(res)), rest, "acc", span);
        }
        res
    }

    /// The contributions `added` (batch axes first) sent to the elements `path` of an array
    /// shaped as `like`, collisions added: a scatter-add.
    fn scatter_record(
        &mut self,
        like: &Atom,
        path: &[Step],
        added: Atom,
        batch: usize,
        span: Span,
    ) -> Result<Atom> {
        let ty = self.atom_ty(like);
        let shape = ty.shape[..path.len()].to_vec();
        let params: Vec<VarId> = (0..batch)
            .map(|_| {
                self.program
                    .new_var(ArrTy::scalar(crate::core::ir::Elem::I64), "b")
            })
            .collect();
        let body = self.in_block(params.clone(), |cx| {
            let mut targets = Vec::with_capacity(path.len());
            for step in path {
                targets.push(match *step {
                    Step::Axis(axis) => Atom::Var(params[axis]),
                    Step::Data(table) => {
                        let ty = cx.atom_ty(&table);
                        let target = if ty.rank() == 0 {
                            table
                        } else {
                            let index = params[..ty.rank()].iter().copied().map(Atom::Var);
                            cx.emit1(
                                Expr::from(Index {
                                    array: table,
                                    index: index.collect(),
                                }),
                                ArrTy::scalar(ty.elem),
                                "to",
                                span,
                            )
                        };
                        cx.cast(target, crate::core::ir::Elem::I64, span)?
                    }
                    Step::Stacked => return bug(span, "an unstacked index"),
                });
            }
            Ok(targets)
        })?;
        Ok(self.emit1(
            Expr::from(Scatter {
                shape,
                array: added,
                body,
            }),
            ty,
            "scatter",
            span,
        ))
    }
}

/// What lowering a loop body found.
struct LoopBody {
    body: BlockId,
    /// Live cells (not carried) the body wrote.
    written: Vec<usize>,
    records: Vec<Record>,
    n_next: usize,
    n_ys: usize,
    cell_counts: Vec<usize>,
}

/// The type `s` of the reference a handler's action takes (`init -> (Ref h s -> a) -> r`).
fn ref_value_ty(ty: &Ty) -> Result<Ty> {
    if let Ty::Fun { result, .. } = ty {
        if let Ty::Fun { param: action, .. } = &**result {
            if let Ty::Fun { param, .. } = &**action {
                if let Ty::Con(_, args) = &**param {
                    if let Some(value) = args.get(1) {
                        return Ok(value.clone());
                    }
                }
            }
        }
    }
    bug(Span::default(), "a handler's type")
}

fn monoid_prim(monoid: NamedMonoid) -> Prim {
    match monoid {
        NamedMonoid::Add => Prim::Add,
        NamedMonoid::Mul => Prim::Mul,
        NamedMonoid::And => Prim::And,
        NamedMonoid::Or => Prim::Or,
    }
}

fn holds_reference(value: &SVal) -> bool {
    match value {
        SVal::Ref { .. } => true,
        SVal::Tuple(items) => items.iter().any(holds_reference),
        _ => false,
    }
}
