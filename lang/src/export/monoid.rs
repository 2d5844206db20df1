//! The monoid operations (`reduce`, `assoc_scan`, `assoc_scan_right`) rewritten as sequential
//! loops before export, which the exporter maps to `stablehlo.while` like any `fold`/`scan`.
//!
//! `stablehlo.reduce` would be parallel, but XLA may combine the elements of a reduction in
//! any order, which is right only for commutative operators, and dx's operators need not be
//! (affine-map composition, the first-index tie-break of `argmax`). A loop keeps the order:
//! - `reduce`: `fold` over rows 1…n−1 from row 0 (`e` for an empty array);
//! - `assoc_scan`: `scan` whose step is `c ⊙ x[i]`, and `x[0]` at the first step, so that
//!   `e` is never combined (as in Note [Monoid order] in `ops/monoid.rs`);
//! - `assoc_scan_right`: the same from the last row (`x[n−1−i] ⊙ c`), its outputs put back in
//!   order by a reversing `gather`.
//!
//! The results agree with dx's up to the rounding of a different association.

use std::collections::HashMap;

use crate::core::ir::{
    ArrTy, Atom, Block, BlockId, Elem, Expr, MonoidKind, Program, Scalar, Stmt, VarId,
};
use crate::core::visit::reachable_blocks;
use crate::prim::Prim;

/// A copy of `program` without monoid statements.
pub fn as_loops(program: &Program) -> Program {
    let mut program = program.clone();
    for block in reachable_blocks(&program, program.main) {
        let stmts = std::mem::take(&mut program.blocks[block].stmts);
        let mut out = Vec::with_capacity(stmts.len());
        for stmt in stmts {
            match &stmt.expr {
                Expr::Monoid {
                    kind,
                    arrays,
                    init,
                    op,
                } => {
                    let mut cx = Emit {
                        program: &mut program,
                        stmts: &mut out,
                    };
                    cx.monoid(&stmt.binders, *kind, arrays, init, *op);
                }
                _ => out.push(stmt),
            }
        }
        program.blocks[block].stmts = out;
    }
    program
}

/// Emits statements into a list.
struct Emit<'a> {
    program: &'a mut Program,
    stmts: &'a mut Vec<Stmt>,
}

impl Emit<'_> {
    fn emit(&mut self, expr: Expr, ty: ArrTy, hint: &str) -> Atom {
        let var = self.program.new_var(ty, hint);
        self.stmts.push(Stmt {
            binders: vec![var],
            expr,
        });
        Atom::Var(var)
    }

    /// A scalar broadcast to `shape` by `replicate`s.
    fn broadcast(&mut self, atom: Atom, shape: &[usize]) -> Atom {
        let elem = self.program.atom_ty(&atom).elem;
        let mut res = atom;
        for axis in (0..shape.len()).rev() {
            res = self.emit(
                Expr::Replicate {
                    count: shape[axis],
                    array: res,
                },
                ArrTy::new(shape[axis..].to_vec(), elem),
                "rep",
            );
        }
        res
    }

    /// `left ⊙ right` on arrays of shape `rest` (the operator applies elementwise).
    fn apply(&mut self, op: BlockId, left: &[Atom], right: &[Atom], rest: &[usize]) -> Vec<Atom> {
        let block = self.program.blocks[op].clone();
        let mut subst: HashMap<VarId, Atom> = block
            .params
            .iter()
            .copied()
            .zip(left.iter().chain(right).copied())
            .collect();
        let lookup = |cx: &mut Self, subst: &HashMap<VarId, Atom>, atom: &Atom| match atom {
            Atom::Var(var) => subst[var],
            Atom::Lit(_) => cx.broadcast(*atom, rest),
        };
        for stmt in &block.stmts {
            let res = match &stmt.expr {
                Expr::Prim(prim, args) => {
                    let args = args.iter().map(|atom| lookup(self, &subst, atom)).collect();
                    let elem = self.program.var_ty(stmt.binders[0]).elem;
                    self.emit(
                        Expr::Prim(*prim, args),
                        ArrTy::new(rest.to_vec(), elem),
                        "op",
                    )
                }
                Expr::Atom(atom) => lookup(self, &subst, atom),
                _ => unreachable!("the verifier checks that operators are straight-line code"),
            };
            subst.insert(stmt.binders[0], res);
        }
        block
            .results
            .iter()
            .map(|atom| lookup(self, &subst, atom))
            .collect()
    }

    fn index_ty() -> ArrTy {
        ArrTy::scalar(Elem::I64)
    }

    fn monoid(
        &mut self,
        binders: &[VarId],
        kind: MonoidKind,
        arrays: &[Atom],
        init: &[Atom],
        op: BlockId,
    ) {
        let shape = self.program.atom_ty(&arrays[0]).shape;
        let (n, rest) = (shape[0], shape[1..].to_vec());
        let row_tys: Vec<ArrTy> = arrays
            .iter()
            .map(|atom| ArrTy::new(rest.clone(), self.program.atom_ty(atom).elem))
            .collect();
        if kind == MonoidKind::Reduce && n == 0 {
            for (binder, e) in binders.iter().zip(init) {
                self.stmts.push(Stmt {
                    binders: vec![*binder],
                    expr: Expr::Atom(*e),
                });
            }
            return;
        }
        // The loop body: params [i, carries…].
        let index = self.program.new_var(Self::index_ty(), "i");
        let carries: Vec<VarId> = row_tys
            .iter()
            .map(|ty| self.program.new_var(ty.clone(), "c"))
            .collect();
        let mut body_stmts = Vec::new();
        let mut body = Emit {
            program: &mut *self.program,
            stmts: &mut body_stmts,
        };
        let last = Atom::Lit(Scalar::I64(n as i64 - 1));
        let row = match kind {
            MonoidKind::Reduce => body.emit(
                Expr::Prim(Prim::Add, vec![Atom::Var(index), Atom::Lit(Scalar::I64(1))]),
                Self::index_ty(),
                "row",
            ),
            MonoidKind::Scan => Atom::Var(index),
            MonoidKind::ScanRight => body.emit(
                Expr::Prim(Prim::Sub, vec![last, Atom::Var(index)]),
                Self::index_ty(),
                "row",
            ),
        };
        let xs: Vec<Atom> = arrays
            .iter()
            .zip(&row_tys)
            .map(|(array, ty)| {
                body.emit(
                    Expr::Index {
                        array: *array,
                        index: vec![row],
                    },
                    ty.clone(),
                    "x",
                )
            })
            .collect();
        let carry_atoms: Vec<Atom> = carries.iter().map(|var| Atom::Var(*var)).collect();
        let combined = if kind == MonoidKind::ScanRight {
            body.apply(op, &xs, &carry_atoms, &rest)
        } else {
            body.apply(op, &carry_atoms, &xs, &rest)
        };
        let results = if kind == MonoidKind::Reduce {
            combined
        } else {
            // The first step takes the element itself, so that `e` is never combined.
            let first = body.emit(
                Expr::Prim(Prim::Eq, vec![Atom::Var(index), Atom::Lit(Scalar::I64(0))]),
                ArrTy::scalar(Elem::Bool),
                "first",
            );
            let mask = body.broadcast(first, &rest);
            let ys: Vec<Atom> = xs
                .iter()
                .zip(&combined)
                .zip(&row_tys)
                .map(|((x, combined), ty)| {
                    body.emit(
                        Expr::Prim(Prim::Select, vec![mask, *x, *combined]),
                        ty.clone(),
                        "y",
                    )
                })
                .collect();
            ys.iter().chain(&ys).copied().collect()
        };
        let mut params = vec![index];
        params.extend(&carries);
        let body = self.program.blocks.push(Block {
            params,
            stmts: body_stmts,
            results,
        });
        if kind == MonoidKind::Reduce {
            let firsts: Vec<Atom> = arrays
                .iter()
                .zip(&row_tys)
                .map(|(array, ty)| {
                    self.emit(
                        Expr::Index {
                            array: *array,
                            index: vec![Atom::Lit(Scalar::I64(0))],
                        },
                        ty.clone(),
                        "x0",
                    )
                })
                .collect();
            self.stmts.push(Stmt {
                binders: binders.to_vec(),
                expr: Expr::Fold {
                    size: n - 1,
                    init: firsts,
                    body,
                },
            });
            return;
        }
        let mut scan_binders: Vec<VarId> = row_tys
            .iter()
            .map(|ty| self.program.new_var(ty.clone(), "carry"))
            .collect();
        let stacked: Vec<VarId> = if kind == MonoidKind::Scan {
            binders.to_vec()
        } else {
            binders
                .iter()
                .map(|binder| {
                    let ty = self.program.var_ty(*binder).clone();
                    self.program.new_var(ty, "reversed")
                })
                .collect()
        };
        scan_binders.extend(&stacked);
        self.stmts.push(Stmt {
            binders: scan_binders,
            expr: Expr::Scan {
                size: n,
                init: init.to_vec(),
                body,
            },
        });
        if kind == MonoidKind::ScanRight {
            for (binder, reversed) in binders.iter().zip(stacked) {
                let position = self.program.new_var(Self::index_ty(), "j");
                let source = self.program.new_var(Self::index_ty(), "src");
                let index_fn = self.program.blocks.push(Block {
                    params: vec![position],
                    stmts: vec![Stmt {
                        binders: vec![source],
                        expr: Expr::Prim(Prim::Sub, vec![last, Atom::Var(position)]),
                    }],
                    results: vec![Atom::Var(source)],
                });
                self.stmts.push(Stmt {
                    binders: vec![*binder],
                    expr: Expr::Gather {
                        shape: shape.clone(),
                        array: Atom::Var(reversed),
                        body: index_fn,
                    },
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::interp::{run, InterpConfig};
    use crate::core::testgen::{random_inputs, random_program, GenConfig};
    use crate::core::verify::{annotate, verify};

    /// On random programs (their arrays are shorter than a chunk, where dx's order is the
    /// sequential one), the loops verify and give the same bits as the monoid statements.
    #[test]
    fn loops_give_the_bits_of_the_monoid_statements() {
        let mut n_monoids = 0;
        for seed in 0..400 {
            let program = random_program(seed, &GenConfig::default());
            let has_monoid = reachable_blocks(&program, program.main)
                .into_iter()
                .any(|block| {
                    program.blocks[block]
                        .stmts
                        .iter()
                        .any(|stmt| matches!(stmt.expr, Expr::Monoid { .. }))
                });
            if !has_monoid {
                continue;
            }
            n_monoids += 1;
            let loops = as_loops(&program);
            if let Err(errors) = verify(&loops) {
                panic!("seed {seed}:\n{}", annotate(&loops, &errors));
            }
            let inputs = random_inputs(&program, seed);
            let config = InterpConfig::default();
            let expected = run(&program, &inputs, &config).expect("the program runs");
            let got = run(&loops, &inputs, &config).expect("the loops run");
            assert_eq!(
                format!("{got:?}"),
                format!("{expected:?}"),
                "seed {seed}\n{program}\n{loops}"
            );
        }
        assert!(n_monoids >= 20, "only {n_monoids} programs with a monoid");
    }
}
