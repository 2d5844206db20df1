//! Elementwise primitives over whole arrays.
//!
//! Operands are broadcast to the result shape with trailing axes aligned (a rank-0 operand
//! broadcasts everywhere; inside a batched block an unbatched operand of shape `S` broadcasts
//! against batched operands of shape `B ++ S`). The kernels are typed closures over slices or
//! `ndarray::Zip`, run in parallel above `PAR_THRESHOLD` elements; elementwise results do not
//! depend on the order of evaluation, so parallelism never changes a bit.
//!
//! Exactness: every fast path re-states the scalar rule of its primitive in `prim/` with the
//! same `std` functions, so it agrees with `Prim::eval` bit for bit; the table-driven test
//! `fast_paths_agree_with_prim_eval` checks each one on edge values. Primitives without a fast
//! path (none today for well-typed programs) go through `generic_*`, which calls
//! `Prim::eval` per element.

use ndarray::{IxDyn, Zip};
use rayon::prelude::*;

use super::lanes::Blend;
use super::tensor::{from_vec, with_elem_type, with_tensor, Element, Nd, Tensor};
use super::{MIN_CHUNK, PAR_THRESHOLD};
use crate::core::ir::Elem;
use crate::prim::vmath;
use crate::prim::{threefry2x32, unit_from_bits, Arith, Family, Prim};

/// Applies `prim` to `operands`; the result has shape `shape` (every operand broadcasts to
/// it). The operands must be well typed for `prim` (the verifier guarantees it).
///
/// The operands are taken by value: an operand that is the sole owner of a row-major buffer
/// of the result's type and shape is overwritten with the result instead of allocating one.
pub fn eval_prim(prim: Prim, operands: Vec<Tensor>, shape: &[usize]) -> Tensor {
    let n_operands = operands.len();
    let mut operands = operands.into_iter();
    match (operands.next(), operands.next(), operands.next()) {
        (Some(x), None, None) => unary(prim, x, shape),
        (Some(x), Some(y), None) => binary(prim, x, y, shape),
        (Some(c), Some(x), Some(y)) if n_operands == 3 => ternary(prim, &c, &x, &y, shape),
        _ => panic!(
            "exec: {} applied to {n_operands} operands (the verifier rules this out)",
            prim.name(),
        ),
    }
}

// Kernels.

/// `f` over every element, broadcast to `shape`.
pub fn map1<A: Element, R: Element>(
    a: &Nd<A>,
    shape: &[usize],
    f: impl Fn(A) -> R + Sync + Send,
) -> Nd<R> {
    let n_elems: usize = shape.iter().product();
    if a.shape() == shape {
        if let Some(slice) = a.as_slice() {
            let data: Vec<R> = if n_elems >= PAR_THRESHOLD {
                slice
                    .par_iter()
                    .with_min_len(MIN_CHUNK)
                    .map(|&x| f(x))
                    .collect()
            } else {
                slice.iter().map(|&x| f(x)).collect()
            };
            return from_vec(shape, data);
        }
    }
    let view = broadcast_view(a, shape);
    let zip = Zip::from(view);
    let res = if n_elems >= PAR_THRESHOLD {
        zip.par_map_collect(|&x| f(x))
    } else {
        zip.map_collect(|&x| f(x))
    };
    res.into_shared()
}

/// Whether `array` can be overwritten with a result of shape `shape`.
fn reusable<T: Element>(array: &Nd<T>, shape: &[usize]) -> bool {
    array.shape() == shape && array.is_unique() && array.is_standard_layout()
}

/// Overwrites every element of a row-major buffer with `f` of it.
fn update_in_place<T: Element>(array: &mut Nd<T>, f: impl Fn(T) -> T + Sync + Send) {
    let slice = array
        .as_slice_mut()
        .expect("update_in_place: the caller checked for a row-major buffer");
    if slice.len() >= PAR_THRESHOLD {
        slice
            .par_iter_mut()
            .with_min_len(MIN_CHUNK)
            .for_each(|x| *x = f(*x));
    } else {
        slice.iter_mut().for_each(|x| *x = f(*x));
    }
}

/// `map1` with a result of the operand's type, computed in the operand's buffer when it can
/// be reused.
pub fn map1_same<A: Element>(
    mut a: Nd<A>,
    shape: &[usize],
    f: impl Fn(A) -> A + Sync + Send,
) -> Nd<A> {
    if reusable(&a, shape) {
        update_in_place(&mut a, f);
        a
    } else {
        map1(&a, shape, f)
    }
}

/// `map2` with a result of the operands' type, computed in the buffer of an operand that can
/// be reused.
pub fn map2_same<A: Element>(
    mut a: Nd<A>,
    mut b: Nd<A>,
    shape: &[usize],
    f: impl Fn(A, A) -> A + Sync + Send,
) -> Nd<A> {
    let (a_reusable, b_reusable) = (reusable(&a, shape), reusable(&b, shape));
    if a_reusable && b.ndim() == 0 {
        let y = only(&b);
        update_in_place(&mut a, move |x| f(x, y));
        return a;
    }
    if b_reusable && a.ndim() == 0 {
        let x = only(&a);
        update_in_place(&mut b, move |y| f(x, y));
        return b;
    }
    if a_reusable && b.shape() == shape && b.is_standard_layout() {
        zip_in_place(&mut a, &b, f);
        return a;
    }
    if b_reusable && a.shape() == shape && a.is_standard_layout() {
        zip_in_place(&mut b, &a, move |y, x| f(x, y));
        return b;
    }
    map2(&a, &b, shape, f)
}

/// `dst[i] = f(dst[i], src[i])` over two row-major buffers of one length.
fn zip_in_place<T: Element>(dst: &mut Nd<T>, src: &Nd<T>, f: impl Fn(T, T) -> T + Sync + Send) {
    let src = src
        .as_slice()
        .expect("zip_in_place: the caller checked for a row-major operand");
    let dst = dst
        .as_slice_mut()
        .expect("zip_in_place: the caller checked for a row-major buffer");
    if dst.len() >= PAR_THRESHOLD {
        dst.par_iter_mut()
            .zip(src.par_iter())
            .with_min_len(MIN_CHUNK)
            .for_each(|(x, &y)| *x = f(*x, y));
    } else {
        dst.iter_mut().zip(src).for_each(|(x, &y)| *x = f(*x, y));
    }
}

/// `f` over pairs of elements, both operands broadcast to `shape`.
pub fn map2<A: Element, B: Element, R: Element>(
    a: &Nd<A>,
    b: &Nd<B>,
    shape: &[usize],
    f: impl Fn(A, B) -> R + Sync + Send,
) -> Nd<R> {
    // A scalar operand becomes a constant of the closure, so the loop stays a plain map.
    if b.ndim() == 0 && a.shape() == shape {
        let y = only(b);
        return map1(a, shape, move |x| f(x, y));
    }
    if a.ndim() == 0 && b.shape() == shape {
        let x = only(a);
        return map1(b, shape, move |y| f(x, y));
    }
    let n_elems: usize = shape.iter().product();
    if a.shape() == shape && b.shape() == shape {
        if let (Some(xs), Some(ys)) = (a.as_slice(), b.as_slice()) {
            let data: Vec<R> = if n_elems >= PAR_THRESHOLD {
                xs.par_iter()
                    .zip(ys.par_iter())
                    .with_min_len(MIN_CHUNK)
                    .map(|(&x, &y)| f(x, y))
                    .collect()
            } else {
                xs.iter().zip(ys).map(|(&x, &y)| f(x, y)).collect()
            };
            return from_vec(shape, data);
        }
    }
    let zip = Zip::from(broadcast_view(a, shape)).and(broadcast_view(b, shape));
    let res = if n_elems >= PAR_THRESHOLD {
        zip.par_map_collect(|&x, &y| f(x, y))
    } else {
        zip.map_collect(|&x, &y| f(x, y))
    };
    res.into_shared()
}

/// `f` over triples of elements, all broadcast to `shape`.
pub fn map3<A: Element, B: Element, C: Element, R: Element>(
    a: &Nd<A>,
    b: &Nd<B>,
    c: &Nd<C>,
    shape: &[usize],
    f: impl Fn(A, B, C) -> R + Sync + Send,
) -> Nd<R> {
    let n_elems: usize = shape.iter().product();
    let zip = Zip::from(broadcast_view(a, shape))
        .and(broadcast_view(b, shape))
        .and(broadcast_view(c, shape));
    let res = if n_elems >= PAR_THRESHOLD {
        zip.par_map_collect(|&x, &y, &z| f(x, y, z))
    } else {
        zip.map_collect(|&x, &y, &z| f(x, y, z))
    };
    res.into_shared()
}

fn broadcast_view<'a, T: Element>(array: &'a Nd<T>, shape: &[usize]) -> ndarray::ArrayViewD<'a, T> {
    array.broadcast(IxDyn(shape)).unwrap_or_else(|| {
        panic!(
            "exec: operand of shape {:?} does not broadcast to {shape:?} (the verifier rules this out)",
            array.shape()
        )
    })
}

/// The element of a rank-0 array.
fn only<T: Element>(array: &Nd<T>) -> T {
    *array
        .iter()
        .next()
        .expect("a rank-0 array has exactly one element")
}

/// The operand `y`, owned, as the element type of the other operand (see `same`).
fn take_same<T: Element>(y: Tensor, prim: Prim) -> Nd<T> {
    let elem = y.elem();
    T::take(y).unwrap_or_else(|| {
        panic!(
            "exec: {} on {:?} and {elem:?} operands (the verifier rules this out)",
            prim.name(),
            T::ELEM,
        )
    })
}

/// The operand `y` as the same element type as `x`'s (the type rules of the binary
/// primitives make both operands one type).
fn same<T: Element>(y: &Tensor, prim: Prim) -> &Nd<T> {
    T::of(y).unwrap_or_else(|| {
        panic!(
            "exec: {} on {:?} and {:?} operands (the verifier rules this out)",
            prim.name(),
            T::ELEM,
            y.elem()
        )
    })
}

// Per-family typed rules (fast paths).

/// Numeric element types: the arithmetic rules are `prim/arith.rs`'s `Arith`, stated once.
trait Num: Element + Arith {}

impl<T: Element + Arith> Num for T {}

/// Float element types with the rules of `prim/arith.rs` and `prim/math.rs`.
trait Float: Num {
    fn f_is_nan(self) -> bool;
    fn f_is_inf(self) -> bool;
    /// The math-family unary primitives (each arm passes the `std` function itself, a
    /// zero-sized fn item, so the kernel inlines it).
    /// Gives `a` back when `prim` is not one of them.
    fn f_unary(prim: Prim, a: Nd<Self>, shape: &[usize]) -> Result<Nd<Self>, Nd<Self>>;
    fn f_pow(self, other: Self) -> Self;
    fn f_atan2(self, other: Self) -> Self;
}

macro_rules! float_rules {
    ($($ty:ident: $exp:ident, $log:ident, $tanh:ident, $sin:ident, $cos:ident, $pow:ident;)*) => {$(
        impl Float for $ty {
            fn f_is_nan(self) -> bool { self.is_nan() }
            fn f_is_inf(self) -> bool { self.is_infinite() }
            fn f_pow(self, other: Self) -> Self { vmath::$pow(self, other) }
            fn f_atan2(self, other: Self) -> Self { $ty::atan2(self, other) }
            fn f_unary(prim: Prim, a: Nd<Self>, shape: &[usize]) -> Result<Nd<Self>, Nd<Self>> {
                Ok(match prim {
                    Prim::Sqrt => map1_same(a, shape, $ty::sqrt),
                    Prim::Exp => map1_same(a, shape, vmath::$exp),
                    Prim::Exp2 => map1_same(a, shape, $ty::exp2),
                    Prim::Log => map1_same(a, shape, vmath::$log),
                    Prim::Log2 => map1_same(a, shape, $ty::log2),
                    Prim::Log10 => map1_same(a, shape, $ty::log10),
                    Prim::Log1p => map1_same(a, shape, $ty::ln_1p),
                    Prim::Expm1 => map1_same(a, shape, $ty::exp_m1),
                    Prim::Sin => map1_same(a, shape, vmath::$sin),
                    Prim::Cos => map1_same(a, shape, vmath::$cos),
                    Prim::Tan => map1_same(a, shape, $ty::tan),
                    Prim::Tanh => map1_same(a, shape, vmath::$tanh),
                    Prim::Sinh => map1_same(a, shape, $ty::sinh),
                    Prim::Cosh => map1_same(a, shape, $ty::cosh),
                    Prim::Atan => map1_same(a, shape, $ty::atan),
                    Prim::Floor => map1_same(a, shape, $ty::floor),
                    Prim::Ceil => map1_same(a, shape, $ty::ceil),
                    Prim::Round => map1_same(a, shape, $ty::round),
                    _ => return Err(a),
                })
            }
        }
    )*};
}

float_rules! {
    f32: exp_f32, log_f32, tanh_f32, sin_f32, cos_f32, pow_f32;
    f64: exp_f64, log_f64, tanh_f64, sin_f64, cos_f64, pow_f64;
}

/// Arithmetic unary fast paths (`a` back if there is none).
fn num_unary<N: Num>(prim: Prim, a: Nd<N>, shape: &[usize]) -> Result<Tensor, Nd<N>> {
    let res = match prim {
        Prim::Neg => map1_same(a, shape, <N as Arith>::neg),
        Prim::Abs => map1_same(a, shape, <N as Arith>::abs),
        _ => return Err(a),
    };
    Ok(N::into_tensor(res))
}

/// Float unary fast paths: the math family, `isnan`/`isinf`, then arithmetic.
fn float_unary<F: Float>(prim: Prim, a: Nd<F>, shape: &[usize]) -> Result<Tensor, Nd<F>> {
    match prim {
        Prim::IsNan => return Ok(Tensor::Bool(map1(&a, shape, F::f_is_nan))),
        Prim::IsInf => return Ok(Tensor::Bool(map1(&a, shape, F::f_is_inf))),
        _ => {}
    }
    match F::f_unary(prim, a, shape) {
        Ok(res) => Ok(F::into_tensor(res)),
        Err(a) => num_unary(prim, a, shape),
    }
}

/// Arithmetic binary fast paths (`Prim::eval` per element for the others).
fn num_binary<N: Num>(prim: Prim, a: Nd<N>, b: Nd<N>, shape: &[usize]) -> Tensor {
    let res = match prim {
        Prim::Add => map2_same(a, b, shape, <N as Arith>::add),
        Prim::Sub => map2_same(a, b, shape, <N as Arith>::sub),
        Prim::Mul => map2_same(a, b, shape, <N as Arith>::mul),
        Prim::Div => map2_same(a, b, shape, <N as Arith>::div),
        Prim::Min => map2_same(a, b, shape, <N as Arith>::min),
        Prim::Max => map2_same(a, b, shape, <N as Arith>::max),
        Prim::Mod => map2_same(a, b, shape, <N as Arith>::modulo),
        Prim::IDiv => map2_same(a, b, shape, <N as Arith>::idiv),
        _ => {
            return generic_binary(prim, &N::into_tensor(a), &N::into_tensor(b), shape);
        }
    };
    N::into_tensor(res)
}

fn float_binary<F: Float>(prim: Prim, a: Nd<F>, b: Nd<F>, shape: &[usize]) -> Tensor {
    match prim {
        Prim::Pow => F::into_tensor(map2_same(a, b, shape, F::f_pow)),
        Prim::Atan2 => F::into_tensor(map2_same(a, b, shape, F::f_atan2)),
        _ => num_binary(prim, a, b, shape),
    }
}

fn is_comparison(prim: Prim) -> bool {
    matches!(
        prim,
        Prim::Eq | Prim::Ne | Prim::Lt | Prim::Gt | Prim::Le | Prim::Ge
    )
}

/// Comparisons on any element type: IEEE order on floats (`prim/compare.rs` compares with
/// `partial_cmp`, and `x == y`, `x < y`, `x <= y`, … are exactly its cases), `false < true`.
fn compare<T: Element>(prim: Prim, a: &Nd<T>, b: &Nd<T>, shape: &[usize]) -> Tensor {
    let res = match prim {
        Prim::Eq => map2(a, b, shape, |x, y| x == y),
        Prim::Ne => map2(a, b, shape, |x, y| x != y),
        Prim::Lt => map2(a, b, shape, |x, y| x < y),
        Prim::Gt => map2(a, b, shape, |x, y| x > y),
        Prim::Le => map2(a, b, shape, |x, y| x <= y),
        Prim::Ge => map2(a, b, shape, |x, y| x >= y),
        other => panic!("exec: {} is not a comparison", other.name()),
    };
    Tensor::Bool(res)
}

fn unary(prim: Prim, x: Tensor, shape: &[usize]) -> Tensor {
    if let Prim::Cast(elem) = prim {
        return with_tensor!(&x, a => cast(a, elem, shape));
    }
    macro_rules! fast {
        ($variant:ident, $a:ident, $fast:ident) => {
            match $fast(prim, $a, shape) {
                Ok(res) => return res,
                Err(a) => Tensor::$variant(a),
            }
        };
    }
    let operand = match x {
        Tensor::F32(a) => fast!(F32, a, float_unary),
        Tensor::F64(a) => fast!(F64, a, float_unary),
        Tensor::I32(a) => fast!(I32, a, num_unary),
        Tensor::I64(a) => fast!(I64, a, num_unary),
        Tensor::U32(a) => fast!(U32, a, num_unary),
        Tensor::U64(a) if prim == Prim::UnitFromBits => {
            return Tensor::F32(map1(&a, shape, unit_from_bits))
        }
        Tensor::U64(a) => fast!(U64, a, num_unary),
        Tensor::Bool(a) if prim == Prim::Not => {
            return Tensor::Bool(map1_same(a, shape, |b: bool| !b))
        }
        other @ Tensor::Bool(_) => other,
    };
    generic_unary(prim, &operand, shape)
}

fn binary(prim: Prim, x: Tensor, y: Tensor, shape: &[usize]) -> Tensor {
    // The one family with operands of two types (`show_<format>(x, k)`, `k` an `i64`) takes
    // the generic path; every other binary primitive has one operand type.
    if let Family::Text(_) = prim.family() {
        return generic_positional(prim, &x, &y, shape);
    }
    if is_comparison(prim) {
        return with_tensor!(&x, a => compare(prim, a, same(&y, prim), shape));
    }
    match x {
        Tensor::F32(a) => float_binary(prim, a, take_same(y, prim), shape),
        Tensor::F64(a) => float_binary(prim, a, take_same(y, prim), shape),
        Tensor::I32(a) => num_binary(prim, a, take_same(y, prim), shape),
        Tensor::I64(a) => num_binary(prim, a, take_same(y, prim), shape),
        Tensor::U32(a) => num_binary(prim, a, take_same(y, prim), shape),
        Tensor::U64(a) if prim == Prim::Threefry2x32 => {
            Tensor::U64(map2_same(a, take_same(y, prim), shape, threefry2x32))
        }
        Tensor::U64(a) => num_binary(prim, a, take_same(y, prim), shape),
        Tensor::Bool(a) => {
            let b = take_same::<bool>(y, prim);
            match prim {
                Prim::And => Tensor::Bool(map2_same(a, b, shape, |p, q| p && q)),
                Prim::Or => Tensor::Bool(map2_same(a, b, shape, |p, q| p || q)),
                _ => generic_binary(prim, &Tensor::Bool(a), &Tensor::Bool(b), shape),
            }
        }
    }
}

fn ternary(prim: Prim, c: &Tensor, x: &Tensor, y: &Tensor, shape: &[usize]) -> Tensor {
    match (prim, c) {
        (Prim::Select, Tensor::Bool(c)) => select(c, x, y, shape),
        _ => generic_ternary(prim, c, x, y, shape),
    }
}

/// `select(c, x, y)`: `x` where `c`, else `y`.
pub fn select(c: &Nd<bool>, x: &Tensor, y: &Tensor, shape: &[usize]) -> Tensor {
    fn typed<T: Element + Blend>(c: &Nd<bool>, a: &Nd<T>, y: &Tensor, shape: &[usize]) -> Tensor {
        let b = same::<T>(y, Prim::Select);
        T::into_tensor(map3(c, a, b, shape, T::blend))
    }
    with_tensor!(x, a => typed(c, a, y, shape))
}

/// `cast_<elem>` (`prim/convert.rs`).
fn cast<A: Element>(a: &Nd<A>, elem: Elem, shape: &[usize]) -> Tensor {
    match elem {
        Elem::F32 => Tensor::F32(map1(a, shape, A::to_f32)),
        Elem::F64 => Tensor::F64(map1(a, shape, A::to_f64)),
        Elem::I32 => Tensor::I32(map1(a, shape, A::to_i32)),
        Elem::I64 => Tensor::I64(map1(a, shape, A::to_i64)),
        Elem::U32 => Tensor::U32(map1(a, shape, A::to_u32)),
        Elem::U64 => Tensor::U64(map1(a, shape, A::to_u64)),
        Elem::Bool => Tensor::Bool(map1(a, shape, A::to_bool)),
    }
}

// The generic path: `Prim::eval` per element.

/// The element a scalar rule returned, as `R` (the type rule fixes its type).
fn unpack<R: Element>(prim: Prim, scalar: crate::core::ir::Scalar) -> R {
    R::from_scalar(scalar).unwrap_or_else(|| {
        panic!(
            "exec: {} returned {scalar:?}, expected {:?} (prim's type and eval rules disagree)",
            prim.name(),
            R::ELEM
        )
    })
}

fn result_elem(prim: Prim, operands: &[Elem]) -> Elem {
    prim.result_elem(operands).unwrap_or_else(|error| {
        panic!(
            "exec: ill-typed {} (the verifier rules this out): {error}",
            prim.name()
        )
    })
}

pub(super) fn generic_unary(prim: Prim, x: &Tensor, shape: &[usize]) -> Tensor {
    fn typed<A: Element, R: Element>(prim: Prim, a: &Nd<A>, shape: &[usize]) -> Tensor {
        R::into_tensor(map1(a, shape, move |x: A| {
            unpack::<R>(prim, prim.eval(&[x.into_scalar()]))
        }))
    }
    let res_elem = result_elem(prim, &[x.elem()]);
    with_tensor!(x, a => with_elem_type!(res_elem, R => typed::<_, R>(prim, a, shape)))
}

pub(super) fn generic_binary(prim: Prim, x: &Tensor, y: &Tensor, shape: &[usize]) -> Tensor {
    fn typed<A: Element, R: Element>(prim: Prim, a: &Nd<A>, y: &Tensor, shape: &[usize]) -> Tensor {
        let b = same::<A>(y, prim);
        R::into_tensor(map2(a, b, shape, move |x: A, y: A| {
            unpack::<R>(prim, prim.eval(&[x.into_scalar(), y.into_scalar()]))
        }))
    }
    let res_elem = result_elem(prim, &[x.elem(), y.elem()]);
    with_tensor!(x, a => with_elem_type!(res_elem, R => typed::<_, R>(prim, a, y, shape)))
}

/// A primitive of a value and an `i64` position (the text family).
pub(super) fn generic_positional(prim: Prim, x: &Tensor, k: &Tensor, shape: &[usize]) -> Tensor {
    fn typed<A: Element, R: Element>(
        prim: Prim,
        a: &Nd<A>,
        k: &Nd<i64>,
        shape: &[usize],
    ) -> Tensor {
        R::into_tensor(map2(a, k, shape, move |x: A, k: i64| {
            unpack::<R>(prim, prim.eval(&[x.into_scalar(), k.into_scalar()]))
        }))
    }
    let res_elem = result_elem(prim, &[x.elem(), k.elem()]);
    let k = same::<i64>(k, prim);
    with_tensor!(x, a => with_elem_type!(res_elem, R => typed::<_, R>(prim, a, k, shape)))
}

pub(super) fn generic_ternary(
    prim: Prim,
    c: &Tensor,
    x: &Tensor,
    y: &Tensor,
    shape: &[usize],
) -> Tensor {
    fn typed<C: Element, A: Element>(
        prim: Prim,
        c: &Nd<C>,
        a: &Nd<A>,
        y: &Tensor,
        shape: &[usize],
    ) -> Tensor {
        let b = same::<A>(y, prim);
        A::into_tensor(map3(c, a, b, shape, move |c: C, x: A, y: A| {
            unpack::<A>(
                prim,
                prim.eval(&[c.into_scalar(), x.into_scalar(), y.into_scalar()]),
            )
        }))
    }
    // The only ternary primitive is `select`, whose result has its branches' type.
    with_tensor!(c, c => with_tensor!(x, a => typed(prim, c, a, y, shape)))
}
