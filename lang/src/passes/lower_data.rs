//! Lowering of user types, `case` and interface methods (docs/language.md).
//!
//! User types are gone after this: a value is the tuple its type's representation gives
//! (Note [Data representation] in `check/data.rs`), so a table of structs is one array per
//! field and a table of a type with several constructors a tag array plus field arrays.
//! `case` becomes a chain of `cond`s on tests of the tag and of literals (a test known at
//! compile time picks its alternative with no `cond`); under a `for` the BOT turns them into
//! selections, every alternative computed, as for `if`. A method is the body of the instance
//! whose head matches the concrete type, inlined: no dictionary survives.

use std::collections::HashMap;

use super::lower::{bug, compares, error, Lowerer, Result, SVal};
use crate::check::builtins::{Builtin, Class};
use crate::check::classes::{match_head, InstanceDef};
use crate::check::data::DataTy;
use crate::check::typed::{TExpr, TPat};
use crate::check::types::{Bound, RangeKind, Rigid, Size, Ty};
use crate::core::ir::{ArrTy, Atom, Elem, Expr, Scalar, Table};
use crate::prim::signature::ByMethod;
use crate::prim::Prim;
use crate::syntax::Span;

/// How many methods may be inlined inside one another (a method that calls itself at the same
/// type would otherwise never end).
const MAX_METHOD_DEPTH: usize = 256;

impl Lowerer<'_> {
    /// Constructor `con` as a value of type `ty` (concrete after resolution): the value itself
    /// for a constructor without fields, else a function waiting for its fields.
    pub(super) fn lower_con(&mut self, con: usize, ty: &Ty, span: Span) -> Result<SVal> {
        let ty = self.concrete(ty, span)?;
        let mut result = &ty;
        while let Ty::Fun { result: inner, .. } = result {
            result = inner;
        }
        let Ty::Data(data) = result else {
            return bug(span, "a constructor whose type is not a user type");
        };
        self.constructor(data.clone(), con, Vec::new(), span)
    }

    /// Constructor `con` applied to `args`: the value once every field is given.
    pub(super) fn constructor(
        &mut self,
        data: DataTy,
        con: usize,
        args: Vec<SVal>,
        span: Span,
    ) -> Result<SVal> {
        let n_fields = data.def.cons[con].fields.len();
        if args.len() < n_fields {
            return Ok(SVal::Con { data, con, args });
        }
        // A size field holds the size the type gives it (Note [Size fields]).
        let mut args = args;
        for (position, param) in &data.def.cons[con].size_fields {
            args[*position] = self.size_value(&data.args[*param], span)?;
        }
        if !data.def.is_tagged() {
            return Ok(SVal::Tuple(args));
        }
        // See Note [Data representation]: the other constructors' fields are zero.
        let mut items = vec![SVal::Arr(Atom::Lit(Scalar::U32(con as u32)))];
        let mut args = Some(args);
        for other in 0..data.def.cons.len() {
            let fields = match args.take_if(|_| other == con) {
                Some(args) => SVal::Tuple(args),
                None => self.zeros_of(&Ty::Tuple(data.fields(other)), span)?,
            };
            items.push(fields);
        }
        Ok(SVal::Tuple(items))
    }

    /// The size of index set `ix` as a `Nat` value: a literal, or the value of a `Nat` the
    /// block computes when it runs (a list made inside a loop, Note [Tables of run-time size]).
    fn size_value(&mut self, ix: &Ty, span: Span) -> Result<SVal> {
        if let Ty::Fin(Size::Local(local, _)) = self.concrete(ix, span)? {
            if let Some(value @ SVal::Arr(Atom::Var(_))) = self.local_value(local) {
                return Ok(value);
            }
        }
        let size = self.ix_size(ix, span)?;
        Ok(SVal::Arr(Atom::Lit(Scalar::U32(size as u32))))
    }

    /// A string literal: the `List Char` of its bytes (its length, then the table of them).
    pub(super) fn string(&mut self, text: &str, ty: &Ty, span: Span) -> Result<SVal> {
        let bytes: Vec<Atom> = text
            .bytes()
            .map(|byte| Atom::Lit(Scalar::U32(u32::from(byte))))
            .collect();
        let table = self.emit1(
            Expr::from(Table(bytes)),
            ArrTy::new(vec![text.len()], Elem::U32),
            "string",
            span,
        );
        self.remember_text(table, text);
        let len = SVal::Arr(Atom::Lit(Scalar::U32(text.len() as u32)));
        let Ty::Data(data) = ty else {
            return bug(span, "a string whose type is not a list");
        };
        self.constructor(data.clone(), 0, vec![len, SVal::Arr(table)], span)
    }

    /// The fields of a value made by constructor `con` (for a tagged type, wherever its tag
    /// points: `case` tests the tag).
    pub(super) fn con_fields(
        &self,
        value: SVal,
        con: usize,
        tagged: bool,
        span: Span,
    ) -> Result<Vec<SVal>> {
        let SVal::Tuple(mut items) = value else {
            return bug(
                span,
                "a constructor pattern on a value that is not a user type",
            );
        };
        if !tagged {
            return Ok(items);
        }
        if con + 1 >= items.len() {
            return bug(span, "a constructor pattern beyond the type's constructors");
        }
        match items.swap_remove(con + 1) {
            SVal::Tuple(fields) => Ok(fields),
            _ => bug(span, "the fields of a constructor are not a tuple"),
        }
    }

    /// `value.name` of a value of concrete type `ty`.
    pub(super) fn field(&self, value: SVal, ty: &Ty, name: &str, span: Span) -> Result<SVal> {
        // `ref.x` is a reference to the field (Note [Effects as cells]).
        let is_ref = matches!(value, SVal::Ref { .. });
        let target = match (is_ref, ty) {
            (true, Ty::Con(_, args)) => args.get(1).unwrap_or(ty),
            _ => ty,
        };
        let index = target.field_position(name);
        match (value, index) {
            (value @ SVal::Ref { .. }, Some(index)) => self.field_of_reference(value, index, span),
            (SVal::Tuple(mut items), Some(index)) if index < items.len() => {
                Ok(items.swap_remove(index))
            }
            _ => bug(
                span,
                format!("no field `{name}` in a value of type {target}"),
            ),
        }
    }

    /// `case scrutinee of alts`: the tests of every alternative, then the chain of `cond`s.
    pub(super) fn lower_case(
        &mut self,
        scrutinee: &TExpr,
        alts: &[(TPat, TExpr)],
        ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let scrutinee_ty = self.concrete(&scrutinee.ty, span)?;
        let value = self.lower(scrutinee)?;
        let ty = self.concrete(ty, span)?;
        // The last alternative needs no test: the checker made sure every value matches some
        // alternative.
        let mut tests = Vec::with_capacity(alts.len());
        for (pat, _) in &alts[..alts.len().saturating_sub(1)] {
            tests.push(self.pattern_test(pat, &value, &scrutinee_ty, span)?);
        }
        tests.push(Atom::Lit(Scalar::Bool(true)));
        self.case_chain(&value, alts, &tests, &ty, span)
    }

    /// The alternatives from the first of `alts` on: the first whose test holds. The last one
    /// needs no test (the checker made sure every value matches some alternative).
    fn case_chain(
        &mut self,
        value: &SVal,
        alts: &[(TPat, TExpr)],
        tests: &[Atom],
        ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let Some(((pat, body), rest)) = alts.split_first() else {
            return bug(span, "a `case` without alternatives");
        };
        let test = tests[0];
        let is_last = rest.is_empty();
        match test {
            Atom::Lit(Scalar::Bool(false)) if !is_last => {
                return self.case_chain(value, rest, &tests[1..], ty, span)
            }
            Atom::Lit(Scalar::Bool(true)) => {}
            _ if is_last => {}
            cond => {
                let result_tys = self.leaf_types(ty, span)?;
                let binders = self.effect_cond(
                    cond,
                    result_tys,
                    "case",
                    span,
                    |cx| {
                        cx.bind(pat, value.clone(), span)?;
                        let res = cx.lower(body)?;
                        cx.leaves(&res, body.span)
                    },
                    |cx| {
                        let res = cx.case_chain(value, rest, &tests[1..], ty, span)?;
                        cx.leaves(&res, span)
                    },
                )?;
                return Ok(self.assemble(ty, binders));
            }
        }
        self.bind(pat, value.clone(), span)?;
        self.lower(body)
    }

    /// Whether `value` (of concrete type `ty`) matches `pat`, as a `Bool` atom (a literal when
    /// known at compile time).
    fn pattern_test(&mut self, pat: &TPat, value: &SVal, ty: &Ty, span: Span) -> Result<Atom> {
        let yes = Atom::Lit(Scalar::Bool(true));
        match pat {
            TPat::Var(..) | TPat::Wild | TPat::Table(_) => Ok(yes),
            TPat::Tuple(pats) => {
                let (SVal::Tuple(items), Ty::Tuple(tys)) = (value, ty) else {
                    return bug(span, "a tuple pattern on a value that is not a tuple");
                };
                self.all_tests(pats, items, tys, span)
            }
            TPat::Con {
                con, tagged, args, ..
            } => {
                let Ty::Data(data) = ty else {
                    return bug(
                        span,
                        "a constructor pattern on a value that is not a user type",
                    );
                };
                let tag_test = match (tagged, value) {
                    (false, _) => yes,
                    (true, SVal::Tuple(items)) => match items.first() {
                        Some(SVal::Arr(tag)) => self.prim(
                            Prim::Eq,
                            vec![*tag, Atom::Lit(Scalar::U32(*con as u32))],
                            span,
                        )?,
                        _ => return bug(span, "a tagged value without its tag"),
                    },
                    (true, _) => return bug(span, "a tagged value that is not a tuple"),
                };
                let fields = self.con_fields(value.clone(), *con, *tagged, span)?;
                let fields_test = self.all_tests(args, &fields, &data.fields(*con), span)?;
                self.both(tag_test, fields_test, span)
            }
            TPat::Lit { lit, negated } => {
                let SVal::Arr(atom) = value else {
                    return bug(span, "a literal pattern on a value that is not a scalar");
                };
                let mut scalar = super::lower::literal(lit, ty, span)?;
                if *negated {
                    scalar = Prim::Neg.eval(&[scalar]);
                }
                self.prim(Prim::Eq, vec![*atom, Atom::Lit(scalar)], span)
            }
        }
    }

    /// The conjunction of the tests of `pats` on the values `items` of types `tys`.
    fn all_tests(&mut self, pats: &[TPat], items: &[SVal], tys: &[Ty], span: Span) -> Result<Atom> {
        let mut all = Atom::Lit(Scalar::Bool(true));
        for ((pat, item), ty) in pats.iter().zip(items).zip(tys) {
            let test = self.pattern_test(pat, item, ty, span)?;
            all = self.both(all, test, span)?;
        }
        Ok(all)
    }

    /// `a && b`, without the `&& True` of a pattern that always matches.
    fn both(&mut self, a: Atom, b: Atom, span: Span) -> Result<Atom> {
        match (a, b) {
            (Atom::Lit(Scalar::Bool(true)), other) | (other, Atom::Lit(Scalar::Bool(true))) => {
                Ok(other)
            }
            _ => self.prim(Prim::And, vec![a, b], span),
        }
    }

    /// The instance of `class` for concrete type `ty` declared in dx, with the types its
    /// variables stand for.
    pub(super) fn find_instance(
        &self,
        class: Class,
        ty: &Ty,
    ) -> Option<(InstanceDef, HashMap<Rigid, Ty>)> {
        self.env.instances_of(class).find_map(|instance| {
            match_head(&instance.head, &instance.vars, ty)
                .bindings()
                .map(|bindings| (instance.clone(), bindings))
        })
    }

    /// Method `method` of `class` at the types `inst` (the class's argument, then the
    /// method's own variables): the matching instance's definition, inlined.
    pub(super) fn lower_method(
        &mut self,
        class: Class,
        method: usize,
        inst: &[Ty],
        span: Span,
    ) -> Result<SVal> {
        let inst = inst
            .iter()
            .map(|ty| self.concrete(ty, span))
            .collect::<Result<Vec<_>>>()?;
        let Some(class_arg) = inst.first() else {
            return bug(span, "a method without its class argument");
        };
        let Some((instance, bindings)) = self.find_instance(class, class_arg) else {
            let instance = self.env.show_constraint(class, class_arg);
            return error(span, format!("there is no instance {instance}"));
        };
        let Some(method_impl) = instance.methods.get(method) else {
            return bug(span, "an instance without one of its class's methods");
        };
        if self.method_depth >= MAX_METHOD_DEPTH {
            return error(
                span,
                "this method calls itself without end (every method is inlined at its use)",
            );
        }
        let mut rigids = self.rigids.clone();
        rigids.extend(bindings);
        for (var, ty) in method_impl.method_vars.iter().zip(&inst[1..]) {
            rigids.insert(*var, ty.clone());
        }
        let outer = std::mem::replace(&mut self.rigids, rigids);
        self.method_depth += 1;
        let res = self.lower(&method_impl.def.body);
        self.method_depth -= 1;
        self.rigids = outer;
        res
    }
}

impl Lowerer<'_> {
    /// Method `name` of `class` applied to `args`, when an instance declared in dx gives the
    /// class's methods for `ty` (a user instance of one of dx's built-in classes); `None`
    /// when the type's own (built-in or structural) operation applies.
    pub(super) fn call_user_method(
        &mut self,
        class: Class,
        name: &str,
        ty: &Ty,
        args: Vec<SVal>,
        span: Span,
    ) -> Result<Option<SVal>> {
        if self.find_instance(class, ty).is_none() {
            return Ok(None);
        }
        let Some(method) = self
            .env
            .class_defs
            .get(&class)
            .and_then(|def| def.methods.iter().position(|method| method.name == name))
        else {
            return bug(
                span,
                format!("the class of an instance has no method `{name}`"),
            );
        };
        let mut value = self.lower_method(class, method, std::slice::from_ref(ty), span)?;
        for arg in args {
            value = self.apply(value, arg, span)?;
        }
        Ok(Some(value))
    }
}

// Note [User instances of built-in classes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// dx's arithmetic, comparisons, `zero`, `.*` and `sum` act on numbers, and on tuples, tables
// and structs component by component. A user type may instead give an instance of the class
// (`instance Add(Complex)`, `instance Ord(Priority)`): the operation at that type is then the
// instance's method (Dex's `add`, `sub`, `zero`, `mul`, `divide`, `scale_vec`, `==`, `<`,
// `>`), and at a tuple, table or struct that contains such a type it goes component by
// component down to it. `sum` adds with the instance's `add` from its `zero` (a reduction,
// parallel where the elements are scalars). Comparisons use an instance at the compared type
// itself; inside a tuple or table they compare leaves (Note [Data representation]).

impl Lowerer<'_> {
    /// A built-in at a type where an instance declared in dx gives its meaning (Note [User
    /// instances of built-in classes]); `None` where the built-in's own rule applies.
    pub(super) fn lower_by_instances(
        &mut self,
        builtin: Builtin,
        args: &[SVal],
        ty: &Ty,
        result_ty: &Ty,
        span: Span,
    ) -> Result<Option<SVal>> {
        let any_builtin_instance = self
            .env
            .instances
            .iter()
            .any(|instance| !matches!(instance.class, Class::User(_)));
        if !any_builtin_instance {
            return Ok(None);
        }
        // `zero` takes no argument: its type is the value's.
        if builtin == Builtin::Zero {
            if self.has_instance_inside(Class::Add, result_ty) {
                return self.zero_by_instances(result_ty, span).map(Some);
            }
            return Ok(None);
        }
        if builtin == Builtin::One {
            return self.call_user_method(Class::Mul, "one", result_ty, Vec::new(), span);
        }
        let Ty::Fun { param, result, .. } = ty else {
            return Ok(None);
        };
        match builtin {
            Builtin::Prim(prim) => match prim_class(prim) {
                Some(class) if self.has_instance_inside(class, param) => {
                    self.prim_by_instances(prim, args, param, span).map(Some)
                }
                _ => Ok(None),
            },
            Builtin::Scale => match &**result {
                Ty::Fun {
                    param: value_ty, ..
                } if self.has_instance_inside(Class::VSpace, value_ty) => self
                    .scale_by_instances(&args[0], &args[1], value_ty, span)
                    .map(Some),
                _ => Ok(None),
            },
            Builtin::Sum if self.has_instance_inside(Class::Add, result_ty) => self
                .sum_by_instances(&args[0], param, result_ty, span)
                .map(Some),
            _ => Ok(None),
        }
    }

    /// Whether a user instance of `class` applies to `ty` or a type inside it.
    fn has_instance_inside(&self, class: Class, ty: &Ty) -> bool {
        ty.any(&mut |inner| {
            matches!(inner, Ty::Data(_)) && self.find_instance(class, inner).is_some()
        })
    }

    /// `prim` on values of type `ty`: the instance's method at a type that has one, component
    /// by component above it, the built-in rule elsewhere.
    fn prim_by_instances(
        &mut self,
        prim: Prim,
        args: &[SVal],
        ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        if let Some(res) = self.prim_method(prim, args, ty, span)? {
            return Ok(res);
        }
        let class = prim_class(prim);
        let componentwise =
            !compares(prim) && class.is_some_and(|class| self.has_instance_inside(class, ty));
        if componentwise {
            if let Some(parts) = component_types(ty) {
                let mut items = Vec::with_capacity(parts.len());
                for (position, part) in parts.iter().enumerate() {
                    let part_args = args
                        .iter()
                        .map(|arg| component(arg, position, span))
                        .collect::<Result<Vec<_>>>()?;
                    items.push(self.prim_by_instances(prim, &part_args, part, span)?);
                }
                return Ok(SVal::Tuple(items));
            }
            if let Ty::Table(_, elem) = ty {
                let elem = (**elem).clone();
                let args = args.to_vec();
                return self.build_table(ty, "for", span, |cx, flat| {
                    let rows = args
                        .iter()
                        .map(|arg| cx.index_value(arg, flat, span))
                        .collect::<Result<Vec<_>>>()?;
                    let res = cx.prim_by_instances(prim, &rows, &elem, span)?;
                    cx.leaves(&res, span)
                });
            }
        }
        self.prim_builtin(prim, args, ty, span)
    }

    /// `prim` at a type with a user instance of its class: Dex's method, or what `prim`
    /// derives from the methods (`!=` from `==`, `<=` from `>`, `min` from `<`, `neg` from
    /// `sub` and `zero`).
    fn prim_method(
        &mut self,
        prim: Prim,
        args: &[SVal],
        ty: &Ty,
        span: Span,
    ) -> Result<Option<SVal>> {
        if !matches!(ty, Ty::Data(_)) {
            return Ok(None);
        }
        let arg = |k: usize| args[k].clone();
        let method = |cx: &mut Self, class, name: &str, args: Vec<SVal>| {
            cx.call_user_method(class, name, ty, args, span)
        };
        let negate = |cx: &mut Self, value: Option<SVal>| -> Result<Option<SVal>> {
            match value {
                Some(SVal::Arr(atom)) => {
                    Ok(Some(SVal::Arr(cx.prim(Prim::Not, vec![atom], span)?)))
                }
                Some(_) => bug(span, "a comparison method that gives no Bool"),
                None => Ok(None),
            }
        };
        let Some((class, by_method)) = prim_class(prim).zip(prim.signature().method) else {
            return Ok(None);
        };
        let operands = || vec![arg(0), arg(1)];
        match by_method {
            ByMethod::Call(name) => method(self, class, name, operands()),
            ByMethod::Negated(name) => {
                let value = method(self, class, name, operands())?;
                negate(self, value)
            }
            ByMethod::FromZero(name) => {
                if self.find_instance(class, ty).is_none() {
                    return Ok(None);
                }
                let zero = self.zero_by_instances(ty, span)?;
                method(self, class, name, vec![zero, arg(0)])
            }
            // The first argument on ties, as the built-in `min` and `max`.
            ByMethod::Choose(name) => {
                let Some(SVal::Arr(second_wins)) = method(self, class, name, vec![arg(1), arg(0)])?
                else {
                    return Ok(None);
                };
                let chosen = self.lift(
                    Prim::Select,
                    &[SVal::Arr(second_wins), arg(1), arg(0)],
                    span,
                )?;
                Ok(Some(chosen))
            }
        }
    }

    /// `zero` of type `ty`: the instance's `zero` at a type with a user `Add`, component by
    /// component above it, zeros elsewhere.
    pub(super) fn zero_by_instances(&mut self, ty: &Ty, span: Span) -> Result<SVal> {
        if let Some(zero) = self.call_user_method(Class::Add, "zero", ty, Vec::new(), span)? {
            return Ok(zero);
        }
        if !self.has_instance_inside(Class::Add, ty) {
            return self.zeros_of(ty, span);
        }
        if let Some(parts) = component_types(ty) {
            let items = parts
                .iter()
                .map(|part| self.zero_by_instances(part, span))
                .collect::<Result<Vec<_>>>()?;
            return Ok(SVal::Tuple(items));
        }
        let Ty::Table(_, elem) = ty else {
            return self.zeros_of(ty, span);
        };
        let elem = (**elem).clone();
        self.build_table(ty, "zero", span, |cx, _| {
            let zero = cx.zero_by_instances(&elem, span)?;
            cx.leaves(&zero, span)
        })
    }

    /// `s .* x` for `x` of type `ty`: the instance's `scale_vec` at a type with a user
    /// `VSpace`, component by component above it, each float scaled elsewhere.
    fn scale_by_instances(
        &mut self,
        scalar: &SVal,
        value: &SVal,
        ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let args = vec![scalar.clone(), value.clone()];
        if let Some(scaled) = self.call_user_method(Class::VSpace, "scale_vec", ty, args, span)? {
            return Ok(scaled);
        }
        if !self.has_instance_inside(Class::VSpace, ty) {
            return self.scale_leaves(scalar, value, ty, span);
        }
        if let Some(parts) = component_types(ty) {
            let mut items = Vec::with_capacity(parts.len());
            for (position, part) in parts.iter().enumerate() {
                let item = component(value, position, span)?;
                items.push(self.scale_by_instances(scalar, &item, part, span)?);
            }
            return Ok(SVal::Tuple(items));
        }
        let Ty::Table(_, elem) = ty else {
            return self.scale_leaves(scalar, value, ty, span);
        };
        let elem = (**elem).clone();
        let (scalar, value) = (scalar.clone(), value.clone());
        self.build_table(ty, "scale", span, |cx, flat| {
            let row = cx.index_value(&value, flat, span)?;
            let scaled = cx.scale_by_instances(&scalar, &row, &elem, span)?;
            cx.leaves(&scaled, span)
        })
    }

    /// `sum xs` whose elements' type has a user `Add` inside: a reduction with `+` at that
    /// type (through the instances) from its `zero`.
    fn sum_by_instances(
        &mut self,
        xs: &SVal,
        table_ty: &Ty,
        elem_ty: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let zero = self.zero_by_instances(elem_ty, span)?;
        let add_ty = Ty::funs(vec![elem_ty.clone(), elem_ty.clone()], elem_ty.clone());
        let add = SVal::Partial {
            builtin: Builtin::Prim(Prim::Add),
            args: Vec::new(),
            ty: add_ty.clone(),
            span,
        };
        let reduce_ty = Ty::funs(
            vec![table_ty.clone(), elem_ty.clone(), add_ty],
            elem_ty.clone(),
        );
        self.lower_monoid(
            Builtin::Reduce,
            vec![xs.clone(), zero, add],
            &reduce_ty,
            elem_ty,
            span,
        )
    }
}

impl Lowerer<'_> {
    /// The size of a range (Note [Ranges]) as an `I64` atom computed from its bound's value,
    /// or `None` for any other index set (whose size is static).
    pub(super) fn range_size(&mut self, ix: &Ty, span: Span) -> Result<Option<Atom>> {
        let (kind, of, ordinal) = match self.range_bound(ix, span)? {
            Some(parts) => parts,
            None => return Ok(None),
        };
        self.range_size_at(kind, &of, ordinal, span).map(Some)
    }

    /// The size of the range of kind `kind` of `of` whose bound has the ordinal `ordinal`.
    pub(super) fn range_size_at(
        &mut self,
        kind: RangeKind,
        of: &Ty,
        ordinal: Atom,
        span: Span,
    ) -> Result<Atom> {
        let total = Atom::Lit(Scalar::I64(self.ix_size(of, span)? as i64));
        let one = Atom::Lit(Scalar::I64(1));
        let size = match kind {
            RangeKind::UpTo => self.prim(Prim::Add, vec![ordinal, one], span)?,
            RangeKind::Before => ordinal,
            RangeKind::From => self.prim(Prim::Sub, vec![total, ordinal], span)?,
            RangeKind::After => {
                let rest = self.prim(Prim::Sub, vec![total, ordinal], span)?;
                self.prim(Prim::Sub, vec![rest, one], span)?
            }
        };
        Ok(size)
    }

    /// A range's kind, the index set it is a range of, and its bound's ordinal in that set.
    fn range_bound(&mut self, ix: &Ty, span: Span) -> Result<Option<(RangeKind, Ty, Atom)>> {
        let Ty::Range { kind, of, bound } = ix else {
            return Ok(None);
        };
        let Bound::Local(local, name) = bound else {
            return bug(
                span,
                format!("the range {ix} outside the table it belongs to"),
            );
        };
        let Some(value) = self.locals.get(local).cloned() else {
            return error(
                span,
                format!("the index `{name}` of the range {ix} is not in scope here"),
            );
        };
        let ordinal = self.flat_index(&value, of, span)?;
        Ok(Some((*kind, (**of).clone(), ordinal)))
    }

    /// The leaves of a table element at position `flat`, zero where `flat` is past `size`.
    pub(super) fn zero_beyond(
        &mut self,
        leaves: Vec<Atom>,
        flat: Atom,
        size: Atom,
        span: Span,
    ) -> Result<Vec<Atom>> {
        let inside = self.prim(Prim::Lt, vec![flat, size], span)?;
        leaves
            .into_iter()
            .map(|leaf| {
                let zero = Atom::Lit(Scalar::zero(self.atom_ty(&leaf).elem));
                self.prim(Prim::Select, vec![inside, leaf, zero], span)
            })
            .collect()
    }

    /// `inject j`: the element of `n` that the index `j` of a range of `n` stands for.
    pub(super) fn inject(
        &mut self,
        value: &SVal,
        ix: &Ty,
        result: &Ty,
        span: Span,
    ) -> Result<SVal> {
        let Some((kind, of, ordinal)) = self.range_bound(ix, span)? else {
            return self.subset_method("inject'", ix, result, value, span);
        };
        let position = self.flat_index(value, ix, span)?;
        let offset = match kind {
            RangeKind::UpTo | RangeKind::Before => Atom::Lit(Scalar::I64(0)),
            RangeKind::From => ordinal,
            RangeKind::After => {
                self.prim(Prim::Add, vec![ordinal, Atom::Lit(Scalar::I64(1))], span)?
            }
        };
        let flat = self.prim(Prim::Add, vec![position, offset], span)?;
        self.unflatten_index(flat, &of, span)
    }

    /// Method `method` of the `Subset(subset, superset)` instance the checker found, applied
    /// to `value` (`inject` and `project` of an index set that is no range).
    fn subset_method(
        &mut self,
        method: &str,
        subset: &Ty,
        superset: &Ty,
        value: &SVal,
        span: Span,
    ) -> Result<SVal> {
        let Some(class) = self.env.class_names.get("Subset").copied() else {
            return bug(
                span,
                format!("`{method}` of {subset}, which is not a range"),
            );
        };
        let ty = Ty::Tuple(vec![
            self.concrete(subset, span)?,
            self.concrete(superset, span)?,
        ]);
        match self.call_user_method(class, method, &ty, vec![value.clone()], span)? {
            Some(value) => Ok(value),
            None => error(
                span,
                format!(
                    "there is no instance {}",
                    self.env.show_constraint(class, &ty)
                ),
            ),
        }
    }

    /// `unsafe_project j` / `project j` (`checked`) at `result` (the range, or a `Maybe` of
    /// it): the inverse of `inject`; `project` gives `Nothing` outside the range, its index
    /// zero there (Note [Data representation]).
    pub(super) fn project(
        &mut self,
        value: &SVal,
        ix: &Ty,
        result: &Ty,
        checked: bool,
        span: Span,
    ) -> Result<SVal> {
        let range = match (checked, result) {
            (true, Ty::Data(maybe)) => maybe.args[0].clone(),
            (_, other) => other.clone(),
        };
        let Some((kind, of, bound)) = self.range_bound(&range, span)? else {
            let method = if checked {
                "project'"
            } else {
                "unsafe_project'"
            };
            return self.subset_method(method, &range, ix, value, span);
        };
        let position = self.flat_index(value, &of, span)?;
        let (offset, inside) = match kind {
            RangeKind::UpTo => (Atom::Lit(Scalar::I64(0)), Prim::Le),
            RangeKind::Before => (Atom::Lit(Scalar::I64(0)), Prim::Lt),
            RangeKind::From => (bound, Prim::Ge),
            RangeKind::After => (
                self.prim(Prim::Add, vec![bound, Atom::Lit(Scalar::I64(1))], span)?,
                Prim::Gt,
            ),
        };
        let flat = self.prim(Prim::Sub, vec![position, offset], span)?;
        if !checked {
            return self.unflatten_index(flat, &range, span);
        }
        let inside = self.prim(inside, vec![position, bound], span)?;
        let flat = self.prim(
            Prim::Select,
            vec![inside, flat, Atom::Lit(Scalar::I64(0))],
            span,
        )?;
        let index = self.unflatten_index(flat, &range, span)?;
        let Ty::Data(maybe) = result else {
            return bug(span, "project's result is not a Maybe");
        };
        let just = self.constructor(maybe.clone(), 1, vec![index], span)?;
        let SVal::Tuple(mut items) = just else {
            return bug(span, "a Maybe that is not tagged");
        };
        // `Just` (tag 1) inside the range, `Nothing` (tag 0) outside.
        items[0] = SVal::Arr(self.prim(
            Prim::Select,
            vec![inside, Atom::Lit(Scalar::U32(1)), Atom::Lit(Scalar::U32(0))],
            span,
        )?);
        Ok(SVal::Tuple(items))
    }
}

/// The class whose user instances give `prim` its meaning at a user type: its interface's,
/// when it reads through the interface's methods (`prim::signature`).
fn prim_class(prim: Prim) -> Option<Class> {
    let signature = prim.signature();
    signature.method?;
    signature.interface.map(Class::of)
}

/// The component types of a tuple or a struct (whose values are the tuples of their fields).
fn component_types(ty: &Ty) -> Option<Vec<Ty>> {
    match ty {
        Ty::Tuple(items) => Some(items.clone()),
        Ty::Data(data) if !data.def.is_tagged() => Some(data.fields(0)),
        _ => None,
    }
}

/// Component `position` of a tuple value, or the value itself when it is shared by every
/// component (a scalar broadcast, as `lift` does).
fn component(value: &SVal, position: usize, span: Span) -> Result<SVal> {
    match value {
        SVal::Tuple(items) => items
            .get(position)
            .cloned()
            .map_or_else(|| bug(span, "a component beyond a tuple's"), Ok),
        other => Ok(other.clone()),
    }
}
