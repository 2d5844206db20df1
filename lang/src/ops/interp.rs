//! The reference interpreter: evaluates core IR element by element.
//!
//! This is the oracle every later pass is tested against (docs/architecture.md), so it favours
//! clarity over speed: scalar loops over row-major flat offsets, no batching, no fusion.
//! Each construct is a direct transcription of its semantics ([Smeding25] §3.2–3.3 and the docs
//! in `ir.rs`), in its operation's rule home in `ops` (`Operation::eval`, which `Interp::eval_stmt`
//! runs).
//!
//! Assumes: the program is verified (`ops::verify`) and `inputs` match `program.inputs` in
//! number and type. A violated assumption is a caller bug and panics with a message saying so.
//!
//! Guarantees:
//! - Total semantics: an index outside `0..dim` in `index` or `gather` reads zero (a whole
//!   sub-array of zeros). With `InterpConfig::strict` it is `InterpError::OutOfRange` naming
//!   the binder of the reading statement instead. `scatter` drops out-of-range targets in both
//!   modes (dropping is not a read).
//! - `cond` evaluates only the taken branch (equivalent to [Smeding25]'s strict `cond` because
//!   every operation is total).
//! - The interrupt flag is checked once per iteration of `build1`, `fold`, `scan`, `while`
//!   (and of both sweeps of `while_reverse`), and per
//!   index-function call of `gather`/`scatter`, with a `Relaxed` load.
//! - `sumOuter` adds in dx's summation order (`prim::sum_order`, Note [Summation order]);
//!   `scatter` collisions add in index order.
//!
//! Does not handle: nothing is left out of the core IR today.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::core::ids::IdVec;
use crate::core::ir::{ArrTy, Atom, BlockId, Elem, Program, Scalar, Stmt, VarId};
use crate::core::value::{Array, ArrayData};
use crate::ops;

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
    OutOfRange {
        var: VarId,
        index: Vec<i64>,
        shape: Vec<usize>,
    },
    /// The interrupt flag was set.
    Interrupted,
    /// A value of `bytes` bytes (of shape `shape`, bound to `var` by an operation named `op`)
    /// was asked for, but only `available` bytes of memory are available. Raised before
    /// anything is allocated.
    TooLarge {
        var: VarId,
        op: String,
        shape: Vec<usize>,
        bytes: u128,
        available: u64,
    },
}

/// A byte count for people: `40 GB`, `512 MB`, `3.2 kB` (decimal units, 2 significant
/// digits at least).
pub fn format_bytes(bytes: u128) -> String {
    const UNITS: [&str; 7] = ["bytes", "kB", "MB", "GB", "TB", "PB", "EB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else if value < 10.0 {
        format!("{value:.1} {}", UNITS[unit])
    } else {
        format!("{value:.0} {}", UNITS[unit])
    }
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InterpError::OutOfRange { var, index, shape } => {
                write!(
                    f,
                    "index {index:?} is out of range for shape {shape:?} (reading {var})"
                )
            }
            InterpError::Interrupted => f.write_str("interrupted"),
            InterpError::TooLarge {
                var,
                op,
                shape,
                bytes,
                available,
            } => write!(
                f,
                "`{op}` needs {} of memory for a table of shape {shape:?} ({var}), but only {} \
                 is available",
                format_bytes(*bytes),
                format_bytes(u128::from(*available))
            ),
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
    let mut cx = Interp {
        program,
        config,
        env,
    };
    for (&var, array) in program.inputs.iter().zip(inputs) {
        debug_assert_eq!(
            &array.ty(),
            program.var_ty(var),
            "input {var} has the wrong type"
        );
        cx.env[var] = Some(array.clone());
    }
    cx.eval_block(program.main, Vec::new())
}

pub(crate) struct Interp<'a> {
    pub(crate) program: &'a Program,
    pub(crate) config: &'a InterpConfig,
    /// The current value of each variable. Every variable is bound once per evaluation of its
    /// block, so nested blocks (loop bodies) simply overwrite their own variables each
    /// iteration and never clobber a variable of an enclosing scope.
    env: IdVec<VarId, Option<Array>>,
}

pub(crate) type Res<T> = Result<T, InterpError>;

impl Interp<'_> {
    pub(crate) fn check_interrupt(&self) -> Res<()> {
        match &self.config.interrupt {
            Some(flag) if flag.load(Ordering::Relaxed) => Err(InterpError::Interrupted),
            _ => Ok(()),
        }
    }

    pub(crate) fn var(&self, var: VarId) -> &Array {
        self.env[var].as_ref().unwrap_or_else(|| {
            panic!("interp: {var} is used before it is bound (the verifier rules this out)")
        })
    }

    pub(crate) fn atom(&self, atom: &Atom) -> Array {
        match atom {
            Atom::Var(var) => self.var(*var).clone(),
            Atom::Lit(scalar) => Array::scalar(*scalar),
        }
    }

    /// An `I64` scalar atom as an index.
    pub(crate) fn index_atom(&self, atom: &Atom) -> i64 {
        as_index(&self.atom(atom))
    }

    pub(crate) fn binder_ty(&self, stmt: &Stmt, position: usize) -> &ArrTy {
        let var = stmt.binders.get(position).unwrap_or_else(|| {
            panic!("interp: statement lacks binder {position} (the verifier rules this out)")
        });
        self.program.var_ty(*var)
    }

    /// Binds the block's params to `args`, runs its statements and returns its results.
    pub(crate) fn eval_block(&mut self, block_id: BlockId, args: Vec<Array>) -> Res<Vec<Array>> {
        let block = &self.program.blocks[block_id];
        assert_eq!(
            block.params.len(),
            args.len(),
            "interp: {block_id} called with wrong arity"
        );
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
    pub(crate) fn eval_index_fn(&mut self, block_id: BlockId, index: &[i64]) -> Res<Vec<i64>> {
        self.check_interrupt()?;
        let args = index
            .iter()
            .map(|&i| Array::scalar(Scalar::I64(i)))
            .collect();
        Ok(self
            .eval_block(block_id, args)?
            .iter()
            .map(as_index)
            .collect())
    }

    fn eval_stmt(&mut self, stmt: &Stmt) -> Res<Vec<Array>> {
        ops::operation(&stmt.expr).eval(self, stmt)
    }

    /// The variable that strict-mode errors of `stmt` name.
    pub(crate) fn reader(stmt: &Stmt) -> VarId {
        stmt.binders.first().copied().unwrap_or(VarId(u32::MAX))
    }

    /// The values of atoms.
    pub(crate) fn atoms(&self, atoms: &[Atom]) -> Vec<Array> {
        atoms.iter().map(|atom| self.atom(atom)).collect()
    }

    /// Appends the sub-array `array[index]` (the outermost `index.len()` axes) to `out`: zeros
    /// if the index is out of range, or an error naming `reader` in strict mode.
    pub(crate) fn read_sub_array(
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
pub(crate) struct Stacked {
    shape: Vec<usize>,
    data: ArrayData,
}

impl Stacked {
    pub(crate) fn new(ty: &ArrTy) -> Stacked {
        Stacked {
            shape: ty.shape.clone(),
            data: ArrayData::with_capacity(ty.elem, ty.n_elems()),
        }
    }

    pub(crate) fn append(&mut self, value: &Array) {
        append_range(&value.data, 0..value.n_elems(), &mut self.data);
    }

    pub(crate) fn finish(self) -> Array {
        Array::new(self.shape, self.data)
    }
}

pub(crate) fn index_scalar(i: usize) -> Array {
    Array::scalar(Scalar::I64(i as i64))
}

pub(crate) fn as_index(array: &Array) -> i64 {
    match array.as_scalar() {
        Some(Scalar::I64(i)) => i,
        other => {
            panic!("interp: index {other:?} is not an i64 scalar (the verifier rules this out)")
        }
    }
}

pub(crate) fn append_range(data: &ArrayData, range: std::ops::Range<usize>, out: &mut ArrayData) {
    for flat in range {
        out.push(data.get(flat));
    }
}

pub(crate) fn from_scalars(shape: Vec<usize>, elem: Elem, scalars: Vec<Scalar>) -> Array {
    let mut data = ArrayData::with_capacity(elem, scalars.len());
    for scalar in scalars {
        data.push(scalar);
    }
    Array::new(shape, data)
}

/// The row-major flat offset of `index` in `shape` (same length), or `None` if any component
/// is outside `0..dim`.
pub(crate) fn ravel(index: &[i64], shape: &[usize]) -> Option<usize> {
    debug_assert_eq!(index.len(), shape.len());
    let mut flat = 0usize;
    for (&i, &dim) in index.iter().zip(shape) {
        let i = usize::try_from(i).ok().filter(|&i| i < dim)?;
        flat = flat * dim + i;
    }
    Some(flat)
}

/// The multi-index of row-major flat offset `flat` in `shape`.
pub(crate) fn unravel(mut flat: usize, shape: &[usize]) -> Vec<i64> {
    let mut index = vec![0i64; shape.len()];
    for (slot, &dim) in index.iter_mut().zip(shape).rev() {
        *slot = (flat % dim) as i64;
        flat /= dim;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::verify::verify;

    fn f64s(shape: &[usize], values: &[f64]) -> Array {
        Array::new(shape.to_vec(), ArrayData::F64(values.to_vec()))
    }

    fn i64s(shape: &[usize], values: &[i64]) -> Array {
        Array::new(shape.to_vec(), ArrayData::I64(values.to_vec()))
    }

    fn parse(text: &str) -> Program {
        crate::core::parse::parse_program(text).unwrap_or_else(|error| panic!("{error}\n{text}"))
    }

    /// Verifies, then runs (non-strict).
    fn run_ok(program: &Program, inputs: &[Array]) -> Vec<Array> {
        if let Err(errors) = verify(program) {
            panic!("{program}\n{errors:?}");
        }
        run(program, inputs, &InterpConfig::default()).expect("a non-strict run cannot fail")
    }

    fn run_strict(program: &Program, inputs: &[Array]) -> Result<Vec<Array>, InterpError> {
        assert_eq!(verify(program), Ok(()));
        run(
            program,
            inputs,
            &InterpConfig {
                strict: true,
                interrupt: None,
            },
        )
    }

    #[test]
    fn atom_and_prim_are_elementwise() {
        let program = parse(
            r"program(%0_x: [3]f64) {
  %1: [3]f64 = mul %0_x %0_x
  %2: [3]f64 = add %1 %0_x
  %3: [3]f64 = %2
  %4: []i64 = add 3:i64 4:i64
  %5: []f64 = 2.5:f64
  %6: [3]bool = gt %3 %3
  in %3, %4, %5, %6
}",
        );
        let res = run_ok(&program, &[f64s(&[3], &[1.0, -2.0, 0.5])]);
        assert_eq!(res[0], f64s(&[3], &[2.0, 2.0, 0.75]));
        assert_eq!(res[1], i64s(&[], &[7]));
        assert_eq!(res[2], f64s(&[], &[2.5]));
        assert_eq!(res[3], Array::new(vec![3], ArrayData::Bool(vec![false; 3])));
    }

    #[test]
    fn build1_stacks_its_results() {
        let program = parse(
            r"program(%0_x: [4]f64) {
  %5: [4]f64, %6: [4]i64 = build1 4 (\%1: []i64 ->
    %2: []f64 = index %0_x [%1]
    %3: []f64 = mul %2 %2
    %4: []i64 = mul %1 2:i64
    in %3, %4)
  %9: [0, 2]i64 = build1 0 (\%7: []i64 ->
    %8: [2]i64 = replicate 2 %7
    in %8)
  in %5, %6, %9
}",
        );
        let out = run_ok(&program, &[f64s(&[4], &[1.0, 2.0, 3.0, 4.0])]);
        assert_eq!(out[0], f64s(&[4], &[1.0, 4.0, 9.0, 16.0]));
        assert_eq!(out[1], i64s(&[4], &[0, 2, 4, 6]));
        assert_eq!(out[2], i64s(&[0, 2], &[]));
    }

    #[test]
    fn nested_build1_uses_outer_index() {
        // build1 2 (\i. build1 3 (\j. x[i, j] + i))  with x : [2, 3]f64 cast.
        let program = parse(
            r"program(%0_x: [2, 3]i64) {
  %6: [2, 3]i64 = build1 2 (\%1: []i64 ->
    %5: [3]i64 = build1 3 (\%2: []i64 ->
      %3: []i64 = index %0_x [%1, %2]
      %4: []i64 = add %3 %1
      in %4)
    in %5)
  in %6
}",
        );
        let out = run_ok(&program, &[i64s(&[2, 3], &[1, 2, 3, 4, 5, 6])]);
        assert_eq!(out[0], i64s(&[2, 3], &[1, 2, 3, 5, 6, 7]));
    }

    #[test]
    fn index_reads_subarrays_and_zero_out_of_range() {
        let program = parse(
            r"program(%0_x: [2, 3]f64, %1_i: []i64) {
  %2: [3]f64 = index %0_x [%1_i]
  %3: []f64 = index %0_x [1:i64, 2:i64]
  %4: [2, 3]f64 = index %0_x []
  %5: []f64 = index %0_x [0:i64, 3:i64]
  in %2, %3, %4, %5
}",
        );
        let x_value = f64s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let out = run_ok(&program, &[x_value.clone(), i64s(&[], &[1])]);
        assert_eq!(out[0], f64s(&[3], &[4.0, 5.0, 6.0]));
        assert_eq!(out[1], f64s(&[], &[6.0]));
        assert_eq!(out[2], x_value);
        assert_eq!(out[3], f64s(&[], &[0.0]));
        for bad in [-1, 2, i64::MIN] {
            let out = run_ok(&program, &[x_value.clone(), i64s(&[], &[bad])]);
            assert_eq!(out[0], f64s(&[3], &[0.0; 3]), "row {bad}");
        }
    }

    #[test]
    fn strict_index_reports_the_binder() {
        let program = parse(
            r"program(%0_x: [2, 3]f64, %1_i: []i64) {
  %2: []f64 = index %0_x [%1_i, 0:i64]
  in %2
}",
        );
        let x_value = f64s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(
            run_strict(&program, &[x_value.clone(), i64s(&[], &[1])]).unwrap()[0],
            f64s(&[], &[4.0])
        );
        let error = run_strict(&program, &[x_value, i64s(&[], &[5])]).unwrap_err();
        let row_var = VarId(2);
        assert_eq!(
            error,
            InterpError::OutOfRange {
                var: row_var,
                index: vec![5, 0],
                shape: vec![2, 3]
            }
        );
        assert_eq!(
            error.to_string(),
            format!("index [5, 0] is out of range for shape [2, 3] (reading {row_var})")
        );
    }

    #[test]
    fn sum_outer_sums_rows_and_empty_gives_zeros() {
        let program = parse(
            r"program(%0_x: [2, 3]f64, %1_empty: [0, 2]i64) {
  %2: [3]f64 = sumOuter %0_x
  %3: []f64 = sumOuter %2
  %4: [2]i64 = sumOuter %1_empty
  in %2, %3, %4
}",
        );
        let out = run_ok(
            &program,
            &[
                f64s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
                i64s(&[0, 2], &[]),
            ],
        );
        assert_eq!(out[0], f64s(&[3], &[5.0, 7.0, 9.0]));
        assert_eq!(out[1], f64s(&[], &[21.0]));
        assert_eq!(out[2], i64s(&[2], &[0, 0]));
    }

    #[test]
    fn gather_reads_through_the_index_function() {
        let program = parse(
            r"program(%0_x: [5]f64, %1_m: [2, 3]f64) {
  %4: [3]f64 = gather [3] %0_x (\%2: []i64 ->
    %3: []i64 = mul %2 2:i64
    in %3)
  %7: [4]f64 = gather [4] %0_x (\%5: []i64 ->
    %6: []i64 = add %5 3:i64
    in %6)
  %10: [3, 2]f64 = gather [3, 2] %1_m (\%8: []i64, %9: []i64 ->
    in %9, %8)
  %13: [2, 3]f64 = gather [2, 3] %1_m (\%11: []i64 ->
    %12: []i64 = sub 1:i64 %11
    in %12)
  in %4, %7, %10, %13
}",
        );
        let m_value = f64s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let inputs = [f64s(&[5], &[10.0, 20.0, 30.0, 40.0, 50.0]), m_value];
        let out = run_ok(&program, &inputs);
        assert_eq!(out[0], f64s(&[3], &[10.0, 30.0, 50.0]));
        assert_eq!(out[1], f64s(&[4], &[40.0, 50.0, 0.0, 0.0]));
        assert_eq!(out[2], f64s(&[3, 2], &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]));
        assert_eq!(out[3], f64s(&[2, 3], &[4.0, 5.0, 6.0, 1.0, 2.0, 3.0]));
        let shifted_var = VarId(7);
        assert_eq!(
            run_strict(&program, &inputs).unwrap_err(),
            InterpError::OutOfRange {
                var: shifted_var,
                index: vec![5],
                shape: vec![5]
            }
        );
    }

    /// [Smeding25] §3.3: `scatter [6] [1..9] (\[i]. [i div 2]) = [3, 7, 11, 15, 9, 0]`.
    #[test]
    fn scatter_adds_collisions_seed_001_example() {
        let program = parse(
            r"program(%0_t: [9]i64) {
  %3: [6]i64 = scatter [6] %0_t (\%1: []i64 ->
    %2: []i64 = idiv %1 2:i64
    in %2)
  in %3
}",
        );
        let input = i64s(&[9], &[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(
            run_ok(&program, std::slice::from_ref(&input))[0],
            i64s(&[6], &[3, 7, 11, 15, 9, 0])
        );
        assert_eq!(
            run_strict(&program, &[input]).unwrap()[0],
            i64s(&[6], &[3, 7, 11, 15, 9, 0])
        );
    }

    #[test]
    fn scatter_drops_out_of_range_targets_even_when_strict() {
        // scatter [2, 2] m (\[i]. [i - 1]) with m : [3, 2]: row 0 is dropped, rows 1 and 2 land.
        // scatter [2] v (\[i]. [0, i]): a 2-d target index into a [2, 2]... see below.
        let program = parse(
            r"program(%0_m: [3, 2]f64) {
  %3: [2, 2]f64 = scatter [2, 2] %0_m (\%1: []i64 ->
    %2: []i64 = sub %1 1:i64
    in %2)
  %7: [2, 3]f64 = scatter [2, 3] %0_m (\%4: []i64, %5: []i64 ->
    %6: []i64 = mod %5 2:i64
    in %6, %4)
  in %3, %7
}",
        );
        let m_value = f64s(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let out = run_strict(&program, &[m_value]).unwrap();
        assert_eq!(out[0], f64s(&[2, 2], &[3.0, 4.0, 5.0, 6.0]));
        assert_eq!(out[1], f64s(&[2, 3], &[1.0, 3.0, 5.0, 2.0, 4.0, 6.0]));
    }

    #[test]
    fn table_replicate_iota_reshape() {
        let program = parse(
            r"program(%0_x: [2]f64, %1_y: [2]f64) {
  %2: [3, 2]f64 = table [%0_x, %1_y, %0_x]
  %3: [2]f64 = table [1.0:f64, 2.0:f64]
  %4: [0, 3]f64 = table []
  %5: [2, 2]f64 = replicate 2 %0_x
  %6: [0, 2]f64 = replicate 0 %0_x
  %7: [4]i64 = iota 4
  %8: [2, 3]f64 = reshape [2, 3] %2
  %9: [1]i64 = iota 1
  %10: []i64 = reshape [] %9
  in %2, %3, %4, %5, %6, %7, %8, %10
}",
        );
        let out = run_ok(
            &program,
            &[f64s(&[2], &[1.0, 2.0]), f64s(&[2], &[3.0, 4.0])],
        );
        assert_eq!(out[0], f64s(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 1.0, 2.0]));
        assert_eq!(out[1], f64s(&[2], &[1.0, 2.0]));
        assert_eq!(out[2], f64s(&[0, 3], &[]));
        assert_eq!(out[3], f64s(&[2, 2], &[1.0, 2.0, 1.0, 2.0]));
        assert_eq!(out[4], f64s(&[0, 2], &[]));
        assert_eq!(out[5], i64s(&[4], &[0, 1, 2, 3]));
        assert_eq!(out[6], f64s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 1.0, 2.0]));
        assert_eq!(out[7], i64s(&[], &[0]));
    }

    #[test]
    fn reshape_of_mismatched_count_is_rejected_by_the_verifier() {
        let program = parse(
            r"program(%0_x: [2]f64) {
  %1: []f64 = reshape [] %0_x
  in %1
}",
        );
        assert!(verify(&program).is_err());
    }

    #[test]
    fn transpose_moves_axes() {
        // tr [3, 0, 1, 2] on [2, 1, 3, 2] gives [2, 2, 1, 3]: out[a, b, c, d] = in[b, c, d, a].
        let in_shape = [2usize, 1, 3, 2];
        let n_elems: usize = in_shape.iter().product();
        let values: Vec<f64> = (0..n_elems).map(|v| v as f64).collect();
        let program = parse(
            r"program(%0_x: [2, 1, 3, 2]f64) {
  %1: [2, 2, 1, 3]f64 = tr [3, 0, 1, 2] %0_x
  %2: [1, 2, 3, 2]f64 = tr [1, 0] %0_x
  %3: [2, 1, 3, 2]f64 = tr [] %0_x
  in %1, %2, %3
}",
        );
        let input = f64s(&in_shape, &values);
        let out = run_ok(&program, std::slice::from_ref(&input));
        let at = |index: [usize; 4]| {
            let flat = ((index[0] * in_shape[1] + index[1]) * in_shape[2] + index[2]) * in_shape[3]
                + index[3];
            values[flat]
        };
        let mut full_expected = Vec::new();
        let mut partial_expected = Vec::new();
        for a in 0..2 {
            for b in 0..2 {
                for c in 0..1 {
                    for d in 0..3 {
                        full_expected.push(at([b, c, d, a]));
                    }
                }
            }
        }
        for a in 0..1 {
            for b in 0..2 {
                for c in 0..3 {
                    for d in 0..2 {
                        partial_expected.push(at([b, a, c, d]));
                    }
                }
            }
        }
        assert_eq!(out[0], f64s(&[2, 2, 1, 3], &full_expected));
        assert_eq!(out[1], f64s(&[1, 2, 3, 2], &partial_expected));
        assert_eq!(out[2], input);
    }

    #[test]
    fn cond_evaluates_only_the_taken_branch() {
        let program = parse(
            r"program(%0_x: [2]f64, %1_c: []bool) {
  %4: []f64, %5: []i64 = cond %1_c (\ ->
    %2: []f64 = index %0_x [0:i64]
    in %2, 1:i64) (\ ->
    %3: []f64 = index %0_x [7:i64]
    in %3, 2:i64)
  in %4, %5
}",
        );
        let x_value = f64s(&[2], &[5.0, 6.0]);
        let yes = Array::scalar(Scalar::Bool(true));
        let no = Array::scalar(Scalar::Bool(false));
        let out = run_strict(&program, &[x_value.clone(), yes]).unwrap();
        assert_eq!(out, vec![f64s(&[], &[5.0]), i64s(&[], &[1])]);
        assert!(matches!(
            run_strict(&program, &[x_value.clone(), no.clone()]),
            Err(InterpError::OutOfRange { .. })
        ));
        assert_eq!(
            run_ok(&program, &[x_value, no]),
            vec![f64s(&[], &[0.0]), i64s(&[], &[2])]
        );
    }

    #[test]
    fn fold_threads_several_carries() {
        // fold 4 (0, 1) (\i s p. (s + x[i], p * x[i])).
        let program = parse(
            r"program(%0_x: [4]f64) {
  %7: []f64, %8: []f64 = fold 4 (0.0:f64, 1.0:f64) (\%1: []i64, %2: []f64, %3: []f64 ->
    %4: []f64 = index %0_x [%1]
    %5: []f64 = add %2 %4
    %6: []f64 = mul %3 %4
    in %5, %6)
  %11: [4]f64 = fold 0 (%0_x) (\%9: []i64, %10: [4]f64 ->
    in %10)
  in %7, %8, %11
}",
        );
        let out = run_ok(&program, &[f64s(&[4], &[1.0, 2.0, 3.0, 4.0])]);
        assert_eq!(
            out,
            vec![
                f64s(&[], &[10.0]),
                f64s(&[], &[24.0]),
                f64s(&[4], &[1.0, 2.0, 3.0, 4.0])
            ]
        );
    }

    #[test]
    fn scan_binds_final_carry_then_stacked_ys() {
        // scan 3 (0) (\i s. (s + x[i], [s, i])): the final sum, then the running sums before each
        // step and the indices.
        let program = parse(
            r"program(%0_x: [3]i64) {
  %6: []i64, %7: [3, 2]i64, %8: [3]i64 = scan 3 (0:i64) (\%1: []i64, %2: []i64 ->
    %3: []i64 = index %0_x [%1]
    %4: []i64 = add %2 %3
    %5: [2]i64 = table [%2, %1]
    in %4, %5, %4)
  %11: []i64, %12: [0]i64 = scan 0 (9:i64) (\%9: []i64, %10: []i64 ->
    in %10, %9)
  in %6, %7, %8, %11, %12
}",
        );
        let out = run_ok(&program, &[i64s(&[3], &[5, 6, 7])]);
        assert_eq!(out[0], i64s(&[], &[18]));
        assert_eq!(out[1], i64s(&[3, 2], &[0, 0, 5, 1, 11, 2]));
        assert_eq!(out[2], i64s(&[3], &[5, 11, 18]));
        assert_eq!(out[3], i64s(&[], &[9]));
        assert_eq!(out[4], i64s(&[0], &[]));
    }

    #[test]
    fn interrupt_stops_loops() {
        let program = parse(
            r"program() {
  %1: [3]i64 = build1 3 (\%0: []i64 ->
    in %0)
  in %1
}",
        );
        let flag = Arc::new(AtomicBool::new(false));
        let config = InterpConfig {
            strict: false,
            interrupt: Some(flag.clone()),
        };
        assert_eq!(
            run(&program, &[], &config).unwrap()[0],
            i64s(&[3], &[0, 1, 2])
        );
        flag.store(true, Ordering::Relaxed);
        assert_eq!(run(&program, &[], &config), Err(InterpError::Interrupted));
        assert_eq!(InterpError::Interrupted.to_string(), "interrupted");
    }

    #[test]
    fn f32_and_bool_arrays_work_too() {
        let program = parse(
            r"program(%0_x: [2]f32) {
  %1: [2]bool = gt %0_x %0_x
  %2: [2]bool = not %1
  %3: [2]f32 = cast_f32 %2
  %4: [2]f32 = mul %3 %0_x
  in %4
}",
        );
        let input = Array::new(vec![2], ArrayData::F32(vec![1.5, -2.0]));
        assert_eq!(run_ok(&program, std::slice::from_ref(&input))[0], input);
    }
}
