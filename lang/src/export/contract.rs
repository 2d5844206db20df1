//! Contractions in the bulk IR, exported as `dot_general`. What a contraction is (the roles
//! of a summed product's axes) is `ops::sum_outer::contraction_roles`, which fusion's matrix
//! products read too; this module finds where the axes come from in the bulk IR.
//!
//! After the BOT, `for i k. sum for j. a[i,j] * b[j,k]` is `sumOuter (tr (mul (tr (replicate
//! a)) (replicate (tr b))))`: a product of two arrays seen through chains of `replicate` and
//! `tr`, summed over one axis. Each operand's chain gives, for every axis of the product, the
//! axis of the underlying array it comes from (or none, for a replicated axis). When the summed
//! axis comes from both arrays and every other axis from at least one, the sum is a
//! `dot_general` of the two arrays (axes from both are batch axes) followed by a `transpose`
//! into the sum's axis order, and the chain's statements (used nowhere else) are not exported.
//!
//! Anything else stays a multiply-and-`reduce`, which is also correct (XLA recognises many of
//! those itself).

use std::collections::{HashMap, HashSet};

use crate::core::ir::{Atom, BlockId, Expr, Program, VarId};
use crate::core::kernel::Reduction;
use crate::core::visit::{collect_uses, reachable_blocks};
use crate::ops::sum_outer::{self, AxisRole};
use crate::ops::{self, Element, Move};
use crate::prim::Prim;

/// A `sumOuter` computed as `transpose (dot_general lhs rhs)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Contraction {
    pub lhs: VarId,
    pub rhs: VarId,
    pub lhs_batching: Vec<usize>,
    pub rhs_batching: Vec<usize>,
    pub lhs_contracting: Vec<usize>,
    pub rhs_contracting: Vec<usize>,
    /// Axis `a` of the sum's result is axis `perm[a]` of the `dot_general`'s result.
    pub perm: Vec<usize>,
    /// The shape of the `dot_general`'s result.
    pub dot_shape: Vec<usize>,
}

/// The contractions of a program (by the `sumOuter`'s binder), and the statements that only
/// feed them (by binder), which are not exported.
#[derive(Debug, Default)]
pub struct Plan {
    pub contractions: HashMap<VarId, Contraction>,
    pub skipped: HashSet<VarId>,
}

/// Finds the contractions of every block of `program`.
pub fn plan(program: &Program) -> Plan {
    let mut uses = Vec::new();
    collect_uses(program, program.main, &mut uses);
    let mut n_uses: HashMap<VarId, usize> = HashMap::new();
    for var in uses {
        *n_uses.entry(var).or_default() += 1;
    }
    let mut plan = Plan::default();
    for block in reachable_blocks(program, program.main) {
        find_in_block(program, block, &n_uses, &mut plan);
    }
    plan
}

/// An operand traced back through `replicate` and `tr`: the underlying array, where each axis
/// of the traced value comes from in it, and the chain's binders used only along the chain.
struct Traced {
    base: VarId,
    axes: Vec<Option<usize>>,
    chain: Vec<VarId>,
}

fn find_in_block(
    program: &Program,
    block: BlockId,
    n_uses: &HashMap<VarId, usize>,
    plan: &mut Plan,
) {
    let defs: HashMap<VarId, &Expr> = program.blocks[block]
        .stmts
        .iter()
        .filter(|stmt| stmt.binders.len() == 1)
        .map(|stmt| (stmt.binders[0], &stmt.expr))
        .collect();
    let single_use = |var: VarId| n_uses.get(&var).copied().unwrap_or(0) == 1;
    for stmt in &program.blocks[block].stmts {
        let (Some((Atom::Var(summed), Reduction::Sum)), [sum]) = (
            ops::reduction_of(program, &stmt.expr),
            stmt.binders.as_slice(),
        ) else {
            continue;
        };
        if !program.var_ty(*sum).elem.is_float() {
            continue;
        }
        let mut chain = Vec::new();
        let mut product = summed;
        let rank = program.var_ty(product).rank();
        // Axis `a` of the summed value is axis `order[a]` of the product.
        let mut order: Vec<usize> = (0..rank).collect();
        if let Some(Element::Moved {
            array: Atom::Var(inner),
            moved: Move::Permute(perm),
        }) = element(&defs, product)
        {
            if !single_use(product) {
                continue;
            }
            chain.push(product);
            order = full_perm(perm, rank);
            product = inner;
        }
        let Some(Element::Apply(Prim::Mul, operands)) = element(&defs, product) else {
            continue;
        };
        let [Atom::Var(x), Atom::Var(y)] = operands else {
            continue;
        };
        if !single_use(product) {
            continue;
        }
        chain.push(product);
        let lhs = trace(program, &defs, &single_use, *x);
        let rhs = trace(program, &defs, &single_use, *y);
        let Some(contraction) = contraction(program, &lhs, &rhs, &order) else {
            continue;
        };
        plan.skipped.extend(chain);
        plan.skipped.extend(&lhs.chain);
        plan.skipped.extend(&rhs.chain);
        plan.contractions.insert(*sum, contraction);
    }
}

/// The element rule of `var`'s definition (views and elementwise applications).
fn element<'p>(defs: &HashMap<VarId, &'p Expr>, var: VarId) -> Option<Element<'p>> {
    defs.get(&var)
        .and_then(|expr| ops::operation(expr).element())
}

fn full_perm(perm: &[usize], rank: usize) -> Vec<usize> {
    let mut full = perm.to_vec();
    full.extend(perm.len()..rank);
    full
}

fn trace(
    program: &Program,
    defs: &HashMap<VarId, &Expr>,
    single_use: &impl Fn(VarId) -> bool,
    var: VarId,
) -> Traced {
    // Walk down to the base, then build the axis map back up.
    let mut steps = Vec::new();
    let mut current = var;
    let mut chain = Vec::new();
    let mut chain_open = true;
    while let Some(Element::Moved {
        array: Atom::Var(next),
        moved: Move::DropFirst { .. } | Move::Permute(_),
    }) = element(defs, current)
    {
        // A step used elsewhere stays (and so do the steps below it).
        chain_open = chain_open && single_use(current);
        if chain_open {
            chain.push(current);
        }
        steps.push(current);
        current = next;
    }
    let base = current;
    let mut axes: Vec<Option<usize>> = (0..program.var_ty(base).rank()).map(Some).collect();
    for &step in steps.iter().rev() {
        axes = match element(defs, step) {
            Some(Element::Moved {
                moved: Move::DropFirst { .. },
                ..
            }) => std::iter::once(None).chain(axes).collect(),
            Some(Element::Moved {
                moved: Move::Permute(perm),
                ..
            }) => full_perm(perm, axes.len())
                .iter()
                .map(|&axis| axes[axis])
                .collect(),
            _ => axes,
        };
    }
    Traced { base, axes, chain }
}

/// The `dot_general` for `sumOuter` over the product's axis `order[0]`, its result axes being
/// the product's axes `order[1..]`.
fn contraction(
    program: &Program,
    lhs: &Traced,
    rhs: &Traced,
    order: &[usize],
) -> Option<Contraction> {
    let summed = order[0];
    let from: Vec<(bool, bool)> = lhs
        .axes
        .iter()
        .zip(&rhs.axes)
        .map(|(lhs_axis, rhs_axis)| (lhs_axis.is_some(), rhs_axis.is_some()))
        .collect();
    let roles = sum_outer::contraction_roles(&from, summed)?;
    let (lhs_summed, rhs_summed) = (lhs.axes[summed]?, rhs.axes[summed]?);
    let mut batch = Vec::new();
    let mut lhs_free = Vec::new();
    let mut rhs_free = Vec::new();
    for (axis, role) in roles.into_iter().enumerate() {
        match role {
            AxisRole::Contracted => {}
            AxisRole::Batch => batch.push(axis),
            AxisRole::Lhs => lhs_free.push((lhs.axes[axis]?, axis)),
            AxisRole::Rhs => rhs_free.push((rhs.axes[axis]?, axis)),
        }
    }
    lhs_free.sort_unstable();
    rhs_free.sort_unstable();
    // The product's axes in the order of the dot_general's result.
    let dot_axes: Vec<usize> = batch
        .iter()
        .copied()
        .chain(lhs_free.iter().map(|&(_, axis)| axis))
        .chain(rhs_free.iter().map(|&(_, axis)| axis))
        .collect();
    let perm: Vec<usize> = order[1..]
        .iter()
        .map(|axis| dot_axes.iter().position(|dot_axis| dot_axis == axis))
        .collect::<Option<_>>()?;
    let lhs_shape = &program.var_ty(lhs.base).shape;
    let rhs_shape = &program.var_ty(rhs.base).shape;
    let dot_shape = dot_axes
        .iter()
        .map(|&axis| match lhs.axes[axis] {
            Some(base_axis) => lhs_shape[base_axis],
            None => rhs.axes[axis].map_or(0, |base_axis| rhs_shape[base_axis]),
        })
        .collect();
    Some(Contraction {
        lhs: lhs.base,
        rhs: rhs.base,
        lhs_batching: batch.iter().filter_map(|&axis| lhs.axes[axis]).collect(),
        rhs_batching: batch.iter().filter_map(|&axis| rhs.axes[axis]).collect(),
        lhs_contracting: vec![lhs_summed],
        rhs_contracting: vec![rhs_summed],
        perm,
        dot_shape,
    })
}
