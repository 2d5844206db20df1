//! `jvp (xs…) (ts…) f` and `vjp (xs…) (cts…) f` as lowering emits them, before the `ad` pass
//! expands each into its derivative program (`passes::derivatives::PASS`). Their rules:
//!
//! - type rule: `result_tys` (called by `ops::verify`): the binders are the function's
//!   results, then the tangents of its results (`jvp`) or the cotangents of its params
//!   (`vjp`); the seeds are tangents of the params or cotangents of the results;
//! - cost: `cost`, the cheap-gradient principle ([Shaikhha23] §4): a small multiple of the
//!   function;
//! - never evaluated, batched or differentiated (the engines and the passes after `ad` never
//!   meet one, `core::ir::EXPANDED`); fusion class `Bulk`.

use super::ad::{self, AdResult, Builder, Derivs};
use super::batch::Batcher;
use super::bulk::{Bulk, Ran};
use super::hlo::{ExportError, Exported, StableHlo};
use super::interp::{Interp, Res};
use super::{FusionClass, Linearity, Operation};
use crate::core::ir::{AdMode, ArrTy, Atom, BlockId, Derivative, Expr, Program, Stmt, EXPANDED};
use crate::core::value::Array;
use crate::core::visit::expr_blocks;
use crate::ops::verify::{atom_ty, block, result_tys as block_result_tys, tys_text, var_ty};

/// The binders of a derivative: the function's results, then the tangents of its results
/// (`jvp`) or the cotangents of its params (`vjp`); the seeds are tangents of the params
/// or cotangents of the results.
pub fn result_tys(
    program: &Program,
    mode: AdMode,
    primals: &[Atom],
    seeds: &[Atom],
    func: BlockId,
) -> Result<Vec<ArrTy>, String> {
    let atom_tys = |atoms: &[Atom]| {
        atoms
            .iter()
            .map(|atom| atom_ty(program, atom))
            .collect::<Result<Vec<_>, _>>()
    };
    let block = block(program, func)?;
    let param_tys = block
        .params
        .iter()
        .map(|&var| var_ty(program, var))
        .collect::<Result<Vec<_>, _>>()?;
    let primal_tys = atom_tys(primals)?;
    if primal_tys != param_tys {
        return Err(format!(
            "derivative of a function of ({}) at ({})",
            tys_text(&param_tys),
            tys_text(&primal_tys)
        ));
    }
    let result_tys = block_result_tys(program, block)?;
    let (seeded, derived) = match mode {
        AdMode::Jvp => (&param_tys, &result_tys),
        AdMode::Vjp => (&result_tys, &param_tys),
    };
    let seed_tys = atom_tys(seeds)?;
    if &seed_tys != seeded {
        return Err(format!(
            "derivative seeds have types ({}) but must have types ({})",
            tys_text(&seed_tys),
            tys_text(seeded)
        ));
    }
    Ok(result_tys.iter().chain(derived).cloned().collect())
}

/// Three times the function (before the `ad` pass replaces the statement).
pub fn cost(program: &Program, func: BlockId) -> u64 {
    3 * crate::ops::cost::block_cost(program, func)
}

/// The block and position of a derivative statement with no derivative inside it, and the
/// derivative (`passes::derivatives` expands them innermost first).
pub fn innermost(program: &Program, block: BlockId) -> Option<(BlockId, usize, Derivative)> {
    program.blocks[block]
        .stmts
        .iter()
        .enumerate()
        .find_map(|(index, stmt)| {
            expr_blocks(&stmt.expr)
                .into_iter()
                .find_map(|nested| innermost(program, nested))
                .or_else(|| match &stmt.expr {
                    Expr::Derivative(derivative) => Some((block, index, derivative.clone())),
                    _ => None,
                })
        })
}

impl Operation for Derivative {
    fn types(&self, program: &Program) -> Result<Vec<ArrTy>, String> {
        result_tys(program, self.mode, &self.primals, &self.seeds, self.func)
    }

    fn eval(&self, _: &mut Interp, _: &Stmt) -> Res<Vec<Array>> {
        unreachable!("{}", EXPANDED)
    }

    fn batch(&self, _: &mut Batcher, _: &Stmt) {
        unreachable!("{}", EXPANDED)
    }

    fn jvp(&self, _: &mut Builder, _: &Stmt, _: &mut Derivs) -> AdResult {
        ad::not_differentiated()
    }

    fn transpose(&self, _: &mut Builder, _: &Stmt, _: &mut Derivs) -> AdResult {
        ad::not_a_linear_statement()
    }

    fn cost(&self, program: &Program, _: u64) -> u64 {
        cost(program, self.func)
    }

    /// Expanded before anything differentiates.
    fn linearity(&self) -> Linearity {
        Linearity::Excluded
    }

    fn fusion_class(&self, _: &Program) -> FusionClass {
        FusionClass::Bulk
    }

    fn run(&self, _: &mut dyn Bulk) -> Ran {
        unreachable!("{}", EXPANDED)
    }

    fn export(&self, _: &mut dyn StableHlo, _: &Stmt) -> Exported {
        Err(ExportError::new("jvp/vjp", EXPANDED))
    }

    /// Its function is differentiated, not run as a nested operation.
    fn nests(&self) -> bool {
        false
    }
}
