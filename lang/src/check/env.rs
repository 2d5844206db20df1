//! The checker's view of a session's top level: values with their types, definitions,
//! index-set aliases, and the classes of rigid type variables.

use std::collections::HashMap;

use super::builtins::Class;
use super::typed::DefInfo;
use super::types::{Rigid, Ty};

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
    /// The `a: Type` parameters of definitions: index sets only where they are used as one.
    type_params: std::collections::HashSet<super::types::Rigid>,
    next_local: u32,
    /// Source names of locals (for printing the typed program).
    local_names: HashMap<super::types::LocalId, String>,
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

    pub fn add_rigid_classes(&mut self, rigid: Rigid, classes: &[Class]) {
        if let Some(existing) = self.rigid_classes.get_mut(rigid.0 as usize) {
            for class in classes {
                if !existing.contains(class) {
                    existing.push(*class);
                }
            }
        }
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
        self.static_nats.remove(name);
        self.def_keys.remove(name);
        self.aliases.remove(name);
    }

    /// Every name bound at the top level (for completion).
    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.values
            .keys()
            .chain(self.def_keys.keys())
            .chain(self.aliases.keys())
    }
}
