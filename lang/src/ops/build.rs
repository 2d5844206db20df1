//! `build1 k (λi. body)`, `index t [ix…]`, `iota n` and literal tables `[t1, …, tn]` ([Smeding25]
//! Fig 7): making arrays from elements and reading elements back. Every rule of the four in
//! one place:
//!
//! - type rules (called by `ops::verify`): `build1_tys` (one `I64` scalar param; binder `j`
//!   is `k ::: shape of result j`), `index_ty` (at most rank-of-`t` indices, each an `I64`
//!   scalar), `iota_ty` (`[n]i64`), `table_ty` (all atoms of one type; the empty table's
//!   binder is checked by the verifier, which has it);
//! - reference evaluation (called by `ops::interp`): `Interp::eval_build1`,
//!   `Interp::eval_index` (out of range reads zero, or is an error in strict mode),
//!   `eval_iota`, `eval_table`;
//! - batching: `build1` *is* the BOT (`passes::bot` transforms builds innermost first, so a
//!   body never meets one); `Batcher::batch_index` ([Smeding25] Fig 11, a gather) and
//!   `batch_table` (Fig 9); `iota` never depends on the batch index; an index pushed into
//!   an index or a table (Fig 10, Note [Pushing index down], with the context of those rules,
//!   `IndexPush`): `push_into_index`, `push_into_table`;
//! - linearity: `index` is linear in its array and constant in its indices, a table linear
//!   in its items (`ops::linearity`), so their JVPs are the operations on the tangents
//!   ([Smeding25] §6.1); transpose: `Builder::transpose_index` (a one-hot scatter, Fig 19) and
//!   `transpose_table` (an `index` per item); `iota` has no tangent (an integer); `build1`
//!   never reaches AD (which runs on BOT output);
//! - cost: `build1` costs like a loop (`ops::loops::cost`); the others cost the elements of
//!   their result (`ops::cost`);
//! - fusion class: `index` and `iota` are `View`s (a coordinate, or a masked read), `build1`
//!   and tables `Bulk`.

use std::collections::HashMap;

use super::ad::{self, AdResult, Builder, Derivs};
use super::batch::{Batcher, Status};
use super::bulk::{Bulk, Ran};
use super::gather_scatter::gather_rows;
use super::hlo::{self, ExportError, Exported, StableHlo, Val};
use super::{Element, FusionClass, Linearity, Move, Operation};
use crate::core::ir::{
    ArrTy, Atom, Block, BlockId, Build1, Elem, Expr, Gather, Index, Iota, Program, Scalar, Scatter,
    Stmt, Table, Transpose, VarId,
};
use crate::core::print::ty_text;
use crate::core::value::{Array, ArrayData};
use crate::core::visit::expr_blocks;
use crate::ops::interp::{index_scalar, Interp, Res, Stacked};
use crate::ops::verify::{atom_ty, block, expect_index, expect_index_params, prepend, result_tys};

pub fn build1_tys(program: &Program, size: usize, body: BlockId) -> Result<Vec<ArrTy>, String> {
    let block = block(program, body)?;
    expect_index_params(program, block, 1, "build1")?;
    let results = result_tys(program, block)?;
    Ok(results.into_iter().map(|ty| prepend(size, ty)).collect())
}

pub fn index_ty(program: &Program, array: &Atom, index: &[Atom]) -> Result<ArrTy, String> {
    let ty = atom_ty(program, array)?;
    if index.len() > ty.rank() {
        return Err(format!(
            "index with {} indices into rank {}",
            index.len(),
            ty.rank()
        ));
    }
    for atom in index {
        expect_index(&atom_ty(program, atom)?, "an index")?;
    }
    Ok(ArrTy::new(ty.shape[index.len()..].to_vec(), ty.elem))
}

pub fn iota_ty(size: usize) -> ArrTy {
    ArrTy::new(vec![size], Elem::I64)
}

/// A non-empty table: all atoms have one type (an empty table has no inferable type).
pub fn table_ty(program: &Program, atoms: &[Atom]) -> Result<ArrTy, String> {
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
    Ok(prepend(atoms.len(), ty))
}

impl Interp<'_> {
    /// Runs the body for every index and stacks its results.
    pub(crate) fn eval_build1(
        &mut self,
        stmt: &Stmt,
        size: usize,
        body: BlockId,
    ) -> Res<Vec<Array>> {
        let mut stacked: Vec<Stacked> = (0..stmt.binders.len())
            .map(|position| Stacked::new(self.binder_ty(stmt, position)))
            .collect();
        for i in 0..size {
            self.check_interrupt()?;
            let results = self.eval_block(body, vec![index_scalar(i)])?;
            for (out, value) in stacked.iter_mut().zip(&results) {
                out.append(value);
            }
        }
        Ok(stacked.into_iter().map(Stacked::finish).collect())
    }

    pub(crate) fn eval_index(&mut self, array: &Atom, index: &[Atom], reader: VarId) -> Res<Array> {
        let array = self.atom(array);
        let index: Vec<i64> = index.iter().map(|atom| self.index_atom(atom)).collect();
        let mut out = ArrayData::with_capacity(array.elem(), 0);
        self.read_sub_array(&array, &index, reader, &mut out)?;
        Ok(Array::new(array.shape[index.len()..].to_vec(), out))
    }
}

pub fn eval_iota(size: usize) -> Array {
    let mut out = ArrayData::with_capacity(Elem::I64, size);
    for i in 0..size {
        out.push(Scalar::I64(i as i64));
    }
    Array::new(vec![size], out)
}

/// The items stacked along a new outermost axis of the binder's type `ty`.
pub fn eval_table(ty: &ArrTy, items: &[Array]) -> Array {
    let mut stacked = Stacked::new(ty);
    for item in items {
        stacked.append(item);
    }
    stacked.finish()
}

impl Batcher<'_> {
    /// Fig 11: build1 k (λi. index x ix) ~> gather (k:::sh) x (λ[i]. ix); a batched array is
    /// gathered at its own batch index first.
    pub(crate) fn batch_index(&mut self, array: Atom, index: &[Atom], binder: VarId) -> Status {
        if index.is_empty() {
            return self.status(array);
        }
        let array_status = self.status(array);
        let lambda = self.program.new_block();
        let batch = self.new_var(ArrTy::scalar(Elem::I64), "i");
        self.program.blocks[lambda].params = vec![batch];
        let (source, mut results) = match array_status {
            Status::Batched(bulk) => (Atom::Var(bulk), vec![Atom::Var(batch)]),
            _ => (array, Vec::new()),
        };
        for ix in index {
            let status = self.status(*ix);
            results.push(self.in_lambda(status, lambda, batch));
        }
        self.program.blocks[lambda].results = results;
        let (ty, hint) = self.batched_binder(binder);
        Status::Batched(self.emit1(
            Expr::from(Gather {
                shape: ty.shape.clone(),
                array: source,
                body: lambda,
            }),
            ty,
            &hint,
        ))
    }

    /// Fig 9: build1 k (λi. [t1, …, tn]) ~> tr [build1 k (λi. t1), …].
    pub(crate) fn batch_table(&mut self, items: &[Atom], binder: VarId) -> Status {
        let items: Vec<Atom> = items
            .iter()
            .map(|item| Atom::Var(self.force_atom(*item)))
            .collect();
        let (res_ty, hint) = self.batched_binder(binder);
        let mut table_shape = res_ty.shape.clone();
        table_shape.swap(0, 1);
        let table = self.emit1(
            Expr::from(Table(items)),
            ArrTy::new(table_shape, res_ty.elem),
            "table",
        );
        Status::Batched(self.emit1(
            Expr::from(Transpose {
                perm: vec![1, 0],
                array: Atom::Var(table),
            }),
            res_ty,
            &hint,
        ))
    }
}

impl Builder<'_> {
    /// Index: a one-hot scatter ([Smeding25] Fig 19, Index).
    pub(crate) fn transpose_index(
        &mut self,
        array: Atom,
        index: &[Atom],
        ct: Atom,
        cts: &mut HashMap<VarId, Atom>,
    ) {
        self.add_transposed(cts, array, |program, ty| {
            let body = program.blocks.push(Block {
                params: Vec::new(),
                stmts: Vec::new(),
                results: index.to_vec(),
            });
            Expr::from(Scatter {
                shape: ty.shape.clone(),
                array: ct,
                body,
            })
        });
    }

    /// A table: each linear item's cotangent is its row of the table's cotangent.
    pub(crate) fn transpose_table(
        &mut self,
        items: &[Atom],
        ct: Atom,
        cts: &mut HashMap<VarId, Atom>,
    ) {
        for (position, item) in items.iter().enumerate() {
            if self.is_linear(item) {
                let ty = self.ty(item);
                let index = vec![Atom::Lit(Scalar::I64(position as i64))];
                let contribution = self.emit1(Expr::from(Index { array: ct, index }), ty, "ct");
                self.add_to(cts, *item, contribution);
            }
        }
    }
}

// Note [Pushing index down]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// [Smeding25] Fig 10 pushes `index` into the array expression it reads, so that an element is
// computed instead of a whole array. In ANF every `index` already reads a variable (Theorem
// 5.1 (2) holds by construction), so these rules are optimisations: `index y ix` where `y` is
// defined by a computation becomes that computation on indexed operands. Under total
// semantics (an out-of-range read gives zero) some rules are exact only when the index is in
// range — `op (index a ix) (index b ix)` is `op 0 0`, not 0, out of range — so those apply
// only to indices known to be in range: literals, and the parameters of loops and index
// functions, which range over their sizes. The rules that are always exact apply always.
// `passes::bot` runs them (`push_index`); each operation's rule is in its home, dispatched by
// `ops::push_index`.

/// What a rule of Note [Pushing index down] works with: the program, the variables known to
/// lie in `0..bound` (by bound), and the statements the rewritten one needs, emitted before it.
pub struct IndexPush<'a> {
    pub program: &'a mut Program,
    pub ranges: &'a HashMap<VarId, usize>,
    pub out: &'a mut Vec<Stmt>,
}

impl IndexPush<'_> {
    /// Whether `atom` is known to lie in `0..bound`.
    pub fn in_range(&self, atom: &Atom, bound: usize) -> bool {
        match atom {
            Atom::Lit(Scalar::I64(value)) => *value >= 0 && (*value as usize) < bound,
            Atom::Var(var) => self.ranges.get(var).is_some_and(|known| *known <= bound),
            Atom::Lit(_) => false,
        }
    }

    /// Emits `expr` of type `ty` before the rewritten statement; its variable.
    pub fn emit(&mut self, expr: Expr, ty: ArrTy, hint: &str) -> Atom {
        let var = self.program.new_var(ty, hint);
        self.out.push(Stmt {
            binders: vec![var],
            expr,
        });
        Atom::Var(var)
    }

    /// `index array ix`, emitted, where `array` has at least as many axes as `ix` has indices;
    /// `array` itself where it has fewer (a scalar operand of an elementwise operation).
    pub fn emit_index(&mut self, array: Atom, index: &[Atom]) -> Atom {
        let ty = self.program.atom_ty(&array);
        if ty.shape.len() < index.len() {
            return array;
        }
        let res_ty = ArrTy::new(ty.shape[index.len()..].to_vec(), ty.elem);
        self.emit(
            Expr::from(Index {
                array,
                index: index.to_vec(),
            }),
            res_ty,
            "ix",
        )
    }
}

/// index (index t u) v ~> index t (u ++ v) (exact).
pub fn push_into_index(inner: Atom, first: &[Atom], index: &[Atom]) -> Option<Expr> {
    let mut joined = first.to_vec();
    joined.extend(index);
    Some(Expr::from(Index {
        array: inner,
        index: joined,
    }))
}

/// index [t1, …, tk] (u:ix) ~> index tu ix, for a literal u in range.
pub fn push_into_table(cx: &IndexPush, items: &[Atom], index: &[Atom]) -> Option<Expr> {
    let Atom::Lit(Scalar::I64(position)) = index[0] else {
        return None;
    };
    cx.in_range(&index[0], items.len()).then(|| {
        Expr::from(Index {
            array: items[position as usize],
            index: index[1..].to_vec(),
        })
    })
}

/// A copy.
impl Operation for Atom {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        Ok(vec![atom_ty(program, self)?])
    }

    fn eval(&self, interp: &mut Interp, _: &Stmt) -> Res<Vec<Array>> {
        Ok(vec![interp.atom(self)])
    }

    fn batch(&self, batcher: &mut Batcher, stmt: &Stmt) {
        let status = batcher.status(*self);
        batcher.bind_one(stmt, status);
    }

    fn jvp(&self, builder: &mut Builder, stmt: &Stmt, tangents: &mut Derivs) -> AdResult {
        ad::jvp_structural(builder, stmt, tangents)
    }

    fn transpose(&self, builder: &mut Builder, stmt: &Stmt, cts: &mut Derivs) -> AdResult {
        if let Some(ct) = ad::result_ct(stmt, cts) {
            if builder.is_linear(self) {
                builder.add_to(cts, *self, ct);
            }
        }
        Ok(())
    }

    fn cost(&self, _: &Program, _: u64) -> u64 {
        0
    }

    fn linearity(&self) -> Linearity {
        Linearity::Structural(vec![true])
    }

    fn fusion_class(&self, _: &Program) -> FusionClass {
        FusionClass::View
    }

    fn run(&self, cx: &mut dyn Bulk) -> Ran {
        cx.copy(self)
    }

    fn export(&self, cx: &mut dyn StableHlo, _: &Stmt) -> Exported {
        Ok(vec![cx.atom(self)?])
    }

    fn scalar_op(&self) -> bool {
        true
    }

    fn element(&self) -> Option<Element<'_>> {
        Some(Element::Moved {
            array: *self,
            moved: Move::Same,
        })
    }

    fn sign_clear(&self, clear: &mut dyn FnMut(&Atom) -> bool) -> bool {
        clear(self)
    }
}

impl Operation for Build1 {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        build1_tys(program, self.size, self.body)
    }

    fn eval(&self, interp: &mut Interp, stmt: &Stmt) -> Res<Vec<Array>> {
        interp.eval_build1(stmt, self.size, self.body)
    }

    fn batch(&self, _: &mut Batcher, _: &Stmt) {
        unreachable!("builds are transformed innermost first")
    }

    fn jvp(&self, _: &mut Builder, _: &Stmt, _: &mut Derivs) -> AdResult {
        ad::not_differentiated()
    }

    fn transpose(&self, _: &mut Builder, _: &Stmt, _: &mut Derivs) -> AdResult {
        ad::not_a_linear_statement()
    }

    fn cost(&self, program: &Program, _: u64) -> u64 {
        super::loops::cost(program, self.size, self.body)
    }

    /// AD runs on BOT output.
    fn linearity(&self) -> Linearity {
        Linearity::Excluded
    }

    fn linear_through_blocks(&self) -> bool {
        true
    }

    fn fusion_class(&self, _: &Program) -> FusionClass {
        FusionClass::Bulk
    }

    fn run(&self, cx: &mut dyn Bulk) -> Ran {
        cx.per_point()?;
        cx.build(self.size, self.body)
    }

    fn export(&self, _: &mut dyn StableHlo, _: &Stmt) -> Exported {
        Err(ExportError::new(
            "build1",
            "the BOT leaves no `build1` in the bulk IR; export runs after it",
        ))
    }

    fn index_param_bounds(&self, _: &Program) -> Vec<usize> {
        vec![self.size]
    }
}

impl Operation for Index {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        Ok(vec![index_ty(program, &self.array, &self.index)?])
    }

    fn eval(&self, interp: &mut Interp, stmt: &Stmt) -> Res<Vec<Array>> {
        Ok(vec![interp.eval_index(
            &self.array,
            &self.index,
            Interp::reader(stmt),
        )?])
    }

    fn batch(&self, batcher: &mut Batcher, stmt: &Stmt) {
        let status = batcher.batch_index(self.array, &self.index, stmt.binders[0]);
        batcher.bind_one(stmt, status);
    }

    fn jvp(&self, builder: &mut Builder, stmt: &Stmt, tangents: &mut Derivs) -> AdResult {
        ad::jvp_structural(builder, stmt, tangents)
    }

    fn transpose(&self, builder: &mut Builder, stmt: &Stmt, cts: &mut Derivs) -> AdResult {
        if let Some(ct) = ad::result_ct(stmt, cts) {
            builder.transpose_index(self.array, &self.index, ct, cts);
        }
        Ok(())
    }

    fn cost(&self, _: &Program, result_elems: u64) -> u64 {
        result_elems
    }

    /// Linear in the array, not in the indices.
    fn linearity(&self) -> Linearity {
        let mut mask = vec![false; 1 + self.index.len()];
        mask[0] = true;
        Linearity::Structural(mask)
    }

    fn fusion_class(&self, _: &Program) -> FusionClass {
        FusionClass::View
    }

    fn run(&self, cx: &mut dyn Bulk) -> Ran {
        cx.index(&self.array, &self.index)
    }

    /// `stablehlo.gather` of the rows the indices select (over the grid, inside an index
    /// function), zero out of range.
    fn export(&self, cx: &mut dyn StableHlo, _: &Stmt) -> Exported {
        let source = match self.array {
            Atom::Var(var) if cx.computed_in_grid(var) => {
                return Err(ExportError::new(
                    "index",
                    "an index function indexes an array it computes itself",
                ))
            }
            Atom::Var(var) => cx.bound(var),
            Atom::Lit(_) => None,
        };
        let Some(source) = source else {
            return Err(ExportError::new("index", "indexes a literal"));
        };
        let indices = hlo::atoms(cx, &self.index)?;
        let grid = cx.grid().to_vec();
        Ok(vec![gather_rows(cx, &source, &indices, &grid)])
    }

    fn scalar_op(&self) -> bool {
        true
    }

    fn push_index(&self, _: &mut IndexPush, _: VarId, index: &[Atom]) -> Option<Expr> {
        push_into_index(self.array, &self.index, index)
    }

    fn element(&self) -> Option<Element<'_>> {
        Some(Element::Indexed {
            array: self.array,
            index: &self.index,
        })
    }
}

impl Operation for Iota {
    fn types(&self, _: &Program) -> Result<Vec<ArrTy>, String> {
        Ok(vec![iota_ty(self.0)])
    }

    fn eval(&self, _: &mut Interp, _: &Stmt) -> Res<Vec<Array>> {
        Ok(vec![eval_iota(self.0)])
    }

    fn batch(&self, _: &mut Batcher, _: &Stmt) {
        unreachable!("iota does not depend on the batch index")
    }

    fn jvp(&self, builder: &mut Builder, stmt: &Stmt, tangents: &mut Derivs) -> AdResult {
        ad::jvp_structural(builder, stmt, tangents)
    }

    fn transpose(&self, _: &mut Builder, _: &Stmt, _: &mut Derivs) -> AdResult {
        Ok(())
    }

    fn cost(&self, _: &Program, result_elems: u64) -> u64 {
        result_elems
    }

    /// An integer result: no tangent, linear in nothing.
    fn linearity(&self) -> Linearity {
        Linearity::Structural(Vec::new())
    }

    fn fusion_class(&self, _: &Program) -> FusionClass {
        FusionClass::View
    }

    fn run(&self, cx: &mut dyn Bulk) -> Ran {
        cx.iota(self.0)
    }

    fn export(&self, cx: &mut dyn StableHlo, _: &Stmt) -> Exported {
        let ty = ArrTy::new(vec![self.0], Elem::I64);
        Ok(vec![cx.op(
            "stablehlo.iota",
            &[],
            "{iota_dimension = 0 : i64}",
            ty,
        )])
    }

    fn element(&self) -> Option<Element<'_>> {
        Some(Element::FirstCoordinate)
    }
}

impl Operation for Table {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        Ok(vec![table_ty(program, &self.0)?])
    }

    fn types_given(&self, program: &Program, declared: &[&ArrTy]) -> Result<Vec<ArrTy>, String> {
        match (self.0.is_empty(), declared) {
            (false, _) => self.types(program),
            (true, [ty]) if ty.shape.first() == Some(&0) => Ok(vec![(*ty).clone()]),
            (true, _) => Err("an empty table binds one array of size 0".to_string()),
        }
    }

    fn eval(&self, interp: &mut Interp, stmt: &Stmt) -> Res<Vec<Array>> {
        let items = interp.atoms(&self.0);
        Ok(vec![eval_table(interp.binder_ty(stmt, 0), &items)])
    }

    fn batch(&self, batcher: &mut Batcher, stmt: &Stmt) {
        let status = batcher.batch_table(&self.0, stmt.binders[0]);
        batcher.bind_one(stmt, status);
    }

    fn jvp(&self, builder: &mut Builder, stmt: &Stmt, tangents: &mut Derivs) -> AdResult {
        ad::jvp_structural(builder, stmt, tangents)
    }

    fn transpose(&self, builder: &mut Builder, stmt: &Stmt, cts: &mut Derivs) -> AdResult {
        if let Some(ct) = ad::result_ct(stmt, cts) {
            builder.transpose_table(&self.0, ct, cts);
        }
        Ok(())
    }

    fn cost(&self, _: &Program, result_elems: u64) -> u64 {
        result_elems
    }

    fn linearity(&self) -> Linearity {
        Linearity::Structural(vec![true; self.0.len()])
    }

    fn fusion_class(&self, _: &Program) -> FusionClass {
        FusionClass::Bulk
    }

    fn run(&self, cx: &mut dyn Bulk) -> Ran {
        cx.stack(&self.0)
    }

    /// `stablehlo.concatenate` of the elements as rows (zeros for an empty table).
    fn export(&self, cx: &mut dyn StableHlo, stmt: &Stmt) -> Exported {
        let ty = hlo::result_ty(cx.program(), stmt)?;
        if self.0.is_empty() {
            return Ok(vec![cx.zeros(&ty)]);
        }
        let mut rows = Vec::new();
        for atom in &self.0 {
            let val = cx.atom(atom)?;
            rows.push(cx.broadcast_leading(&val, &[1]));
        }
        let refs: Vec<&Val> = rows.iter().collect();
        Ok(vec![cx.op(
            "stablehlo.concatenate",
            &refs,
            "{dimension = 0 : i64}",
            ty,
        )])
    }

    fn push_index(&self, cx: &mut IndexPush, _: VarId, index: &[Atom]) -> Option<Expr> {
        push_into_table(cx, &self.0, index)
    }
}
/// The BOT's guarantee ([Smeding25] Theorem 5.1): no `build1` in any reachable block.
pub(crate) fn no_builds_left(program: &Program) -> Result<(), String> {
    let left = crate::core::visit::reachable_blocks(program, program.main)
        .into_iter()
        .any(|block| {
            program.blocks[block]
                .stmts
                .iter()
                .any(|stmt| matches!(stmt.expr, Expr::Build1(_)))
        });
    if left {
        Err("a build1 is left".into())
    } else {
        Ok(())
    }
}

/// Transforms the builds of a block (and of every block nested in it), innermost first.
pub(crate) fn transform_builds(program: &mut Program, block: BlockId) {
    let stmts = std::mem::take(&mut program.blocks[block].stmts);
    for stmt in stmts {
        for nested in expr_blocks(&stmt.expr) {
            transform_builds(program, nested);
        }
        match stmt.expr {
            Expr::Build1(Build1 { size, body }) => {
                Batcher::new(program, size, block).batch_build(body, &stmt.binders);
            }
            expr => program.blocks[block].stmts.push(Stmt {
                binders: stmt.binders,
                expr,
            }),
        }
    }
}

/// Fig 10 on ANF (see Note [Pushing index down] in `ops::build`). `ranges` maps variables known to lie in
/// `0..bound` to the bound; `defs` maps variables to their defining expressions.
pub(crate) fn push_indices(
    program: &mut Program,
    block: BlockId,
    ranges: &mut HashMap<VarId, usize>,
    defs: &mut HashMap<VarId, Expr>,
) {
    let stmts = std::mem::take(&mut program.blocks[block].stmts);
    let mut out = Vec::new();
    for mut stmt in stmts {
        for nested in expr_blocks(&stmt.expr) {
            let bounds = crate::ops::index_param_bounds(program, &stmt.expr);
            let params = program.blocks[nested].params.clone();
            for (param, bound) in params.iter().zip(bounds) {
                ranges.insert(*param, bound);
            }
            push_indices(program, nested, ranges, defs);
        }
        // Rewrite this statement while a rule applies (each rule reads a smaller producer).
        for _ in 0..8 {
            let Some(rewritten) = push_index_once(program, &stmt, ranges, defs, &mut out) else {
                break;
            };
            stmt.expr = rewritten;
        }
        if let [binder] = stmt.binders[..] {
            defs.insert(binder, stmt.expr.clone());
        }
        out.push(stmt);
    }
    program.blocks[block].stmts = out;
}

/// One Fig 10 step for `index y ix`: a new expression for the statement, with any statements
/// it needs appended to `out` first. The rule is the home's of the operation that defines `y`
/// (`ops::push_index`).
fn push_index_once(
    program: &mut Program,
    stmt: &Stmt,
    ranges: &HashMap<VarId, usize>,
    defs: &HashMap<VarId, Expr>,
    out: &mut Vec<Stmt>,
) -> Option<Expr> {
    let Expr::Index(Index { array, index }) = &stmt.expr else {
        return None;
    };
    // index t [] ~> t
    if index.is_empty() {
        return Some(Expr::from(*array));
    }
    let Atom::Var(source) = array else {
        return None;
    };
    let def = defs.get(source)?;
    let mut cx = IndexPush {
        program,
        ranges,
        out,
    };
    crate::ops::push_index(&mut cx, *source, index, def)
}
