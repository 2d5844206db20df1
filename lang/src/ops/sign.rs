//! Which float values never have their sign bit set but as NaNs, followed through the
//! statements of a block and the nodes of a kernel (Note [Sign-clear values] in `prim`).
//!
//! The analysis is conservative: `false` means "not known". It asks each operation's rule
//! (`Operation::sign_clear`, in its home; `Prim::sign_clear` for the primitives).

use std::cell::RefCell;
use std::collections::HashMap;

use crate::core::ir::{Atom, BlockId, Expr, Program, Scalar, VarId};
use crate::core::kernel::{Kernel, Node, NodeId};

/// How deep a chain of definitions the analysis follows before it gives up.
const DEPTH: usize = 24;

/// Whether `scalar` is a float with its sign bit clear (or a NaN).
pub fn scalar_clear(scalar: Scalar) -> bool {
    match scalar {
        Scalar::F32(x) => x.is_nan() || x.is_sign_positive(),
        Scalar::F64(x) => x.is_nan() || x.is_sign_positive(),
        Scalar::I32(_) | Scalar::I64(_) | Scalar::U32(_) | Scalar::U64(_) | Scalar::Bool(_) => {
            false
        }
    }
}

/// The definitions of a block's variables, to follow values back through them.
pub struct Defs<'p> {
    program: &'p Program,
    defs: HashMap<VarId, &'p Expr>,
    /// What is known of the variables asked about so far (a value's definition is shared by
    /// all its readers: without this a chain of squares would be followed 2^depth times).
    known: RefCell<HashMap<VarId, bool>>,
}

impl<'p> Defs<'p> {
    /// The single-binder statements of `block`.
    pub fn of_block(program: &'p Program, block: BlockId) -> Defs<'p> {
        let defs = program.blocks[block]
            .stmts
            .iter()
            .filter_map(|stmt| match stmt.binders[..] {
                [binder] => Some((binder, &stmt.expr)),
                _ => None,
            })
            .collect();
        Defs {
            program,
            defs,
            known: RefCell::default(),
        }
    }

    /// Whether every element of `atom` is a float with its sign bit clear, or a NaN.
    pub fn atom_clear(&self, atom: &Atom) -> bool {
        self.atom_clear_within(atom, DEPTH)
    }

    fn atom_clear_within(&self, atom: &Atom, depth: usize) -> bool {
        let var = match atom {
            Atom::Lit(scalar) => return scalar_clear(*scalar),
            Atom::Var(var) => *var,
        };
        if let Some(&known) = self.known.borrow().get(&var) {
            return known;
        }
        if depth == 0 || !self.program.var_ty(var).elem.is_float() {
            return false;
        }
        let known = self.defs.get(&var).is_some_and(|expr| {
            super::operation(expr).sign_clear(&mut |atom| self.atom_clear_within(atom, depth - 1))
        });
        self.known.borrow_mut().insert(var, known);
        known
    }

    /// Whether node `node` of `kernel`, a kernel over this block, is a float with its sign bit
    /// clear (or a NaN) at every point.
    pub fn node_clear(&self, kernel: &Kernel, node: NodeId) -> bool {
        // Nodes are in dependency order: one pass computes every node's answer.
        let mut clear: Vec<bool> = Vec::with_capacity(kernel.nodes.len());
        for (node, elem) in kernel.nodes.values() {
            let known = elem.is_float()
                && match node {
                    Node::Lit(scalar) => scalar_clear(*scalar),
                    Node::Index(_) => false,
                    Node::Read { var, .. } => self.atom_clear(&Atom::Var(*var)),
                    Node::Prim(prim, operands) => {
                        let operands: Vec<bool> = operands
                            .iter()
                            .map(|operand| clear[operand.0 as usize])
                            .collect();
                        prim.sign_clear(&operands)
                    }
                };
            clear.push(known);
        }
        clear[node.0 as usize]
    }
}
