//! The core IR verifier: checks that a program is well formed and well typed.
//!
//! Runs after every pass in debug builds and always in tests (STYLE.md §1). It assumes nothing
//! about its input (dangling ids included) and never panics; it collects every error it finds
//! instead of stopping at the first. After an id error in a statement, that statement's type
//! check is skipped so that one mistake is reported once.
//!
//! Checks:
//! - Ids: `main`, every block id of a statement, and every variable (inputs, params, binders,
//!   uses) is in range of its arena.
//! - Ownership: every block reachable from `main` is the body of exactly one statement and is
//!   not `main` itself (so the block structure is a tree and the walk terminates).
//! - Definitions: each variable is defined once in the whole program (as an input, a block
//!   param or a statement binder).
//! - Scope: every use is in scope: an input, a param of the block or of an enclosing block, or
//!   a binder of an earlier statement of the block or of an enclosing block (before the
//!   statement that owns the nested block). A statement's own binders are not in scope in its
//!   nested blocks.
//! - `main` has no params.
//! - Typing (seed 001 Fig 8; `expr_types` computes the types, the binders must match them in
//!   number and type):
//!   - atom: the atom's type;
//!   - `prim`: the operand count is the arity, the operands have one shape, and the element
//!     types satisfy the primitive's `result_elem` rule (rank-0 operands never broadcast);
//!   - `build1 k`: one `I64` scalar param; binder `j` is `k ::: shape of result j`;
//!   - `index t ix`: at most rank-of-`t` indices, each an `I64` scalar;
//!   - `sumOuter t`: `t` has rank ≥ 1 and a numeric element type;
//!   - `gather sh t f`: `f`'s params (m1 of them) and results (m2) are `I64` scalars,
//!     m1 ≤ rank `sh`, m2 ≤ rank `t`, and `sh[m1..] = shape t [m2..]`;
//!   - `scatter sh t f`: as gather with the roles swapped (`f` has one param per leading axis
//!     of `t`, one result per leading axis of `sh`), and a numeric element type;
//!   - table: all atoms have one type (an empty table's binder has outermost size 0);
//!   - `replicate k t`: `k ::: shape t`;
//!   - `tr perm t`: `perm` is a permutation of `0..m` with m ≤ rank `t`;
//!   - `reshape sh t`: equal element counts;
//!   - `cond c u v`: `c` is a `Bool` scalar, both branches have no params and results of the
//!     same types, which are the binders';
//!   - `iota n`: `[n]i64`;
//!   - `fold k init f`: params are an `I64` scalar then one per carry with the type of its
//!     initial value; results are the new carries with the same types;
//!   - `scan k init f`: params as fold; results are the new carries then the ys; binders are
//!     the carries then `k ::: shape of y` for each y.
//!
//! TODO(#verify): linearity of linear variables after transposition, and "no `build1` after
//! the BOT" (STYLE.md §1), arrive with those passes.

use std::fmt;

use super::ids::{Id, IdVec};
use super::ir::{ArrTy, Atom, Block, BlockId, Elem, Expr, Program, Stmt, VarId};
use super::print::{ty_text, var_text};

/// One verifier finding: what is wrong, and where (the statement's first binder or the
/// variable concerned, and the block it is in).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    pub message: String,
    pub var: Option<VarId>,
    pub block: Option<BlockId>,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(block) = self.block {
            write!(f, "{block}: ")?;
        }
        if let Some(var) = self.var {
            write!(f, "{var}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Verifies `program`, returning every error found.
pub fn verify(program: &Program) -> Result<(), Vec<VerifyError>> {
    let mut verifier = Verifier {
        program,
        errors: Vec::new(),
        defined: filled(program.vars.len(), false),
        in_scope: filled(program.vars.len(), false),
        scope: Vec::new(),
        visited: filled(program.blocks.len(), false),
        block: None,
    };
    verifier.run();
    if verifier.errors.is_empty() {
        Ok(())
    } else {
        Err(verifier.errors)
    }
}

fn filled<K: Id, V: Clone>(len: usize, value: V) -> IdVec<K, V> {
    let mut vec = IdVec::new();
    for _ in 0..len {
        vec.push(value.clone());
    }
    vec
}

struct Verifier<'a> {
    program: &'a Program,
    errors: Vec<VerifyError>,
    defined: IdVec<VarId, bool>,
    in_scope: IdVec<VarId, bool>,
    /// The variables in scope, innermost last; a block truncates it back on exit.
    scope: Vec<VarId>,
    visited: IdVec<BlockId, bool>,
    /// The block being checked (for error locations).
    block: Option<BlockId>,
}

impl Verifier<'_> {
    fn error(&mut self, var: Option<VarId>, message: String) {
        self.errors.push(VerifyError { message, var, block: self.block });
    }

    fn run(&mut self) {
        let program = self.program;
        if !program.blocks.contains(program.main) {
            self.error(None, format!("main block {} is out of range", program.main));
            return;
        }
        for &input in &program.inputs {
            self.define(input, "input");
        }
        if !program.blocks[program.main].params.is_empty() {
            self.block = Some(program.main);
            self.error(None, "main has params (inputs belong in program.inputs)".to_string());
        }
        self.visit_block(program.main);
    }

    /// Defines a variable and brings it into scope; false if its id is out of range.
    fn define(&mut self, var: VarId, what: &str) -> bool {
        if !self.program.vars.contains(var) {
            self.error(Some(var), format!("{what} {var} is out of range"));
            return false;
        }
        if self.defined[var] {
            self.error(Some(var), format!("{var} is defined more than once"));
        }
        self.defined[var] = true;
        self.in_scope[var] = true;
        self.scope.push(var);
        true
    }

    /// Checks a use; false if its id is out of range.
    fn check_use(&mut self, atom: &Atom, at: Option<VarId>) -> bool {
        let Atom::Var(var) = *atom else { return true };
        if !self.program.vars.contains(var) {
            self.error(at, format!("use of {var}, which is out of range"));
            return false;
        }
        if !self.in_scope[var] {
            let how = if self.defined[var] { "out of scope" } else { "before its definition" };
            self.error(at, format!("{var} is used {how}"));
        }
        true
    }

    fn visit_block(&mut self, block_id: BlockId) {
        if self.visited[block_id] {
            self.error(None, format!("{block_id} is the body of more than one construct"));
            return;
        }
        self.visited[block_id] = true;
        let outer_block = self.block.replace(block_id);
        let scope_mark = self.scope.len();
        let block: &Block = &self.program.blocks[block_id];
        for &param in &block.params {
            self.define(param, "param");
        }
        for stmt in &block.stmts {
            self.visit_stmt(stmt);
        }
        for atom in &block.results {
            self.check_use(atom, None);
        }
        for var in self.scope.drain(scope_mark..) {
            self.in_scope[var] = false;
        }
        self.block = outer_block;
    }

    fn visit_stmt(&mut self, stmt: &Stmt) {
        let at = stmt.binders.first().copied();
        let mut ids_ok = true;
        for atom in expr_atoms(&stmt.expr) {
            ids_ok &= self.check_use(&atom, at);
        }
        for block_id in expr_blocks(&stmt.expr) {
            if self.program.blocks.contains(block_id) {
                self.visit_block(block_id);
            } else {
                self.error(at, format!("block {block_id} is out of range"));
                ids_ok = false;
            }
        }
        for &binder in &stmt.binders {
            ids_ok &= self.program.vars.contains(binder);
        }
        if ids_ok {
            self.check_types(stmt, at);
        }
        for &binder in &stmt.binders {
            self.define(binder, "binder");
        }
    }

    fn check_types(&mut self, stmt: &Stmt, at: Option<VarId>) {
        let program = self.program;
        let declared: Vec<&ArrTy> = stmt.binders.iter().map(|&var| program.var_ty(var)).collect();
        if let Expr::Table(atoms) = &stmt.expr {
            if atoms.is_empty() {
                match declared.as_slice() {
                    [ty] if ty.shape.first() == Some(&0) => {}
                    _ => self.error(at, "an empty table binds one array of size 0".to_string()),
                }
                return;
            }
        }
        let expected = match expr_types(program, &stmt.expr) {
            Ok(expected) => expected,
            Err(message) => return self.error(at, message),
        };
        if expected.len() != declared.len() {
            return self.error(
                at,
                format!("{} binders for an expression with {} results", declared.len(), expected.len()),
            );
        }
        for ((&binder, declared), expected) in stmt.binders.iter().zip(declared).zip(&expected) {
            if declared != expected {
                self.error(
                    Some(binder),
                    format!(
                        "{} is declared {} but the expression has type {}",
                        var_text(program, binder),
                        ty_text(declared),
                        ty_text(expected)
                    ),
                );
            }
        }
    }
}

/// The atoms an expression uses directly (not those inside its blocks), in order.
pub fn expr_atoms(expr: &Expr) -> Vec<Atom> {
    match expr {
        Expr::Atom(atom)
        | Expr::SumOuter(atom)
        | Expr::Gather { array: atom, .. }
        | Expr::Scatter { array: atom, .. }
        | Expr::Replicate { array: atom, .. }
        | Expr::Transpose { array: atom, .. }
        | Expr::Reshape { array: atom, .. }
        | Expr::Cond { cond: atom, .. } => vec![*atom],
        Expr::Prim(_, atoms)
        | Expr::Table(atoms)
        | Expr::Fold { init: atoms, .. }
        | Expr::Scan { init: atoms, .. } => atoms.clone(),
        Expr::Index { array, index } => std::iter::once(array).chain(index).copied().collect(),
        Expr::Build1 { .. } | Expr::Iota(_) => Vec::new(),
    }
}

/// The blocks an expression owns, in order.
pub fn expr_blocks(expr: &Expr) -> Vec<BlockId> {
    match expr {
        Expr::Build1 { body, .. }
        | Expr::Gather { body, .. }
        | Expr::Scatter { body, .. }
        | Expr::Fold { body, .. }
        | Expr::Scan { body, .. } => vec![*body],
        Expr::Cond { then_block, else_block, .. } => vec![*then_block, *else_block],
        Expr::Atom(_)
        | Expr::Prim(..)
        | Expr::Index { .. }
        | Expr::SumOuter(_)
        | Expr::Table(_)
        | Expr::Replicate { .. }
        | Expr::Transpose { .. }
        | Expr::Reshape { .. }
        | Expr::Iota(_) => Vec::new(),
    }
}

/// The types of an expression's results by the typing rules of seed 001 Fig 8 (see the
/// module header), given the declared types of the variables it uses and of its blocks'
/// params and results. Only the expression itself is checked, not the statements inside its
/// blocks. An empty table has no inferable type and is an error here.
pub fn expr_types(program: &Program, expr: &Expr) -> Result<Vec<ArrTy>, String> {
    let one = |ty: ArrTy| Ok(vec![ty]);
    match expr {
        Expr::Atom(atom) => one(atom_ty(program, atom)?),
        Expr::Prim(prim, operands) => {
            let tys = operands.iter().map(|atom| atom_ty(program, atom)).collect::<Result<Vec<_>, _>>()?;
            let shape = tys.first().map(|ty| ty.shape.clone()).unwrap_or_default();
            if let Some(other) = tys.iter().find(|ty| ty.shape != shape) {
                return Err(format!(
                    "{} operands have different shapes {:?} and {:?}",
                    prim.name(),
                    shape,
                    other.shape
                ));
            }
            let elems: Vec<Elem> = tys.iter().map(|ty| ty.elem).collect();
            let elem = prim.result_elem(&elems).map_err(|error| error.0)?;
            one(ArrTy::new(shape, elem))
        }
        Expr::Build1 { size, body } => {
            let block = block(program, *body)?;
            expect_index_params(program, block, 1, "build1")?;
            let results = result_tys(program, block)?;
            Ok(results.into_iter().map(|ty| prepend(*size, ty)).collect())
        }
        Expr::Index { array, index } => {
            let ty = atom_ty(program, array)?;
            if index.len() > ty.rank() {
                return Err(format!("index with {} indices into rank {}", index.len(), ty.rank()));
            }
            for atom in index {
                expect_index(&atom_ty(program, atom)?, "an index")?;
            }
            one(ArrTy::new(ty.shape[index.len()..].to_vec(), ty.elem))
        }
        Expr::SumOuter(array) => {
            let ty = atom_ty(program, array)?;
            if ty.rank() == 0 {
                return Err("sumOuter of a rank-0 array".to_string());
            }
            expect_numeric(ty.elem, "sumOuter")?;
            one(ArrTy::new(ty.shape[1..].to_vec(), ty.elem))
        }
        Expr::Gather { shape, array, body } => {
            let ty = atom_ty(program, array)?;
            let block = block(program, *body)?;
            let n_params = block.params.len();
            expect_index_params(program, block, n_params, "gather")?;
            let n_results = expect_index_results(program, block, "gather")?;
            if n_params > shape.len() || n_results > ty.rank() {
                return Err(format!(
                    "gather from rank {} into rank {} with {n_params} params and {n_results} results",
                    ty.rank(),
                    shape.len()
                ));
            }
            if shape[n_params..] != ty.shape[n_results..] {
                return Err(format!(
                    "gather: the trailing shape {:?} of the result differs from {:?} of the source",
                    &shape[n_params..],
                    &ty.shape[n_results..]
                ));
            }
            one(ArrTy::new(shape.clone(), ty.elem))
        }
        Expr::Scatter { shape, array, body } => {
            let ty = atom_ty(program, array)?;
            expect_numeric(ty.elem, "scatter")?;
            let block = block(program, *body)?;
            let n_params = block.params.len();
            expect_index_params(program, block, n_params, "scatter")?;
            let n_results = expect_index_results(program, block, "scatter")?;
            if n_params > ty.rank() || n_results > shape.len() {
                return Err(format!(
                    "scatter from rank {} into rank {} with {n_params} params and {n_results} results",
                    ty.rank(),
                    shape.len()
                ));
            }
            if shape[n_results..] != ty.shape[n_params..] {
                return Err(format!(
                    "scatter: the trailing shape {:?} of the result differs from {:?} of the source",
                    &shape[n_results..],
                    &ty.shape[n_params..]
                ));
            }
            one(ArrTy::new(shape.clone(), ty.elem))
        }
        Expr::Table(atoms) => {
            let Some(first) = atoms.first() else {
                return Err("the type of an empty table cannot be inferred".to_string());
            };
            let ty = atom_ty(program, first)?;
            for atom in atoms {
                let other = atom_ty(program, atom)?;
                if other != ty {
                    return Err(format!(
                        "table elements have different types {} and {}",
                        ty_text(&ty),
                        ty_text(&other)
                    ));
                }
            }
            one(prepend(atoms.len(), ty))
        }
        Expr::Replicate { count, array } => one(prepend(*count, atom_ty(program, array)?)),
        Expr::Transpose { perm, array } => {
            let ty = atom_ty(program, array)?;
            let mut seen = vec![false; perm.len()];
            for &axis in perm {
                match seen.get_mut(axis) {
                    Some(slot) if !*slot => *slot = true,
                    _ => return Err(format!("tr {perm:?} is not a permutation")),
                }
            }
            if perm.len() > ty.rank() {
                return Err(format!("tr {perm:?} of a rank-{} array", ty.rank()));
            }
            let mut shape = ty.shape.clone();
            for (axis, &from) in perm.iter().enumerate() {
                shape[axis] = ty.shape[from];
            }
            one(ArrTy::new(shape, ty.elem))
        }
        Expr::Reshape { shape, array } => {
            let ty = atom_ty(program, array)?;
            let n_elems: usize = shape.iter().product();
            if n_elems != ty.n_elems() {
                return Err(format!(
                    "reshape {shape:?} ({n_elems} elements) of {} ({} elements)",
                    ty_text(&ty),
                    ty.n_elems()
                ));
            }
            one(ArrTy::new(shape.clone(), ty.elem))
        }
        Expr::Cond { cond, then_block, else_block } => {
            let cond_ty = atom_ty(program, cond)?;
            if cond_ty != ArrTy::scalar(Elem::Bool) {
                return Err(format!("cond on {}, not a bool scalar", ty_text(&cond_ty)));
            }
            let then_block = block(program, *then_block)?;
            let else_block = block(program, *else_block)?;
            if !then_block.params.is_empty() || !else_block.params.is_empty() {
                return Err("cond branches take no params".to_string());
            }
            let then_tys = result_tys(program, then_block)?;
            let else_tys = result_tys(program, else_block)?;
            if then_tys != else_tys {
                return Err(format!(
                    "cond branches have different result types ({}) and ({})",
                    tys_text(&then_tys),
                    tys_text(&else_tys)
                ));
            }
            Ok(then_tys)
        }
        Expr::Iota(size) => one(ArrTy::new(vec![*size], Elem::I64)),
        Expr::Fold { size: _, init, body } => {
            let (carry_tys, _) = loop_tys(program, init, *body, "fold")?;
            Ok(carry_tys)
        }
        Expr::Scan { size, init, body } => {
            let (mut tys, y_tys) = loop_tys(program, init, *body, "scan")?;
            tys.extend(y_tys.into_iter().map(|ty| prepend(*size, ty)));
            Ok(tys)
        }
    }
}

/// The carry types of a fold/scan, checked against its body, and the types of the body's
/// extra results (the ys of a scan; a fold must have none).
fn loop_tys(
    program: &Program,
    init: &[Atom],
    body: BlockId,
    what: &str,
) -> Result<(Vec<ArrTy>, Vec<ArrTy>), String> {
    let carry_tys = init.iter().map(|atom| atom_ty(program, atom)).collect::<Result<Vec<_>, _>>()?;
    let block = block(program, body)?;
    if block.params.len() != 1 + carry_tys.len() {
        return Err(format!(
            "{what} body has {} params, expected an index and {} carries",
            block.params.len(),
            carry_tys.len()
        ));
    }
    expect_index(&var_ty(program, block.params[0])?, &format!("the {what} index"))?;
    let param_tys =
        block.params[1..].iter().map(|&var| var_ty(program, var)).collect::<Result<Vec<_>, _>>()?;
    if param_tys != carry_tys {
        return Err(format!(
            "{what} carry params have types ({}) but the initial values ({})",
            tys_text(&param_tys),
            tys_text(&carry_tys)
        ));
    }
    let mut results = result_tys(program, block)?;
    let n_carry = carry_tys.len();
    let extra_allowed = what == "scan";
    if results.len() < n_carry || (!extra_allowed && results.len() != n_carry) {
        return Err(format!(
            "{what} body returns {} results for {n_carry} carries",
            results.len()
        ));
    }
    let ys = results.split_off(n_carry);
    if results != carry_tys {
        return Err(format!(
            "{what} body returns carries of types ({}) but the carries have types ({})",
            tys_text(&results),
            tys_text(&carry_tys)
        ));
    }
    Ok((carry_tys, ys))
}

fn prepend(size: usize, ty: ArrTy) -> ArrTy {
    let mut shape = vec![size];
    shape.extend(ty.shape);
    ArrTy::new(shape, ty.elem)
}

fn var_ty(program: &Program, var: VarId) -> Result<ArrTy, String> {
    program.vars.get(var).map(|info| info.ty.clone()).ok_or_else(|| format!("{var} is out of range"))
}

fn atom_ty(program: &Program, atom: &Atom) -> Result<ArrTy, String> {
    match atom {
        Atom::Var(var) => var_ty(program, *var),
        Atom::Lit(scalar) => Ok(ArrTy::scalar(scalar.elem())),
    }
}

fn block(program: &Program, block: BlockId) -> Result<&Block, String> {
    program.blocks.get(block).ok_or_else(|| format!("block {block} is out of range"))
}

fn result_tys(program: &Program, block: &Block) -> Result<Vec<ArrTy>, String> {
    block.results.iter().map(|atom| atom_ty(program, atom)).collect()
}

fn expect_index(ty: &ArrTy, what: &str) -> Result<(), String> {
    if *ty == ArrTy::scalar(Elem::I64) {
        Ok(())
    } else {
        Err(format!("{what} must be an i64 scalar, not {}", ty_text(ty)))
    }
}

fn expect_numeric(elem: Elem, what: &str) -> Result<(), String> {
    if elem.is_numeric() {
        Ok(())
    } else {
        Err(format!("{what} needs a numeric element type, not {}", elem.name()))
    }
}

/// The block has `n_params` params, all `I64` scalars.
fn expect_index_params(
    program: &Program,
    block: &Block,
    n_params: usize,
    what: &str,
) -> Result<(), String> {
    if block.params.len() != n_params {
        return Err(format!("{what} body has {} params, expected {n_params}", block.params.len()));
    }
    for &param in &block.params {
        expect_index(&var_ty(program, param)?, &format!("a {what} param"))?;
    }
    Ok(())
}

/// The block's results are all `I64` scalars; returns their number.
fn expect_index_results(program: &Program, block: &Block, what: &str) -> Result<usize, String> {
    for atom in &block.results {
        expect_index(&atom_ty(program, atom)?, &format!("a {what} index result"))?;
    }
    Ok(block.results.len())
}

fn tys_text(tys: &[ArrTy]) -> String {
    tys.iter().map(ty_text).collect::<Vec<_>>().join(", ")
}
