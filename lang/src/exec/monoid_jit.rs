//! The chunk folds of monoid statements as machine code (Cranelift): several (chunk, lane)
//! pairs folded side by side, each a chain of the operator on values in machine registers.
//!
//! Note [Monoid order] folds every (chunk, lane) pair sequentially. `exec::monoid` runs the
//! operator on lines of pairs, one typed loop per operation; when the pairs of a line lie in
//! different chunks (a reduction or scan of a vector, or of arrays with few lanes), every
//! row of the line is a gather across chunks 4 KB apart, and moving the values through
//! transposed tiles was half the time of a scan's gradient. Here each pair is read in place,
//! row after row of its own chunk: independent chains (`ChainCode::chains`) keep the processor's
//! pipelines full (one chain would wait on the latency of each operation), and each reads
//! one stream of consecutive rows. The chains of one call are the same lane of consecutive
//! chunks, a fixed distance apart: each row's elements are then one address plus constant
//! displacements, and the chains need no pointers of their own (with a pointer per chain
//! and component, a scan over pairs spilled them to the stack and reloaded them at every
//! row). The pairs left over (the first chunk in fold order, a shorter last chunk, chunks
//! short of a group) are folded one at a time by single-chain code. A pair's operations are those of `exec::jit` (inline
//! where IEEE or two's complement define them exactly, else a call of `register_code`'s
//! function), so each pair's fold gives the bits of the lanes' fold: same order, same
//! operations.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, SigRef, Type, Value};
use cranelift_frontend::FunctionBuilder;

use super::jit::{machine_type, JitFunction, RegVars};
use super::register_code::{Resolved, Side};
use crate::core::ir::Elem;
use crate::ops::scalar_code::ScalarCode;

/// Accumulators (one per chain and component) that the chains of one wide call keep in
/// machine registers: with more, they would be spilled and reloaded at every row.
const ACCUMULATORS: usize = 8;

/// `(regs, side, srcs, dsts, strides, first, n)`: folds the chains over `n` rows each.
/// `regs` holds one register file per chain, one after the other; `srcs[c]` points at
/// component `c` of the first chain's first row in fold order, `dsts[c]` likewise at its
/// output (for scans), and chain `j`'s rows lie `j` times the compiled chain distance
/// further; `strides[c]` is the distance in bytes from a row to the next in fold order.
/// With `first`, the first row is the accumulator (and is stored); otherwise the
/// accumulator is in the accumulator's registers, and every row is combined with it.
type FoldsFn =
    unsafe extern "C" fn(*mut u64, *mut u8, *const *const u8, *const *mut u8, *const i64, u64, u64);

/// A monoid operator resolved for compiled chunk folds in one direction.
pub(super) struct ChainCode {
    op: Resolved,
    /// Components of the monoid (the operator takes twice as many operands).
    pub k: usize,
    /// The registers of the accumulator and of the next row's element, per component:
    /// the left and right operands, or the other way round when folding from the right.
    pub acc: Vec<usize>,
    item: Vec<usize>,
}

impl ChainCode {
    pub fn new(code: &ScalarCode, from_right: bool) -> ChainCode {
        let k = code.params.len() / 2;
        let (left, right) = code.params.split_at(k);
        let (acc, item) = if from_right {
            (right.to_vec(), left.to_vec())
        } else {
            (left.to_vec(), right.to_vec())
        };
        ChainCode {
            op: Resolved::new(code),
            k,
            acc,
            item,
        }
    }

    /// Pairs folded side by side by one call of the wide folds: up to `ACCUMULATORS`
    /// accumulators, and at least two chains.
    pub fn chains(&self) -> usize {
        (ACCUMULATORS / self.k).clamp(2, ACCUMULATORS)
    }

    /// Register files for `chains` chains, each as the operator starts it.
    pub fn register_files(&self, chains: usize) -> Vec<u64> {
        self.op.init.repeat(chains)
    }

    pub fn n_regs(&self) -> usize {
        self.op.init.len()
    }

    /// The element type of component `c`.
    pub fn elem(&self, c: usize) -> Elem {
        self.op.reg_elems[self.acc[c]]
    }

    /// A side for the operations that are calls (an operator reads no tables).
    pub fn side(&self) -> Side<'static> {
        Side::without_tables()
    }
}

/// Chunk folds compiled for a number of chains a fixed distance apart, storing every
/// partial result of the components in a mask (scans; only the results something reads) or
/// none (totals).
pub(super) struct ChunkFolds {
    function: JitFunction,
    chains: usize,
    /// Bit `c`: component `c`'s partial results are stored.
    stores: u64,
}

impl ChunkFolds {
    /// Compiles the folds of `code` for `chains` chains, chain `j`'s rows of component `c`
    /// lying `j * chain_bytes[c]` after the first chain's, storing the components in the
    /// mask `stores`; `None` if this machine has no Cranelift back end or compiling fails.
    pub fn new(
        code: &ChainCode,
        chains: usize,
        chain_bytes: &[i32],
        stores: u64,
    ) -> Option<ChunkFolds> {
        assert!(code.k <= 64, "a store mask has a bit per component");
        let function = JitFunction::compile(5, 2, |b, run_instr_sig, ptr| {
            let layout = Layout {
                chains,
                chain_bytes,
                stores,
            };
            emit(b, code, &layout, run_instr_sig, ptr)
        })?;
        Some(ChunkFolds {
            function,
            chains,
            stores,
        })
    }

    /// Folds the chains over `n` rows (see `FoldsFn`).
    ///
    /// # Safety
    ///
    /// `regs` holds a register file of `code` (the code this was compiled for) per chain;
    /// for every chain and component, `srcs` (moved to the chain) points at `n` readable
    /// rows `strides` apart of the component's element type and, for the components the
    /// folds store, `dsts` at `n` writable ones that no other thread reads or writes during
    /// the call.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn run(
        &self,
        code: &ChainCode,
        regs: &mut [u64],
        side: &mut Side,
        srcs: &[*const u8],
        dsts: &[*mut u8],
        strides: &[i64],
        first: bool,
        n: usize,
    ) {
        assert_eq!(regs.len(), self.chains * code.n_regs());
        assert_eq!(srcs.len(), code.k);
        assert_eq!(strides.len(), code.k);
        assert!(self.stores == 0 || dsts.len() == code.k);
        // SAFETY: the function was compiled with exactly this signature (`emit`); the
        // caller promises the rest.
        unsafe {
            let folds = std::mem::transmute::<*const u8, FoldsFn>(self.function.code());
            folds(
                regs.as_mut_ptr(),
                (side as *mut Side).cast(),
                srcs.as_ptr(),
                dsts.as_ptr(),
                strides.as_ptr(),
                u64::from(first),
                n as u64,
            );
        }
    }
}

/// Where the chains of one call are, fixed when the folds are compiled.
struct Layout<'a> {
    chains: usize,
    /// Bytes from a chain's element of component `c` to the next chain's.
    chain_bytes: &'a [i32],
    stores: u64,
}

impl Layout<'_> {
    /// Whether component `c`'s partial results are stored.
    fn stores(&self, c: usize) -> bool {
        self.stores & (1 << c) != 0
    }

    /// The displacement of chain `chain`'s element of component `c`.
    fn displacement(&self, chain: usize, c: usize) -> i32 {
        chain as i32 * self.chain_bytes.get(c).copied().unwrap_or(0)
    }
}

/// Emits the folds' function: its arguments are those of `FoldsFn`.
fn emit(
    b: &mut FunctionBuilder,
    code: &ChainCode,
    layout: &Layout,
    run_instr_sig: SigRef,
    ptr: Type,
) {
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let &[regs, side, srcs, dsts, strides, first, n] = b.block_params(entry) else {
        unreachable!("the folds take seven arguments")
    };
    let op = &code.op;
    let mut touched: Vec<usize> = op
        .instrs
        .iter()
        .flat_map(|instr| instr.reads().iter().copied().chain([instr.dst]))
        .chain(
            code.acc
                .iter()
                .chain(&code.item)
                .chain(&op.results)
                .copied(),
        )
        .collect();
    touched.sort_unstable();
    touched.dedup();
    let file_bytes = 8 * op.init.len() as i32;
    let chains: Vec<RegVars> = (0..layout.chains)
        .map(|chain| {
            let file = (regs, chain as i32 * file_bytes);
            RegVars::new(b, &op.reg_elems, &touched, file, run_instr_sig, ptr)
        })
        .collect();
    let flags = MemFlagsData::trusted();
    let pointers = |b: &mut FunctionBuilder, table: Value| -> Vec<Value> {
        (0..code.k)
            .map(|c| b.ins().load(ptr, flags, table, 8 * c as i32))
            .collect()
    };
    let src = pointers(b, srcs);
    let dst = if layout.stores != 0 {
        pointers(b, dsts)
    } else {
        Vec::new()
    };
    let stride: Vec<Value> = (0..code.k)
        .map(|c| b.ins().load(types::I64, flags, strides, 8 * c as i32))
        .collect();
    let elems: Vec<Type> = (0..code.k).map(|c| machine_type(code.elem(c))).collect();
    // The byte offset of the current row from each component's first, and the row count.
    let offsets: Vec<_> = (0..code.k).map(|_| b.declare_var(types::I64)).collect();
    let step = b.declare_var(types::I64);
    let zero = b.ins().iconst(types::I64, 0);
    for &offset in offsets.iter().chain([&step]) {
        b.def_var(offset, zero);
    }
    let first_row = b.create_block();
    let header = b.create_block();
    let body = b.create_block();
    let exit = b.create_block();
    let start_empty = b.ins().icmp_imm_u(IntCC::Equal, n, 0);
    let plain = b.create_block();
    b.ins().brif(start_empty, exit, &[], plain, &[]);

    b.switch_to_block(plain);
    b.ins().brif(first, first_row, &[], header, &[]);

    // The first row is the accumulator.
    b.switch_to_block(first_row);
    for (chain, vars) in chains.iter().enumerate() {
        for (c, (&elem, &acc)) in elems.iter().zip(&code.acc).enumerate() {
            let at = layout.displacement(chain, c);
            let value = b.ins().load(elem, flags, src[c], at);
            b.def_var(vars.var(acc), value);
            if layout.stores(c) {
                b.ins().store(flags, value, dst[c], at);
            }
        }
    }
    for (&offset, &stride) in offsets.iter().zip(&stride) {
        b.def_var(offset, stride);
    }
    let one = b.ins().iconst(types::I64, 1);
    b.def_var(step, one);
    b.ins().jump(header, &[]);

    b.switch_to_block(header);
    let row = b.use_var(step);
    let more = b.ins().icmp(IntCC::UnsignedLessThan, row, n);
    b.ins().brif(more, body, &[], exit, &[]);

    // Every chain combines its accumulator with its next row.
    b.switch_to_block(body);
    let at_row: Vec<Value> = offsets.iter().map(|&offset| b.use_var(offset)).collect();
    let from: Vec<Value> = (0..code.k)
        .map(|c| b.ins().iadd(src[c], at_row[c]))
        .collect();
    let to: Vec<Value> = (0..dst.len())
        .map(|c| b.ins().iadd(dst[c], at_row[c]))
        .collect();
    for (chain, vars) in chains.iter().enumerate() {
        for c in 0..code.k {
            let value = b
                .ins()
                .load(elems[c], flags, from[c], layout.displacement(chain, c));
            b.def_var(vars.var(code.item[c]), value);
        }
        for instr in &op.instrs {
            vars.instr(b, instr, side);
        }
        let combined: Vec<Value> = op
            .results
            .iter()
            .map(|&reg| b.use_var(vars.var(reg)))
            .collect();
        for (c, value) in combined.into_iter().enumerate() {
            b.def_var(vars.var(code.acc[c]), value);
            if layout.stores(c) {
                b.ins()
                    .store(flags, value, to[c], layout.displacement(chain, c));
            }
        }
    }
    for (c, &offset) in offsets.iter().enumerate() {
        let next = b.ins().iadd(at_row[c], stride[c]);
        b.def_var(offset, next);
    }
    let next = b.ins().iadd_imm_u(row, 1);
    b.def_var(step, next);
    b.ins().jump(header, &[]);

    // The accumulators back into the register files.
    b.switch_to_block(exit);
    for vars in &chains {
        for &reg in &code.acc {
            vars.store(b, reg);
        }
    }
    b.ins().return_(&[]);
}
