//! Lowering of user types, `case` and interface methods (LANGUAGE.md §8).
//!
//! User types are gone after this: a value is the tuple its type's representation gives
//! (Note [Data representation] in `check/data.rs`), so a table of structs is one array per
//! field and a table of a type with several constructors a tag array plus field arrays.
//! `case` becomes a chain of `cond`s on tests of the tag and of literals (a test known at
//! compile time picks its alternative with no `cond`); under a `for` the BOT turns them into
//! selections, every alternative computed, as for `if`. A method is the body of the instance
//! whose head matches the concrete type, inlined: no dictionary survives.

use std::collections::HashMap;

use super::lower::{bug, error, Lowerer, Result, SVal};
use crate::check::builtins::Class;
use crate::check::classes::{match_head, InstanceDef};
use crate::check::data::DataTy;
use crate::check::typed::{TExpr, TPat};
use crate::check::types::{Rigid, Ty};
use crate::core::ir::{Atom, Expr, Scalar};
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
        let index = match ty {
            Ty::Tuple(_) => name.parse::<usize>().ok(),
            Ty::Data(data) => data.field_index(name).or_else(|| name.parse().ok()),
            _ => None,
        };
        match (value, index) {
            (SVal::Tuple(mut items), Some(index)) if index < items.len() => {
                Ok(items.swap_remove(index))
            }
            _ => bug(span, format!("no field `{name}` in a value of type {ty}")),
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
        let mut tests = Vec::with_capacity(alts.len());
        for (pat, _) in alts {
            tests.push(self.pattern_test(pat, &value, &scrutinee_ty, span)?);
        }
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
                let then_block = self.in_block(Vec::new(), |cx| {
                    cx.bind(pat, value.clone(), span)?;
                    let res = cx.lower(body)?;
                    cx.leaves(&res, body.span)
                })?;
                let else_block = self.in_block(Vec::new(), |cx| {
                    let res = cx.case_chain(value, rest, &tests[1..], ty, span)?;
                    cx.leaves(&res, span)
                })?;
                let binders = self.emit(
                    Expr::Cond {
                        cond,
                        then_block,
                        else_block,
                    },
                    result_tys,
                    "case",
                    span,
                );
                return Ok(self.assemble(ty, binders.into_iter().map(Atom::Var).collect()));
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
                self.prim(Prim::And, vec![tag_test, fields_test], span)
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
            all = self.prim(Prim::And, vec![all, test], span)?;
        }
        Ok(all)
    }

    /// The instance of `class` for concrete type `ty` declared in dx, with the types its
    /// variables stand for.
    pub(super) fn find_instance(
        &self,
        class: Class,
        ty: &Ty,
    ) -> Option<(InstanceDef, HashMap<Rigid, Ty>)> {
        // `sub` is a method of Dex's `Add`: a user instance of `Add` is dx's `Sub` too.
        let owner = if class == Class::Sub {
            Class::Add
        } else {
            class
        };
        self.env.instances_of(owner).find_map(|instance| {
            match match_head(&instance.head, &instance.vars, ty) {
                Ok(Some(bindings)) => Some((instance.clone(), bindings)),
                _ => None,
            }
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
            let name = self.env.class_name(class);
            return error(span, format!("there is no instance {name}({class_arg})"));
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
        let owner = if class == Class::Sub {
            Class::Add
        } else {
            class
        };
        if self.find_instance(owner, ty).is_none() {
            return Ok(None);
        }
        let Some(method) = self
            .env
            .class_defs
            .get(&owner)
            .and_then(|def| def.methods.iter().position(|method| method.name == name))
        else {
            return bug(
                span,
                format!("the class of an instance has no method `{name}`"),
            );
        };
        let mut value = self.lower_method(owner, method, std::slice::from_ref(ty), span)?;
        for arg in args {
            value = self.apply(value, arg, span)?;
        }
        Ok(Some(value))
    }
}
