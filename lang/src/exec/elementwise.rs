//! Elementwise primitives over whole arrays.
//!
//! Operands are broadcast to the result shape with trailing axes aligned (a rank-0 operand
//! broadcasts everywhere; inside a batched block an unbatched operand of shape `S` broadcasts
//! against batched operands of shape `B ++ S`). The kernels are typed closures over slices or
//! `ndarray::Zip`, run in parallel above `PAR_THRESHOLD` elements; elementwise results do not
//! depend on the order of evaluation, so parallelism never changes a bit.
//!
//! Exactness: the kernels are built from each family's table of typed functions
//! (`Prim::lift`), the very functions `Prim::eval` applies, so they agree bit for bit; the
//! table-driven test `fast_paths_agree_with_prim_eval` checks each one on edge values. The
//! primitives that are not functions of one element type (casts, words, `not`, `and`, `or`,
//! `select`) have kernels of their own here; any other without a typed function (none today
//! for well-typed programs) goes through `generic_*`, which calls `Prim::eval` per element.

use ndarray::{IxDyn, Zip};
use rayon::prelude::*;

use super::lanes::Blend;
use super::tensor::{from_vec, with_elem_type, with_tensor, Element, Nd, Tensor};
use super::{MIN_CHUNK, PAR_THRESHOLD};
use crate::core::ir::Elem;
use crate::prim::{threefry2x32, unit_from_bits, Cast, Family, Lift, LiftRelation, Lifted, Prim};

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

// The typed kernels: each family's table of functions (`prim`'s `lift`) as whole-array maps.

/// A unary function mapped over an array, in its buffer when it can be reused; the operand
/// back when the primitive has no unary function on its type.
struct Map1<'s, T> {
    a: Nd<T>,
    shape: &'s [usize],
}

impl<T: Element> Lift<T> for Map1<'_, T> {
    type Output = Result<Tensor, Nd<T>>;
    fn unary(self, f: impl Fn(T) -> T + Copy + Send + Sync) -> Self::Output {
        Ok(T::into_tensor(map1_same(self.a, self.shape, f)))
    }
    fn binary(self, _: impl Fn(T, T) -> T + Copy + Send + Sync) -> Self::Output {
        Err(self.a)
    }
}

impl<T: Element> LiftRelation<T> for Map1<'_, T> {
    fn relation(self, _: impl Fn(T, T) -> bool + Copy + Send + Sync) -> Self::Output {
        Err(self.a)
    }
    fn test(self, f: impl Fn(T) -> bool + Copy + Send + Sync) -> Self::Output {
        Ok(Tensor::Bool(map1(&self.a, self.shape, f)))
    }
}

/// A binary function mapped over two arrays of one type (in a buffer that can be reused);
/// the operands back when the primitive has no binary function on their type.
struct Map2<'s, T> {
    a: Nd<T>,
    b: Nd<T>,
    shape: &'s [usize],
}

impl<T: Element> Lift<T> for Map2<'_, T> {
    type Output = Result<Tensor, (Nd<T>, Nd<T>)>;
    fn unary(self, _: impl Fn(T) -> T + Copy + Send + Sync) -> Self::Output {
        Err((self.a, self.b))
    }
    fn binary(self, f: impl Fn(T, T) -> T + Copy + Send + Sync) -> Self::Output {
        Ok(T::into_tensor(map2_same(self.a, self.b, self.shape, f)))
    }
}

impl<T: Element> LiftRelation<T> for Map2<'_, T> {
    fn relation(self, f: impl Fn(T, T) -> bool + Copy + Send + Sync) -> Self::Output {
        Ok(Tensor::Bool(map2(&self.a, &self.b, self.shape, f)))
    }
    fn test(self, _: impl Fn(T) -> bool + Copy + Send + Sync) -> Self::Output {
        Err((self.a, self.b))
    }
}

/// `prim`'s typed kernel on an operand of type `T`, or the operand back.
fn unary_kernel<T: Element + Lifted>(
    prim: Prim,
    a: Nd<T>,
    shape: &[usize],
) -> Result<Tensor, Tensor> {
    match prim.lift(Map1 { a, shape }) {
        Ok(Ok(res)) => Ok(res),
        Ok(Err(a)) | Err(Map1 { a, .. }) => Err(T::into_tensor(a)),
    }
}

/// `prim`'s typed kernel on operands of type `T` (`y` must be one too), or else the generic
/// path.
fn binary_kernel<T: Element + Lifted>(prim: Prim, a: Nd<T>, y: Tensor, shape: &[usize]) -> Tensor {
    let b = take_same::<T>(y, prim);
    match prim.lift(Map2 { a, b, shape }) {
        Ok(Ok(res)) => res,
        Ok(Err((a, b))) | Err(Map2 { a, b, .. }) => {
            generic_binary(prim, &T::into_tensor(a), &T::into_tensor(b), shape)
        }
    }
}

fn unary(prim: Prim, x: Tensor, shape: &[usize]) -> Tensor {
    if let Prim::Cast(elem) = prim {
        return with_tensor!(&x, a => cast(a, elem, shape));
    }
    let operand = match x {
        Tensor::U64(a) if prim == Prim::UnitFromBits => {
            return Tensor::F32(map1(&a, shape, unit_from_bits))
        }
        Tensor::Bool(a) if prim == Prim::Not => {
            return Tensor::Bool(map1_same(a, shape, |b: bool| !b))
        }
        x => match with_tensor!(x, a => unary_kernel(prim, a, shape)) {
            Ok(res) => return res,
            Err(x) => x,
        },
    };
    generic_unary(prim, &operand, shape)
}

fn binary(prim: Prim, x: Tensor, y: Tensor, shape: &[usize]) -> Tensor {
    // The one family with operands of two types (`show_<format>(x, k)`, `k` an `i64`) takes
    // the generic path; every other binary primitive has one operand type.
    if let Family::Text(_) = prim.family() {
        return generic_positional(prim, &x, &y, shape);
    }
    match x {
        Tensor::U64(a) if prim == Prim::Threefry2x32 => {
            Tensor::U64(map2_same(a, take_same(y, prim), shape, threefry2x32))
        }
        Tensor::Bool(a) if prim == Prim::And => {
            Tensor::Bool(map2_same(a, take_same(y, prim), shape, |p, q| p && q))
        }
        Tensor::Bool(a) if prim == Prim::Or => {
            Tensor::Bool(map2_same(a, take_same(y, prim), shape, |p, q| p || q))
        }
        x => with_tensor!(x, a => binary_kernel(prim, a, y, shape)),
    }
}

fn ternary(prim: Prim, c: &Tensor, x: &Tensor, y: &Tensor, shape: &[usize]) -> Tensor {
    // `select` is the one ternary primitive (`prim`'s lift tables leave it to the engine).
    if let (Prim::Select, Tensor::Bool(c)) = (prim, c) {
        return select(c, x, y, shape);
    }
    generic_ternary(prim, c, x, y, shape)
}

/// `select(c, x, y)`: `x` where `c`, else `y`.
pub fn select(c: &Nd<bool>, x: &Tensor, y: &Tensor, shape: &[usize]) -> Tensor {
    fn typed<T: Element + Blend>(c: &Nd<bool>, a: &Nd<T>, y: &Tensor, shape: &[usize]) -> Tensor {
        let b = same::<T>(y, Prim::Select);
        T::into_tensor(map3(c, a, b, shape, T::blend))
    }
    with_tensor!(x, a => typed(c, a, y, shape))
}

/// `cast_<elem>` (`prim::Cast`, `prim/convert.rs`).
fn cast<A: Element>(a: &Nd<A>, elem: Elem, shape: &[usize]) -> Tensor {
    with_elem_type!(elem, R => R::into_tensor(map1(a, shape, R::cast_from)))
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
