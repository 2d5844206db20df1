//! Types of the surface language (docs/language.md) as the checker sees them: with unification
//! variables, rigid variables (`given` binders and generalised variables) and symbolic sizes.

use std::fmt;

use super::data::DataTy;
pub use super::effects::{EffRow, Effect};
pub use crate::syntax::ast::RangeKind;

/// A unification variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TyVar(pub u32);

/// A rigid type variable: a `given` binder of a definition, or a generalised variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rigid(pub u32);

/// A local term variable (a binder inside a declaration).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BaseTy {
    Float32,
    Float64,
    Int32,
    Int64,
    /// Unsigned 32-bit (`Nat`).
    Nat,
    /// A byte (Dex's `Word8`, also its `Char` and `Byte`), stored in 32 bits and kept below
    /// 256; printed as a character (`'a'`, `'\\210'`), as Dex prints it.
    Word8,
    /// Unsigned 32-bit, printed in hexadecimal (Dex's `Word32`).
    Word32,
    Word64,
    Bool,
}

impl BaseTy {
    pub fn name(self) -> &'static str {
        match self {
            BaseTy::Float32 => "Float32",
            BaseTy::Float64 => "Float64",
            BaseTy::Int32 => "Int32",
            BaseTy::Int64 => "Int64",
            BaseTy::Nat => "Nat",
            BaseTy::Word8 => "Word8",
            BaseTy::Word32 => "Word32",
            BaseTy::Word64 => "Word64",
            BaseTy::Bool => "Bool",
        }
    }

    /// The base type a type name denotes (`Float` is `Float32`, `Key` is `Word64`).
    pub fn from_name(name: &str) -> Option<BaseTy> {
        Some(match name {
            "Float" | "Float32" => BaseTy::Float32,
            "Float64" => BaseTy::Float64,
            "Int" | "Int32" => BaseTy::Int32,
            "Int64" => BaseTy::Int64,
            "Nat" => BaseTy::Nat,
            "Word8" | "Byte" | "Char" => BaseTy::Word8,
            "Word32" => BaseTy::Word32,
            "Word64" | "Key" => BaseTy::Word64,
            "Bool" => BaseTy::Bool,
            _ => return None,
        })
    }

    pub fn is_float(self) -> bool {
        matches!(self, BaseTy::Float32 | BaseTy::Float64)
    }

    pub fn is_numeric(self) -> bool {
        !matches!(self, BaseTy::Bool)
    }

    /// The element type of the arrays that store values of this type: bytes and characters
    /// (characters) are kept in 32 bits (below 256), as `Nat`s are.
    pub fn elem(self) -> crate::core::ir::Elem {
        use crate::core::ir::Elem;
        match self {
            BaseTy::Float32 => Elem::F32,
            BaseTy::Float64 => Elem::F64,
            BaseTy::Int32 => Elem::I32,
            BaseTy::Int64 => Elem::I64,
            BaseTy::Nat | BaseTy::Word8 | BaseTy::Word32 => Elem::U32,
            BaseTy::Word64 => Elem::U64,
            BaseTy::Bool => Elem::Bool,
        }
    }

    /// Words (`Word32`, `Word64`) print in hexadecimal, as Dex's (a `Word8` prints as a
    /// character).
    pub fn is_word(self) -> bool {
        matches!(self, BaseTy::Word32 | BaseTy::Word64)
    }

    /// The values of an integer type (`None` for floats and `Bool`): an integer literal must
    /// lie in this range (docs/language.md).
    pub fn int_range(self) -> Option<(i128, i128)> {
        match self {
            BaseTy::Int32 => Some((i32::MIN.into(), i32::MAX.into())),
            BaseTy::Int64 => Some((i64::MIN.into(), i64::MAX.into())),
            BaseTy::Nat | BaseTy::Word32 => Some((0, u32::MAX.into())),
            BaseTy::Word8 => Some((0, u8::MAX.into())),
            BaseTy::Word64 => Some((0, u64::MAX.into())),
            BaseTy::Float32 | BaseTy::Float64 | BaseTy::Bool => None,
        }
    }
}

/// A size known when a block is compiled (docs/language.md): a constant, a `Nat` parameter of
/// the function being checked, the size of a rigid index set, or arithmetic on those.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Size {
    Const(u64),
    /// A `Nat` parameter (value-dependent type, specialised per call).
    Local(LocalId, String),
    /// A `Nat` field of a parameter (`Fin camera.numPix`).
    Field(LocalId, Box<FieldPath>),
    /// `size n` of an index set that is not known yet (a rigid or unification variable).
    Of(Box<Ty>),
    Add(Box<Size>, Box<Size>),
    Sub(Box<Size>, Box<Size>),
    Mul(Box<Size>, Box<Size>),
    Div(Box<Size>, Box<Size>),
}

/// The fields from a parameter's value down to a `Nat` in it (`Size::Field`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldPath {
    /// The positions of the fields, outermost first.
    pub positions: Vec<usize>,
    /// As written: `camera.numPix`.
    pub written: String,
}

/// The constructor of an arithmetic size from its operands (`Size::Add`, …).
pub type SizeOp = fn(Box<Size>, Box<Size>) -> Size;

impl Size {
    /// Folds constant arithmetic; sizes are natural numbers (subtraction saturates at 0).
    pub fn normalise(&self) -> Size {
        let binary = |a: &Size, b: &Size, op: fn(u64, u64) -> u64, make: SizeOp| match (
            a.normalise(),
            b.normalise(),
        ) {
            (Size::Const(x), Size::Const(y)) => Size::Const(op(x, y)),
            (x, y) => make(Box::new(x), Box::new(y)),
        };
        match self {
            Size::Const(_) | Size::Local(..) | Size::Field(..) => self.clone(),
            Size::Of(ty) => match &**ty {
                Ty::Fin(size) => size.normalise(),
                Ty::Tuple(items) => items
                    .iter()
                    .map(|item| Size::Of(Box::new(item.clone())))
                    .fold(Size::Const(1), |acc, size| {
                        Size::Mul(Box::new(acc), Box::new(size))
                    })
                    .normalise(),
                Ty::Table(ix, elem) => match (
                    Size::Of(ix.clone()).normalise(),
                    Size::Of(elem.clone()).normalise(),
                ) {
                    (Size::Const(n), Size::Const(a)) => {
                        Size::Const(a.saturating_pow(u32::try_from(n).unwrap_or(u32::MAX)))
                    }
                    _ => self.clone(),
                },
                // `Bool`, an enumeration, a type with an instance of `Ix`.
                Ty::Base(_) | Ty::Data(_) => match super::infer::size_of_ix(ty) {
                    Some(size) => size.normalise(),
                    None => self.clone(),
                },
                _ => self.clone(),
            },
            Size::Add(a, b) => binary(a, b, u64::saturating_add, Size::Add),
            Size::Sub(a, b) => binary(a, b, u64::saturating_sub, Size::Sub),
            Size::Mul(a, b) => binary(a, b, u64::saturating_mul, Size::Mul),
            Size::Div(a, b) => binary(a, b, |x, y| x.checked_div(y).unwrap_or(0), Size::Div),
        }
    }

    /// Whether a local the size reads (`Fin n`, `Fin c.numPix`, in arithmetic too) satisfies
    /// `pred`.
    pub fn any_local(&self, pred: &mut impl FnMut(LocalId) -> bool) -> bool {
        match self {
            Size::Local(id, _) | Size::Field(id, _) => pred(*id),
            Size::Const(_) | Size::Of(_) => false,
            Size::Add(a, b) | Size::Sub(a, b) | Size::Mul(a, b) | Size::Div(a, b) => {
                a.any_local(pred) || b.any_local(pred)
            }
        }
    }

    /// Whether a type inside the size satisfies `pred`.
    pub fn any_ty(&self, pred: &mut impl FnMut(&Ty) -> bool) -> bool {
        match self {
            Size::Const(_) | Size::Local(..) | Size::Field(..) => false,
            Size::Of(ty) => ty.any(pred),
            Size::Add(a, b) | Size::Sub(a, b) | Size::Mul(a, b) | Size::Div(a, b) => {
                a.any_ty(pred) || b.any_ty(pred)
            }
        }
    }

    /// The operands of an arithmetic size and the constructor that makes it again from new
    /// ones; `None` for the other sizes.
    pub fn arithmetic(&self) -> Option<(&Size, &Size, SizeOp)> {
        match self {
            Size::Add(a, b) => Some((a, b, Size::Add)),
            Size::Sub(a, b) => Some((a, b, Size::Sub)),
            Size::Mul(a, b) => Some((a, b, Size::Mul)),
            Size::Div(a, b) => Some((a, b, Size::Div)),
            Size::Const(_) | Size::Local(..) | Size::Field(..) | Size::Of(_) => None,
        }
    }

    /// The size with `f` applied to the types inside it (`size n`), normalised.
    pub fn map_tys(&self, f: &mut impl FnMut(&Ty) -> Option<Ty>) -> Size {
        match self {
            Size::Of(ty) => Size::Of(Box::new(ty.map(f))).normalise(),
            _ => match self.arithmetic() {
                Some((a, b, make)) => make(Box::new(a.map_tys(f)), Box::new(b.map_tys(f))),
                None => self.clone(),
            },
        }
        .normalise()
    }

    pub fn as_const(&self) -> Option<u64> {
        match self.normalise() {
            Size::Const(n) => Some(n),
            _ => None,
        }
    }
}

/// A type. Index sets are types too: `Fin n` is both the index set and the type of its
/// elements; a pair index set is a `Tuple` of index sets.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    Base(BaseTy),
    Fin(Size),
    /// `ix => elem`
    Table(Box<Ty>, Box<Ty>),
    Tuple(Vec<Ty>),
    /// A function of one argument (functions of several arguments are curried). `binder` is
    /// set when later types mention the argument's value as a size (`(n: Nat) -> (Fin n)=>…`).
    /// `effects` are what applying it may do (Note [Effect rows]).
    Fun {
        param: Box<Ty>,
        binder: Option<LocalId>,
        result: Box<Ty>,
        effects: EffRow,
    },
    Var(TyVar),
    Rigid(Rigid, String),
    /// The type of a type argument (`iota (Fin 5)`, `size n`): the type itself is carried.
    TypeArg(Box<Ty>),
    /// A user type (`struct`, `data`, `enum`) applied to its arguments.
    Data(DataTy),
    /// A range of an index of `of` (`(..i)`): an index set whose size depends on the index
    /// `bound`. See Note [Ranges].
    Range {
        kind: RangeKind,
        of: Box<Ty>,
        bound: Bound,
    },
    /// A built-in type constructor of the effects (docs/language.md, Effects) applied to its arguments:
    /// `Ref h s`, `Monoid a`. See Note [References].
    Con(TyCon, Vec<Ty>),
    /// The rest of an effect row: what a row variable (the tail of an `EffRow`) is bound to.
    /// Not the type of a value.
    Row(EffRow),
    /// A value given to a value parameter of a user type (`names` in `Element names`, Note
    /// [Value parameters] in `check/data.rs`). Not the type of a value.
    Value(ValueArg),
}

/// The value a type names: a top-level value or a local (a function's parameter).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ValueArg {
    Global(String),
    Local(LocalId, String),
}

impl ValueArg {
    pub fn name(&self) -> &str {
        match self {
            ValueArg::Global(name) | ValueArg::Local(_, name) => name,
        }
    }
}

// Note [References]
// ~~~~~~~~~~~~~~~~~
// `Ref h s` is a reference to a value of type `s` in the region `h` of one handler
// (`with_state`, `yield_accum`, `with_reader`). The region is a type variable the handler's
// application creates; when the handler's type is settled it must not appear in the
// handler's result or in the context, which is how a reference that escapes its handler is
// caught (the rank-2 type of Dex's handlers, checked after inference). References are
// compile-time things: the lowering keeps the value a reference points to in a cell of its own
// and turns reads and writes into the pure program (`passes/lower_effects.rs`).

/// The built-in type constructors of `Ty::Con`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TyCon {
    /// `Ref h s`: region, then the value's type.
    Ref,
    /// `Monoid a`: a monoid over `a` passed as a value (`AddMonoid Float`).
    Monoid,
}

impl TyCon {
    pub fn name(self) -> &'static str {
        match self {
            TyCon::Ref => "Ref",
            TyCon::Monoid => "Monoid",
        }
    }
}

// Note [Ranges]
// ~~~~~~~~~~~~~
// `(..i)` is the index set of the elements of `n` up to the index `i : n` (and `(..<i)`,
// `(i..)`, `(i<..)` likewise): its size depends on a value, as in Dex's triangular tables
// `(i:n)=>(..i)=>Float`. dx stores a table over a range padded to the size of `n`, the elements
// of the range first and zeros after them, so every shape stays static and a triangular table
// is a square one whose unused half is zero (sums over it need no mask). A `for` over a range
// computes every padded position and keeps zero where the position is outside the range; its
// valid size (`size (..i)` is `ordinal i + 1`) is computed from the index's value when the
// block runs. The bound is the index: a local (`for j:(..i)` with `i` in scope), or, inside a
// table type, the index of an enclosing table (`Bound::Outer`, counted outwards from the
// range), which indexing replaces by the index used (`tri[i]` has type `(..i)=>Float`).

/// The index a range is relative to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Bound {
    /// A local index variable.
    Local(LocalId, String),
    /// The index of the `k`-th table enclosing the range's table (0: the nearest), named as
    /// written (`i` in `(i:n)=>(..i)=>Float`).
    Outer(u32, String),
}

impl Bound {
    pub fn name(&self) -> &str {
        match self {
            Bound::Local(_, name) | Bound::Outer(_, name) => name,
        }
    }
}

impl Ty {
    /// The position of field `name` (`x`, or `0` by position) in a value of a tuple or a
    /// struct type, as its representation orders the fields.
    pub fn field_position(&self, name: &str) -> Option<usize> {
        match self {
            Ty::Tuple(_) => name.parse().ok(),
            Ty::Data(data) => data.field_index(name).or_else(|| name.parse().ok()),
            _ => None,
        }
    }

    pub fn float() -> Ty {
        Ty::Base(BaseTy::Float32)
    }

    pub fn nat() -> Ty {
        Ty::Base(BaseTy::Nat)
    }

    pub fn bool() -> Ty {
        Ty::Base(BaseTy::Bool)
    }

    pub fn table(ix: Ty, elem: Ty) -> Ty {
        Ty::Table(Box::new(ix), Box::new(elem))
    }

    /// A pure function type.
    pub fn fun(param: Ty, result: Ty) -> Ty {
        Ty::fun_with(param, result, EffRow::pure())
    }

    /// A function type whose application has the effects `effects`.
    pub fn fun_with(param: Ty, result: Ty, effects: EffRow) -> Ty {
        Ty::Fun {
            param: Box::new(param),
            binder: None,
            result: Box::new(result),
            effects,
        }
    }

    /// This type (a curried function of at least `count` parameters) with the row `row` on
    /// its `count`-th arrow: the effects happen when that parameter is given.
    pub fn with_row_at(self, count: usize, row: EffRow) -> Ty {
        match self {
            Ty::Fun {
                param,
                binder,
                result,
                effects,
            } if count > 0 => {
                let (result, effects) = match count {
                    1 => (*result, row),
                    _ => (result.with_row_at(count - 1, row), effects),
                };
                Ty::Fun {
                    param,
                    binder,
                    result: Box::new(result),
                    effects,
                }
            }
            other => other,
        }
    }

    /// The number of arrows of a curried function type (0 for any other type).
    pub fn arity(&self) -> usize {
        match self {
            Ty::Fun { result, .. } => 1 + result.arity(),
            _ => 0,
        }
    }

    /// Curried function type of several parameters.
    pub fn funs(params: Vec<Ty>, result: Ty) -> Ty {
        params
            .into_iter()
            .rev()
            .fold(result, |acc, param| Ty::fun(param, acc))
    }

    /// Calls `f` on every type nested in this one (not through sizes).
    pub fn any(&self, pred: &mut impl FnMut(&Ty) -> bool) -> bool {
        if pred(self) {
            return true;
        }
        match self {
            Ty::Base(_) | Ty::Var(_) | Ty::Rigid(..) | Ty::Value(_) => false,
            Ty::Fin(size) => size.any_ty(pred),
            Ty::Table(ix, elem) => ix.any(pred) || elem.any(pred),
            Ty::Tuple(items) => items.iter().any(|item| item.any(pred)),
            Ty::Fun {
                param,
                result,
                effects,
                ..
            } => param.any(pred) || result.any(pred) || effects.any_ty(pred),
            Ty::Row(row) => row.any_ty(pred),
            Ty::TypeArg(ty) => ty.any(pred),
            Ty::Data(data) => data.args.iter().any(|arg| arg.any(pred)),
            Ty::Range { of, .. } => of.any(pred),
            Ty::Con(_, args) => args.iter().any(|arg| arg.any(pred)),
        }
    }

    /// Rebuilds the type bottom-up, letting `f` replace any node (returning `Some`); sizes
    /// are normalised on the way.
    pub fn map(&self, f: &mut impl FnMut(&Ty) -> Option<Ty>) -> Ty {
        if let Some(replaced) = f(self) {
            return replaced;
        }
        match self {
            Ty::Base(_) | Ty::Var(_) | Ty::Rigid(..) | Ty::Value(_) => self.clone(),
            Ty::Fin(size) => Ty::Fin(size.map_tys(f)),
            Ty::Table(ix, elem) => Ty::table(ix.map(f), elem.map(f)),
            Ty::Tuple(items) => Ty::Tuple(items.iter().map(|item| item.map(f)).collect()),
            Ty::Fun {
                param,
                binder,
                result,
                effects,
            } => Ty::Fun {
                param: Box::new(param.map(f)),
                binder: *binder,
                result: Box::new(result.map(f)),
                effects: effects.map_tys(f),
            },
            Ty::Row(row) => Ty::Row(row.map_tys(f)),
            Ty::TypeArg(inner) => Ty::TypeArg(Box::new(inner.map(f))),
            Ty::Data(data) => Ty::Data(DataTy {
                def: data.def.clone(),
                args: data.args.iter().map(|arg| arg.map(f)).collect(),
            }),
            Ty::Range { kind, of, bound } => Ty::Range {
                kind: *kind,
                of: Box::new(of.map(f)),
                bound: bound.clone(),
            },
            Ty::Con(con, args) => Ty::Con(*con, args.iter().map(|arg| arg.map(f)).collect()),
        }
    }

    /// The table type `(i:index)=>elem` where `elem` mentions the local index `i`: the ranges
    /// bounded by `i` become bounded by the table's own index (Note [Ranges]).
    pub fn dep_table(index: Ty, local: LocalId, elem: Ty) -> Ty {
        let bind = |ty: &Ty, depth: u32| match ty {
            Ty::Range {
                kind,
                of,
                bound: Bound::Local(id, name),
            } if *id == local => Ty::Range {
                kind: *kind,
                of: of.clone(),
                bound: Bound::Outer(depth, name.clone()),
            },
            other => other.clone(),
        };
        Ty::table(index, elem.map_table_indices(0, &bind))
    }

    /// The element type of a table of type `(i:n)=>elem` at index `bound`: the ranges bounded by
    /// the table's index become bounded by `bound` (Note [Ranges]).
    pub fn index_dep_elem(elem: &Ty, bound: &Bound) -> Ty {
        let instantiate = |ty: &Ty, depth: u32| {
            let Ty::Range {
                kind,
                of,
                bound: Bound::Outer(k, name),
            } = ty
            else {
                return ty.clone();
            };
            let new_bound = match (*k).cmp(&depth) {
                std::cmp::Ordering::Equal => bound.clone(),
                std::cmp::Ordering::Greater => Bound::Outer(k - 1, name.clone()),
                std::cmp::Ordering::Less => Bound::Outer(*k, name.clone()),
            };
            Ty::Range {
                kind: *kind,
                of: of.clone(),
                bound: new_bound,
            }
        };
        elem.map_table_indices(0, &instantiate)
    }

    /// The type with `f` applied to the index of each of its tables, through tuples and
    /// element types; `f` also gets the index's depth: the number of tables around it, plus
    /// `depth`.
    fn map_table_indices(&self, depth: u32, f: &impl Fn(&Ty, u32) -> Ty) -> Ty {
        match self {
            Ty::Table(ix, elem) => Ty::table(f(ix, depth), elem.map_table_indices(depth + 1, f)),
            Ty::Tuple(items) => Ty::Tuple(
                items
                    .iter()
                    .map(|item| item.map_table_indices(depth, f))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Whether the type's tables depend on an enclosing table's index (`(..i)` inside).
    pub fn mentions_outer(&self, depth: u32) -> bool {
        match self {
            Ty::Table(ix, elem) => {
                matches!(&**ix, Ty::Range { bound: Bound::Outer(k, _), .. } if *k == depth)
                    || elem.mentions_outer(depth + 1)
            }
            Ty::Tuple(items) => items.iter().any(|item| item.mentions_outer(depth)),
            _ => false,
        }
    }

    /// Whether a value of this type holds a function (in a field of a user type too: a
    /// `struct` of functions is a definition, not data).
    pub fn contains_fun(&self) -> bool {
        self.any(&mut |ty| match ty {
            Ty::Fun { .. } => true,
            Ty::Data(data) => {
                (0..data.def.cons.len()).any(|con| data.fields(con).iter().any(Ty::contains_fun))
            }
            _ => false,
        })
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.normalise() {
            Size::Const(n) => write!(f, "{n}"),
            Size::Local(_, name) => write!(f, "{name}"),
            Size::Field(_, field) => write!(f, "{}", field.written),
            Size::Of(ty) => write!(f, "size {ty}"),
            Size::Add(a, b) => write!(f, "({a} + {b})"),
            Size::Sub(a, b) => write!(f, "({a} - {b})"),
            Size::Mul(a, b) => write!(f, "({a} * {b})"),
            Size::Div(a, b) => write!(f, "({a} / {b})"),
        }
    }
}

/// The name of the index a type's ranges at `depth` refer to (`i` of `(..i)`), if any.
fn dep_binder(ty: &Ty, depth: u32) -> Option<String> {
    match ty {
        Ty::Table(ix, elem) => match &**ix {
            Ty::Range {
                bound: Bound::Outer(k, name),
                ..
            } if *k == depth => Some(name.clone()),
            _ => dep_binder(elem, depth + 1),
        },
        Ty::Tuple(items) => items.iter().find_map(|item| dep_binder(item, depth)),
        _ => None,
    }
}

/// A type in parentheses unless it prints as one name.
fn atom_text(ty: &Ty) -> String {
    let text = ty.to_string();
    if text.contains(' ') && !text.starts_with('(') {
        format!("({text})")
    } else {
        text
    }
}

/// Dex type syntax: `((Fin 3) => (Fin 8) => Float32)`, `(Float32, Int32)`.
impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Base(base) => write!(f, "{}", base.name()),
            // `Fin (size n)` (arithmetic on sizes prints its own parentheses).
            Ty::Fin(size) => match size.normalise() {
                Size::Of(_) => write!(f, "Fin ({size})"),
                _ => write!(f, "Fin {size}"),
            },
            Ty::Table(..) => {
                write!(f, "(")?;
                let mut ty = self;
                while let Ty::Table(ix, elem) = ty {
                    // A table whose element depends on its index names it: `(i:(Fin 3)) =>`.
                    let binder = dep_binder(elem, 0);
                    match (&**ix, binder) {
                        (_, Some(name)) => write!(f, "({name}:{}) => ", atom_text(ix))?,
                        // A tuple prints its own brackets: `((Fin 2, Fin 3) => Float32)`.
                        (Ty::Fin(_), None) => write!(f, "({ix}) => ")?,
                        _ => write!(f, "{ix} => ")?,
                    }
                    ty = elem;
                }
                match ty {
                    Ty::Fin(_) => write!(f, "({ty}))"),
                    _ => write!(f, "{ty})"),
                }
            }
            Ty::Tuple(items) => {
                write!(f, "(")?;
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{item}")?;
                }
                write!(f, ")")
            }
            Ty::Fun {
                param,
                result,
                effects,
                ..
            } if !effects.prints_empty() => write!(f, "({param} -> {effects} {result})"),
            Ty::Fun { param, result, .. } => write!(f, "({param} -> {result})"),
            Ty::Row(row) => write!(f, "{row}"),
            Ty::Value(value) => write!(f, "{}", value.name()),
            // A type not decided yet (error messages only; `:t` names its variables).
            Ty::Var(_) => write!(f, "_"),
            Ty::Rigid(_, name) => write!(f, "{name}"),
            Ty::TypeArg(ty) => write!(f, "Type {ty}"),
            Ty::Data(data) => write!(f, "{data}"),
            Ty::Range { kind, bound, .. } => write!(f, "{}", kind.text(bound.name())),
            Ty::Con(con, args) => {
                write!(f, "{}", con.name())?;
                for arg in args {
                    match arg {
                        Ty::Base(_) | Ty::Var(_) | Ty::Rigid(..) | Ty::Tuple(_) => {
                            write!(f, " {arg}")?
                        }
                        _ => write!(f, " ({arg})")?,
                    }
                }
                Ok(())
            }
        }
    }
}
