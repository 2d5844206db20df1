//! `reduce`, `assoc_scan` and `assoc_scan_right` over a user monoid ([Paszke21] §2): every rule
//! of the `Expr::Monoid` family in one place.
//!
//! - type rule: `result_tys` (called by `ops::verify`);
//! - reference evaluation in the fixed order of Note [Monoid order]: `eval`, used by the
//!   reference interpreter (the engine's `exec::monoid` computes the same bits on typed lanes,
//!   in parallel);
//! - batching ([Smeding25] Fig 9 read for a reduction): `Batcher::batch_monoid`;
//! - JVP ([Paszke21] §3.2, Thm 3.3) and transpose (§3.3, Thm 3.7, Eqs 11–12): `jvp_monoid`
//!   and `transpose_monoid` in `ops::ad`'s builder, defined here;
//! - cost: `cost` (and a level of nesting in `ops::cost::nesting_depth`);
//! - export: `export::monoid` (`stablehlo.reduce` for a commutative operator, otherwise trees
//!   of depth O(log n) of slices and the operator lifted to arrays; no sequential loop) (its
//!   `is_commutative` a symbolic check of the operator).
//!
//! The operator block `op` is closed straight-line scalar code (copies and elementwise
//! primitives): its params are the left operands then the right ones, its results the
//! combined values. On arrays of rank > 1 it applies elementwise over the trailing axes.
//!
//! Lowering if-converts an operator's conditionals (`cond::if_convert_all`). A `reduce` over a
//! `selection` (`max`/`min`) is a reducing kernel fused with its producer
//! (`ops::reduction_of`), and its tangent the mean of the tangents of the selected rows
//! (`selected_tangent`), transposed by the generic rules. Does not handle yet: fusing other monoid statements with their
//! producers (they are bulk steps of the engine, over materialised arrays).

mod export;

use std::collections::HashSet;

use super::batch::Batcher;
use super::bulk::{Bulk, Ran};
use super::hlo::{Exported, StableHlo};
use super::interp::{Interp, Res};
use super::{Element, FusionClass, Linearity, Operation, StraightLine};
use crate::core::ir::{
    ArrTy, Atom, BlockId, Expr, Gather, Iota, Monoid, MonoidKind, PrimApp, Program, Scalar,
    SumOuter, Transpose,
};
use crate::core::kernel::Reduction;
use crate::core::value::{Array, ArrayData};
use crate::core::visit::{collect_expr_uses, var_of};
use crate::ops::interp::InterpError;
use crate::ops::scalar_code::{self, ScalarCode};
use crate::prim::Prim;

/// Rows of one chunk of Note [Monoid order].
pub const CHUNK_ROWS: usize = 1024;

// Note [Monoid order]
// ~~~~~~~~~~~~~~~~~~~
// A float operator is associative only up to rounding, so the order in which a monoid
// operation combines its elements is part of dx's semantics, fixed here once for the
// reference interpreter and the engine: the rows are cut into chunks of `CHUNK_ROWS`
// (independent of the number of threads), and
//
// - `reduce`: each chunk is folded from the left starting with its first element, then the
//   chunk totals are folded from the left. An empty array gives the identity `e`.
// - `assoc_scan`: (1) each chunk's total as for `reduce`; (2) the carry into chunk c is the
//   left fold of the totals of chunks 0..c (none for chunk 0); (3) each chunk is scanned from
//   the left starting from `carry ⊙ first element` (reduce chunks, scan the chunk totals,
//   rescan the chunks).
// - `assoc_scan_right`: the mirror image: chunk totals folded from the right, the carry into
//   chunk c is the right fold of the totals of the chunks after it, and each chunk is scanned
//   from the right starting from `last element ⊙ carry`.
//
// Steps (1) and (3) run in parallel over chunks; step (2) is sequential over the chunk
// totals (n / 1024 applications). The identity is used only for empty arrays, so an
// operator with a one-sided identity (the ⊗ of [Paszke21] Thm 3.7, a right monoid, scanned
// right) is evaluated correctly.

/// The binder types of a monoid statement, or what is wrong with it.
pub fn result_tys(
    program: &Program,
    kind: MonoidKind,
    arrays: &[Atom],
    init: &[Atom],
    op: BlockId,
) -> Result<Vec<ArrTy>, String> {
    let name = kind.name();
    if arrays.is_empty() || arrays.len() != init.len() {
        return Err(format!(
            "{name} over {} arrays with {} initial values",
            arrays.len(),
            init.len()
        ));
    }
    let array_tys: Vec<ArrTy> = arrays.iter().map(|atom| program.atom_ty(atom)).collect();
    let shape = array_tys[0].shape.clone();
    if shape.is_empty() {
        return Err(format!("{name} of a rank-0 array"));
    }
    let rest = shape[1..].to_vec();
    for (ty, e) in array_tys.iter().zip(init) {
        if ty.shape != shape {
            return Err(format!(
                "{name}: arrays of different shapes {:?} and {:?}",
                shape, ty.shape
            ));
        }
        let e_ty = program.atom_ty(e);
        if e_ty != ArrTy::new(rest.clone(), ty.elem) {
            return Err(format!(
                "{name}: the identity has type {}{:?}, not {}{:?}",
                e_ty.elem.name(),
                e_ty.shape,
                ty.elem.name(),
                rest
            ));
        }
    }
    let Some(block) = program.blocks.get(op) else {
        return Err(format!("{name}: {op} is out of range"));
    };
    let k = arrays.len();
    let operand_tys: Vec<ArrTy> = array_tys
        .iter()
        .chain(&array_tys)
        .map(|ty| ArrTy::scalar(ty.elem))
        .collect();
    let param_tys: Vec<ArrTy> = block
        .params
        .iter()
        .filter_map(|param| program.vars.get(*param).map(|info| info.ty.clone()))
        .collect();
    if param_tys != operand_tys {
        return Err(format!(
            "{name}: the operator takes {} params, not the left then the right scalar operands",
            block.params.len()
        ));
    }
    let result_tys: Vec<ArrTy> = block
        .results
        .iter()
        .map(|atom| program.atom_ty(atom))
        .collect();
    if result_tys != operand_tys[..k] {
        return Err(format!(
            "{name}: the operator's results are not one scalar per operand"
        ));
    }
    check_op_block(program, op).map_err(|why| format!("{name}: {why}"))?;
    Ok(array_tys
        .into_iter()
        .map(|ty| match kind {
            MonoidKind::Reduce => ArrTy::new(rest.clone(), ty.elem),
            MonoidKind::Scan | MonoidKind::ScanRight => ty,
        })
        .collect())
}

/// Whether an operator selects one of its operands by comparison: one component, its body
/// `max l r` or `min l r` of its left and right params in that order (the prelude's
/// `maximum` and `minimum`). A `reduce` over it fuses with its producer as a reducing kernel
/// (`ops::reduction_of`), folded in any order (float `max`/`min` are exactly associative and
/// commutative, Note [Float selections] in `prim::arith`); its tangent is shared evenly among
/// the selected elements (`jvp_monoid`), as JAX's `max` does.
pub fn selection(program: &Program, op: BlockId) -> Option<Reduction> {
    let block = &program.blocks[op];
    let ([left, right], [stmt], [Atom::Var(result)]) =
        (&block.params[..], &block.stmts[..], &block.results[..])
    else {
        return None;
    };
    let Some(Element::Apply(prim, operands)) = super::operation(&stmt.expr).element() else {
        return None;
    };
    let reduction = match prim {
        Prim::Max => Reduction::Max,
        Prim::Min => Reduction::Min,
        _ => return None,
    };
    (operands[..] == [Atom::Var(*left), Atom::Var(*right)] && stmt.binders[..] == [*result])
        .then_some(reduction)
}

/// An operator block must be closed straight-line scalar code.
pub(crate) fn check_op_block(program: &Program, op: BlockId) -> Result<(), String> {
    let block = &program.blocks[op];
    let mut defined: std::collections::HashSet<_> = block.params.iter().copied().collect();
    let check_atom = |atom: &Atom, defined: &std::collections::HashSet<_>| match atom {
        Atom::Var(var) if !defined.contains(var) => Err(format!(
            "the operator must be closed, but it uses a value from outside it ({var})"
        )),
        _ => Ok(()),
    };
    for stmt in &block.stmts {
        if super::straight_line(&stmt.expr).is_none() {
            return Err(format!(
                "the operator must be straight-line scalar code, not `{}`",
                crate::core::print::expr_name(&stmt.expr)
            ));
        }
        for atom in crate::core::visit::expr_atoms(&stmt.expr) {
            check_atom(&atom, &defined)?;
        }
        for binder in &stmt.binders {
            if program
                .vars
                .get(*binder)
                .is_some_and(|info| info.ty.rank() != 0)
            {
                return Err(format!("the operator computes the non-scalar {binder}"));
            }
            defined.insert(*binder);
        }
    }
    for atom in &block.results {
        check_atom(atom, &defined)?;
    }
    Ok(())
}

/// `out = left ⊙ right` by the compiled operator on `Scalar`s; `regs` is scratch space.
fn apply(
    code: &ScalarCode,
    regs: &mut [Scalar],
    left: &[Scalar],
    right: &[Scalar],
    out: &mut [Scalar],
) {
    let k = left.len();
    regs[..k].copy_from_slice(left);
    regs[k..2 * k].copy_from_slice(right);
    let Ok(()) = code.eval(regs, |_, _| -> Result<Scalar, std::convert::Infallible> {
        unreachable!("a monoid operator reads no tables")
    });
    for (slot, result) in out.iter_mut().zip(&code.results) {
        *slot = scalar_code::value(regs, result);
    }
}

/// The inputs of one evaluation: `k` components of `n` rows of `m` lanes.
struct Inputs<'a> {
    op: &'a ScalarCode,
    comps: Vec<Vec<Scalar>>,
    n_lanes: usize,
}

impl Inputs<'_> {
    fn element(&self, row: usize, lane: usize, out: &mut [Scalar]) {
        let flat = row * self.n_lanes + lane;
        for (slot, comp) in out.iter_mut().zip(&self.comps) {
            *slot = comp[flat];
        }
    }

    /// The fold of rows `rows` at one lane, from the left (or from the right when
    /// `from_right`), optionally combined with a carry on the outer side; every partial
    /// result goes to `each` (row, value).
    fn fold(
        &self,
        rows: std::ops::Range<usize>,
        lane: usize,
        carry: Option<&[Scalar]>,
        from_right: bool,
        mut each: impl FnMut(usize, &[Scalar]),
    ) -> Vec<Scalar> {
        let k = self.comps.len();
        let mut regs = self.op.scalar_regs();
        let mut acc = vec![Scalar::Bool(false); k];
        let mut item = vec![Scalar::Bool(false); k];
        let mut next = vec![Scalar::Bool(false); k];
        let order: Box<dyn Iterator<Item = usize>> = if from_right {
            Box::new(rows.rev())
        } else {
            Box::new(rows)
        };
        for (position, row) in order.enumerate() {
            self.element(row, lane, &mut item);
            match (position, carry) {
                (0, None) => acc.copy_from_slice(&item),
                (0, Some(carry)) if from_right => apply(self.op, &mut regs, &item, carry, &mut acc),
                (0, Some(carry)) => apply(self.op, &mut regs, carry, &item, &mut acc),
                _ => {
                    if from_right {
                        apply(self.op, &mut regs, &item, &acc, &mut next);
                    } else {
                        apply(self.op, &mut regs, &acc, &item, &mut next);
                    }
                    std::mem::swap(&mut acc, &mut next);
                }
            }
            each(row, &acc);
        }
        acc
    }
}

/// Evaluates a monoid statement in the order of Note [Monoid order], on `Scalar`s through
/// `Prim::eval` (the reference rule). The interrupt flag is checked once per chunk and lane.
pub fn eval(
    program: &Program,
    kind: MonoidKind,
    arrays: &[Array],
    init: &[Array],
    op: BlockId,
    interrupt: Option<&std::sync::atomic::AtomicBool>,
) -> Result<Vec<Array>, InterpError> {
    let stopped = || interrupt.is_some_and(|flag| flag.load(std::sync::atomic::Ordering::Relaxed));
    let compiled = ScalarCode::operator(program, op);
    let shape = arrays[0].shape.clone();
    let n_rows = shape[0];
    let n_lanes: usize = shape[1..].iter().product();
    let inputs = Inputs {
        op: &compiled,
        comps: arrays
            .iter()
            .map(|array| {
                (0..array.n_elems())
                    .map(|flat| array.data.get(flat))
                    .collect()
            })
            .collect(),
        n_lanes,
    };
    let k = arrays.len();
    let n_chunks = n_rows.div_ceil(CHUNK_ROWS);
    let chunk = |c: usize| c * CHUNK_ROWS..((c + 1) * CHUNK_ROWS).min(n_rows);
    let from_right = kind == MonoidKind::ScanRight;
    // (1) Chunk totals, per lane (nothing more once interrupted).
    let totals: Vec<Vec<Vec<Scalar>>> = (0..n_chunks)
        .map(|c| {
            (0..n_lanes)
                .map_while(|lane| {
                    (!stopped()).then(|| inputs.fold(chunk(c), lane, None, from_right, |_, _| {}))
                })
                .collect()
        })
        .collect();
    if stopped() {
        return Err(InterpError::Interrupted);
    }
    // (2) The totals folded (reduce), or the carry into each chunk (scans).
    let mut regs = compiled.scalar_regs();
    let mut combine = |left: &[Scalar], right: &[Scalar]| {
        let mut out = vec![Scalar::Bool(false); k];
        apply(&compiled, &mut regs, left, right, &mut out);
        out
    };
    let mut carries: Vec<Vec<Option<Vec<Scalar>>>> = vec![vec![None; n_lanes]; n_chunks];
    for lane in 0..n_lanes {
        let mut acc: Option<Vec<Scalar>> = None;
        let order: Vec<usize> = if from_right {
            (0..n_chunks).rev().collect()
        } else {
            (0..n_chunks).collect()
        };
        for c in order {
            carries[c][lane] = acc.clone();
            let total = &totals[c][lane];
            acc = Some(match acc {
                None => total.clone(),
                Some(acc) if from_right => combine(total, &acc),
                Some(acc) => combine(&acc, total),
            });
        }
        // `reduce` keeps its total in the first slot (there is none for an empty array).
        if let (MonoidKind::Reduce, Some(first)) = (kind, carries.first_mut()) {
            first[lane] = acc;
        }
    }
    let elems: Vec<_> = arrays.iter().map(Array::elem).collect();
    if kind == MonoidKind::Reduce {
        return Ok((0..k)
            .map(|comp| {
                let mut data = ArrayData::with_capacity(elems[comp], n_lanes);
                for lane in 0..n_lanes {
                    data.push(match carries.first().and_then(|row| row[lane].as_ref()) {
                        Some(total) => total[comp],
                        None => init[comp].data.get(lane),
                    });
                }
                Array::new(shape[1..].to_vec(), data)
            })
            .collect());
    }
    // (3) Each chunk rescanned from its carry; a chunk's values are [row][lane][comp].
    let scanned: Vec<Vec<Scalar>> = (0..n_chunks)
        .map(|c| {
            let rows = chunk(c);
            let start = rows.start;
            let mut out = vec![Scalar::Bool(false); rows.len() * n_lanes * k];
            for (lane, carry) in carries[c].iter().enumerate() {
                if stopped() {
                    break;
                }
                inputs.fold(
                    rows.clone(),
                    lane,
                    carry.as_deref(),
                    from_right,
                    |row, value| {
                        let at = ((row - start) * n_lanes + lane) * k;
                        out[at..at + k].copy_from_slice(value);
                    },
                );
            }
            out
        })
        .collect();
    if stopped() {
        return Err(InterpError::Interrupted);
    }
    let mut datas: Vec<ArrayData> = elems
        .iter()
        .map(|elem| ArrayData::with_capacity(*elem, n_rows * n_lanes))
        .collect();
    for part in &scanned {
        for item in part.chunks(k) {
            for (data, value) in datas.iter_mut().zip(item) {
                data.push(*value);
            }
        }
    }
    Ok(datas
        .into_iter()
        .map(|data| Array::new(shape.clone(), data))
        .collect())
}

/// Scalar operations of a monoid statement: the operator's statements once per element for
/// `reduce`, twice for the scans (chunk totals, then the rescan).
pub fn cost(program: &Program, kind: MonoidKind, arrays: &[Atom], op: BlockId) -> u64 {
    let n_elems = arrays
        .first()
        .map_or(0, |atom| program.atom_ty(atom).n_elems() as u64);
    let per_element = program.blocks[op].stmts.len().max(1) as u64;
    let passes = match kind {
        MonoidKind::Reduce => 1,
        MonoidKind::Scan | MonoidKind::ScanRight => 2,
    };
    passes * n_elems * per_element
}

// ----- batching -----

impl super::batch::Batcher<'_> {
    /// BOT rule for a monoid statement ([Smeding25] Fig 9 read as batching, like its `sumOuter`
    /// rule): `build1 k (λi. reduce xs e op) ~> reduce (tr (build1 k (λi. xs))) (build1 k
    /// (λi. e)) op`. The batch axis becomes a trailing axis, over which the closed operator
    /// applies elementwise; a scan's result is transposed back to put the batch axis first.
    pub(crate) fn batch_monoid(
        &mut self,
        kind: MonoidKind,
        arrays: &[Atom],
        init: &[Atom],
        op: BlockId,
        binders: &[crate::core::ir::VarId],
    ) {
        let swap = |ty: &ArrTy| {
            let mut shape = ty.shape.clone();
            shape.swap(0, 1);
            ArrTy::new(shape, ty.elem)
        };
        let moved: Vec<Atom> = arrays
            .iter()
            .map(|atom| {
                let bulk = self.force_atom(*atom);
                let ty = swap(self.program.var_ty(bulk));
                let perm = vec![1, 0];
                Atom::Var(self.emit1(
                    Expr::from(Transpose {
                        perm,
                        array: Atom::Var(bulk),
                    }),
                    ty,
                    "tr",
                ))
            })
            .collect();
        let init: Vec<Atom> = init
            .iter()
            .map(|atom| Atom::Var(self.force_atom(*atom)))
            .collect();
        let op = crate::core::inline::clone_block(self.program, op, &mut Default::default());
        let results: Vec<_> = binders
            .iter()
            .map(|binder| {
                let batched = self.batched_ty(self.program.var_ty(*binder));
                let ty = match kind {
                    MonoidKind::Reduce => batched,
                    MonoidKind::Scan | MonoidKind::ScanRight => swap(&batched),
                };
                let hint = self.program.vars[*binder].hint.clone();
                self.program.new_var(ty, &hint)
            })
            .collect();
        self.emit_to(
            self.target,
            results.clone(),
            Expr::from(Monoid {
                kind,
                arrays: moved,
                init,
                op,
            }),
        );
        for (binder, res) in binders.iter().zip(results) {
            let bulk = match kind {
                MonoidKind::Reduce => res,
                MonoidKind::Scan | MonoidKind::ScanRight => {
                    let ty = self.batched_ty(self.program.var_ty(*binder));
                    self.emit1(
                        Expr::from(Transpose {
                            perm: vec![1, 0],
                            array: Atom::Var(res),
                        }),
                        ty,
                        "tr",
                    )
                }
            };
            self.env
                .insert(*binder, super::batch::Status::Batched(bulk));
        }
    }
}

// ----- derivatives -----

use std::collections::HashMap;

use super::ad::{self, tangent_of, AdError, AdResult, Builder, Derivs};
use crate::core::ir::{Block, Stmt, VarId};
use crate::prim::Emitter;

/// The components of a monoid statement that carry tangents: its float arrays.
fn float_components(program: &Program, arrays: &[Atom]) -> Vec<usize> {
    (0..arrays.len())
        .filter(|&comp| program.atom_ty(&arrays[comp]).elem.is_float())
        .collect()
}

/// The number `k` of primal components of a differentiated monoid statement with `n_arrays`
/// arrays (`k` primal ones, then one tangent per float among them; see `jvp_monoid`).
fn n_primal(program: &Program, arrays: &[Atom]) -> usize {
    (1..=arrays.len())
        .find(|&k| k + float_components(program, &arrays[..k]).len() == arrays.len())
        .unwrap_or(arrays.len())
}

/// The statements of `block` (closed straight-line scalar code) applied elementwise to
/// arrays of `shape`: each param is bound by `subst`, each literal becomes a constant array
/// ([Paszke21] Eq 12's `map`, without a `build1`: the operator is elementwise already).
fn lift(
    builder: &mut Builder,
    block: &Block,
    subst: &mut HashMap<VarId, Atom>,
    shape: &[usize],
) -> Result<Vec<Atom>, AdError> {
    let stmts = block.stmts.clone();
    lift_stmts(builder, &stmts, subst, shape)?;
    block
        .results
        .iter()
        .map(|atom| lifted_atom(builder, atom, subst, shape))
        .collect()
}

fn lifted_atom(
    builder: &mut Builder,
    atom: &Atom,
    subst: &HashMap<VarId, Atom>,
    shape: &[usize],
) -> Result<Atom, AdError> {
    match atom {
        Atom::Var(var) => subst
            .get(var)
            .copied()
            .ok_or_else(|| AdError::NoRule(format!("a monoid operator uses {var} from outside"))),
        Atom::Lit(scalar) => Ok(builder.constant_of(*scalar, shape)),
    }
}

fn lift_stmts(
    builder: &mut Builder,
    stmts: &[Stmt],
    subst: &mut HashMap<VarId, Atom>,
    shape: &[usize],
) -> Result<(), AdError> {
    for stmt in stmts {
        let res = match super::straight_line(&stmt.expr) {
            Some(StraightLine::Copy(atom)) => lifted_atom(builder, &atom, subst, shape)?,
            Some(StraightLine::Apply(prim, args)) => {
                let args = args
                    .iter()
                    .map(|atom| lifted_atom(builder, atom, subst, shape))
                    .collect::<Result<Vec<_>, _>>()?;
                builder.prim(prim, &args)
            }
            None => {
                return Err(AdError::NoRule(format!(
                    "a monoid operator's derivative holds `{}`",
                    crate::core::print::expr_name(&stmt.expr)
                )))
            }
        };
        subst.insert(stmt.binders[0], res);
    }
    Ok(())
}

/// The reverse derivative of an operator (`∂ᵀ⊙`, [Paszke21] §3.3), by dx's own AD.
fn operator_vjp(program: &mut Program, op: BlockId) -> Result<ad::Vjp, AdError> {
    let copy = crate::core::inline::clone_block(program, op, &mut HashMap::new());
    let jvp = ad::jvp(program, copy)?;
    ad::vjp(program, &jvp)
}

/// Applies `∂ᵀ⊙` at `(left, right)` (arrays of `shape`) to the cotangents `ct` of the float
/// components (`floats`) and returns the cotangents of the left (`side == 0`) or right
/// (`side == 1`) operands' float components.
#[allow(clippy::too_many_arguments)]
fn apply_vjp(
    builder: &mut Builder,
    vjp: &ad::Vjp,
    floats: &[usize],
    left: &[Atom],
    right: &[Atom],
    ct: &[Atom],
    side: usize,
    shape: &[usize],
) -> Result<Vec<Atom>, AdError> {
    let k = left.len();
    let mut subst: HashMap<VarId, Atom> = HashMap::new();
    for (param, atom) in vjp.params.iter().zip(left.iter().chain(right)) {
        subst.insert(*param, *atom);
    }
    for (comp, ct_param) in vjp.ct_params.iter().enumerate() {
        let value = match floats.iter().position(|&float| float == comp) {
            Some(position) => ct[position],
            None => {
                let elem = builder.program.var_ty(*ct_param).elem;
                builder.constant_of(Scalar::zero(elem), shape)
            }
        };
        subst.insert(*ct_param, value);
    }
    lift_stmts(builder, &vjp.forward, &mut subst, shape)?;
    lift_stmts(builder, &vjp.backward, &mut subst, shape)?;
    floats
        .iter()
        .map(|&comp| match vjp.grads[side * k + comp] {
            Some(grad) => lifted_atom(builder, &grad, &subst, shape),
            None => {
                let elem = builder.program.var_ty(vjp.params[side * k + comp]).elem;
                Ok(builder.constant_of(Scalar::zero(elem), shape))
            }
        })
        .collect()
}

/// Scalar params of the given element types.
fn scalar_params(program: &mut Program, elems: &[crate::core::ir::Elem], hint: &str) -> Vec<VarId> {
    elems
        .iter()
        .map(|elem| program.new_var(ArrTy::scalar(*elem), hint))
        .collect()
}

/// The primal statement of a differentiated monoid statement (`None` for any other
/// statement): its first `k` binders computed by the operator that `jvp_monoid` turned into
/// ⊕, recovered as the statements of ⊕ that do not depend on the tangent params.
pub(crate) fn primal_of_jvp(program: &mut Program, stmt: &Stmt) -> Option<Stmt> {
    let Expr::Monoid(Monoid {
        kind,
        arrays,
        init,
        op,
    }) = &stmt.expr
    else {
        return None;
    };
    let k = n_primal(program, arrays);
    let n_floats = arrays.len() - k;
    let oplus = program.blocks[*op].clone();
    let mut tangent: std::collections::HashSet<VarId> = oplus.params[k..k + n_floats]
        .iter()
        .chain(&oplus.params[2 * k + n_floats..])
        .copied()
        .collect();
    let mut stmts = Vec::new();
    for stmt in &oplus.stmts {
        let uses_tangent = crate::core::visit::expr_atoms(&stmt.expr)
            .iter()
            .any(|atom| matches!(atom, Atom::Var(var) if tangent.contains(var)));
        if uses_tangent {
            tangent.extend(&stmt.binders);
        } else {
            stmts.push(stmt.clone());
        }
    }
    // Drop what only the tangents needed (the comparison of `∂max`), so that the operator
    // is the user's again (a `selection` stays recognisable).
    let results = oplus.results[..k].to_vec();
    let mut live: std::collections::HashSet<VarId> = results
        .iter()
        .filter_map(|atom| crate::core::visit::var_of(*atom))
        .collect();
    let mut stmts: Vec<Stmt> = stmts
        .into_iter()
        .rev()
        .filter(|stmt| {
            let needed = stmt.binders.iter().any(|binder| live.contains(binder));
            if needed {
                live.extend(
                    crate::core::visit::expr_atoms(&stmt.expr)
                        .into_iter()
                        .filter_map(crate::core::visit::var_of),
                );
            }
            needed
        })
        .collect();
    stmts.reverse();
    let mut params = oplus.params[..k].to_vec();
    params.extend(&oplus.params[k + n_floats..2 * k + n_floats]);
    let shared = program.blocks.push(Block {
        params,
        stmts,
        results,
    });
    let op = crate::core::inline::clone_block(program, shared, &mut HashMap::new());
    Some(Stmt {
        binders: stmt.binders[..k].to_vec(),
        expr: Expr::from(Monoid {
            kind: *kind,
            arrays: arrays[..k].to_vec(),
            init: init[..k].to_vec(),
            op,
        }),
    })
}

/// The operator ⊕ of [Paszke21] §3.2 on (value, tangent) pairs:
/// `[x, ẋ] ⊕ [y, ẏ] = [x ⊙ y, ∂⊙_{x,y}(ẋ, ẏ)]`, with ∂⊙ from dx's own forward AD. Its
/// params are `x…, ẋ(floats)…, y…, ẏ(floats)…`, its results `x ⊙ y…, ∂⊙(…)(floats)…`.
fn oplus_block(program: &mut Program, op: BlockId, floats: &[usize]) -> Result<BlockId, AdError> {
    let copy = crate::core::inline::clone_block(program, op, &mut HashMap::new());
    let jvp = ad::jvp(program, copy)?;
    let k = jvp.params.len() / 2;
    let tangent_param = |program: &mut Program, side: usize, comp: usize| {
        jvp.tangent_params[side * k + comp].unwrap_or_else(|| {
            let ty = program.var_ty(jvp.params[side * k + comp]).clone();
            program.new_var(ty, "dot")
        })
    };
    let mut params = Vec::new();
    for side in 0..2 {
        params.extend(&jvp.params[side * k..(side + 1) * k]);
        for &comp in floats {
            params.push(tangent_param(program, side, comp));
        }
    }
    let mut results = jvp.results.clone();
    for &comp in floats {
        results.push(jvp.tangent_results[comp].unwrap_or_else(|| {
            let elem = program.atom_ty(&jvp.results[comp]).elem;
            Atom::Lit(Scalar::zero(elem))
        }));
    }
    Ok(program.blocks.push(Block {
        params,
        stmts: jvp.stmts,
        results,
    }))
}

/// The operator ⊗ of [Paszke21] Eqs 9–10 on triples (x, a, ŷ):
/// `[x₁, a₁, ŷ₁] ⊗ [x₂, a₂, ŷ₂] = [x₁, a₁ ⊙ a₂, ∂₁ᵀ⊙_{x₁,a₁}(ŷ₂) + ŷ₁]`, a right monoid with
/// right identity `[e, e, 0]` (Prop 3.6). ŷ has one component per float of the monoid.
///
/// `mirrored` gives the operator for transposing a right scan (Thm 3.7 applied to the
/// reversed array and the flipped operator, read back in the original order):
/// `[x₁, a₁, ŷ₁] ⊗ [x₂, a₂, ŷ₂] = [x₂, a₁ ⊙ a₂, ∂₂ᵀ⊙_{a₂,x₂}(ŷ₁) + ŷ₂]`, a left monoid with
/// left identity `[e, e, 0]`, scanned from the left.
fn otimes_block(
    program: &mut Program,
    op: BlockId,
    floats: &[usize],
    vjp: &ad::Vjp,
    mirrored: bool,
) -> Result<BlockId, AdError> {
    let op_block = program.blocks[op].clone();
    let k = op_block.params.len() / 2;
    let elems: Vec<_> = op_block.params[..k]
        .iter()
        .map(|param| program.var_ty(*param).elem)
        .collect();
    let float_elems: Vec<_> = floats.iter().map(|&comp| elems[comp]).collect();
    let mut sides = Vec::new();
    for hint in ["l", "r"] {
        let x = scalar_params(program, &elems, &format!("x{hint}"));
        let a = scalar_params(program, &elems, &format!("a{hint}"));
        let y = scalar_params(program, &float_elems, &format!("ct{hint}"));
        sides.push((x, a, y));
    }
    let atoms = |vars: &[VarId]| vars.iter().map(|var| Atom::Var(*var)).collect::<Vec<_>>();
    let (x1, a1, y1) = (atoms(&sides[0].0), atoms(&sides[0].1), atoms(&sides[0].2));
    let (x2, a2, y2) = (atoms(&sides[1].0), atoms(&sides[1].1), atoms(&sides[1].2));
    let mut builder = Builder::new(program);
    // a₁ ⊙ a₂.
    let mut subst: HashMap<VarId, Atom> = op_block
        .params
        .iter()
        .copied()
        .zip(a1.iter().chain(&a2).copied())
        .collect();
    let product = lift(&mut builder, &op_block, &mut subst, &[])?;
    // ∂₁ᵀ⊙_{x₁,a₁}(ŷ₂) + ŷ₁, or mirrored ∂₂ᵀ⊙_{a₂,x₂}(ŷ₁) + ŷ₂.
    let (pulled, kept, mut results) = if mirrored {
        let pulled = apply_vjp(&mut builder, vjp, floats, &a2, &x2, &y1, 1, &[])?;
        (pulled, y2, x2)
    } else {
        let pulled = apply_vjp(&mut builder, vjp, floats, &x1, &a1, &y2, 0, &[])?;
        (pulled, y1, x1)
    };
    results.extend(product);
    for (pulled, kept) in pulled.into_iter().zip(kept) {
        results.push(builder.prim(crate::prim::Prim::Add, &[pulled, kept]));
    }
    let stmts = builder.stmts;
    let mut params = Vec::new();
    for (x, a, y) in sides {
        params.extend(x);
        params.extend(a);
        params.extend(y);
    }
    Ok(program.blocks.push(Block {
        params,
        stmts,
        results,
    }))
}

/// Which neighbour `shift` reads.
#[derive(Clone, Copy)]
enum Neighbour {
    /// `a[i+1]`, `e` at the end ([Paszke21] Thm 3.7's `roll_left`).
    Next,
    /// `x[i-1]`, `e` at the start (Eq 11's `roll_right`).
    Previous,
}

impl Builder<'_> {
    /// An array of shape `[n, rest…]` shifted by one row, the vacated row filled with `fill`
    /// (of shape `rest`): a gather and a select on the row index.
    fn shift(&mut self, array: Atom, fill: Atom, neighbour: Neighbour) -> Atom {
        use crate::core::ir::Elem;
        let ty = self.ty(&array);
        let n = ty.shape[0];
        let row = self.program.new_var(ArrTy::scalar(Elem::I64), "i");
        let (delta, edge) = match neighbour {
            Neighbour::Next => (1, n as i64 - 1),
            Neighbour::Previous => (-1, 0),
        };
        let source = self.program.new_var(ArrTy::scalar(Elem::I64), "src");
        let index_fn = self.program.blocks.push(Block {
            params: vec![row],
            stmts: vec![Stmt {
                binders: vec![source],
                expr: Expr::from(PrimApp(
                    Prim::Add,
                    vec![Atom::Var(row), Atom::Lit(Scalar::I64(delta))],
                )),
            }],
            results: vec![Atom::Var(source)],
        });
        let gathered = self.emit1(
            Expr::from(Gather {
                shape: ty.shape.clone(),
                array,
                body: index_fn,
            }),
            ty.clone(),
            "shift",
        );
        let mask = self.row_mask(&ty.shape, edge);
        let filled = self.replicate(n, fill, "fill");
        self.prim(Prim::Select, &[mask, filled, gathered])
    }

    /// The inclusive scan (`kind`: left or right) of `arrays` over a copy of the operator
    /// `op`, from `init`.
    fn scan_of(
        &mut self,
        kind: MonoidKind,
        arrays: &[Atom],
        init: &[Atom],
        op: BlockId,
        tys: &[ArrTy],
        hint: &str,
    ) -> Vec<Atom> {
        let op = crate::core::inline::clone_block(self.program, op, &mut HashMap::new());
        self.emit(
            Expr::from(Monoid {
                kind,
                arrays: arrays.to_vec(),
                init: init.to_vec(),
                op,
            }),
            tys.to_vec(),
            hint,
        )
        .into_iter()
        .map(Atom::Var)
        .collect()
    }

    /// The tangent of a non-empty `reduce` over a selection (`selection`) of `a`, with result
    /// `y`, along `a_dot`: JAX's rule for `max` (Note [Ties of min and max] in `prim::arith`),
    /// the mean of the tangents of the rows where `a` equals `y`. Ties share evenly; with a
    /// NaN in `a` no row equals `y` and the tangent is 0/0, NaN, as JAX's. `e` does not enter:
    /// it is the result of an empty array only (Note [Monoid order]). Reductions and maps,
    /// linear in `a_dot`, that the generic rules transpose and fusion fuses.
    fn selected_tangent(&mut self, a: Atom, y: Atom, a_dot: Atom) -> Atom {
        let ty = self.ty(&a_dot);
        let n = ty.shape[0];
        let row_ty = ArrTy::new(ty.shape[1..].to_vec(), ty.elem);
        let y_rows = self.replicate(n, y, "max_rows");
        let selected = self.prim(Prim::Eq, &[a, y_rows]);
        let zero = self.zeros(&ty);
        let one = self.constant(1.0, zero);
        // A product, not a select, as JAX's: with a NaN in `a` the cotangent is ŷ/0 times 0,
        // NaN, in every row.
        let indicator = self.prim(Prim::Select, &[selected, one, zero]);
        let picked = self.prim(Prim::Mul, &[indicator, a_dot]);
        let total = self.emit1(Expr::from(SumOuter(picked)), row_ty.clone(), "ties_dot");
        let count = self.emit1(Expr::from(SumOuter(indicator)), row_ty, "ties");
        self.prim(Prim::Div, &[total, count])
    }

    /// A `Bool` array of `shape` that is true on row `row` of the outer axis.
    fn row_mask(&mut self, shape: &[usize], row: i64) -> Atom {
        use crate::core::ir::Elem;
        let n = shape[0];
        let iota = self.emit1(Expr::from(Iota(n)), ArrTy::new(vec![n], Elem::I64), "iota");
        let edge = self.constant_of(Scalar::I64(row), &[n]);
        let is_edge = self.prim(Prim::Eq, &[iota, edge]);
        self.rows_to(is_edge, shape)
    }

    /// The `[n]` array `per_row` spread over `shape` (`[n, rest…]`): element `[i, …]` is
    /// `per_row[i]`.
    fn rows_to(&mut self, per_row: Atom, shape: &[usize]) -> Atom {
        use crate::core::ir::Elem;
        let elem = self.ty(&per_row).elem;
        if shape.len() == 1 {
            per_row
        } else {
            let params: Vec<VarId> = (0..shape.len())
                .map(|_| self.program.new_var(ArrTy::scalar(Elem::I64), "i"))
                .collect();
            let first = Atom::Var(params[0]);
            let index_fn = self.program.blocks.push(Block {
                params,
                stmts: Vec::new(),
                results: vec![first],
            });
            self.emit1(
                Expr::from(Gather {
                    shape: shape.to_vec(),
                    array: per_row,
                    body: index_fn,
                }),
                ArrTy::new(shape.to_vec(), elem),
                "rows",
            )
        }
    }

    /// JVP of a monoid statement ([Paszke21] §3.2, Thm 3.3): the same reduce or scan over the
    /// ⊕ monoid on (value, tangent) pairs with identity `[e, 0]` (Prop 3.2). The statement
    /// binds the primal results then one tangent per float component; `primal_of_jvp`
    /// recovers its primal part and `transpose_monoid` transposes it.
    pub(crate) fn jvp_monoid(
        &mut self,
        monoid: &Monoid,
        stmt: &Stmt,
        tangents: &mut HashMap<VarId, Atom>,
    ) -> Result<(), AdError> {
        let Monoid {
            kind,
            arrays,
            init,
            op,
        } = monoid;
        let floats = float_components(self.program, arrays);
        let array_tangents: Vec<_> = floats
            .iter()
            .map(|&comp| tangent_of(tangents, &arrays[comp]))
            .collect();
        let init_tangents = floats.iter().map(|&comp| tangent_of(tangents, &init[comp]));
        if array_tangents.iter().all(Option::is_none) && init_tangents.clone().all(|t| t.is_none())
        {
            self.stmts.push(stmt.clone());
            return Ok(());
        }
        let n_rows = self.ty(&arrays[0]).shape[0];
        if *kind == MonoidKind::Reduce
            && floats == [0]
            && arrays.len() == 1
            && n_rows > 0
            && selection(self.program, *op).is_some()
        {
            let array_ty = self.ty(&arrays[0]);
            let tangent = tangent_of(tangents, &arrays[0]).unwrap_or_else(|| self.zeros(&array_ty));
            self.stmts.push(stmt.clone());
            let y = Atom::Var(stmt.binders[0]);
            let y_dot = self.selected_tangent(arrays[0], y, tangent);
            tangents.insert(stmt.binders[0], y_dot);
            return Ok(());
        }
        let oplus = oplus_block(self.program, *op, &floats)?;
        let mut new_arrays = arrays.clone();
        let mut new_init = init.clone();
        let mut binders = stmt.binders.clone();
        let mut new_tangents = Vec::new();
        for (&comp, tangent) in floats.iter().zip(array_tangents) {
            let array_ty = self.ty(&arrays[comp]);
            new_arrays.push(tangent.unwrap_or_else(|| self.zeros(&array_ty)));
            // `e` is the result of an empty array only (Note [Monoid order]): the tangent
            // of that result is `e`'s.
            let init_ty = self.ty(&init[comp]);
            let init_tangent = tangent_of(tangents, &init[comp]);
            new_init.push(init_tangent.unwrap_or_else(|| self.zeros(&init_ty)));
            let binder = stmt.binders[comp];
            let ty = self.program.var_ty(binder).clone();
            let hint = format!("{}_dot", self.program.vars[binder].hint);
            let tangent = self.program.new_linear_var(ty, &hint);
            binders.push(tangent);
            new_tangents.push((binder, tangent));
        }
        self.stmts.push(Stmt {
            binders,
            expr: Expr::from(Monoid {
                kind: *kind,
                arrays: new_arrays,
                init: new_init,
                op: oplus,
            }),
        });
        for (binder, tangent) in new_tangents {
            tangents.insert(binder, Atom::Var(tangent));
        }
        Ok(())
    }

    /// Transpose of a differentiated monoid statement ([Paszke21] §3.3, Thm 3.7): with `x` the
    /// inclusive scan of `a` and `ĉ` the cotangent of the scan, the cotangents `x̂` are the
    /// third components of `scan_right` over ⊗ of `m = zip(x, roll_left(a, e), ĉ)`, and
    /// `â = map ∂₂ᵀ⊙ (zip(zip(roll_right(x, e), a), x̂))` (Eqs 11–12). `reduce` is the special
    /// case whose `ĉ` is zero but in the last row, and whose `x` is computed here; for it the
    /// right scan over ⊗ reduces to a right scan over ⊙ (see below).
    pub(crate) fn transpose_monoid(
        &mut self,
        stmt: &Stmt,
        cts: &mut HashMap<VarId, Atom>,
    ) -> Result<(), AdError> {
        let Expr::Monoid(Monoid {
            kind, arrays, init, ..
        }) = &stmt.expr
        else {
            unreachable!("only monoid statements reach transpose_monoid")
        };
        let k = n_primal(self.program, arrays);
        let floats = float_components(self.program, &arrays[..k]);
        let tangent_binders = &stmt.binders[k..];
        if tangent_binders
            .iter()
            .all(|binder| !cts.contains_key(binder))
        {
            return Ok(());
        }
        let Some(primal) = primal_of_jvp(self.program, stmt) else {
            unreachable!("a monoid statement")
        };
        let Expr::Monoid(Monoid { op: primal_op, .. }) = primal.expr else {
            unreachable!("primal_of_jvp returns a monoid statement")
        };
        let (a, e) = (&arrays[..k], &init[..k]);
        let shape = self.ty(&a[0]).shape;
        let n = shape[0];
        if n == 0 {
            // The result of an empty array is `e` (a scan's is empty): its cotangent goes to
            // `e`'s tangent, and the array's is empty.
            if *kind == MonoidKind::Reduce {
                for (position, binder) in tangent_binders.iter().enumerate() {
                    let tangent = init[k + position];
                    if let (Some(&ct), true) = (cts.get(binder), self.is_linear(&tangent)) {
                        self.add_to(cts, tangent, ct);
                    }
                }
            }
            return Ok(());
        }
        // The cotangents of the statement's tangent results (ĉ of a scan, ŷ of a reduce).
        let mut y_hat = Vec::new();
        for binder in tangent_binders {
            let ty = self.program.var_ty(*binder).clone();
            y_hat.push(match cts.get(binder).copied() {
                Some(ct) => ct,
                None => self.zeros(&ty),
            });
        }
        let tys: Vec<ArrTy> = a.iter().map(|atom| self.ty(atom)).collect();
        // The prefixes x: the scan's own results, or for `reduce` a scan computed here.
        let x: Vec<Atom> = match kind {
            MonoidKind::Reduce => self.scan_of(MonoidKind::Scan, a, e, primal_op, &tys, "prefix"),
            _ => stmt.binders[..k]
                .iter()
                .map(|var| Atom::Var(*var))
                .collect(),
        };
        // A right scan is transposed by the mirror image of the rule (see `otimes_block`).
        let mirrored = *kind == MonoidKind::ScanRight;
        let (towards_start, towards_end) = if mirrored {
            (Neighbour::Next, Neighbour::Previous)
        } else {
            (Neighbour::Previous, Neighbour::Next)
        };
        let vjp = operator_vjp(self.program, primal_op)?;
        let x_hat: Vec<Atom> = if *kind == MonoidKind::Reduce {
            // Thm 3.7 with ĉ zero but in the last row: the result is x_i ⊙ s_{i+1} for every
            // i, with s the inclusive right scan of a, so x̂_i = ∂₁ᵀ⊙ at (x_i, s_{i+1})
            // applied to ŷ and x̂_{n-1} = ŷ. The right scan over ⊗ on triples collapses to a
            // right scan over ⊙ itself and one map.
            let suffix = self.scan_of(MonoidKind::ScanRight, a, e, primal_op, &tys, "suffix");
            let s_next: Vec<Atom> = suffix
                .iter()
                .zip(e)
                .map(|(array, fill)| self.shift(*array, *fill, Neighbour::Next))
                .collect();
            let y_rows: Vec<Atom> = y_hat
                .iter()
                .map(|ct| self.replicate(n, *ct, "ct_rows"))
                .collect();
            let pulled = apply_vjp(self, &vjp, &floats, &x, &s_next, &y_rows, 0, &shape)?;
            let last_row = self.row_mask(&shape, n as i64 - 1);
            pulled
                .into_iter()
                .zip(y_rows)
                .map(|(pulled, y_row)| self.prim(Prim::Select, &[last_row, y_row, pulled]))
                .collect()
        } else {
            let otimes = otimes_block(self.program, primal_op, &floats, &vjp, mirrored)?;
            // m = zip(x, roll_left(a, e), ĉ), scanned right over ⊗ from [e, e, 0] (Thm 3.7).
            let a_next: Vec<Atom> = a
                .iter()
                .zip(e)
                .map(|(array, fill)| self.shift(*array, *fill, towards_end))
                .collect();
            let mut m = x.clone();
            m.extend(&a_next);
            m.extend(&y_hat);
            let mut identity = e.to_vec();
            identity.extend(e);
            for &comp in &floats {
                let ty = self.ty(&e[comp]);
                identity.push(self.zeros(&ty));
            }
            let tys: Vec<ArrTy> = m.iter().map(|atom| self.ty(atom)).collect();
            let scanned = self.emit(
                Expr::from(Monoid {
                    kind: if mirrored {
                        MonoidKind::Scan
                    } else {
                        MonoidKind::ScanRight
                    },
                    arrays: m,
                    init: identity,
                    op: otimes,
                }),
                tys,
                "ct_scan",
            );
            scanned[2 * k..].iter().map(|var| Atom::Var(*var)).collect()
        };
        // Eqs 11–12: â = ∂₂ᵀ⊙ at (roll_right(x, e), a) applied to x̂, elementwise (mirrored:
        // ∂₁ᵀ⊙ at (a, roll_left(x, e))).
        let x_prev: Vec<Atom> = x
            .iter()
            .zip(e)
            .map(|(array, fill)| self.shift(*array, *fill, towards_start))
            .collect();
        let a_hat = if mirrored {
            apply_vjp(self, &vjp, &floats, a, &x_prev, &x_hat, 0, &shape)?
        } else {
            apply_vjp(self, &vjp, &floats, &x_prev, a, &x_hat, 1, &shape)?
        };
        // Row 0 is â[0] = x̂[0] (Thm 3.7's first case) taken as it is, not through the left
        // identity of Eq 12, so that the cotangents do not depend on `e` being an exact
        // identity (the prelude's `maximum` passes `xs[0]`); `e` then matters only for empty
        // arrays. Mirrored, the same holds for the last row.
        let edge = if mirrored { n as i64 - 1 } else { 0 };
        let first_row = self.row_mask(&shape, edge);
        let a_hat: Vec<Atom> = a_hat
            .into_iter()
            .zip(&x_hat)
            .map(|(a_hat, x_hat)| self.prim(Prim::Select, &[first_row, *x_hat, a_hat]))
            .collect();
        for (position, ct) in a_hat.into_iter().enumerate() {
            let tangent = arrays[k + position];
            if self.is_linear(&tangent) {
                self.add_to(cts, tangent, ct);
            }
        }
        Ok(())
    }
}

impl Monoid {
    /// The array this reduces over its outer axis and how, when it is a `reduce` of one
    /// non-empty array over a selection operator (`selection`; its identity is then never
    /// used): a reduction kernel of the fuser (`ops::reduction_of`).
    pub fn reduction(&self, program: &Program) -> Option<(Atom, Reduction)> {
        let [array] = self.arrays[..] else {
            return None;
        };
        let non_empty = program.atom_ty(&array).shape[0] > 0;
        (self.kind == MonoidKind::Reduce && non_empty)
            .then(|| selection(program, self.op))
            .flatten()
            .map(|reduction| (array, reduction))
    }
}

impl Operation for Monoid {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        result_tys(program, self.kind, &self.arrays, &self.init, self.op)
    }

    fn eval(&self, interp: &mut Interp, _: &Stmt) -> Res<Vec<Array>> {
        let arrays = interp.atoms(&self.arrays);
        let init = interp.atoms(&self.init);
        let interrupt = interp.config.interrupt.as_deref();
        eval(
            interp.program,
            self.kind,
            &arrays,
            &init,
            self.op,
            interrupt,
        )
    }

    fn batch(&self, batcher: &mut Batcher, stmt: &Stmt) {
        batcher.batch_monoid(self.kind, &self.arrays, &self.init, self.op, &stmt.binders);
    }

    fn jvp(&self, builder: &mut Builder, stmt: &Stmt, tangents: &mut Derivs) -> AdResult {
        builder.jvp_monoid(self, stmt, tangents)
    }

    fn transpose(&self, builder: &mut Builder, stmt: &Stmt, cts: &mut Derivs) -> AdResult {
        builder.transpose_monoid(stmt, cts)
    }

    fn cost(&self, program: &Program, _: u64) -> u64 {
        cost(program, self.kind, &self.arrays, self.op)
    }

    fn linearity(&self) -> Linearity {
        Linearity::Compound(vec![true; self.arrays.len() + self.init.len()])
    }

    /// A reduction kernel when it is one (`reduction`); otherwise a step of its own, run in
    /// parallel chunks by `exec::monoid`, the producers of a vector's arrays running inside
    /// its chunk loop (Note [Monoid steps] in `passes::fuse::monoid`).
    fn fusion_class(&self, program: &Program) -> FusionClass {
        if self.reduction(program).is_some() {
            FusionClass::Reduce
        } else {
            FusionClass::Bulk
        }
    }

    fn run(&self, cx: &mut dyn Bulk) -> Ran {
        cx.per_point()?;
        cx.monoid()
    }

    /// Without the components nothing reads and the live components' operator does not read
    /// either: the array, the identity, both params and the operator's result. (The reverse
    /// derivative of a scan is a right scan over triples, [Paszke21] Thm 3.7, whose first
    /// component only passes the primal through; the gradient reads the third.)
    fn prune(&self, program: &mut Program, live: &[bool]) -> Option<(Expr, Vec<bool>)> {
        let mut kept = live.to_vec();
        if kept.iter().all(|&live| live) || !kept.iter().any(|&live| live) {
            return None;
        }
        let reads = components_read(program, self.op, kept.len());
        while let Some(needed) = (0..kept.len())
            .filter(|&k| kept[k])
            .flat_map(|k| reads[k].iter().copied())
            .find(|&j| !kept[j])
        {
            kept[needed] = true;
        }
        if kept.iter().all(|&kept| kept) {
            return None;
        }
        let mut pruned = self.clone();
        // Components are removed from the last; `n` is how many are left.
        let mut n = kept.len();
        for dead in (0..kept.len()).rev().filter(|&k| !kept[k]) {
            pruned.arrays.remove(dead);
            pruned.init.remove(dead);
            let op = &mut program.blocks[self.op];
            op.results.remove(dead);
            // Params: the left operands, then the right ones.
            op.params.remove(n + dead);
            op.params.remove(dead);
            n -= 1;
        }
        Some((Expr::from(pruned), kept))
    }

    /// `monoid::export` (`stablehlo.reduce` for a commutative operator, otherwise trees of
    /// depth O(log n)).
    fn export(&self, cx: &mut dyn StableHlo, _: &Stmt) -> Exported {
        export::monoid(cx, self)
    }
}

/// For each result of a monoid operator over `n` components, the components whose
/// operands (left or right) it is computed from.
fn components_read(program: &Program, op: BlockId, n: usize) -> Vec<HashSet<usize>> {
    let block = &program.blocks[op];
    let mut reads: HashMap<VarId, HashSet<usize>> = HashMap::new();
    for (position, &param) in block.params.iter().enumerate() {
        reads.insert(param, HashSet::from([position % n]));
    }
    for stmt in &block.stmts {
        let mut uses: Vec<VarId> = Vec::new();
        collect_expr_uses(program, &stmt.expr, &mut uses);
        let from: HashSet<usize> = uses
            .iter()
            .filter_map(|var| reads.get(var))
            .flatten()
            .copied()
            .collect();
        for &binder in &stmt.binders {
            reads.insert(binder, from.clone());
        }
    }
    block
        .results
        .iter()
        .map(|&atom| {
            var_of(atom)
                .and_then(|var| reads.get(&var))
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::core::ir::Elem;

    /// Affine maps `x ↦ a x + b` on wrapping `i64`, composed left to right:
    /// `(a₁, b₁) ⊙ (a₂, b₂) = (a₁ a₂, b₁ a₂ + b₂)` — exact and not commutative, so any
    /// mistake in the chunked order of Note [Monoid order] changes the result.
    pub(crate) fn affine_program() -> (Program, BlockId) {
        let mut program = Program::new();
        let scalar = ArrTy::scalar(Elem::I64);
        let params: Vec<VarId> = (0..4)
            .map(|_| program.new_var(scalar.clone(), "p"))
            .collect();
        let [a1, b1, a2, b2] = [0, 1, 2, 3].map(|p| Atom::Var(params[p]));
        let mut stmts = Vec::new();
        let mut emit = |program: &mut Program, prim: Prim, args: Vec<Atom>| {
            let var = program.new_var(ArrTy::scalar(Elem::I64), "t");
            stmts.push(Stmt {
                binders: vec![var],
                expr: Expr::from(PrimApp(prim, args)),
            });
            Atom::Var(var)
        };
        let a = emit(&mut program, Prim::Mul, vec![a1, a2]);
        let b1a2 = emit(&mut program, Prim::Mul, vec![b1, a2]);
        let b = emit(&mut program, Prim::Add, vec![b1a2, b2]);
        let op = program.blocks.push(Block {
            params,
            stmts,
            results: vec![a, b],
        });
        (program, op)
    }

    fn compose(left: (i64, i64), right: (i64, i64)) -> (i64, i64) {
        (
            left.0.wrapping_mul(right.0),
            left.1.wrapping_mul(right.0).wrapping_add(right.1),
        )
    }

    fn values(array: &Array) -> Vec<i64> {
        match &*array.data {
            ArrayData::I64(values) => values.clone(),
            other => panic!("expected i64, got {:?}", other.elem()),
        }
    }

    #[test]
    fn the_chunked_order_matches_a_sequential_fold_and_scan_on_an_exact_monoid() {
        let (program, op) = affine_program();
        check_exact_monoid(&|kind, arrays, init| {
            eval(&program, kind, arrays, init, op, None).expect("no interrupt flag")
        });
    }

    /// An evaluation of a monoid statement: `run(kind, arrays, init)`.
    pub(crate) type MonoidRun<'a> = dyn Fn(MonoidKind, &[Array], &[Array]) -> Vec<Array> + 'a;

    /// Checks an evaluation of the monoid of `affine_program` (`run(kind, arrays, init)`)
    /// against sequential folds and scans: rows around the chunk size and many chunks, one
    /// lane, a few, and more than a line of the engine holds.
    pub(crate) fn check_exact_monoid(run: &MonoidRun) {
        let mut state = 0x1234_5678_u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as i64 % 7 - 3
        };
        for n_rows in [
            0,
            1,
            5,
            CHUNK_ROWS - 1,
            CHUNK_ROWS,
            CHUNK_ROWS + 1,
            2 * CHUNK_ROWS + 17,
            40 * CHUNK_ROWS + 5,
        ] {
            for n_lanes in [1, 3, 1100] {
                if n_rows * n_lanes > 1 << 18 {
                    continue;
                }
                let shape = vec![n_rows, n_lanes];
                let n = n_rows * n_lanes;
                let a: Vec<i64> = (0..n).map(|_| next()).collect();
                let b: Vec<i64> = (0..n).map(|_| next()).collect();
                let arrays = [
                    Array::new(shape.clone(), ArrayData::I64(a.clone())),
                    Array::new(shape.clone(), ArrayData::I64(b.clone())),
                ];
                let init = [
                    Array::new(vec![n_lanes], ArrayData::I64(vec![1; n_lanes])),
                    Array::new(vec![n_lanes], ArrayData::I64(vec![0; n_lanes])),
                ];
                let element =
                    |row: usize, lane: usize| (a[row * n_lanes + lane], b[row * n_lanes + lane]);
                // The pairs (a, b) of each result.
                let run = |kind| -> Vec<(i64, i64)> {
                    let res: Vec<Vec<i64>> = run(kind, &arrays, &init).iter().map(values).collect();
                    res[0].iter().copied().zip(res[1].iter().copied()).collect()
                };
                let reduced = run(MonoidKind::Reduce);
                let scanned = run(MonoidKind::Scan);
                let scanned_right = run(MonoidKind::ScanRight);
                assert_eq!(reduced.len(), n_lanes, "reduce, {n_rows} rows");
                assert_eq!(scanned.len(), n, "scan, {n_rows} rows");
                assert_eq!(scanned_right.len(), n, "right scan, {n_rows} rows");
                for (lane, total) in reduced.iter().enumerate() {
                    let mut acc = (1, 0);
                    for row in 0..n_rows {
                        acc = compose(acc, element(row, lane));
                        let at = row * n_lanes + lane;
                        assert_eq!(
                            scanned[at], acc,
                            "scan, {n_rows} rows, lane {lane}, row {row}"
                        );
                    }
                    assert_eq!(*total, acc, "reduce, {n_rows} rows, lane {lane}");
                    let mut acc = (1, 0);
                    for row in (0..n_rows).rev() {
                        acc = compose(element(row, lane), acc);
                        let at = row * n_lanes + lane;
                        assert_eq!(
                            scanned_right[at], acc,
                            "right scan, {n_rows} rows, lane {lane}, row {row}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn an_interrupted_monoid_stops_with_an_error() {
        let (program, op) = affine_program();
        let shape = vec![3 * CHUNK_ROWS];
        let ones = || Array::new(shape.clone(), ArrayData::I64(vec![1; 3 * CHUNK_ROWS]));
        let arrays = [ones(), ones()];
        let init = [
            Array::new(Vec::new(), ArrayData::I64(vec![1])),
            Array::new(Vec::new(), ArrayData::I64(vec![0])),
        ];
        let flag = std::sync::atomic::AtomicBool::new(true);
        for kind in [MonoidKind::Reduce, MonoidKind::Scan, MonoidKind::ScanRight] {
            let res = eval(&program, kind, &arrays, &init, op, Some(&flag));
            assert!(matches!(res, Err(InterpError::Interrupted)), "{kind:?}");
        }
    }
}
