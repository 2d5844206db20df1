//! The closed set of elementwise primitives (`op` of [Smeding25] Fig 7).
//!
//! A primitive is one row of `primitives!` (its variant and its family's operator) and one
//! arm in each rule of its family file (docs/adding-a-primitive.md walks through one): the
//! type rule, the signature the language sees (`signature`: name, operator, interface), the
//! typed function (`lift`, which the interpreter applies and the engine's kernels are built
//! from), the export rule (`export`, in the vocabulary of `hlo`), linearity, JVP, transpose,
//! sign and argument-order facts. Every rule is an exhaustive match over the family's own
//! operator enum (`ArithOp`, `MathOp`, `CompareOp`, `ConvertOp`, `RandomOp`, `TextOp`), with no
//! `_ =>` arm, so adding a primitive is a checklist that the compiler walks you through.
//! The rest of the compiler reads these rules; it names a primitive only to emit it, or in a
//! rewrite rule about that one primitive.
//!
//! Totality (docs/language.md): every primitive is defined on every well-typed input. Integer
//! division and `mod` by zero give zero; integer overflow wraps; float operations follow
//! IEEE 754.

pub(crate) mod arith;
pub(crate) mod compare;
mod convert;
pub mod hlo;
pub(crate) mod math;
mod random;
pub mod scalar;
pub mod signature;
pub mod sum_order;
pub mod text;
pub mod vmath;

#[cfg(test)]
mod tests;

pub use arith::ArithOp;
pub(crate) use arith::{Arith, Max, Min, Select};
pub use compare::CompareOp;
pub use convert::{cast_scalar, Cast, ConvertOp};
pub use math::MathOp;
pub use random::{threefry2x32, unit_from_bits, RandomOp};
pub use text::TextOp;

pub use scalar::{Elem, Scalar};

// Note [Sign-clear values]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// `0 + x` is `x` bit for bit except at `x = -0` (the sum is `+0`), so a rewrite that drops
// the addition needs `x` never to be `-0`. A value whose sign bit is clear (`+0`, above, `+∞`
// or a NaN) never is, and that property flows through the operations of a softmax's
// gradient: `exp` always has it, sums, products and quotients of such values have it. Each
// family file states its operators' rule (`sign_clear`); `Prim::sign_clear` is the whole of
// it, and `ops::sign` follows it through a program and a kernel. A NaN counts as clear
// whatever its sign: `0 + NaN` is that NaN.

/// The primitives, one row each: the variant (with its doc) and its family and operator
/// there. `Prim`, [`Prim::family`] and [`ALL_PRIMS`] are generated from this one list; every
/// other rule is the family file's, an exhaustive match on its operator enum.
macro_rules! primitives {
    (
        plain {
            $($(#[$doc:meta])* $name:ident => $family:ident($op:expr),)*
        }
        parametric {
            $($(#[$pdoc:meta])* $pname:ident($arg:ty) => $pfamily:ident($pop:path),)*
        }
    ) => {
        /// An elementwise primitive. Operands have equal shapes; the result has that shape too.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Prim {
            $($(#[$doc])* $name,)*
            $($(#[$pdoc])* $pname($arg),)*
        }

        impl Prim {
            /// The family of this primitive and its operator there (the one place that routes
            /// a `Prim` to its family file).
            pub fn family(self) -> Family {
                match self {
                    $(Prim::$name => Family::$family($op),)*
                    $(Prim::$pname(arg) => Family::$pfamily($pop(arg)),)*
                }
            }
        }

        /// Every primitive except the parametric ones (`cast_<elem>`, `show_<format>`): the
        /// name parser and the table-driven tests walk it.
        pub const ALL_PRIMS: &[Prim] = &[$(Prim::$name,)*];
    };
}

primitives! {
    plain {
        // arith.rs: numeric, result type = operand type.
        Add => Arith(ArithOp::Add),
        Sub => Arith(ArithOp::Sub),
        Mul => Arith(ArithOp::Mul),
        /// Float division; on integers truncating division with `x / 0 = 0`.
        Div => Arith(ArithOp::Div),
        Neg => Arith(ArithOp::Neg),
        Abs => Arith(ArithOp::Abs),
        Min => Arith(ArithOp::Min),
        Max => Arith(ArithOp::Max),
        /// Integer: floored modulo (result has the sign of the divisor), `x mod 0 = 0`. Float: fmod
        /// with the same sign rule.
        Mod => Arith(ArithOp::Mod),
        /// Floored integer division, `x idiv 0 = 0`.
        IDiv => Arith(ArithOp::IDiv),
        // math.rs: floats only, result type = operand type.
        Sqrt => Math(MathOp::Sqrt),
        Exp => Math(MathOp::Exp),
        Exp2 => Math(MathOp::Exp2),
        Log => Math(MathOp::Log),
        Log2 => Math(MathOp::Log2),
        Log10 => Math(MathOp::Log10),
        Log1p => Math(MathOp::Log1p),
        Expm1 => Math(MathOp::Expm1),
        Sin => Math(MathOp::Sin),
        Cos => Math(MathOp::Cos),
        Tan => Math(MathOp::Tan),
        Tanh => Math(MathOp::Tanh),
        Sinh => Math(MathOp::Sinh),
        Cosh => Math(MathOp::Cosh),
        Atan => Math(MathOp::Atan),
        Floor => Math(MathOp::Floor),
        Ceil => Math(MathOp::Ceil),
        Round => Math(MathOp::Round),
        Pow => Math(MathOp::Pow),
        Atan2 => Math(MathOp::Atan2),
        /// `stop_gradient x`: `x`, with derivative zero (JAX's `lax.stop_gradient`). The `ad` pass
        /// erases it once every derivative is taken.
        StopGradient => Math(MathOp::StopGradient),
        // compare.rs: comparisons give Bool; logic on Bool; select.
        Eq => Compare(CompareOp::Eq),
        Ne => Compare(CompareOp::Ne),
        Lt => Compare(CompareOp::Lt),
        Gt => Compare(CompareOp::Gt),
        Le => Compare(CompareOp::Le),
        Ge => Compare(CompareOp::Ge),
        And => Compare(CompareOp::And),
        Or => Compare(CompareOp::Or),
        Not => Compare(CompareOp::Not),
        IsNan => Compare(CompareOp::IsNan),
        IsInf => Compare(CompareOp::IsInf),
        /// `select(c, a, b)`: `a` where `c`, else `b`.
        Select => Compare(CompareOp::Select),
        // random.rs: words to words and floats; no derivative.
        /// Threefry-2x32 (20 rounds) of a `u64` key and a `u64` counter.
        Threefry2x32 => Random(RandomOp::Threefry2x32),
        /// Dex's `rand`: the low 23 bits of a `u64` as a `f32` in [0, 1).
        UnitFromBits => Random(RandomOp::UnitFromBits),
    }
    parametric {
        // text.rs
        /// `show_<format>(x, k)`: the `k`-th character of the text of `x` (`0` past its end).
        Show(TextOp) => Text(std::convert::identity),
        // convert.rs
        /// Conversion to an element type (float→int truncates toward zero and saturates; NaN
        /// → 0).
        Cast(Elem) => Convert(ConvertOp::Cast),
    }
}

/// The family a primitive belongs to, with its operator in that family's own enum. Each
/// family file matches exhaustively on its operator enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    Arith(ArithOp),
    Math(MathOp),
    Compare(CompareOp),
    Convert(ConvertOp),
    Random(RandomOp),
    Text(TextOp),
}

/// Why an application of a primitive is ill-typed: the primitive (once known) and the
/// problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrimTypeError {
    pub prim: Option<Prim>,
    pub problem: PrimTypeProblem,
}

/// What is wrong with the operands of a primitive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PrimTypeProblem {
    /// Not as many operands as the primitive takes.
    Arity { expected: usize, got: usize },
    /// Operands of element types the primitive does not take; `expected` says what it takes
    /// (`"float operands"`).
    Operands {
        expected: &'static str,
        got: Vec<Elem>,
    },
    /// Operands that must share their element type do not.
    Mixed(Elem, Elem),
}

impl PrimTypeError {
    /// Operands of element types a primitive does not take.
    pub(crate) fn operands(expected: &'static str, got: &[Elem]) -> PrimTypeError {
        PrimTypeError {
            prim: None,
            problem: PrimTypeProblem::Operands {
                expected,
                got: got.to_vec(),
            },
        }
    }
}

impl std::fmt::Display for PrimTypeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(prim) = self.prim {
            write!(f, "{}: ", prim.name())?;
        }
        match &self.problem {
            PrimTypeProblem::Arity { expected, got } => {
                write!(f, "takes {expected} operands, got {got}")
            }
            PrimTypeProblem::Operands { expected, got } => {
                let got: Vec<String> = got.iter().map(|elem| elem.name().to_string()).collect();
                write!(f, "expects {expected}, got {}", got.join(", "))
            }
            PrimTypeProblem::Mixed(first, other) => write!(
                f,
                "operands have different element types {} and {}",
                first.name(),
                other.name()
            ),
        }
    }
}

impl Prim {
    /// The printed name (also the name the IR parser reads).
    pub fn name(self) -> String {
        match self {
            Prim::Cast(elem) => format!("cast_{}", elem.name()),
            Prim::Show(op) => format!("show_{}", op.name()),
            other => format!("{other:?}").to_lowercase(),
        }
    }

    /// Parses a printed name back.
    pub fn from_name(name: &str) -> Option<Prim> {
        if let Some(elem) = name.strip_prefix("cast_") {
            return Elem::from_name(elem).map(Prim::Cast);
        }
        if let Some(format) = name.strip_prefix("show_") {
            return TextOp::ALL
                .into_iter()
                .find(|op| op.name() == format)
                .map(Prim::Show);
        }
        ALL_PRIMS.iter().copied().find(|prim| prim.name() == name)
    }

    /// The primitive the language calls by `name` (`exp`, `select`).
    pub fn from_surface_name(name: &str) -> Option<Prim> {
        ALL_PRIMS
            .iter()
            .copied()
            .find(|prim| prim.signature().name == Some(name))
    }

    /// The primitive the language writes with an infix operator (`+`, `<=`, `&&`).
    pub fn from_infix(symbol: &str) -> Option<Prim> {
        ALL_PRIMS
            .iter()
            .copied()
            .find(|prim| prim.signature().infix == Some(symbol))
    }

    /// Whether the result's sign bit is clear (a value `+0` or above, or a NaN) whenever the
    /// operands' are where `operands` says so (Note [Sign-clear values]). Such a value is
    /// never `-0`, so `0 + x` is `x`, bit for bit.
    pub fn sign_clear(self, operands: &[bool]) -> bool {
        match self.family() {
            Family::Arith(op) => arith::sign_clear(op, operands),
            Family::Math(op) => math::sign_clear(op, operands),
            Family::Compare(op) => compare::sign_clear(op, operands),
            Family::Convert(_) => false,
            Family::Random(op) => random::sign_clear(op),
            Family::Text(_) => true,
        }
    }

    /// Number of operands.
    pub fn arity(self) -> usize {
        match self.family() {
            Family::Arith(op) => arith::arity(op),
            Family::Math(op) => math::arity(op),
            Family::Compare(op) => compare::arity(op),
            Family::Convert(op) => convert::arity(op),
            Family::Random(op) => random::arity(op),
            Family::Text(op) => text::arity(op),
        }
    }

    /// The element type of the result given the operands' element types, or why it is
    /// ill-typed. (Shapes are checked by the caller: all operands share one shape.)
    pub fn result_elem(self, operands: &[Elem]) -> Result<Elem, PrimTypeError> {
        if operands.len() != self.arity() {
            return Err(PrimTypeError {
                prim: Some(self),
                problem: PrimTypeProblem::Arity {
                    expected: self.arity(),
                    got: operands.len(),
                },
            });
        }
        match self.family() {
            Family::Arith(op) => arith::result_elem(op, operands),
            Family::Math(op) => math::result_elem(op, operands),
            Family::Compare(op) => compare::result_elem(op, operands),
            Family::Convert(op) => convert::result_elem(op, operands),
            Family::Random(op) => random::result_elem(op, operands),
            Family::Text(op) => text::result_elem(op, operands),
        }
        .map_err(|error| PrimTypeError {
            prim: Some(self),
            ..error
        })
    }

    /// Evaluates the primitive on scalars. The operands must be well typed (`result_elem`
    /// accepts their element types); on ill-typed operands a debug build panics and a release
    /// build returns an unspecified scalar.
    pub fn eval(self, operands: &[Scalar]) -> Scalar {
        debug_assert_eq!(
            operands.len(),
            self.arity(),
            "{} applied to the wrong arity",
            self.name()
        );
        match self.family() {
            Family::Arith(op) => arith::eval(op, operands),
            Family::Math(op) => math::eval(op, operands),
            Family::Compare(op) => compare::eval(op, operands),
            Family::Convert(op) => convert::eval(op, operands),
            Family::Random(op) => random::eval(op, operands),
            Family::Text(op) => text::eval(op, operands),
        }
    }
}

/// What derivative rules need from the pass that applies them: emitting statements.
pub trait Emitter {
    /// An operand of the program being written (the core IR's `Atom`).
    type Atom: Copy;
    /// Emits `prim args` (operands of one shape; rank-0 literals are broadcast) and returns
    /// its result.
    fn prim(&mut self, prim: Prim, args: &[Self::Atom]) -> Self::Atom;
    /// A constant with the element type and shape of `like`.
    fn constant(&mut self, value: f64, like: Self::Atom) -> Self::Atom;
    /// The element type of an atom.
    fn elem(&self, atom: Self::Atom) -> Elem;
}

/// A kernel made from a primitive's scalar function on one element type `T`. The engine's
/// whole-array maps (`exec/elementwise.rs`) and lane loops (`exec/lanes.rs`) implement it;
/// each family's `lift` hands it the very function that family's evaluation rule applies, as
/// a zero-sized fn item, so the kernel is monomorphised around the function and inlines it.
/// A family's `lift` is the one table of which function implements which of its primitives:
/// `eval` reads it too (through [`Apply`]), so the interpreter and the engine cannot differ.
pub(crate) trait Lift<T> {
    type Output;
    /// A function of one operand, of the operand's type.
    fn unary(self, f: impl Fn(T) -> T + Copy + Send + Sync) -> Self::Output;
    /// A function of two operands of one type, of that type.
    fn binary(self, f: impl Fn(T, T) -> T + Copy + Send + Sync) -> Self::Output;
}

/// A [`Lift`] that also takes the functions to a `Bool`: relations (the comparisons) and
/// tests (`isnan`, `isinf`).
pub(crate) trait LiftRelation<T>: Lift<T> {
    fn relation(self, f: impl Fn(T, T) -> bool + Copy + Send + Sync) -> Self::Output;
    fn test(self, f: impl Fn(T) -> bool + Copy + Send + Sync) -> Self::Output;
}

/// The lift that applies the function to one or two scalars (`y` is ignored by a unary
/// function): the families' typed evaluation rules.
pub(crate) struct Apply<T> {
    pub x: T,
    pub y: T,
}

impl<T> Lift<T> for Apply<T> {
    type Output = T;
    fn unary(self, f: impl Fn(T) -> T) -> T {
        f(self.x)
    }
    fn binary(self, f: impl Fn(T, T) -> T) -> T {
        f(self.x, self.y)
    }
}

/// An element type whose primitives `Prim::lift` can hand to a [`Lift`]: the floats take the
/// math, arithmetic and comparison families, the integers arithmetic and comparisons, `Bool`
/// comparisons.
pub(crate) trait Lifted: ScalarRepr + compare::Tested {
    fn lift<L: LiftRelation<Self>>(prim: Prim, lift: L) -> Result<L::Output, L>;
}

/// `Lifted` for element types, saying for the math and arithmetic families whether their
/// functions are defined on the type (`yes`) or the type rule rejects it (`no`).
macro_rules! lifted {
    ($math:ident, $arith:ident: $($ty:ty),*) => {$(
        impl Lifted for $ty {
            fn lift<L: LiftRelation<Self>>(prim: Prim, lift: L) -> Result<L::Output, L> {
                match prim.family() {
                    Family::Math(op) => lifted!(@$math math, op, lift),
                    Family::Arith(op) => lifted!(@$arith arith, op, lift),
                    Family::Compare(op) => compare::lift(op, lift),
                    Family::Convert(_) | Family::Random(_) | Family::Text(_) => Err(lift),
                }
            }
        }
    )*};
    (@yes $family:ident, $op:expr, $lift:expr) => { Ok($family::lift($op, $lift)) };
    (@no $family:ident, $op:expr, $lift:expr) => {{ let _ = $op; Err($lift) }};
}

lifted!(yes, yes: f32, f64);
lifted!(no, yes: i32, i64, u32, u64);
lifted!(no, no: bool);

impl Prim {
    /// Hands the typed function of this primitive on `T` to `lift` (`Err(lift)` back when the
    /// primitive has no function of one element type on `T`: casts, words, text, `select` and
    /// the logic operators, which the engine runs on its own).
    pub(crate) fn lift<T: Lifted, L: LiftRelation<T>>(self, lift: L) -> Result<L::Output, L> {
        T::lift(self, lift)
    }
}

/// A tangent or cotangent: `None` is a (symbolic) zero.
pub type Tangent<A> = Option<A>;

/// How a primitive relates to differentiation (docs/architecture.md: recorded explicitly, never an
/// `Option<fn>` that fails at run time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linearity {
    /// Linear in every operand (`neg`, `add`, `sub`, float casts).
    Linear,
    /// Linear in each operand separately (`mul`; `div` in its numerator; `select` in its
    /// branches).
    Bilinear,
    Nonlinear,
    /// The derivative is zero: integer or boolean results, rounding, `stop_gradient`.
    NonDifferentiable,
}

/// How a primitive's result depends on the order of its operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgumentOrder {
    /// Any order gives the same result.
    Any,
    /// `prim(a, b)` is `mirror(b, a)`.
    Mirror(Prim),
    /// The order matters (or the primitive is not binary).
    Fixed,
}

/// Why a linear program cannot be transposed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotLinear(pub String);

impl Prim {
    /// The forward derivative (JVP, [Smeding25] Fig 15; [Shaikhha23] Fig 7): the tangent of the result
    /// given the operands, the result and the operands' tangents. The emitted statements are
    /// linear in the tangents and use only the forms `transpose` knows.
    pub fn jvp<A: Copy>(
        self,
        cx: &mut dyn Emitter<Atom = A>,
        args: &[A],
        result: A,
        tangents: &[Tangent<A>],
    ) -> Tangent<A> {
        if tangents.iter().all(Option::is_none) {
            return None;
        }
        match self.family() {
            Family::Arith(op) => arith::jvp(op, cx, args, result, tangents),
            Family::Math(op) => math::jvp(op, cx, args, result, tangents),
            Family::Compare(op) => compare::jvp(op, cx, args, tangents),
            Family::Convert(op) => convert::jvp(op, cx, tangents),
            // Words carry no tangents (see `random::linearity`).
            Family::Random(_) | Family::Text(_) => None,
        }
    }

    /// The transpose of a statement that is linear in the operands marked `linear`: the
    /// cotangent contribution of each operand given the result's cotangent `ct` ([Smeding25]
    /// Fig 19 `eval`, one constructor at a time).
    pub fn transpose<A: Copy>(
        self,
        cx: &mut dyn Emitter<Atom = A>,
        args: &[A],
        linear: &[bool],
        ct: A,
    ) -> Result<Vec<Tangent<A>>, NotLinear> {
        let not_linear = || NotLinear(format!("`{}` is not linear in its argument", self.name()));
        let res = match self.family() {
            Family::Arith(op) => arith::transpose(op, cx, args, linear, ct),
            Family::Math(_) => None,
            Family::Compare(op) => compare::transpose(op, cx, args, linear, ct),
            Family::Convert(op) => convert::transpose(op, cx, args, linear, ct),
            Family::Random(_) | Family::Text(_) => None,
        };
        res.ok_or_else(not_linear)
    }

    /// How the result depends on the order of the operands (operators compared
    /// symbolically, `export::monoid`).
    pub fn argument_order(self) -> ArgumentOrder {
        match self.family() {
            Family::Arith(op) => arith::argument_order(op),
            Family::Compare(op) => compare::argument_order(op),
            // Unary, or binary with an order that matters (`pow`, `atan2`).
            Family::Math(_) | Family::Convert(_) | Family::Random(_) | Family::Text(_) => {
                ArgumentOrder::Fixed
            }
        }
    }

    /// The signature rule: the primitive's type as the language names it, its infix
    /// operator and how it reads at a user's type (`prim::signature`).
    pub fn signature(self) -> signature::Signature {
        match self.family() {
            Family::Arith(op) => arith::signature(op),
            Family::Math(op) => math::signature(op),
            Family::Compare(op) => compare::signature(op),
            Family::Convert(op) => convert::signature(op),
            Family::Random(op) => random::signature(op),
            Family::Text(op) => text::signature(op),
        }
    }

    /// The export rule: this primitive in StableHLO (`prim::hlo`) applied to `args`, or why
    /// it has none.
    pub fn export<E: hlo::Hlo>(self, cx: &mut E, args: &[E::Val]) -> Result<E::Val, &'static str> {
        Ok(match self.family() {
            Family::Arith(op) => arith::export(op, cx, args),
            Family::Math(op) => math::export(op, cx, args),
            Family::Compare(op) => compare::export(op, cx, args),
            Family::Convert(op) => convert::export(op, cx, args),
            Family::Random(op) => random::export(op, cx, args),
            Family::Text(_) => return Err("text is not exported: StableHLO has no strings"),
        })
    }

    /// The identity of this primitive as a monoid on `elem`, if it has one (`export::monoid`
    /// seeds reductions with it).
    pub fn identity(self, elem: Elem) -> Option<Scalar> {
        match self.family() {
            Family::Arith(op) => arith::identity(op, elem),
            Family::Compare(op) => compare::identity(op, elem),
            Family::Math(_) | Family::Convert(_) | Family::Random(_) | Family::Text(_) => None,
        }
    }

    pub fn linearity(self) -> Linearity {
        match self.family() {
            Family::Arith(op) => arith::linearity(op),
            Family::Math(op) => math::linearity(op),
            Family::Compare(op) => compare::linearity(op),
            Family::Convert(op) => convert::linearity(op),
            Family::Random(op) => random::linearity(op),
            Family::Text(_) => Linearity::NonDifferentiable,
        }
    }
}

/// `a + b` of tangents, with symbolic zeros.
pub fn add_tangents<A: Copy>(
    cx: &mut dyn Emitter<Atom = A>,
    a: Tangent<A>,
    b: Tangent<A>,
) -> Tangent<A> {
    match (a, b) {
        (Some(a), Some(b)) => Some(cx.prim(Prim::Add, &[a, b])),
        (a, None) => a,
        (None, b) => b,
    }
}

/// `factor * t` of a tangent.
pub fn scale<A: Copy>(
    cx: &mut dyn Emitter<Atom = A>,
    factor: A,
    tangent: Tangent<A>,
) -> Tangent<A> {
    tangent.map(|t| cx.prim(Prim::Mul, &[factor, t]))
}

/// Every element type, in a fixed order (for table-driven tests and the `Cast` family).
pub const ALL_ELEMS: &[Elem] = &[
    Elem::F32,
    Elem::F64,
    Elem::I32,
    Elem::I64,
    Elem::U32,
    Elem::U64,
    Elem::Bool,
];

// Shared helpers of the family files.

/// A Rust type that stores one element type: converts to and from `Scalar`.
pub(crate) trait ScalarRepr: Copy {
    /// The zero (`false`), used as the fallback for an ill-typed operand.
    const ZERO: Self;
    fn from_scalar(scalar: Scalar) -> Option<Self>;
    fn into_scalar(self) -> Scalar;
}

macro_rules! scalar_repr {
    ($($ty:ty => $variant:ident, $zero:expr;)*) => {$(
        impl ScalarRepr for $ty {
            const ZERO: Self = $zero;
            fn from_scalar(scalar: Scalar) -> Option<Self> {
                match scalar {
                    Scalar::$variant(value) => Some(value),
                    _ => None,
                }
            }
            fn into_scalar(self) -> Scalar {
                Scalar::$variant(self)
            }
        }
    )*};
}

scalar_repr! {
    f32 => F32, 0.0;
    f64 => F64, 0.0;
    i32 => I32, 0;
    i64 => I64, 0;
    u32 => U32, 0;
    u64 => U64, 0;
    bool => Bool, false;
}

/// Operand `position` as a `T`. The type rule guarantees the element type; if it is violated
/// anyway, debug builds panic and release builds read zero.
pub(crate) fn operand<T: ScalarRepr>(operands: &[Scalar], position: usize) -> T {
    match operands.get(position).copied().and_then(T::from_scalar) {
        Some(value) => value,
        None => {
            debug_assert!(false, "ill-typed operand {position} in {operands:?}");
            T::ZERO
        }
    }
}

/// The operands of a unary or binary operator as a pair (a unary operator's twice), for the
/// typed `apply` rules of the families.
pub(crate) fn operand_pair<T: ScalarRepr>(operands: &[Scalar], binary: bool) -> (T, T) {
    let x = operand::<T>(operands, 0);
    (x, if binary { operand::<T>(operands, 1) } else { x })
}

/// The common element type of `operands` if `accepts` it; else an error naming the mismatch,
/// or saying that `expected` (say `"float operands"`) was expected.
pub(crate) fn same_elem_where(
    operands: &[Elem],
    expected: &'static str,
    accepts: impl Fn(Elem) -> bool,
) -> Result<Elem, PrimTypeError> {
    let elem = same_elem(operands)?;
    if accepts(elem) {
        Ok(elem)
    } else {
        Err(PrimTypeError::operands(expected, &[elem]))
    }
}

/// The common element type of `operands`, or an error naming the mismatch.
pub(crate) fn same_elem(operands: &[Elem]) -> Result<Elem, PrimTypeError> {
    let Some(&first) = operands.first() else {
        return Err(PrimTypeError::operands("at least one operand", operands));
    };
    match operands.iter().find(|&&elem| elem != first) {
        Some(&other) => Err(PrimTypeError {
            prim: None,
            problem: PrimTypeProblem::Mixed(first, other),
        }),
        None => Ok(first),
    }
}
