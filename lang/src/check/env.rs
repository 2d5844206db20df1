//! The checker's view of a session's top level: values with their types, definitions,
//! index-set aliases, and the classes of rigid type variables.

use std::collections::HashMap;
use std::sync::Arc;

use super::builtins::Class;
use super::classes::{ClassDef, InstanceDef};
use super::data::DataDef;
use super::typed::DefInfo;
use super::types::{Rigid, Ty};
use crate::syntax::ast::{Param, TypeExpr};

#[derive(Clone, Debug, Default)]
pub struct GlobalEnv {
    /// Top-level values and their types.
    pub values: HashMap<String, Ty>,
    /// Top-level `Nat` values, usable as sizes (`Fin n`).
    pub static_nats: HashMap<String, u64>,
    /// Every top-level definition ever made, by key (see `define`); a replaced definition
    /// stays, so that the definitions checked against it keep meaning what they meant.
    defs: HashMap<String, DefInfo>,
    /// The key of the definition each name currently denotes.
    def_keys: HashMap<String, String>,
    pub aliases: HashMap<String, Ty>,
    rigid_classes: Vec<Vec<Class>>,
    /// Constraints of several type variables assumed by `given`s: `(C, (a, b))` (Note
    /// [Interfaces of several parameters]).
    facts: Vec<(Class, Ty)>,
    /// The `a: Type` parameters of definitions: index sets only where they are used as one.
    type_params: std::collections::HashSet<super::types::Rigid>,
    /// The rigids that stand for values (`given (set:Set a)`, a type's `set:(Set a)`), with
    /// the values' types (Note [Value parameters]).
    value_rigids: HashMap<super::types::Rigid, Ty>,
    next_local: u32,
    /// Source names of locals (for printing the typed program).
    local_names: HashMap<super::types::LocalId, String>,
    /// User types by name (`struct`, `data`, `enum`, and the prelude's `Maybe`, …).
    pub data_types: HashMap<String, Arc<DataDef>>,
    /// Constructors by name: their type and position.
    pub constructors: HashMap<String, (Arc<DataDef>, usize)>,
    next_data_id: u32,
    /// Every interface ever declared, by `Class::User` id, and the built-in classes that have
    /// user instances (their methods, see `classes::builtin_methods`).
    pub class_defs: HashMap<Class, ClassDef>,
    /// The interface each name currently denotes.
    pub class_names: HashMap<String, Class>,
    /// Method names: their interface and position.
    pub methods: HashMap<String, (Class, usize)>,
    pub instances: Vec<InstanceDef>,
    /// Type functions (`def Vec(n: Nat) -> Type = …`): parameters and body, read at each use.
    pub type_fns: HashMap<String, TypeFn>,
    /// What `dex_test_mode()` gives (`SessionConfig::test_mode`).
    pub test_mode: bool,
    /// The folder relative file names start from (the script's; the working directory when
    /// unset): `load_npy`, `read_file`, `import`.
    pub data_dir: Option<std::path::PathBuf>,
}

/// A function from sizes and types to a type.
#[derive(Clone, Debug)]
pub struct TypeFn {
    pub params: Vec<Param>,
    pub body: TypeExpr,
}

impl GlobalEnv {
    pub fn new_rigid(&mut self, classes: Vec<Class>) -> Rigid {
        self.rigid_classes.push(classes);
        Rigid(self.rigid_classes.len() as u32 - 1)
    }

    /// Marks the rigid of an `a: Type` parameter: any type (in the classes its `given`
    /// names), made an index set by `type_param_as_index` where the definition uses it as one.
    pub fn mark_type_param(&mut self, rigid: Rigid) {
        self.type_params.insert(rigid);
    }

    /// Whether a rigid is an `a: Type` parameter's.
    pub fn is_type_param(&self, rigid: Rigid) -> bool {
        self.type_params.contains(&rigid)
    }

    /// Gives a `Type` parameter the index-set classes; false for any other rigid.
    pub fn type_param_as_index(&mut self, rigid: Rigid) -> bool {
        if !self.type_params.contains(&rigid) {
            return false;
        }
        self.add_rigid_classes(rigid, &[Class::Ix, Class::Eq, Class::Ord]);
        true
    }

    /// Makes `rigid` stand for a value of type `ty` (Note [Value parameters]).
    pub fn mark_value_rigid(&mut self, rigid: Rigid, ty: Ty) {
        self.value_rigids.insert(rigid, ty);
    }

    /// The type of the value `rigid` stands for, if it stands for one.
    pub fn value_rigid(&self, rigid: Rigid) -> Option<&Ty> {
        self.value_rigids.get(&rigid)
    }

    pub fn add_rigid_classes(&mut self, rigid: Rigid, classes: &[Class]) {
        if let Some(existing) = self.rigid_classes.get_mut(rigid.0 as usize) {
            for class in classes {
                if !existing.contains(class) {
                    existing.push(*class);
                }
            }
        }
    }

    /// Assumes `class` holds of `ty`, a type made of rigid variables (a `given`'s constraint
    /// of several variables).
    pub fn assume(&mut self, class: Class, ty: Ty) {
        if !self.facts.contains(&(class, ty.clone())) {
            self.facts.push((class, ty));
        }
    }

    /// Whether `class` of `ty` is an assumed fact.
    pub fn is_assumed(&self, class: Class, ty: &Ty) -> bool {
        self.facts.iter().any(|(c, t)| *c == class && t == ty)
    }

    /// Whether an assumed fact of `class` could be `ty` once its unification variables are
    /// known.
    pub fn may_be_assumed(&self, class: Class, ty: &Ty) -> bool {
        fn fits(fact: &Ty, ty: &Ty) -> bool {
            match (fact, ty) {
                (_, Ty::Var(_)) => true,
                (Ty::Tuple(xs), Ty::Tuple(ys)) => {
                    xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| fits(x, y))
                }
                (Ty::Table(xi, xe), Ty::Table(yi, ye)) => fits(xi, yi) && fits(xe, ye),
                _ => fact == ty,
            }
        }
        self.facts
            .iter()
            .any(|(c, fact)| *c == class && fits(fact, ty))
    }

    /// The assumed facts about any of `vars`: what a definition or instance with these
    /// variables asks of the types they are instantiated to.
    pub fn facts_about(&self, vars: &[Rigid]) -> Vec<(Class, Ty)> {
        self.facts
            .iter()
            .filter(|(_, ty)| ty.any(&mut |t| matches!(t, Ty::Rigid(r, _) if vars.contains(r))))
            .cloned()
            .collect()
    }

    pub fn rigid_classes(&self, rigid: Rigid) -> &[Class] {
        self.rigid_classes
            .get(rigid.0 as usize)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Local ids are unique across the session, so that definitions checked in different
    /// blocks can be inlined into one program without clashes.
    pub fn next_local(&mut self) -> u32 {
        self.next_local += 1;
        self.next_local
    }

    pub fn name_local(&mut self, local: super::types::LocalId, name: &str) {
        self.local_names.insert(local, name.to_string());
    }

    /// The source name of a local, or a generated one.
    pub fn local_name(&self, local: super::types::LocalId) -> String {
        self.local_names
            .get(&local)
            .cloned()
            .unwrap_or_else(|| format!("v{}", local.0))
    }

    /// Binds a name to a definition, replacing what the name denoted. The definition gets
    /// a key of its own (the name, then `name#2`, …) that references to it keep.
    pub fn define(&mut self, name: &str, info: DefInfo) {
        self.unbind(name);
        let key = if self.defs.contains_key(name) {
            format!("{name}#{}", self.defs.len() + 1)
        } else {
            name.to_string()
        };
        self.defs.insert(key.clone(), info);
        self.def_keys.insert(name.to_string(), key);
    }

    /// The definition a name denotes, with its key.
    pub fn def(&self, name: &str) -> Option<(&String, &DefInfo)> {
        let key = self.def_keys.get(name)?;
        Some((key, self.defs.get(key)?))
    }

    /// A definition by its key (as `define` made it).
    pub fn def_by_key(&self, key: &str) -> Option<&DefInfo> {
        self.defs.get(key)
    }

    /// Removes every binding of a name (a new top-level binding shadows the old one).
    pub fn unbind(&mut self, name: &str) {
        self.values.remove(name);
        let field_prefix = format!("{name}.");
        self.static_nats
            .retain(|known, _| known != name && !known.starts_with(&field_prefix));
        self.def_keys.remove(name);
        self.aliases.remove(name);
        self.data_types.remove(name);
        self.constructors.remove(name);
        self.class_names.remove(name);
        self.methods.remove(name);
        self.type_fns.remove(name);
    }

    /// Every name bound at the top level that a program can write (for completion).
    pub fn names(&self) -> impl Iterator<Item = &String> {
        let written = |name: &&String| !super::declare::is_method_def_name(name);
        self.values
            .keys()
            .chain(self.def_keys.keys().filter(written))
            .chain(self.aliases.keys())
            .chain(self.data_types.keys())
            .chain(self.constructors.keys())
            .chain(self.class_names.keys())
            .chain(self.methods.keys())
            .chain(self.type_fns.keys())
    }

    /// A fresh id for a user type or interface.
    pub fn next_data_id(&mut self) -> u32 {
        self.next_data_id += 1;
        self.next_data_id
    }

    /// The name of a class, as a user writes it.
    pub fn class_name(&self, class: Class) -> String {
        match self.class_defs.get(&class) {
            Some(def) => def.name.clone(),
            None => class.name().to_string(),
        }
    }

    /// `Name(T)` or, for an interface of several parameters, `Name(A, B)`: a class of a type
    /// as an instance head writes it.
    pub fn show_constraint(&self, class: Class, ty: &Ty) -> String {
        let parts: Vec<String> = match self.class_defs.get(&class) {
            Some(def) => def
                .class_arg_parts(ty)
                .iter()
                .map(|t| t.to_string())
                .collect(),
            None => vec![ty.to_string()],
        };
        format!("{}({})", self.class_name(class), parts.join(", "))
    }

    /// The classes a name in `given (a|Name)` or `instance Name(…)` denotes: an interface
    /// declared in dx, else dx's own (`Num` may be several), each with its superclasses.
    pub fn class_by_name(&self, name: &str) -> Option<Vec<Class>> {
        let named = match self.class_names.get(name) {
            Some(class) => vec![*class],
            None => Class::from_name(name)?,
        };
        let mut classes = named.clone();
        for class in named {
            self.add_supers(class, &mut classes);
        }
        Some(classes)
    }

    /// Adds the superclasses of `class` (transitively) to `out`: a declared interface's
    /// (`interface Norm(a|Add)`), or a built-in class's (`Sub` brings `Add`, as Dex's
    /// `interface Sub(a|Add)`).
    pub fn add_supers(&self, class: Class, out: &mut Vec<Class>) {
        let supers = match self.class_defs.get(&class) {
            Some(def) => def.supers().to_vec(),
            None => super::classes::builtin_supers(class),
        };
        for sup in supers {
            if !out.contains(&sup) {
                out.push(sup);
                self.add_supers(sup, out);
            }
        }
    }

    /// The instances of a class, newest first (a newer instance with the same head replaces
    /// an older one in the REPL).
    pub fn instances_of(&self, class: Class) -> impl Iterator<Item = &InstanceDef> {
        self.instances
            .iter()
            .rev()
            .filter(move |instance| instance.class == class)
    }
}
