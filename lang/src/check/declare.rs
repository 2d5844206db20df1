//! Declarations of user types, interfaces, instances and type aliases (docs/language.md): the
//! checker reads them and records what they make in the environment.
//!
//! - `struct`/`data`/`enum` make a `DataDef`: parameters become rigid variables (a `Nat`
//!   parameter is a size: `Fin n` in a field reads `size` of an index set standing for it),
//!   field types are read in their scope. A type cannot mention itself (values have static
//!   shapes: there is no recursive type).
//! - `interface` makes a `ClassDef`; its methods become names in scope, each a function whose
//!   type mentions the class variable.
//! - `instance` checks one definition per method against the interface's signature with the
//!   class variable replaced by the instance's type; missing methods take the interface's
//!   default; an instance of `Ix` also fixes the size of the type's index set.
//! - Type aliases and type functions are read or stored to be read at each use.

use std::collections::HashMap;
use std::sync::Arc;

use super::builtins::Class;
use super::classes::{
    builtin_methods, builtin_supers, match_head, ClassDef, ClassParam, InstanceDef, InstanceMethod,
    MethodDef,
};
use super::data::{ConDef, DataDef, DataKind, DataParam, FieldDef};
use super::env::TypeFn;
use super::infer::error_of;
use super::infer::{
    check_literals, is_nat_kind, is_nat_param, substitute_rigids, value_kind, Binding, Infer,
};
use super::typed::DefInfo;
use super::types::{BaseTy, Rigid, Size, Ty, TyVar};
use super::TypeError;
use crate::code::Code;
use crate::syntax::ast::{
    self, DataDecl, InstanceDecl, InstanceItem, InterfaceDecl, Pattern, TypeExpr, TypeExprKind,
};
use crate::syntax::Span;

type Result<T> = std::result::Result<T, TypeError>;

fn error<T>(span: Span, message: impl Into<String>) -> Result<T> {
    Err(TypeError::new(span, message))
}

impl Infer<'_> {
    /// `struct`, `data` or `enum`: checks the declaration and records the type and its
    /// constructors.
    pub fn declare_data(&mut self, decl: &DataDecl) -> Result<()> {
        let field_named = |name: &str| {
            decl.cons.iter().any(|con| {
                con.fields
                    .iter()
                    .any(|field| field.name.as_ref().is_some_and(|field| field.name == name))
            })
        };
        if let Some(method) = decl.methods.iter().find(|m| field_named(&m.name.name)) {
            return error(
                method.name.span,
                format!("`{}` is both a field and a method", method.name.name),
            );
        }
        let res = self.with_scope(|cx| cx.data_def(decl));
        let def = self.with_recovered(res)?;
        self.finish()?;
        let def = Arc::new(def);
        self.env.unbind(&def.name);
        for (position, con) in def.cons.iter().enumerate() {
            self.env.unbind(&con.name);
            self.env
                .constructors
                .insert(con.name.clone(), (def.clone(), position));
        }
        self.env.data_types.insert(def.name.clone(), def);
        Ok(())
    }

    fn data_def(&mut self, decl: &DataDecl) -> Result<DataDef> {
        let mut params: Vec<DataParam> = Vec::new();
        // The `given` variables come first: the parameters' types use them (Note [Value
        // parameters]).
        for binder in &decl.given {
            not_bound_yet(&binder.name, &params)?;
            if let Some(kind) = &binder.kind {
                return error(
                    kind.span,
                    "a type's `given` names type variables (`given (a|Ord)`)",
                );
            }
            let classes = self.classes_of(&binder.classes)?;
            let rigid = self.env.new_rigid(classes);
            let name = binder.name.name.clone();
            self.scopes.push((
                name.clone(),
                Binding::TypeVar(Ty::Rigid(rigid, name.clone())),
            ));
            params.push(DataParam {
                name,
                rigid,
                is_size: false,
                value: None,
                hidden: true,
            });
        }
        for param in &decl.params {
            not_bound_yet(&param.name, &params)?;
            let classes = self.classes_of(&param.classes)?;
            let kind = match value_kind(param.kind.as_ref()) {
                Some(kind) => ParamKind::Value(self.read_type(kind, &mut None)?),
                None if is_nat_kind(param.kind.as_ref()) => ParamKind::Size,
                None => ParamKind::Type,
            };
            let rigid = self.env.new_rigid(classes);
            let name = param.name.name.clone();
            let as_type = Ty::Rigid(rigid, name.clone());
            let binding = match kind {
                ParamKind::Size => Binding::SizeVar(Size::Of(Box::new(as_type))),
                _ => Binding::TypeVar(as_type),
            };
            self.scopes.push((name.clone(), binding));
            let is_size = matches!(kind, ParamKind::Size);
            let position = params.len();
            params.push(DataParam {
                name,
                rigid,
                is_size,
                value: None,
                hidden: false,
            });
            // A hidden size of the value's type is one of this type (`Set a` is `Set a k`).
            if let ParamKind::Value(ty) = kind {
                let span = param
                    .kind
                    .as_ref()
                    .map_or(param.name.span, |kind| kind.span);
                self.hide_inferred_sizes(&ty, &mut params, span)?;
                let ty = self.zonk(&ty);
                self.env.mark_value_rigid(rigid, ty.clone());
                params[position].value = Some(ty);
            }
        }
        super::distinct(decl.cons.iter().map(|con| &con.name), "declared", |name| {
            format!("the constructor `{name}` is declared twice")
        })?;
        let mut cons: Vec<ConDef> = Vec::new();
        for con in &decl.cons {
            let field_names = con.fields.iter().filter_map(|field| field.name.as_ref());
            super::distinct(field_names, "declared", |name| {
                format!("the field `{name}` is declared twice")
            })?;
            let mut fields: Vec<FieldDef> = Vec::new();
            let mut size_fields = Vec::new();
            for (position, field) in con.fields.iter().enumerate() {
                if mentions(&field.ty, &decl.name.name) {
                    return error(
                        field.ty.span,
                        format!(
                            "`{}` is used in its own declaration: dx has no recursive types \
                             (every value has a shape known when it is compiled)",
                            decl.name.name
                        ),
                    );
                }
                let name = field.name.as_ref().map(|name| name.name.clone());
                let ty = self.read_type(&field.ty, &mut None)?;
                self.hide_inferred_sizes(&ty, &mut params, field.ty.span)?;
                // A `Nat` field that a later field's type uses as a size is a size of the
                // type (Note [Size fields]).
                if let (Some(field_name), Ty::Base(BaseTy::Nat)) = (&field.name, &ty) {
                    let used_later = con.fields[position + 1..]
                        .iter()
                        .any(|later| mentions(&later.ty, &field_name.name));
                    if used_later {
                        let rigid = self.env.new_rigid(vec![Class::Ix, Class::Eq, Class::Ord]);
                        let as_type = Ty::Rigid(rigid, field_name.name.clone());
                        self.scopes.push((
                            field_name.name.clone(),
                            Binding::SizeVar(Size::Of(Box::new(as_type))),
                        ));
                        size_fields.push((position, params.len()));
                        params.push(DataParam {
                            name: field_name.name.clone(),
                            rigid,
                            is_size: true,
                            value: None,
                            hidden: true,
                        });
                    }
                }
                fields.push(FieldDef { name, ty });
            }
            cons.push(ConDef {
                name: con.name.name.clone(),
                fields,
                size_fields,
            });
        }
        if cons.is_empty() {
            return error(decl.name.span, "a type needs at least one constructor");
        }
        let kind = match decl.kind {
            ast::DataKind::Struct => DataKind::Struct,
            ast::DataKind::Data => DataKind::Data,
            ast::DataKind::Enum => DataKind::Enum,
        };
        let cons = cons
            .into_iter()
            .map(|con| ConDef {
                fields: con
                    .fields
                    .into_iter()
                    .map(|field| FieldDef {
                        ty: self.zonk(&field.ty),
                        ..field
                    })
                    .collect(),
                ..con
            })
            .collect();
        Ok(DataDef {
            id: self.env.next_data_id(),
            name: decl.name.name.clone(),
            kind,
            params,
            cons,
            ix_size: std::sync::OnceLock::new(),
        })
    }

    /// A field whose type leaves a hidden size to inference (`Bar(String)`: a `String` is a
    /// list of some length) makes that size a hidden size parameter of the type being
    /// declared, as a size field does (Note [Size fields]): `Bar "ab"` is a value of the
    /// type at length 2.
    fn hide_inferred_sizes(
        &mut self,
        ty: &Ty,
        params: &mut Vec<DataParam>,
        span: crate::syntax::Span,
    ) -> Result<()> {
        for var in open_hidden_sizes(&self.zonk(ty)) {
            let name = format!("size{}", params.len());
            let rigid = self.size_rigid(var, &name, span)?;
            params.push(DataParam {
                name,
                rigid,
                is_size: true,
                value: None,
                hidden: true,
            });
        }
        Ok(())
    }

    /// An instance's type with each hidden size it leaves open (a list's length, Note [Size
    /// fields]: `instance Eq(Person)` for a struct holding a `String`) made a variable of the
    /// instance, so that it holds at every length.
    pub(super) fn hidden_sizes_as_vars(
        &mut self,
        ty: &Ty,
        rigids: &mut Vec<(String, Rigid)>,
        span: crate::syntax::Span,
    ) -> Result<Ty> {
        let ty = self.zonk(ty);
        for var in open_hidden_sizes(&ty) {
            let name = format!("size{}", rigids.len());
            let rigid = self.size_rigid(var, &name, span)?;
            rigids.push((name, rigid));
        }
        Ok(self.zonk(&ty))
    }

    /// A new rigid size (an index set `Fin` of it, with its classes) that the open hidden size
    /// `var` becomes.
    fn size_rigid(&mut self, var: TyVar, name: &str, span: crate::syntax::Span) -> Result<Rigid> {
        let rigid = self.env.new_rigid(vec![Class::Ix, Class::Eq, Class::Ord]);
        self.unify(&Ty::Var(var), &Ty::Rigid(rigid, name.to_string()), span)?;
        Ok(rigid)
    }

    /// The classes written in `a|Add|Sub`, with what they imply.
    fn classes_of(&self, names: &[ast::Ident]) -> Result<Vec<Class>> {
        let mut classes = Vec::new();
        for name in names {
            let found = self.env.class_by_name(&name.name).ok_or_else(|| {
                TypeError::new(name.span, format!("unknown class `{}`", name.name))
            })?;
            classes.extend(found);
        }
        Ok(classes)
    }

    /// `interface Name(a)` + method signatures and defaults: records the interface and makes
    /// its methods names in scope.
    pub fn declare_interface(&mut self, decl: &InterfaceDecl) -> Result<()> {
        let res = self.with_scope(|cx| cx.class_def(decl));
        let def = self.with_recovered(res)?;
        self.finish()?;
        self.env.unbind(&def.name);
        for (position, method) in def.methods.iter().enumerate() {
            self.env.unbind(&method.name);
            self.env
                .methods
                .insert(method.name.clone(), (def.class, position));
        }
        self.env.class_names.insert(def.name.clone(), def.class);
        self.env.class_defs.insert(def.class, def);
        Ok(())
    }

    fn class_def(&mut self, decl: &InterfaceDecl) -> Result<ClassDef> {
        if decl.params.is_empty() {
            return error(
                decl.name.span,
                "an interface has a parameter: `interface Name(a)`",
            );
        }
        super::distinct(
            decl.params.iter().map(|param| &param.name),
            "bound",
            |name| format!("the parameter `{name}` is bound twice"),
        )?;
        let class = Class::User(self.env.next_data_id());
        let mut params = Vec::new();
        for param in &decl.params {
            let supers = self.classes_of(&param.classes)?;
            params.push(ClassParam {
                rigid: self.env.new_rigid(supers.clone()),
                name: param.name.name.clone(),
                supers,
            });
        }
        let arg = Ty::Tuple(
            params
                .iter()
                .map(|param| Ty::Rigid(param.rigid, param.name.clone()))
                .collect(),
        );
        match params.as_slice() {
            // Inside the interface, its variable is in it.
            [param] => self.env.add_rigid_classes(param.rigid, &[class]),
            _ => self.env.assume(class, arg),
        }
        for param in &params {
            self.scopes.push((
                param.name.clone(),
                Binding::TypeVar(Ty::Rigid(param.rigid, param.name.clone())),
            ));
        }
        super::distinct(
            decl.methods.iter().map(|sig| &sig.name),
            "declared",
            |name| format!("the method `{name}` is declared twice"),
        )?;
        let mut methods: Vec<MethodDef> = Vec::new();
        for sig in &decl.methods {
            let mut implicit = Vec::new();
            let ty = self.read_type(&sig.ty, &mut Some(&mut implicit))?;
            let default = decl
                .defaults
                .iter()
                .find(|default| default.name.name == sig.name.name)
                .cloned();
            methods.push(MethodDef {
                name: sig.name.name.clone(),
                vars: implicit.into_iter().map(|(_, rigid)| rigid).collect(),
                ty,
                default,
            });
        }
        if let Some(stray) = decl
            .defaults
            .iter()
            .find(|default| !methods.iter().any(|m| m.name == default.name.name))
        {
            return error(
                stray.name.span,
                format!(
                    "`{}` has a default definition but no signature in the interface",
                    stray.name.name
                ),
            );
        }
        let methods = methods
            .into_iter()
            .map(|method| MethodDef {
                ty: self.zonk(&method.ty),
                ..method
            })
            .collect();
        Ok(ClassDef {
            class,
            name: decl.name.name.clone(),
            params,
            methods,
        })
    }

    /// The interface an instance declaration names: one declared in dx, or one of dx's
    /// built-in classes that takes user instances (`Add`, `Mul`, `VSpace`, `Eq`, `Ord`, `Ix`,
    /// `Arbitrary`, …), whose methods are Dex's.
    fn instance_class(&mut self, name: &ast::Ident) -> Result<ClassDef> {
        if let Some(class) = self.env.class_names.get(&name.name).copied() {
            if let Some(def) = self.env.class_defs.get(&class) {
                return Ok(def.clone());
            }
        }
        let Some(class) = Class::named(&name.name) else {
            return error_of(
                Code::Unbound,
                name.span,
                format!("unknown interface `{}`", name.name),
            );
        };
        if let Some(def) = self.env.class_defs.get(&class) {
            return Ok(def.clone());
        }
        let param = self.env.new_rigid(Vec::new());
        let a = Ty::Rigid(param, "a".to_string());
        let Some(methods) = builtin_methods(class, &a) else {
            return error(
                name.span,
                format!("dx's `{}` takes no instances declared in dx", name.name),
            );
        };
        let def = ClassDef {
            class,
            name: name.name.clone(),
            params: vec![ClassParam {
                rigid: param,
                name: "a".to_string(),
                supers: builtin_supers(class),
            }],
            methods: methods
                .into_iter()
                .map(|(method, ty)| MethodDef {
                    name: method.to_string(),
                    vars: Vec::new(),
                    ty,
                    default: None,
                })
                .collect(),
        };
        self.env.class_defs.insert(class, def.clone());
        Ok(def)
    }

    /// `instance Name(T) given (…)` + methods: checks every method against the interface and
    /// records the instance. With `replace`, an instance for the same type replaces the old
    /// one (the REPL); otherwise two instances that could apply to one type are an error.
    pub fn declare_instance(&mut self, decl: &InstanceDecl, replace: bool) -> Result<()> {
        match split_add_sub(decl) {
            Some((add, sub)) => {
                self.declare_one_instance(&add, replace)?;
                self.declare_one_instance(&sub, replace)
            }
            None => self.declare_one_instance(decl, replace),
        }
    }

    fn declare_one_instance(&mut self, decl: &InstanceDecl, replace: bool) -> Result<()> {
        let res = self.with_scope(|cx| cx.instance_def(decl));
        let def = self.with_recovered(res)?;
        let mut replaced = None;
        for (position, other) in self.env.instances.iter().enumerate() {
            if other.class != def.class {
                continue;
            }
            let theirs = match_head(&other.head, &other.vars, &def.head).bindings();
            let ours = match_head(&def.head, &def.vars, &other.head).bindings();
            match (theirs, ours) {
                (Some(_), Some(_)) if replace => replaced = Some(position),
                (Some(_), _) | (_, Some(_)) => {
                    let instance = self.env.show_constraint(def.class, &other.head);
                    return error(
                        decl.args.first().map_or(decl.span, |arg| arg.span),
                        format!("this instance overlaps the instance {instance} declared before"),
                    );
                }
                _ => {}
            }
        }
        if let Some(position) = replaced {
            self.env.instances.remove(position);
        }
        self.env.instances.push(def);
        Ok(())
    }

    fn instance_def(&mut self, decl: &InstanceDecl) -> Result<InstanceDef> {
        let class_def = self.instance_class(&decl.class)?;
        if decl.args.len() != class_def.params.len() {
            let params: Vec<&str> = class_def.params.iter().map(|p| p.name.as_str()).collect();
            return error(
                decl.class.span,
                format!(
                    "`{}` has {} parameter{}: `instance {}({})`",
                    class_def.name,
                    params.len(),
                    if params.len() == 1 { "" } else { "s" },
                    class_def.name,
                    params.join(", ")
                ),
            );
        }
        let mut rigids = self.bind_given(&decl.given)?;
        self.apply_constraints(&decl.constraints, &rigids)?;
        let mut parts = Vec::new();
        for arg in &decl.args {
            let part = self.read_type(arg, &mut Some(&mut rigids))?;
            parts.push(self.hidden_sizes_as_vars(&part, &mut rigids, arg.span)?);
        }
        self.given_values_are_named(&decl.given, &rigids, &parts)?;
        let vars: Vec<Rigid> = rigids.iter().map(|(_, rigid)| *rigid).collect();
        let is_builtin = !matches!(class_def.class, Class::User(_));
        let arg_span = decl.args[0].span;
        if is_builtin && matches!(parts[0], Ty::Base(_) | Ty::Fin(_)) {
            return error(
                arg_span,
                format!("{} is already in `{}` (built in)", parts[0], class_def.name),
            );
        }
        for ((param, part), arg) in class_def.params.iter().zip(&parts).zip(&decl.args) {
            for sup in &param.supers {
                self.constrain(*sup, part.clone(), arg.span);
            }
            // The class variables stand for the instance's types in defaults.
            self.scopes
                .push((param.name.clone(), Binding::TypeVar(part.clone())));
        }
        let head = class_def.class_arg(parts);
        // While its methods are checked, the instance holds for its head (a default or a
        // method may use another method at the same type).
        let provisional = InstanceDef {
            class: class_def.class,
            vars: vars.clone(),
            head: head.clone(),
            methods: Vec::new(),
            span: decl.span,
        };
        self.env.instances.push(provisional);
        let res = self.instance_methods(decl, &class_def, &head, &vars);
        self.env.instances.pop();
        let methods = res?;
        let head = self.zonk(&head);
        if class_def.class == Class::Ix {
            self.fix_ix_size(decl, &head, &vars)?;
        }
        Ok(InstanceDef {
            class: class_def.class,
            vars,
            head,
            methods,
            span: decl.span,
        })
    }

    /// The definitions of an instance's methods, in the class's order, checked against the
    /// class's signatures with the class variable standing for `head`.
    fn instance_methods(
        &mut self,
        decl: &InstanceDecl,
        class_def: &ClassDef,
        head: &Ty,
        vars: &[Rigid],
    ) -> Result<Vec<InstanceMethod>> {
        let mut methods = Vec::new();
        let mut values = Vec::new();
        for method in &class_def.methods {
            let items: Vec<&InstanceItem> = decl
                .methods
                .iter()
                .filter(|item| {
                    item.name()
                        .is_some_and(|name| method_name(&name.name) == method.name)
                })
                .collect();
            if let [first, dup, ..] = items.as_slice() {
                return Err(super::twice(
                    first.span(),
                    dup.span(),
                    "defined",
                    format!("the method `{}` is defined twice", method.name),
                ));
            }
            let mut mapping = class_def.mapping(head);
            let mut method_vars = Vec::new();
            for var in &method.vars {
                let fresh = self.env.new_rigid(self.env.rigid_classes(*var).to_vec());
                mapping.insert(*var, Ty::Rigid(fresh, format!("t{}", fresh.0)));
                method_vars.push(fresh);
            }
            let mut expected = substitute_rigids(&method.ty, &mapping);
            if class_def.class == Class::Show {
                // A text of the length the instance's body gives (Note [Texts of run-time
                // values]).
                let len = Ty::Var(self.fresh_var());
                let text = self.prelude_data("List", vec![Ty::Base(BaseTy::Word8), len]);
                expected = Ty::fun(head.clone(), text);
            }
            let def = match (items.first(), &method.default) {
                (Some(InstanceItem::Def(def)), _) => {
                    self.check_method_def(def, &expected, vars, &method_vars)?
                }
                (Some(InstanceItem::Let(binding)), _) => {
                    let value = self.infer(&binding.value)?;
                    self.unify(&expected, &value.ty, binding.value.span)?;
                    self.solve(false)?;
                    values.push(methods.len());
                    DefInfo {
                        name: method.name.clone(),
                        vars: vars.iter().chain(&method_vars).copied().collect(),
                        implicit: Vec::new(),
                        ty: expected,
                        body: value,
                        span: binding.span,
                        nullary: false,
                    }
                }
                (None, Some(default)) => {
                    self.check_method_def(default, &expected, vars, &method_vars)?
                }
                (None, None) => {
                    return error(
                        decl.span,
                        format!(
                            "this instance does not define the method `{}` of {}",
                            method.name, class_def.name
                        ),
                    )
                }
            };
            methods.push(InstanceMethod { def, method_vars });
        }
        if let Some(stray) = decl.methods.iter().find(|item| {
            item.name().is_none_or(|name| {
                !class_def
                    .methods
                    .iter()
                    .any(|m| m.name == method_name(&name.name))
            })
        }) {
            let name = stray.name().map_or("this", |name| name.name.as_str());
            return error(
                stray.span(),
                format!("`{name}` is not a method of {}", class_def.name),
            );
        }
        self.finish()?;
        for method in &mut methods {
            method.def.ty = self.zonk(&method.def.ty);
        }
        for position in values {
            let body = &mut methods[position].def.body;
            self.zonk_expr(body);
            check_literals(body)?;
        }
        Ok(methods)
    }

    /// A method given by a `def`: checked with the interface's types for its parameters and
    /// result, and then against the whole signature.
    fn check_method_def(
        &mut self,
        def: &ast::FunDef,
        expected: &Ty,
        vars: &[Rigid],
        method_vars: &[Rigid],
    ) -> Result<DefInfo> {
        // A method of type `() -> T` (Dex's nullary methods, `value : () -> Int`) defined as
        // `def value() = 2`: the definition takes the unit.
        let nullary;
        let def = match expected {
            Ty::Fun { param, .. } if def.params.is_empty() && **param == Ty::Tuple(Vec::new()) => {
                nullary = ast::FunDef {
                    params: vec![ast::Param {
                        pat: Pattern::Tuple(Vec::new(), def.name.span),
                        ty: None,
                        span: def.name.span,
                    }],
                    ..def.clone()
                };
                &nullary
            }
            _ => def,
        };
        let info = self.infer_def_against(def, Some(expected))?;
        let found = self.instantiate_def(&info, super::typed::DefKey::Top(String::new()), def.span);
        self.unify(expected, &found.ty, def.span)?;
        Ok(DefInfo {
            vars: vars.iter().chain(method_vars).copied().collect(),
            ty: expected.clone(),
            ..info
        })
    }

    /// An instance of `Ix` for a user type fixes the size of its index set: the `size` method
    /// must be a size known when a block is compiled (`size = 3`, `size = size n + 1`).
    fn fix_ix_size(&mut self, decl: &InstanceDecl, head: &Ty, vars: &[Rigid]) -> Result<()> {
        let arg_span = decl.args.first().map_or(decl.span, |arg| arg.span);
        let Ty::Data(data) = head else {
            return error(
                arg_span,
                "an instance of `Ix` declared in dx is for a user type",
            );
        };
        // The head's arguments must be the instance's variables, so that the size can be
        // written in terms of the type's parameters.
        let mut to_params = HashMap::new();
        for (arg, param) in data.args.iter().zip(&data.def.params) {
            match arg {
                Ty::Rigid(rigid, _) if vars.contains(rigid) => {
                    to_params.insert(*rigid, Ty::Rigid(param.rigid, param.name.clone()));
                }
                _ => {
                    return error(
                        arg_span,
                        "an instance of `Ix` is for a type applied to variables (`Ix(Wrap(n))`)",
                    )
                }
            }
        }
        let size_expr = decl.methods.iter().find_map(|item| match item {
            InstanceItem::Let(binding)
                if matches!(&binding.pat, Pattern::Var(n) if method_name(&n.name) == "size") =>
            {
                Some(&binding.value)
            }
            // `def size'() = …` (Dex's current spelling) or `def size() = …`.
            InstanceItem::Def(def) if method_name(&def.name.name) == "size" && def.params.is_empty() => {
                Some(&def.body)
            }
            _ => None,
        });
        let Some(size_expr) = size_expr else {
            return error(decl.span, "an instance of `Ix` defines `size = …`");
        };
        let size = match self.read_size(size_expr) {
            Ok(size) => size,
            Err(err) => self.size_through_calls(size_expr).ok_or(err)?,
        };
        let size = Ty::Fin(size).map(&mut |ty| match ty {
            Ty::Rigid(rigid, _) => to_params.get(rigid).cloned(),
            _ => None,
        });
        let Ty::Fin(size) = size else {
            return Err(TypeError::bug(size_expr.span, "a size that is not a size"));
        };
        match data.def.ix_size.get() {
            Some(existing) if *existing != size => error(
                arg_span,
                format!(
                    "the size of {} as an index set is fixed by an earlier instance; \
                     declare the type again to change it",
                    data.def.name
                ),
            ),
            Some(_) => Ok(()),
            None => {
                let _ = data.def.ix_size.set(size);
                Ok(())
            }
        }
    }

    /// The size a `Nat` expression computes when the types of the values it is a function of
    /// hold it (`set_size set`, `check/size_eval.rs`).
    fn size_through_calls(&mut self, expr: &ast::Expr) -> Option<Size> {
        let mut texpr = self.infer(expr).ok()?;
        self.unify(&texpr.ty, &Ty::nat(), expr.span).ok()?;
        self.zonk_expr(&mut texpr);
        super::size_eval::size_through_calls(&texpr, self.env)
    }

    /// `Name = T`, `Name : Type = T` or `def Name(params) -> Type = T` at the top level.
    pub fn declare_alias(&mut self, alias: &ast::TypeAlias) -> Result<()> {
        let name = alias.name.name.clone();
        match &alias.params {
            Some(params) => {
                // Read the body once with the parameters as variables, so that a mistake in it
                // is reported where the function is declared.
                let res = self.with_scope(|cx| {
                    for param in params {
                        let Pattern::Var(param_name) = &param.pat else {
                            return error(param.span, "a type function's parameter is a name");
                        };
                        let is_type = matches!(
                            &param.ty,
                            None | Some(TypeExpr {
                                kind: TypeExprKind::Name(_),
                                ..
                            })
                        ) && !is_nat_param(param);
                        if !is_type && !is_nat_param(param) {
                            return error(
                                param.span,
                                "a type function's parameter is a `Type` or a `Nat`",
                            );
                        }
                        let rigid = cx.env.new_rigid(Vec::new());
                        let as_type = Ty::Rigid(rigid, param_name.name.clone());
                        let binding = if is_nat_param(param) {
                            Binding::SizeVar(Size::Of(Box::new(as_type)))
                        } else {
                            Binding::TypeVar(as_type)
                        };
                        cx.scopes.push((param_name.name.clone(), binding));
                    }
                    cx.read_type(&alias.ty, &mut None)
                });
                self.with_recovered(res)?;
                self.env.unbind(&name);
                self.env.type_fns.insert(
                    name,
                    TypeFn {
                        params: params.clone(),
                        body: alias.ty.clone(),
                    },
                );
            }
            None => {
                let res = self.read_type(&alias.ty, &mut None);
                let ty = self.with_recovered(res)?;
                let ty = self.zonk(&ty);
                if !ty.any(&mut |ty| matches!(ty, Ty::Var(_))) {
                    self.finish()?;
                }
                self.record_alias(&name, &ty, &alias.ty);
            }
        }
        Ok(())
    }

    /// Records a type alias: as its type, or, when reading it leaves a part to infer at each
    /// use (`String = List Char`: the list's length), as a type function of no parameters that
    /// every use reads anew.
    pub(super) fn record_alias(&mut self, name: &str, ty: &Ty, expr: &TypeExpr) {
        self.env.unbind(name);
        if ty.any(&mut |ty| matches!(ty, Ty::Var(_))) {
            let type_fn = TypeFn {
                params: Vec::new(),
                body: expr.clone(),
            };
            self.env.type_fns.insert(name.to_string(), type_fn);
        } else {
            self.env.aliases.insert(name.to_string(), ty.clone());
        }
    }
}

/// The hidden sizes (Note [Size fields]) that `ty` leaves to inference, each once.
fn open_hidden_sizes(ty: &Ty) -> Vec<TyVar> {
    let mut open = Vec::new();
    ty.any(&mut |inner| {
        if let Ty::Data(data) = inner {
            for (arg, param) in data.args.iter().zip(&data.def.params) {
                if let (Ty::Var(var), true) = (arg, param.is_hidden_size()) {
                    if !open.contains(var) {
                        open.push(*var);
                    }
                }
            }
        }
        false
    });
    open
}

/// Whether a type expression names `name`.
fn mentions(ty: &TypeExpr, name: &str) -> bool {
    match &ty.kind {
        TypeExprKind::Name(ident) => ident.name == name,
        TypeExprKind::App(head, args) => {
            head.name == name || args.iter().any(|arg| mentions(arg, name))
        }
        TypeExprKind::Table(a, b) => mentions(a, name) || mentions(b, name),
        TypeExprKind::Tuple(items) => items.iter().any(|item| mentions(item, name)),
        TypeExprKind::Fun(params, result, effects) => {
            params.iter().any(|param| mentions(param, name))
                || mentions(result, name)
                || effects.as_ref().is_some_and(|row| {
                    row.effects
                        .iter()
                        .filter_map(|(_, region)| region.as_ref())
                        .chain(&row.rest)
                        .any(|region| region.name == name)
                })
        }
        TypeExprKind::Fin(size) | TypeExprKind::Size(size) => expr_mentions(size, name),
        TypeExprKind::Hole | TypeExprKind::Range(..) => false,
        TypeExprKind::Given { binders, ty } => {
            !binders.iter().any(|binder| binder.name.name == name) && mentions(ty, name)
        }
        TypeExprKind::DepTable { index, elem, .. } => mentions(index, name) || mentions(elem, name),
    }
}

/// Whether a size expression (`n`, `n + 1`, `size n`) names `name`.
fn expr_mentions(expr: &ast::Expr, name: &str) -> bool {
    match &expr.kind {
        ast::ExprKind::Var(ident) => ident.name == name,
        ast::ExprKind::BinOp { lhs, rhs, .. } => {
            expr_mentions(lhs, name) || expr_mentions(rhs, name)
        }
        ast::ExprKind::App { func, arg, .. } => {
            expr_mentions(func, name) || expr_mentions(arg, name)
        }
        _ => false,
    }
}

/// Dex's earlier `Add` had `sub` (and dx's instances were written so): an `instance Add(T)`
/// that defines `sub` or `-` is an instance of `Add` and one of `Sub`, as Dex's current
/// prelude has them.
fn split_add_sub(decl: &InstanceDecl) -> Option<(InstanceDecl, InstanceDecl)> {
    if decl.class.name != "Add" || decl.named.is_some() {
        return None;
    }
    let is_sub = |item: &InstanceItem| item.name().is_some_and(|n| method_name(&n.name) == "sub");
    if !decl.methods.iter().any(is_sub) {
        return None;
    }
    let (sub, add): (Vec<InstanceItem>, Vec<InstanceItem>) =
        decl.methods.iter().cloned().partition(is_sub);
    let class = ast::Ident {
        name: "Sub".to_string(),
        ..decl.class.clone()
    };
    let sub = InstanceDecl {
        class,
        methods: sub,
        ..decl.clone()
    };
    let add = InstanceDecl {
        methods: add,
        ..decl.clone()
    };
    Some((add, sub))
}

/// The method an instance defines under the name `name`: Dex's current spelling of the
/// arithmetic methods is their operator (`def (+)(x, y) = …` in `instance Add(T)`), its
/// earlier one the word dx's classes use (`def add(x, y) = …`).
fn method_name(name: &str) -> &str {
    match name {
        "+" => "add",
        "-" => "sub",
        "*" => "mul",
        "/" => "divide",
        ".*" => "scale_vec",
        "size'" => "size",
        other => other,
    }
}

/// `named-instance Name(params) -> Monoid(T)` with `mempty` and `<>`: the definition
/// `def Name(params) -> Monoid(T) = %monoid(mempty, <>)` that makes the monoid value a program
/// passes to `yield_accum` (Note [Named monoids] in `passes/lower_effects.rs`). Named
/// instances of other interfaces are refused: dx finds instances by type, and a named one has
/// no use but as an accumulator's monoid.
pub fn named_instance_def(decl: &InstanceDecl) -> Result<ast::FunDef> {
    let Some((name, params)) = &decl.named else {
        return error(decl.span, "not a named instance");
    };
    if decl.class.name != "Monoid" {
        return error(
            decl.class.span,
            format!(
                "a named instance is a monoid for `yield_accum` in dx \
                 (`named-instance {} : Monoid(T)`); named instances of `{}` are not supported",
                name.name, decl.class.name
            ),
        );
    }
    let [arg] = decl.args.as_slice() else {
        return error(decl.class.span, "`Monoid` has one parameter: `Monoid(T)`");
    };
    let mut empty = None;
    let mut combine = None;
    for item in &decl.methods {
        let (method, value) = match item {
            InstanceItem::Let(binding) => match &binding.pat {
                Pattern::Var(method) => (method, binding.value.clone()),
                _ => return error(binding.span, "a method is bound to a name: `mempty = …`"),
            },
            InstanceItem::Def(def) if def.params.is_empty() => (&def.name, def.body.clone()),
            InstanceItem::Def(def) => {
                let lambda = ast::ExprKind::Lam {
                    params: def.params.clone(),
                    body: Box::new(def.body.clone()),
                };
                let value = ast::Expr {
                    kind: lambda,
                    span: def.span,
                };
                (&def.name, value)
            }
        };
        let slot = match method.name.as_str() {
            "mempty" => &mut empty,
            "<>" | "mcombine" => &mut combine,
            other => {
                return error(
                    method.span,
                    format!("`{other}` is not a method of `Monoid` (`mempty`, `<>`)"),
                )
            }
        };
        if slot.replace(value).is_some() {
            return error_of(
                Code::Duplicate,
                method.span,
                format!("`{}` is defined twice", method.name),
            );
        }
    }
    let (Some(empty), Some(combine)) = (empty, combine) else {
        return error(
            name.span,
            "a `Monoid` instance defines `mempty` and `<>`: `mempty = …` and `def (<>)(x, y) = …`",
        );
    };
    let span = decl.span;
    let make = ast::Ident {
        name: super::builtins::MAKE_MONOID.to_string(),
        span,
    };
    let body = call(&make, vec![empty, combine], span);
    Ok(ast::FunDef {
        name: name.clone(),
        params: params.clone(),
        ret: Some(TypeExpr {
            kind: TypeExprKind::App(decl.class.clone(), vec![arg.clone()]),
            span: decl.class.span,
        }),
        effects: None,
        given: decl.given.clone(),
        constraints: decl.constraints.clone(),
        body,
        span,
    })
}

/// The name of the definition a struct's method becomes (`Thing.incby`): no name a program
/// can write, so it shadows nothing and nothing shadows it.
pub fn method_def_name(type_name: &str, method: &str) -> String {
    format!("{type_name}.{method}")
}

/// What a parameter of a user type stands for.
enum ParamKind {
    Type,
    Size,
    /// A value of this type (Note [Value parameters]).
    Value(Ty),
}

/// An error when a parameter of a type being declared reuses an earlier one's name.
fn not_bound_yet(name: &ast::Ident, params: &[DataParam]) -> Result<()> {
    match params.iter().any(|param| param.name == name.name) {
        true => error(
            name.span,
            format!("`{}` is bound twice in one pattern", name.name),
        ),
        false => Ok(()),
    }
}

/// Whether a top-level name is one `method_def_name` made (completion and "did you mean"
/// leave them out: a program calls them as `t.incby(1)`).
pub fn is_method_def_name(name: &str) -> bool {
    name.contains('.')
}

/// A struct's methods (`def incby(n: a) -> Thing(a) = …` inside `struct Thing(a|Add)`) as
/// the definitions they make: `self`, the struct, is the first parameter, and the struct's
/// parameters are the definition's implicit variables with their classes. `t.incby(1)` calls
/// `Thing.incby(t, 1)` (`Infer::struct_method`).
pub fn struct_method_defs(decl: &DataDecl) -> Vec<ast::FunDef> {
    let name_ty = |ident: &ast::Ident| TypeExpr {
        kind: TypeExprKind::Name(ident.clone()),
        span: ident.span,
    };
    let self_ty = TypeExpr {
        kind: match decl.params.is_empty() {
            true => TypeExprKind::Name(decl.name.clone()),
            false => TypeExprKind::App(
                decl.name.clone(),
                decl.params
                    .iter()
                    .map(|param| name_ty(&param.name))
                    .collect(),
            ),
        },
        span: decl.name.span,
    };
    let given: Vec<ast::GivenBinder> = (decl.given.iter().cloned())
        .chain(decl.params.iter().cloned())
        .collect();
    decl.methods
        .iter()
        .map(|method| {
            let this = ast::Param {
                pat: Pattern::Var(ast::Ident {
                    name: "self".to_string(),
                    span: method.name.span,
                }),
                ty: Some(self_ty.clone()),
                span: method.name.span,
            };
            // `def total() -> a` is called `t.total()`: it takes `()` after `self`.
            let unit = ast::Param {
                pat: Pattern::Tuple(Vec::new(), method.name.span),
                ty: Some(TypeExpr {
                    kind: TypeExprKind::Tuple(Vec::new()),
                    span: method.name.span,
                }),
                span: method.name.span,
            };
            let params = match method.params.is_empty() {
                true => vec![this, unit],
                false => std::iter::once(this)
                    .chain(method.params.iter().cloned())
                    .collect(),
            };
            ast::FunDef {
                name: ast::Ident {
                    name: method_def_name(&decl.name.name, &method.name.name),
                    span: method.name.span,
                },
                params,
                ret: method.ret.clone(),
                effects: method.effects.clone(),
                given: given.iter().chain(&method.given).cloned().collect(),
                constraints: method.constraints.clone(),
                body: method.body.clone(),
                span: method.span,
            }
        })
        .collect()
}

/// `custom-linearization f g` as the definition it makes: `f` replaced by
/// `%custom_linearization<n>(f, g)` (`Builtin::CustomLinearization`), `n` being the number of
/// `f`'s arguments; `g` must take them and give `f`'s value and its linear map, a function of
/// the tangents of the same arguments (Note [Custom linearizations] in `ops::custom`).
pub fn custom_linearization_def(
    env: &super::env::GlobalEnv,
    func: &ast::Ident,
    lin: &ast::Ident,
) -> Result<ast::FunDef> {
    let Some((_, info)) = env.def(&func.name) else {
        let what = match env.values.contains_key(&func.name) {
            true => "a value, not a function defined with `def` or a lambda",
            false => "not defined",
        };
        return error(
            func.span,
            format!(
                "`custom-linearization` gives a top-level function a derivative: `{}` is {what}",
                func.name
            ),
        );
    };
    let mut arity = 0u8;
    let mut ty = &info.ty;
    while let Ty::Fun { result, .. } = ty {
        arity = arity.saturating_add(1);
        ty = result;
    }
    if arity == 0 {
        return error_of(
            Code::Arity,
            func.span,
            format!(
                "`{}` takes no arguments: there is nothing to differentiate",
                func.name
            ),
        );
    }
    let span = func.span.to(lin.span);
    let builtin = ast::Ident {
        name: format!("{}{arity}", super::builtins::CUSTOM_LINEARIZATION),
        span,
    };
    Ok(ast::FunDef {
        name: func.clone(),
        params: Vec::new(),
        ret: None,
        effects: None,
        given: Vec::new(),
        constraints: Vec::new(),
        body: call(&builtin, vec![var(func), var(lin)], span),
        span,
    })
}

/// The expression of a name.
fn var(ident: &ast::Ident) -> ast::Expr {
    ast::Expr {
        kind: ast::ExprKind::Var(ident.clone()),
        span: ident.span,
    }
}

/// `func arg1 arg2 …`, made by a declaration's desugaring.
fn call(func: &ast::Ident, args: Vec<ast::Expr>, span: crate::syntax::Span) -> ast::Expr {
    args.into_iter().fold(var(func), |partial, arg| ast::Expr {
        kind: ast::ExprKind::App {
            func: Box::new(partial),
            arg: Box::new(arg),
            name: None,
        },
        span,
    })
}
