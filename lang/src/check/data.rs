//! User types (docs/language.md): the definitions that `struct`, `data` and `enum` declarations
//! make, and the types that name them.
//!
//! A `DataDef` is immutable once declared and shared (`Arc`) by every type that names it, so
//! that any function of a type (its leaves, its printing, its tangent space) can look at the
//! constructors without an environment. Redeclaring a name in the REPL makes a new definition
//! with a new id; values of the old type keep the old definition.
//!
//! Representation (Note [Data representation]): the core IR has no user types. A value of a
//! type with one constructor is the tuple of its fields; a value of a type with several
//! constructors is the tuple of a `Nat` tag (the constructor's position) and, for every
//! constructor in order, the tuple of its fields. `repr` gives that tuple type, and every
//! function from types to arrays (leaves, assembling values, printing) goes through it.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

use super::types::{Rigid, Size, Ty};

// Note [Data representation]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A value of a type with several constructors keeps the fields of *every* constructor, those of
// the constructors it was not made with set to zero (as a tuple is stored as one array per
// component, a table of such values is a tag array plus one array per field: no boxing, no
// per-element interpretation). Every constructor application writes zeros there, and every
// operation on such values (`select`, `case`, indexing) moves whole values, so the invariant
// "the fields of the other constructors are zero" holds for every value. Equality and order
// can therefore compare all leaves, tag first: two values with the same tag have equal zeros
// elsewhere, so the comparison is that of Dex's derived `Eq`/`Ord` (constructor order, then
// the fields). `case` under a `for` computes every alternative and the tag selects, as `if`
// does ([Smeding25] §5.2, the strict `cond`).

// Note [Size fields]
// ~~~~~~~~~~~~~~~~~~
// Dex's `data List(a) = AsList(n:Nat, elements:(Fin n)=>a)` has a field that is the size of
// another: a dependent pair. dx's shapes are static, so such a field is a size of the *type*:
// the declaration gets a hidden size parameter for it (`List a` is `List a n` with `n` left to
// inference), the constructor stores it from the type (an argument `_` or the size itself),
// and a pattern that binds it binds a static size, usable in `Fin n` (`(AsList(n, xs)) = l`).
// Two lists of different lengths have different types; `<>` of lists adds the lengths.

// Note [Value parameters]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Dex's `struct Element(set:(Set a)) given (a|Ord) = val: Nat` is a type indexed by a value:
// `Element names` is an index set whose size is the set's, and `member x names : Maybe
// (Element names)`. dx's types name the value, not compute with it: the argument is a
// `Ty::Value`, the name of a top-level value or of a function's parameter (only a name, so
// that two types are equal when they name the same value), and its type is unified with the
// parameter's. Whatever that type holds statically then holds for the new type: a hidden size
// of the value's type (a `Set a` is a `Set a k` for the `k` elements, Note [Size fields])
// becomes a hidden parameter of the type that names it, so the size of `Element names` is
// known when a block is compiled, as any size is. An `Ix` instance writes that size as Dex
// does (`size' = set_size set`: a function of the value that returns a size of its type,
// `Infer::size_through_calls`). In a definition or instance a `given (set:Set a)` binder is
// a variable of the types that stands for the value: used in an expression it is the value
// (`TKind::GivenValue`), which the lowering reads from the name its instantiation gives.

/// What declared a user type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataKind {
    Struct,
    Data,
    Enum,
}

/// A parameter of a user type: a type (`a:Type`, `n|Ix`), a size (`n:Nat`), which is
/// represented by the index set `Fin n` (so a field `(Fin n)=>Float` reads `size` of it), or a
/// value (`set:(Set a)`, Note [Value parameters]).
#[derive(Clone, Debug)]
pub struct DataParam {
    pub name: String,
    pub rigid: Rigid,
    pub is_size: bool,
    /// The type of a value parameter (it mentions the other parameters' rigids).
    pub value: Option<Ty>,
    /// Not written as an argument of the type: made by a constructor's size field (`n` of
    /// `AsList(n:Nat, elements:(Fin n)=>a)`, Note [Size fields]), or a variable of the
    /// declaration's `given`, inferred from the arguments.
    pub hidden: bool,
}

#[derive(Clone, Debug)]
pub struct FieldDef {
    pub name: Option<String>,
    /// The field's type; it mentions the parameters as their rigid variables.
    pub ty: Ty,
}

#[derive(Clone, Debug)]
pub struct ConDef {
    pub name: String,
    pub fields: Vec<FieldDef>,
    /// The fields that are sizes of the type (Note [Size fields]): the field's position and
    /// the hidden parameter it is the size of.
    pub size_fields: Vec<(usize, usize)>,
}

impl DataParam {
    /// A size the type's values hold that its written arguments do not give (Note [Size
    /// fields]): inferred, and free to differ where values are compared.
    pub fn is_hidden_size(&self) -> bool {
        self.hidden && self.is_size
    }
}

/// A declared user type.
#[derive(Debug)]
pub struct DataDef {
    /// Unique in the session (names may be redeclared in the REPL).
    pub id: u32,
    pub name: String,
    pub kind: DataKind,
    pub params: Vec<DataParam>,
    pub cons: Vec<ConDef>,
    /// The size of the type as an index set, once an instance of `Ix` has given it (in terms
    /// of the parameters).
    pub ix_size: OnceLock<Size>,
}

/// A user type applied to its arguments (one per parameter, in order).
#[derive(Clone, Debug)]
pub struct DataTy {
    pub def: Arc<DataDef>,
    pub args: Vec<Ty>,
}

impl PartialEq for DataTy {
    fn eq(&self, other: &DataTy) -> bool {
        self.def.id == other.def.id && self.args == other.args
    }
}

impl Eq for DataTy {}

impl Hash for DataTy {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.def.id.hash(state);
        self.args.hash(state);
    }
}

impl DataDef {
    /// Whether values carry a tag (the type has several constructors).
    pub fn is_tagged(&self) -> bool {
        self.cons.len() != 1
    }

    /// Whether no constructor has a field (`enum Color = Red | Green | Blue`): such a type is
    /// an index set of its constructors in order (Dex's), its ordinal the tag.
    pub fn is_enumeration(&self) -> bool {
        self.cons.iter().all(|con| con.fields.is_empty())
    }

    pub fn con_index(&self, name: &str) -> Option<usize> {
        self.cons.iter().position(|con| con.name == name)
    }
}

impl DataTy {
    /// The field types of constructor `con`, with the parameters replaced by the arguments.
    pub fn fields(&self, con: usize) -> Vec<Ty> {
        self.def.cons[con]
            .fields
            .iter()
            .map(|field| self.instantiate(&field.ty))
            .collect()
    }

    /// A type written in terms of the parameters, with the arguments in their place.
    pub fn instantiate(&self, ty: &Ty) -> Ty {
        let mapping: Vec<(Rigid, &Ty)> = self
            .def
            .params
            .iter()
            .map(|param| param.rigid)
            .zip(&self.args)
            .collect();
        ty.map(&mut |inner| match inner {
            Ty::Rigid(rigid, _) => mapping
                .iter()
                .find(|(bound, _)| bound == rigid)
                .map(|(_, arg)| (*arg).clone()),
            _ => None,
        })
    }

    /// The tuple type a value is stored as. See Note [Data representation].
    pub fn repr(&self) -> Ty {
        let con_tuple = |con: usize| Ty::Tuple(self.fields(con));
        if !self.def.is_tagged() {
            return con_tuple(0);
        }
        let mut items = vec![Ty::nat()];
        items.extend((0..self.def.cons.len()).map(con_tuple));
        Ty::Tuple(items)
    }

    /// The position of a named field of a single-constructor type.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        if self.def.is_tagged() {
            return None;
        }
        self.def.cons[0]
            .fields
            .iter()
            .position(|field| field.name.as_deref() == Some(name))
    }

    /// The names a field access may use, for an error message.
    pub fn field_names(&self) -> Vec<String> {
        if self.def.is_tagged() {
            return Vec::new();
        }
        self.def.cons[0]
            .fields
            .iter()
            .filter_map(|field| field.name.clone())
            .collect()
    }
}

/// Dex's type syntax: `Point`, `(MyPair Int32 Float32)`, `(Layer (Fin 3) (Fin 2))`; a size
/// parameter prints as its size (`(Vec 3)`).
impl fmt::Display for DataTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.args.is_empty() {
            return write!(f, "{}", self.def.name);
        }
        let visible = self.def.params.iter().filter(|param| !param.hidden).count();
        if visible == 0 {
            return write!(f, "{}", self.def.name);
        }
        write!(f, "({}", self.def.name)?;
        for (param, arg) in self.def.params.iter().zip(&self.args) {
            if param.hidden {
                continue;
            }
            match arg {
                Ty::Fin(size) if param.is_size => write!(f, " {size}")?,
                Ty::Fin(_) => write!(f, " ({arg})")?,
                _ => write!(f, " {arg}")?,
            }
        }
        write!(f, ")")
    }
}
