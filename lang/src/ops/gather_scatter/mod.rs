//! `gather sh t (λ[i…]. ix)` and `scatter sh t (λ[i…]. ix)` ([Smeding25] Fig 7): the operations
//! with an index function, each the other's transpose. Every rule of the two in one place:
//!
//! - type rule: `gather_ty`, `scatter_ty` (called by `ops::verify`): the index function's
//!   params and results are `I64` scalars; for gather, m1 params ≤ rank `sh`, m2 results ≤
//!   rank `t` and `sh[m1..] = shape t [m2..]`; scatter swaps the roles and needs a numeric
//!   element type;
//! - reference evaluation: `Interp::eval_gather` (out of range reads zero, or is an error in
//!   strict mode) and `Interp::eval_scatter` (collisions add in index order, out-of-range
//!   targets are dropped in both modes);
//! - batching ([Smeding25] Fig 9): `Batcher::batch_gather_scatter`; an index of a gather
//!   pushed into it (Fig 10): `push_into_gather`;
//! - linearity: linear in the array, constant in the index function (`ops::linearity`), so
//!   the JVP is the same operation on the tangent ([Smeding25] §6.1); transpose (§6.3):
//!   `Builder::transpose_gather_scatter` (each into the other);
//! - index functions solved: `pivots` (a scatter whose targets determine its params up to a
//!   sum, or are constants, is a gather and sums, `simp`'s ScatterAsGather) and
//!   `is_injective` (a gather that reads each element at most once, for fusion's recompute
//!   estimate);
//! - cost: `gather_cost`, `scatter_cost` ([HuotShaikhha] Fig 11 has neither: one move per element
//!   plus the index function once per position of the leading axes);
//! - fusion class: `gather_fusion_class`: a gather whose index function is scalar code is a
//!   `View` (the fuser runs the index function on the coordinates); a scatter, and a gather
//!   with blocks in its index function, are `Bulk`.

mod compose;
mod simplify;

pub(crate) use compose::{compose_gathers, drop_identity_gathers};

use std::collections::{HashMap, HashSet};

use super::ad::{self, AdResult, Builder, Derivs};
use super::batch::{Batcher, Status};
use super::build::IndexPush;
use super::bulk::{Bulk, Ran};
use super::hlo::{i64_array, list, ExportError, Exported, StableHlo, Val};
use super::rewrite::{Expand, Expansion, Rewrite, Rule};
use super::{straight_line, Element, FusionClass, Linearity, Operation, StraightLine};
use crate::core::inline::clone_block;
use crate::core::ir::{
    ArrTy, Atom, BlockId, Elem, Expr, Gather, Index, Program, Scalar, Scatter, Stmt, Transpose,
    VarId,
};
use crate::core::kernel::{Affine, IndexValue};
use crate::core::value::{Array, ArrayData};
use crate::core::visit::{collect_expr_uses, var_of};
use crate::ops::interp::{from_scalars, ravel, unravel, Interp, Res};
use crate::ops::verify::{
    atom_ty, block, expect_index_params, expect_index_results, expect_numeric,
};
use crate::prim::Prim;

/// `gather sh t f`: see the module header.
pub fn gather_ty(
    program: &Program,
    shape: &[usize],
    array: &Atom,
    body: BlockId,
) -> Result<ArrTy, String> {
    index_fn_ty(program, true, shape, array, body)
}

/// `scatter sh t f`: see the module header.
pub fn scatter_ty(
    program: &Program,
    shape: &[usize],
    array: &Atom,
    body: BlockId,
) -> Result<ArrTy, String> {
    expect_numeric(atom_ty(program, array)?.elem, "scatter")?;
    index_fn_ty(program, false, shape, array, body)
}

/// The type rule shared by gather and scatter: the index function's params index the
/// leading axes of the result (gather) or of the source (scatter), its results those of the
/// other, and the trailing axes of both agree.
fn index_fn_ty(
    program: &Program,
    is_gather: bool,
    shape: &[usize],
    array: &Atom,
    body: BlockId,
) -> Result<ArrTy, String> {
    let what = if is_gather { "gather" } else { "scatter" };
    let ty = atom_ty(program, array)?;
    let block = block(program, body)?;
    let n_params = block.params.len();
    expect_index_params(program, block, n_params, what)?;
    let n_results = expect_index_results(program, block, what)?;
    let (n_result_lead, n_source_lead) = if is_gather {
        (n_params, n_results)
    } else {
        (n_results, n_params)
    };
    if n_result_lead > shape.len() || n_source_lead > ty.rank() {
        return Err(format!(
            "{what} from rank {} into rank {} with {n_params} params and {n_results} results",
            ty.rank(),
            shape.len()
        ));
    }
    if shape[n_result_lead..] != ty.shape[n_source_lead..] {
        return Err(format!(
            "{what}: the trailing shape {:?} of the result differs from {:?} of the source",
            &shape[n_result_lead..],
            &ty.shape[n_source_lead..]
        ));
    }
    Ok(ArrTy::new(shape.to_vec(), ty.elem))
}

impl Interp<'_> {
    /// Reads `array` at the index the index function gives for every position of the
    /// result's leading axes (`reader` names the statement in strict-mode errors).
    pub(crate) fn eval_gather(
        &mut self,
        shape: &[usize],
        array: &Atom,
        body: BlockId,
        reader: VarId,
    ) -> Res<Array> {
        let array = self.atom(array);
        let n_lead = self.program.blocks[body].params.len();
        let lead_shape = &shape[..n_lead];
        let mut out = ArrayData::with_capacity(array.elem(), shape.iter().product());
        for flat in 0..lead_shape.iter().product() {
            let index = self.eval_index_fn(body, &unravel(flat, lead_shape))?;
            self.read_sub_array(&array, &index, reader, &mut out)?;
        }
        Ok(Array::new(shape.to_vec(), out))
    }

    /// Adds every sub-array of `array`'s leading axes into a zero array at the index the index
    /// function gives.
    pub(crate) fn eval_scatter(
        &mut self,
        shape: &[usize],
        array: &Atom,
        body: BlockId,
    ) -> Res<Array> {
        let array = self.atom(array);
        let n_lead = self.program.blocks[body].params.len();
        let lead_shape = &array.shape[..n_lead];
        let n_sub: usize = array.shape[n_lead..].iter().product();
        let zero = Scalar::zero(array.elem());
        let mut out: Vec<Scalar> = vec![zero; shape.iter().product()];
        for flat in 0..lead_shape.iter().product() {
            let target = self.eval_index_fn(body, &unravel(flat, lead_shape))?;
            // Out-of-range targets are dropped, in strict mode too.
            let Some(target_flat) = ravel(&target, &shape[..target.len()]) else {
                continue;
            };
            for offset in 0..n_sub {
                let slot = &mut out[target_flat * n_sub + offset];
                *slot = Prim::Add.eval(&[*slot, array.data.get(flat * n_sub + offset)]);
            }
        }
        Ok(from_scalars(shape.to_vec(), array.elem(), out))
    }
}

/// The cost of a block run once per position of `shape`'s first `leading` axes.
fn index_fn_cost(program: &Program, shape: &[usize], body: BlockId) -> u64 {
    let leading = program.blocks[body].params.len();
    let positions: u64 = shape.iter().take(leading).map(|dim| *dim as u64).product();
    positions * crate::ops::cost::block_cost(program, body)
}

/// One move per result element, and the index function once per position of the result's
/// leading axes (one axis per parameter of the index function).
pub fn gather_cost(program: &Program, shape: &[usize], body: BlockId, result_elems: u64) -> u64 {
    result_elems + index_fn_cost(program, shape, body)
}

/// Filling the result with zeros (`result_elems`: a one-hot scatter, the transpose of
/// `index`, costs the whole table it writes into, unless it is an increment, Note
/// [Increments] in `ops::cost`), one move per source element, and the index function once
/// per position of the source's leading axes.
pub fn scatter_cost(program: &Program, array: &Atom, body: BlockId, result_elems: u64) -> u64 {
    let source_ty = program.atom_ty(array);
    result_elems + source_ty.n_elems() as u64 + index_fn_cost(program, &source_ty.shape, body)
}

/// A gather is a view when the fuser can inline its index function.
pub fn gather_fusion_class(program: &Program, body: BlockId) -> FusionClass {
    if is_scalar_code(program, body) {
        FusionClass::View
    } else {
        FusionClass::Bulk
    }
}

// Note [Increments]
// ~~~~~~~~~~~~~~~~~
// The transpose of a read of one element, `index x [k]`, is a one-point scatter: a table of
// zeros with the cotangent at `k` ([Smeding25] Fig 19). Added into the rest of `x`'s cotangent,
// it is an increment of one element: [HuotShaikhha]'s reverse rules (Fig 5) add the adjoint of each
// occurrence of a variable into one component of the gradient (Fig 5, `Y(y₁ + x₂·z, …)`),
// and §5 prices that as one addition; the fused engine adds such a scatter into the sum in
// place and never makes its zeros (Note [Scatters added in place] in `passes::fuse`).
// Charging the zeros would price each read's adjoint at the size of the table: the
// transpose of `x[2] + x[0]` for a table of n would cost 3 n + 2 (two tables of zeros and
// their sum) where the increments cost n + 2, and the cheap-gradient bound would hold only
// for tables small next to the arithmetic around their reads. So a scatter whose index
// function has no params, read by nothing but one `add` with another table of its shape,
// costs its point and its index function; the `add` costs its whole result, as every `add`
// does (the cotangent table it makes).

/// The one-point scatters of `block` that are increments (Note [Increments]), with their
/// cost: their point and index function, without the table of zeros.
pub(crate) fn increments(program: &Program, block: BlockId) -> HashMap<VarId, u64> {
    let block = &program.blocks[block];
    let mut reads: HashMap<VarId, usize> = HashMap::new();
    let mut added = HashSet::new();
    for stmt in &block.stmts {
        let mut uses = Vec::new();
        collect_expr_uses(program, &stmt.expr, &mut uses);
        for var in uses {
            *reads.entry(var).or_default() += 1;
        }
        if let Some(StraightLine::Apply(Prim::Add, operands)) = straight_line(&stmt.expr) {
            if let [Atom::Var(a), Atom::Var(b)] = operands[..] {
                if a != b && program.var_ty(a).shape == program.var_ty(b).shape {
                    added.extend([a, b]);
                }
            }
        }
    }
    for var in block.results.iter().copied().filter_map(var_of) {
        *reads.entry(var).or_default() += 1;
    }
    block
        .stmts
        .iter()
        .filter_map(|stmt| match &stmt.expr {
            Expr::Scatter(Scatter { array, body, .. })
                if program.blocks[*body].params.is_empty() =>
            {
                Some((stmt.binders[0], scatter_cost(program, array, *body, 0)))
            }
            _ => None,
        })
        .filter(|(var, _)| added.contains(var) && reads.get(var) == Some(&1))
        .collect()
}

/// An index function the fuser can inline: scalar `prim`s, copies and `index`es of scalars.
pub fn is_scalar_code(program: &Program, block: BlockId) -> bool {
    let block = &program.blocks[block];
    block.stmts.iter().all(|stmt| {
        let scalar_binders = stmt
            .binders
            .iter()
            .all(|&var| program.var_ty(var).rank() == 0);
        scalar_binders && super::operation(&stmt.expr).scalar_op()
    })
}

impl Batcher<'_> {
    /// Fig 9: build1 k (λi. gather sh t (λis. ix)) ~> gather (k:::sh) (build1 k (λi. t))
    /// (λ(i:::is). i ::: ix); the same for scatter.
    pub(crate) fn batch_gather_scatter(
        &mut self,
        is_gather: bool,
        shape: &[usize],
        array: Atom,
        body: BlockId,
        binder: VarId,
    ) -> Status {
        let array_status = self.status(array);
        let source = match (is_gather, array_status) {
            (true, Status::Unbatched(atom)) => (atom, false),
            (_, status) => (Atom::Var(self.force(status)), true),
        };
        let lambda = self.rebase_lambda(body);
        let batch = self.program.blocks[lambda].params[0];
        if source.1 {
            self.program.blocks[lambda]
                .results
                .insert(0, Atom::Var(batch));
        }
        let mut new_shape = vec![self.size];
        new_shape.extend(shape);
        let (ty, hint) = self.batched_binder(binder);
        let expr = if is_gather {
            Expr::from(Gather {
                shape: new_shape,
                array: source.0,
                body: lambda,
            })
        } else {
            Expr::from(Scatter {
                shape: new_shape,
                array: source.0,
                body: lambda,
            })
        };
        Status::Batched(self.emit1(expr, ty, &hint))
    }
}

impl Builder<'_> {
    /// Gather and scatter are each other's transposes ([Smeding25] §6.3): the transpose of one
    /// (`is_gather` says which) is the other with the same index function.
    pub(crate) fn transpose_gather_scatter(
        &mut self,
        is_gather: bool,
        array: Atom,
        body: BlockId,
        ct: Atom,
        cts: &mut HashMap<VarId, Atom>,
    ) {
        self.add_transposed(cts, array, |program, ty| {
            let shape = ty.shape.clone();
            let body = clone_block(program, body, &mut HashMap::new());
            if is_gather {
                Expr::from(Scatter {
                    shape,
                    array: ct,
                    body,
                })
            } else {
                Expr::from(Gather {
                    shape,
                    array: ct,
                    body,
                })
            }
        });
    }
}

/// An index function's results as exact index values of its params, which range over
/// `0..points[axis]` (`IndexValue::of_prim`: no step wraps around its type); `None` when one
/// is not such a value.
pub fn index_values(program: &Program, body: BlockId, points: &[usize]) -> Option<Vec<IndexValue>> {
    let block = &program.blocks[body];
    let mut env: HashMap<VarId, IndexValue> = (block.params.iter().enumerate())
        .map(|(axis, &param)| (param, IndexValue::Affine(Affine::axis(axis))))
        .collect();
    let value = |atom: &Atom, env: &HashMap<VarId, IndexValue>| match atom {
        Atom::Lit(_) => (atom.int_literal()).map(|c| IndexValue::Affine(Affine::constant(c))),
        Atom::Var(var) => env.get(var).cloned(),
    };
    for stmt in &block.stmts {
        let (Some(StraightLine::Apply(prim, args)), [binder]) =
            (straight_line(&stmt.expr), &stmt.binders[..])
        else {
            return None;
        };
        let operands: Vec<Option<IndexValue>> = args.iter().map(|arg| value(arg, &env)).collect();
        let operands: Vec<Option<&IndexValue>> = operands.iter().map(Option::as_ref).collect();
        let elem = program.var_ty(*binder).elem;
        env.insert(*binder, IndexValue::of_prim(prim, &operands, elem, points)?);
    }
    block.results.iter().map(|atom| value(atom, &env)).collect()
}

/// A result of an index function that is read from a table at the point itself
/// (`point_reads`): the table, and whether the read is cast to `i64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointRead {
    pub table: VarId,
    pub cast: bool,
}

/// An index function each of whose results is read from a table at the point itself
/// (`λ[i…]. cast_i64 (index t [i…])`: how a scatter or gather at data indices gets them, a
/// histogram's bins or an embedding's token ids), so that the tables are the indices and
/// nothing needs to run: every table its statements read and how each result is read.
/// `None` for any other function (every statement must be such a read or its cast).
pub fn point_reads(program: &Program, body: BlockId) -> Option<(Vec<VarId>, Vec<PointRead>)> {
    let block = &program.blocks[body];
    let params: Vec<Atom> = block.params.iter().map(|&p| Atom::Var(p)).collect();
    let bound_by = |atom: &Atom| {
        let Atom::Var(var) = atom else { return None };
        block.stmts.iter().find(|stmt| stmt.binders == [*var])
    };
    let table_read = |stmt: &Stmt| match super::operation(&stmt.expr).element()? {
        Element::Indexed {
            array: Atom::Var(table),
            index,
        } if *index == params => Some(table),
        _ => None,
    };
    // `cast_i64` of such a read: the table read.
    let cast_read = |stmt: &Stmt| match straight_line(&stmt.expr)? {
        StraightLine::Apply(Prim::Cast(Elem::I64), operands) => table_read(bound_by(&operands[0])?),
        _ => None,
    };
    let tables = (block.stmts.iter())
        .map(|stmt| table_read(stmt).or_else(|| cast_read(stmt)))
        .collect::<Option<Vec<VarId>>>()?;
    let reads = (block.results.iter())
        .map(|result| {
            let stmt = bound_by(result)?;
            let (table, cast) = match cast_read(stmt) {
                Some(table) => (table, true),
                None => (table_read(stmt)?, false),
            };
            Some(PointRead { table, cast })
        })
        .collect::<Option<Vec<PointRead>>>()?;
    Some((tables, reads))
}

/// How a scatter's target coordinate `result` determines one of its params, `param`, given
/// the params no result determines (the summed ones): the coordinate is
/// `sign · param + Σ coeff · summed + constant`, taken modulo `period` where there is one
/// (then with no summed term).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pivot {
    pub param: usize,
    pub sign: i64,
    pub constant: i64,
    pub period: Option<i64>,
    pub summed: Vec<(usize, i64)>,
}

/// How a scatter's target coordinate is solved (`pivots`): it determines a param, or it is
/// a constant, the same for every point (the transpose of reading `w[l, 0, k]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Solved {
    Pivot(Pivot),
    Fixed(i64),
}

/// Solves an index function for its params, one per result ([Smeding25] §6.3 transposes a
/// scatter into a gather only for a permutation; this is the shifted-sum generalisation):
/// each result is exact affine in the params (`index_values`) and is a constant or has a
/// pivot, a param with coefficient ±1 there and in no other result (of the candidates, the
/// one with the most points, so that the rest, summed, are few); a result taken modulo a
/// period must be a rotation of its pivot alone, no longer than the period. Every param that
/// is no pivot is summed: the scatter adds, at a target, the source at every value of the
/// summed params with the pivots solved from the target (`x[i + a]`'s transpose is
/// `Σ_a ct[j − a, a]`), which is a gather over the summed params and the target, then sums
/// (`simp`'s ScatterAsGather). With no summed param the index function is a signed
/// permutation onto the targets whose constant coordinates it names: the scatter sends
/// distinct points to distinct elements, and the gather needs no sum.
pub fn pivots(program: &Program, body: BlockId, points: &[usize]) -> Option<Vec<Solved>> {
    let values = index_values(program, body, points)?;
    let uses = |param: usize| {
        (values.iter())
            .filter(|value| value.parts().0.coeff(param) != 0)
            .count()
    };
    values
        .iter()
        .map(|value| {
            let (affine, period) = value.parts();
            if affine.terms.is_empty() && period.is_none() {
                return Some(Solved::Fixed(affine.constant));
            }
            let &(param, sign) = (affine.terms.iter())
                .filter(|&&(param, coeff)| coeff.abs() == 1 && uses(param) == 1)
                .max_by_key(|&&(param, _)| points[param])?;
            let summed: Vec<(usize, i64)> = (affine.terms.iter().copied())
                .filter(|&(other, _)| other != param)
                .collect();
            let wraps = |period: i64| !summed.is_empty() || points[param] as i64 > period;
            if period.is_some_and(wraps) {
                return None;
            }
            Some(Solved::Pivot(Pivot {
                param,
                sign,
                constant: affine.constant,
                period,
                summed,
            }))
        })
        .collect()
}

/// Whether an index function reads each element at most once over `points`: its params are
/// determined by its results, found by elimination (a result whose params are all determined
/// but one, with coefficient ±1 and no period shorter than its range, determines that one).
/// A reversal, a shift, and the gathers of `pivots` (`ct[j − a, a]`) are.
pub fn is_injective(program: &Program, body: BlockId, points: &[usize]) -> bool {
    let Some(values) = index_values(program, body, points) else {
        return false;
    };
    let mut known = vec![false; points.len()];
    let mut progress = true;
    while progress {
        progress = false;
        for value in &values {
            let (affine, period) = value.parts();
            let unknown: Vec<&(usize, i64)> = (affine.terms.iter())
                .filter(|&&(param, _)| !known[param])
                .collect();
            if let [&(param, coeff)] = unknown[..] {
                // A rotation of the param alone, no longer than its period.
                let rotation =
                    |period: i64| affine.terms.len() == 1 && points[param] as i64 <= period;
                if coeff.abs() == 1 && period.is_none_or(rotation) {
                    known[param] = true;
                    progress = true;
                }
            }
        }
    }
    known.iter().all(|&known| known)
}

impl Scatter {
    /// Whether its index function returns each of its params as a coordinate: distinct
    /// points then go to distinct elements.
    pub(crate) fn returns_its_params(&self, program: &Program) -> bool {
        let block = &program.blocks[self.body];
        (block.params.iter()).all(|param| block.results.contains(&Atom::Var(*param)))
    }

    /// Whether its index function's first result is its first param: each point goes to the
    /// row its first index names.
    pub(crate) fn keeps_first_index(&self, program: &Program) -> bool {
        let index_fn = &program.blocks[self.body];
        match (index_fn.params.first(), index_fn.results.first()) {
            (Some(param), Some(Atom::Var(result))) => param == result,
            _ => false,
        }
    }
}

/// index (gather (k:sh) t f) (u:ix') ~> index (gather sh t (λis. f (u:is))) ix', for u in
/// range; and index (gather [] t (λ[]. ix)) ix' ~> index t (ix ++ ix') (Note [Pushing index
/// down] in `ops::build`).
pub fn push_into_gather(
    cx: &mut super::build::IndexPush,
    shape: &[usize],
    inner: Atom,
    body: BlockId,
    index: &[Atom],
) -> Option<Expr> {
    if !(shape.is_empty() || cx.in_range(&index[0], shape[0])) {
        return None;
    }
    let old = cx.program.blocks[body].clone();
    if old.params.len() <= 1 {
        // No gather axis is left: read the source directly.
        let mut subst: HashMap<VarId, Atom> = HashMap::new();
        let mut rest_index = index;
        if let Some(param) = old.params.first() {
            subst.insert(*param, index[0]);
            rest_index = &index[1..];
        }
        for old_stmt in &old.stmts {
            let copied = crate::core::inline::copy_stmt(cx.program, old_stmt, &mut subst);
            cx.out.push(copied);
        }
        let mut joined: Vec<Atom> = old
            .results
            .iter()
            .map(|atom| crate::core::inline::rename(*atom, &subst))
            .collect();
        joined.extend(rest_index);
        return Some(Expr::from(Index {
            array: inner,
            index: joined,
        }));
    }
    let mut subst: HashMap<VarId, Atom> = HashMap::new();
    subst.insert(old.params[0], index[0]);
    let params: Vec<VarId> = old.params[1..]
        .iter()
        .map(|param| {
            let new = cx.program.new_var(cx.program.var_ty(*param).clone(), "i");
            subst.insert(*param, Atom::Var(new));
            new
        })
        .collect();
    let lambda = cx.program.new_block();
    cx.program.blocks[lambda].params = params;
    crate::core::inline::copy_stmts(cx.program, &old.stmts, lambda, &mut subst);
    cx.program.blocks[lambda].results = old
        .results
        .iter()
        .map(|atom| crate::core::inline::rename(*atom, &subst))
        .collect();
    let elem = cx.program.atom_ty(&inner).elem;
    let rest = shape[1..].to_vec();
    let gathered = cx.emit(
        Expr::from(Gather {
            shape: rest.clone(),
            array: inner,
            body: lambda,
        }),
        ArrTy::new(rest, elem),
        "gather",
    );
    Some(Expr::from(Index {
        array: gathered,
        index: index[1..].to_vec(),
    }))
}

impl Operation for Gather {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        Ok(vec![gather_ty(
            program,
            &self.shape,
            &self.array,
            self.body,
        )?])
    }

    fn eval(&self, interp: &mut Interp, stmt: &Stmt) -> Res<Vec<Array>> {
        let reader = Interp::reader(stmt);
        Ok(vec![interp.eval_gather(
            &self.shape,
            &self.array,
            self.body,
            reader,
        )?])
    }

    fn batch(&self, batcher: &mut Batcher, stmt: &Stmt) {
        let status =
            batcher.batch_gather_scatter(true, &self.shape, self.array, self.body, stmt.binders[0]);
        batcher.bind_one(stmt, status);
    }

    fn jvp(&self, builder: &mut Builder, stmt: &Stmt, tangents: &mut Derivs) -> AdResult {
        ad::jvp_structural(builder, stmt, tangents)
    }

    fn transpose(&self, builder: &mut Builder, stmt: &Stmt, cts: &mut Derivs) -> AdResult {
        if let Some(ct) = ad::result_ct(stmt, cts) {
            builder.transpose_gather_scatter(true, self.array, self.body, ct, cts);
        }
        Ok(())
    }

    fn cost(&self, program: &Program, result_elems: u64) -> u64 {
        gather_cost(program, &self.shape, self.body, result_elems)
    }

    fn linearity(&self) -> Linearity {
        Linearity::Structural(vec![true])
    }

    fn fusion_class(&self, program: &Program) -> FusionClass {
        gather_fusion_class(program, self.body)
    }

    fn run(&self, cx: &mut dyn Bulk) -> Ran {
        cx.per_point()?;
        cx.gather(&self.shape, &self.array, self.body)
    }

    /// `stablehlo.gather` of the index function's results over the grid of its params.
    fn export(&self, cx: &mut dyn StableHlo, _: &Stmt) -> Exported {
        let source = cx.atom(&self.array)?;
        let n_params = cx.program().blocks[self.body].params.len();
        let grid = self.shape[..n_params].to_vec();
        let indices = cx.index_function(self.body, &grid)?;
        Ok(vec![gather_rows(cx, &source, &indices, &grid)])
    }

    /// 2 (the index function may read an element many times; an estimate) unless the index
    /// function reads each element at most once (a reversal, a shift, a transposed stencil).
    fn recompute_factor(&self, program: &Program) -> usize {
        let points = self.shape.get(..program.blocks[self.body].params.len());
        let once = points.is_some_and(|points| is_injective(program, self.body, points));
        if once {
            1
        } else {
            2
        }
    }

    /// The index function ranges over the leading axes of the result.
    fn index_param_bounds(&self, _: &Program) -> Vec<usize> {
        self.shape.clone()
    }

    fn push_index(&self, cx: &mut IndexPush, _: VarId, index: &[Atom]) -> Option<Expr> {
        push_into_gather(cx, &self.shape, self.array, self.body, index)
    }

    fn element(&self) -> Option<Element<'_>> {
        Some(Element::Gathered {
            array: self.array,
            index_fn: self.body,
        })
    }

    /// It moves its operand's elements; its reads out of range are `+0`.
    fn sign_clear(&self, clear: &mut dyn FnMut(&Atom) -> bool) -> bool {
        clear(&self.array)
    }

    /// A gather whose index function only permutes its indices within bounds is a `tr`
    /// ([HuotShaikhha] Fig 12, [Shaikhha23] Fig 8).
    fn simplify(&self, cx: &Rewrite) -> Option<(Rule, Expr)> {
        let perm = permutation_gather(cx.program, &self.shape, self.array, self.body)?;
        Some((
            Rule::PermutationGather,
            Expr::from(Transpose {
                perm,
                array: self.array,
            }),
        ))
    }

    /// Its index function computes indices, not array elements.
    fn nests(&self) -> bool {
        false
    }
}

impl Operation for Scatter {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        Ok(vec![scatter_ty(
            program,
            &self.shape,
            &self.array,
            self.body,
        )?])
    }

    fn eval(&self, interp: &mut Interp, _: &Stmt) -> Res<Vec<Array>> {
        Ok(vec![interp.eval_scatter(
            &self.shape,
            &self.array,
            self.body,
        )?])
    }

    fn batch(&self, batcher: &mut Batcher, stmt: &Stmt) {
        let status = batcher.batch_gather_scatter(
            false,
            &self.shape,
            self.array,
            self.body,
            stmt.binders[0],
        );
        batcher.bind_one(stmt, status);
    }

    fn jvp(&self, builder: &mut Builder, stmt: &Stmt, tangents: &mut Derivs) -> AdResult {
        ad::jvp_structural(builder, stmt, tangents)
    }

    fn transpose(&self, builder: &mut Builder, stmt: &Stmt, cts: &mut Derivs) -> AdResult {
        if let Some(ct) = ad::result_ct(stmt, cts) {
            builder.transpose_gather_scatter(false, self.array, self.body, ct, cts);
        }
        Ok(())
    }

    fn cost(&self, program: &Program, result_elems: u64) -> u64 {
        scatter_cost(program, &self.array, self.body, result_elems)
    }

    fn linearity(&self) -> Linearity {
        Linearity::Structural(vec![true])
    }

    fn fusion_class(&self, _: &Program) -> FusionClass {
        FusionClass::Bulk
    }

    fn run(&self, cx: &mut dyn Bulk) -> Ran {
        cx.per_point()?;
        cx.scatter(&self.shape, &self.array, self.body)
    }

    /// A scatter of a scatter is one; a scatter of each point to a target of its own is a
    /// `reshape` or a `gather` (`simplify`).
    fn expand(&self, cx: &mut Expand, stmt: &Stmt) -> Option<Expansion> {
        simplify::expand(cx, self, stmt)
    }

    /// `stablehlo.scatter` with an `add` body, the index function evaluated over the grid of
    /// the source's leading axes.
    fn export(&self, cx: &mut dyn StableHlo, _: &Stmt) -> Exported {
        let source = cx.atom(&self.array)?;
        let n_params = cx.program().blocks[self.body].params.len();
        let grid = source.ty.shape[..n_params].to_vec();
        let indices = cx.index_function(self.body, &grid)?;
        Ok(vec![scatter_rows(cx, &source, &indices, &self.shape)?])
    }

    /// The index function ranges over the leading axes of the source.
    fn index_param_bounds(&self, program: &Program) -> Vec<usize> {
        program.atom_ty(&self.array).shape
    }

    /// It sums its operand's elements; its untouched elements are `+0`.
    fn sign_clear(&self, clear: &mut dyn FnMut(&Atom) -> bool) -> bool {
        clear(&self.array)
    }

    /// Its index function computes indices, not array elements.
    fn nests(&self) -> bool {
        false
    }
}

/// The permutation of a `gather` that is a `tr`: its index function returns its own
/// parameters, each once, and every index is in range (`shape` matches the permuted axes).
fn permutation_gather(
    program: &Program,
    shape: &[usize],
    array: Atom,
    body: BlockId,
) -> Option<Vec<usize>> {
    let block = &program.blocks[body];
    let rank = block.params.len();
    if !block.stmts.is_empty() || block.results.len() != rank || rank == 0 {
        return None;
    }
    // results[j] = params[sigma[j]]: source axis j is read at result axis sigma[j], so
    // result axis sigma[j] is source axis j: perm[sigma[j]] = j.
    let mut perm = vec![usize::MAX; rank];
    for (source_axis, result) in block.results.iter().enumerate() {
        let Atom::Var(var) = result else { return None };
        let result_axis = block.params.iter().position(|param| param == var)?;
        if perm[result_axis] != usize::MAX {
            return None;
        }
        perm[result_axis] = source_axis;
    }
    let source = program.atom_ty(&array).shape;
    let in_range = (0..rank).all(|axis| shape[axis] == source[perm[axis]]);
    in_range.then_some(perm)
}

/// Where every index is in range (`0 ≤ ix < size` of its axis of `shape`), and the
/// indices stacked along a last axis with out-of-range ones replaced by zero.
fn checked_indices(
    cx: &mut dyn StableHlo,
    indices: &[Val],
    shape: &[usize],
    grid: &[usize],
) -> (Val, Val) {
    let mut valid: Option<Val> = None;
    let mut columns = Vec::new();
    for (axis, index) in indices.iter().enumerate() {
        let zero = cx.splat(Scalar::I64(0), grid);
        let size = cx.splat(Scalar::I64(shape[axis] as i64), grid);
        let low = cx.compare("GE", index, &zero);
        let high = cx.compare("LT", index, &size);
        let both = cx.op("stablehlo.and", &[&low, &high], "", low.ty.clone());
        valid = Some(match valid {
            None => both,
            Some(previous) => cx.op("stablehlo.and", &[&previous, &both], "", both.ty.clone()),
        });
        let mut column_shape = grid.to_vec();
        column_shape.push(1);
        let column = cx.op(
            "stablehlo.reshape",
            &[index],
            "",
            ArrTy::new(column_shape, Elem::I64),
        );
        columns.push(column);
    }
    let valid = valid.unwrap_or_else(|| cx.splat(Scalar::Bool(true), grid));
    let mut stacked_shape = grid.to_vec();
    stacked_shape.push(indices.len());
    let stacked_ty = ArrTy::new(stacked_shape.clone(), Elem::I64);
    let refs: Vec<&Val> = columns.iter().collect();
    let stacked = match refs.as_slice() {
        [single] => (*single).clone(),
        _ => cx.op(
            "stablehlo.concatenate",
            &refs,
            &format!("{{dimension = {} : i64}}", grid.len()),
            stacked_ty.clone(),
        ),
    };
    let mask = cx.broadcast_trailing(&valid, &stacked_shape);
    let zero = cx.zeros(&stacked_ty);
    let safe = cx.select(&mask, &stacked, &zero);
    (valid, safe)
}

/// `source[indices…]` for every point of `grid` (each index a tensor of shape `grid`,
/// indexing the leading axes of `source`): shape `grid ++ source.shape[indices.len()..]`,
/// zero where an index is out of range.
pub(crate) fn gather_rows(
    cx: &mut dyn StableHlo,
    source: &Val,
    indices: &[Val],
    grid: &[usize],
) -> Val {
    let n_indexed = indices.len();
    let rank = source.ty.rank();
    if n_indexed == 0 {
        return cx.broadcast_leading(source, grid);
    }
    let k = grid.len();
    let mut shape = grid.to_vec();
    shape.extend_from_slice(&source.ty.shape[n_indexed..]);
    let ty = ArrTy::new(shape.clone(), source.ty.elem);
    if source.ty.shape[..n_indexed].contains(&0) {
        // Every read is out of range (and XLA rejects slices of an empty axis).
        return cx.zeros(&ty);
    }
    let (valid, safe) = checked_indices(cx, indices, &source.ty.shape, grid);
    let offset_dims: Vec<usize> = (k..k + rank - n_indexed).collect();
    let indexed: Vec<usize> = (0..n_indexed).collect();
    let mut slice_sizes = vec![1; n_indexed];
    slice_sizes.extend_from_slice(&source.ty.shape[n_indexed..]);
    let attrs = format!(
        "{{dimension_numbers = #stablehlo.gather<{}>, indices_are_sorted = false, \
         slice_sizes = {}}}",
        dimension_fields(
            &[
                ("offset_dims", &offset_dims),
                ("collapsed_slice_dims", &indexed),
                ("start_index_map", &indexed),
            ],
            k
        ),
        i64_array(&slice_sizes)
    );
    let gathered = cx.op("stablehlo.gather", &[source, &safe], &attrs, ty.clone());
    let mask = cx.broadcast_trailing(&valid, &shape);
    let zero = cx.zeros(&ty);
    cx.select(&mask, &gathered, &zero)
}

/// Adds each row of `source` (its leading `grid` axes; one index tensor of that shape per
/// indexed axis of the result) into a zero array of shape `shape`; out-of-range rows add
/// nothing.
fn scatter_rows(
    cx: &mut dyn StableHlo,
    source: &Val,
    indices: &[Val],
    shape: &[usize],
) -> Result<Val, ExportError> {
    let n_indexed = indices.len();
    let k = source.ty.rank() - (shape.len() - n_indexed);
    let grid = source.ty.shape[..k].to_vec();
    if n_indexed == 0 {
        let axes: Vec<usize> = (0..k).collect();
        return cx.reduce_sum(source, &axes);
    }
    let ty = ArrTy::new(shape.to_vec(), source.ty.elem);
    if shape[..n_indexed].contains(&0) || source.ty.shape.contains(&0) {
        // Every write is out of range, or there is nothing to write.
        return Ok(cx.zeros(&ty));
    }
    let (valid, safe) = checked_indices(cx, indices, shape, &grid);
    let mask = cx.broadcast_trailing(&valid, &source.ty.shape);
    let zero_updates = cx.zeros(&source.ty);
    let updates = cx.select(&mask, source, &zero_updates);
    let operand = cx.zeros(&ty);
    let scalar = ArrTy::scalar(ty.elem);
    let body = cx.region(&[scalar.clone(), scalar], &mut |cx, args| {
        Ok(vec![cx.binary("add", &args[0], &args[1])])
    })?;
    let window: Vec<usize> = (k..source.ty.rank()).collect();
    let indexed: Vec<usize> = (0..n_indexed).collect();
    let attrs = format!(
        "{{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<{}>, \
         unique_indices = false}}",
        dimension_fields(
            &[
                ("update_window_dims", &window),
                ("inserted_window_dims", &indexed),
                ("scatter_dims_to_operand_dims", &indexed),
            ],
            k
        )
    );
    let mut results = cx.op_with_regions(
        "stablehlo.scatter",
        &[&operand, &safe, &updates],
        &attrs,
        vec![body],
        vec![ty],
    );
    Ok(results.remove(0))
}

/// The fields of `#stablehlo.gather<…>` / `#stablehlo.scatter<…>`: empty lists are left out
/// (as MLIR prints them), `index_vector_dim` last.
fn dimension_fields(fields: &[(&str, &Vec<usize>)], index_vector_dim: usize) -> String {
    let mut parts: Vec<String> = fields
        .iter()
        .filter(|(_, values)| !values.is_empty())
        .map(|(name, values)| format!("{name} = {}", list(values)))
        .collect();
    parts.push(format!("index_vector_dim = {index_vector_dim}"));
    parts.join(", ")
}
