//! The scatter's statement rules (`Operation::expand`, run by `passes::simplify`): exact
//! rewrites of a scatter into other statements. A scatter of a scatter whose index function
//! returns its own parameters first is one scatter (`of_scatter`: the transpose of a read
//! through a pair index set, `x[i][j]`, with no one-hot rows materialised); a scatter of each
//! point to the row-major digits of its own index is a `reshape` (`as_reshape`); a scatter that
//! sends each parameter, negated or shifted, to a coordinate of its own is a `gather` by the
//! inverse, its other parameters summed (`as_gather`: the gradients of `reverse`, `slice`,
//! shifts, stencils). Each gives the same bits as the scatter (+0.0 added for floats, which the
//! scatter's additions into zeros give too).

use std::collections::HashMap;

use super::{pivots, Pivot, Solved};
use crate::core::digits;
use crate::core::inline;
use crate::core::ir::{
    ArrTy, Atom, Block, Elem, Expr, Gather, PrimApp, Program, Replicate, Reshape, Scalar, Scatter,
    Stmt, SumOuter, VarId,
};
use crate::core::kernel::Affine;
use crate::ops::rewrite::{Expand, Expansion, Rule};
use crate::ops::StraightLine;
use crate::prim::Prim;

/// The scatter rules in order: a scatter of a scatter is composed first, and the result (or
/// the scatter itself) may then be a reshape or a gather.
pub(super) fn expand(cx: &mut Expand, scatter: &Scatter, stmt: &Stmt) -> Option<Expansion> {
    let composed = of_scatter(cx.program, scatter, cx.defs);
    if composed.is_some() {
        cx.fire(Rule::ScatterOfScatter);
    }
    let current = composed.as_ref().unwrap_or(scatter);
    if let [binder] = stmt.binders[..] {
        if let Some(stmts) = as_reshape(cx.program, current, binder) {
            cx.fire(Rule::ScatterAsReshape);
            return Some(Expansion::Stmts(stmts));
        }
        if let Some(stmts) = as_gather(cx.program, current, binder) {
            cx.fire(Rule::ScatterAsGather);
            return Some(Expansion::Stmts(stmts));
        }
    }
    composed.map(|scatter| Expansion::Expr(Expr::from(scatter)))
}

/// `scatter S2 (scatter S1 v f) g` as one scatter of `v`, when `f` returns its own
/// parameters first (`\i… -> i…, f' i…`) and `S1` starts with `v`'s leading axes: then `f`
/// is one-to-one and keeps the order of the rows `g` moves, so every element of the result
/// adds the same non-zero values in the same order (scatters add in increasing point order),
/// the composed one without the +0 terms of the rows' other elements, which change no sum
/// that starts from +0 (such a sum is never -0). A coordinate `f'` gives out of range is out
/// of range of the same axes of `S2` (they pass through `g`), so both drop it. This is the
/// transpose of reading `x[i, j]` as a row `x[i]` then its element `j` (a table indexed by
/// pairs): without it the rows' cotangent, `[n, m]` for `n` points, is materialised.
fn of_scatter(
    program: &mut Program,
    scatter: &Scatter,
    defs: &HashMap<VarId, Expr>,
) -> Option<Scatter> {
    let Scatter {
        shape,
        array: Atom::Var(inner),
        body: outer,
    } = scatter
    else {
        return None;
    };
    let Some(Expr::Scatter(Scatter {
        shape: inner_shape,
        array: source,
        body: inner_body,
    })) = defs.get(inner)
    else {
        return None;
    };
    let (outer, inner_body) = (*outer, *inner_body);
    let rows = program.blocks[outer].params.len();
    let block = &program.blocks[inner_body];
    let source_shape = program.atom_ty(source).shape;
    let own_params_first = block.params.len() == rows
        && block.results.len() >= rows
        && (block.params.iter().zip(&block.results))
            .all(|(&param, &result)| result == Atom::Var(param))
        && inner_shape.get(..rows) == source_shape.get(..rows);
    if !own_params_first {
        return None;
    }
    let mut subst = HashMap::new();
    let composed = inline::clone_block(program, inner_body, &mut subst);
    let params = program.blocks[composed].params.clone();
    let outer_block = program.blocks[outer].clone();
    let mut subst: HashMap<VarId, Atom> = (outer_block.params.iter().zip(&params))
        .map(|(&param, &new)| (param, Atom::Var(new)))
        .collect();
    inline::copy_stmts(program, &outer_block.stmts, composed, &mut subst);
    let moved = outer_block
        .results
        .iter()
        .map(|&atom| inline::rename(atom, &subst));
    let kept = program.blocks[composed].results[rows..].to_vec();
    program.blocks[composed].results = moved.chain(kept).collect();
    Some(Scatter {
        shape: shape.clone(),
        array: *source,
        body: composed,
    })
}

/// `scatter [r, c] v (\\i -> idiv i c, mod i c)` (the first possibly `mod r` too, any number
/// of axes, casts that keep the values) of the `r·c` points of `v`: every point goes to the
/// row-major digits of its own index (Note [Row-major digits] in `core::digits`), once, so
/// the scatter is `reshape [r, c] v`, plus +0.0 for floats (the scatter adds each value to
/// +0, which turns -0 into +0). What the gradients through a pair index set and `concat`
/// scatter.
fn as_reshape(program: &mut Program, scatter: &Scatter, binder: VarId) -> Option<Vec<Stmt>> {
    let Scatter { shape, array, body } = scatter;
    let block = &program.blocks[*body];
    let [param] = block.params[..] else {
        return None;
    };
    let source = program.atom_ty(array);
    let digits = &block.results;
    let points: usize = shape.get(..digits.len())?.iter().product();
    if source.shape.first() != Some(&points) || source.shape[1..] != shape[digits.len()..] {
        return None;
    }
    let defs: HashMap<VarId, &Expr> = (block.stmts.iter())
        .filter_map(|stmt| Some((*stmt.binders.first()?, &stmt.expr)))
        .collect();
    let highest = i64::try_from(points).ok()? - 1;
    let view = |atom: Atom| match atom {
        Atom::Var(var) if var == param => digits::Step::Base {
            base: (),
            low: 0,
            high: highest,
        },
        Atom::Var(var) => match defs.get(&var) {
            Some(expr) => match crate::ops::straight_line(expr) {
                Some(StraightLine::Apply(prim, args)) => {
                    digits::Step::of_prim(prim, args, |by| by.int_literal())
                }
                _ => digits::Step::Opaque,
            },
            None => digits::Step::Opaque,
        },
        Atom::Lit(_) => digits::Step::Opaque,
    };
    digits::row_major_offset(digits, &shape[..digits.len()], view)?;
    let reshape = Expr::from(Reshape {
        shape: shape.clone(),
        array: *array,
    });
    plus_zero(program, binder, reshape, "reshape")
}

/// `binder = expr`, which stands for a scatter into zeros that receives each of its
/// elements at most once: for floats `binder = expr + 0.0` (the scatter adds each value to
/// +0, which turns -0 into +0), with the +0.0 a replicated literal (a broadcast, which
/// fuse never materialises); for integers `binder = expr`.
fn plus_zero(program: &mut Program, binder: VarId, expr: Expr, hint: &str) -> Option<Vec<Stmt>> {
    let ty = program.var_ty(binder).clone();
    let zero = match ty.elem {
        Elem::F32 => Scalar::F32(0.0),
        Elem::F64 => Scalar::F64(0.0),
        elem if elem.is_integer() => {
            return Some(vec![Stmt {
                binders: vec![binder],
                expr,
            }]);
        }
        _ => return None,
    };
    let value = program.new_var(ty.clone(), hint);
    let mut stmts = vec![Stmt {
        binders: vec![value],
        expr,
    }];
    let mut zeros = Atom::Lit(zero);
    for axis in (0..ty.shape.len()).rev() {
        let zeros_ty = ArrTy {
            shape: ty.shape[axis..].to_vec(),
            elem: ty.elem,
        };
        let var = program.new_var(zeros_ty, "zeros");
        stmts.push(Stmt {
            binders: vec![var],
            expr: Expr::from(Replicate {
                count: ty.shape[axis],
                array: zeros,
            }),
        });
        zeros = Atom::Var(var);
    }
    stmts.push(Stmt {
        binders: vec![binder],
        expr: Expr::from(PrimApp(Prim::Add, vec![Atom::Var(value), zeros])),
    });
    Some(stmts)
}

/// A scatter whose index function sends each parameter, negated or not and shifted, to its
/// own coordinate of the target (`scatter [n] v (\\i -> n - 1 - i)`, the gradient of
/// `reverse`, `slice` and shifted reads), exactly (Note [Index arithmetic] in
/// `passes::fuse`: no step wraps), is a gather by the inverse function,
/// `gather [n] v (\\j -> n - 1 - j)`, plus +0.0 for floats: each target element receives at
/// most one point, the one the inverse finds, and where that point is outside `v` (or the
/// target outside the scatter) both give zero. Fuse pulls the gather into its reader as an
/// affine read; the scatter ran point by point. So is a rotation, `(i + c) mod p` with
/// the param's range and the target's axis no longer than `p` (the gradient of a ring's
/// neighbour, `x[(i + 1) mod n]`): its inverse is `(j - c) mod p`, computed as
/// `(j + (-c mod p)) mod p` or `((c mod p) + p - j) mod p` so that it is never negative
/// (Note [Wrapped reads] in `passes::fuse`).
///
/// Where a coordinate also adds other params (`x[i + a]` read for every `i` and `a`: every
/// stencil and convolution), those are summed (`pivots`): the scatter of
/// `v: [n, k]` by `\\i a -> i + a` is `sum_outer (gather [k, m] v (\\a j -> j - a, a))`,
/// each target the sum of the points that land on it, read where they are rather than added
/// where they go. The gather has a point for every target and summed value, so the rule
/// applies only where that is at most twice the scatter's own work (target and source).
fn as_gather(program: &mut Program, scatter: &Scatter, binder: VarId) -> Option<Vec<Stmt>> {
    let Scatter { shape, array, body } = scatter;
    let source = program.atom_ty(array);
    let points = source.shape.get(..program.blocks[*body].params.len())?;
    let solved = pivots(program, *body, points)?;
    let pivots: Vec<(usize, &Pivot)> = (solved.iter().enumerate())
        .filter_map(|(result, solved)| match solved {
            Solved::Pivot(pivot) => Some((result, pivot)),
            Solved::Fixed(_) => None,
        })
        .collect();
    let fits = |&(result, pivot): &(usize, &Pivot)| {
        (pivot.period).is_none_or(|period| shape[result] as i64 <= period)
    };
    if !pivots.iter().all(fits) {
        return None;
    }
    let summed: Vec<usize> = (0..points.len())
        .filter(|&param| pivots.iter().all(|(_, pivot)| pivot.param != param))
        .collect();
    let target: usize = shape[..solved.len()].iter().product();
    let summed_points: usize = summed.iter().map(|&param| points[param]).product();
    let source_points: usize = points.iter().product();
    if !summed.is_empty() && summed_points * target > 2 * (target + source_points) {
        return None;
    }
    let fixed = (solved.iter()).any(|solved| matches!(solved, Solved::Fixed(_)));
    let off = match fixed {
        true => Some(OffTarget::of(&solved, &summed, shape, points)?),
        false => None,
    };
    let index = ArrTy {
        shape: Vec::new(),
        elem: Elem::I64,
    };
    let new_index = |program: &mut Program, hint| program.new_var(index.clone(), hint);
    let summed_params: Vec<VarId> = summed.iter().map(|_| new_index(program, "a")).collect();
    let target_params: Vec<VarId> = solved.iter().map(|_| new_index(program, "j")).collect();
    let mut stmts = Vec::new();
    let mut emit = |program: &mut Program, prim: Prim, operands: Vec<Atom>| {
        let var = new_index(program, "i");
        stmts.push(Stmt {
            binders: vec![var],
            expr: Expr::from(PrimApp(prim, operands)),
        });
        Atom::Var(var)
    };
    let int = |value: i64| Atom::Lit(Scalar::I64(value));
    let summed_atom = |param: usize| {
        let position = summed.iter().position(|&other| other == param);
        Atom::Var(summed_params[position.expect("a param that is no pivot is summed")])
    };
    let mut results: Vec<Option<Atom>> = (0..points.len())
        .map(|param| summed.contains(&param).then(|| summed_atom(param)))
        .collect();
    for &(result, pivot) in &pivots {
        let j = Atom::Var(target_params[result]);
        let (sign, constant) = (pivot.sign, pivot.constant);
        results[pivot.param] = Some(match pivot.period {
            // `i = sign * (j - constant - Σ coeff * a)`.
            None => {
                let mut terms = vec![(j, sign)];
                for &(param, coeff) in &pivot.summed {
                    terms.push((summed_atom(param), -sign * coeff));
                }
                linear(program, &mut emit, -sign * constant, terms)
            }
            Some(period) if sign == 1 => {
                let shifted = emit(
                    program,
                    Prim::Add,
                    vec![j, int((-constant).rem_euclid(period))],
                );
                emit(program, Prim::Mod, vec![shifted, int(period)])
            }
            Some(period) => {
                let turned = emit(
                    program,
                    Prim::Sub,
                    vec![int(constant.rem_euclid(period) + period), j],
                );
                emit(program, Prim::Mod, vec![turned, int(period)])
            }
        });
    }
    if let Some(off) = off {
        // Note [Constant targets]: the first coordinate leaves its axis off the targets.
        let first = results[0].take().expect("a param is a pivot or summed");
        let terms = (off.weights.into_iter())
            .map(|(result, weight)| (Atom::Var(target_params[result]), weight))
            .collect();
        let off = linear(program, &mut emit, off.constant, terms);
        results[0] = Some(emit(program, Prim::Add, vec![first, off]));
    }
    let body = program.blocks.push(Block {
        params: summed_params
            .iter()
            .chain(&target_params)
            .copied()
            .collect(),
        stmts,
        results: (results.into_iter())
            .map(|result| result.expect("every param is a pivot or summed"))
            .collect(),
    });
    let elem = program.var_ty(binder).elem;
    let mut gather_shape: Vec<usize> = summed.iter().map(|&param| points[param]).collect();
    gather_shape.extend(shape);
    let mut expr = Expr::from(Gather {
        shape: gather_shape.clone(),
        array: *array,
        body,
    });
    // One `sum_outer` per summed param, outermost first.
    let mut prefix = Vec::new();
    for axis in 0..summed.len() {
        let var = program.new_var(ArrTy::new(gather_shape[axis..].to_vec(), elem), "gather");
        prefix.push(Stmt {
            binders: vec![var],
            expr,
        });
        expr = Expr::from(SumOuter(Atom::Var(var)));
    }
    prefix.extend(plus_zero(program, binder, expr, "gather")?);
    Some(prefix)
}

// Note [Constant targets]
// ~~~~~~~~~~~~~~~~~~~~~~~
// The transpose of reading `w[l, 0, k]` scatters the cotangent into the targets whose axis 1
// is 0, `scatter [L, G, B] ct (\l -> l, 0)`: a bulk step a time, into zeros. As a gather,
// the target `[l, g, k]` reads `ct[l, k]` where `g = 0` and nothing elsewhere. The gather's
// first source coordinate `i` gets a term that is zero at the constant targets and takes it
// off its axis elsewhere: `i + M · D`, where `D = Σ_r B_r · (j_r − c_r)` over the constant
// coordinates `c_r` (target axes of `R_r` elements) is a balanced mixed-radix number
// (`B_0 = 1`, `B_{r+1} = B_r · (2 R_r − 1)`, each offset within `±(R_r − 1)`), zero only
// where every offset is, and `M = max(p − low, high + 1)` for the `low..=high` that `i`
// takes on an axis of `p` elements, so that `i + M · D` is outside `0..p` for every `D ≠ 0`.
// (A constant outside its axis receives nothing: that scatter stays.) The coordinate is
// still affine, so fuse reads it as a masked affine coordinate and the gather joins its
// reader: lstm's gradient scattered each gate's weight cotangent into `[L, 4, B]` zeros,
// four bulk steps a step of its loop, now reads of the kernel that adds them.

/// The term that takes a gather's first source coordinate off its axis at every target
/// but the constant ones of a scatter (Note [Constant targets]): `constant + Σ weight · j`
/// over the target params `j` of the constant coordinates, `(result, weight)`.
struct OffTarget {
    constant: i64,
    weights: Vec<(usize, i64)>,
}

impl OffTarget {
    /// For a scatter into `shape` of `points` solved as `solved`, with `summed` params;
    /// `None` when a constant is outside its axis (every point is dropped) or a number
    /// overflows.
    fn of(solved: &[Solved], summed: &[usize], shape: &[usize], points: &[usize]) -> Option<Self> {
        let extent = i64::try_from(*points.first()?).ok()?;
        let (low, high) = first_coordinate_bounds(solved, summed, shape, points)?;
        let scale = (extent.checked_sub(low)?).max(high.checked_add(1)?);
        let mut radix = 1i64;
        let mut off = OffTarget {
            constant: 0,
            weights: Vec::new(),
        };
        for (result, solved) in solved.iter().enumerate() {
            let Solved::Fixed(constant) = *solved else {
                continue;
            };
            let size = i64::try_from(shape[result]).ok()?;
            if !(0..size).contains(&constant) {
                return None;
            }
            let weight = scale.checked_mul(radix)?;
            off.constant = off.constant.checked_sub(weight.checked_mul(constant)?)?;
            off.weights.push((result, weight));
            radix = radix.checked_mul(2 * size - 1)?;
        }
        Some(off)
    }
}

/// The least and greatest values of the first source coordinate (param 0) of the gather a
/// scatter becomes: its own range where it is summed, the period's where it is a rotation,
/// else those of `sign * (j - constant - Σ coeff * a)` over the target `j` and the summed `a`.
fn first_coordinate_bounds(
    solved: &[Solved],
    summed: &[usize],
    shape: &[usize],
    points: &[usize],
) -> Option<(i64, i64)> {
    if summed.contains(&0) {
        return Some((0, i64::try_from(*points.first()?).ok()? - 1));
    }
    let (result, pivot) =
        (solved.iter().enumerate()).find_map(|(result, solved)| match solved {
            Solved::Pivot(pivot) if pivot.param == 0 => Some((result, pivot)),
            _ => None,
        })?;
    if let Some(period) = pivot.period {
        return Some((0, period - 1));
    }
    let mut sizes = vec![shape[result]];
    let mut terms = vec![(0, pivot.sign)];
    for (axis, &(param, coeff)) in pivot.summed.iter().enumerate() {
        sizes.push(points[param]);
        terms.push((axis + 1, -pivot.sign * coeff));
    }
    let constant = pivot.sign.checked_mul(pivot.constant)?.checked_neg()?;
    Affine { constant, terms }.bounds(&sizes)
}

/// `constant + Σ coeff * atom` in index arithmetic, emitted by `emit`: sums first, then
/// differences, so that no step negates.
fn linear(
    program: &mut Program,
    emit: &mut impl FnMut(&mut Program, Prim, Vec<Atom>) -> Atom,
    constant: i64,
    terms: Vec<(Atom, i64)>,
) -> Atom {
    let int = |value: i64| Atom::Lit(Scalar::I64(value));
    let mut acc: Option<Atom> = None;
    let (plus, minus): (Vec<_>, Vec<_>) = terms.into_iter().partition(|&(_, coeff)| coeff > 0);
    for (atom, coeff) in plus {
        let term = match coeff {
            1 => atom,
            _ => emit(program, Prim::Mul, vec![atom, int(coeff)]),
        };
        acc = Some(match acc {
            Some(acc) => emit(program, Prim::Add, vec![acc, term]),
            None => term,
        });
    }
    let mut constant = constant;
    for (atom, coeff) in minus {
        let term = match coeff {
            -1 => atom,
            _ => emit(program, Prim::Mul, vec![atom, int(-coeff)]),
        };
        let base = acc.unwrap_or_else(|| int(std::mem::take(&mut constant)));
        acc = Some(emit(program, Prim::Sub, vec![base, term]));
    }
    match (acc, constant) {
        (None, constant) => int(constant),
        (Some(acc), 0) => acc,
        (Some(acc), constant) if constant > 0 => emit(program, Prim::Add, vec![acc, int(constant)]),
        (Some(acc), constant) => emit(program, Prim::Sub, vec![acc, int(-constant)]),
    }
}
