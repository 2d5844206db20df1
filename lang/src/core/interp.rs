//! The reference interpreter: evaluates core IR element by element.
//!
//! This is the oracle every later pass is tested against (STYLE.md §4.6), so it favours
//! clarity over speed: scalar loops over row-major flat offsets, no batching, no fusion.
//! Each construct is a direct transcription of its semantics (seed 001 §3.2–3.3 and the docs
//! in `ir.rs`).
//!
//! Assumes: the program is verified (`core::verify`) and `inputs` match `program.inputs` in
//! number and type. A violated assumption is a caller bug and panics with a message saying so.
//!
//! Guarantees:
//! - Total semantics: an index outside `0..dim` in `index` or `gather` reads zero (a whole
//!   sub-array of zeros). With `InterpConfig::strict` it is `InterpError::OutOfRange` naming
//!   the binder of the reading statement instead. `scatter` drops out-of-range targets in both
//!   modes (dropping is not a read).
//! - `cond` evaluates only the taken branch (equivalent to seed 001's strict `cond` because
//!   every operation is total).
//! - The interrupt flag is checked once per iteration of `build1`, `fold`, `scan`, and per
//!   index-function call of `gather`/`scatter`, with a `Relaxed` load.
//! - Sums (`sumOuter`, `scatter` collisions) add in index order, sequentially.
//!
//! Does not handle: nothing is left out of the core IR today.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::ids::IdVec;
use super::ir::{ArrTy, Atom, BlockId, Elem, Expr, Program, Scalar, Stmt, VarId};
use super::value::{Array, ArrayData};
use crate::prim::Prim;

/// How to run the interpreter.
#[derive(Clone, Debug, Default)]
pub struct InterpConfig {
    /// Report out-of-range reads as errors instead of reading zero.
    pub strict: bool,
    /// Set from another thread to stop the run with `InterpError::Interrupted`.
    pub interrupt: Option<Arc<AtomicBool>>,
}

/// Why a run stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InterpError {
    /// A strict-mode out-of-range read. `var` is the (first) binder of the reading statement,
    /// `index` the index that was read and `shape` the full shape of the array read from.
    OutOfRange { var: VarId, index: Vec<i64>, shape: Vec<usize> },
    /// The interrupt flag was set.
    Interrupted,
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InterpError::OutOfRange { var, index, shape } => {
                write!(f, "index {index:?} is out of range for shape {shape:?} (reading {var})")
            }
            InterpError::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for InterpError {}

/// Runs `program` on `inputs` (bound to `program.inputs` in order) and returns the results of
/// `program.main`.
pub fn run(
    program: &Program,
    inputs: &[Array],
    config: &InterpConfig,
) -> Result<Vec<Array>, InterpError> {
    assert_eq!(
        inputs.len(),
        program.inputs.len(),
        "interp::run: the program takes {} inputs but {} were given",
        program.inputs.len(),
        inputs.len()
    );
    let mut env = IdVec::new();
    for _ in 0..program.vars.len() {
        env.push(None);
    }
    let mut cx = Interp { program, config, env };
    for (&var, array) in program.inputs.iter().zip(inputs) {
        debug_assert_eq!(&array.ty(), program.var_ty(var), "input {var} has the wrong type");
        cx.env[var] = Some(array.clone());
    }
    cx.eval_block(program.main, Vec::new())
}

struct Interp<'a> {
    program: &'a Program,
    config: &'a InterpConfig,
    /// The current value of each variable. Every variable is bound once per evaluation of its
    /// block, so nested blocks (loop bodies) simply overwrite their own variables each
    /// iteration and never clobber a variable of an enclosing scope.
    env: IdVec<VarId, Option<Array>>,
}

type Res<T> = Result<T, InterpError>;

impl Interp<'_> {
    fn check_interrupt(&self) -> Res<()> {
        match &self.config.interrupt {
            Some(flag) if flag.load(Ordering::Relaxed) => Err(InterpError::Interrupted),
            _ => Ok(()),
        }
    }

    fn var(&self, var: VarId) -> &Array {
        self.env[var].as_ref().unwrap_or_else(|| {
            panic!("interp: {var} is used before it is bound (the verifier rules this out)")
        })
    }

    fn atom(&self, atom: &Atom) -> Array {
        match atom {
            Atom::Var(var) => self.var(*var).clone(),
            Atom::Lit(scalar) => Array::scalar(*scalar),
        }
    }

    /// An `I64` scalar atom as an index.
    fn index_atom(&self, atom: &Atom) -> i64 {
        as_index(&self.atom(atom))
    }

    fn binder_ty(&self, stmt: &Stmt, position: usize) -> &ArrTy {
        let var = stmt.binders.get(position).unwrap_or_else(|| {
            panic!("interp: statement lacks binder {position} (the verifier rules this out)")
        });
        self.program.var_ty(*var)
    }

    /// Binds the block's params to `args`, runs its statements and returns its results.
    fn eval_block(&mut self, block_id: BlockId, args: Vec<Array>) -> Res<Vec<Array>> {
        let block = &self.program.blocks[block_id];
        assert_eq!(block.params.len(), args.len(), "interp: {block_id} called with wrong arity");
        for (&param, arg) in block.params.iter().zip(args) {
            self.env[param] = Some(arg);
        }
        for stmt in &block.stmts {
            let values = self.eval_stmt(stmt)?;
            debug_assert_eq!(values.len(), stmt.binders.len());
            for (&binder, value) in stmt.binders.iter().zip(values) {
                debug_assert_eq!(&value.shape, &self.program.var_ty(binder).shape);
                self.env[binder] = Some(value);
            }
        }
        Ok(block.results.iter().map(|atom| self.atom(atom)).collect())
    }

    /// Evaluates a block whose results are `I64` scalars (a gather/scatter index function).
    fn eval_index_fn(&mut self, block_id: BlockId, index: &[i64]) -> Res<Vec<i64>> {
        self.check_interrupt()?;
        let args = index.iter().map(|&i| Array::scalar(Scalar::I64(i))).collect();
        Ok(self.eval_block(block_id, args)?.iter().map(as_index).collect())
    }

    fn eval_stmt(&mut self, stmt: &Stmt) -> Res<Vec<Array>> {
        // The variable that strict-mode errors name.
        let reader = stmt.binders.first().copied().unwrap_or(VarId(u32::MAX));
        let res = match &stmt.expr {
            Expr::Atom(atom) => self.atom(atom),
            Expr::Prim(prim, operands) => {
                let operands: Vec<Array> = operands.iter().map(|atom| self.atom(atom)).collect();
                eval_prim(*prim, &operands, self.binder_ty(stmt, 0))
            }
            Expr::Build1 { size, body } => {
                let mut stacked: Vec<Stacked> = (0..stmt.binders.len())
                    .map(|position| Stacked::new(self.binder_ty(stmt, position)))
                    .collect();
                for i in 0..*size {
                    self.check_interrupt()?;
                    let results = self.eval_block(*body, vec![index_scalar(i)])?;
                    for (out, value) in stacked.iter_mut().zip(&results) {
                        out.append(value);
                    }
                }
                return Ok(stacked.into_iter().map(Stacked::finish).collect());
            }
            Expr::Index { array, index } => {
                let array = self.atom(array);
                let index: Vec<i64> = index.iter().map(|atom| self.index_atom(atom)).collect();
                let mut out = ArrayData::with_capacity(array.elem(), 0);
                self.read_sub_array(&array, &index, reader, &mut out)?;
                Array::new(array.shape[index.len()..].to_vec(), out)
            }
            Expr::SumOuter(array) => sum_outer(&self.atom(array)),
            Expr::Gather { shape, array, body } => {
                let array = self.atom(array);
                let n_lead = self.program.blocks[*body].params.len();
                let lead_shape = &shape[..n_lead];
                let mut out = ArrayData::with_capacity(array.elem(), shape.iter().product());
                for flat in 0..lead_shape.iter().product() {
                    let index = self.eval_index_fn(*body, &unravel(flat, lead_shape))?;
                    self.read_sub_array(&array, &index, reader, &mut out)?;
                }
                Array::new(shape.clone(), out)
            }
            Expr::Scatter { shape, array, body } => {
                let array = self.atom(array);
                let n_lead = self.program.blocks[*body].params.len();
                let lead_shape = &array.shape[..n_lead];
                let n_sub: usize = array.shape[n_lead..].iter().product();
                let zero = Scalar::zero(array.elem());
                let mut out: Vec<Scalar> = vec![zero; shape.iter().product()];
                for flat in 0..lead_shape.iter().product() {
                    let target = self.eval_index_fn(*body, &unravel(flat, lead_shape))?;
                    // Out-of-range targets are dropped, in strict mode too.
                    let Some(target_flat) = ravel(&target, &shape[..target.len()]) else {
                        continue;
                    };
                    for offset in 0..n_sub {
                        let slot = &mut out[target_flat * n_sub + offset];
                        *slot = Prim::Add.eval(&[*slot, array.data.get(flat * n_sub + offset)]);
                    }
                }
                from_scalars(shape.clone(), array.elem(), out)
            }
            Expr::Table(atoms) => {
                let mut stacked = Stacked::new(self.binder_ty(stmt, 0));
                for atom in atoms {
                    stacked.append(&self.atom(atom));
                }
                stacked.finish()
            }
            Expr::Replicate { count, array } => {
                let array = self.atom(array);
                let mut out = ArrayData::with_capacity(array.elem(), count * array.n_elems());
                for _ in 0..*count {
                    append_range(&array.data, 0..array.n_elems(), &mut out);
                }
                let mut shape = vec![*count];
                shape.extend_from_slice(&array.shape);
                Array::new(shape, out)
            }
            Expr::Transpose { perm, array } => transpose(perm, &self.atom(array)),
            Expr::Reshape { shape, array } => {
                let array = self.atom(array);
                Array { shape: shape.clone(), data: array.data }
            }
            Expr::Cond { cond, then_block, else_block } => {
                let taken = match self.atom(cond).as_scalar() {
                    Some(Scalar::Bool(true)) => *then_block,
                    Some(Scalar::Bool(false)) => *else_block,
                    other => panic!("interp: cond on {other:?} (the verifier rules this out)"),
                };
                return self.eval_block(taken, Vec::new());
            }
            Expr::Iota(size) => {
                let mut out = ArrayData::with_capacity(Elem::I64, *size);
                for i in 0..*size {
                    out.push(Scalar::I64(i as i64));
                }
                Array::new(vec![*size], out)
            }
            Expr::Fold { size, init, body } => {
                let mut carry: Vec<Array> = init.iter().map(|atom| self.atom(atom)).collect();
                for i in 0..*size {
                    self.check_interrupt()?;
                    let mut args = vec![index_scalar(i)];
                    args.extend(carry);
                    carry = self.eval_block(*body, args)?;
                }
                return Ok(carry);
            }
            Expr::Scan { size, init, body } => {
                let n_carry = init.len();
                let mut carry: Vec<Array> = init.iter().map(|atom| self.atom(atom)).collect();
                let mut stacked: Vec<Stacked> = (n_carry..stmt.binders.len())
                    .map(|position| Stacked::new(self.binder_ty(stmt, position)))
                    .collect();
                for i in 0..*size {
                    self.check_interrupt()?;
                    let mut args = vec![index_scalar(i)];
                    args.extend(carry);
                    let mut results = self.eval_block(*body, args)?;
                    let ys = results.split_off(n_carry);
                    carry = results;
                    for (out, value) in stacked.iter_mut().zip(&ys) {
                        out.append(value);
                    }
                }
                carry.extend(stacked.into_iter().map(Stacked::finish));
                return Ok(carry);
            }
        };
        Ok(vec![res])
    }

    /// Appends the sub-array `array[index]` (the outermost `index.len()` axes) to `out`: zeros
    /// if the index is out of range, or an error naming `reader` in strict mode.
    fn read_sub_array(
        &self,
        array: &Array,
        index: &[i64],
        reader: VarId,
        out: &mut ArrayData,
    ) -> Res<()> {
        let n_sub: usize = array.shape[index.len()..].iter().product();
        match ravel(index, &array.shape[..index.len()]) {
            Some(flat) => append_range(&array.data, flat * n_sub..(flat + 1) * n_sub, out),
            None if self.config.strict => {
                return Err(InterpError::OutOfRange {
                    var: reader,
                    index: index.to_vec(),
                    shape: array.shape.clone(),
                })
            }
            None => {
                for _ in 0..n_sub {
                    out.push(Scalar::zero(array.elem()));
                }
            }
        }
        Ok(())
    }
}

/// An array being stacked along a new outermost axis (results of `build1`, `scan`, `table`).
/// The shape comes from the binder's declared type, so that zero iterations give the right
/// empty array.
struct Stacked {
    shape: Vec<usize>,
    data: ArrayData,
}

impl Stacked {
    fn new(ty: &ArrTy) -> Stacked {
        Stacked { shape: ty.shape.clone(), data: ArrayData::with_capacity(ty.elem, ty.n_elems()) }
    }

    fn append(&mut self, value: &Array) {
        append_range(&value.data, 0..value.n_elems(), &mut self.data);
    }

    fn finish(self) -> Array {
        Array::new(self.shape, self.data)
    }
}

fn index_scalar(i: usize) -> Array {
    Array::scalar(Scalar::I64(i as i64))
}

fn as_index(array: &Array) -> i64 {
    match array.as_scalar() {
        Some(Scalar::I64(i)) => i,
        other => panic!("interp: index {other:?} is not an i64 scalar (the verifier rules this out)"),
    }
}

fn append_range(data: &ArrayData, range: std::ops::Range<usize>, out: &mut ArrayData) {
    for flat in range {
        out.push(data.get(flat));
    }
}

fn from_scalars(shape: Vec<usize>, elem: Elem, scalars: Vec<Scalar>) -> Array {
    let mut data = ArrayData::with_capacity(elem, scalars.len());
    for scalar in scalars {
        data.push(scalar);
    }
    Array::new(shape, data)
}

/// The row-major flat offset of `index` in `shape` (same length), or `None` if any component
/// is outside `0..dim`.
fn ravel(index: &[i64], shape: &[usize]) -> Option<usize> {
    debug_assert_eq!(index.len(), shape.len());
    let mut flat = 0usize;
    for (&i, &dim) in index.iter().zip(shape) {
        let i = usize::try_from(i).ok().filter(|&i| i < dim)?;
        flat = flat * dim + i;
    }
    Some(flat)
}

/// The multi-index of row-major flat offset `flat` in `shape`.
fn unravel(mut flat: usize, shape: &[usize]) -> Vec<i64> {
    let mut index = vec![0i64; shape.len()];
    for (slot, &dim) in index.iter_mut().zip(shape).rev() {
        *slot = (flat % dim) as i64;
        flat /= dim;
    }
    index
}

/// `op` applied elementwise to operands of one shape.
fn eval_prim(prim: Prim, operands: &[Array], res_ty: &ArrTy) -> Array {
    let n_elems = res_ty.n_elems();
    debug_assert!(operands.iter().all(|array| array.n_elems() == n_elems));
    let mut out = ArrayData::with_capacity(res_ty.elem, n_elems);
    let mut scalars = Vec::with_capacity(operands.len());
    for flat in 0..n_elems {
        scalars.clear();
        scalars.extend(operands.iter().map(|array| array.data.get(flat)));
        out.push(prim.eval(&scalars));
    }
    Array::new(res_ty.shape.clone(), out)
}

/// Sums along the outermost axis, in index order; an empty outermost axis gives zeros.
fn sum_outer(array: &Array) -> Array {
    let (&n_rows, rest) = array.shape.split_first().expect("sumOuter of a rank-0 array");
    let n_sub: usize = rest.iter().product();
    let mut out = vec![Scalar::zero(array.elem()); n_sub];
    for row in 0..n_rows {
        for (offset, slot) in out.iter_mut().enumerate() {
            *slot = Prim::Add.eval(&[*slot, array.data.get(row * n_sub + offset)]);
        }
    }
    from_scalars(rest.to_vec(), array.elem(), out)
}

/// `tr_perm`: result axis `a` is input axis `perm[a]` for `a < perm.len()`; the rest stay.
fn transpose(perm: &[usize], array: &Array) -> Array {
    let mut shape = array.shape.clone();
    for (axis, &from) in perm.iter().enumerate() {
        shape[axis] = array.shape[from];
    }
    let n_elems = array.n_elems();
    let mut out = ArrayData::with_capacity(array.elem(), n_elems);
    let mut in_index = vec![0i64; shape.len()];
    for flat in 0..n_elems {
        let out_index = unravel(flat, &shape);
        in_index.copy_from_slice(&out_index);
        for (axis, &from) in perm.iter().enumerate() {
            in_index[from] = out_index[axis];
        }
        let in_flat = ravel(&in_index, &array.shape).expect("transposed index is in range");
        out.push(array.data.get(in_flat));
    }
    Array::new(shape, out)
}

