//! Equality and ordering of structured values (tuples and tables), part of the lowering.
//!
//! Scalars compare with the comparison primitives. Tuples and tables compare as in Dex's `Eq`
//! and `Ord` instances for pairs and tables: `==` holds when every component (every element)
//! is equal, and the orderings are lexicographic, components in order and table elements in
//! row-major order. `min` and `max` of structured values select a whole value by that
//! ordering (ties pick the first argument, as for scalars).
//!
//! Assumes: both operands have the same concrete type (the checker unified them), except that
//! `==` and `!=` may compare values whose hidden sizes differ (lists of different lengths).

use super::lower::{bug, Lowerer, Result, SVal};
use crate::check::types::Ty;
use crate::core::ir::{ArrTy, Atom, Elem, Expr, Fold, Index, Scalar, Transpose};
use crate::prim::Prim;
use crate::syntax::Span;

// Note [Ordering codes]
// ~~~~~~~~~~~~~~~~~~~~~
// An ordering of structured values first computes, at each position, an `I32` code saying how
// the two sides compare there: `EQUAL`, `LESS`, `GREATER`, or `UNORDERED` (a NaN is involved).
// Components combine lexicographically: the first code that is not `EQUAL` decides (a `select`
// for the components of a tuple, a sequential `fold` along a table axis). The operator then
// reads the final code: `<` is `LESS`, `<=` is `LESS` or `EQUAL`, and so on, so a NaN where the
// comparison is decided makes every ordering false, as it does for scalars (IEEE 754).

const EQUAL: i32 = 0;
const LESS: i32 = -1;
const GREATER: i32 = 1;
const UNORDERED: i32 = 2;

fn code(value: i32) -> Atom {
    Atom::Lit(Scalar::I32(value))
}

/// Whether values of this type are compared by `compare_structured` rather than by a primitive.
pub(super) fn is_structured(ty: &Ty) -> bool {
    matches!(ty, Ty::Tuple(_) | Ty::Table(..) | Ty::Data(_))
}

impl Lowerer<'_> {
    /// `lhs op rhs` for a comparison, `min` or `max` on structured values of type `ty`.
    pub(super) fn compare_structured(
        &mut self,
        prim: Prim,
        ty: &Ty,
        lhs: &SVal,
        rhs: &SVal,
        span: Span,
    ) -> Result<SVal> {
        let ty = self.concrete(ty, span)?;
        let lhs_leaves = self.leaves(lhs, span)?;
        let rhs_leaves = self.leaves(rhs, span)?;
        // Values that differ in a hidden size (lists of different lengths: the checker lets
        // `==` compare them, `equal_up_to_hidden_sizes`) are not equal.
        let same_shapes = lhs_leaves.len() == rhs_leaves.len()
            && lhs_leaves
                .iter()
                .zip(&rhs_leaves)
                .all(|(a, b)| self.atom_ty(a) == self.atom_ty(b));
        if !same_shapes && (prim == Prim::Eq || prim == Prim::Ne) {
            return Ok(SVal::Arr(Atom::Lit(Scalar::Bool(prim == Prim::Ne))));
        }
        let res = match prim {
            Prim::Eq => self.all_equal(&lhs_leaves, &rhs_leaves, span)?,
            Prim::Ne => {
                let equal = self.all_equal(&lhs_leaves, &rhs_leaves, span)?;
                self.prim(Prim::Not, vec![equal], span)?
            }
            Prim::Lt | Prim::Gt | Prim::Le | Prim::Ge => {
                let code = self.ordering(&ty, &lhs_leaves, &rhs_leaves, span)?;
                self.read_code(prim, code, span)?
            }
            // `max a b = if a < b then b else a`; `min a b = if b < a then b else a`.
            Prim::Max | Prim::Min => {
                let (first, second) = if prim == Prim::Max {
                    (&lhs_leaves, &rhs_leaves)
                } else {
                    (&rhs_leaves, &lhs_leaves)
                };
                let code = self.ordering(&ty, first, second, span)?;
                let take_rhs = self.read_code(Prim::Lt, code, span)?;
                return self.lift(
                    Prim::Select,
                    &[SVal::Arr(take_rhs), rhs.clone(), lhs.clone()],
                    span,
                );
            }
            _ => return bug(span, format!("{} on structured values", prim.name())),
        };
        Ok(SVal::Arr(res))
    }

    /// Whether every leaf of `lhs` equals the corresponding leaf of `rhs`, element by element.
    fn all_equal(&mut self, lhs: &[Atom], rhs: &[Atom], span: Span) -> Result<Atom> {
        let mut all = Atom::Lit(Scalar::Bool(true));
        for (&a, &b) in lhs.iter().zip(rhs) {
            let equal = self.prim(Prim::Eq, vec![a, b], span)?;
            let leaf_equal = self.all_true(equal, span)?;
            all = self.prim(Prim::And, vec![all, leaf_equal], span)?;
        }
        Ok(all)
    }

    /// The comparison `prim` read from an ordering code (Note [Ordering codes]).
    fn read_code(&mut self, prim: Prim, code_atom: Atom, span: Span) -> Result<Atom> {
        let is = |cx: &mut Self, value| cx.prim(Prim::Eq, vec![code_atom, code(value)], span);
        match prim {
            Prim::Lt => is(self, LESS),
            Prim::Gt => is(self, GREATER),
            Prim::Le | Prim::Ge => {
                let strict = is(self, if prim == Prim::Le { LESS } else { GREATER })?;
                let equal = is(self, EQUAL)?;
                self.prim(Prim::Or, vec![strict, equal], span)
            }
            _ => bug(span, "not an ordering"),
        }
    }

    /// The ordering code of two values of type `ty` given by their leaves.
    fn ordering(&mut self, ty: &Ty, lhs: &[Atom], rhs: &[Atom], span: Span) -> Result<Atom> {
        let (mut lhs, mut rhs) = (lhs.iter().copied(), rhs.iter().copied());
        self.ordering_at(ty, &mut lhs, &mut rhs, &[], span)
    }

    /// The ordering codes of values of type `ty` whose leaves (taken from the iterators) carry
    /// the extra leading axes `batch`: one code per position of `batch`.
    fn ordering_at(
        &mut self,
        ty: &Ty,
        lhs: &mut impl Iterator<Item = Atom>,
        rhs: &mut impl Iterator<Item = Atom>,
        batch: &[usize],
        span: Span,
    ) -> Result<Atom> {
        match ty {
            // Tag first, then the fields (Note [Data representation]).
            Ty::Data(data) => self.ordering_at(&data.repr(), lhs, rhs, batch, span),
            Ty::Tuple(items) => {
                let mut res = code(EQUAL);
                for item in items {
                    let item_code = self.ordering_at(item, lhs, rhs, batch, span)?;
                    res = self.first_decisive(res, item_code, span)?;
                }
                Ok(res)
            }
            Ty::Table(ix, elem) => {
                let size = self.ix_size(ix, span)?;
                let mut inner = batch.to_vec();
                inner.push(size);
                let codes = self.ordering_at(elem, lhs, rhs, &inner, span)?;
                self.first_decisive_along(codes, batch, size, span)
            }
            _ => match (lhs.next(), rhs.next()) {
                (Some(a), Some(b)) => self.scalar_code(a, b, span),
                _ => bug(span, "missing leaves in a comparison"),
            },
        }
    }

    fn scalar_code(&mut self, a: Atom, b: Atom, span: Span) -> Result<Atom> {
        let less = self.prim(Prim::Lt, vec![a, b], span)?;
        let equal = self.prim(Prim::Eq, vec![a, b], span)?;
        let greater = self.prim(Prim::Gt, vec![a, b], span)?;
        let res = self.prim(
            Prim::Select,
            vec![greater, code(GREATER), code(UNORDERED)],
            span,
        )?;
        let res = self.prim(Prim::Select, vec![equal, code(EQUAL), res], span)?;
        self.prim(Prim::Select, vec![less, code(LESS), res], span)
    }

    /// `first` unless it is `EQUAL`, then `second`.
    fn first_decisive(&mut self, first: Atom, second: Atom, span: Span) -> Result<Atom> {
        if first == code(EQUAL) {
            return Ok(second);
        }
        let undecided = self.prim(Prim::Eq, vec![first, code(EQUAL)], span)?;
        self.prim(Prim::Select, vec![undecided, second, first], span)
    }

    /// Reduces codes of shape `batch ++ [size]` along their last axis: the first decisive code
    /// of each row, by a fold over the axis.
    fn first_decisive_along(
        &mut self,
        codes: Atom,
        batch: &[usize],
        size: usize,
        span: Span,
    ) -> Result<Atom> {
        let rows = if batch.is_empty() {
            codes
        } else {
            // The axis to reduce becomes the outermost one.
            let mut perm = vec![batch.len()];
            perm.extend(0..batch.len());
            let mut shape = vec![size];
            shape.extend(batch);
            let array = codes;
            self.emit1(
                Expr::from(Transpose { perm, array }),
                ArrTy::new(shape, Elem::I32),
                "rows",
                span,
            )
        };
        let row_ty = ArrTy::new(batch.to_vec(), Elem::I32);
        let index_var = self.program.new_var(ArrTy::scalar(Elem::I64), "i");
        let carry_var = self.program.new_var(row_ty.clone(), "code");
        let body = self.in_block(vec![index_var, carry_var], |cx| {
            let index = vec![Atom::Var(index_var)];
            let row = cx.emit1(
                Expr::from(Index { array: rows, index }),
                row_ty.clone(),
                "row",
                span,
            );
            Ok(vec![cx.first_decisive(Atom::Var(carry_var), row, span)?])
        })?;
        let init = vec![self.broadcast(code(EQUAL), batch, span)];
        let res = self.emit(
            Expr::from(Fold { size, init, body }),
            vec![row_ty],
            "order",
            span,
        );
        Ok(Atom::Var(res[0]))
    }
}
