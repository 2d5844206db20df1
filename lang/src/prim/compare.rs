//! Comparison, logic and selection primitives.
//!
//! - `eq ne lt gt le ge`: two operands of any one element type → `Bool`. Floats compare as
//!   IEEE 754 says (every comparison with NaN is false except `ne`); `false < true`.
//! - `and or not`: `Bool` → `Bool`.
//! - `isnan isinf`: float → `Bool` (`isinf` is true for both infinities).
//! - `select(c, a, b)`: `c : Bool`, `a` and `b` of one element type, which is the result's;
//!   `a` where `c`, else `b`.

use std::cmp::Ordering;

use super::hlo::Hlo;
use super::scalar::{Elem, Scalar};
use super::signature::{ByMethod, Interface, Signature, Slot};
use super::{operand, same_elem, same_elem_where, LiftRelation, PrimTypeError};

/// The operators of the compare family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompareOp {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    And,
    Or,
    Not,
    IsNan,
    IsInf,
    Select,
}

/// The kinds of operator in the family. The rules that treat every operator of a kind alike
/// (sign, arity, type, identity, differentiation) match on its kind, so that a new operator
/// is sorted into a kind once; the rules that tell the operators apart match on the operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `== /= < > <= >=`: two operands of one element type → `Bool`.
    Ordering,
    /// `and or`: two `Bool`s → `Bool`.
    Connective,
    /// `not`: a `Bool` → `Bool`.
    Not,
    /// `isnan isinf`: a float → `Bool`.
    FloatTest,
    /// `select(c, a, b)`.
    Select,
}

const fn kind(op: CompareOp) -> Kind {
    match op {
        CompareOp::Eq
        | CompareOp::Ne
        | CompareOp::Lt
        | CompareOp::Gt
        | CompareOp::Le
        | CompareOp::Ge => Kind::Ordering,
        CompareOp::And | CompareOp::Or => Kind::Connective,
        CompareOp::Not => Kind::Not,
        CompareOp::IsNan | CompareOp::IsInf => Kind::FloatTest,
        CompareOp::Select => Kind::Select,
    }
}

/// Sign rule (Note [Sign-clear values] in `prim`): a selection is when both choices are.
/// (Comparisons give booleans, which have no sign.)
pub fn sign_clear(op: CompareOp, operands: &[bool]) -> bool {
    match kind(op) {
        Kind::Select => operands[1] && operands[2],
        Kind::Ordering | Kind::Connective | Kind::Not | Kind::FloatTest => false,
    }
}

/// Arity rule.
pub fn arity(op: CompareOp) -> usize {
    match kind(op) {
        Kind::Ordering | Kind::Connective => 2,
        Kind::Not | Kind::FloatTest => 1,
        Kind::Select => 3,
    }
}

/// Type rule.
pub fn result_elem(op: CompareOp, operands: &[Elem]) -> Result<Elem, PrimTypeError> {
    match kind(op) {
        Kind::Ordering => same_elem(operands).map(|_| Elem::Bool),
        Kind::Connective | Kind::Not => {
            same_elem_where(operands, "bool operands", |elem| elem == Elem::Bool)
        }
        Kind::FloatTest => {
            same_elem_where(operands, "a float operand", Elem::is_float).map(|_| Elem::Bool)
        }
        Kind::Select => {
            let (cond, branches) = operands
                .split_first()
                .ok_or_else(|| PrimTypeError::operands("a condition and two values", operands))?;
            if *cond != Elem::Bool {
                return Err(PrimTypeError::operands("a bool condition", &[*cond]));
            }
            same_elem(branches)
        }
    }
}

/// Signature rule: `==` and `/=` need Dex's `Eq`, the orderings `Ord`, and read at a user's
/// type through the methods `==`, `<` and `>` (`/=`, `<=` and `>=` are their negations, as
/// in Dex's prelude); the logic operators take `Bool`s, the float tests a `Float`.
pub fn signature(op: CompareOp) -> Signature {
    use ByMethod::{Call, Negated};
    let relation = |interface, infix, by| Signature::relation(interface).infix(infix).by(by);
    match op {
        CompareOp::Eq => relation(Interface::Eq, "==", Call("==")),
        CompareOp::Ne => relation(Interface::Eq, "!=", Negated("==")),
        CompareOp::Lt => relation(Interface::Ord, "<", Call("<")),
        CompareOp::Gt => relation(Interface::Ord, ">", Call(">")),
        CompareOp::Le => relation(Interface::Ord, "<=", Negated(">")),
        CompareOp::Ge => relation(Interface::Ord, ">=", Negated("<")),
        CompareOp::And => Signature::fixed(&[Slot::Bool, Slot::Bool], Slot::Bool).infix("&&"),
        CompareOp::Or => Signature::fixed(&[Slot::Bool, Slot::Bool], Slot::Bool).infix("||"),
        CompareOp::Not => Signature::fixed(&[Slot::Bool], Slot::Bool).named("not"),
        CompareOp::IsNan => float_test().named("isnan"),
        CompareOp::IsInf => float_test().named("isinf"),
        CompareOp::Select => {
            Signature::fixed(&[Slot::Bool, Slot::A, Slot::A], Slot::A).named("select")
        }
    }
}

/// `a -> Bool` for a float `a`.
const fn float_test() -> Signature {
    Signature {
        interface: Some(Interface::Float),
        ..Signature::fixed(&[Slot::A], Slot::Bool)
    }
}

/// Identity rule: `and`'s identity is `true`, `or`'s `false` (on `Bool`).
pub fn identity(op: CompareOp, elem: Elem) -> Option<Scalar> {
    match (kind(op), elem) {
        (Kind::Connective, Elem::Bool) => Some(Scalar::Bool(op == CompareOp::And)),
        (Kind::Ordering | Kind::Connective | Kind::Not | Kind::FloatTest | Kind::Select, _) => None,
    }
}

/// Evaluation rule.
pub fn eval(op: CompareOp, operands: &[Scalar]) -> Scalar {
    let res = match op {
        CompareOp::Eq
        | CompareOp::Ne
        | CompareOp::Lt
        | CompareOp::Gt
        | CompareOp::Le
        | CompareOp::Ge => ordered(op, compare(operands)),
        CompareOp::And => operand::<bool>(operands, 0) && operand::<bool>(operands, 1),
        CompareOp::Or => operand::<bool>(operands, 0) || operand::<bool>(operands, 1),
        CompareOp::Not => !operand::<bool>(operands, 0),
        CompareOp::IsNan => eval_float_test(operands, "isnan", f32::is_nan, f64::is_nan),
        CompareOp::IsInf => eval_float_test(operands, "isinf", f32::is_infinite, f64::is_infinite),
        CompareOp::Select => {
            let chosen = if operand::<bool>(operands, 0) { 1 } else { 2 };
            return operands.get(chosen).copied().unwrap_or_else(|| {
                debug_assert!(false, "select with {} operands", operands.len());
                Scalar::Bool(false)
            });
        }
    };
    Scalar::Bool(res)
}

/// The float test `name` of the first operand: `on_f32` or `on_f64`, by its type.
fn eval_float_test(
    operands: &[Scalar],
    name: &str,
    on_f32: fn(f32) -> bool,
    on_f64: fn(f64) -> bool,
) -> bool {
    match operands.first() {
        Some(&Scalar::F32(x)) => on_f32(x),
        Some(&Scalar::F64(x)) => on_f64(x),
        other => {
            debug_assert!(false, "{name} of {other:?}");
            false
        }
    }
}

/// The compare family as typed functions (see [`Lift`]): the ordering comparisons, which are
/// Rust's operators on the element type (IEEE order on floats, exactly `ordered`'s cases;
/// `false < true`), and the float tests. The logic operators and `select` are not functions
/// of one element type: `Err(lift)`.
pub(crate) fn lift<T: Tested, L: LiftRelation<T>>(op: CompareOp, lift: L) -> Result<L::Output, L> {
    Ok(match op {
        CompareOp::Eq => lift.relation(|x, y| x == y),
        CompareOp::Ne => lift.relation(|x, y| x != y),
        CompareOp::Lt => lift.relation(|x, y| x < y),
        CompareOp::Gt => lift.relation(|x, y| x > y),
        CompareOp::Le => lift.relation(|x, y| x <= y),
        CompareOp::Ge => lift.relation(|x, y| x >= y),
        CompareOp::IsNan => lift.test(T::is_nan),
        CompareOp::IsInf => lift.test(T::is_inf),
        CompareOp::And | CompareOp::Or | CompareOp::Not | CompareOp::Select => return Err(lift),
    })
}

/// Export rule: StableHLO's `compare` (its comparison type follows the element type, so
/// floats compare in IEEE order), its logic operations and `select`; `isnan x` is `x ≠ x`,
/// `isinf x` is `|x| = ∞`.
pub(crate) fn export<E: Hlo>(op: CompareOp, cx: &mut E, args: &[E::Val]) -> E::Val {
    let x = &args[0];
    let y = || &args[1];
    match op {
        CompareOp::Eq => cx.compare("EQ", x, y()),
        CompareOp::Ne => cx.compare("NE", x, y()),
        CompareOp::Lt => cx.compare("LT", x, y()),
        CompareOp::Gt => cx.compare("GT", x, y()),
        CompareOp::Le => cx.compare("LE", x, y()),
        CompareOp::Ge => cx.compare("GE", x, y()),
        CompareOp::And => cx.op("and", &[x, y()]),
        CompareOp::Or => cx.op("or", &[x, y()]),
        CompareOp::Not => cx.op("not", &[x]),
        CompareOp::IsNan => cx.compare("NE", x, x),
        CompareOp::IsInf => {
            let magnitude = cx.op("abs", &[x]);
            let infinity = cx.splat(super::hlo::float(cx.elem(x), f64::INFINITY), x);
            cx.compare("EQ", &magnitude, &infinity)
        }
        CompareOp::Select => cx.select(x, y(), &args[2]),
    }
}

/// The element types compared: ordered, and tested for NaN and infinity (which no integer or
/// boolean is; the type rule gives the tests float operands only).
pub(crate) trait Tested: PartialOrd + Copy {
    fn is_nan(self) -> bool;
    fn is_inf(self) -> bool;
}

macro_rules! tested {
    (float: $($float:ty),*; exact: $($exact:ty),*) => {
        $(impl Tested for $float {
            fn is_nan(self) -> bool { <$float>::is_nan(self) }
            fn is_inf(self) -> bool { <$float>::is_infinite(self) }
        })*
        $(impl Tested for $exact {
            fn is_nan(self) -> bool { false }
            fn is_inf(self) -> bool { false }
        })*
    };
}

tested!(float: f32, f64; exact: i32, i64, u32, u64, bool);

/// Whether the ordering comparison `op` (`==`, `/=`, `<`, `>`, `<=`, `>=`) holds of two operands
/// ordered as `ordering` (`None`: unordered, a NaN).
pub(crate) fn ordered(op: CompareOp, ordering: Option<Ordering>) -> bool {
    match op {
        CompareOp::Eq => ordering == Some(Ordering::Equal),
        CompareOp::Ne => ordering != Some(Ordering::Equal),
        CompareOp::Lt => ordering == Some(Ordering::Less),
        CompareOp::Gt => ordering == Some(Ordering::Greater),
        CompareOp::Le => matches!(ordering, Some(Ordering::Less | Ordering::Equal)),
        CompareOp::Ge => matches!(ordering, Some(Ordering::Greater | Ordering::Equal)),
        CompareOp::And
        | CompareOp::Or
        | CompareOp::Not
        | CompareOp::IsNan
        | CompareOp::IsInf
        | CompareOp::Select => {
            debug_assert!(false, "{op:?} is not an ordering comparison");
            false
        }
    }
}

/// The IEEE / natural ordering of two scalars of one element type (`None` for NaN or for
/// ill-typed operands).
fn compare(operands: &[Scalar]) -> Option<Ordering> {
    match (operands.first()?, operands.get(1)?) {
        (Scalar::F32(a), Scalar::F32(b)) => a.partial_cmp(b),
        (Scalar::F64(a), Scalar::F64(b)) => a.partial_cmp(b),
        (Scalar::I32(a), Scalar::I32(b)) => Some(a.cmp(b)),
        (Scalar::I64(a), Scalar::I64(b)) => Some(a.cmp(b)),
        (Scalar::U32(a), Scalar::U32(b)) => Some(a.cmp(b)),
        (Scalar::U64(a), Scalar::U64(b)) => Some(a.cmp(b)),
        (Scalar::Bool(a), Scalar::Bool(b)) => Some(a.cmp(b)),
        (a, b) => {
            debug_assert!(false, "comparison of {a:?} and {b:?}");
            None
        }
    }
}

/// Operand-order rule: equality and the logic operators are commutative; `a > b` is `b < a`.
pub fn argument_order(op: CompareOp) -> super::ArgumentOrder {
    use super::{ArgumentOrder, Prim};
    match op {
        CompareOp::Eq | CompareOp::Ne | CompareOp::And | CompareOp::Or => ArgumentOrder::Any,
        CompareOp::Gt => ArgumentOrder::Mirror(Prim::Lt),
        CompareOp::Ge => ArgumentOrder::Mirror(Prim::Le),
        CompareOp::Lt
        | CompareOp::Le
        | CompareOp::Not
        | CompareOp::IsNan
        | CompareOp::IsInf
        | CompareOp::Select => ArgumentOrder::Fixed,
    }
}

/// Differentiability of the comparison family.
pub fn linearity(op: CompareOp) -> super::Linearity {
    use super::Linearity;
    match kind(op) {
        Kind::Select => Linearity::Bilinear,
        Kind::Ordering | Kind::Connective | Kind::Not | Kind::FloatTest => {
            Linearity::NonDifferentiable
        }
    }
}

/// JVP rules: comparisons have no tangent; `select` selects the tangents.
pub fn jvp<A: Copy>(
    op: CompareOp,
    cx: &mut dyn super::Emitter<Atom = A>,
    args: &[A],
    tangents: &[super::Tangent<A>],
) -> super::Tangent<A> {
    match kind(op) {
        Kind::Select => {
            let a = tangents[1].unwrap_or_else(|| cx.constant(0.0, args[1]));
            let b = tangents[2].unwrap_or_else(|| cx.constant(0.0, args[1]));
            Some(cx.prim(super::Prim::Select, &[args[0], a, b]))
        }
        Kind::Ordering | Kind::Connective | Kind::Not | Kind::FloatTest => None,
    }
}

/// Transpose of `select(c, a, b)` in its branches: the cotangent goes to the chosen side.
pub fn transpose<A: Copy>(
    op: CompareOp,
    cx: &mut dyn super::Emitter<Atom = A>,
    args: &[A],
    linear: &[bool],
    ct: A,
) -> Option<Vec<super::Tangent<A>>> {
    match kind(op) {
        Kind::Select if !linear[0] => {
            let zero = cx.constant(0.0, ct);
            let to_a = linear[1].then(|| cx.prim(super::Prim::Select, &[args[0], ct, zero]));
            let to_b = linear[2].then(|| cx.prim(super::Prim::Select, &[args[0], zero, ct]));
            Some(vec![None, to_a, to_b])
        }
        Kind::Select | Kind::Ordering | Kind::Connective | Kind::Not | Kind::FloatTest => None,
    }
}
