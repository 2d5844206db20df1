//! The monoid operations (`reduce`, `assoc_scan`, `assoc_scan_right`) as StableHLO of depth
//! O(log n) in the length n of the outer axis, with the operator applied elementwise to whole
//! arrays (its scalar statements lifted to tensors, as for any elementwise primitive):
//!
//! - `reduce` with a commutative operator (`is_commutative`, a symbolic check) →
//!   `stablehlo.reduce` over axis 0, the operator as its body, one operand per component.
//!   XLA combines the elements in any order and may use the initial value any number of
//!   times, so the initial value must be an identity; dx's `e` need not be one (it is used only
//!   for an empty array, Note [Monoid order] in `ops/monoid/mod.rs`, and the prelude's `argmax`
//!   passes `xs[0]`). When each component is a known monoid (`add`, `mul`, `max`, `min`, `and`,
//!   `or` of the component's two operands) its identity is the initial value; otherwise every
//!   element is paired with a `True` flag and the reduction starts from a `False` one (the flag
//!   makes any commutative semigroup a monoid: an unflagged operand is skipped).
//! - `reduce` with an operator that is not (or not seen to be) commutative: a tree, adjacent
//!   pairs combined with strided `stablehlo.slice`s until one row is left (an odd row out is
//!   carried to the next level at the end).
//! - `assoc_scan`: the odd/even recursion of JAX's `lax.associative_scan`: combine adjacent
//!   pairs, scan the half-size array (giving the inclusive prefixes at the odd positions),
//!   combine those with the elements at the even positions, interleave. Its ⌈log₂ n⌉ levels
//!   are unrolled at export time, n being static; the work is O(n).
//! - `assoc_scan_right`: `stablehlo.reverse`, the scan with the operator's operands swapped,
//!   `stablehlo.reverse`.
//!
//! `e` is used only for an empty array, where `reduce` gives it and the scans give the empty
//! array: the results agree with dx's at every length, up to the rounding of a different
//! association for float operators (exact operators, integer `add` or affine maps, agree
//! exactly). No monoid statement is exported as a sequential loop.
//!
//! Not handled: a monoid statement inside an index function (an `ExportError`, as for every
//! non-elementwise statement there). A `reduce` or `assoc_scan` whose elements are tables
//! never reaches here: lowering makes it a sequential `fold`/`scan` (`lower_monoid_sequential`
//! in `passes/lower.rs`), which is exported as a `stablehlo.while`.

use std::collections::HashMap;

use crate::core::ir::{ArrTy, Atom, BlockId, Elem, Monoid, MonoidKind, Program, Scalar};
use crate::ops::hlo::{self, i64_array, Exported, StableHlo, Val};
use crate::ops::{straight_line, StraightLine};
use crate::prim::{ArgumentOrder, Prim};

/// Whether `op` (a monoid operator: params the k left then the k right scalar operands)
/// gives the same results with its left and right operands swapped.
///
/// Decided symbolically and conservatively: the results are evaluated as a hash-consed DAG
/// over the params, once as they are and once with left and right swapped, with the
/// arguments of commutative primitives sorted (and `a > b` read as `b < a`); the operator is
/// commutative if both give the same result nodes. `max` and `min` are commutative (dx's
/// propagate NaN from either side), a `select` is not (so an argmax that prefers the left
/// element on ties is not).
pub fn is_commutative(program: &Program, op: BlockId) -> bool {
    let mut dag = Dag::default();
    match (
        dag.results(program, op, false),
        dag.results(program, op, true),
    ) {
        (Some(straight), Some(swapped)) => straight == swapped,
        _ => false,
    }
}

/// For an operator whose every result `i` is a primitive with a known identity applied to the
/// `i`-th left and right params (a product of `add`, `mul`, `max`, `min`, `and`, `or`
/// monoids): those identities.
fn identities(program: &Program, op: BlockId) -> Option<Vec<Scalar>> {
    let mut dag = Dag::default();
    let results = dag.results(program, op, false)?;
    let k = results.len();
    let block = &program.blocks[op];
    results
        .iter()
        .enumerate()
        .map(|(comp, &res)| {
            let left = dag.intern(Node::Param(comp));
            let right = dag.intern(Node::Param(k + comp));
            let Node::Prim(prim, args) = &dag.nodes[res] else {
                return None;
            };
            let operands = [left.min(right), left.max(right)];
            if args.as_slice() != operands {
                return None;
            }
            prim.identity(program.var_ty(block.params[comp]).elem)
        })
        .collect()
}

/// A node of an operator's symbolic form.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Node {
    /// The operator's `i`-th param.
    Param(usize),
    /// A literal: its type and bits.
    Lit(Elem, u64),
    /// A primitive applied to nodes (their ids; sorted for a commutative primitive).
    Prim(Prim, Vec<usize>),
}

/// A hash-consed DAG: equal nodes have equal ids.
#[derive(Default)]
struct Dag {
    nodes: Vec<Node>,
    ids: HashMap<Node, usize>,
}

impl Dag {
    fn intern(&mut self, node: Node) -> usize {
        if let Some(&id) = self.ids.get(&node) {
            return id;
        }
        self.nodes.push(node.clone());
        self.ids.insert(node, self.nodes.len() - 1);
        self.nodes.len() - 1
    }

    fn prim(&mut self, prim: Prim, mut args: Vec<usize>) -> usize {
        let prim = match prim.argument_order() {
            ArgumentOrder::Any => {
                args.sort_unstable();
                prim
            }
            ArgumentOrder::Mirror(mirror) => {
                args.reverse();
                mirror
            }
            ArgumentOrder::Fixed => prim,
        };
        self.intern(Node::Prim(prim, args))
    }

    /// The ids of `op`'s results, its left and right params swapped if `swapped`; `None` if
    /// the block is not straight-line code (the verifier rules that out for operators).
    fn results(&mut self, program: &Program, op: BlockId, swapped: bool) -> Option<Vec<usize>> {
        let block = &program.blocks[op];
        let n_params = block.params.len();
        let k = n_params / 2;
        let mut env: HashMap<_, usize> = HashMap::new();
        for (position, &param) in block.params.iter().enumerate() {
            let position = if swapped {
                (position + k) % n_params
            } else {
                position
            };
            env.insert(param, self.intern(Node::Param(position)));
        }
        let atom = |dag: &mut Dag, env: &HashMap<_, usize>, atom: &Atom| match atom {
            Atom::Var(var) => env.get(var).copied(),
            Atom::Lit(scalar) => Some(dag.intern(Node::Lit(scalar.elem(), scalar.bits()))),
        };
        for stmt in &block.stmts {
            let id = match (straight_line(&stmt.expr)?, stmt.binders.as_slice()) {
                (StraightLine::Apply(prim, args), [_]) => {
                    let args = args
                        .iter()
                        .map(|arg| atom(self, &env, arg))
                        .collect::<Option<Vec<_>>>()?;
                    self.prim(prim, args)
                }
                (StraightLine::Copy(arg), [_]) => atom(self, &env, &arg)?,
                _ => return None,
            };
            env.insert(stmt.binders[0], id);
        }
        block
            .results
            .iter()
            .map(|res| atom(self, &env, res))
            .collect()
    }
}

/// A monoid operator, with its operands swapped (`flipped`) for a right scan.
#[derive(Clone, Copy)]
struct Operator {
    block: BlockId,
    flipped: bool,
}

/// The results of a monoid statement.
pub(super) fn monoid(cx: &mut dyn StableHlo, monoid: &Monoid) -> Exported {
    let Monoid {
        kind,
        arrays,
        init,
        op,
    } = monoid;
    let (kind, op) = (*kind, *op);
    let xs = hlo::atoms(cx, arrays)?;
    let n = xs[0].ty.shape[0];
    let operator = Operator {
        block: op,
        flipped: false,
    };
    match kind {
        MonoidKind::Reduce if n == 0 => hlo::atoms(cx, init),
        MonoidKind::Reduce if is_commutative(cx.program(), op) => {
            match identities(cx.program(), op) {
                Some(identities) => reduce_from(cx, &xs, &identities, operator),
                None => reduce_flagged(cx, &xs, operator),
            }
        }
        MonoidKind::Reduce => reduce_tree(cx, xs, operator),
        MonoidKind::Scan => scan(cx, xs, operator),
        MonoidKind::ScanRight if n < 2 => Ok(xs),
        MonoidKind::ScanRight => {
            let reversed: Vec<Val> = xs.iter().map(|x| reverse_rows(cx, x)).collect();
            let flipped = Operator {
                flipped: true,
                ..operator
            };
            let scanned = scan(cx, reversed, flipped)?;
            Ok(scanned.iter().map(|y| reverse_rows(cx, y)).collect())
        }
    }
}

/// `left ⊙ right` elementwise on arrays of one shape.
fn combine(cx: &mut dyn StableHlo, operator: Operator, left: &[Val], right: &[Val]) -> Exported {
    let (first, second) = match operator.flipped {
        true => (right, left),
        false => (left, right),
    };
    let args: Vec<Val> = first.iter().chain(second).cloned().collect();
    let results = cx.block(operator.block, &args)?;
    // A result computed from literals alone is a scalar: broadcast it.
    let shape = left[0].ty.shape.clone();
    Ok(results
        .iter()
        .map(|res| cx.broadcast_trailing(res, &shape))
        .collect())
}

/// Writes the combination of accumulated and next scalars in a reduce's body.
type Combiner<'a> = dyn FnMut(&mut dyn StableHlo, &[Val], &[Val]) -> Exported + 'a;

/// `stablehlo.reduce` over axis 0 of `xs` from `inits` (an identity of the body), the body
/// written by `body` from the accumulated and the next scalars.
fn reduce_with(cx: &mut dyn StableHlo, xs: &[Val], inits: &[Val], body: &mut Combiner) -> Exported {
    let scalars: Vec<ArrTy> = xs.iter().map(|x| ArrTy::scalar(x.ty.elem)).collect();
    let params: Vec<ArrTy> = scalars.iter().chain(&scalars).cloned().collect();
    let region = cx.region(&params, &mut |cx, args| {
        let (left, right) = args.split_at(xs.len());
        body(cx, left, right)
    })?;
    let operands: Vec<&Val> = xs.iter().chain(inits).collect();
    let result_tys: Vec<ArrTy> = xs
        .iter()
        .map(|x| ArrTy::new(x.ty.shape[1..].to_vec(), x.ty.elem))
        .collect();
    Ok(cx.op_with_regions(
        "stablehlo.reduce",
        &operands,
        &format!("{{dimensions = {}}}", i64_array(&[0])),
        vec![region],
        result_tys,
    ))
}

/// A commutative reduce from the identities of its components.
fn reduce_from(
    cx: &mut dyn StableHlo,
    xs: &[Val],
    identities: &[Scalar],
    operator: Operator,
) -> Exported {
    let inits: Vec<Val> = identities
        .iter()
        .map(|scalar| cx.splat(*scalar, &[]))
        .collect();
    reduce_with(cx, xs, &inits, &mut |cx, left, right| {
        combine(cx, operator, left, right)
    })
}

/// A commutative reduce with no known identity: each element flagged `True`, the initial
/// value flagged `False`; `(a, f) ⊕ (b, g)` is `a ⊙ b` if both are flagged, else the
/// flagged one (the second if neither is), flagged `f ∨ g`.
fn reduce_flagged(cx: &mut dyn StableHlo, xs: &[Val], operator: Operator) -> Exported {
    let k = xs.len();
    let mut operands = xs.to_vec();
    operands.push(cx.splat(Scalar::Bool(true), &xs[0].ty.shape));
    let mut inits: Vec<Val> = xs
        .iter()
        .map(|x| cx.splat(Scalar::zero(x.ty.elem), &[]))
        .collect();
    inits.push(cx.splat(Scalar::Bool(false), &[]));
    let mut results = reduce_with(cx, &operands, &inits, &mut |cx, left, right| {
        let (left_flag, right_flag) = (&left[k], &right[k]);
        let combined = combine(cx, operator, &left[..k], &right[..k])?;
        let both = cx.binary("and", left_flag, right_flag);
        let mut res = Vec::with_capacity(k + 1);
        for comp in 0..k {
            let one = cx.select(left_flag, &left[comp], &right[comp]);
            res.push(cx.select(&both, &combined[comp], &one));
        }
        res.push(cx.binary("or", left_flag, right_flag));
        Ok(res)
    })?;
    results.truncate(k);
    Ok(results)
}

/// `x[2j] ⊙ x[2j+1]` for the ⌊n/2⌋ pairs of adjacent rows (an odd last row is left out).
fn combine_pairs(cx: &mut dyn StableHlo, xs: &[Val], operator: Operator) -> Exported {
    let paired = 2 * (xs[0].ty.shape[0] / 2);
    let evens: Vec<Val> = xs.iter().map(|x| rows(cx, x, 0, paired, 2)).collect();
    let odds: Vec<Val> = xs.iter().map(|x| rows(cx, x, 1, paired, 2)).collect();
    combine(cx, operator, &evens, &odds)
}

/// A reduce of n ≥ 1 rows in the operator's order: adjacent pairs combined level by level.
fn reduce_tree(cx: &mut dyn StableHlo, mut xs: Vec<Val>, operator: Operator) -> Exported {
    let mut n = xs[0].ty.shape[0];
    while n > 1 {
        let mut pairs = combine_pairs(cx, &xs, operator)?;
        if n % 2 == 1 {
            for (pair, x) in pairs.iter_mut().zip(&xs) {
                let last = rows(cx, x, n - 1, n, 1);
                *pair = concatenate(cx, &[pair, &last], 0);
            }
        }
        xs = pairs;
        n = n / 2 + n % 2;
    }
    Ok(xs
        .iter()
        .map(|x| {
            let ty = ArrTy::new(x.ty.shape[1..].to_vec(), x.ty.elem);
            cx.op("stablehlo.reshape", &[x], "", ty)
        })
        .collect())
}

/// The inclusive scan of `xs` along axis 0 (JAX's `associative_scan` scheme).
fn scan(cx: &mut dyn StableHlo, xs: Vec<Val>, operator: Operator) -> Exported {
    let n = xs[0].ty.shape[0];
    if n < 2 {
        return Ok(xs);
    }
    // y[2j+1] = x[0] ⊙ … ⊙ x[2j+1], the scan of the pairs x[2j] ⊙ x[2j+1].
    let pairs = combine_pairs(cx, &xs, operator)?;
    let odd_ys = scan(cx, pairs, operator)?;
    // y[0] = x[0], and y[2j] = y[2j−1] ⊙ x[2j] for the (n − 1) / 2 even positions after it.
    let n_later_evens = (n - 1) / 2;
    let mut even_ys: Vec<Val> = xs.iter().map(|x| rows(cx, x, 0, 1, 1)).collect();
    if n_later_evens > 0 {
        let before: Vec<Val> = odd_ys
            .iter()
            .map(|y| rows(cx, y, 0, n_later_evens, 1))
            .collect();
        let later: Vec<Val> = xs
            .iter()
            .map(|x| rows(cx, x, 2, 2 * n_later_evens + 1, 2))
            .collect();
        let later_ys = combine(cx, operator, &before, &later)?;
        for (even_y, later_y) in even_ys.iter_mut().zip(&later_ys) {
            *even_y = concatenate(cx, &[even_y, later_y], 0);
        }
    }
    Ok(even_ys
        .iter()
        .zip(&odd_ys)
        .map(|(even_y, odd_y)| interleave(cx, even_y, odd_y))
        .collect())
}

/// `[a₀, b₀, a₁, b₁, …]` from `evens = [a₀, a₁, …]` and `odds = [b₀, b₁, …]`, the evens one
/// row longer or as long: stacked along a new axis 1 and reshaped (exact: no arithmetic).
fn interleave(cx: &mut dyn StableHlo, evens: &Val, odds: &Val) -> Val {
    let half = odds.ty.shape[0];
    let rest = &odds.ty.shape[1..];
    let elem = odds.ty.elem;
    let column = |half: usize, width: usize| {
        let mut shape = vec![half, width];
        shape.extend_from_slice(rest);
        ArrTy::new(shape, elem)
    };
    let paired_evens = rows(cx, evens, 0, half, 1);
    let columns: Vec<Val> = [&paired_evens, odds]
        .iter()
        .map(|val| cx.op("stablehlo.reshape", &[val], "", column(half, 1)))
        .collect();
    let stacked = concatenate(cx, &[&columns[0], &columns[1]], 1);
    let mut shape = vec![2 * half];
    shape.extend_from_slice(rest);
    let flat = cx.op(
        "stablehlo.reshape",
        &[&stacked],
        "",
        ArrTy::new(shape, elem),
    );
    let n_evens = evens.ty.shape[0];
    if n_evens == half {
        return flat;
    }
    let last = rows(cx, evens, half, n_evens, 1);
    concatenate(cx, &[&flat, &last], 0)
}

/// Rows `start, start + stride, …` (below `limit`) of `val`.
fn rows(cx: &mut dyn StableHlo, val: &Val, start: usize, limit: usize, stride: usize) -> Val {
    let shape = &val.ty.shape;
    if start == 0 && limit == shape[0] && stride == 1 {
        return val.clone();
    }
    let rank = shape.len();
    let mut starts = vec![0; rank];
    starts[0] = start;
    let mut limits = shape.clone();
    limits[0] = limit;
    let mut strides = vec![1; rank];
    strides[0] = stride;
    let mut sliced = shape.clone();
    sliced[0] = (limit - start).div_ceil(stride);
    let attrs = format!(
        "{{limit_indices = {}, start_indices = {}, strides = {}}}",
        i64_array(&limits),
        i64_array(&starts),
        i64_array(&strides)
    );
    cx.op(
        "stablehlo.slice",
        &[val],
        &attrs,
        ArrTy::new(sliced, val.ty.elem),
    )
}

fn reverse_rows(cx: &mut dyn StableHlo, val: &Val) -> Val {
    let attrs = format!("{{dimensions = {}}}", i64_array(&[0]));
    cx.op("stablehlo.reverse", &[val], &attrs, val.ty.clone())
}

/// `vals` concatenated along `axis`.
fn concatenate(cx: &mut dyn StableHlo, vals: &[&Val], axis: usize) -> Val {
    let mut shape = vals[0].ty.shape.clone();
    shape[axis] = vals.iter().map(|val| val.ty.shape[axis]).sum();
    let ty = ArrTy::new(shape, vals[0].ty.elem);
    let attrs = format!("{{dimension = {axis} : i64}}");
    cx.op("stablehlo.concatenate", vals, &attrs, ty)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ir::Expr;
    use crate::core::parse::parse_program;
    use crate::export::tests::{monoid_program, ADD, AFFINE, LOGSUMEXP};

    /// The operator of the first monoid statement of a program.
    fn operator(text: &str) -> (Program, BlockId) {
        let program = parse_program(text).expect("the test program parses");
        let op = program.blocks[program.main]
            .stmts
            .iter()
            .find_map(|stmt| match stmt.expr {
                Expr::Monoid(Monoid { op, .. }) => Some(op),
                _ => None,
            })
            .expect("a monoid statement");
        (program, op)
    }

    /// Whether the operator `op` of a reduce over arrays of types `elems` is commutative.
    fn commutative(elems: &[&str], op: &str) -> bool {
        let (program, op) = operator(&monoid_program("reduce", 5, elems, op));
        is_commutative(&program, op)
    }

    #[test]
    fn add_max_and_logsumexp_are_commutative() {
        assert!(commutative(&["f32"], ADD));
        assert!(commutative(
            &["i64"],
            "(\\%2_a: []i64, %3_b: []i64 ->
               %4: []i64 = max %3_b %2_a
               in %4)"
        ));
        assert!(commutative(&["f32", "f32"], LOGSUMEXP));
    }

    #[test]
    fn affine_composition_and_a_left_preferring_argmax_are_not_commutative() {
        assert!(!commutative(&["i64", "i64"], AFFINE));
        // (v, i) ⊕ (w, j) = w > v ? (w, j) : (v, i): the left one on ties.
        assert!(!commutative(
            &["f32", "i64"],
            "(\\%4_v: []f32, %5_i: []i64, %6_w: []f32, %7_j: []i64 ->
               %8: []bool = gt %6_w %4_v
               %9: []f32 = select %8 %6_w %4_v
               %10: []i64 = select %8 %7_j %5_i
               in %9, %10)"
        ));
        // `a - b`, and the left operand itself.
        assert!(!commutative(
            &["f32"],
            "(\\%2_a: []f32, %3_b: []f32 ->
               %4: []f32 = sub %2_a %3_b
               in %4)"
        ));
        assert!(!commutative(
            &["f32"],
            "(\\%2_a: []f32, %3_b: []f32 ->
               %4: []f32 = %2_a
               in %4)"
        ));
    }

    #[test]
    fn a_comparison_is_read_in_either_direction() {
        // `(a > b ? 1 : 0) + (a < b ? 1 : 0)`: swapped, the two selects trade places only
        // when `b > a` is seen to be `a < b`.
        assert!(commutative(
            &["f32"],
            "(\\%2_a: []f32, %3_b: []f32 ->
               %4: []bool = gt %2_a %3_b
               %5: []f32 = select %4 1.0:f32 0.0:f32
               %6: []bool = lt %2_a %3_b
               %7: []f32 = select %6 1.0:f32 0.0:f32
               %8: []f32 = add %5 %7
               in %8)"
        ));
    }

    #[test]
    fn known_monoids_have_their_identities() {
        let (program, op) = operator(&monoid_program(
            "reduce",
            5,
            &["f32", "i32"],
            "(\\%4_a: []f32, %5_m: []i32, %6_b: []f32, %7_k: []i32 ->
               %8: []f32 = add %6_b %4_a
               %9: []i32 = max %5_m %7_k
               in %8, %9)",
        ));
        let known = identities(&program, op).expect("add and max");
        assert_eq!(known[0].bits(), Scalar::F32(-0.0).bits());
        assert_eq!(known[1], Scalar::I32(i32::MIN));
        let (program, op) = operator(&monoid_program("reduce", 5, &["f32", "f32"], LOGSUMEXP));
        assert_eq!(identities(&program, op), None);
    }
}
