//! Lowering of `<>` and `mempty` (Note [Appending]): lists are joined here; a user type's
//! `Monoid` instance gives its own.

use super::lower::{bug, Lowerer, Result, SVal};
use super::lower_show::index_lit;
use crate::check::builtins::Class;
use crate::check::types::{Size, Ty};
use crate::core::ir::{Atom, Scalar};
use crate::prim::Prim;
use crate::syntax::Span;

// Note [Appending]
// ~~~~~~~~~~~~~~~~
// Dex's `<>` and `mempty` are the methods of its `Monoid`; its lists are one instance. dx's
// lists carry their length in their type (Note [Size fields]), so `xs <> ys` has a type of
// its own (the sum of the lengths), which no method signature `(a, a) -> a` can give. `<>`
// is thus a built-in: the checker decides, once the operands' types are known, whether it
// joins lists (the result's length is the sum) or is the `<>` of a `Monoid` instance at the
// operands' type (the result has that type); `mempty` is the empty list or the instance's
// `mempty`. A table of the joined list reads the first list below its length and the second
// above, for every element at once (a `select`, vectorised and fused as any other).

impl Lowerer<'_> {
    /// `x <> y` at the concrete type `ty` (of the built-in) with result type `result_ty`.
    pub(super) fn append(
        &mut self,
        args: &[SVal],
        ty: &Ty,
        result_ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let Ty::Fun { param, .. } = ty else {
            return bug(span, "`<>` of a non-function type");
        };
        let Ty::Data(list) = result_ty else {
            return self.monoid_method("<>", param, args.to_vec(), span);
        };
        if list.def.name != "List" {
            return self.monoid_method("<>", param, args.to_vec(), span);
        }
        let Some(Ty::Fin(len)) = list.args.get(1) else {
            return bug(span, "a list type without its length");
        };
        let len = self.ix_size(&Ty::Fin(len.clone()), span)?;
        let elem = list.args[0].clone();
        let xs = self.leaves(&args[0], span)?;
        let ys = self.leaves(&args[1], span)?;
        let (nx, ny) = (self.atom_ty(&xs[1]).shape[0], self.atom_ty(&ys[1]).shape[0]);
        let table_ty = Ty::table(Ty::Fin(Size::Const(len as u64)), elem);
        let table = self.build_table(&table_ty, "joined", span, |cx, k| {
            let first = cx.prim(Prim::Lt, vec![k, index_lit(nx)], span)?;
            let at_y = cx.prim(Prim::Sub, vec![k, index_lit(nx)], span)?;
            let mut out = Vec::new();
            for (&x, &y) in xs[1..].iter().zip(&ys[1..]) {
                let from_x = cx.element(x, k, nx, span)?;
                let from_y = cx.element(y, at_y, ny, span)?;
                match (from_x, from_y) {
                    (Some(a), Some(b)) => {
                        let shape = cx.atom_ty(&a).shape;
                        let first = cx.broadcast(first, &shape, span);
                        out.push(cx.prim(Prim::Select, vec![first, a, b], span)?);
                    }
                    (Some(only), None) | (None, Some(only)) => out.push(only),
                    (None, None) => {
                        return bug(span, "joining two empty lists into a non-empty one")
                    }
                }
            }
            Ok(out)
        })?;
        let len = SVal::Arr(Atom::Lit(Scalar::U32(len as u32)));
        self.constructor(list.clone(), 0, vec![len, table], span)
    }

    /// `mempty` at type `ty`.
    pub(super) fn mempty(&mut self, ty: &Ty, span: Span) -> Result<SVal> {
        match ty {
            Ty::Data(list) if list.def.name == "List" => {
                let table_ty = Ty::table(Ty::Fin(Size::Const(0)), list.args[0].clone());
                let table = self.zeros_of(&table_ty, span)?;
                let len = SVal::Arr(Atom::Lit(Scalar::U32(0)));
                self.constructor(list.clone(), 0, vec![len, table], span)
            }
            _ => self.monoid_method("mempty", ty, Vec::new(), span),
        }
    }

    /// Element `at` (clamped into the table) of a table of `n` rows; `None` when it has none.
    pub(super) fn element(
        &mut self,
        table: Atom,
        at: Atom,
        n: usize,
        span: Span,
    ) -> Result<Option<Atom>> {
        if n == 0 {
            return Ok(None);
        }
        let at = self.prim(Prim::Max, vec![at, index_lit(0)], span)?;
        let at = self.prim(Prim::Min, vec![at, index_lit(n - 1)], span)?;
        match self.index_value(&SVal::Arr(table), at, span)? {
            SVal::Arr(atom) => Ok(Some(atom)),
            _ => bug(span, "a leaf indexed to a non-array"),
        }
    }

    /// Method `name` of the `Monoid` instance at `ty`.
    fn monoid_method(&mut self, name: &str, ty: &Ty, args: Vec<SVal>, span: Span) -> Result<SVal> {
        match self.call_user_method(Class::Monoid, name, ty, args, span)? {
            Some(value) => Ok(value),
            None => super::lower::error(
                span,
                format!(
                    "there is no instance Monoid({ty}): declare one with `instance Monoid({ty})`"
                ),
            ),
        }
    }
}
