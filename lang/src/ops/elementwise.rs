//! An elementwise primitive applied to operands of equal shape (`Expr::Prim`): the rules of the
//! application, beside the primitives' own rules in `prim` (their types, scalar functions,
//! linearity, JVP and transpose, one file per family):
//!
//! - type rule: equal operand shapes, the element type `Prim::result_elem` gives;
//! - reference evaluation: `eval_prim`, element by element with `Prim::eval`;
//! - batching ([Smeding25] Fig 9): `build1 k (λi. op t u) ~> op (build1 k (λi. t)) (build1 k
//!   (λi. u))`, except that integer arithmetic on index scalars stays symbolic (it may end up
//!   in an index function; `Batcher::batch_prim`); an index pushed into it (Fig 10):
//!   `push_into_prim`;
//! - JVP and transpose: `Prim::jvp`, `Prim::transpose`;
//! - cost: one per result element; fusion class `Pull`.

use std::rc::Rc;

use super::ad::{self, tangent_of, AdResult, Builder, Derivs, Tangent};
use super::batch::{Batcher, IxExpr, Status};
use super::build::IndexPush;
use super::bulk::{Bulk, Ran};
use super::hlo::{self, Exported, StableHlo, Val};
use super::interp::{Interp, Res};
use super::rewrite::{Rewrite, Rule};
use super::{Element, FusionClass, Linearity, Operation};
use crate::core::ir::{ArrTy, Atom, Elem, Expr, PrimApp, Program, Stmt, VarId};
use crate::core::value::{Array, ArrayData};
use crate::prim::Prim;

impl Operation for PrimApp {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        let PrimApp(prim, operands) = self;
        let tys = operands
            .iter()
            .map(|atom| super::verify::atom_ty(program, atom))
            .collect::<Result<Vec<_>, _>>()?;
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
        let elem = prim
            .result_elem(&elems)
            .map_err(|error| error.to_string())?;
        Ok(vec![ArrTy::new(shape, elem)])
    }

    fn eval(&self, interp: &mut Interp, stmt: &Stmt) -> Res<Vec<Array>> {
        let operands = interp.atoms(&self.1);
        Ok(vec![eval_prim(
            self.0,
            &operands,
            interp.binder_ty(stmt, 0),
        )])
    }

    fn batch(&self, batcher: &mut Batcher, stmt: &Stmt) {
        let status = batcher.batch_prim(self.0, &self.1, stmt.binders[0]);
        batcher.bind_one(stmt, status);
    }

    fn jvp(&self, builder: &mut Builder, stmt: &Stmt, tangents: &mut Derivs) -> AdResult {
        let PrimApp(prim, args) = self;
        builder.stmts.push(stmt.clone());
        let binder = stmt.binders[0];
        if builder.program.var_ty(binder).elem.is_float() {
            let arg_tangents: Vec<Tangent> =
                args.iter().map(|atom| tangent_of(tangents, atom)).collect();
            if let Some(tangent) = prim.jvp(builder, args, Atom::Var(binder), &arg_tangents) {
                tangents.insert(binder, tangent);
            }
        }
        Ok(())
    }

    fn transpose(&self, builder: &mut Builder, stmt: &Stmt, cts: &mut Derivs) -> AdResult {
        let PrimApp(prim, args) = self;
        let Some(ct) = ad::result_ct(stmt, cts) else {
            return Ok(());
        };
        let mask: Vec<bool> = args.iter().map(|atom| builder.is_linear(atom)).collect();
        if mask.iter().any(|flag| *flag) {
            let contributions = prim.transpose(builder, args, &mask, ct)?;
            for (arg, contribution) in args.iter().zip(contributions) {
                if let Some(contribution) = contribution {
                    builder.add_to(cts, *arg, contribution);
                }
            }
        }
        Ok(())
    }

    fn cost(&self, _: &Program, result_elems: u64) -> u64 {
        result_elems
    }

    fn linearity(&self) -> Linearity {
        Linearity::Prim(self.0.linearity())
    }

    fn fusion_class(&self, _: &Program) -> FusionClass {
        FusionClass::Pull
    }

    fn run(&self, cx: &mut dyn Bulk) -> Ran {
        cx.apply(self.0, &self.1)
    }

    /// The primitive's own export rule (`Prim::export`, dx's total semantics), its scalar
    /// operands broadcast to the others' shape.
    fn export(&self, cx: &mut dyn StableHlo, stmt: &Stmt) -> Exported {
        let PrimApp(prim, atoms) = self;
        let args = hlo::atoms(cx, atoms)?;
        let shape = (args.iter())
            .map(|arg| arg.ty.shape.clone())
            .max_by_key(Vec::len)
            .unwrap_or_default();
        let args: Vec<Val> = (args.iter())
            .map(|arg| match arg.ty.rank() {
                0 => cx.broadcast_trailing(arg, &shape),
                _ => arg.clone(),
            })
            .collect();
        let elem = hlo::result_ty(cx.program(), stmt)?.elem;
        let val = hlo::apply_prim(cx, *prim, &args)?;
        debug_assert_eq!(
            val.ty.elem, elem,
            "{prim:?} exported with another element type"
        );
        Ok(vec![val])
    }

    fn scalar_op(&self) -> bool {
        true
    }

    fn push_index(&self, cx: &mut IndexPush, source: VarId, index: &[Atom]) -> Option<Expr> {
        push_into_prim(cx, self.0, &self.1, source, index)
    }

    fn element(&self) -> Option<Element<'_>> {
        Some(Element::Apply(self.0, &self.1))
    }

    fn sign_clear(&self, clear: &mut dyn FnMut(&Atom) -> bool) -> bool {
        let operands: Vec<bool> = self.1.iter().map(clear).collect();
        self.0.sign_clear(&operands)
    }

    /// `x * 1 = x`, `x / 1 = x` (an integer `idiv` too), `neg (neg x) = x`, a cast to the
    /// type a value already has (`x + 0`, `x * 0` and a float `idiv x 1` are not exact).
    fn simplify(&self, cx: &Rewrite) -> Option<(Rule, Expr)> {
        arithmetic(cx, self.0, &self.1).map(|(rule, kept)| (rule, Expr::from(kept)))
    }
}

/// `op` applied elementwise to operands of one shape.
fn eval_prim(prim: Prim, operands: &[Array], res_ty: &ArrTy) -> Array {
    let n_elems = res_ty.n_elems();
    debug_assert!(operands.iter().all(|array| array.n_elems() == n_elems));
    let mut out = ArrayData::with_capacity(res_ty.elem, n_elems);
    let mut scalars = Vec::with_capacity(operands.len());
    for flat in 0..n_elems {
        scalars.clear();
        scalars.extend(operands.iter().map(|array| array.data.get(flat)));
        out.push(prim.eval(&scalars));
    }
    Array::new(res_ty.shape.clone(), out)
}

impl Batcher<'_> {
    pub(crate) fn batch_prim(&mut self, prim: Prim, args: &[Atom], binder: VarId) -> Status {
        let statuses: Vec<Status> = args.iter().map(|atom| self.status(*atom)).collect();
        let binder_ty = self.program.var_ty(binder).clone();
        // Integer arithmetic on index scalars stays symbolic (it may end up in an index function).
        let symbolic = binder_ty.shape.is_empty()
            && binder_ty.elem.is_integer()
            && statuses
                .iter()
                .all(|status| !matches!(status, Status::Batched(_)));
        if symbolic {
            let args = statuses
                .into_iter()
                .map(|status| match status {
                    Status::Index(expr) => expr,
                    Status::Unbatched(atom) => Rc::new(IxExpr::Atom(atom)),
                    Status::Batched(_) => unreachable!("checked above"),
                })
                .collect();
            return Status::Index(Rc::new(IxExpr::Prim(prim, args, binder_ty.elem)));
        }
        // Fig 9: build1 k (λi. op t u) ~> op (build1 k (λi. t)) (build1 k (λi. u)).
        let args: Vec<Atom> = statuses
            .into_iter()
            .map(|status| Atom::Var(self.force(status)))
            .collect();
        let hint = self.program.vars[binder].hint.clone();
        Status::Batched(self.emit1(
            Expr::from(PrimApp(prim, args)),
            self.batched_ty(&binder_ty),
            &hint,
        ))
    }
}

/// index (op t u) ix ~> op (index t ix) (index u ix), for ix in range (Note [Pushing index
/// down] in `ops::build`): the elementwise primitives' rule, beside their batching rule.
pub fn push_into_prim(
    cx: &mut IndexPush,
    prim: Prim,
    args: &[Atom],
    source: VarId,
    index: &[Atom],
) -> Option<Expr> {
    let shape = cx.program.var_ty(source).shape.clone();
    let all_in_range = index
        .iter()
        .zip(&shape)
        .all(|(atom, bound)| cx.in_range(atom, *bound));
    if !all_in_range {
        return None;
    }
    let indexed = args.iter().map(|arg| cx.emit_index(*arg, index)).collect();
    Some(Expr::from(PrimApp(prim, indexed)))
}

/// The operand an elementwise operation can be replaced by, and the rule that says so.
fn arithmetic(cx: &Rewrite, prim: Prim, args: &[Atom]) -> Option<(Rule, Atom)> {
    let program = cx.program;
    // `kept` can stand for the result when it has the result's shape: the other operand has
    // the same shape or is a rank-0 scalar that broadcasts.
    let has_result_shape = |kept: &Atom, other: &Atom| {
        let other = program.atom_ty(other);
        other.rank() == 0 || program.atom_ty(kept).shape == other.shape
    };
    match (prim, args) {
        (Prim::Mul, [a, b]) if cx.is_one(b) && has_result_shape(a, b) => Some((Rule::MulByOne, *a)),
        (Prim::Mul, [a, b]) if cx.is_one(a) && has_result_shape(b, a) => Some((Rule::MulByOne, *b)),
        (Prim::Div, [a, b]) if cx.is_one(b) && has_result_shape(a, b) => Some((Rule::DivByOne, *a)),
        // Floor division of an integer by 1 is the integer, also for the most negative one;
        // of a float, it is `floor`.
        (Prim::IDiv, [a, b])
            if cx.is_one(b) && has_result_shape(a, b) && program.atom_ty(a).elem.is_integer() =>
        {
            Some((Rule::DivByOne, *a))
        }
        (Prim::Neg, [Atom::Var(inner)]) => match cx.defs.get(inner) {
            Some(Expr::Prim(PrimApp(Prim::Neg, inner_args))) => {
                Some((Rule::DoubleNegation, inner_args[0]))
            }
            _ => None,
        },
        (Prim::Cast(elem), [a]) if program.atom_ty(a).elem == elem => {
            Some((Rule::IdentityCast, *a))
        }
        _ => None,
    }
}
