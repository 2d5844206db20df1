//! The row-major digits of one flat offset, recognised once for the passes that use them
//! (Note [Row-major digits]).

// Note [Row-major digits]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A table indexed by a pair index set, `for rc:(R, C). xs[fst rc, snd rc]`, the prelude's
// `concat`, and their gradients index an array of shape `[.., R, C, ..]` by the digits of
// one flat position `k`: `[k idiv C, k mod C]` (the first sometimes `mod R` too), often
// through casts (`cast_u32`, `cast_i64`) of the index-set representation. When `k` is
// non-negative and below `R·C`, and every cast keeps all of `k`'s values, the element
// addressed is the one at row-major offset `k` within those axes: the axes act as one axis
// of length `R·C`. Two passes use this: `exec` reads such a gather as one affine run, and
// `simp` turns a scatter of each point to the digits of its own index into a `reshape`.
//
// Both recognise the digits here, over their own IR, through a view of its nodes (`Step`).

use crate::core::ir::Elem;
use crate::prim::Prim;

/// What a node of the index computation is, as far as its digits go.
pub enum Step<N, B> {
    /// A base value `k` (an affine function of a kernel's coordinates, a scatter's parameter)
    /// with every value in `low..=high`.
    Base { base: B, low: i64, high: i64 },
    /// A cast of `N` to `Elem`.
    Cast(Elem, N),
    /// `idiv N by` for a constant `by`.
    IDiv(N, i64),
    /// `mod N by` for a constant `by`.
    Mod(N, i64),
    /// Anything else.
    Opaque,
}

impl<N: Copy, B> Step<N, B> {
    /// The step of `prim` applied to `operands` (not a base): a cast, or `idiv`/`mod` by an
    /// operand whose value `constant` knows.
    pub fn of_prim(prim: Prim, operands: &[N], constant: impl Fn(N) -> Option<i64>) -> Self {
        match (prim, operands) {
            (Prim::Cast(elem), &[operand]) => Step::Cast(elem, operand),
            (Prim::IDiv | Prim::Mod, &[operand, by]) => match constant(by) {
                Some(by) if prim == Prim::IDiv => Step::IDiv(operand, by),
                Some(by) => Step::Mod(operand, by),
                None => Step::Opaque,
            },
            _ => Step::Opaque,
        }
    }
}

/// `(base idiv divisor) mod modulus` (no modulus: the quotient) of a non-negative base.
struct Digit<B> {
    base: B,
    high: i64,
    divisor: i64,
    modulus: Option<i64>,
}

/// `node` as a digit of a non-negative base, with every value on the way kept by its casts
/// (all are at most the base's greatest value).
fn digit<N: Copy, B>(node: N, view: &impl Fn(N) -> Step<N, B>) -> Option<Digit<B>> {
    match view(node) {
        Step::Base { base, low, high } => (low >= 0).then_some(Digit {
            base,
            high,
            divisor: 1,
            modulus: None,
        }),
        Step::Cast(elem, operand) => {
            let found = digit(operand, view)?;
            let (_, greatest) = elem.int_range()?;
            (found.high <= greatest).then_some(found)
        }
        Step::IDiv(operand, by) if by > 0 => {
            let found = digit(operand, view).filter(|found| found.modulus.is_none())?;
            Some(Digit {
                divisor: found.divisor.checked_mul(by)?,
                ..found
            })
        }
        Step::Mod(operand, by) if by > 0 => {
            let found = digit(operand, view).filter(|found| found.modulus.is_none())?;
            Some(Digit {
                modulus: Some(by),
                ..found
            })
        }
        _ => None,
    }
}

/// The base `k` whose row-major digits within axes of lengths `dims` are `digits` (one node
/// per axis, outermost first), when they are (Note [Row-major digits]): each is
/// `(k idiv d) mod m` of the same `k`, with `d` the product of the later lengths and `m` its
/// own (or no `mod` on the first), and `k` in `0..` the product of all of them.
pub fn row_major_offset<N: Copy, B: PartialEq>(
    digits: &[N],
    dims: &[usize],
    view: impl Fn(N) -> Step<N, B>,
) -> Option<B> {
    if digits.is_empty() || digits.len() != dims.len() {
        return None;
    }
    let mut flat: Option<Digit<B>> = None;
    let mut divisor = 1i64;
    for (axis, (&node, &dim)) in digits.iter().zip(dims).enumerate().rev() {
        let dim = i64::try_from(dim).ok()?;
        let found = digit(node, &view)?;
        let modulus_ok = match found.modulus {
            Some(modulus) => modulus == dim,
            None => axis == 0,
        };
        if found.divisor != divisor || !modulus_ok {
            return None;
        }
        match &flat {
            Some(first) if first.base != found.base => return None,
            Some(_) => {}
            None => flat = Some(found),
        }
        divisor = divisor.checked_mul(dim)?;
    }
    // `divisor` is now the product of all the lengths.
    let flat = flat?;
    (flat.high < divisor).then_some(flat.base)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny index language: node i of `nodes`.
    #[derive(Clone, Copy)]
    enum T {
        K(i64, i64),
        Cast(Elem, usize),
        IDiv(usize, i64),
        Mod(usize, i64),
        Other,
    }

    fn offset(nodes: &[T], digits: &[usize], dims: &[usize]) -> Option<()> {
        row_major_offset(digits, dims, |n: usize| match nodes[n] {
            T::K(low, high) => Step::Base {
                base: (),
                low,
                high,
            },
            T::Cast(elem, of) => Step::Cast(elem, of),
            T::IDiv(of, by) => Step::IDiv(of, by),
            T::Mod(of, by) => Step::Mod(of, by),
            T::Other => Step::Opaque,
        })
    }

    #[test]
    fn pair_digits_are_one_offset() {
        use T::*;
        // k in 0..12; [k idiv 4, k mod 4] over [3, 4].
        let nodes = [K(0, 11), IDiv(0, 4), Mod(0, 4), Mod(1, 3)];
        assert!(offset(&nodes, &[1, 2], &[3, 4]).is_some());
        assert!(
            offset(&nodes, &[3, 2], &[3, 4]).is_some(),
            "a mod on the first"
        );
        assert!(offset(&nodes, &[2, 1], &[3, 4]).is_none(), "digits swapped");
        assert!(offset(&nodes, &[1, 2], &[4, 3]).is_none(), "wrong lengths");
        assert!(
            offset(&nodes, &[1], &[3]).is_none(),
            "a quotient is not the base"
        );
        assert!(
            offset(&nodes, &[0], &[12]).is_some(),
            "one axis: the base itself"
        );
        assert!(offset(&nodes, &[0], &[11]).is_none(), "k reaches 11");
    }

    #[test]
    fn bounds_and_casts_must_keep_the_values() {
        use T::*;
        let ok = [
            K(0, 11),
            Cast(Elem::U32, 0),
            IDiv(1, 4),
            Mod(1, 4),
            Cast(Elem::I64, 3),
        ];
        assert!(offset(&ok, &[2, 4], &[3, 4]).is_some());
        let negative = [K(-1, 10), IDiv(0, 4), Mod(0, 4)];
        assert!(offset(&negative, &[1, 2], &[3, 4]).is_none());
        let too_big = [K(0, 12), IDiv(0, 4), Mod(0, 4)];
        assert!(offset(&too_big, &[1, 2], &[3, 4]).is_none());
        let narrowed = [
            K(0, (1 << 40) - 1),
            Cast(Elem::I32, 0),
            IDiv(1, 1 << 20),
            Mod(1, 1 << 20),
        ];
        assert!(offset(&narrowed, &[2, 3], &[1 << 20, 1 << 20]).is_none());
        let other = [K(0, 11), Other, IDiv(1, 4), Mod(0, 4)];
        assert!(offset(&other, &[2, 3], &[3, 4]).is_none());
        let nested_mod = [K(0, 11), Mod(0, 4), Mod(1, 4)];
        assert!(offset(&nested_mod, &[2, 1], &[3, 4]).is_none());
    }
}
