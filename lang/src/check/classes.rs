//! Interfaces and instances (docs/language.md): what `interface` and `instance` declarations make,
//! and the methods a user instance of one of dx's built-in classes defines.
//!
//! Instances are resolved at compile time: the checker decides that an instance exists for a
//! type (`Infer::class_holds`), and the lowering, which knows every type concretely, picks the
//! instance by matching its head against the type (`match_head`) and inlines the method, as it
//! inlines every function. No dictionary survives lowering.

use std::collections::HashMap;

use super::builtins::Class;
use super::typed::DefInfo;
use super::types::{BaseTy, Rigid, Ty};
use crate::syntax::ast::FunDef;
use crate::syntax::Span;

/// An interface: a class of types with methods.
///
/// An interface of several parameters (`interface TangentSpace(manifold, tangent|VSpace)`)
/// is a class of tuples of types: its class argument is the tuple of its parameters, an
/// instance's head the tuple of its arguments, and everything that matches heads against
/// types (`match_head`) serves it unchanged (Note [Interfaces of several parameters]).
#[derive(Clone, Debug)]
pub struct ClassDef {
    pub class: Class,
    pub name: String,
    /// The class variables, as the method signatures mention them, in order.
    pub params: Vec<ClassParam>,
    pub methods: Vec<MethodDef>,
}

#[derive(Clone, Debug)]
pub struct ClassParam {
    pub rigid: Rigid,
    pub name: String,
    /// Classes an instance's type must also be in here (`interface VSpace(a|Add)`).
    pub supers: Vec<Class>,
}

impl ClassDef {
    /// The classes of a one-parameter interface's instances; none for several parameters,
    /// whose classes are per parameter.
    pub fn supers(&self) -> &[Class] {
        match self.params.as_slice() {
            [param] => &param.supers,
            _ => &[],
        }
    }

    /// The class argument made of one type per parameter: the type itself for one parameter,
    /// their tuple for several.
    pub fn class_arg(&self, mut args: Vec<Ty>) -> Ty {
        if self.params.len() == 1 {
            args.pop().unwrap_or(Ty::Tuple(Vec::new()))
        } else {
            Ty::Tuple(args)
        }
    }

    /// The types a class argument gives the parameters (the inverse of `class_arg`).
    pub fn class_arg_parts<'t>(&self, arg: &'t Ty) -> Vec<&'t Ty> {
        match arg {
            Ty::Tuple(items) if self.params.len() != 1 => items.iter().collect(),
            _ => vec![arg],
        }
    }

    /// The class variables standing for the parts of a class argument.
    pub fn mapping(&self, arg: &Ty) -> HashMap<Rigid, Ty> {
        self.params
            .iter()
            .zip(self.class_arg_parts(arg))
            .map(|(param, part)| (param.rigid, part.clone()))
            .collect()
    }
}

// Note [Interfaces of several parameters]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Dex's interfaces may have several parameters and no functional dependencies
// (`interface Subset(subset, superset)`, examples/manifold-gradients' `TangentSpace`). dx reads
// `C(a, b)` as the one-parameter class `C` of the tuple `(a, b)`: a method's use constrains the
// tuple of its fresh class variables, an instance `C(A, B)` has the head `(A, B)`, and the
// lowering finds the instance for the concrete tuple as for any class. Nothing is inferred from
// an instance's head beyond matching (as in Dex): a use must fix every parameter.
//
// A constraint on type variables in a `given` (`(TangentSpace(m, t))`, an instance's
// `(HasBrownianSheet a v)`) cannot be a class of one rigid variable: it is an assumed fact
// `(C, (m, t))` (`GlobalEnv::assume`), held by `class_holds` where the definition is checked,
// asked of the instantiated tuple where it is used (`instantiate_def`), and asked of the bound
// types where an instance that assumes it is matched (`instance_holds`).

#[derive(Clone, Debug)]
pub struct MethodDef {
    pub name: String,
    /// The method's own type variables (other than the class variable), in order.
    pub vars: Vec<Rigid>,
    /// The method's type, in terms of the class variable and `vars`.
    pub ty: Ty,
    /// A default definition, checked for each instance that does not give the method.
    pub default: Option<FunDef>,
}

/// An instance: the methods of a class for the types that match `head`.
#[derive(Clone, Debug)]
pub struct InstanceDef {
    pub class: Class,
    /// The instance's type variables (its `given` binders and the names its head leaves
    /// implicit), with their classes as constraints.
    pub vars: Vec<Rigid>,
    pub head: Ty,
    /// One per method of the class, in the class's order.
    pub methods: Vec<InstanceMethod>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct InstanceMethod {
    /// The checked definition (its body is a lambda per parameter, or a value).
    pub def: DefInfo,
    /// The rigid variables the body uses for the method's own variables (`MethodDef::vars`).
    pub method_vars: Vec<Rigid>,
}

/// Whether a type is an instance of an instance's head.
#[derive(Clone, Debug)]
pub enum HeadMatch {
    /// It is, with the types the head's variables stand for.
    Yes(HashMap<Rigid, Ty>),
    No,
    /// A unification variable in the type blocks the decision (the checker waits for it).
    Blocked,
}

impl HeadMatch {
    pub fn bindings(self) -> Option<HashMap<Rigid, Ty>> {
        match self {
            HeadMatch::Yes(bindings) => Some(bindings),
            HeadMatch::No | HeadMatch::Blocked => None,
        }
    }
}

/// Whether `ty` is an instance of `head`, whose variables are `vars`.
pub fn match_head(head: &Ty, vars: &[Rigid], ty: &Ty) -> HeadMatch {
    let mut bindings = HashMap::new();
    match match_into(head, vars, ty, &mut bindings) {
        Matched::Yes => HeadMatch::Yes(bindings),
        Matched::No => HeadMatch::No,
        Matched::Blocked => HeadMatch::Blocked,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Matched {
    Yes,
    No,
    Blocked,
}

fn match_into(head: &Ty, vars: &[Rigid], ty: &Ty, bindings: &mut HashMap<Rigid, Ty>) -> Matched {
    if let Ty::Rigid(rigid, _) = head {
        if vars.contains(rigid) {
            return match bindings.get(rigid) {
                Some(bound) if bound == ty => Matched::Yes,
                Some(_) if matches!(ty, Ty::Var(_)) => Matched::Blocked,
                Some(_) => Matched::No,
                None => {
                    bindings.insert(*rigid, ty.clone());
                    Matched::Yes
                }
            };
        }
    }
    if matches!(ty, Ty::Var(_)) {
        return Matched::Blocked;
    }
    let all = |pairs: Vec<(&Ty, &Ty)>, bindings: &mut HashMap<Rigid, Ty>| {
        let mut res = Matched::Yes;
        for (head_item, item) in pairs {
            match match_into(head_item, vars, item, bindings) {
                Matched::No => return Matched::No,
                Matched::Blocked => res = Matched::Blocked,
                Matched::Yes => {}
            }
        }
        res
    };
    match (head, ty) {
        (Ty::Base(x), Ty::Base(y)) if x == y => Matched::Yes,
        (Ty::Fin(x), Ty::Fin(y)) if x.normalise() == y.normalise() => Matched::Yes,
        (Ty::Table(hi, he), Ty::Table(ti, te)) => all(vec![(hi, ti), (he, te)], bindings),
        (Ty::Tuple(hs), Ty::Tuple(ts)) if hs.len() == ts.len() => {
            all(hs.iter().zip(ts).collect(), bindings)
        }
        (Ty::Data(h), Ty::Data(t)) if h.def.id == t.def.id => {
            all(h.args.iter().zip(&t.args).collect(), bindings)
        }
        (Ty::Rigid(x, _), Ty::Rigid(y, _)) if x == y => Matched::Yes,
        _ => Matched::No,
    }
}

/// The methods a user instance of a built-in class defines, by Dex's names, with their types
/// in terms of the class variable `a`; `None` for a class that takes no user instances.
pub fn builtin_methods(class: Class, a: &Ty) -> Option<Vec<(&'static str, Ty)>> {
    let binary = || Ty::funs(vec![a.clone(), a.clone()], a.clone());
    let predicate = || Ty::funs(vec![a.clone(), a.clone()], Ty::bool());
    Some(match class {
        // Dex's current `Add` and `Sub`; an `instance Add` that also defines `sub` (Dex's
        // earlier `Add`) declares both (`declare_instance`).
        Class::Add => vec![("add", binary()), ("zero", a.clone())],
        Class::Sub => vec![("sub", binary())],
        Class::Mul => vec![("mul", binary()), ("one", a.clone())],
        Class::Div => vec![("divide", binary())],
        Class::VSpace => vec![(
            "scale_vec",
            Ty::funs(vec![Ty::float(), a.clone()], a.clone()),
        )],
        Class::Eq => vec![("==", predicate())],
        Class::Ord => vec![("<", predicate()), (">", predicate())],
        Class::Ix => vec![
            ("size", Ty::nat()),
            ("ordinal", Ty::fun(a.clone(), Ty::nat())),
            ("unsafe_from_ordinal", Ty::fun(Ty::nat(), a.clone())),
        ],
        Class::Arbitrary => vec![("arb", Ty::fun(Ty::Base(BaseTy::Word64), a.clone()))],
        // The text's length is each instance's own (a `List Char` of the length its body
        // gives, `check::show::instance_width`): the result here is replaced per instance.
        Class::Show => vec![("show", Ty::fun(a.clone(), Ty::Tuple(Vec::new())))],
        Class::Monoid => vec![("mempty", a.clone()), ("<>", binary())],
        Class::Floating | Class::Num | Class::Float | Class::User(_) => return None,
    })
}

/// The classes a type must already be in for an instance of built-in class `class`.
pub fn builtin_supers(class: Class) -> Vec<Class> {
    match class {
        Class::VSpace => vec![Class::Add, Class::Sub],
        Class::Sub => vec![Class::Add],
        Class::Ord => vec![Class::Eq],
        _ => Vec::new(),
    }
}
