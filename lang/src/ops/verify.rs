//! The core IR verifier: checks that a program is well formed and well typed.
//!
//! Runs after every pass in debug builds and always in tests (docs/architecture.md). It assumes nothing
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
//! - Typing ([Smeding25] Fig 8; `expr_types` computes the types by each operation's type rule
//!   in its home in `ops` or `prim`, and the binders must match them in number and type):
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
//!     the carries then `k ::: shape of y` for each y;
//!   - `while init f`: params are one per carry with the type of its initial value; results
//!     are a `Bool` scalar then the new carries; binders are the carries;
//!   - `while_reverse init seeds f g`: `f` as for `while`; `g`'s params are the carries then
//!     one per seed with its type, its results the new values of those; binders are the
//!     seeds' types;
//!   - `reduce`/`assoc_scan`/`assoc_scan_right (xs…) (e…) op`: `ops::monoid::result_tys`
//!     (arrays of one shape `[n, rest…]`, identities of shape `rest`, a closed straight-line
//!     scalar operator from the left then right operands to the combined ones).
//!
//! - Linearity: variables marked linear (`VarInfo::linear`: the tangents of the `linear`
//!   stage and the cotangents of the `transposed` stage) are used only where their
//!   statement's operation is linear (`ops::linearity`), and a structural operation of a
//!   linear variable binds linear variables.
//!
//! Not checked here (docs/architecture.md): "no `build1` left after the BOT" (the BOT's postcondition
//! checks it instead).

use std::fmt;

use crate::core::ids::{Id, IdVec};
use crate::core::ir::{ArrTy, Atom, Block, BlockId, Elem, Expr, Program, Stmt, VarId};
use crate::core::print::{annotated, ty_text, var_text, Notes};
use crate::core::visit::{expr_atoms, expr_blocks};
use crate::ops;

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

/// The program printed with each error beside the line it concerns (`; error: …`): on the
/// line binding its variable, else before its block's `in` line, else on the header.
pub fn annotate(program: &Program, errors: &[VerifyError]) -> String {
    let mut notes = Notes::default();
    for error in errors {
        let note = format!("error: {}", error.message);
        match (error.var, error.block) {
            (Some(var), _) => notes.by_var.entry(var).or_default().push(note),
            (None, Some(block)) => notes.by_block.entry(block).or_default().push(note),
            (None, None) => notes.program.push(note),
        }
    }
    annotated(program, &notes)
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
        self.errors.push(VerifyError {
            message,
            var,
            block: self.block,
        });
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
            self.error(
                None,
                "main has params (inputs belong in program.inputs)".to_string(),
            );
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
            let how = if self.defined[var] {
                "out of scope"
            } else {
                "before its definition"
            };
            self.error(at, format!("{var} is used {how}"));
        }
        true
    }

    fn visit_block(&mut self, block_id: BlockId) {
        if self.visited[block_id] {
            self.error(
                None,
                format!("{block_id} is the body of more than one construct"),
            );
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
            if let Some(message) = linearity_error(self.program, stmt) {
                self.error(at, message);
            }
        }
        for &binder in &stmt.binders {
            self.define(binder, "binder");
        }
    }

    fn check_types(&mut self, stmt: &Stmt, at: Option<VarId>) {
        let program = self.program;
        let declared: Vec<&ArrTy> = stmt
            .binders
            .iter()
            .map(|&var| program.var_ty(var))
            .collect();
        let expected = match ops::operation(&stmt.expr).types_given(program, &declared) {
            Ok(expected) => expected,
            Err(message) => return self.error(at, message),
        };
        if expected.len() != declared.len() {
            return self.error(
                at,
                format!(
                    "{} binders for an expression with {} results",
                    declared.len(),
                    expected.len()
                ),
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

/// What is wrong with the way `stmt` uses the linear variables, if anything.
/// A structural operation uses them only in the operands it is linear in (and then binds
/// linear variables), an elementwise primitive only if it is linear (a bilinear one in some
/// of its operands, not all), and a `cond` never in its condition. This is what
/// transposition ([Smeding25] §7.3) relies on.
pub(crate) fn linearity_error(program: &Program, stmt: &Stmt) -> Option<String> {
    let operands: Vec<bool> = expr_atoms(&stmt.expr)
        .iter()
        .map(|atom| program.is_linear(atom))
        .collect();
    if !operands.contains(&true) {
        return None;
    }
    let name = crate::core::print::expr_name(&stmt.expr);
    let outside = |mask: &[bool]| {
        operands
            .iter()
            .zip(mask)
            .any(|(is_linear, allowed)| *is_linear && !allowed)
    };
    match ops::linearity(&stmt.expr) {
        ops::Linearity::Structural(mask) => {
            if outside(&mask) {
                return Some(format!(
                    "`{name}` uses a linear value where it is not linear"
                ));
            }
            if !stmt
                .binders
                .iter()
                .all(|&binder| program.is_linear(&Atom::Var(binder)))
            {
                return Some(format!(
                    "`{name}` of a linear value binds a non-linear variable"
                ));
            }
            None
        }
        ops::Linearity::Compound(mask) => {
            outside(&mask).then(|| format!("`{name}` uses a linear value where it is not linear"))
        }
        ops::Linearity::Prim(crate::prim::Linearity::Linear) => None,
        ops::Linearity::Prim(crate::prim::Linearity::Bilinear) => (!operands.contains(&false))
            .then(|| format!("`{name}` of linear values only is not linear")),
        ops::Linearity::Prim(
            crate::prim::Linearity::Nonlinear | crate::prim::Linearity::NonDifferentiable,
        )
        | ops::Linearity::Excluded => Some(format!("`{name}` of a linear value is not linear")),
    }
}

/// The types of an expression's results by the typing rules of [Smeding25] Fig 8 (see the
/// module header), given the declared types of the variables it uses and of its blocks'
/// params and results. Only the expression itself is checked, not the statements inside its
/// blocks. An empty table has no inferable type and is an error here.
pub fn expr_types(program: &Program, expr: &Expr) -> Result<Vec<ArrTy>, String> {
    ops::operation(expr).types(program)
}

pub(crate) fn prepend(size: usize, ty: ArrTy) -> ArrTy {
    let mut shape = vec![size];
    shape.extend(ty.shape);
    ArrTy::new(shape, ty.elem)
}

pub(crate) fn var_ty(program: &Program, var: VarId) -> Result<ArrTy, String> {
    program
        .vars
        .get(var)
        .map(|info| info.ty.clone())
        .ok_or_else(|| format!("{var} is out of range"))
}

pub(crate) fn atom_ty(program: &Program, atom: &Atom) -> Result<ArrTy, String> {
    match atom {
        Atom::Var(var) => var_ty(program, *var),
        Atom::Lit(scalar) => Ok(ArrTy::scalar(scalar.elem())),
    }
}

pub(crate) fn block(program: &Program, block: BlockId) -> Result<&Block, String> {
    program
        .blocks
        .get(block)
        .ok_or_else(|| format!("block {block} is out of range"))
}

pub(crate) fn result_tys(program: &Program, block: &Block) -> Result<Vec<ArrTy>, String> {
    block
        .results
        .iter()
        .map(|atom| atom_ty(program, atom))
        .collect()
}

pub(crate) fn expect_index(ty: &ArrTy, what: &str) -> Result<(), String> {
    if *ty == ArrTy::scalar(Elem::I64) {
        Ok(())
    } else {
        Err(format!("{what} must be an i64 scalar, not {}", ty_text(ty)))
    }
}

pub(crate) fn expect_numeric(elem: Elem, what: &str) -> Result<(), String> {
    if elem.is_numeric() {
        Ok(())
    } else {
        Err(format!(
            "{what} needs a numeric element type, not {}",
            elem.name()
        ))
    }
}

/// The block has `n_params` params, all `I64` scalars.
pub(crate) fn expect_index_params(
    program: &Program,
    block: &Block,
    n_params: usize,
    what: &str,
) -> Result<(), String> {
    if block.params.len() != n_params {
        return Err(format!(
            "{what} body has {} params, expected {n_params}",
            block.params.len()
        ));
    }
    for &param in &block.params {
        expect_index(&var_ty(program, param)?, &format!("a {what} param"))?;
    }
    Ok(())
}

/// The block's results are all `I64` scalars; returns their number.
pub(crate) fn expect_index_results(
    program: &Program,
    block: &Block,
    what: &str,
) -> Result<usize, String> {
    for atom in &block.results {
        expect_index(&atom_ty(program, atom)?, &format!("a {what} index result"))?;
    }
    Ok(block.results.len())
}

pub(crate) fn tys_text(tys: &[ArrTy]) -> String {
    tys.iter().map(ty_text).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ir::Build1;
    use crate::core::parse::parse_program;
    use crate::ops::testgen::{idx, Builder};
    use crate::prim::Prim;

    /// Wraps statements in a program with inputs `%0: [2]f64, %1: [3]f64, %2: []i64, %3: []bool`.
    fn program_text(stmts: &str, results: &str) -> String {
        format!(
            "program(%0: [2]f64, %1: [3]f64, %2: []i64, %3: []bool) {{\n{stmts}\n  in {results}\n}}"
        )
    }

    fn errors_of(text: &str) -> Vec<String> {
        let program = parse_program(text).unwrap_or_else(|error| panic!("{error}\n{text}"));
        match verify(&program) {
            Ok(()) => Vec::new(),
            Err(errors) => errors.iter().map(ToString::to_string).collect(),
        }
    }

    /// Each broken statement (bound to `%9`, the program's result) and a substring of the error
    /// it must produce.
    const BROKEN: &[(&str, &str)] = &[
        ("%9: []f64 = add %2 1.0:f64", "add: operands have different element types i64 and f64"),
        ("%9: [2]f64 = add %0 %1", "add operands have different shapes [2] and [3]"),
        ("%9: [2]f64 = add %0 1.0:f64", "add operands have different shapes [2] and []"),
        ("%9: [2]i64 = sqrt %0", "%9 is declared [2]i64 but the expression has type [2]f64"),
        ("%9: []i64 = sqrt %2", "sqrt: expects float operands, got i64"),
        ("%9: []bool = and %3 %2", "and: operands have different element types bool and i64"),
        ("%9: []f64, %8: []f64 = neg %0", "2 binders for an expression with 1 results"),
        ("%9: []f64 = index %0 [0:i64, 0:i64]", "index with 2 indices into rank 1"),
        ("%9: []f64 = index %0 [0:i32]", "an index must be an i64 scalar, not []i32"),
        ("%9: []f64 = index %0 [%0]", "an index must be an i64 scalar, not [2]f64"),
        ("%9: []i64 = sumOuter %2", "sumOuter of a rank-0 array"),
        ("%10: [2]bool = replicate 2 %3\n  %9: []bool = sumOuter %10", "sumOuter needs a numeric element type"),
        (
            "%9: [4]f64 = gather [4] %0 (\\%10: []i64 ->\n    in %10, %10)",
            "gather from rank 1 into rank 1 with 1 params and 2 results",
        ),
        (
            "%9: [4, 3]f64 = gather [4, 3] %0 (\\%10: []i64 ->\n    in %10)",
            "gather: the trailing shape [3] of the result differs from [] of the source",
        ),
        (
            "%9: [4]f64 = gather [4] %0 (\\%10: []f64 ->\n    in 0:i64)",
            "a gather param must be an i64 scalar, not []f64",
        ),
        (
            "%9: [4]f64 = gather [4] %0 (\\%10: []i64 ->\n    in 1.0:f64)",
            "a gather index result must be an i64 scalar",
        ),
        (
            "%10: [2]bool = replicate 2 %3\n  %9: [2]bool = scatter [2] %10 (\\%11: []i64 ->\n    in %11)",
            "scatter needs a numeric element type, not bool",
        ),
        (
            "%10: [2, 3]f64 = replicate 2 %1\n  %9: [2, 2]f64 = scatter [2, 2] %10 (\\%11: []i64 ->\n    in %11)",
            "scatter: the trailing shape [2] of the result differs from [3] of the source",
        ),
        (
            "%9: [2]f64 = scatter [2] %0 (\\%10: []i64, %11: []i64 ->\n    in %10)",
            "scatter from rank 1 into rank 1 with 2 params and 1 results",
        ),
        ("%9: [2, 2]f64 = table [%0, %1]", "table elements have different types [2]f64 and [3]f64"),
        ("%9: [1, 2]f64 = table []", "an empty table binds one array of size 0"),
        ("%9: [2]f64 = tr [0, 0] %0", "tr [0, 0] is not a permutation"),
        ("%9: [2]f64 = tr [1, 0] %0", "tr [1, 0] of a rank-1 array"),
        ("%9: [5]f64 = reshape [5] %0", "reshape [5] (5 elements) of [2]f64 (2 elements)"),
        (
            "%9: []i64 = cond %2 (\\ ->\n    in %2) (\\ ->\n    in %2)",
            "cond on []i64, not a bool scalar",
        ),
        (
            "%9: []i64 = cond %3 (\\ ->\n    in %2) (\\ ->\n    in 1.0:f64)",
            "cond branches have different result types ([]i64) and ([]f64)",
        ),
        (
            "%9: []i64 = cond %3 (\\%10: []i64 ->\n    in %2) (\\ ->\n    in %2)",
            "cond branches take no params",
        ),
        (
            "%9: [2]f64 = build1 2 (\\%10: []f64 ->\n    in %10)",
            "a build1 param must be an i64 scalar, not []f64",
        ),
        (
            "%9: [2]i64 = build1 2 (\\%10: []i64, %11: []i64 ->\n    in %10)",
            "build1 body has 2 params, expected 1",
        ),
        ("%9: [3]i64 = build1 2 (\\%10: []i64 ->\n    in %10)", "%9 is declared [3]i64 but the expression has type [2]i64"),
        (
            "%9: []f64 = fold 2 (%0) (\\%10: []i64, %11: [2]f64 ->\n    in %11)",
            "%9 is declared []f64 but the expression has type [2]f64",
        ),
        (
            "%9: [2]f64 = fold 2 (%0) (\\%10: []i64, %11: [3]f64 ->\n    in %1)",
            "fold carry params have types ([3]f64) but the initial values ([2]f64)",
        ),
        (
            "%9: [2]f64 = fold 2 (%0) (\\%10: []i64, %11: [2]f64 ->\n    in %1)",
            "fold body returns carries of types ([3]f64) but the carries have types ([2]f64)",
        ),
        (
            "%9: [2]f64 = fold 2 (%0) (\\%10: []i64, %11: [2]f64 ->\n    in %11, %10)",
            "fold body returns 2 results for 1 carries",
        ),
        (
            "%9: [2]f64 = fold 2 (%0) (\\%11: [2]f64 ->\n    in %11)",
            "fold body has 1 params, expected an index and 1 carries",
        ),
        (
            "%9: [2]f64 = fold 2 (%0) (\\%10: []bool, %11: [2]f64 ->\n    in %11)",
            "the fold index must be an i64 scalar, not []bool",
        ),
        (
            "%9: [2]f64, %8: [4]f64 = scan 4 (%0) (\\%10: []i64, %11: [2]f64 ->\n    in %11)",
            "2 binders for an expression with 1 results",
        ),
        (
            "%9: [2]f64 = scan 4 () (\\%10: []i64 ->\n    in ())",
            "1 binders for an expression with 0 results",
        ),
        // Scope and definition errors.
        (
            "%10: [2]f64 = build1 2 (\\%11: []i64 ->\n    %12: []f64 = index %0 [%11]\n    in %12)\n  %9: []f64 = %12",
            "%9: %12 is used out of scope",
        ),
        ("%9: []f64 = %10\n  %10: []f64 = index %0 [0:i64]", "%9: %10 is used before its definition"),
        ("%9: [2]f64 = neg %0\n  %9: [2]f64 = neg %0", "%9 is defined more than once"),
        ("%9: []i64 = %2\n  %2: []i64 = %9", "%2 is defined more than once"),
        (
            "%9: []i64 = cond %3 (\\ ->\n    %9: []i64 = %2\n    in %9) (\\ ->\n    in %2)",
            "%9 is defined more than once",
        ),
        (
            "%9: [2]i64 = build1 2 (\\%10: []i64 ->\n    in %9)",
            "%9 is used before its definition",
        ),
    ];

    #[test]
    fn each_broken_statement_is_reported() {
        let mut failures = Vec::new();
        for (stmts, expected) in BROKEN {
            let text = program_text(&format!("  {stmts}"), "%9");
            let errors = errors_of(&text);
            if !errors.iter().any(|error| error.contains(expected)) {
                failures.push(format!("{text}\nexpected: {expected}\ngot: {errors:#?}\n"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn well_typed_variants_pass() {
        let good = [
            "%9: [2]f64 = add %0 %0",
            "%10: []f64 = index %0 [%2]\n  %9: []f64 = add %10 1.0:f64",
            "%9: [3]f64 = gather [3] %0 (\\%10: []i64 ->\n    %11: []i64 = sub %10 1:i64\n    in %11)",
            "%9: [4, 3]f64 = gather [4] %0 (\\%10: []i64 ->\n    in %10)\n  %12: []i64 = %2",
            "%9: [0, 2]f64 = table []",
            "%9: [2]f64 = tr [0] %0",
            "%9: [2, 1]f64 = reshape [2, 1] %0",
            "%9: []i64, %10: []f64 = cond %3 (\\ ->\n    in %2, 1.0:f64) (\\ ->\n    in 0:i64, 2.0:f64)",
            "%9: [2]f64, %10: [4, 3]f64 = scan 4 (%0) (\\%11: []i64, %12: [2]f64 ->\n    in %12, %1)",
            "%9: []i64 = fold 0 () (\\%10: []i64 ->\n    in ())\n  %11: []i64 = %9",
        ];
        for stmts in good {
            let text = program_text(&format!("  {stmts}"), "%9");
            let text = text.replace("[4, 3]f64 = gather [4] %0", "[4]f64 = gather [4] %0");
            let errors = errors_of(&text);
            // The last case binds a fold with no carries to one binder on purpose: skip it.
            if stmts.starts_with("%9: []i64 = fold") {
                assert!(errors
                    .iter()
                    .any(|error| error.contains("1 binders for an expression with 0 results")));
                continue;
            }
            assert!(errors.is_empty(), "{text}\n{errors:#?}");
        }
    }

    #[test]
    fn errors_are_collected_not_stopped_at_the_first() {
        let text = program_text(
            "  %9: [2]f64 = add %0 %1\n  %10: []bool = neg %3\n  %12: [7]f64 = tr [0] %0",
            "%9, %13",
        );
        let text = text.replace("program(", "program(%13: []f64, ");
        let program = parse_program(&text).unwrap();
        let errors = verify(&program).unwrap_err();
        assert_eq!(errors.len(), 3, "{errors:#?}");
        assert_eq!(errors[0].var, Some(VarId(9)));
        assert_eq!(errors[2].var, Some(VarId(12)));
        assert_eq!(errors[0].block, Some(program.main));
        // `annotate` puts each error beside its line, and the result still parses.
        let annotated = annotate(&program, &errors);
        assert!(
            annotated
                .contains("%9: [2]f64 = add %0 %1  ; error: add operands have different shapes"),
            "{annotated}"
        );
        assert!(
            annotated.contains("%12: [7]f64 = tr [0] %0  ; error: %12 is declared [7]f64"),
            "{annotated}"
        );
        assert_eq!(
            parse_program(&annotated).unwrap().to_string(),
            program.to_string()
        );
        let missing = program_text("  %9: []f64 = %11", "%9");
        assert!(parse_program(&missing).is_err(), "%11 is never bound");
    }

    #[test]
    fn linear_values_are_used_only_where_their_operation_is_linear() {
        // `%5` is left out of the linear variables on purpose; `%6` scales a linear value.
        let text = "\
program(%0_x: [2]f64, %1_x_dot: lin [2]f64) {
  %2: lin [2]f64 = mul %0_x %1_x_dot
  %3: lin [2]f64 = mul %1_x_dot %1_x_dot
  %4: lin [2]f64 = exp %1_x_dot
  %5: []f64 = sumOuter %2
  %6: lin [2]f64 = div %2 %0_x
  in %3, %4, %5, %6
}
";
        let program = parse_program(text).unwrap();
        assert_eq!(format!("{program}\n"), text, "`lin` prints and parses back");
        let messages: Vec<String> = verify(&program)
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        expect_test::expect![[r#"
            [
                "b0: %3: `mul` of linear values only is not linear",
                "b0: %4: `exp` of a linear value is not linear",
                "b0: %5: `sumOuter` of a linear value binds a non-linear variable",
            ]
        "#]]
        .assert_debug_eq(&messages);
        // Without the flags the same statements are ordinary IR.
        let mut plain = program.clone();
        plain.clear_linear();
        assert_eq!(verify(&plain), Ok(()));
    }

    #[test]
    fn dangling_ids_are_reported_without_panicking() {
        let mut b = Builder::new();
        let x = b.input(ArrTy::new(vec![2], Elem::F64), "x");
        let y = b.prim(Prim::Neg, &[x]);
        let mut program = b.finish(vec![y]);
        let main = program.main;
        // A use of a variable outside the arena, and a statement owning a missing block.
        program.blocks[main].stmts.push(Stmt {
            binders: vec![VarId(1)],
            expr: Expr::from(Atom::Var(VarId(99))),
        });
        program.blocks[main].stmts.push(Stmt {
            binders: vec![VarId(77)],
            expr: Expr::from(Build1 {
                size: 2,
                body: BlockId(42),
            }),
        });
        program.blocks[main].results.push(Atom::Var(VarId(98)));
        program.inputs.push(VarId(55));
        let errors = verify(&program).unwrap_err();
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        expect_test::expect![[r#"
            [
                "%55: input %55 is out of range",
                "b0: %1: use of %99, which is out of range",
                "b0: %1: %1 is defined more than once",
                "b0: %77: block b42 is out of range",
                "b0: %77: binder %77 is out of range",
                "b0: use of %98, which is out of range",
            ]
        "#]]
        .assert_debug_eq(&messages);
        // The printer copes too.
        assert!(annotate(&program, &errors).contains("; error: block b42 is out of range"));
        program.main = BlockId(9);
        assert_eq!(
            verify(&program).unwrap_err()[0].message,
            "main block b9 is out of range"
        );
    }

    #[test]
    fn block_ownership_and_main_params() {
        let mut b = Builder::new();
        let body = b.index_block(1, |_, i| vec![i[0]]);
        let first = b.bind(Expr::from(Build1 { size: 2, body }));
        // The same block as the body of a second statement.
        let second = b.bind_as(
            vec![ArrTy::new(vec![2], Elem::I64)],
            Expr::from(Build1 { size: 2, body }),
        );
        let mut program = b.finish(vec![first[0], second[0]]);
        let errors = verify(&program).unwrap_err();
        assert!(
            errors
                .iter()
                .any(|error| error.message == "b1 is the body of more than one construct"),
            "{errors:?}"
        );
        // A block that owns itself: terminates, and is reported.
        let cycle_var = program.new_var(ArrTy::new(vec![1], Elem::I64), "");
        let inner = program.new_var(ArrTy::scalar(Elem::I64), "");
        let cycle = program.new_block();
        program.blocks[cycle] = Block {
            params: vec![inner],
            stmts: vec![Stmt {
                binders: vec![cycle_var],
                expr: Expr::from(Build1 {
                    size: 1,
                    body: cycle,
                }),
            }],
            results: vec![idx(0)],
        };
        let owner = program.new_var(ArrTy::new(vec![1], Elem::I64), "");
        let main = program.main;
        program.blocks[main].stmts.push(Stmt {
            binders: vec![owner],
            expr: Expr::from(Build1 {
                size: 1,
                body: cycle,
            }),
        });
        let errors = verify(&program).unwrap_err();
        assert!(errors.iter().any(
            |error| error.message == format!("{cycle} is the body of more than one construct")
        ));
        // main referenced from a statement, and main with params.
        let mut b = Builder::new();
        let param = b.program.new_var(ArrTy::scalar(Elem::I64), "");
        let main = b.program.main;
        b.program.blocks[main].params.push(param);
        let program = b.finish(vec![Atom::Var(param)]);
        let errors = verify(&program).unwrap_err();
        assert_eq!(
            errors[0].to_string(),
            "b0: main has params (inputs belong in program.inputs)"
        );
        let mut b = Builder::new();
        let main = b.program.main;
        let res = b.bind_as(
            vec![ArrTy::new(vec![1], Elem::I64)],
            Expr::from(Build1 {
                size: 1,
                body: main,
            }),
        );
        let program = b.finish(res);
        assert!(verify(&program)
            .unwrap_err()
            .iter()
            .any(|error| error.message == "b0 is the body of more than one construct"));
    }
}
