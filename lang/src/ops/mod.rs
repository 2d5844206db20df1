//! Rule homes of IR operations: one module per operation (or family) holding every rule of
//! the operation together — type rule, reference evaluation, batching (BOT), JVP, transpose,
//! cost and fusion class — so that adding an operation is one file and the compiler points
//! at the arms the generic passes need (issue #11 §0).
//!
//! | module | operations |
//! |---|---|
//! | `build` | `build1`, `index`, `iota`, literal tables |
//! | `sum_outer` | `sumOuter` |
//! | `gather_scatter` | `gather`, `scatter` |
//! | `layout` | `replicate`, `tr`, `reshape` |
//! | `cond` | `cond` |
//! | `loops` | `fold`, `scan` |
//! | `while_loop` | `while`, `while_reverse` |
//! | `monoid` | `reduce`, `assoc_scan`, `assoc_scan_right` |
//! | `derivative` | `jvp`/`vjp` statements before the `ad` pass expands them |
//! | `custom` | `custom_vjp`, `custom_jvp`, `custom_linear` (user-defined derivatives) |
//! | `elementwise` | an elementwise primitive applied to operands (`Expr::Prim`) |
//!
//! The primitives' own rules have their homes in `prim`, one file per family.
//!
//! A form's rules are the methods of its `impl Operation` in its home: the type rule,
//! reference evaluation, batching (BOT), JVP, transpose, cost, linearity, fusion class, the
//! pushing of an index into what defines the array it reads, simplifier identities and
//! statement rules (contexts in `rewrite`), the dropping of results nothing reads, sign fact,
//! element rule (`Element`), loop bodies, StableHLO export (in the vocabulary of
//! `hlo::StableHlo`, which `export::stablehlo` implements) and how the engine's bulk
//! evaluator runs it (in the vocabulary of `bulk::Bulk`, which `exec` implements). `operation` is the one
//! `match` that lists the forms; the rules every form states have no default, so a new form
//! makes the compiler list every one it lacks. The generic places run the rules: here the
//! verifier (`verify`), the reference interpreter (`interp`), the batching context
//! (`batch::Batcher`), the derivative builder (`ad::Builder`), the cost model (`cost`) and the
//! sign analysis (`sign`); outside, `passes::bot`, `passes::simplify`, `passes::cleanup`,
//! `passes::fuse` and `export::stablehlo`. The ones here live beside the homes so that `core`
//! (the IR) depends on no rule and `ops` on no pass: the passes decide where and in which
//! order the rules run, and the rules of a form that holds blocks (a loop, a conditional) call
//! the generic places for their bodies. The random-program generator of tests (which types what it draws by the
//! verifier's rules) is here for the same reason. Generic walks over the atoms and blocks of
//! a statement go through `core::visit`.

pub mod ad;
pub mod batch;
pub mod build;
pub mod bulk;
pub mod cond;
pub mod cost;
pub mod custom;
pub mod derivative;
pub mod elementwise;
pub mod gather_scatter;
pub mod hlo;
pub mod interp;
pub mod layout;
pub mod loops;
pub mod monoid;
pub mod rewrite;
pub mod scalar_code;
pub mod sign;
pub mod sum_outer;
pub mod testgen;
pub mod verify;
pub mod while_loop;

use crate::core::ir::{ArrTy, Atom, BlockId, Expr, Program, Stmt, SumOuter, VarId};
use crate::core::kernel::Reduction;
use crate::core::value::Array;
use crate::prim::Prim;
use ad::{AdResult, Builder, Derivs, LinearItem};
use batch::Batcher;
use build::IndexPush;
use bulk::{Bulk, Ran};
use hlo::{Exported, StableHlo};
use interp::{Interp, Res};
use rewrite::{Expand, Expansion, Rewrite, Rule};

/// Every rule of one form of `Expr`, implemented in the form's home (the table above). The
/// rules every form states (type, evaluation, batching, JVP, transpose, cost, linearity,
/// fusion class, export, engine run) have no default, so a new form makes the compiler list them; the others
/// default to the conservative answer where a form has no such rule (no index pushing, no
/// identity, sign not known, no element rule: always materialised, no index params, no loop
/// body, each operand element computed once, not exported inside an index function).
pub(crate) trait Operation {
    /// The types of the results by the typing rules of [Smeding25] Fig 8, given the declared
    /// types of the variables it uses and of its blocks' params and results (`verify`).
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String>;

    /// The types of the results given the binders' declared types (`verify`): the typing
    /// rule (`types`), except for a form whose operands do not fix its results' types (an
    /// empty table, typed by its binder).
    fn types_given(&self, program: &Program, _declared: &[&ArrTy]) -> Result<Vec<ArrTy>, String> {
        self.types(program)
    }

    /// The values `stmt` (whose expression this is) binds, in the reference interpreter.
    fn eval(&self, interp: &mut Interp, stmt: &Stmt) -> Res<Vec<Array>>;

    /// Batches `stmt`, which depends on the index of the build being transformed
    /// ([Smeding25] Fig 9), binding the status of its binders in `batcher`.
    fn batch(&self, batcher: &mut Batcher, stmt: &Stmt);

    /// Emits `stmt` and the statements of its tangent ([Smeding25] Figs 14–15), recording
    /// the tangents of its binders.
    fn jvp(&self, builder: &mut Builder, stmt: &Stmt, tangents: &mut Derivs) -> AdResult;

    /// Adds what the linear `stmt` contributes to the cotangents of its linear operands,
    /// given the cotangents of its binders ([Smeding25] Fig 19).
    fn transpose(&self, builder: &mut Builder, stmt: &Stmt, cts: &mut Derivs) -> AdResult;

    /// The work of the operation (`cost`), `result_elems` being the number of elements it
    /// binds.
    fn cost(&self, program: &Program, result_elems: u64) -> u64;

    /// How its results depend on its operands (see `Linearity`).
    fn linearity(&self) -> Linearity;

    /// How the fuser treats it (see `FusionClass`).
    fn fusion_class(&self, program: &Program) -> FusionClass;

    /// Writes `stmt` (whose expression this is) as StableHLO operations: the values of its
    /// binders (`export::stablehlo`), or why it has no export.
    fn export(&self, cx: &mut dyn StableHlo, stmt: &Stmt) -> Exported;

    /// Runs it in the engine's bulk evaluator (`exec`), which `cx` is: its results bound to
    /// the statement's binders, or why it stopped (`bulk`).
    fn run(&self, cx: &mut dyn Bulk) -> Ran;

    /// Whether, on scalars, it is a scalar operation: one scalar computed from scalar operands
    /// (a copy, an elementwise application, a read of an outside array at scalar indices).
    /// Blocks of these are scalar code (`scalar_code`): index functions the fuser inlines and
    /// the exporter exports point by point over their grid, loop bodies that run on
    /// registers, statements a reversed loop recomputes instead of storing.
    fn scalar_op(&self) -> bool {
        false
    }

    /// Whether its blocks are a level of the nesting depth of array operations (NAO of
    /// [HuotShaikhha] §5.3, `cost::nesting_depth`); what is nested in them counts either way.
    /// A reduce or scan is a level like a loop: the reverse derivative of a scan recomputes
    /// primal values in its ⊗ scan, an overhead that grows with the nesting ([Paszke21] §4).
    fn nests(&self) -> bool {
        true
    }

    /// How many times, inlined into a kernel, it computes each element of its operands
    /// (Note [Materialise or recompute] in `passes::fuse`).
    fn recompute_factor(&self, _program: &Program) -> usize {
        1
    }

    /// The ranges of the index params of its blocks, in order: param `j` lies in
    /// `0..bounds[j]`; later params (a loop's carries) are not indices. The BOT's index
    /// pushing uses them (Note [Pushing index down]).
    fn index_param_bounds(&self, _program: &Program) -> Vec<usize> {
        Vec::new()
    }

    /// One [Smeding25] Fig 10 step (Note [Pushing index down] in `ops::build`): `index
    /// source index`, where this defines `source`, as the computation of the element read;
    /// `None` where no rule applies (the array is read as it is). `index` is not empty.
    fn push_index(&self, _cx: &mut IndexPush, _source: VarId, _index: &[Atom]) -> Option<Expr> {
        None
    }

    /// How, inlined into a kernel (fusion class `View` or `Pull`), it computes the element of
    /// its result at given coordinates; `None` for the forms that are always materialised.
    fn element(&self) -> Option<Element<'_>> {
        None
    }

    /// An exact identity ([HuotShaikhha] Fig 12, [Shaikhha23] Fig 8, bit for bit, NaN and
    /// signed zeros included): what the statement can be replaced by (an atom: its binder is
    /// replaced everywhere) and the rule that says so (`passes::simplify`).
    fn simplify(&self, _cx: &Rewrite) -> Option<(Rule, Expr)> {
        None
    }

    /// An exact rewrite of `stmt` into another expression or into several statements
    /// (if-conversion, the scatter rules, sums of sums; `passes::simplify`), counting in `cx`
    /// the rules that fire; `None` where none applies.
    fn expand(&self, _cx: &mut Expand, _stmt: &Stmt) -> Option<Expansion> {
        None
    }

    /// Itself without the results `live` marks as read by nothing, where the form can drop
    /// some (`passes::cleanup`): the new expression and which binders it keeps (it may change
    /// its blocks to match); `None` where it keeps them all.
    fn prune(&self, _program: &mut Program, _live: &[bool]) -> Option<(Expr, Vec<bool>)> {
        None
    }

    /// Whether every element of its result is a float with its sign bit clear (or a NaN),
    /// given that fact of its operands (`clear`); `false` when not known (Note [Sign-clear
    /// values] in `prim`, followed by `sign`).
    fn sign_clear(&self, _clear: &mut dyn FnMut(&Atom) -> bool) -> bool {
        false
    }

    /// Split for transposition, where it binds both primal and linear values (a loop carrying
    /// values and their tangents; `ad::split`): the primal statement that runs forward and
    /// the item transposed; `None` where the form has no such split.
    fn split_linear(&self, _program: &mut Program, _stmt: &Stmt) -> Option<(Stmt, LinearItem)> {
        None
    }

    /// Whether a user's linear map (`custom::check_linearization`) may pass tangents into its
    /// blocks: its results are its blocks' results (a `for`'s elements, an `if`'s branch), so
    /// they are linear where those are.
    fn linear_through_blocks(&self) -> bool {
        false
    }

    /// Its blocks that run once per step of a loop (the fuser schedules each as a block of
    /// its own).
    fn loop_bodies(&self) -> Vec<BlockId> {
        Vec::new()
    }
}

/// A statement of straight-line code that reads no array (an if-converted branch, a monoid's
/// operator, a scalar loop body): a copy or an elementwise application.
#[derive(Clone, Copy, Debug)]
pub(crate) enum StraightLine<'a> {
    Copy(Atom),
    Apply(Prim, &'a [Atom]),
}

/// `expr` as straight-line code, read off its element rule (its operand's element as it is,
/// or a primitive applied to its operands' elements); `None` for any other form.
pub(crate) fn straight_line(expr: &Expr) -> Option<StraightLine<'_>> {
    match operation(expr).element()? {
        Element::Moved {
            array,
            moved: Move::Same,
        } => Some(StraightLine::Copy(array)),
        Element::Apply(prim, operands) => Some(StraightLine::Apply(prim, operands)),
        _ => None,
    }
}

/// The atom `expr` copies, if it is a copy.
pub(crate) fn copy_of(expr: &Expr) -> Option<Atom> {
    match straight_line(expr)? {
        StraightLine::Copy(atom) => Some(atom),
        StraightLine::Apply(..) => None,
    }
}

/// How an operation inlined into a kernel computes the element of its result at given
/// coordinates from its operands' elements: the element rule of a view or an elementwise
/// primitive, which `passes::fuse` follows to pull elements through chains of them.
#[derive(Clone, Copy, Debug)]
pub enum Element<'a> {
    /// The element of `array` at the coordinates `moved` gives.
    Moved { array: Atom, moved: Move<'a> },
    /// The primitive applied to the operands' elements at the same coordinates (rank-0
    /// operands broadcast).
    Apply(Prim, &'a [Atom]),
    /// The first coordinate itself (`iota`).
    FirstCoordinate,
    /// `array[index…, coords…]`, zero where an index is out of range (`index`).
    Indexed { array: Atom, index: &'a [Atom] },
    /// `array[f(coords[..k])…, coords[k..]…]` for the index function `f` with `k` params,
    /// zero where an index is out of range (a gather).
    Gathered { array: Atom, index_fn: BlockId },
}

/// How a view moves the coordinates of its result to those of its operand.
#[derive(Clone, Copy, Debug)]
pub enum Move<'a> {
    /// Unchanged (a copy).
    Same,
    /// Without the first, of `count` copies (a broadcast).
    DropFirst { count: usize },
    /// The operand's axis `perm[a]` gets the result's coordinate `a` (`tr`).
    Permute(&'a [usize]),
    /// The same row-major offset in the operand's shape as in `shape`, the result's (`reshape`).
    Reshape(&'a [usize]),
}

/// The rules of an expression's form: the one `match` on `Expr` that lists every form.
pub(crate) fn operation(expr: &Expr) -> &dyn Operation {
    match expr {
        Expr::Atom(op) => op,
        Expr::Prim(op) => op,
        Expr::Build1(op) => op,
        Expr::Index(op) => op,
        Expr::SumOuter(op) => op,
        Expr::Gather(op) => op,
        Expr::Scatter(op) => op,
        Expr::Table(op) => op,
        Expr::Replicate(op) => op,
        Expr::Transpose(op) => op,
        Expr::Reshape(op) => op,
        Expr::Cond(op) => op,
        Expr::Iota(op) => op,
        Expr::Fold(op) => op,
        Expr::Scan(op) => op,
        Expr::While(op) => op,
        Expr::WhileReverse(op) => op,
        Expr::Monoid(op) => op,
        Expr::Derivative(op) => op,
        Expr::CustomVjp(op) => op,
        Expr::CustomJvp(op) => op,
        Expr::CustomLinear(op) => op,
    }
}

/// How an operation's results depend on its operands, for differentiation (docs/architecture.md:
/// linearity recorded per operation, never discovered at run time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Linearity {
    /// Linear, jointly, in the operands marked `true` (in `core::visit::expr_atoms` order) and
    /// independent of the values of the others (shapes, indices): its JVP is the operation
    /// itself on the tangents, and in a linear program linear variables appear only in the
    /// marked positions.
    Structural(Vec<bool>),
    /// An elementwise primitive: `Prim::linearity`.
    Prim(crate::prim::Linearity),
    /// An operation with blocks whose statements decide its linearity (`cond`, `fold`,
    /// `scan`, the monoid operations): differentiated by a rule of its own in its home. The
    /// operands marked `true` may be linear; the others (a condition) may not.
    Compound(Vec<bool>),
    /// Never differentiated: `build1` (AD runs on BOT output) and `jvp`/`vjp` statements
    /// (expanded before).
    Excluded,
}

/// The linearity of an operation (see `Linearity`).
pub fn linearity(expr: &Expr) -> Linearity {
    operation(expr).linearity()
}

/// One [Smeding25] Fig 10 step (Note [Pushing index down] in `ops::build`): `index source
/// index` where `source` is defined by `def`, as the computation of the element read; `None`
/// where no rule applies. `index` is not empty.
pub fn push_index(cx: &mut IndexPush, source: VarId, index: &[Atom], def: &Expr) -> Option<Expr> {
    operation(def).push_index(cx, source, index)
}

/// How the fuser (`passes::fuse`) treats a statement of the block it fuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FusionClass {
    /// Computes nothing per element (copies, `replicate`, `tr`, `reshape`, `iota`, `index`,
    /// a gather with a scalar index function): always inlined into its readers, which ask
    /// for its element at some coordinates.
    View,
    /// Computes its element from its operands' elements at the same coordinates (elementwise
    /// primitives): inlined into its readers unless that recomputes it.
    Pull,
    /// A reduction over the outer axis (`sumOuter`, a `reduce` over a selection operator;
    /// `reduction_of`): a kernel whose body is its producer.
    Reduce,
    /// A step of its own whose inputs and outputs are materialised (loops, `cond`, `scatter`,
    /// tables, gathers with blocks in their index function, the monoid operations).
    Bulk,
}

/// The fusion class of an operation (see `FusionClass`).
pub fn fusion_class(program: &Program, expr: &Expr) -> FusionClass {
    operation(expr).fusion_class(program)
}

/// The array a reduction kernel reduces over its outer axis, and how: `sumOuter`, or a
/// `reduce` of one non-empty array over a selection operator (`monoid::selection`; its
/// identity is then never used).
pub fn reduction_of(program: &Program, expr: &Expr) -> Option<(Atom, Reduction)> {
    match expr {
        Expr::SumOuter(SumOuter(array)) => Some((*array, Reduction::Sum)),
        Expr::Monoid(monoid) => monoid.reduction(program),
        _ => None,
    }
}

/// How many times an operation, inlined into a kernel, computes each element of its operands
/// (Note [Materialise or recompute] in `passes::fuse`): `count` through `replicate`, 2 through
/// `gather` (whose index function may read an element many times; an estimate) unless its
/// index function reads each element at most once (a reversal, a shift, a transposed stencil:
/// `gather_scatter::is_injective`), once otherwise.
pub fn recompute_factor(program: &Program, expr: &Expr) -> usize {
    operation(expr).recompute_factor(program)
}

/// The ranges of the index params of an operation's blocks, in order: param `j` of a block
/// of `expr` lies in `0..bounds[j]` (its later params, such as a loop's carries, are not
/// indices). The BOT's index pushing uses them (Note [Pushing index down]).
pub fn index_param_bounds(program: &Program, expr: &Expr) -> Vec<usize> {
    operation(expr).index_param_bounds(program)
}
