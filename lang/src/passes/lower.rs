//! Lowering: the typed program to core IR ([Smeding25] §3.2), inlining every function.
//!
//! The lowering is a partial evaluator over *static values* (`SVal`): a first-order value is
//! a list of core atoms (one per array of its flattened representation: a tuple, or a table
//! of tuples, is several arrays), while functions, partially applied built-ins and type
//! arguments exist only at compile time. Applying a closure lowers its body with the argument
//! bound, which inlines every call (docs/architecture.md: functions are inlined at call sites) and
//! specialises definitions to the concrete types and sizes of the call.
//!
//! Input: a checked, zonked `TExpr` (types may still mention the rigid variables of the
//! definitions being inlined; they are resolved through the instantiation in scope).
//! Output: a `Program` whose inputs are the top-level values the expression refers to.

use std::collections::HashMap;
use std::rc::Rc;

use crate::check::builtins::{AdOp, Builtin, Class, EffectOp, Extreme, NamedMonoid};
use crate::check::data::DataTy;
use crate::check::env::GlobalEnv;
use crate::check::infer::size_of_ix;
use crate::check::typed::{DefInfo, DefKey, TExpr, TKind, TPat, TStmt};
use crate::check::types::{BaseTy, Bound, LocalId, Rigid, Size, Ty};
use crate::core::ir::{
    ArrTy, Atom, BlockId, Build1, Cond, Elem, Expr, Fold, Index, Iota, Monoid, MonoidKind, PrimApp,
    Program, Replicate, Reshape, Scalar, Scan, Stmt, SumOuter, Table, VarId,
};
use crate::prim::signature::Interface;
use crate::prim::Prim;
use crate::syntax::ast::Lit;
use crate::syntax::Span;

use super::lower_compare::is_structured;

/// Why lowering failed: a user error (a size that is not static, a table of functions) or,
/// when `bug` is set, an inconsistency in dx itself (the checker let through what lowering
/// cannot handle), with the span concerned.
#[derive(Clone, Debug, PartialEq)]
pub struct LowerError {
    pub kind: LowerErrorKind,
    pub message: String,
    pub span: Span,
}

/// Whose a [`LowerError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LowerErrorKind {
    /// The program type-checks but dx cannot compile it (the user's to change).
    Unsupported,
    /// An internal inconsistency: a typed program the checker should not have given.
    Bug,
    /// A file the program reads when it is compiled cannot be read (Note [Files read when
    /// compiled]).
    File,
}

pub(super) type Result<T> = std::result::Result<T, LowerError>;

pub(super) fn error<T>(span: Span, message: impl Into<String>) -> Result<T> {
    Err(LowerError {
        kind: LowerErrorKind::Unsupported,
        message: message.into(),
        span,
    })
}

/// An internal inconsistency found while lowering.
pub(super) fn bug<T>(span: Span, message: impl Into<String>) -> Result<T> {
    Err(LowerError {
        kind: LowerErrorKind::Bug,
        message: message.into(),
        span,
    })
}

/// A value known at compile time.
#[derive(Clone, Debug)]
pub enum SVal {
    /// One array (a scalar is rank 0).
    Arr(Atom),
    Tuple(Vec<SVal>),
    Closure(Rc<Closure>),
    /// A built-in waiting for more arguments; `ty` is its full (concrete) type.
    Partial {
        builtin: Builtin,
        args: Vec<SVal>,
        ty: Ty,
        span: Span,
    },
    /// A type passed as an argument.
    Type(Ty),
    /// A linear function made by differentiation (a `vjp` pullback, a `linearize` tangent
    /// map): applying it copies its statements, which refer to primal values already computed.
    Linear(Rc<super::lower_ad::LinearFn>),
    /// Constructor `con` of `data` waiting for more fields.
    Con {
        data: DataTy,
        con: usize,
        args: Vec<SVal>,
    },
    /// A reference to element `path` of the value in an effect cell (Note [Effects as
    /// cells], `lower_effects.rs`), or to field `fields` of it (`ref.x`: the components of
    /// the cell's value chosen in turn; they commute with the element indices, as a value's
    /// fields are arrays over its tables' axes).
    Ref {
        cell: usize,
        path: Vec<Atom>,
        fields: Vec<usize>,
    },
    /// A monoid passed to `yield_accum` (`AddMonoid Float`, a user's named instance).
    Monoid(super::lower_effects::AccumMonoid),
    /// A table whose elements are functions (Dex's `for i j. \key. …`, a table of
    /// `(Key) -> Ray`): arrays cannot hold functions, so it stays the function of its index
    /// (`elem`, whose parameter is the `for`'s binder) over index set `ix`, and indexing it
    /// applies that function.
    FnTable {
        ix: Ty,
        elem: Rc<Closure>,
    },
}

#[derive(Clone, Debug)]
pub struct Closure {
    param: TPat,
    body: TExpr,
    pub(super) locals: HashMap<LocalId, SVal>,
    rigids: HashMap<Rigid, Ty>,
    /// The top-level definition whose body holds the lambda (Note [Errors in definitions]).
    def: Option<Rc<str>>,
    /// For a definition's function: the sizes its body computes, each with the local the use
    /// names it by (`TKind::Def::sizes`); given their values when the body has been lowered.
    sizes: Vec<(LocalId, LocalId)>,
}

impl Closure {
    /// The same function, whose application also gives the use's `sizes` their values.
    fn naming_sizes(&self, sizes: &[(LocalId, LocalId)]) -> Rc<Closure> {
        let mut named = self.clone();
        named.sizes.extend_from_slice(sizes);
        Rc::new(named)
    }
}

// Note [Errors in definitions]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A top-level definition's body comes from another source than the block being compiled (an
// earlier block, a library), so the span of an error found while lowering it means nothing
// in this block. Closures remember the definition whose body made them; an error in applying
// one from outside that definition is reported at the application, as "in `name`: …".

/// A top-level value available to the program being built.
pub struct GlobalValue<'a> {
    pub ty: &'a Ty,
    pub leaves: Vec<ArrTy>,
    /// Its arrays, when the value is known (a top-level value; not an exported function's
    /// parameter): sizes computed from it are constants (Note [Sizes known from values]).
    /// Made when asked (they may be large).
    pub arrays: Option<Box<dyn Fn() -> Vec<crate::core::value::Array> + 'a>>,
}

pub struct Lowerer<'a> {
    pub program: Program,
    pub(super) env: &'a GlobalEnv,
    globals: &'a dyn Fn(&str) -> Option<GlobalValue<'a>>,
    /// Inputs bound so far: the global's name and its input variables.
    pub inputs: Vec<(String, Vec<VarId>)>,
    pub(super) locals: HashMap<LocalId, SVal>,
    local_defs: HashMap<LocalId, DefInfo>,
    pub(super) rigids: HashMap<Rigid, Ty>,
    pub(super) block: BlockId,
    /// Interface methods being inlined (a method that calls itself at the same type would
    /// never end).
    pub(super) method_depth: usize,
    /// The top-level definition whose body is being lowered (Note [Errors in definitions]).
    in_def: Option<Rc<str>>,
    /// References and their values (`lower_effects.rs`).
    pub(super) effects: super::lower_effects::Effects,
    /// Where the block's own code called the top-level definition being lowered (for the
    /// position of a runtime error inside it).
    call_site: Option<Span>,
    /// The modes of the derivatives whose functions are being lowered, innermost last (a
    /// `custom_vjp` under a forward-mode one is refused, `lower_ad`).
    pub(super) ad_modes: Vec<crate::core::ir::AdMode>,
    /// The values of `Nat`s the block computes from what is known when it is compiled, by
    /// variable (Note [Sizes known from values]); `None` where one cannot be known.
    known_sizes: std::cell::RefCell<HashMap<VarId, Option<u64>>>,
    /// The sizes function bodies computed, kept after their calls for the types that name
    /// them (`keep_escaping_sizes`); `None` for one that two calls gave differently. Read
    /// where a local is not in scope (`static_size`).
    escaped: HashMap<LocalId, Option<Atom>>,
    /// The blocks around the one being lowered, outermost first: their variables are in
    /// scope in it.
    enclosing: Vec<BlockId>,
    /// The block each statement's binder was emitted into (`emit`).
    pub(super) bound_in: HashMap<VarId, BlockId>,
    /// The texts of string literals, by the variable of their table of bytes, and the table
    /// and length of each file read (Note [Files read when compiled], `lower_files.rs`).
    pub(super) texts: HashMap<VarId, Rc<str>>,
    pub(super) files: HashMap<std::path::PathBuf, (Atom, usize)>,
    /// The positions of the rows of table literals being lowered whose rows are ranges of the
    /// table's own index (`[coerce_table _ [a], coerce_table _ [b, c]]` of type
    /// `(i:Fin 2)=>(..i)=>Float`), innermost last: there the range's index is the row's.
    literal_rows: Vec<usize>,
}

const INDEX: Elem = Elem::I64;

pub fn base_elem(base: BaseTy) -> Elem {
    base.elem()
}

/// The arrays that represent a value of a concrete type (tuples flattened, tables of tuples
/// as tuples of tables). Fails for functions and non-static sizes.
pub fn leaf_types(ty: &Ty) -> std::result::Result<Vec<ArrTy>, String> {
    let mut out = Vec::new();
    leaf_types_into(ty, &mut Vec::new(), &mut out)?;
    Ok(out)
}

fn leaf_types_into(
    ty: &Ty,
    prefix: &mut Vec<usize>,
    out: &mut Vec<ArrTy>,
) -> std::result::Result<(), String> {
    match ty {
        Ty::Base(base) => out.push(ArrTy::new(prefix.clone(), base_elem(*base))),
        Ty::Fin(_) | Ty::Range { .. } => out.push(ArrTy::new(prefix.clone(), INDEX)),
        Ty::Tuple(items) => {
            for item in items {
                leaf_types_into(item, prefix, out)?;
            }
        }
        Ty::Table(ix, elem) => {
            prefix.push(ix_size(ix)?);
            leaf_types_into(elem, prefix, out)?;
            prefix.pop();
        }
        Ty::Fun { .. } | Ty::TypeArg(_) => {
            return Err("functions cannot be stored in tables or values".into())
        }
        Ty::Con(..) => {
            return Err(format!(
                "a {ty} lives only inside its handler: it cannot be stored in a table or value"
            ))
        }
        Ty::Var(_) | Ty::Rigid(..) | Ty::Row(_) | Ty::Value(_) => {
            return Err(format!("type {ty} is not concrete"))
        }
        // See Note [Data representation].
        Ty::Data(data) => leaf_types_into(&data.repr(), prefix, out)?,
    }
    Ok(())
}

/// The names of the arrays that represent a value named `name` of type `ty`, as `:stages`
/// shows them: a struct's by its fields (`p.x`), a tuple's by position (`t.0`), a type with
/// several constructors by its tag and its constructors' fields (`s.tag`, `s.Circle.0`).
pub fn leaf_names(ty: &Ty, name: &str) -> Vec<String> {
    scalar_leaves(ty, name)
        .into_iter()
        .map(|leaf| leaf.name)
        .collect()
}

/// A leaf of a value (as [`leaf_names`] names them) that is one scalar, not a table.
pub struct ScalarLeaf {
    pub name: String,
    /// The leaf's type when it is one scalar; `None` for a leaf inside a table and for the
    /// tag of a type with several constructors.
    pub scalar: Option<Ty>,
}

// Note [Tables of run-time size]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Inside a loop, a `Nat` computed from the loop's index or carry is known only when the block
// runs (Dex's molecular dynamics lists the atoms of each cell, `as_list tbl[cell]`, inside a
// `for_` over the cells). A `for` over `Fin n` of such an `n` has no static shape, but when
// its body performs no effect it need not be an array: it stays the function of its index
// (`SVal::FnTable`, as a table of functions does), and indexing it computes the element. So
// it can be indexed and looped over (`for_`, `fold` over `Fin n`: `run_time_count`), which
// is what such programs do with it; storing, returning or reducing it needs an array, and is
// an error that says so. A body with effects (a `get` of state, an `error`) keeps the error:
// computed at each index later, its effects would move.

/// Whether an expression performs no effect: no effect operation in it, and no function in
/// it whose type has an effect (the functions it calls).
fn performs_nothing(expr: &TExpr) -> bool {
    fn pure_row(row: &crate::check::types::EffRow) -> bool {
        row.effects.is_empty()
            && match row.tail.as_deref() {
                None => true,
                Some(Ty::Row(rest)) => pure_row(rest),
                // A row variable (`{|eff}` of a function passed in) may stand for any effect.
                Some(_) => false,
            }
    }
    let pure_ty = |ty: &Ty| {
        !ty.any(&mut |inner| match inner {
            Ty::Fun { effects, .. } => !pure_row(effects),
            _ => false,
        })
    };
    !matches!(expr.kind, TKind::Builtin(Builtin::Effect(_)))
        && pure_ty(&expr.ty)
        && expr.children().into_iter().all(performs_nothing)
}

/// Whether a function expression is lowered after its argument: a name (lowering it performs
/// nothing), or a definition or constructor applied to arguments that perform nothing (a
/// partial application, whose type the rest of the call may make concrete: `AsList(_, for
/// i:(Fin (count xs)). …)`).
fn lowers_nothing_first(func: &TExpr) -> bool {
    fn partial_def(expr: &TExpr) -> bool {
        match &expr.kind {
            TKind::Def { .. } | TKind::Con { .. } => true,
            TKind::App { func, arg } => partial_def(func) && performs_nothing(arg),
            _ => false,
        }
    }
    matches!(
        func.kind,
        TKind::Builtin(_) | TKind::Def { .. } | TKind::Local(_)
    ) || partial_def(func)
}

/// The leaves of a value of type `ty` named `name`, in the order of [`leaf_types`].
pub fn scalar_leaves(ty: &Ty, name: &str) -> Vec<ScalarLeaf> {
    let mut out = Vec::new();
    leaf_names_into(ty, name, false, &mut out);
    out
}

fn leaf_names_into(ty: &Ty, name: &str, in_table: bool, out: &mut Vec<ScalarLeaf>) {
    match ty {
        Ty::Tuple(items) => {
            for (position, item) in items.iter().enumerate() {
                leaf_names_into(item, &format!("{name}.{position}"), in_table, out);
            }
        }
        Ty::Table(_, elem) => leaf_names_into(elem, name, true, out),
        Ty::Data(data) => {
            let con_fields = |con: usize, prefix: &str, out: &mut Vec<ScalarLeaf>| {
                for (position, (field, field_ty)) in data.def.cons[con]
                    .fields
                    .iter()
                    .zip(data.fields(con))
                    .enumerate()
                {
                    let field_name = match &field.name {
                        Some(field_name) => format!("{prefix}.{field_name}"),
                        None => format!("{prefix}.{position}"),
                    };
                    leaf_names_into(&field_ty, &field_name, in_table, out);
                }
            };
            if !data.def.is_tagged() {
                con_fields(0, name, out);
                return;
            }
            out.push(ScalarLeaf {
                name: format!("{name}.tag"),
                scalar: None,
            });
            for (con, def) in data.def.cons.iter().enumerate() {
                con_fields(con, &format!("{name}.{}", def.name), out);
            }
        }
        _ => out.push(ScalarLeaf {
            name: name.to_string(),
            scalar: (!in_table).then(|| ty.clone()),
        }),
    }
}

/// The number of elements of a concrete index set.
pub fn ix_size(ix: &Ty) -> std::result::Result<usize, String> {
    let size = size_of_ix(ix).ok_or_else(|| format!("{ix} is not an index set"))?;
    size.as_const().map(|n| n as usize).ok_or_else(|| {
        format!(
            "the size of {ix} is not known when the block is compiled (it is computed): a \
                 `fold` or `for_` can loop over it, but no table can be indexed by it"
        )
    })
}

impl<'a> Lowerer<'a> {
    pub fn new(
        env: &'a GlobalEnv,
        globals: &'a dyn Fn(&str) -> Option<GlobalValue<'a>>,
    ) -> Lowerer<'a> {
        let program = Program::new();
        let block = program.main;
        Lowerer {
            program,
            env,
            globals,
            inputs: Vec::new(),
            locals: HashMap::new(),
            local_defs: HashMap::new(),
            rigids: HashMap::new(),
            block,
            method_depth: 0,
            in_def: None,
            effects: Default::default(),
            call_site: None,
            ad_modes: Vec::new(),
            literal_rows: Vec::new(),
            known_sizes: Default::default(),
            escaped: HashMap::new(),
            enclosing: Vec::new(),
            bound_in: HashMap::new(),
            texts: HashMap::new(),
            files: HashMap::new(),
        }
    }

    /// Lowers an expression as the program's result; returns the result's leaves. The
    /// program's results are these, then one count per `error` call of `runtime_errors`
    /// (Note [Runtime errors]).
    pub fn lower_main(&mut self, expr: &TExpr) -> Result<Vec<Atom>> {
        let value = self.lower(expr)?;
        let leaves = self.leaves(&value, expr.span)?;
        let main = self.program.main;
        let mut results = leaves.clone();
        for site in &self.effects.sites {
            results.extend(self.leaves(&self.effects.cell_value(site.cell), expr.span)?);
        }
        // Then the first text of each `error` whose text is computed (without its flag).
        for site in &self.effects.sites {
            if let (super::lower_effects::SiteKind::Error, Some(cell)) = (site.kind, site.text_cell)
            {
                let leaves = self.leaves(&self.effects.cell_value(cell), expr.span)?;
                results.extend(leaves.into_iter().skip(1));
            }
        }
        // Then the print log: its number of lines, the site of each line, and the texts of
        // the prints with computed texts (each cell once, in the order of the sites).
        if let Some((count, lines)) = self.effects.print_log() {
            for cell in [count, lines]
                .into_iter()
                .chain(super::lower_effects::print_buffers(&self.effects.sites))
            {
                results.extend(self.leaves(&self.effects.cell_value(cell), expr.span)?);
            }
        }
        self.program.blocks[main].results = results;
        Ok(leaves)
    }

    /// The `error` and `print` calls of the block, in the order they were met.
    pub fn runtime_sites(&self) -> Vec<super::lower_effects::Site> {
        self.effects.sites.clone()
    }

    // ----- emitting statements -----

    /// Inside a top-level definition the block's code called: its name and the call.
    pub(super) fn in_def_call_site(&self) -> Option<(Rc<str>, Span)> {
        Some((self.in_def.clone()?, self.call_site?))
    }

    pub(super) fn emit(
        &mut self,
        expr: Expr,
        tys: Vec<ArrTy>,
        hint: &str,
        span: Span,
    ) -> Vec<VarId> {
        let binders: Vec<VarId> = tys
            .into_iter()
            .map(|ty| self.program.new_var(ty, hint))
            .collect();
        for binder in &binders {
            self.program.source_map.insert(*binder, span);
            self.bound_in.insert(*binder, self.block);
        }
        self.program.blocks[self.block].stmts.push(Stmt {
            binders: binders.clone(),
            expr,
        });
        binders
    }

    pub(super) fn emit1(&mut self, expr: Expr, ty: ArrTy, hint: &str, span: Span) -> Atom {
        Atom::Var(self.emit(expr, vec![ty], hint, span)[0])
    }

    pub(super) fn atom_ty(&self, atom: &Atom) -> ArrTy {
        self.program.atom_ty(atom)
    }

    /// An elementwise primitive; constant operands are folded.
    pub(super) fn prim(&mut self, prim: Prim, args: Vec<Atom>, span: Span) -> Result<Atom> {
        if let Some(scalars) = args
            .iter()
            .map(|atom| match atom {
                Atom::Lit(scalar) => Some(*scalar),
                Atom::Var(_) => None,
            })
            .collect::<Option<Vec<_>>>()
        {
            let elems: Vec<Elem> = scalars.iter().map(|s| s.elem()).collect();
            if prim.result_elem(&elems).is_ok() {
                return Ok(Atom::Lit(prim.eval(&scalars)));
            }
        }
        // Operands share one shape; rank-0 literals among array operands are replicated.
        let shape = args
            .iter()
            .map(|atom| self.atom_ty(atom).shape)
            .max_by_key(|shape| shape.len())
            .unwrap_or_default();
        let mut operands = Vec::new();
        for atom in args {
            operands.push(self.broadcast(atom, &shape, span));
        }
        let elems: Vec<Elem> = operands
            .iter()
            .map(|atom| self.atom_ty(atom).elem)
            .collect();
        let elem = match prim.result_elem(&elems) {
            Ok(elem) => elem,
            Err(err) => return bug(span, err.to_string()),
        };
        Ok(self.emit1(
            Expr::from(PrimApp(prim, operands)),
            ArrTy::new(shape, elem),
            &prim.name(),
            span,
        ))
    }

    /// Replicates an atom up to `shape` (whose trailing axes are the atom's shape).
    pub(super) fn broadcast(&mut self, atom: Atom, shape: &[usize], span: Span) -> Atom {
        let mut ty = self.atom_ty(&atom);
        let mut res = atom;
        while ty.shape.len() < shape.len() {
            let count = shape[shape.len() - ty.shape.len() - 1];
            let mut new_shape = vec![count];
            new_shape.extend(&ty.shape);
            ty = ArrTy::new(new_shape, ty.elem);
            res = self.emit1(
                Expr::from(Replicate { count, array: res }),
                ty.clone(),
                "rep",
                span,
            );
        }
        res
    }

    pub(super) fn cast(&mut self, atom: Atom, elem: Elem, span: Span) -> Result<Atom> {
        if self.atom_ty(&atom).elem == elem {
            return Ok(atom);
        }
        self.prim(Prim::Cast(elem), vec![atom], span)
    }

    /// Runs `f` with a new block as the current block; returns the block.
    pub(super) fn in_block(
        &mut self,
        params: Vec<VarId>,
        f: impl FnOnce(&mut Self) -> Result<Vec<Atom>>,
    ) -> Result<BlockId> {
        let block = self.program.new_block();
        self.program.blocks[block].params = params;
        let outer = std::mem::replace(&mut self.block, block);
        self.enclosing.push(outer);
        let res = f(self);
        self.enclosing.pop();
        self.block = outer;
        self.program.blocks[block].results = res?;
        Ok(block)
    }

    /// A table of type `ty` built element by element: `element` lowers one element, given
    /// the flat index, into its leaves (a `build1` the BOT vectorises).
    pub(super) fn build_table(
        &mut self,
        ty: &Ty,
        hint: &str,
        span: Span,
        element: impl FnOnce(&mut Self, Atom) -> Result<Vec<Atom>>,
    ) -> Result<SVal> {
        let Ty::Table(ix, _) = ty else {
            return bug(span, "building a table of a non-table type");
        };
        let size = self.ix_size(ix, span)?;
        let result_tys = self.leaf_types(ty, span)?;
        let index = self.program.new_var(ArrTy::scalar(INDEX), "i");
        let body = self.in_block(vec![index], |cx| element(cx, Atom::Var(index)))?;
        let binders = self.emit(Expr::from(Build1 { size, body }), result_tys, hint, span);
        Ok(self.assemble(ty, binders.into_iter().map(Atom::Var).collect()))
    }

    // ----- types -----

    /// Resolves rigid variables and sizes of a type in the current instantiation.
    pub fn concrete(&self, ty: &Ty, span: Span) -> Result<Ty> {
        Ok(match ty {
            Ty::Rigid(rigid, name) => match self.rigids.get(rigid) {
                Some(ty) => ty.clone(),
                None => return bug(span, format!("type variable {name} is not instantiated")),
            },
            Ty::Fin(size) => Ty::Fin(self.concrete_size(size, span)?),
            // A row is not data: its regions are compile-time names; a value a type names
            // is read where the program uses it (`TKind::GivenValue`).
            Ty::Base(_) | Ty::Var(_) | Ty::Row(_) | Ty::Value(_) => ty.clone(),
            Ty::Table(ix, elem) => Ty::table(self.concrete(ix, span)?, self.concrete(elem, span)?),
            Ty::Tuple(items) => Ty::Tuple(
                items
                    .iter()
                    .map(|item| self.concrete(item, span))
                    .collect::<Result<_>>()?,
            ),
            Ty::Fun {
                param,
                binder,
                result,
                effects,
            } => Ty::Fun {
                param: Box::new(self.concrete(param, span)?),
                binder: *binder,
                result: Box::new(self.concrete(result, span)?),
                effects: effects.clone(),
            },
            Ty::TypeArg(inner) => Ty::TypeArg(Box::new(self.concrete(inner, span)?)),
            Ty::Con(con, args) => Ty::Con(
                *con,
                args.iter()
                    .map(|arg| self.concrete(arg, span))
                    .collect::<Result<_>>()?,
            ),
            Ty::Data(data) => Ty::Data(DataTy {
                def: data.def.clone(),
                args: data
                    .args
                    .iter()
                    .map(|arg| self.concrete(arg, span))
                    .collect::<Result<_>>()?,
            }),
            Ty::Range { kind, of, bound } => Ty::Range {
                kind: *kind,
                of: Box::new(self.concrete(of, span)?),
                bound: bound.clone(),
            },
        })
    }

    /// The size a `Nat` parameter, or field `path` of a parameter, holds: a constant by now
    /// (a literal or top-level value passed down, Note [Static leaves of top-level values]).
    fn static_size(&self, local: LocalId, path: &[usize], name: &str, span: Span) -> Result<Size> {
        let value = self.local_value(local);
        let mut value = value.as_ref();
        for index in path {
            value = match value {
                Some(SVal::Tuple(items)) => items.get(*index),
                _ => None,
            };
        }
        match value {
            Some(SVal::Arr(Atom::Lit(scalar))) if scalar_as_size(*scalar).is_some() => {
                Ok(Size::Const(scalar_as_size(*scalar).unwrap_or(0)))
            }
            Some(SVal::Arr(Atom::Var(var))) => match self.known_size(*var) {
                Some(n) => Ok(Size::Const(n)),
                // A `Nat` computed by the block from what it computes: a `fold` may loop over
                // it (`run_time_count`); anything that needs the size itself says it is not
                // known.
                None if path.is_empty() => Ok(Size::Local(local, name.to_string())),
                None => error(
                    span,
                    format!("the size `{name}` is not known when the block is compiled (it depends on computed data)"),
                ),
            },
            None if self.escaped.get(&local) == Some(&None) => error(
                span,
                format!(
                    "the size `{name}` is computed by a function called more than once here, \
                     and the calls give different sizes: the results' types cannot tell them \
                     apart (compute each in a block of its own)"
                ),
            ),
            _ => error(
                span,
                format!("the size `{name}` is not known when the block is compiled (it depends on computed data)"),
            ),
        }
    }

    // Note [Sizes known from values]
    // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    // Shapes are static: a table's size is a constant of the lowered program. A `Nat` the
    // block computes (`k = count_above samples 2`, a grid's width `f_to_n (box / cutoff)`)
    // is one all the same when it is computed, in the main block, from literals and top-level
    // values alone: every top-level value is known before a later block is compiled (as its
    // `Nat` leaves are, Note [Static leaves of top-level values]). Such a size is found by
    // running the statements it needs (the program so far, its results the `Nat`s of the main
    // block not known yet, dead code removed) on the reference interpreter: one run finds a
    // function's several sizes (an image's width and height). A `Nat` computed inside
    // a loop body, or from an exported function's parameters, stays unknown: a `fold` may
    // loop over it (`run_time_count`), and a table over it is an error. This is where a JAX
    // program computes data-dependent shapes: in Python, outside `jit`, on concrete arrays.
    //
    // A function's result type may name a size its body computes (`as_list` of a bounded
    // list gives `List a` of the length its body counts): the checker's type names the
    // body's local, so the local's value is kept after the call (`keep_escaping_sizes`) for
    // the types that name it. Each use of a definition names such a size by a local of its
    // own (Note [Sizes a call computes] in `check/infer.rs`, `name_computed_sizes`), so two
    // calls giving different values have different types. A size that still cannot be told
    // (a lambda's, computed by two calls) is an error where it is needed, and the session
    // refuses to show a value whose type has a size it cannot tell.

    /// Keeps the `Nat`s that a function's body computed after the call: the result's type may
    /// name them as sizes (`as_list` of a top-level value gives `List a` of the length its
    /// body computes), known when asked (Note [Sizes known from values]). A size two calls
    /// give from different values is forgotten: the types of both results name one local,
    /// which cannot stand for both. One whose statement is out of scope here (an earlier
    /// attempt at a loop's body, another loop) is replaced by the new one.
    fn keep_escaping_sizes(&mut self, inner: HashMap<LocalId, SVal>) {
        for (local, value) in inner {
            if self.locals.contains_key(&local) {
                continue;
            }
            let Some(atom) = self.escaping_size(&value) else {
                continue;
            };
            match self.escaped.get(&local).copied() {
                Some(Some(earlier)) if !self.count_in_scope(earlier) => {
                    self.escaped.insert(local, Some(atom));
                }
                Some(Some(earlier)) if earlier != atom && !self.same_count(earlier, atom) => {
                    self.escaped.insert(local, None);
                }
                Some(_) => {}
                None => {
                    self.escaped.insert(local, Some(atom));
                }
            }
        }
    }

    /// The atom of a size a body computed that can be read after the call: a constant, or a
    /// count in scope.
    fn escaping_size(&self, value: &SVal) -> Option<Atom> {
        match value {
            SVal::Arr(atom @ Atom::Lit(scalar)) if scalar_as_size(*scalar).is_some() => Some(*atom),
            SVal::Arr(atom @ Atom::Var(_)) if self.count_in_scope(*atom) => Some(*atom),
            _ => None,
        }
    }

    /// Gives the sizes a use of a definition names the values its body computed for this
    /// call (Note [Sizes a call computes] in `check/infer.rs`): `(the use's local, the
    /// body's, the body's value if the body bound it)`; a size the body named after a call of
    /// its own was given its value there.
    fn name_computed_sizes(&mut self, values: Vec<(LocalId, LocalId, Option<SVal>)>) {
        for (site, body, value) in values {
            let atom = match value {
                Some(value) => self.escaping_size(&value),
                None => self.escaped.get(&body).copied().flatten(),
            };
            if let Some(atom) = atom {
                self.escaped.insert(site, Some(atom));
            }
        }
    }

    /// Whether `var` holds one whole number (a count).
    fn is_count(&self, var: VarId) -> bool {
        let ty = self.program.var_ty(var);
        ty.shape.is_empty() && matches!(ty.elem, Elem::U32 | Elem::I32 | Elem::I64)
    }

    /// Whether a count can be read in the block being lowered: a literal, an input, or a
    /// variable of that block or of one around it (Note [Tables of run-time size]).
    fn count_in_scope(&self, atom: Atom) -> bool {
        let Atom::Var(var) = atom else {
            return true;
        };
        let bound_in_scope = |block: &BlockId| {
            self.bound_in.get(&var) == Some(block)
                || self.program.blocks[*block].params.contains(&var)
        };
        self.is_count(var)
            && (self.program.inputs.contains(&var)
                || std::iter::once(&self.block)
                    .chain(&self.enclosing)
                    .any(bound_in_scope))
    }

    /// The value a local stands for: in scope, or kept from a function's body
    /// (`keep_escaping_sizes`) where its statement is in scope.
    pub(super) fn local_value(&self, local: LocalId) -> Option<SVal> {
        match (self.locals.get(&local), self.escaped.get(&local)) {
            (Some(value), _) => Some(value.clone()),
            (None, Some(Some(atom))) if self.count_in_scope(*atom) => Some(SVal::Arr(*atom)),
            _ => None,
        }
    }

    /// Whether two counts of the main block are known to be equal.
    fn same_count(&self, a: Atom, b: Atom) -> bool {
        let value = |atom: Atom| match atom {
            Atom::Lit(scalar) => scalar_as_size(scalar),
            Atom::Var(var) => self.known_size(var),
        };
        matches!((value(a), value(b)), (Some(x), Some(y)) if x == y)
    }

    /// Whether `var` is a count of the main block (or an input): one whose value may be known
    /// when the block is compiled (`known_size`).
    fn main_count(&self, var: VarId) -> bool {
        self.is_count(var)
            && (self.program.inputs.contains(&var)
                || self.bound_in.get(&var) == Some(&self.program.main))
    }

    /// The value of the `Nat` variable `var` of the main block when what it is computed from
    /// is known now: literals and top-level values (Note [Sizes known from values]).
    fn known_size(&self, var: VarId) -> Option<u64> {
        if let Some(known) = self.known_sizes.borrow().get(&var) {
            return *known;
        }
        if !self.main_count(var) {
            self.known_sizes.borrow_mut().insert(var, None);
            return None;
        }
        // Every `Nat` of the main block not asked about yet is found in the same run (a
        // function body that computes one size computes several: an image's width and
        // height), unless one of them cannot be computed; then `var` alone.
        let is_nat = |other: VarId| {
            let ty = self.program.var_ty(other);
            ty.shape.is_empty() && ty.elem == Elem::U32
        };
        let mut asked: Vec<VarId> = self.program.blocks[self.program.main]
            .stmts
            .iter()
            .flat_map(|stmt| stmt.binders.iter().copied())
            .filter(|&other| other != var && is_nat(other))
            .filter(|other| !self.known_sizes.borrow().contains_key(other))
            .collect();
        asked.insert(0, var);
        let (asked, values) = match self.evaluate_main_counts(&asked) {
            Some(values) => (asked, values),
            None => (
                vec![var],
                self.evaluate_main_counts(&[var]).unwrap_or(vec![None]),
            ),
        };
        let mut known_sizes = self.known_sizes.borrow_mut();
        known_sizes.extend(asked.into_iter().zip(values));
        known_sizes.get(&var).copied().flatten()
    }

    /// The values of counts of the main block, found by running the statements they need
    /// (`None` for one that is not a size); `None` when the run fails.
    fn evaluate_main_counts(&self, vars: &[VarId]) -> Option<Vec<Option<u64>>> {
        let main = self.program.main;
        let mut inputs = Vec::new();
        for (name, _) in &self.inputs {
            inputs.extend(((self.globals)(name)?.arrays?)());
        }
        let mut program = self.program.clone();
        program.blocks[main].results = vars.iter().map(|&var| Atom::Var(var)).collect();
        super::cleanup::run(&mut program);
        let results = crate::ops::interp::run(&program, &inputs, &Default::default()).ok()?;
        Some(
            results
                .iter()
                .map(|result| result.as_scalar().and_then(scalar_as_size))
                .collect(),
        )
    }

    /// Evaluates a size: `Nat` parameters must be bound to constants by now.
    fn concrete_size(&self, size: &Size, span: Span) -> Result<Size> {
        let res = match size {
            Size::Const(_) => size.clone(),
            Size::Local(local, name) => self.static_size(*local, &[], name, span)?,
            Size::Field(local, field) => {
                self.static_size(*local, &field.positions, &field.written, span)?
            }
            Size::Of(ty) => Size::Of(Box::new(self.concrete(ty, span)?)),
            Size::Add(..) | Size::Sub(..) | Size::Mul(..) | Size::Div(..) => {
                match size.arithmetic() {
                    Some((a, b, make)) => make(
                        Box::new(self.concrete_size(a, span)?),
                        Box::new(self.concrete_size(b, span)?),
                    ),
                    None => size.clone(),
                }
            }
        };
        Ok(res.normalise())
    }

    pub(super) fn leaf_types(&self, ty: &Ty, span: Span) -> Result<Vec<ArrTy>> {
        let ty = self.concrete(ty, span)?;
        leaf_types(&ty).map_err(|message| LowerError {
            message,
            span,
            kind: LowerErrorKind::Unsupported,
        })
    }

    pub(super) fn ix_size(&self, ix: &Ty, span: Span) -> Result<usize> {
        let ix = self.concrete(ix, span)?;
        ix_size(&ix).map_err(|message| LowerError {
            message,
            span,
            kind: LowerErrorKind::Unsupported,
        })
    }

    /// The leaves of a first-order value.
    pub(super) fn leaves(&self, value: &SVal, span: Span) -> Result<Vec<Atom>> {
        let mut out = Vec::new();
        self.leaves_into(value, span, &mut out)?;
        Ok(out)
    }

    fn leaves_into(&self, value: &SVal, span: Span, out: &mut Vec<Atom>) -> Result<()> {
        match value {
            SVal::Arr(atom) => out.push(*atom),
            SVal::Tuple(items) => {
                for item in items {
                    self.leaves_into(item, span, out)?;
                }
            }
            SVal::Closure(_) | SVal::Partial { .. } => {
                return error(
                    span,
                    "a function cannot be stored in a table, a branch or a loop carry",
                )
            }
            SVal::Type(_) => {
                return error(
                    span,
                    "a type cannot be stored in a table, a branch or a loop carry",
                )
            }
            SVal::FnTable { ix, .. } if matches!(ix, Ty::Fin(Size::Local(..))) => {
                return error(
                    span,
                    format!(
                        "a table over {ix}, whose size is known only when the block runs, can \
                         be indexed and looped over (`for_`, `fold`), but not stored, returned \
                         or reduced"
                    ),
                )
            }
            SVal::Linear(_) | SVal::Con { .. } | SVal::FnTable { .. } => {
                return error(
                    span,
                    "a function cannot be stored in a table, a branch or a loop carry",
                )
            }
            SVal::Ref { .. } | SVal::Monoid(_) => {
                return error(
                    span,
                    "a reference or a monoid cannot be stored in a table, a branch or a loop \
                     carry: use it inside its handler",
                )
            }
        }
        Ok(())
    }

    /// Rebuilds a value of type `ty` from atoms.
    pub(super) fn assemble(&self, ty: &Ty, atoms: Vec<Atom>) -> SVal {
        fn go(ty: &Ty, atoms: &mut std::vec::IntoIter<Atom>) -> SVal {
            match ty {
                Ty::Tuple(items) => SVal::Tuple(items.iter().map(|item| go(item, atoms)).collect()),
                Ty::Table(_, elem) => go(elem, atoms),
                Ty::Data(data) => go(&data.repr(), atoms),
                _ => SVal::Arr(atoms.next().expect("one atom per leaf")),
            }
        }
        go(ty, &mut atoms.into_iter())
    }

    // ----- indices -----

    /// An index value of index set `ix` as a flat `I64` ordinal (pairs are row-major).
    pub(super) fn flat_index(&mut self, value: &SVal, ix: &Ty, span: Span) -> Result<Atom> {
        match (value, ix) {
            (SVal::Tuple(items), Ty::Tuple(sets)) if items.len() == sets.len() => {
                let mut acc = Atom::Lit(Scalar::I64(0));
                for (item, set) in items.iter().zip(sets) {
                    let size = self.ix_size(set, span)? as i64;
                    let inner = self.flat_index(item, set, span)?;
                    let scaled =
                        self.prim(Prim::Mul, vec![acc, Atom::Lit(Scalar::I64(size))], span)?;
                    acc = self.prim(Prim::Add, vec![scaled, inner], span)?;
                }
                Ok(acc)
            }
            // A table index (`n=>a`) is ordered as the tuple of its elements.
            (_, Ty::Table(set, elem)) => {
                let size = self.ix_size(set, span)?;
                let items = (0..size)
                    .map(|k| self.index_value(value, Atom::Lit(Scalar::I64(k as i64)), span))
                    .collect::<Result<Vec<_>>>()?;
                let sets = Ty::Tuple(vec![(**elem).clone(); size]);
                self.flat_index(&SVal::Tuple(items), &sets, span)
            }
            // A user type's instance of `Ix` gives the ordinal; an enumeration's is its tag.
            (_, Ty::Data(data)) => {
                let ordinal =
                    self.call_user_method(Class::Ix, "ordinal", ix, vec![value.clone()], span)?;
                match ordinal {
                    Some(SVal::Arr(ordinal)) => self.cast(ordinal, INDEX, span),
                    None if data.def.is_enumeration() => match self.leaves(value, span)?[..] {
                        [tag] => self.cast(tag, INDEX, span),
                        _ => Ok(Atom::Lit(Scalar::I64(0))),
                    },
                    _ => bug(span, format!("no ordinal for index set {ix}")),
                }
            }
            (SVal::Arr(atom), _) => self.cast(*atom, INDEX, span),
            _ => bug(span, "malformed index value"),
        }
    }

    /// `coerce_table m xs`: a table is stored with one axis per index set, pairs of index sets
    /// flattened in row-major order, so re-indexing by an index set of the same size keeps
    /// every leaf as it is.
    fn coerce_table(&mut self, ty: &Ty, args: &[SVal], result_ty: &Ty, span: Span) -> Result<SVal> {
        let (SVal::Type(to), Ty::Fun { result, .. }) = (&args[0], ty) else {
            return bug(span, "coerce_table of a non-type");
        };
        let Ty::Fun { param, .. } = result.as_ref() else {
            return bug(span, "coerce_table type");
        };
        let Ty::Table(from, _) = param.as_ref() else {
            return bug(span, "coerce_table of a non-table");
        };
        let (to_size, from_size) = (self.ix_size(to, span)?, self.ix_size(from, span)?);
        if let Some(rows) = self.literal_row_size(to, span)? {
            // A row of a triangular literal: stored padded to the range's index set.
            if rows == from_size {
                let leaves = self.leaves(&args[1], span)?;
                return self.pad_rows(leaves, from_size, result_ty, span);
            }
            let (to, from) = (self.concrete(to, span)?, self.concrete(from, span)?);
            return error(
                span,
                format!(
                    "`coerce_table` keeps the elements: the table has {from_size} (indexed by \
                     {from}), but this row's {to} has {rows}"
                ),
            );
        }
        if to_size != from_size {
            let (to, from) = (self.concrete(to, span)?, self.concrete(from, span)?);
            return error(
                span,
                format!(
                    "`coerce_table` keeps the elements: the table has {from_size} (indexed by \
                     {from}), but {to} has {to_size}"
                ),
            );
        }
        let leaves = self.leaves(&args[1], span)?;
        Ok(self.assemble(result_ty, leaves))
    }

    /// The size of a range of the index of the table literal's row being lowered (known then:
    /// the row's position is); `None` for any other index set.
    fn literal_row_size(&mut self, ix: &Ty, span: Span) -> Result<Option<usize>> {
        let ix = self.concrete(ix, span)?;
        let Ty::Range {
            kind,
            of,
            bound: Bound::Outer(depth, _),
        } = &ix
        else {
            return Ok(None);
        };
        let Some(&row) = self
            .literal_rows
            .len()
            .checked_sub(1 + *depth as usize)
            .and_then(|at| self.literal_rows.get(at))
        else {
            return Ok(None);
        };
        let n = self.ix_size(of, span)?;
        Ok(Some(match kind {
            crate::syntax::ast::RangeKind::UpTo => row + 1,
            crate::syntax::ast::RangeKind::Before => row,
            crate::syntax::ast::RangeKind::From => n - row,
            crate::syntax::ast::RangeKind::After => n - row - 1,
        }))
    }

    /// The table of type `ty` whose first `rows` rows are those of `leaves`' table, and the
    /// rest (up to the size of `ty`'s index set) zeros.
    fn pad_rows(&mut self, leaves: Vec<Atom>, rows: usize, ty: &Ty, span: Span) -> Result<SVal> {
        self.build_table(ty, "row", span, |cx, k| {
            let inside = cx.prim(Prim::Lt, vec![k, super::lower_show::index_lit(rows)], span)?;
            let mut out = Vec::new();
            for leaf in leaves {
                let leaf_ty = cx.atom_ty(&leaf);
                let zero = cx.broadcast(
                    Atom::Lit(Scalar::zero(leaf_ty.elem)),
                    &leaf_ty.shape[1..],
                    span,
                );
                out.push(match cx.element(leaf, k, rows, span)? {
                    Some(value) => {
                        let inside = cx.broadcast(inside, &leaf_ty.shape[1..], span);
                        cx.prim(Prim::Select, vec![inside, value, zero], span)?
                    }
                    None => zero,
                });
            }
            Ok(out)
        })
    }

    /// The table of type `ty` whose elements are `items` (a literal `[a, b]`, a table index).
    fn table_of(&mut self, items: Vec<SVal>, ty: &Ty, span: Span) -> Result<SVal> {
        let result_tys = self.leaf_types(ty, span)?;
        let mut columns: Vec<Vec<Atom>> = vec![Vec::new(); result_tys.len()];
        for item in &items {
            for (column, leaf) in columns.iter_mut().zip(self.leaves(item, span)?) {
                column.push(leaf);
            }
        }
        let mut atoms = Vec::new();
        for (column, leaf_ty) in columns.into_iter().zip(result_tys) {
            atoms.push(self.emit1(Expr::from(Table(column)), leaf_ty, "table", span));
        }
        Ok(self.assemble(ty, atoms))
    }

    /// The function of `param` that lowers `body` where it is applied, in the scope here.
    fn closure(&self, param: TPat, body: &TExpr) -> Rc<Closure> {
        Rc::new(Closure {
            param,
            body: body.clone(),
            locals: self.locals.clone(),
            rigids: self.rigids.clone(),
            def: self.in_def.clone(),
            sizes: Vec::new(),
        })
    }

    /// The index value of index set `ix` whose flat ordinal is `flat`.
    pub(super) fn unflatten_index(&mut self, flat: Atom, ix: &Ty, span: Span) -> Result<SVal> {
        match ix {
            Ty::Table(set, elem) => {
                let sets = Ty::Tuple(vec![(**elem).clone(); self.ix_size(set, span)?]);
                match self.unflatten_index(flat, &sets, span)? {
                    SVal::Tuple(items) => self.table_of(items, ix, span),
                    _ => bug(span, "a table index of no elements"),
                }
            }
            Ty::Tuple(sets) => {
                let sizes = sets
                    .iter()
                    .map(|set| self.ix_size(set, span))
                    .collect::<Result<Vec<_>>>()?;
                let mut items = Vec::new();
                let mut stride: usize = sizes.iter().product();
                for (set, size) in sets.iter().zip(&sizes) {
                    stride /= size.max(&1);
                    let quotient = self.prim(
                        Prim::IDiv,
                        vec![flat, Atom::Lit(Scalar::I64(stride as i64))],
                        span,
                    )?;
                    let component = self.prim(
                        Prim::Mod,
                        vec![quotient, Atom::Lit(Scalar::I64(*size as i64))],
                        span,
                    )?;
                    items.push(self.unflatten_index(component, set, span)?);
                }
                Ok(SVal::Tuple(items))
            }
            Ty::Data(data) => {
                let ordinal = self.cast(flat, Elem::U32, span)?;
                let value = self.call_user_method(
                    Class::Ix,
                    "unsafe_from_ordinal",
                    ix,
                    vec![SVal::Arr(ordinal)],
                    span,
                )?;
                match value {
                    Some(value) => Ok(value),
                    // An enumeration's value is its tag (Note [Data representation]).
                    None if data.def.is_enumeration() => {
                        let tag = match data.def.is_tagged() {
                            true => vec![ordinal],
                            false => Vec::new(),
                        };
                        Ok(self.assemble(ix, tag))
                    }
                    None => bug(span, format!("no index of set {ix}")),
                }
            }
            Ty::Base(crate::check::types::BaseTy::Bool) => Ok(SVal::Arr(self.prim(
                Prim::Ne,
                vec![flat, Atom::Lit(Scalar::I64(0))],
                span,
            )?)),
            _ => Ok(SVal::Arr(flat)),
        }
    }

    // ----- expressions -----

    pub fn lower(&mut self, expr: &TExpr) -> Result<SVal> {
        let span = expr.span;
        match &expr.kind {
            TKind::Local(local) => match self.locals.get(local) {
                Some(value) => Ok(value.clone()),
                None => bug(span, "unbound local"),
            },
            TKind::Global(name) => self.global(name, span),
            TKind::GivenValue(rigid, name) => self.given_value(*rigid, name, &expr.ty, span),
            TKind::Def {
                def,
                inst,
                name,
                sizes,
            } => {
                let info = match def {
                    DefKey::Top(key) => self.env.def_by_key(key).cloned(),
                    DefKey::Local(id) => self.local_defs.get(id).cloned(),
                };
                let Some(info) = info else {
                    return bug(span, "unknown definition");
                };
                let mut rigids = self.rigids.clone();
                for (rigid, ty) in info.vars.iter().zip(inst) {
                    rigids.insert(*rigid, self.concrete(ty, span)?);
                }
                let outer = std::mem::replace(&mut self.rigids, rigids);
                let outer_def = match def {
                    DefKey::Top(_) => self.in_def.replace(name.as_str().into()),
                    DefKey::Local(_) => self.in_def.clone(),
                };
                let res = self.lower(&info.body);
                self.rigids = outer;
                self.in_def = outer_def;
                match res? {
                    SVal::Closure(closure) if !sizes.is_empty() => {
                        Ok(SVal::Closure(closure.naming_sizes(sizes)))
                    }
                    // A definition without parameters computed its sizes here.
                    value => {
                        let values = sizes
                            .iter()
                            .map(|(site, body)| (*site, *body, self.locals.get(body).cloned()))
                            .collect();
                        self.name_computed_sizes(values);
                        Ok(value)
                    }
                }
            }
            TKind::Builtin(builtin) => {
                let ty = self.concrete(&expr.ty, span)?;
                if builtin_arity(*builtin) == 0 {
                    self.lower_builtin(*builtin, Vec::new(), &ty, span)
                } else {
                    Ok(SVal::Partial {
                        builtin: *builtin,
                        args: Vec::new(),
                        ty,
                        span,
                    })
                }
            }
            TKind::Lit(Lit::Str(text)) => {
                let ty = self.concrete(&expr.ty, span)?;
                self.string(text, &ty, span)
            }
            TKind::Lit(lit) => {
                let ty = self.concrete(&expr.ty, span)?;
                Ok(SVal::Arr(Atom::Lit(literal(lit, &ty, span)?)))
            }
            TKind::Lam { param, body } => Ok(SVal::Closure(self.closure(param.clone(), body))),
            TKind::For { binder, body } => {
                let ty = self.concrete(&expr.ty, span)?;
                let Ty::Table(ix, elem) = &ty else {
                    return bug(span, "for without a table type");
                };
                let ix = (**ix).clone();
                let count = self.run_time_count(&ix, span);
                // `for_ i:(Fin n).` over a `Nat` the block computes: a loop of effects only.
                if let (Some(count), Ty::Tuple(units)) = (count, &**elem) {
                    if units.is_empty() {
                        let unit = Ty::Tuple(Vec::new());
                        self.fold_while(count, Vec::new(), &unit, &ix, span, |cx, index, _| {
                            cx.locals.insert(*binder, index);
                            cx.lower(body)?;
                            Ok(SVal::Tuple(Vec::new()))
                        })?;
                        return Ok(self.assemble(&ty, Vec::new()));
                    }
                }
                // A table of functions, or a pure table over a size known only when the block
                // runs (Note [Tables of run-time size]): the function of its index.
                let run_time = count.is_some() && performs_nothing(body);
                if elem.contains_fun() || run_time {
                    let elem = self.closure(TPat::Var(*binder, String::new()), body);
                    return Ok(SVal::FnTable { ix, elem });
                }
                // Over a range, the positions past its size are zero (Note [Ranges]).
                let valid = self.range_size(&ix, span)?;
                let size = self.ix_size(&ix, span)?;
                // A parallel `build1`, or a `scan` when the body writes state.
                let out =
                    self.effect_loop(size, Vec::new(), true, "for", span, |cx, flat, _| {
                        let index = cx.unflatten_index(flat, &ix, span)?;
                        cx.locals.insert(*binder, index);
                        let value = cx.lower(body)?;
                        let leaves = cx.leaves(&value, body.span)?;
                        let ys = match valid {
                            Some(size) => cx.zero_beyond(leaves, flat, size, span)?,
                            None => leaves,
                        };
                        Ok((Vec::new(), ys))
                    })?;
                Ok(self.assemble(&ty, out.ys))
            }
            TKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let cond_value = self.lower(cond)?;
                let SVal::Arr(cond_atom) = cond_value else {
                    return bug(span, "condition is not a scalar");
                };
                let ty = self.concrete(&expr.ty, span)?;
                let result_tys = self.leaf_types(&ty, span)?;
                let binders = self.effect_cond(
                    cond_atom,
                    result_tys,
                    "if",
                    span,
                    |cx| {
                        let value = cx.lower(then_branch)?;
                        cx.leaves(&value, then_branch.span)
                    },
                    |cx| {
                        let value = cx.lower(else_branch)?;
                        cx.leaves(&value, else_branch.span)
                    },
                )?;
                Ok(self.assemble(&ty, binders))
            }
            TKind::App { func, arg } => {
                if let (TKind::Builtin(Builtin::Effect(op)), TKind::Lit(Lit::Str(text))) =
                    (&func.kind, &arg.kind)
                {
                    match op {
                        EffectOp::Error => {
                            let ty = self.concrete(&expr.ty, span)?;
                            return self.runtime_error(text.clone(), &ty, span);
                        }
                        EffectOp::Print => return self.print_line(text.clone(), span),
                        _ => {}
                    }
                }
                // A built-in's or a definition's type is made concrete when it is lowered: its
                // argument first, which may bind a size the type names (`sum for i:(Fin
                // (cells box)). …`, `energy_nl L $ just_neighbor_list atoms`, whose list's
                // length the call computes).
                let (func_value, arg_value) = if lowers_nothing_first(func) {
                    let arg_value = self.lower(arg)?;
                    (self.lower(func)?, arg_value)
                } else {
                    (self.lower(func)?, self.lower(arg)?)
                };
                self.apply(func_value, arg_value, span)
            }
            TKind::Index { base, index } => {
                let base_value = self.lower(base)?;
                let index_value = self.lower(index)?;
                let base_ty = self.concrete(&base.ty, span)?;
                let Ty::Table(ix, _) = &base_ty else {
                    return bug(span, "indexing a non-table");
                };
                let flat = self.flat_index(&index_value, ix, span)?;
                self.index_value(&base_value, flat, span)
            }
            TKind::Tuple(items) => Ok(SVal::Tuple(
                items
                    .iter()
                    .map(|item| self.lower(item))
                    .collect::<Result<_>>()?,
            )),
            TKind::Table(items) => {
                let ty = self.concrete(&expr.ty, span)?;
                let dependent = matches!(&ty, Ty::Table(_, elem) if elem.mentions_outer(0));
                let mut values = Vec::new();
                for (position, item) in items.iter().enumerate() {
                    if !dependent {
                        values.push(self.lower(item)?);
                        continue;
                    }
                    self.literal_rows.push(position);
                    let value = self.lower(item);
                    self.literal_rows.pop();
                    values.push(value?);
                }
                self.table_of(values, &ty, span)
            }
            TKind::Numbers(numbers) => {
                let ty = self.concrete(&expr.ty, span)?;
                let Ty::Table(_, elem) = &ty else {
                    return bug(span, "a table of numbers without a table type");
                };
                let atoms = numbers
                    .iter()
                    .map(|number| {
                        let value = literal(&number.value.lit(), elem, number.span)?;
                        // `-2` is the negation of the literal, as in an expression.
                        let value = if number.negated {
                            Prim::Neg.eval(&[value])
                        } else {
                            value
                        };
                        Ok(Atom::Lit(value))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let result_ty = self.leaf_types(&ty, span)?;
                let [result_ty] = &result_ty[..] else {
                    return bug(span, "a table of numbers with several leaves");
                };
                let atom = self.emit1(Expr::from(Table(atoms)), result_ty.clone(), "table", span);
                Ok(self.assemble(&ty, vec![atom]))
            }
            TKind::At(value) => {
                let target = self.concrete(&expr.ty, span)?;
                let value = self.lower(value)?;
                let SVal::Arr(atom) = value else {
                    return bug(span, "`@` of a non-scalar");
                };
                let flat = self.cast(atom, INDEX, span)?;
                self.unflatten_index(flat, &target, span)
            }
            TKind::Con { con, .. } => self.lower_con(*con, &expr.ty, span),
            TKind::Field { base, field } => {
                let base_ty = self.concrete(&base.ty, span)?;
                let value = self.lower(base)?;
                self.field(value, &base_ty, field, span)
            }
            TKind::Case { scrutinee, alts } => self.lower_case(scrutinee, alts, &expr.ty, span),
            TKind::Method {
                class,
                method,
                inst,
                ..
            } => self.lower_method(*class, *method, inst, span),
            TKind::TypeArg => match &expr.ty {
                Ty::TypeArg(ty) => Ok(SVal::Type(self.concrete(ty, span)?)),
                _ => bug(span, "type argument without a type"),
            },
            TKind::Block { stmts, result } => {
                for stmt in stmts {
                    match stmt {
                        TStmt::Let { pat, value } => {
                            let value = self.lower(value)?;
                            self.bind(pat, value, span)?;
                        }
                        TStmt::Def { id, def } => {
                            self.local_defs.insert(*id, (**def).clone());
                        }
                    }
                }
                self.lower(result)
            }
        }
    }

    /// The value a `given (set:Set a)` variable stands for: the value its instantiation names
    /// (Note [Value parameters] in `check/data.rs`). A top-level value redefined in the REPL
    /// since the type named it may have another type (a set of another size): refused.
    fn given_value(&mut self, rigid: Rigid, name: &str, ty: &Ty, span: Span) -> Result<SVal> {
        match self.rigids.get(&rigid) {
            Some(Ty::Value(crate::check::types::ValueArg::Global(global))) => {
                let global = global.clone();
                let expected = self.concrete(ty, span)?;
                let current = (self.globals)(&global).map(|value| value.ty.clone());
                if current.as_ref() != Some(&expected) {
                    return error(
                        span,
                        format!(
                            "`{global}` was redefined after a type named it: the type is of \
                             the old value (of type {expected}), which is gone"
                        ),
                    );
                }
                self.global(&global, span)
            }
            Some(Ty::Value(crate::check::types::ValueArg::Local(local, written))) => {
                match self.local_value(*local) {
                    Some(value) => Ok(value),
                    None => error(
                        span,
                        format!("`{written}`, the value `{name}` stands for, is not in scope here"),
                    ),
                }
            }
            _ => bug(span, format!("`{name}` stands for no value here")),
        }
    }

    fn global(&mut self, name: &str, span: Span) -> Result<SVal> {
        let Some(global) = (self.globals)(name) else {
            return bug(span, format!("unknown global `{name}`"));
        };
        let ty = global.ty.clone();
        let names = leaf_names(&ty, name);
        // Its `Nat`s outside tables are constants (Note [Static leaves of top-level values]):
        // a top-level `Nat` can be the size argument of a function (`f numSamples` where `f`
        // uses `Fin n`), and so can a field (`camera.numPix`).
        let constants: Vec<Option<Atom>> = (0..global.leaves.len())
            .map(|position| {
                let n = self.env.static_nats.get(names.get(position)?)?;
                Some(Atom::Lit(crate::core::ir::Scalar::U32(
                    u32::try_from(*n).ok()?,
                )))
            })
            .collect();
        if let Some(leaves) = constants.iter().cloned().collect::<Option<Vec<Atom>>>() {
            return Ok(self.assemble(&ty, leaves));
        }
        let vars = match self.inputs.iter().find(|(bound, _)| bound == name) {
            Some((_, vars)) => vars.clone(),
            None => {
                let vars: Vec<VarId> = global
                    .leaves
                    .into_iter()
                    .enumerate()
                    .map(|(position, leaf)| {
                        let hint = names.get(position).map_or(name, String::as_str);
                        self.program.new_var(leaf, hint)
                    })
                    .collect();
                self.program.inputs.extend(&vars);
                self.inputs.push((name.to_string(), vars.clone()));
                vars
            }
        };
        let leaves = vars
            .into_iter()
            .zip(constants)
            .map(|(var, constant)| constant.unwrap_or(Atom::Var(var)))
            .collect();
        Ok(self.assemble(&ty, leaves))
    }

    /// Indexes the outermost axis of every leaf.
    pub(super) fn index_value(&mut self, value: &SVal, flat: Atom, span: Span) -> Result<SVal> {
        match value {
            SVal::Arr(array) => {
                let ty = self.atom_ty(array);
                if ty.shape.is_empty() {
                    return bug(span, "indexing a scalar");
                }
                let res_ty = ArrTy::new(ty.shape[1..].to_vec(), ty.elem);
                Ok(SVal::Arr(self.emit1(
                    Expr::from(Index {
                        array: *array,
                        index: vec![flat],
                    }),
                    res_ty,
                    "ix",
                    span,
                )))
            }
            SVal::Tuple(items) => Ok(SVal::Tuple(
                items
                    .iter()
                    .map(|item| self.index_value(item, flat, span))
                    .collect::<Result<_>>()?,
            )),
            SVal::FnTable { ix, elem } => {
                let index = self.unflatten_index(flat, ix, span)?;
                self.apply(SVal::Closure(elem.clone()), index, span)
            }
            _ => bug(span, "indexing a function"),
        }
    }

    pub(super) fn bind(&mut self, pat: &TPat, value: SVal, span: Span) -> Result<()> {
        match pat {
            TPat::Var(local, _) => {
                self.locals.insert(*local, value);
            }
            TPat::Wild => {}
            TPat::Tuple(pats) => {
                let SVal::Tuple(items) = value else {
                    return bug(span, "tuple pattern on a non-tuple");
                };
                for (pat, item) in pats.iter().zip(items) {
                    self.bind(pat, item, span)?;
                }
            }
            TPat::Table(pats) => {
                for (position, pat) in pats.iter().enumerate() {
                    let item =
                        self.index_value(&value, Atom::Lit(Scalar::I64(position as i64)), span)?;
                    self.bind(pat, item, span)?;
                }
            }
            TPat::Con {
                con, tagged, args, ..
            } => {
                let fields = self.con_fields(value, *con, *tagged, span)?;
                for (pat, field) in args.iter().zip(fields) {
                    self.bind(pat, field, span)?;
                }
            }
            // A literal binds nothing (`case` tests it).
            TPat::Lit { .. } => {}
        }
        Ok(())
    }

    pub fn apply(&mut self, func: SVal, arg: SVal, span: Span) -> Result<SVal> {
        match func {
            SVal::Closure(closure) => {
                let saved_site = self.call_site;
                if self.in_def.is_none() && closure.def.is_some() {
                    self.call_site = Some(span);
                }
                let saved_locals = std::mem::replace(&mut self.locals, closure.locals.clone());
                let saved_rigids = std::mem::replace(&mut self.rigids, closure.rigids.clone());
                let saved_def = std::mem::replace(&mut self.in_def, closure.def.clone());
                let res = self
                    .bind(&closure.param, arg, span)
                    .and_then(|()| self.lower(&closure.body));
                let inner = std::mem::replace(&mut self.locals, saved_locals);
                // The sizes the use names are the body's once the last parameter is bound.
                let res = match res {
                    Ok(SVal::Closure(next)) if !closure.sizes.is_empty() => {
                        Ok(SVal::Closure(next.naming_sizes(&closure.sizes)))
                    }
                    res => {
                        let values = closure
                            .sizes
                            .iter()
                            .map(|(site, body)| (*site, *body, inner.get(body).cloned()))
                            .collect();
                        self.name_computed_sizes(values);
                        res
                    }
                };
                self.keep_escaping_sizes(inner);
                self.rigids = saved_rigids;
                let entered = closure
                    .def
                    .as_ref()
                    .filter(|def| saved_def.as_ref() != Some(def));
                self.in_def = saved_def;
                self.call_site = saved_site;
                match (res, entered) {
                    (Err(err), Some(def)) if err.kind == LowerErrorKind::Unsupported => {
                        error(span, format!("in `{def}`: {}", err.message))
                    }
                    // A file that cannot be read is named at the call that reads it.
                    (Err(err), Some(_)) if err.kind == LowerErrorKind::File => {
                        Err(LowerError { span, ..err })
                    }
                    (res, _) => res,
                }
            }
            SVal::Partial {
                builtin,
                mut args,
                ty,
                span: builtin_span,
            } => {
                args.push(arg);
                if args.len() == builtin_arity(builtin) {
                    self.lower_builtin(builtin, args, &ty, span)
                } else {
                    Ok(SVal::Partial {
                        builtin,
                        args,
                        ty,
                        span: builtin_span,
                    })
                }
            }
            SVal::Linear(linear) => self.apply_linear(&linear, arg, span),
            SVal::Con {
                data,
                con,
                mut args,
            } => {
                args.push(arg);
                self.constructor(data, con, args, span)
            }
            SVal::Arr(_)
            | SVal::Tuple(_)
            | SVal::Type(_)
            | SVal::Ref { .. }
            | SVal::Monoid(_)
            | SVal::FnTable { .. } => bug(span, "applying a non-function"),
        }
    }

    // ----- built-ins -----

    /// Applies an elementwise primitive to structurally equal values.
    pub(super) fn lift(&mut self, prim: Prim, args: &[SVal], span: Span) -> Result<SVal> {
        if let Some(SVal::Tuple(first)) = args.iter().find(|arg| matches!(arg, SVal::Tuple(_))) {
            let n_items = first.len();
            let mut items = Vec::new();
            for position in 0..n_items {
                let component: Vec<SVal> = args
                    .iter()
                    .map(|arg| match arg {
                        SVal::Tuple(items) => items[position].clone(),
                        other => other.clone(),
                    })
                    .collect();
                items.push(self.lift(prim, &component, span)?);
            }
            return Ok(SVal::Tuple(items));
        }
        let atoms = args
            .iter()
            .map(|arg| match arg {
                SVal::Arr(atom) => Ok(*atom),
                _ => bug(span, "primitive on a non-array"),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SVal::Arr(self.prim(prim, atoms, span)?))
    }

    /// A primitive's own rule on values of type `ty`: whole-value comparison of tuples and
    /// tables, elementwise otherwise.
    pub(super) fn prim_builtin(
        &mut self,
        prim: Prim,
        args: &[SVal],
        ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        if compares(prim) && is_structured(ty) {
            return self.compare_structured(prim, ty, &args[0], &args[1], span);
        }
        let res = self.lift(prim, args, span)?;
        match (ty, &res) {
            // Arithmetic on bytes wraps at 256, as Dex's `Word8`.
            (Ty::Base(base @ BaseTy::Word8), SVal::Arr(atom))
                if matches!(prim, Prim::Add | Prim::Sub | Prim::Mul | Prim::Neg) =>
            {
                Ok(SVal::Arr(self.keep_in_base(*atom, *base, span)?))
            }
            _ => Ok(res),
        }
    }

    /// Dex's `internal_cast` (its `cast-tests`): an integer keeps its bits, truncated to a
    /// narrower type; widened, it is zero-extended into `Word64` (and from `Word8` into
    /// `Word32`/`Nat`) and sign-extended otherwise, whatever the source's signedness (so
    /// `internal_cast(to=Word64, -1 :: Int32)` is `0xffffffff`, `internal_cast(to=Int64,
    /// 0xffffffff :: Word32)` is `-1`). Other scalars convert by value.
    fn internal_cast(
        &mut self,
        atom: Atom,
        source: BaseTy,
        target: BaseTy,
        span: Span,
    ) -> Result<Atom> {
        let bits = |base: BaseTy| match base {
            BaseTy::Word8 => Some(8),
            BaseTy::Int32 | BaseTy::Nat | BaseTy::Word32 => Some(32),
            BaseTy::Int64 | BaseTy::Word64 => Some(64),
            BaseTy::Float32 | BaseTy::Float64 | BaseTy::Bool => None,
        };
        let target_elem = base_elem(target);
        let (Some(from), Some(to)) = (bits(source), bits(target)) else {
            return self.cast(atom, target_elem, span);
        };
        let signed = |base: BaseTy| matches!(base, BaseTy::Int32 | BaseTy::Int64);
        let zero_extends = target == BaseTy::Word64 || (to == 32 && from < 32 && !signed(target));
        if to <= from || zero_extends != signed(source) {
            // Same width, truncation, or an extension the element cast makes itself (it
            // extends by the source's signedness).
            return self.cast(atom, target_elem, span);
        }
        if zero_extends {
            // A signed source zero-extended: its bits as the unsigned type of its width first.
            let unsigned = self.cast(atom, Elem::U32, span)?;
            return self.cast(unsigned, target_elem, span);
        }
        // An unsigned source sign-extended: its bits as the signed type of its width.
        if from == 32 {
            let signed_bits = self.cast(atom, Elem::I32, span)?;
            return self.cast(signed_bits, target_elem, span);
        }
        // A byte: values from 128 up are negative.
        let wide = self.cast(atom, target_elem, span)?;
        let lit = |value: i64| match target_elem {
            Elem::I64 => Atom::Lit(Scalar::I64(value)),
            _ => Atom::Lit(Scalar::I32(value as i32)),
        };
        let negative = self.prim(Prim::Ge, vec![wide, lit(128)], span)?;
        let shifted = self.prim(Prim::Sub, vec![wide, lit(256)], span)?;
        self.prim(Prim::Select, vec![negative, shifted, wide], span)
    }

    /// A value of a type stored wider than it is (bytes in 32 bits) brought back into its
    /// range: the low 8 bits of a `Word8`.
    fn keep_in_base(&mut self, atom: Atom, base: BaseTy, span: Span) -> Result<Atom> {
        match base {
            BaseTy::Word8 => self.prim(Prim::Mod, vec![atom, Atom::Lit(Scalar::U32(256))], span),
            _ => Ok(atom),
        }
    }

    /// `s .* x`: every float of `x` (of type `ty`) times `s`, cast to its type.
    pub(super) fn scale_leaves(
        &mut self,
        scalar: &SVal,
        value: &SVal,
        ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let SVal::Arr(scalar) = *scalar else {
            return bug(span, "`.*` of a non-scalar");
        };
        let leaves = self.leaves(value, span)?;
        let mut out = Vec::new();
        for leaf in leaves {
            let leaf_ty = self.atom_ty(&leaf);
            let scalar = self.cast(scalar, leaf_ty.elem, span)?;
            let scalar = self.broadcast(scalar, &leaf_ty.shape, span);
            out.push(self.prim(Prim::Mul, vec![scalar, leaf], span)?);
        }
        Ok(self.assemble(ty, out))
    }

    fn lower_builtin(
        &mut self,
        builtin: Builtin,
        args: Vec<SVal>,
        ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let result_ty = result_type(ty, builtin_arity(builtin));
        if let Some(res) = self.lower_by_instances(builtin, &args, ty, &result_ty, span)? {
            return Ok(res);
        }
        match builtin {
            Builtin::Prim(prim) => match ty {
                Ty::Fun { param, .. } => self.prim_builtin(prim, &args, param, span),
                _ => self.lift(prim, &args, span),
            },
            Builtin::Approx => {
                let lhs = self.leaves(&args[0], span)?;
                let rhs = self.leaves(&args[1], span)?;
                let mut all = Atom::Lit(Scalar::Bool(true));
                for (a, b) in lhs.into_iter().zip(rhs) {
                    let leaf_ok = self.approx_leaf(a, b, span)?;
                    all = self.prim(Prim::And, vec![all, leaf_ok], span)?;
                }
                Ok(SVal::Arr(all))
            }
            Builtin::Scale => self.scale_leaves(&args[0], &args[1], &result_ty, span),
            Builtin::Convert(_) => {
                let SVal::Arr(atom) = args[0] else {
                    return bug(span, "conversion of a non-scalar");
                };
                let Ty::Base(base) = &result_ty else {
                    return bug(span, "conversion to a non-scalar");
                };
                let converted = self.cast(atom, base_elem(*base), span)?;
                Ok(SVal::Arr(self.keep_in_base(converted, *base, span)?))
            }
            Builtin::Ordinal => {
                let Ty::Fun { param, .. } = ty else {
                    return bug(span, "ordinal type");
                };
                let flat = self.flat_index(&args[0], param, span)?;
                Ok(SVal::Arr(self.cast(flat, Elem::U32, span)?))
            }
            Builtin::Size => {
                let SVal::Type(ix) = &args[0] else {
                    return bug(span, "size of a non-type");
                };
                if let Some(size) = self.range_size(ix, span)? {
                    return Ok(SVal::Arr(self.cast(size, Elem::U32, span)?));
                }
                let size = self.ix_size(ix, span)?;
                Ok(SVal::Arr(Atom::Lit(Scalar::U32(size as u32))))
            }
            Builtin::FromOrdinal => {
                let SVal::Type(ix) = &args[0] else {
                    return bug(span, "from_ordinal of a non-type");
                };
                let SVal::Arr(atom) = args[1] else {
                    return bug(span, "from_ordinal of a non-scalar");
                };
                let ix = ix.clone();
                let flat = self.cast(atom, INDEX, span)?;
                self.unflatten_index(flat, &ix, span)
            }
            Builtin::CoerceTable => self.coerce_table(ty, &args, &result_ty, span),
            Builtin::NatDiff => self.lift(Prim::Sub, &args, span),
            Builtin::Sum => {
                let leaves = self.leaves(&args[0], span)?;
                let mut out = Vec::new();
                for leaf in leaves {
                    let leaf_ty = self.atom_ty(&leaf);
                    let res_ty = ArrTy::new(leaf_ty.shape[1..].to_vec(), leaf_ty.elem);
                    out.push(self.emit1(Expr::from(SumOuter(leaf)), res_ty, "sum", span));
                }
                Ok(self.assemble(&result_ty, out))
            }
            Builtin::Iota => {
                let SVal::Type(ix) = &args[0] else {
                    return bug(span, "iota of a non-type");
                };
                let size = self.ix_size(ix, span)?;
                let iota = self.emit1(
                    Expr::from(Iota(size)),
                    ArrTy::new(vec![size], INDEX),
                    "iota",
                    span,
                );
                Ok(SVal::Arr(self.cast(iota, Elem::U32, span)?))
            }
            Builtin::Fold | Builtin::Scan => self.lower_loop(builtin, args, ty, &result_ty, span),
            Builtin::Effect(op) => self.lower_effect(op, args, ty, &result_ty, span),
            Builtin::Reduce | Builtin::AssocScan => {
                self.lower_monoid(builtin, args, ty, &result_ty, span)
            }
            Builtin::CustomVjp => self.lower_custom_vjp(args, ty, span),
            Builtin::CustomLinearization(_) => self.lower_custom_linearization(args, ty, span),
            Builtin::ApplyN => {
                let count = match &args[0] {
                    SVal::Arr(Atom::Lit(scalar)) => scalar_as_size(*scalar),
                    _ => None,
                };
                let Some(count) = count else {
                    return error(
                        span,
                        "the count of `apply_n` must be known when the block is compiled",
                    );
                };
                let init = self.leaves(&args[1], span)?;
                let func = args[2].clone();
                let (body, carry_tys) =
                    self.loop_block(&result_ty, span, |cx, _, carry| cx.apply(func, carry, span))?;
                let binders = self.emit(
                    Expr::from(Fold {
                        size: count as usize,
                        init,
                        body,
                    }),
                    carry_tys,
                    "apply_n",
                    span,
                );
                Ok(self.assemble(&result_ty, binders.into_iter().map(Atom::Var).collect()))
            }
            Builtin::Zero => self.zeros_of(&result_ty, span),
            Builtin::One => self.constants_of(&result_ty, 1.0, span),
            Builtin::Ad(op) => self.lower_ad(op, args, ty, &result_ty, span),
            Builtin::Fst | Builtin::Snd => match &args[0] {
                SVal::Tuple(items) if items.len() == 2 => {
                    Ok(items[usize::from(builtin == Builtin::Snd)].clone())
                }
                _ => bug(span, "fst/snd of a non-pair"),
            },
            Builtin::Arb => self.arbitrary(&result_ty, args[0].clone(), span),
            Builtin::TestMode => Ok(SVal::Arr(Atom::Lit(Scalar::Bool(self.env.test_mode)))),
            Builtin::FileLength => self.file_length(&args[0], span),
            Builtin::FileByte => self.file_byte(&args[0], &args[1], span),
            Builtin::Inject | Builtin::Project { .. } => {
                let Ty::Fun { param, .. } = ty else {
                    return bug(span, "inject's or project's type");
                };
                match builtin {
                    Builtin::Project { checked } => {
                        self.project(&args[0], param, &result_ty, checked, span)
                    }
                    _ => self.inject(&args[0], param, &result_ty, span),
                }
            }
            Builtin::Append => self.append(&args, ty, &result_ty, span),
            Builtin::Mempty => self.mempty(&result_ty, span),
            Builtin::Show => {
                let Ty::Fun { param, .. } = ty else {
                    return bug(span, "show's type");
                };
                self.show(&args[0], param, &result_ty, span)
            }
            Builtin::InternalCast => {
                let source = match ty {
                    Ty::Fun { result, .. } => match &**result {
                        Ty::Fun { param, .. } => self.concrete(param, span)?,
                        _ => return bug(span, "internal_cast's type"),
                    },
                    _ => return bug(span, "internal_cast's type"),
                };
                let (SVal::Arr(atom), Ty::Base(base), Ty::Base(source)) =
                    (&args[1], &result_ty, source)
                else {
                    return error(span, "`internal_cast` converts a scalar to a scalar type");
                };
                let converted = self.internal_cast(*atom, source, *base, span)?;
                Ok(SVal::Arr(self.keep_in_base(converted, *base, span)?))
            }
            Builtin::Extreme(extreme) => self.extreme(extreme, &result_ty, span),
            Builtin::FloatConst(constant) => {
                let value = constant.value();
                let scalar = match &result_ty {
                    Ty::Base(BaseTy::Float64) => Scalar::F64(value),
                    _ => Scalar::F32(value as f32),
                };
                Ok(SVal::Arr(Atom::Lit(scalar)))
            }
        }
    }

    /// The body block of a sequential loop: parameters `[i, carries…]` (the leaves of
    /// `carry_ty`); `step` gets the index and the carry and returns the next carry (and, for a
    /// scan, this step's output).
    fn loop_block(
        &mut self,
        carry_ty: &Ty,
        span: Span,
        step: impl FnOnce(&mut Self, Atom, SVal) -> Result<SVal>,
    ) -> Result<(BlockId, Vec<ArrTy>)> {
        let carry_tys = self.leaf_types(carry_ty, span)?;
        let index_var = self.program.new_var(ArrTy::scalar(INDEX), "i");
        let carry_vars: Vec<VarId> = carry_tys
            .iter()
            .map(|ty| self.program.new_var(ty.clone(), "c"))
            .collect();
        let mut params = vec![index_var];
        params.extend(&carry_vars);
        let body = self.in_block(params, |cx| {
            let carry = cx.assemble(
                carry_ty,
                carry_vars.iter().copied().map(Atom::Var).collect(),
            );
            let next = step(cx, Atom::Var(index_var), carry)?;
            cx.leaves(&next, span)
        })?;
        Ok((body, carry_tys))
    }

    /// `fold(init, \i c. body)` and `scan(init, \i c. (c', y))`: sequential loops.
    fn lower_loop(
        &mut self,
        builtin: Builtin,
        args: Vec<SVal>,
        ty: &Ty,
        result_ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        // fold : a -> (n -> a -> a) -> a;  scan : a -> (n -> a -> (a, b)) -> (a, n=>b)
        let Ty::Fun {
            param: carry_ty,
            result: rest,
            ..
        } = ty
        else {
            return bug(span, "loop type");
        };
        let Ty::Fun { param: body_ty, .. } = &**rest else {
            return bug(span, "loop type");
        };
        let Ty::Fun { param: ix, .. } = &**body_ty else {
            return bug(span, "loop body type");
        };
        if let (Some(count), Builtin::Fold) = (self.run_time_count(ix, span), builtin) {
            let init = self.leaves(&args[0], span)?;
            let func = args[1].clone();
            let carries =
                self.fold_while(count, init, carry_ty, ix, span, |cx, index, carry| {
                    let partial = cx.apply(func.clone(), index, span)?;
                    cx.apply(partial, carry, span)
                })?;
            return Ok(self.assemble(result_ty, carries));
        }
        let size = self.ix_size(ix, span)?;
        let init = self.leaves(&args[0], span)?;
        let func = args[1].clone();
        let (carry_ty, ix) = ((**carry_ty).clone(), (**ix).clone());
        let is_fold = builtin == Builtin::Fold;
        let hint = if is_fold { "fold" } else { "scan" };
        let out = self.effect_loop(size, init, false, hint, span, |cx, index_var, carry| {
            let index = cx.unflatten_index(index_var, &ix, span)?;
            let carry = cx.assemble(&carry_ty, carry);
            let partial = cx.apply(func.clone(), index, span)?;
            let res = cx.apply(partial, carry, span)?;
            if is_fold {
                return Ok((cx.leaves(&res, span)?, Vec::new()));
            }
            let SVal::Tuple(mut parts) = res else {
                return bug(span, "a scan body's result is not a pair");
            };
            let y = parts.pop().map_or_else(|| bug(span, "scan pair"), Ok)?;
            let next = parts.pop().map_or_else(|| bug(span, "scan pair"), Ok)?;
            Ok((cx.leaves(&next, span)?, cx.leaves(&y, span)?))
        })?;
        let mut atoms = out.carries;
        if !is_fold {
            atoms.extend(out.ys);
        }
        Ok(self.assemble(result_ty, atoms))
    }

    /// The count of `Fin n` when `n` is a `Nat` the block computes (a data-dependent trip
    /// count, as `I64`), `None` for an index set known when the block is compiled.
    fn run_time_count(&mut self, ix: &Ty, span: Span) -> Option<Atom> {
        let Ty::Fin(Size::Local(local, _)) = ix else {
            return None;
        };
        match self.local_value(*local) {
            Some(SVal::Arr(count @ Atom::Var(_))) => self.cast(count, INDEX, span).ok(),
            _ => None,
        }
    }

    /// `fold init \i:(Fin n) c. body` over a `Nat` `n` the block computes (Dex's `Fin (1 +
    /// natlog2 …)`), also `for_`: a core `while` carrying the step and the carry. Its body
    /// runs at least once, so the loop is the branch of a `cond` taken when `n > 0`: a loop of
    /// no steps performs none of its body's effects.
    fn fold_while(
        &mut self,
        count: Atom,
        init: Vec<Atom>,
        carry_ty: &Ty,
        ix: &Ty,
        span: Span,
        mut step_body: impl FnMut(&mut Self, SVal, SVal) -> Result<SVal>,
    ) -> Result<Vec<Atom>> {
        let some = self.prim(Prim::Lt, vec![Atom::Lit(Scalar::I64(0)), count], span)?;
        let carry_tys = init.iter().map(|atom| self.atom_ty(atom)).collect();
        let skipped = init.clone();
        self.effect_cond(
            some,
            carry_tys,
            "loop",
            span,
            |cx| {
                let mut all_init = vec![Atom::Lit(Scalar::I64(0))];
                all_init.extend(init);
                let carries = cx.effect_while(all_init, span, |cx, carries| {
                    let (step, carry) = (carries[0], carries[1..].to_vec());
                    let index = cx.unflatten_index(step, ix, span)?;
                    let value = cx.assemble(carry_ty, carry);
                    let res = step_body(cx, index, value)?;
                    let one = Atom::Lit(Scalar::I64(1));
                    let next_step = cx.prim(Prim::Add, vec![step, one], span)?;
                    let mut next = vec![next_step];
                    next.extend(cx.leaves(&res, span)?);
                    let go_on = cx.prim(Prim::Lt, vec![next_step, count], span)?;
                    Ok((go_on, next))
                })?;
                Ok(carries[1..].to_vec())
            },
            |_| Ok(skipped),
        )
    }

    /// `reduce(xs, e, op)` and `assoc_scan(xs, e, op)`: the operator is lowered into a closed
    /// block whose params are the leaves of the left then the right element ([Paszke21] §2).
    pub(super) fn lower_monoid(
        &mut self,
        builtin: Builtin,
        args: Vec<SVal>,
        ty: &Ty,
        result_ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let (kind, name) = if builtin == Builtin::Reduce {
            (MonoidKind::Reduce, "reduce")
        } else {
            (MonoidKind::Scan, "assoc_scan")
        };
        let Ty::Fun {
            param: table_ty, ..
        } = ty
        else {
            return bug(span, "monoid type");
        };
        let Ty::Table(ix, elem_ty) = &**table_ty else {
            return bug(span, "monoid table type");
        };
        let elem_ty = (**elem_ty).clone();
        let leaf_tys = self.leaf_types(&elem_ty, span)?;
        let arrays = self.leaves(&args[0], span)?;
        let scalar_elements = leaf_tys.iter().all(|ty| ty.rank() == 0)
            && arrays.iter().all(|atom| self.atom_ty(atom).rank() == 1);
        if !scalar_elements {
            let size = self.ix_size(ix, span)?;
            return self.lower_monoid_sequential(kind, args, size, &elem_ty, result_ty, span);
        }
        let init = self.leaves(&args[1], span)?;
        let func = args[2].clone();
        let mut params = Vec::new();
        for hint in ["l", "r"] {
            for ty in &leaf_tys {
                params.push(self.program.new_var(ty.clone(), hint));
            }
        }
        let side_atoms = |side: usize| {
            params[side * leaf_tys.len()..(side + 1) * leaf_tys.len()]
                .iter()
                .map(|var| Atom::Var(*var))
                .collect::<Vec<_>>()
        };
        let (left, right) = (side_atoms(0), side_atoms(1));
        let op = self.in_block(params, |cx| {
            let left = cx.assemble(&elem_ty, left);
            let right = cx.assemble(&elem_ty, right);
            let partial = cx.apply(func, left, span)?;
            let res = cx.apply(partial, right, span)?;
            cx.leaves(&res, span)
        })?;
        crate::ops::cond::if_convert_all(&mut self.program, op);
        if let Err(why) = crate::ops::monoid::check_op_block(&self.program, op) {
            return error(span, format!("{name}: {why}"));
        }
        let tys: Vec<ArrTy> = match kind {
            MonoidKind::Reduce => leaf_tys,
            _ => arrays.iter().map(|atom| self.atom_ty(atom)).collect(),
        };
        let binders = self.emit(
            Expr::from(Monoid {
                kind,
                arrays,
                init,
                op,
            }),
            tys,
            name,
            span,
        );
        Ok(self.assemble(result_ty, binders.into_iter().map(Atom::Var).collect()))
    }

    /// `reduce`/`assoc_scan` over elements that are tables (the generic prelude's `cumsum` of
    /// a matrix): the operator on tables need not be elementwise, so it runs as a sequential
    /// left fold (scan). As in Note [Monoid order], the fold starts with the first element and
    /// `e` is the result only for an empty table: the step is `x` at index 0 and `c op x`
    /// after it, so an `e` that is not an identity (`argmax` passes `xs[0]`) gives the same
    /// value as over scalars.
    fn lower_monoid_sequential(
        &mut self,
        kind: MonoidKind,
        args: Vec<SVal>,
        size: usize,
        elem_ty: &Ty,
        result_ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let xs = args[0].clone();
        let init = self.leaves(&args[1], span)?;
        let func = args[2].clone();
        let is_scan = kind != MonoidKind::Reduce;
        let (body, carry_tys) = self.loop_block(elem_ty, span, |cx, index_var, carry| {
            let x = cx.index_value(&xs, index_var, span)?;
            let first = cx.prim(Prim::Eq, vec![index_var, Atom::Lit(Scalar::I64(0))], span)?;
            let then_block = cx.in_block(Vec::new(), |cx| cx.leaves(&x, span))?;
            let else_block = cx.in_block(Vec::new(), |cx| {
                let partial = cx.apply(func, carry, span)?;
                let combined = cx.apply(partial, x.clone(), span)?;
                cx.leaves(&combined, span)
            })?;
            let tys = cx.leaf_types(elem_ty, span)?;
            let binders = cx.emit(
                Expr::from(Cond {
                    cond: first,
                    then_block,
                    else_block,
                }),
                tys,
                "step",
                span,
            );
            let next = cx.assemble(elem_ty, binders.into_iter().map(Atom::Var).collect());
            Ok(if is_scan {
                SVal::Tuple(vec![next.clone(), next])
            } else {
                next
            })
        })?;
        if !is_scan {
            let binders = self.emit(
                Expr::from(Fold { size, init, body }),
                carry_tys,
                "fold",
                span,
            );
            return Ok(self.assemble(result_ty, binders.into_iter().map(Atom::Var).collect()));
        }
        let n_carries = carry_tys.len();
        let mut binder_tys = carry_tys.clone();
        binder_tys.extend(carry_tys.into_iter().map(|ty| {
            let mut shape = vec![size];
            shape.extend(ty.shape);
            ArrTy::new(shape, ty.elem)
        }));
        let binders = self.emit(
            Expr::from(Scan { size, init, body }),
            binder_tys,
            "scan",
            span,
        );
        let ys = binders[n_carries..]
            .iter()
            .copied()
            .map(Atom::Var)
            .collect();
        Ok(self.assemble(result_ty, ys))
    }

    /// `arb key` at a concrete type: the instances of Dex's `Arbitrary`, by the type's shape.
    /// Scalars come from the prelude's `randn` and `rand` (so they are Dex's numbers); a table
    /// draws element `i` from `ixkey key i`, in parallel; component `j` of a tuple from
    /// `hash key j` (for a pair these are Dex's `split_key(n=2, key)`).
    fn arbitrary(&mut self, ty: &Ty, key: SVal, span: Span) -> Result<SVal> {
        let scale_randn = |cx: &mut Self, elem: Elem| -> Result<SVal> {
            let SVal::Arr(normal) = cx.call_prelude("randn", vec![key.clone()], span)? else {
                return bug(span, "randn is not a scalar");
            };
            let scaled = cx.prim(Prim::Mul, vec![normal, Atom::Lit(Scalar::F32(5.0))], span)?;
            Ok(SVal::Arr(cx.cast(scaled, elem, span)?))
        };
        match ty {
            Ty::Base(BaseTy::Float32) => self.call_prelude("randn", vec![key], span),
            Ty::Base(BaseTy::Float64) => {
                let SVal::Arr(normal) = self.call_prelude("randn", vec![key], span)? else {
                    return bug(span, "randn is not a scalar");
                };
                Ok(SVal::Arr(self.cast(normal, Elem::F64, span)?))
            }
            // Dex: `f_to_i $ randn key * 5.0` (and `f_to_n` for `Nat`).
            Ty::Base(BaseTy::Int32) => scale_randn(self, Elem::I32),
            Ty::Base(BaseTy::Int64) => scale_randn(self, Elem::I64),
            Ty::Base(BaseTy::Nat | BaseTy::Word32) => scale_randn(self, Elem::U32),
            // A byte: the key's low byte.
            Ty::Base(BaseTy::Word8) => {
                let SVal::Arr(key) = key else {
                    return bug(span, "a key is not a scalar");
                };
                let byte = self.prim(Prim::Mod, vec![key, Atom::Lit(Scalar::U64(256))], span)?;
                Ok(SVal::Arr(self.cast(byte, Elem::U32, span)?))
            }
            // A user instance of `Arbitrary`, or a struct's fields as a tuple's components.
            Ty::Data(data) => {
                if let Some(value) =
                    self.call_user_method(Class::Arbitrary, "arb", ty, vec![key.clone()], span)?
                {
                    return Ok(value);
                }
                if data.def.is_tagged() {
                    return error(
                        span,
                        format!("`arb` needs an instance Arbitrary({ty}) for a type with several constructors"),
                    );
                }
                self.arbitrary(&Ty::Tuple(data.fields(0)), key, span)
            }
            // Dex: `key .&. 1 == 0`.
            Ty::Base(BaseTy::Bool) => {
                let SVal::Arr(key) = key else {
                    return bug(span, "a key is not a scalar");
                };
                let low_bit = self.prim(Prim::Mod, vec![key, Atom::Lit(Scalar::U64(2))], span)?;
                Ok(SVal::Arr(self.prim(
                    Prim::Eq,
                    vec![low_bit, Atom::Lit(Scalar::U64(0))],
                    span,
                )?))
            }
            Ty::Base(BaseTy::Word64) => Ok(key),
            // Dex's `rand_idx`: `unsafe_from_ordinal (f_to_n (floor (rand key * n_to_f (size n))))`.
            Ty::Fin(_) => {
                let size = self.ix_size(ty, span)?;
                let SVal::Arr(uniform) = self.call_prelude("rand", vec![key], span)? else {
                    return bug(span, "rand is not a scalar");
                };
                let scaled = self.prim(
                    Prim::Mul,
                    vec![uniform, Atom::Lit(Scalar::F32(size as f32))],
                    span,
                )?;
                let floored = self.prim(Prim::Floor, vec![scaled], span)?;
                let ordinal = self.cast(floored, Elem::U32, span)?;
                Ok(SVal::Arr(self.cast(ordinal, INDEX, span)?))
            }
            Ty::Tuple(items) => {
                let mut parts = Vec::new();
                for (position, item) in items.iter().enumerate() {
                    let ordinal = SVal::Arr(Atom::Lit(Scalar::U32(position as u32)));
                    let subkey = self.call_prelude("hash", vec![key.clone(), ordinal], span)?;
                    parts.push(self.arbitrary(item, subkey, span)?);
                }
                Ok(SVal::Tuple(parts))
            }
            // A row over a range of the table's own index (`(i:n)=>(..i)=>Float`) is drawn
            // whole and zeroed past the range's size (Note [Ranges]).
            Ty::Table(ix, elem) => {
                let elem = (**elem).clone();
                let dependent_row = match &elem {
                    Ty::Table(row_ix, row_elem) => match &**row_ix {
                        Ty::Range {
                            kind,
                            of,
                            bound: Bound::Outer(0, _),
                        } if **of == **ix && !row_elem.mentions_outer(0) => {
                            Some((*kind, (**of).clone()))
                        }
                        _ => None,
                    },
                    _ => None,
                };
                if dependent_row.is_none() && elem.mentions_outer(0) {
                    return error(
                        span,
                        format!("`arb` cannot make a random value of type {ty}"),
                    );
                }
                self.build_table(ty, "arb", span, |cx, flat| {
                    let ordinal = SVal::Arr(cx.cast(flat, Elem::U32, span)?);
                    let subkey = cx.call_prelude("hash", vec![key, ordinal], span)?;
                    let Some((kind, of)) = dependent_row else {
                        let value = cx.arbitrary(&elem, subkey, span)?;
                        return cx.leaves(&value, span);
                    };
                    let Ty::Table(_, row_elem) = &elem else {
                        return bug(span, "a dependent row is a table");
                    };
                    let padded = Ty::table(of.clone(), (**row_elem).clone());
                    let valid = cx.range_size_at(kind, &of, flat, span)?;
                    let row = cx.build_table(&padded, "arb", span, |cx, position| {
                        let ordinal = SVal::Arr(cx.cast(position, Elem::U32, span)?);
                        let key = cx.call_prelude("hash", vec![subkey, ordinal], span)?;
                        let item = cx.arbitrary(row_elem, key, span)?;
                        let leaves = cx.leaves(&item, span)?;
                        cx.zero_beyond(leaves, position, valid, span)
                    })?;
                    cx.leaves(&row, span)
                })
            }
            Ty::Fun { .. }
            | Ty::TypeArg(_)
            | Ty::Var(_)
            | Ty::Row(_)
            | Ty::Value(_)
            | Ty::Rigid(..)
            | Ty::Range { .. }
            | Ty::Con(..) => error(
                span,
                format!("`arb` cannot make a random value of type {ty}"),
            ),
        }
    }

    /// Applies a monomorphic definition of the prelude (what `arb` is built from).
    fn call_prelude(&mut self, name: &str, args: Vec<SVal>, span: Span) -> Result<SVal> {
        let Some(info) = self.env.def(name).map(|(_, info)| info.clone()) else {
            return error(
                span,
                format!("this needs the prelude's `{name}`, which is not defined"),
            );
        };
        if !info.vars.is_empty() {
            return bug(span, format!("`{name}` is polymorphic"));
        }
        let mut value = self.lower(&info.body)?;
        for arg in args {
            value = self.apply(value, arg, span)?;
        }
        Ok(value)
    }

    /// `a ~~ b` on one array: `all (a == b || abs (a - b) <= atol + rtol * abs b)`, with Dex's
    /// default tolerances (`HasDefaultTolerance`): atol 1e-5 and rtol 1e-4 for `Float32`,
    /// 1e-8 and 1e-5 for `Float64`; equal infinities are close.
    fn approx_leaf(&mut self, a: Atom, b: Atom, span: Span) -> Result<Atom> {
        let ty = self.atom_ty(&a);
        let (atol, rtol) = match ty.elem {
            Elem::F64 => (Scalar::F64(1e-8), Scalar::F64(1e-5)),
            _ => (Scalar::F32(1e-5), Scalar::F32(1e-4)),
        };
        let equal = self.prim(Prim::Eq, vec![a, b], span)?;
        let diff = self.prim(Prim::Sub, vec![a, b], span)?;
        let abs_diff = self.prim(Prim::Abs, vec![diff], span)?;
        let abs_b = self.prim(Prim::Abs, vec![b], span)?;
        let scaled = self.prim(Prim::Mul, vec![Atom::Lit(rtol), abs_b], span)?;
        let bound = self.prim(Prim::Add, vec![Atom::Lit(atol), scaled], span)?;
        let within = self.prim(Prim::Le, vec![abs_diff, bound], span)?;
        let close = self.prim(Prim::Or, vec![equal, within], span)?;
        self.all_true(close, span)
    }

    /// Whether every element of a `Bool` array is true: the number of true elements is
    /// compared with the number of elements.
    pub(super) fn all_true(&mut self, bools: Atom, span: Span) -> Result<Atom> {
        let ty = self.atom_ty(&bools);
        if ty.shape.is_empty() {
            return Ok(bools);
        }
        let n_elems = ty.n_elems();
        let flat = self.emit1(
            Expr::from(Reshape {
                shape: vec![n_elems],
                array: bools,
            }),
            ArrTy::new(vec![n_elems], Elem::Bool),
            "flat",
            span,
        );
        let counts = self.cast(flat, Elem::U32, span)?;
        let count = self.emit1(
            Expr::from(SumOuter(counts)),
            ArrTy::scalar(Elem::U32),
            "count",
            span,
        );
        self.prim(
            Prim::Eq,
            vec![count, Atom::Lit(Scalar::U32(n_elems as u32))],
            span,
        )
    }
}

/// Whether a primitive compares whole values (so that tuples and tables compare as wholes,
/// see `lower_compare.rs`) rather than lifting elementwise: those of Dex's `Eq` and `Ord`
/// (`prim::signature`).
pub(super) fn compares(prim: Prim) -> bool {
    matches!(
        prim.signature().interface,
        Some(Interface::Eq | Interface::Ord)
    )
}

/// How many arguments a built-in takes before it computes.
pub fn builtin_arity(builtin: Builtin) -> usize {
    match builtin {
        Builtin::Prim(prim) => prim.arity(),
        Builtin::Approx
        | Builtin::Scale
        | Builtin::Fold
        | Builtin::Scan
        | Builtin::FromOrdinal
        | Builtin::CoerceTable
        | Builtin::NatDiff => 2,
        Builtin::Reduce | Builtin::AssocScan => 3,
        Builtin::Convert(_) | Builtin::Ordinal | Builtin::Size | Builtin::Sum | Builtin::Iota => 1,
        Builtin::Arb | Builtin::TestMode | Builtin::FileLength => 1,
        Builtin::FileByte => 2,
        Builtin::InternalCast => 2,
        Builtin::Show => 1,
        Builtin::Append => 2,
        Builtin::Mempty => 0,
        Builtin::Inject | Builtin::Project { .. } => 1,
        Builtin::Effect(op) => match op {
            EffectOp::Get | EffectOp::Ask | EffectOp::While | EffectOp::Iter => 1,
            EffectOp::Catch | EffectOp::Throw | EffectOp::Error => 1,
            EffectOp::Print | EffectOp::UnsafeIo => 1,
            EffectOp::Monoid(NamedMonoid::Add | NamedMonoid::Mul) => 1,
            EffectOp::Monoid(NamedMonoid::And | NamedMonoid::Or) => 0,
            EffectOp::MakeMonoid => 2,
            EffectOp::BoundedIter => 3,
            EffectOp::RunState
            | EffectOp::WithState
            | EffectOp::YieldState
            | EffectOp::Put
            | EffectOp::RefIndex
            | EffectOp::RunAccum
            | EffectOp::YieldAccum
            | EffectOp::Extend
            | EffectOp::WithReader => 2,
        },
        Builtin::Fst | Builtin::Snd => 1,
        Builtin::ApplyN => 3,
        Builtin::CustomVjp => 4,
        Builtin::CustomLinearization(arity) => 2 + usize::from(arity),
        Builtin::Zero | Builtin::One | Builtin::FloatConst(_) | Builtin::Extreme(_) => 0,
        Builtin::Ad(op) => match op {
            AdOp::Grad | AdOp::DerivRev | AdOp::Deriv | AdOp::Vjp | AdOp::Linearize => 2,
            AdOp::TransposeLinear | AdOp::Jacobian | AdOp::Hessian | AdOp::CheckDeriv => 2,
            AdOp::ValueAndGrad => 2,
            AdOp::Jvp => 3,
        },
    }
}

impl Lowerer<'_> {
    /// `lowest` / `highest` at `ty`: the identity of `max` / `min` there.
    fn extreme(&mut self, extreme: Extreme, ty: &Ty, span: Span) -> Result<SVal> {
        let low = extreme == Extreme::Lowest;
        let ty = self.concrete(ty, span)?;
        let scalar = match &ty {
            Ty::Base(base) => match (base_elem(*base), low) {
                (Elem::F32, _) => Scalar::F32(if low {
                    f32::NEG_INFINITY
                } else {
                    f32::INFINITY
                }),
                (Elem::F64, _) => Scalar::F64(if low {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                }),
                (Elem::I32, _) => Scalar::I32(if low { i32::MIN } else { i32::MAX }),
                (Elem::I64, _) => Scalar::I64(if low { i64::MIN } else { i64::MAX }),
                (Elem::U32, _) => Scalar::U32(if low { 0 } else { u32::MAX }),
                (Elem::U64, _) => Scalar::U64(if low { 0 } else { u64::MAX }),
                (Elem::Bool, _) => Scalar::Bool(!low),
            },
            Ty::Fin(_) => match self.ix_size(&ty, span)? {
                0 => {
                    return error(
                        span,
                        format!(
                            "the index set {ty} is empty: it has no {}",
                            if low {
                                "first index (`lowest`)"
                            } else {
                                "last index (`highest`)"
                            }
                        ),
                    )
                }
                size => Scalar::I64(if low { 0 } else { size as i64 - 1 }),
            },
            _ => return bug(span, "`lowest`/`highest` of a type that is not ordered"),
        };
        Ok(SVal::Arr(Atom::Lit(scalar)))
    }
}

fn result_type(ty: &Ty, arity: usize) -> Ty {
    let mut ty = ty;
    for _ in 0..arity {
        if let Ty::Fun { result, .. } = ty {
            ty = result;
        }
    }
    ty.clone()
}

fn scalar_as_size(scalar: Scalar) -> Option<u64> {
    match scalar {
        Scalar::U32(n) => Some(n as u64),
        Scalar::U64(n) => Some(n),
        Scalar::I32(n) => u64::try_from(n).ok(),
        Scalar::I64(n) => u64::try_from(n).ok(),
        Scalar::F32(_) | Scalar::F64(_) | Scalar::Bool(_) => None,
    }
}

/// A literal at its (concrete, scalar) type.
pub(super) fn literal(lit: &Lit, ty: &Ty, span: Span) -> Result<Scalar> {
    let Ty::Base(base) = ty else {
        // An integer literal used as an index (`xs[0]`) is handled by `At`; anything else
        // reaching here is a checker bug.
        return bug(span, format!("literal of type {ty}"));
    };
    let value = match lit {
        Lit::Int(n) => *n as f64,
        Lit::Float(x) => *x,
        Lit::Bool(b) => return Ok(Scalar::Bool(*b)),
        Lit::Char(byte) => return Ok(Scalar::U32(u32::from(*byte))),
        Lit::Str(_) => return error(span, "strings are not values"),
    };
    let int = match lit {
        Lit::Int(n) => *n,
        _ => value as u64,
    };
    Ok(match base {
        BaseTy::Float32 => Scalar::F32(value as f32),
        BaseTy::Float64 => Scalar::F64(value),
        BaseTy::Int32 => Scalar::I32(int as i32),
        BaseTy::Int64 => Scalar::I64(int as i64),
        BaseTy::Nat | BaseTy::Word32 => Scalar::U32(int as u32),
        BaseTy::Word8 => Scalar::U32(int as u8 as u32),
        BaseTy::Word64 => Scalar::U64(int),
        BaseTy::Bool => return bug(span, "numeric literal of a non-number type"),
    })
}
