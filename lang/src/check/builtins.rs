//! Built-in functions: their names and type schemes. Their meaning is given by the lowering
//! (`passes/lower.rs`); functions that can be written in dx itself live in `stdlib/prelude.dx`.

use super::infer::Infer;
use super::types::{BaseTy, EffRow, Effect, Ty, TyCon, TyVar};
use crate::prim::signature::{Interface, Slot};
use crate::prim::{Prim, ALL_PRIMS};
use crate::syntax::Span;

/// A class of types a variable is constrained to (Dex's type classes, simplified). Lifted
/// classes (`Add`, `Mul`, `Div`, `Floating`) hold for a scalar of the right kind and for tables
/// and tuples of such; the others only for scalars (and index sets where it says so).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// `+`, `zero`, `sum`: numeric scalars, lifted.
    Add,
    /// `-`, `neg`: numeric scalars except `Nat`, lifted (Dex has no `Sub Nat`).
    Sub,
    /// `*`: numeric scalars, lifted.
    Mul,
    /// `/`: numeric scalars, lifted.
    Div,
    /// Transcendental functions: float scalars, lifted.
    Floating,
    /// `.*`: values made of floats (Dex's `VSpace`), lifted.
    VSpace,
    /// A numeric scalar (not lifted): literals, `mod`, `abs`.
    Num,
    /// A float scalar (not lifted).
    Float,
    /// `==`, `!=`: scalars and indices.
    Eq,
    /// `<`, `min`, …: numeric scalars and indices.
    Ord,
    /// An index set.
    Ix,
    /// `show`: printable values (all but functions).
    Show,
    /// `arb`: values with a random generator (all but functions).
    Arbitrary,
    /// `mempty`, `<>`: lists, and user types with an instance (Dex's `Monoid`).
    Monoid,
    /// An interface declared in dx (`interface Shape(a)`), by its id in the environment.
    User(u32),
}

impl Class {
    /// The class of an interface a primitive requires (`prim::signature`).
    pub fn of(interface: Interface) -> Class {
        match interface {
            Interface::Add => Class::Add,
            Interface::Sub => Class::Sub,
            Interface::Mul => Class::Mul,
            Interface::Div => Class::Div,
            Interface::Floating => Class::Floating,
            Interface::Num => Class::Num,
            Interface::Float => Class::Float,
            Interface::Eq => Class::Eq,
            Interface::Ord => Class::Ord,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Class::Add => "Add",
            Class::Sub => "Sub",
            Class::Mul => "Mul",
            Class::Div => "Fractional",
            Class::Floating => "Floating",
            Class::VSpace => "VSpace",
            Class::Num => "Num",
            Class::Float => "Float",
            Class::Eq => "Eq",
            Class::Ord => "Ord",
            Class::Ix => "Ix",
            Class::Show => "Show",
            Class::Arbitrary => "Arbitrary",
            Class::Monoid => "Monoid",
            // Named by the environment (`GlobalEnv::class_name`).
            Class::User(_) => "interface",
        }
    }

    /// Reads a class name written in `given (a|Name)`.
    pub fn from_name(name: &str) -> Option<Vec<Class>> {
        Some(match name {
            "Ix" => vec![Class::Ix, Class::Eq, Class::Ord],
            "Add" => vec![Class::Add],
            "Sub" => vec![Class::Sub],
            // dx's vector spaces are the values made of floats, on which the floating-point
            // functions act element by element (`std` of a matrix takes `sqrt` of a row).
            "VSpace" => vec![Class::Add, Class::Sub, Class::VSpace, Class::Floating],
            "Mul" => vec![Class::Mul],
            "Num" => vec![Class::Add, Class::Mul, Class::Num, Class::Eq, Class::Ord],
            // Dex's `Fractional` is `divide` alone (a `LogSpace` divides but has no order).
            "Fractional" => vec![Class::Div],
            "Floating" | "Float" | "Real" => vec![
                Class::Add,
                Class::Sub,
                Class::Mul,
                Class::Div,
                Class::Floating,
                Class::VSpace,
                Class::Num,
                Class::Float,
                Class::Eq,
                Class::Ord,
            ],
            // Integers with subtraction (`rem`); Dex's `Integral` also has `Nat`.
            "Integral" => vec![
                Class::Add,
                Class::Sub,
                Class::Mul,
                Class::Num,
                Class::Eq,
                Class::Ord,
            ],
            "Eq" => vec![Class::Eq],
            "Ord" => vec![Class::Eq, Class::Ord],
            "Show" => vec![Class::Show],
            "Arbitrary" => vec![Class::Arbitrary],
            "Monoid" => vec![Class::Monoid],
            "Data" => vec![],
            _ => return None,
        })
    }

    /// The class a name denotes itself (`Ord`, not the `Eq` it implies), for `instance`.
    pub fn named(name: &str) -> Option<Class> {
        Some(match name {
            "Add" => Class::Add,
            "Sub" => Class::Sub,
            "Mul" => Class::Mul,
            "Fractional" => Class::Div,
            "Floating" => Class::Floating,
            "VSpace" => Class::VSpace,
            "Num" => Class::Num,
            "Eq" => Class::Eq,
            "Ord" => Class::Ord,
            "Ix" => Class::Ix,
            "Show" => Class::Show,
            "Arbitrary" => Class::Arbitrary,
            "Monoid" => Class::Monoid,
            _ => return None,
        })
    }

    /// Whether a base type is in the class (as a scalar).
    pub fn holds_for_base(self, base: BaseTy) -> bool {
        match self {
            Class::Add | Class::Mul | Class::Div | Class::Num => base.is_numeric(),
            // Characters are bytes (Dex's `Char` is a `Word8`); `False < True`.
            Class::Ord => base.is_numeric() || base == BaseTy::Bool,
            Class::Sub => base.is_numeric() && base != BaseTy::Nat,
            Class::Floating | Class::VSpace | Class::Float => base.is_float(),
            Class::Eq | Class::Show | Class::Arbitrary => true,
            // `Bool` is the index set {False, True} (Dex's).
            Class::Ix => base == BaseTy::Bool,
            Class::Monoid | Class::User(_) => false,
        }
    }

    /// Whether the class extends pointwise to tables and tuples.
    pub fn is_lifted(self) -> bool {
        matches!(
            self,
            Class::Add | Class::Sub | Class::Mul | Class::Div | Class::Floating | Class::VSpace
        )
    }

    /// Whether the class is part of a vector space's structure (addition, scaling, and the
    /// floating-point functions that make it differentiable), which a struct has when its
    /// fields have it.
    pub fn is_vector_space(self) -> bool {
        matches!(
            self,
            Class::Add | Class::Sub | Class::VSpace | Class::Floating
        )
    }

    /// Whether the class holds for tuples and tables whose components are in it
    /// (lexicographic comparison, see `passes/lower_compare.rs`; printing; random values).
    pub fn is_structural(self) -> bool {
        matches!(
            self,
            Class::Eq | Class::Ord | Class::Show | Class::Arbitrary
        )
    }

    /// Whether index values are in the class.
    pub fn holds_for_index(self) -> bool {
        matches!(
            self,
            Class::Eq | Class::Ord | Class::Ix | Class::Show | Class::Arbitrary
        )
    }
}

/// A built-in function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// An elementwise primitive, lifted over tables and tuples where its class is lifted.
    Prim(Prim),
    /// `~~`: approximately equal, over tables and tuples, combined with `all`.
    Approx,
    /// `.*`: scalar × table.
    Scale,
    /// `x` converted to another numeric type: `n_to_f`, `i_to_f`, `f_to_i`, … and `cast`.
    Convert(Conversion),
    Ordinal,
    Size,
    FromOrdinal,
    /// `coerce_table m xs`: the elements of `xs` in row-major order, indexed by `m` (of the
    /// same size), as Dex's.
    CoerceTable,
    /// `unsafe_nat_diff x y`: `x - y` on `Nat`, for when `x >= y` is known (as in Dex).
    NatDiff,
    Sum,
    Iota,
    Fold,
    Scan,
    /// `reduce(xs, e, op)`: a parallel reduction over a user monoid ([Paszke21] §2).
    Reduce,
    /// `assoc_scan(xs, e, op)`: the inclusive parallel scan over a user monoid.
    AssocScan,
    ApplyN,
    Zero,
    /// `one`: the multiplicative identity at the type the context asks for (Dex's `Mul`'s).
    One,
    Fst,
    Snd,
    /// `pi`, `infinity`, `nan`: float constants of any float type.
    FloatConst(FloatConst),
    /// `lowest`, `highest`: the identities of `max` and `min` at any ordered type.
    Extreme(Extreme),
    /// Differentiation (docs/language.md): `grad`, `jvp`, `vjp`, … .
    Ad(AdOp),
    /// `custom_vjp(f, fwd, bwd)`: `f` with a user-defined reverse-mode derivative (JAX's
    /// `custom_vjp`); a function of one more argument, the point.
    CustomVjp,
    /// A function of `n` arguments with a user-defined linearization, as Dex's
    /// `custom-linearization f g` declares (`check::declare::custom_linearization_def`):
    /// `%custom_linearization<n>(f, g)` is `f` differentiated by `g`.
    CustomLinearization(u8),
    /// `arb k`: a random value of the type the context asks for (Dex's `Arbitrary`).
    Arb,
    /// `dex_test_mode()`: the session's test mode (`SessionConfig::test_mode`: whether the
    /// environment variable `DEX_TEST_MODE` is set; Dex's examples pick small sizes under it).
    TestMode,
    /// `file_length path`: the number of bytes of the file `path` (a text known when the
    /// block is compiled), and `file_byte(path, k)` its `k`-th byte: what the prelude's
    /// `read_file` is made of (Note [Files read when compiled] in `passes/lower.rs`).
    FileLength,
    FileByte,
    /// `internal_cast(to=T, x)`: `x` as a value of scalar type `T`, converted or truncated as
    /// Dex's `%cast` (a character to its byte, an `Int` to the low byte of a `Word8`).
    InternalCast,
    /// `show x`: the text of `x` as a `List Char` (`check::show`, Note [Texts of run-time
    /// values]).
    Show,
    /// `x <> y`: two lists one after the other (the result's length is the sum), or a user
    /// type's `Monoid` instance's `<>` (Note [Appending]).
    Append,
    /// `mempty`: the empty list, or a user type's `Monoid` instance's `mempty`.
    Mempty,
    /// `inject j`: the element of `n` an index `j` of a range of `n` (`(..i)`) stands for.
    Inject,
    /// `unsafe_project j` (`checked: false`) and `project j` (`checked: true`, a `Maybe`): the
    /// index of a range of `n` (which the context decides) that the element `j` of `n` is,
    /// the inverse of `inject` (Dex's `Subset` methods, for ranges).
    Project {
        checked: bool,
    },
    /// Effects and their loops (docs/language.md, Effects), lowered by `passes/lower_effects.rs`.
    Effect(EffectOp),
}

/// The built-ins of effects: handlers, the operations on references, and the loops whose trip
/// count is data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EffectOp {
    /// `run_state(init, \ref. body)`: `(result, final state)`.
    RunState,
    /// `with_state`: the result.
    WithState,
    /// `yield_state`: the final state.
    YieldState,
    /// `get ref`
    Get,
    /// `ref := v`
    Put,
    /// `ref!i`
    RefIndex,
    /// `run_accum(monoid, \acc. body)`: `(result, accumulated)`.
    RunAccum,
    /// `yield_accum`: the accumulated value.
    YieldAccum,
    /// `acc += v`
    Extend,
    /// `AddMonoid a`, `MulMonoid a`, `AndMonoid`, `OrMonoid`: a monoid as a value.
    Monoid(NamedMonoid),
    /// A user's monoid made of its identity and its combining function: the body of a
    /// `named-instance … : Monoid(T)` (Note [Named monoids]); not a name a program can write.
    MakeMonoid,
    /// `with_reader(x, \r. body)` (also `run_reader`)
    WithReader,
    /// `ask r`
    Ask,
    /// `while(\. cond)`: runs the body until it returns `False`.
    While,
    /// `iter(\i. … Continue / Done(x))`
    Iter,
    /// `bounded_iter(max, fallback, \i. …)`
    BoundedIter,
    /// `catch(\\. body)`: `Just` the result, or `Nothing` when the body throws.
    Catch,
    /// `throw()`
    Throw,
    /// `error "message"`: stops the block with `Runtime error: message`.
    Error,
    /// `print "text"`: a line of the block's output.
    Print,
    /// `unsafe_io(\\. body)`: the body, whose `print`s are the block's output.
    UnsafeIo,
}

/// The name the body of a named monoid instance calls to make the monoid (`EffectOp::MakeMonoid`):
/// the `%` keeps it out of what a program can name.
pub const MAKE_MONOID: &str = "%monoid";

/// The name, followed by the number of arguments, of the function `custom-linearization`
/// makes (`Builtin::CustomLinearization`).
pub const CUSTOM_LINEARIZATION: &str = "%custom_linearization";

/// The monoids of `yield_accum`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NamedMonoid {
    Add,
    Mul,
    And,
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AdOp {
    Grad,
    DerivRev,
    Jvp,
    Deriv,
    Vjp,
    Linearize,
    TransposeLinear,
    Jacobian,
    /// `hessian f x`: the Jacobian of `grad f` at `x`.
    Hessian,
    /// `value_and_grad f x`: `(f x, grad f x)` from one reverse pass.
    ValueAndGrad,
    CheckDeriv,
}

/// The identity of `max` (`Lowest`: `-infinity`, the smallest integer, the first index) or of
/// `min` (`Highest`): what `maximum` and `minimum` give for an empty table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Extreme {
    Lowest,
    Highest,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatConst {
    Pi,
    Infinity,
    Nan,
}

impl FloatConst {
    pub fn value(self) -> f64 {
        match self {
            FloatConst::Pi => std::f64::consts::PI,
            FloatConst::Infinity => f64::INFINITY,
            FloatConst::Nan => f64::NAN,
        }
    }
}

/// The argument and result classes of a conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Conversion {
    NatToFloat,
    IntToFloat,
    FloatToInt,
    BoolToFloat,
    NatToInt,
    IntToNat,
    BoolToNat,
    FloatToNat,
    /// `n_to_w64`, `i_to_w64`, `w64_to_n` (Dex's conversions of `Word64`, the type of keys;
    /// `w64_to_n` keeps the low 32 bits).
    NatToWord64,
    IntToWord64,
    Word64ToNat,
    /// `cast`: any numeric type to any numeric type, decided by the context.
    Cast,
}

impl Builtin {
    pub fn lookup(name: &str) -> Option<Builtin> {
        use Builtin as B;
        if let Some(arity) = name.strip_prefix(CUSTOM_LINEARIZATION) {
            return arity.parse().ok().map(B::CustomLinearization);
        }
        if let Some(prim) = Prim::from_surface_name(name) {
            return Some(B::Prim(prim));
        }
        Some(match name {
            "n_to_f" => B::Convert(Conversion::NatToFloat),
            "i_to_f" => B::Convert(Conversion::IntToFloat),
            "f_to_i" => B::Convert(Conversion::FloatToInt),
            "b_to_f" => B::Convert(Conversion::BoolToFloat),
            "n_to_i" => B::Convert(Conversion::NatToInt),
            "i_to_n" => B::Convert(Conversion::IntToNat),
            "b_to_n" => B::Convert(Conversion::BoolToNat),
            "f_to_n" => B::Convert(Conversion::FloatToNat),
            "n_to_w64" => B::Convert(Conversion::NatToWord64),
            "i_to_w64" => B::Convert(Conversion::IntToWord64),
            "w64_to_n" => B::Convert(Conversion::Word64ToNat),
            "cast" => B::Convert(Conversion::Cast),
            "ordinal" => B::Ordinal,
            "size" => B::Size,
            "from_ordinal" | "unsafe_from_ordinal" => B::FromOrdinal,
            "coerce_table" => B::CoerceTable,
            "unsafe_nat_diff" => B::NatDiff,
            "sum" => B::Sum,
            "iota" => B::Iota,
            "fold" => B::Fold,
            "scan" => B::Scan,
            "reduce" => B::Reduce,
            "assoc_scan" => B::AssocScan,
            "apply_n" => B::ApplyN,
            "custom_vjp" => B::CustomVjp,
            "zero" => B::Zero,
            "one" => B::One,
            "fst" => B::Fst,
            "snd" => B::Snd,
            "pi" => B::FloatConst(FloatConst::Pi),
            "infinity" => B::FloatConst(FloatConst::Infinity),
            "nan" => B::FloatConst(FloatConst::Nan),
            "lowest" => B::Extreme(Extreme::Lowest),
            "highest" => B::Extreme(Extreme::Highest),
            "grad" => B::Ad(AdOp::Grad),
            "deriv_rev" => B::Ad(AdOp::DerivRev),
            "jvp" => B::Ad(AdOp::Jvp),
            "deriv" => B::Ad(AdOp::Deriv),
            "vjp" => B::Ad(AdOp::Vjp),
            "linearize" => B::Ad(AdOp::Linearize),
            "transpose_linear" => B::Ad(AdOp::TransposeLinear),
            "jacobian" => B::Ad(AdOp::Jacobian),
            "hessian" => B::Ad(AdOp::Hessian),
            "value_and_grad" => B::Ad(AdOp::ValueAndGrad),
            "check_deriv" => B::Ad(AdOp::CheckDeriv),
            "arb" => B::Arb,
            "internal_cast" => B::InternalCast,
            "dex_test_mode" => B::TestMode,
            "file_length" => B::FileLength,
            "file_byte" => B::FileByte,
            "show" => B::Show,
            "<>" => B::Append,
            "mempty" => B::Mempty,
            "run_state" => B::Effect(EffectOp::RunState),
            "with_state" => B::Effect(EffectOp::WithState),
            "yield_state" => B::Effect(EffectOp::YieldState),
            "get" => B::Effect(EffectOp::Get),
            ":=" => B::Effect(EffectOp::Put),
            "!" => B::Effect(EffectOp::RefIndex),
            "run_accum" => B::Effect(EffectOp::RunAccum),
            "yield_accum" => B::Effect(EffectOp::YieldAccum),
            "+=" => B::Effect(EffectOp::Extend),
            "AddMonoid" => B::Effect(EffectOp::Monoid(NamedMonoid::Add)),
            "MulMonoid" => B::Effect(EffectOp::Monoid(NamedMonoid::Mul)),
            "AndMonoid" => B::Effect(EffectOp::Monoid(NamedMonoid::And)),
            "OrMonoid" => B::Effect(EffectOp::Monoid(NamedMonoid::Or)),
            MAKE_MONOID => B::Effect(EffectOp::MakeMonoid),
            "with_reader" | "run_reader" => B::Effect(EffectOp::WithReader),
            "ask" => B::Effect(EffectOp::Ask),
            "while" => B::Effect(EffectOp::While),
            "iter" => B::Effect(EffectOp::Iter),
            "bounded_iter" => B::Effect(EffectOp::BoundedIter),
            "catch" => B::Effect(EffectOp::Catch),
            "throw" => B::Effect(EffectOp::Throw),
            "error" => B::Effect(EffectOp::Error),
            "print" => B::Effect(EffectOp::Print),
            "unsafe_io" => B::Effect(EffectOp::UnsafeIo),
            "inject" => B::Inject,
            "project" => B::Project { checked: true },
            "unsafe_project" => B::Project { checked: false },
            _ => return None,
        })
    }

    /// Every name `lookup` knows (for completion): the primitives' (`prim::signature`), then
    /// the others'.
    pub fn names() -> impl Iterator<Item = &'static str> {
        let prims = ALL_PRIMS.iter().filter_map(|prim| prim.signature().name);
        prims.chain(OTHER_NAMES.iter().copied())
    }

    /// Instantiates the type scheme with fresh variables and records its constraints. A
    /// built-in that takes functions (`fold`, `scan`, `grad`, …) has the effects of the
    /// functions it is given (the lowering inlines them); the effect operations give their
    /// own rows (Note [Effect rows]).
    pub fn instantiate(self, cx: &mut Infer, span: Span) -> Ty {
        let ty = self.scheme(cx, span);
        match self {
            Builtin::Effect(_) => ty,
            _ => {
                let rest = cx.fresh_row();
                with_effects_of_arguments(ty, &rest)
            }
        }
    }

    fn scheme(self, cx: &mut Infer, span: Span) -> Ty {
        let var = |cx: &mut Infer, classes: &[Class]| -> Ty {
            let var: TyVar = cx.fresh_var();
            for class in classes {
                cx.constrain(*class, Ty::Var(var), span);
            }
            Ty::Var(var)
        };
        let float_var = |cx: &mut Infer| Ty::Var(cx.fresh_float_var(span));
        let word64 = || Ty::Base(BaseTy::Word64);
        match self {
            Builtin::Prim(prim) => {
                let signature = prim.signature();
                let classes: &[Class] = match signature.interface {
                    Some(interface) => &[Class::of(interface)],
                    None => &[],
                };
                // The variables are made at their first mention, in order.
                let (mut a, mut b) = (None, None);
                let mut slot = |cx: &mut Infer, slot: Slot| match slot {
                    Slot::A => a.get_or_insert_with(|| var(cx, classes)).clone(),
                    Slot::B => b.get_or_insert_with(|| var(cx, classes)).clone(),
                    Slot::Bool => Ty::bool(),
                    Slot::Word64 => word64(),
                    Slot::Float32 => Ty::float(),
                    Slot::Int64 => Ty::Base(BaseTy::Int64),
                    Slot::Nat => Ty::nat(),
                };
                let operands = signature.operands.iter().map(|&s| slot(cx, s)).collect();
                let result = slot(cx, signature.result);
                Ty::funs(operands, result)
            }
            Builtin::Approx => {
                let a = var(cx, &[Class::Floating]);
                Ty::funs(vec![a.clone(), a], Ty::bool())
            }
            Builtin::Scale => {
                let s = var(cx, &[Class::Float]);
                let a = var(cx, &[Class::VSpace]);
                cx.constrain_scale(s.clone(), a.clone(), span);
                Ty::funs(vec![s, a.clone()], a)
            }
            Builtin::Convert(conversion) => {
                let (from, to) = match conversion {
                    Conversion::NatToFloat => (Ty::nat(), float_var(cx)),
                    Conversion::IntToFloat => (Ty::Base(BaseTy::Int32), float_var(cx)),
                    Conversion::FloatToInt => (var(cx, &[Class::Float]), Ty::Base(BaseTy::Int32)),
                    Conversion::BoolToFloat => (Ty::bool(), float_var(cx)),
                    Conversion::NatToInt => (Ty::nat(), Ty::Base(BaseTy::Int32)),
                    Conversion::IntToNat => (Ty::Base(BaseTy::Int32), Ty::nat()),
                    Conversion::BoolToNat => (Ty::bool(), Ty::nat()),
                    Conversion::FloatToNat => (var(cx, &[Class::Float]), Ty::nat()),
                    Conversion::NatToWord64 => (Ty::nat(), word64()),
                    Conversion::IntToWord64 => (Ty::Base(BaseTy::Int32), word64()),
                    Conversion::Word64ToNat => (word64(), Ty::nat()),
                    Conversion::Cast => (var(cx, &[Class::Num]), var(cx, &[Class::Num])),
                };
                Ty::fun(from, to)
            }
            Builtin::Ordinal => {
                let n = var(cx, &[Class::Ix]);
                Ty::fun(n, Ty::nat())
            }
            Builtin::Size => {
                let n = var(cx, &[Class::Ix]);
                Ty::fun(Ty::TypeArg(Box::new(n)), Ty::nat())
            }
            Builtin::FromOrdinal => {
                let n = var(cx, &[Class::Ix]);
                Ty::funs(vec![Ty::TypeArg(Box::new(n.clone())), Ty::nat()], n)
            }
            Builtin::CoerceTable => {
                let m = var(cx, &[Class::Ix]);
                let n = var(cx, &[Class::Ix]);
                let a = var(cx, &[]);
                Ty::funs(
                    vec![Ty::TypeArg(Box::new(m.clone())), Ty::table(n, a.clone())],
                    Ty::table(m, a),
                )
            }
            Builtin::NatDiff => Ty::funs(vec![Ty::nat(), Ty::nat()], Ty::nat()),
            Builtin::Sum => {
                let n = var(cx, &[Class::Ix]);
                let a = var(cx, &[Class::Add]);
                Ty::fun(Ty::table(n, a.clone()), a)
            }
            Builtin::Iota => {
                let n = var(cx, &[Class::Ix]);
                Ty::fun(Ty::TypeArg(Box::new(n.clone())), Ty::table(n, Ty::nat()))
            }
            Builtin::Fold => {
                let n = var(cx, &[Class::Ix]);
                let a = var(cx, &[]);
                Ty::funs(vec![a.clone(), Ty::funs(vec![n, a.clone()], a.clone())], a)
            }
            Builtin::Scan => {
                let n = var(cx, &[Class::Ix]);
                let a = var(cx, &[]);
                let b = var(cx, &[]);
                let body = Ty::funs(
                    vec![n.clone(), a.clone()],
                    Ty::Tuple(vec![a.clone(), b.clone()]),
                );
                Ty::funs(vec![a.clone(), body], Ty::Tuple(vec![a, Ty::table(n, b)]))
            }
            Builtin::Reduce | Builtin::AssocScan => {
                // reduce : n=>a -> a -> (a -> a -> a) -> a; assoc_scan returns n=>a.
                let n = var(cx, &[Class::Ix]);
                let a = var(cx, &[]);
                let op = Ty::funs(vec![a.clone(), a.clone()], a.clone());
                let res = if self == Builtin::Reduce {
                    a.clone()
                } else {
                    Ty::table(n.clone(), a.clone())
                };
                Ty::funs(vec![Ty::table(n, a.clone()), a, op], res)
            }
            Builtin::CustomVjp => {
                // (a -> b) -> (a -> (b, r)) -> (r -> b -> a) -> a -> b
                let a = var(cx, &[]);
                let b = var(cx, &[]);
                let r = var(cx, &[]);
                let fwd = Ty::fun(a.clone(), Ty::Tuple(vec![b.clone(), r.clone()]));
                let bwd = Ty::funs(vec![r, b.clone()], a.clone());
                Ty::funs(vec![Ty::fun(a.clone(), b.clone()), fwd, bwd, a], b)
            }
            Builtin::CustomLinearization(arity) => {
                // f -> (a1 -> … -> an -> (b, a1 -> … -> an -> b)) -> f, f = a1 -> … -> an -> b
                let args: Vec<Ty> = (0..arity).map(|_| var(cx, &[])).collect();
                let b = var(cx, &[]);
                let func = Ty::funs(args.clone(), b.clone());
                let lin = Ty::funs(args, Ty::Tuple(vec![b, func.clone()]));
                Ty::funs(vec![func.clone(), lin], func)
            }
            Builtin::ApplyN => {
                let a = var(cx, &[]);
                Ty::funs(vec![Ty::nat(), a.clone(), Ty::fun(a.clone(), a.clone())], a)
            }
            Builtin::Zero => var(cx, &[Class::Add]),
            Builtin::One => var(cx, &[Class::Mul]),
            Builtin::Fst | Builtin::Snd => {
                let a = var(cx, &[]);
                let b = var(cx, &[]);
                let res = if self == Builtin::Fst {
                    a.clone()
                } else {
                    b.clone()
                };
                Ty::fun(Ty::Tuple(vec![a, b]), res)
            }
            Builtin::FloatConst(_) => float_var(cx),
            Builtin::Extreme(_) => var(cx, &[Class::Ord]),
            Builtin::Arb => Ty::fun(word64(), var(cx, &[])),
            Builtin::TestMode => Ty::fun(Ty::Tuple(Vec::new()), Ty::bool()),
            Builtin::FileLength | Builtin::FileByte => {
                let len = var(cx, &[]);
                let path = cx.prelude_data("List", vec![Ty::Base(BaseTy::Word8), len]);
                match self {
                    Builtin::FileLength => Ty::fun(path, Ty::nat()),
                    _ => Ty::funs(vec![path, Ty::nat()], Ty::Base(BaseTy::Word8)),
                }
            }
            // The result is the range's index set, found when the argument's type is known
            // (`Infer::apply`).
            Builtin::Inject => Ty::fun(var(cx, &[Class::Ix]), var(cx, &[Class::Ix])),
            Builtin::Project { checked } => {
                let range = var(cx, &[Class::Ix]);
                let result = match checked {
                    true => cx.prelude_data("Maybe", vec![range]),
                    false => range,
                };
                Ty::fun(var(cx, &[Class::Ix]), result)
            }
            Builtin::Effect(op) => {
                // The types of Dex's effect operations, rows included (Note [Effect rows]).
                let reference = |region: &Ty, value: &Ty| {
                    Ty::Con(TyCon::Ref, vec![region.clone(), value.clone()])
                };
                let h = var(cx, &[]);
                let s = var(cx, &[]);
                let a = var(cx, &[]);
                // The effects of the body a handler or loop is given, beside its own.
                let rest = cx.fresh_row();
                let with = |effect: Effect| EffRow {
                    effects: vec![effect],
                    tail: rest.tail.clone(),
                };
                let only = |effect: Effect| EffRow {
                    effects: vec![effect],
                    tail: None,
                };
                // A handler: `init -> (Ref h s -> {eff h|e} a) -> {|e} result`.
                let handler = |first: Ty, effect: Effect, result: Ty| {
                    let body = Ty::fun_with(reference(&h, &s), a.clone(), with(effect));
                    Ty::fun(first, Ty::fun_with(body, result, rest.clone()))
                };
                // An accumulator's handler, of the monoid; the accumulator holds the monoid's
                // values or tables of them, which the lowering checks.
                let accum_handler = |cx: &mut Infer, result: Ty| {
                    let b = var(cx, &[]);
                    cx.constrain_accum(b.clone(), s.clone(), span);
                    handler(
                        Ty::Con(TyCon::Monoid, vec![b]),
                        Effect::Accum(h.clone()),
                        result,
                    )
                };
                let unit = Ty::Tuple(Vec::new());
                let text = |cx: &mut Infer| {
                    let len = var(cx, &[]);
                    cx.prelude_data("List", vec![Ty::Base(BaseTy::Word8), len])
                };
                match op {
                    EffectOp::RunState => handler(
                        s.clone(),
                        Effect::State(h.clone()),
                        Ty::Tuple(vec![a.clone(), s.clone()]),
                    ),
                    EffectOp::WithState => handler(s.clone(), Effect::State(h.clone()), a.clone()),
                    EffectOp::WithReader => handler(s.clone(), Effect::Read(h.clone()), a.clone()),
                    EffectOp::YieldState => handler(s.clone(), Effect::State(h.clone()), s.clone()),
                    EffectOp::Get => {
                        Ty::fun_with(reference(&h, &s), s, only(Effect::State(h.clone())))
                    }
                    EffectOp::Ask => {
                        Ty::fun_with(reference(&h, &s), s, only(Effect::Read(h.clone())))
                    }
                    EffectOp::Put => Ty::fun(
                        reference(&h, &s),
                        Ty::fun_with(s, unit, only(Effect::State(h.clone()))),
                    ),
                    EffectOp::Extend => Ty::fun(
                        reference(&h, &s),
                        Ty::fun_with(s, unit, only(Effect::Accum(h.clone()))),
                    ),
                    EffectOp::RefIndex => {
                        let n = var(cx, &[Class::Ix]);
                        Ty::funs(
                            vec![reference(&h, &Ty::table(n.clone(), s.clone())), n],
                            reference(&h, &s),
                        )
                    }
                    EffectOp::RunAccum => accum_handler(cx, Ty::Tuple(vec![a.clone(), s.clone()])),
                    EffectOp::YieldAccum => accum_handler(cx, s.clone()),
                    EffectOp::Monoid(NamedMonoid::Add) => {
                        let b = var(cx, &[Class::Add]);
                        Ty::fun(
                            Ty::TypeArg(Box::new(b.clone())),
                            Ty::Con(TyCon::Monoid, vec![b]),
                        )
                    }
                    EffectOp::Monoid(NamedMonoid::Mul) => {
                        let b = var(cx, &[Class::Mul]);
                        Ty::fun(
                            Ty::TypeArg(Box::new(b.clone())),
                            Ty::Con(TyCon::Monoid, vec![b]),
                        )
                    }
                    EffectOp::Monoid(NamedMonoid::And | NamedMonoid::Or) => {
                        Ty::Con(TyCon::Monoid, vec![Ty::bool()])
                    }
                    EffectOp::MakeMonoid => {
                        let b = var(cx, &[]);
                        let combine = Ty::funs(vec![b.clone(), b.clone()], b.clone());
                        Ty::funs(vec![b.clone(), combine], Ty::Con(TyCon::Monoid, vec![b]))
                    }
                    // Loops have their body's effects.
                    EffectOp::While => Ty::fun_with(
                        Ty::fun_with(unit.clone(), Ty::bool(), rest.clone()),
                        unit,
                        rest,
                    ),
                    EffectOp::Iter => {
                        let step = cx.prelude_data("IterResult", vec![a.clone()]);
                        Ty::fun_with(Ty::fun_with(Ty::nat(), step, rest.clone()), a, rest)
                    }
                    EffectOp::BoundedIter => {
                        let step = cx.prelude_data("IterResult", vec![a.clone()]);
                        let body = Ty::fun_with(Ty::nat(), step, rest.clone());
                        Ty::funs(vec![Ty::nat(), a.clone()], Ty::fun_with(body, a, rest))
                    }
                    // `catch` handles `Except`, `unsafe_io` hides `IO`.
                    EffectOp::Catch => {
                        let maybe = cx.prelude_data("Maybe", vec![a.clone()]);
                        Ty::fun_with(Ty::fun_with(unit, a, with(Effect::Except)), maybe, rest)
                    }
                    EffectOp::UnsafeIo => {
                        Ty::fun_with(Ty::fun_with(unit, a.clone(), with(Effect::Io)), a, rest)
                    }
                    EffectOp::Throw => Ty::fun_with(unit, a, only(Effect::Except)),
                    // Dex's `error` is pure (it ends the program).
                    EffectOp::Error => Ty::fun(text(cx), a),
                    EffectOp::Print => Ty::fun_with(text(cx), unit, only(Effect::Io)),
                }
            }
            Builtin::Append => {
                let (a, b, r) = (var(cx, &[]), var(cx, &[]), var(cx, &[]));
                cx.constrain_append(Some((a.clone(), b.clone())), r.clone(), span);
                Ty::funs(vec![a, b], r)
            }
            Builtin::Mempty => {
                let r = var(cx, &[]);
                cx.constrain_append(None, r.clone(), span);
                r
            }
            Builtin::Show => {
                let a = var(cx, &[]);
                let len = var(cx, &[]);
                cx.constrain_text(a.clone(), len.clone(), span);
                let text = cx.prelude_data("List", vec![Ty::Base(BaseTy::Word8), len]);
                Ty::fun(a, text)
            }
            Builtin::InternalCast => {
                let to = var(cx, &[]);
                let from = var(cx, &[]);
                Ty::funs(vec![Ty::TypeArg(Box::new(to.clone())), from], to)
            }
            Builtin::Ad(op) => {
                let a = var(cx, &[Class::Floating]);
                let b = var(cx, &[Class::Floating]);
                let s = var(cx, &[Class::Float]);
                match op {
                    // The result's being a float scalar is checked by the lowering, which says
                    // what to use instead (`vjp`).
                    AdOp::Grad => Ty::funs(vec![Ty::fun(a.clone(), var(cx, &[])), a.clone()], a),
                    AdOp::DerivRev => Ty::funs(vec![Ty::fun(s.clone(), s.clone()), s.clone()], s),
                    AdOp::Jvp => Ty::funs(vec![Ty::fun(a.clone(), b.clone()), a.clone(), a], b),
                    AdOp::Deriv => Ty::funs(vec![Ty::fun(s.clone(), b.clone()), s], b),
                    AdOp::Vjp => Ty::funs(
                        vec![Ty::fun(a.clone(), b.clone()), a.clone()],
                        Ty::Tuple(vec![b.clone(), Ty::fun(b, a)]),
                    ),
                    AdOp::Linearize => Ty::funs(
                        vec![Ty::fun(a.clone(), b.clone()), a.clone()],
                        Ty::Tuple(vec![b.clone(), Ty::fun(a, b)]),
                    ),
                    AdOp::TransposeLinear => Ty::funs(vec![Ty::fun(a.clone(), b.clone()), b], a),
                    // The result's type follows the structure of `a` and `b` (as JAX's
                    // pytrees); the checker computes it once they are known
                    // (`jacobian_ty`).
                    AdOp::Jacobian => Ty::funs(vec![Ty::fun(a.clone(), b), a], var(cx, &[])),
                    AdOp::Hessian => Ty::funs(vec![Ty::fun(a.clone(), s.clone()), a], var(cx, &[])),
                    AdOp::ValueAndGrad => Ty::funs(
                        vec![Ty::fun(a.clone(), s.clone()), a.clone()],
                        Ty::Tuple(vec![s, a]),
                    ),
                    AdOp::CheckDeriv => Ty::funs(vec![Ty::fun(a.clone(), s), a], Ty::bool()),
                }
            }
        }
    }
}

/// The type of `jacobian f x` for `x : a` and `f x : b`, as JAX's: the structure of `b`
/// (tuples) holding, for each of its tables, the structure of `a` holding for each of its
/// tables the block `out_shape => in_shape => element`. For `a = n=>Float` and
/// `b = m=>Float` that is `m=>n=>Float`, one row per output; scalars are tables of rank 0.
/// `None` for a function or a type argument.
pub fn jacobian_ty(a: &Ty, b: &Ty) -> Option<Ty> {
    match b {
        Ty::Tuple(outputs) => tuple_of(outputs, |output| jacobian_ty(a, output)),
        _ => per_input(a, b),
    }
}

/// The tuple of `part` of each item, if each has one.
fn tuple_of(items: &[Ty], part: impl Fn(&Ty) -> Option<Ty>) -> Option<Ty> {
    items.iter().map(part).collect::<Option<_>>().map(Ty::Tuple)
}

/// The blocks of one output table `b` against every table of the input `a`.
fn per_input(a: &Ty, b: &Ty) -> Option<Ty> {
    match a {
        Ty::Tuple(inputs) => tuple_of(inputs, |input| per_input(input, b)),
        Ty::Fun { .. } | Ty::TypeArg(_) => None,
        _ => block(a, b),
    }
}

/// `out_shape => in_shape => element` for an output table `b` and an input table `a`.
fn block(a: &Ty, b: &Ty) -> Option<Ty> {
    match b {
        Ty::Table(ix, elem) => Some(Ty::table((**ix).clone(), block(a, elem)?)),
        Ty::Fun { .. } | Ty::TypeArg(_) | Ty::Tuple(_) => None,
        // A variable here is a scalar: the structure of a value is known once it is checked,
        // but a float literal's type may still be open.
        _ => Some(a.clone()),
    }
}

/// `ty`, a built-in's type, with the functions it takes having the effects `rest` and its own
/// application having them too; unchanged when it takes no function.
fn with_effects_of_arguments(ty: Ty, rest: &EffRow) -> Ty {
    fn go(ty: Ty, rest: &EffRow, opened: bool) -> (Ty, bool) {
        match ty {
            Ty::Fun {
                param,
                binder,
                result,
                effects,
            } => {
                let takes_function = matches!(*param, Ty::Fun { .. });
                let param = match takes_function {
                    true => {
                        let arity = param.arity();
                        param.with_row_at(arity, rest.clone())
                    }
                    false => *param,
                };
                let opened = opened || takes_function;
                let (result, effects, opened) = match *result {
                    inner @ Ty::Fun { .. } => {
                        let (inner, opened) = go(inner, rest, opened);
                        (inner, effects, opened)
                    }
                    last if opened => (last, rest.clone(), true),
                    last => (last, effects, false),
                };
                let ty = Ty::Fun {
                    param: Box::new(param),
                    binder,
                    result: Box::new(result),
                    effects,
                };
                (ty, opened)
            }
            other => (other, opened),
        }
    }
    go(ty, rest, false).0
}

/// The names `lookup` knows besides the primitives'.
const OTHER_NAMES: &[&str] = &[
    "n_to_f",
    "i_to_f",
    "f_to_i",
    "b_to_f",
    "n_to_i",
    "i_to_n",
    "b_to_n",
    "f_to_n",
    "n_to_w64",
    "i_to_w64",
    "w64_to_n",
    "cast",
    "ordinal",
    "size",
    "from_ordinal",
    "unsafe_from_ordinal",
    "coerce_table",
    "unsafe_nat_diff",
    "sum",
    "iota",
    "fold",
    "scan",
    "reduce",
    "assoc_scan",
    "apply_n",
    "zero",
    "one",
    "fst",
    "snd",
    "pi",
    "infinity",
    "nan",
    "lowest",
    "highest",
    "grad",
    "deriv_rev",
    "jvp",
    "deriv",
    "vjp",
    "linearize",
    "transpose_linear",
    "jacobian",
    "hessian",
    "value_and_grad",
    "check_deriv",
    "custom_vjp",
    "arb",
    "internal_cast",
    "dex_test_mode",
    "file_length",
    "file_byte",
    "inject",
    "project",
    "unsafe_project",
    "run_state",
    "with_state",
    "yield_state",
    "get",
    "run_accum",
    "yield_accum",
    "AddMonoid",
    "MulMonoid",
    "AndMonoid",
    "OrMonoid",
    "with_reader",
    "run_reader",
    "ask",
    "while",
    "iter",
    "bounded_iter",
    "catch",
    "throw",
    "error",
    "print",
    "unsafe_io",
];
