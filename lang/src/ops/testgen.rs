//! Building core programs by hand, and generating random well-typed ones for tests.
//!
//! - `Builder` appends statements to the current block and infers binder types with
//!   `verify::expr_types`; nested blocks are built with closures. It is meant for tests and
//!   hand-built fixtures: an ill-typed expression panics (use `bind_as` to declare types
//!   yourself, e.g. to build a broken program for a verifier test).
//! - `random_program(seed, config)` generates a verified program from a seed (a small
//!   deterministic PRNG, no dependency), using every expression form: nested `build1`,
//!   `index` with computed and sometimes out-of-range indices, `cond`, `sumOuter`,
//!   `gather`/`scatter` with computed index functions, tables, `replicate`, `tr`, `reshape`,
//!   `iota`, `fold`/`scan` with several carries, `while` and `while_reverse` loops that end
//!   within a few steps, and multi-result statements. `random_inputs`
//!   makes matching inputs. Later passes compare themselves against `ops::interp` on these.
//!
//! Guarantees: the same seed and config give the same program on every platform; generated
//! programs pass `verify`; values are small (|x| ≤ 2 for floats) so that results stay finite
//! in most programs (NaN and infinities can still appear, e.g. from `div`).

use super::verify::expr_types;
use crate::core::ir::{
    ArrTy, Atom, BlockId, Build1, Cond, Elem, Expr, Fold, Gather, Index, Iota, Monoid, PrimApp,
    Program, Replicate, Reshape, Scalar, Scan, Scatter, Stmt, SumOuter, Table, Transpose, VarId,
    While, WhileReverse,
};
use crate::core::value::{Array, ArrayData};
use crate::prim::Prim;

/// Builds a program statement by statement.
#[derive(Debug)]
pub struct Builder {
    pub program: Program,
    /// The block being filled, innermost last.
    stack: Vec<BlockId>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    pub fn new() -> Builder {
        let program = Program::new();
        let main = program.main;
        Builder {
            program,
            stack: vec![main],
        }
    }

    /// Declares an input of the program.
    pub fn input(&mut self, ty: ArrTy, hint: &str) -> Atom {
        let var = self.program.new_var(ty, hint);
        self.program.inputs.push(var);
        Atom::Var(var)
    }

    fn current(&self) -> BlockId {
        *self
            .stack
            .last()
            .expect("the builder's block stack always holds main")
    }

    /// Appends `binders = expr` with binders of the given types.
    pub fn bind_as(&mut self, tys: Vec<ArrTy>, expr: Expr) -> Vec<Atom> {
        let binders: Vec<VarId> = tys
            .into_iter()
            .map(|ty| self.program.new_var(ty, ""))
            .collect();
        let block = self.current();
        self.program.blocks[block].stmts.push(Stmt {
            binders: binders.clone(),
            expr,
        });
        binders.into_iter().map(Atom::Var).collect()
    }

    /// Appends a statement, with binder types inferred by the typing rules.
    ///
    /// Panics if the expression is ill-typed (this is a builder for tests and fixtures).
    pub fn bind(&mut self, expr: Expr) -> Vec<Atom> {
        let tys = expr_types(&self.program, &expr)
            .unwrap_or_else(|error| panic!("Builder::bind: ill-typed {expr:?}: {error}"));
        self.bind_as(tys, expr)
    }

    /// Appends a statement with one result.
    pub fn let1(&mut self, expr: Expr) -> Atom {
        let atoms = self.bind(expr);
        assert_eq!(
            atoms.len(),
            1,
            "Builder::let1 on an expression with {} results",
            atoms.len()
        );
        atoms[0]
    }

    /// Appends `prim operands`.
    pub fn prim(&mut self, prim: Prim, operands: &[Atom]) -> Atom {
        self.let1(Expr::from(PrimApp(prim, operands.to_vec())))
    }

    /// Sets the printing hint of a variable.
    pub fn name(&mut self, atom: Atom, hint: &str) -> Atom {
        if let Atom::Var(var) = atom {
            self.program.vars[var].hint = hint.to_string();
        }
        atom
    }

    /// The type of an atom.
    pub fn ty(&self, atom: Atom) -> ArrTy {
        self.program.atom_ty(&atom)
    }

    /// Builds a nested block with params of the given types; `body` appends its statements
    /// and returns its results.
    pub fn block(
        &mut self,
        param_tys: &[ArrTy],
        body: impl FnOnce(&mut Builder, &[Atom]) -> Vec<Atom>,
    ) -> BlockId {
        let block = self.program.new_block();
        let params: Vec<VarId> = param_tys
            .iter()
            .map(|ty| self.program.new_var(ty.clone(), ""))
            .collect();
        self.program.blocks[block].params = params.clone();
        self.stack.push(block);
        let param_atoms: Vec<Atom> = params.into_iter().map(Atom::Var).collect();
        let results = body(self, &param_atoms);
        self.stack.pop();
        self.program.blocks[block].results = results;
        block
    }

    /// A block whose params are `n_params` index (`I64` scalar) params.
    pub fn index_block(
        &mut self,
        n_params: usize,
        body: impl FnOnce(&mut Builder, &[Atom]) -> Vec<Atom>,
    ) -> BlockId {
        self.block(&vec![ArrTy::scalar(Elem::I64); n_params], body)
    }

    /// Finishes the program with the results of `main`.
    pub fn finish(mut self, results: Vec<Atom>) -> Program {
        let main = self.program.main;
        self.program.blocks[main].results = results;
        self.program
    }
}

/// A literal `I64` index.
pub fn idx(i: i64) -> Atom {
    Atom::Lit(Scalar::I64(i))
}

/// Limits of `random_program`.
#[derive(Clone, Debug)]
pub struct GenConfig {
    /// Nesting depth of blocks.
    pub max_depth: usize,
    /// Statements generated in `main` (nested blocks get up to 3).
    pub max_stmts: usize,
    /// Largest size of a generated axis.
    pub max_dim: usize,
    pub max_rank: usize,
    /// Largest element count of any generated variable.
    pub max_elems: usize,
    /// Largest number of inputs (at least one is generated).
    pub max_inputs: usize,
    /// Whether to draw `while` and `while_reverse` loops (a `while_reverse`, and the
    /// gradient of a `while`, have no StableHLO form).
    pub whiles: bool,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            max_depth: 2,
            max_stmts: 12,
            max_dim: 3,
            max_rank: 3,
            max_elems: 36,
            max_inputs: 3,
            whiles: true,
        }
    }
}

impl GenConfig {
    /// Programs nested one level deeper and a third longer than the default: the deeper
    /// programs of the BOT's and the schedule parser's tests.
    pub fn deeper() -> Self {
        GenConfig {
            max_depth: 3,
            max_stmts: 16,
            ..GenConfig::default()
        }
    }
}

/// A small deterministic PRNG (SplitMix64).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        debug_assert!(n > 0);
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: usize, den: usize) -> bool {
        self.below(den) < num
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// A random value of a type: floats are multiples of 0.25 in `[-2, 2]`, signed integers in
/// `[-3, 5]`, unsigned in `[0, 5]`.
pub fn random_array(rng: &mut Rng, ty: &ArrTy) -> Array {
    let mut data = ArrayData::with_capacity(ty.elem, ty.n_elems());
    for _ in 0..ty.n_elems() {
        data.push(random_scalar(rng, ty.elem));
    }
    Array::new(ty.shape.clone(), data)
}

fn random_scalar(rng: &mut Rng, elem: Elem) -> Scalar {
    let quarter = (rng.below(17) as f64 - 8.0) * 0.25;
    let int = rng.below(9) as i64 - 3;
    let nat = rng.below(6) as u64;
    match elem {
        Elem::F32 => Scalar::F32(quarter as f32),
        Elem::F64 => Scalar::F64(quarter),
        Elem::I32 => Scalar::I32(int as i32),
        Elem::I64 => Scalar::I64(int),
        Elem::U32 => Scalar::U32(nat as u32),
        Elem::U64 => Scalar::U64(nat),
        Elem::Bool => Scalar::Bool(rng.chance(1, 2)),
    }
}

/// Random inputs for `program`.
pub fn random_inputs(program: &Program, seed: u64) -> Vec<Array> {
    let mut rng = Rng::new(seed ^ 0x5eed_1a7a);
    program
        .inputs
        .iter()
        .map(|&var| random_array(&mut rng, program.var_ty(var)))
        .collect()
}

/// A random well-typed program.
pub fn random_program(seed: u64, config: &GenConfig) -> Program {
    let mut generator = Gen {
        rng: Rng::new(seed),
        config,
        builder: Builder::new(),
        scope: Vec::new(),
    };
    generator.program()
}

struct Gen<'a> {
    rng: Rng,
    config: &'a GenConfig,
    builder: Builder,
    /// Variables usable at the current point, in definition order.
    scope: Vec<VarId>,
}

const INDEX: Elem = Elem::I64;

fn index_ty() -> ArrTy {
    ArrTy::scalar(INDEX)
}

fn prepend(size: usize, ty: &ArrTy) -> ArrTy {
    let mut shape = vec![size];
    shape.extend_from_slice(&ty.shape);
    ArrTy::new(shape, ty.elem)
}

impl Gen<'_> {
    fn ty(&self, var: VarId) -> ArrTy {
        self.builder.program.var_ty(var).clone()
    }

    fn fits(&self, ty: &ArrTy) -> bool {
        ty.rank() <= self.config.max_rank && ty.n_elems() <= self.config.max_elems
    }

    /// Binds an expression and adds its binders to the scope.
    fn bind(&mut self, expr: Expr) -> Vec<VarId> {
        let atoms = self.builder.bind(expr);
        let vars: Vec<VarId> = atoms
            .into_iter()
            .filter_map(|atom| match atom {
                Atom::Var(var) => Some(var),
                Atom::Lit(_) => None,
            })
            .collect();
        self.scope.extend(&vars);
        vars
    }

    fn bind1(&mut self, expr: Expr) -> VarId {
        self.bind(expr)[0]
    }

    /// A variable in scope satisfying `accept`, preferring recent ones.
    fn pick_var(&mut self, accept: impl Fn(&ArrTy) -> bool) -> Option<VarId> {
        let candidates: Vec<VarId> = self
            .scope
            .iter()
            .copied()
            .filter(|&var| accept(&self.ty(var)))
            .collect();
        if candidates.is_empty() {
            return None;
        }
        if self.rng.chance(1, 2) {
            let recent = &candidates[candidates.len().saturating_sub(3)..];
            Some(self.rng.pick(recent))
        } else {
            Some(self.rng.pick(&candidates))
        }
    }

    /// A variable of exactly this type, preferring variables defined at or after `since` in
    /// the scope.
    fn pick_of_type(&mut self, ty: &ArrTy, since: usize) -> Option<VarId> {
        let local: Vec<VarId> = self.scope[since..]
            .iter()
            .copied()
            .filter(|&var| self.ty(var) == *ty)
            .collect();
        if !local.is_empty() && self.rng.chance(3, 4) {
            return Some(self.rng.pick(&local));
        }
        self.pick_var(|other| other == ty)
    }

    fn random_elem(&mut self) -> Elem {
        match self.rng.below(20) {
            0..=10 => Elem::F64,
            11..=15 => Elem::I64,
            16..=17 => Elem::F32,
            _ => Elem::Bool,
        }
    }

    fn random_ty(&mut self) -> ArrTy {
        let rank = self.rng.range(0, 2.min(self.config.max_rank));
        let shape = (0..rank)
            .map(|_| self.rng.range(1, self.config.max_dim))
            .collect();
        ArrTy::new(shape, self.random_elem())
    }

    /// An axis size: occasionally 0, else `1..=max_dim`.
    fn size(&mut self) -> usize {
        if self.rng.chance(1, 10) {
            0
        } else {
            self.rng.range(1, self.config.max_dim.max(1))
        }
    }

    fn literal(&mut self, elem: Elem) -> Atom {
        Atom::Lit(random_scalar(&mut self.rng, elem))
    }

    fn program(&mut self) -> Program {
        let n_inputs = self.rng.range(1, self.config.max_inputs.max(1));
        for input in 0..n_inputs {
            // Make sure there is an array to work on, and sometimes an index input.
            let ty = match input {
                0 => ArrTy::new(
                    vec![self
                        .rng
                        .range(2.min(self.config.max_dim), self.config.max_dim)],
                    Elem::F64,
                ),
                _ if self.rng.chance(1, 4) => index_ty(),
                _ => self.random_ty(),
            };
            if let Atom::Var(var) = self.builder.input(ty, &format!("in{input}")) {
                self.scope.push(var);
            }
        }
        let n_stmts = self.rng.range(1, self.config.max_stmts.max(1));
        for _ in 0..n_stmts {
            self.stmt(0);
        }
        let n_results = self.rng.range(1, 3);
        let results: Vec<Atom> = (0..n_results)
            .filter_map(|_| self.pick_var(|_| true))
            .map(Atom::Var)
            .collect();
        let builder = std::mem::take(&mut self.builder);
        builder.finish(results)
    }

    /// Generates one statement (or a few, when operands must be computed first).
    fn stmt(&mut self, depth: usize) {
        let nested = depth < self.config.max_depth;
        for _ in 0..8 {
            let done = match self.rng.below(25) {
                0..=4 => self.arith(),
                5 => self.compare_select(),
                6 => self.cast(),
                7..=8 => self.index(),
                9 if nested => self.build1(depth),
                10 => self.sum_outer(),
                11 if nested => self.gather(depth),
                12 if nested => self.scatter(depth),
                13 => self.table(),
                14 => self.replicate(),
                15 => self.transpose(),
                16 => self.reshape(),
                17 if nested => self.cond(depth),
                18 => self.iota(),
                19 if nested => self.fold(depth),
                20 if nested => self.scan(depth),
                21 => self.monoid(),
                22 if nested && self.config.whiles => self.while_loop(depth),
                23 if nested && self.config.whiles => self.while_reverse(depth),
                _ => self.literal_stmt(),
            };
            if done {
                return;
            }
        }
        self.literal_stmt();
    }

    fn stmts(&mut self, depth: usize, lo: usize, hi: usize) {
        for _ in 0..self.rng.range(lo, hi) {
            self.stmt(depth);
        }
    }

    fn literal_stmt(&mut self) -> bool {
        let elem = self.random_elem();
        let atom = self.literal(elem);
        self.bind1(Expr::from(atom));
        true
    }

    fn arith(&mut self) -> bool {
        let Some(x) = self.pick_var(|ty| ty.elem.is_numeric()) else {
            return false;
        };
        let ty = self.ty(x);
        // The operations of every numeric type, then the float or the integer ones.
        let extra: &[Prim] = if ty.elem.is_float() {
            &[Prim::Sin, Prim::Tanh, Prim::Mod]
        } else {
            &[Prim::Mod, Prim::IDiv]
        };
        let prims: Vec<Prim> = [
            Prim::Add,
            Prim::Sub,
            Prim::Mul,
            Prim::Div,
            Prim::Neg,
            Prim::Abs,
            Prim::Min,
            Prim::Max,
        ]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
        let prim = self.rng.pick(&prims);
        let mut operands = vec![Atom::Var(x)];
        if prim.arity() == 2 {
            operands.push(self.same_type_operand(&ty));
        }
        self.bind1(Expr::from(PrimApp(prim, operands)));
        true
    }

    /// Another variable of the type, a literal (for scalars), or nothing better: the same
    /// variable again is chosen by the caller's fallback.
    fn same_type_operand(&mut self, ty: &ArrTy) -> Atom {
        if ty.rank() == 0 && self.rng.chance(1, 3) {
            return self.literal(ty.elem);
        }
        let var = self
            .pick_var(|other| other == ty)
            .expect("the first operand has this type");
        Atom::Var(var)
    }

    fn compare_select(&mut self) -> bool {
        let Some(x) = self.pick_var(|ty| ty.elem.is_numeric()) else {
            return false;
        };
        let ty = self.ty(x);
        let y = self.same_type_operand(&ty);
        let prim = self.rng.pick(&[Prim::Lt, Prim::Le, Prim::Eq, Prim::Gt]);
        let cond = self.bind1(Expr::from(PrimApp(prim, vec![Atom::Var(x), y])));
        if self.rng.chance(2, 3) {
            self.bind1(Expr::from(PrimApp(
                Prim::Select,
                vec![Atom::Var(cond), y, Atom::Var(x)],
            )));
        } else {
            let other = self.pick_var(|other| other.elem == Elem::Bool && other.shape == ty.shape);
            let other = other.map_or(Atom::Var(cond), Atom::Var);
            let prim = self.rng.pick(&[Prim::And, Prim::Or]);
            let both = self.bind1(Expr::from(PrimApp(prim, vec![Atom::Var(cond), other])));
            self.bind1(Expr::from(PrimApp(Prim::Not, vec![Atom::Var(both)])));
        }
        true
    }

    fn cast(&mut self) -> bool {
        let Some(x) = self.pick_var(|_| true) else {
            return false;
        };
        let elem = self
            .rng
            .pick(&[Elem::F64, Elem::I64, Elem::F32, Elem::Bool, Elem::I32]);
        self.bind1(Expr::from(PrimApp(Prim::Cast(elem), vec![Atom::Var(x)])));
        true
    }

    /// An index into an axis of size `dim`: an index variable in scope, a computed index, or
    /// a literal that is occasionally out of range.
    fn index_atom(&mut self, dim: usize) -> Atom {
        match self.rng.below(6) {
            0..=2 => match self.pick_var(|ty| *ty == index_ty()) {
                Some(var) if self.rng.chance(1, 2) => Atom::Var(var),
                Some(var) => {
                    let prim = self
                        .rng
                        .pick(&[Prim::Add, Prim::Sub, Prim::IDiv, Prim::Mod]);
                    let offset = idx(self.rng.range(1, 2) as i64);
                    Atom::Var(self.bind1(Expr::from(PrimApp(prim, vec![Atom::Var(var), offset]))))
                }
                None => idx(self.rng.below(dim.max(1)) as i64),
            },
            3 => idx(self.rng.pick(&[-1, dim as i64])),
            _ => idx(self.rng.below(dim.max(1)) as i64),
        }
    }

    /// An index derived from an index variable: itself, or shifted or scaled by a literal.
    fn derived_index(&mut self, var: VarId) -> Atom {
        if self.rng.chance(1, 2) {
            return Atom::Var(var);
        }
        let prim = self
            .rng
            .pick(&[Prim::Add, Prim::Sub, Prim::Mul, Prim::IDiv, Prim::Mod]);
        let operand = idx(self.rng.range(1, 2) as i64);
        let operands = if prim == Prim::Sub && self.rng.chance(1, 2) {
            vec![operand, Atom::Var(var)]
        } else {
            vec![Atom::Var(var), operand]
        };
        Atom::Var(self.bind1(Expr::from(PrimApp(prim, operands))))
    }

    /// A read of some array at an index derived from `var` (a loop index), so that a loop
    /// body depends on its index. Falls back to any statement.
    fn index_at(&mut self, var: VarId, depth: usize) {
        let Some(array) = self.pick_var(|ty| ty.rank() >= 1) else {
            return self.stmt(depth);
        };
        let ty = self.ty(array);
        let mut index = vec![self.derived_index(var)];
        let n_index = self.rng.range(1, ty.rank());
        for axis in 1..n_index {
            index.push(self.index_atom(ty.shape[axis]));
        }
        self.bind1(Expr::from(Index {
            array: Atom::Var(array),
            index,
        }));
    }

    fn index(&mut self) -> bool {
        let Some(array) = self.pick_var(|ty| ty.rank() >= 1) else {
            return false;
        };
        let ty = self.ty(array);
        let n_index = self.rng.range(1, ty.rank());
        let index = (0..n_index)
            .map(|axis| self.index_atom(ty.shape[axis]))
            .collect();
        self.bind1(Expr::from(Index {
            array: Atom::Var(array),
            index,
        }));
        true
    }

    fn sum_outer(&mut self) -> bool {
        let Some(array) = self.pick_var(|ty| ty.rank() >= 1 && ty.elem.is_numeric()) else {
            return false;
        };
        self.bind1(Expr::from(SumOuter(Atom::Var(array))));
        true
    }

    /// Runs `body` in a nested block whose params are new variables of `param_tys`, and
    /// restores the scope afterwards. `body` returns the block's results.
    fn nested(
        &mut self,
        param_tys: &[ArrTy],
        body: impl FnOnce(&mut Self, &[VarId], usize) -> Vec<Atom>,
    ) -> BlockId {
        let scope_mark = self.scope.len();
        let block = self.builder.program.new_block();
        let params: Vec<VarId> = param_tys
            .iter()
            .map(|ty| self.builder.program.new_var(ty.clone(), ""))
            .collect();
        self.builder.program.blocks[block].params = params.clone();
        self.scope.extend(&params);
        self.builder.stack.push(block);
        let results = body(self, &params, scope_mark);
        self.builder.stack.pop();
        self.builder.program.blocks[block].results = results;
        self.scope.truncate(scope_mark);
        block
    }

    /// Result variables for a block: 1..=max_results variables of the block's scope whose
    /// stacked type (with `stack` prepended, if any) fits.
    fn pick_results(
        &mut self,
        since: usize,
        max_results: usize,
        stack: Option<usize>,
    ) -> Vec<Atom> {
        let fits = |gen: &Self, var: VarId| {
            let ty = gen.ty(var);
            gen.fits(&stack.map_or(ty.clone(), |size| prepend(size, &ty)))
        };
        let local: Vec<VarId> = self.scope[since..]
            .iter()
            .copied()
            .filter(|&var| fits(self, var))
            .collect();
        let all: Vec<VarId> = self
            .scope
            .iter()
            .copied()
            .filter(|&var| fits(self, var))
            .collect();
        let n_results = self.rng.range(1, max_results);
        let mut results = Vec::new();
        for _ in 0..n_results {
            let pool = if !local.is_empty() && self.rng.chance(4, 5) {
                &local
            } else {
                &all
            };
            if pool.is_empty() {
                break;
            }
            let recent = &pool[pool.len().saturating_sub(3)..];
            let var = if self.rng.chance(2, 3) {
                self.rng.pick(recent)
            } else {
                self.rng.pick(pool)
            };
            results.push(Atom::Var(var));
        }
        if results.is_empty() {
            // A scalar always fits.
            results.push(idx(0));
        }
        results
    }

    fn build1(&mut self, depth: usize) -> bool {
        let size = self.size();
        let body = self.nested(&[index_ty()], |gen, params, since| {
            // Start with a read that uses the index, so the body depends on it.
            gen.index_at(params[0], depth + 1);
            gen.stmts(depth + 1, 0, 3);
            gen.pick_results(since, 2, Some(size))
        });
        self.bind(Expr::from(Build1 { size, body }));
        true
    }

    /// An index function body: a few computed indices, then `n_results` index results.
    fn index_fn(&mut self, n_params: usize, n_results: usize, dims: &[usize]) -> BlockId {
        self.nested(&vec![index_ty(); n_params], |gen, params, _since| {
            (0..n_results)
                .map(|axis| {
                    if gen.rng.chance(3, 4) {
                        let param = gen.rng.pick(params);
                        gen.derived_index(param)
                    } else {
                        gen.index_atom(dims[axis])
                    }
                })
                .collect()
        })
    }

    /// The shape of `ty` with its first `n_dropped` axes replaced by `n_new` random ones (a
    /// gather's or scatter's result: the new axes are its index function's grid or targets),
    /// `None` when an array of it would be too large.
    fn lead_replaced(&mut self, ty: &ArrTy, n_dropped: usize, n_new: usize) -> Option<Vec<usize>> {
        let mut shape: Vec<usize> = (0..n_new)
            .map(|_| self.rng.range(1, self.config.max_dim))
            .collect();
        shape.extend_from_slice(&ty.shape[n_dropped..]);
        self.fits(&ArrTy::new(shape.clone(), ty.elem))
            .then_some(shape)
    }

    fn gather(&mut self, _depth: usize) -> bool {
        let Some(array) = self.pick_var(|ty| ty.rank() >= 1) else {
            return false;
        };
        let ty = self.ty(array);
        let n_results = self.rng.range(1, ty.rank().min(2));
        let n_params = self.rng.range(1, 2);
        let Some(shape) = self.lead_replaced(&ty, n_results, n_params) else {
            return false;
        };
        let body = self.index_fn(n_params, n_results, &ty.shape);
        self.bind1(Expr::from(Gather {
            shape,
            array: Atom::Var(array),
            body,
        }));
        true
    }

    fn scatter(&mut self, _depth: usize) -> bool {
        let Some(array) = self.pick_var(|ty| ty.rank() >= 1 && ty.elem.is_numeric()) else {
            return false;
        };
        let ty = self.ty(array);
        let n_params = self.rng.range(1, ty.rank().min(2));
        let n_results = self.rng.range(1, 2);
        let Some(shape) = self.lead_replaced(&ty, n_params, n_results) else {
            return false;
        };
        let dims = shape.clone();
        let body = self.index_fn(n_params, n_results, &dims);
        self.bind1(Expr::from(Scatter {
            shape,
            array: Atom::Var(array),
            body,
        }));
        true
    }

    fn table(&mut self) -> bool {
        let Some(x) = self.pick_var(|_| true) else {
            return false;
        };
        let ty = self.ty(x);
        let n_elems = self.rng.range(1, 3);
        if !self.fits(&prepend(n_elems, &ty)) {
            return false;
        }
        let atoms = (0..n_elems)
            .map(|_| match self.pick_var(|other| *other == ty) {
                Some(var) => Atom::Var(var),
                None => Atom::Var(x),
            })
            .collect();
        self.bind1(Expr::from(Table(atoms)));
        true
    }

    fn replicate(&mut self) -> bool {
        let Some(x) = self.pick_var(|_| true) else {
            return false;
        };
        let count = self.size();
        if !self.fits(&prepend(count, &self.ty(x))) {
            return false;
        }
        self.bind1(Expr::from(Replicate {
            count,
            array: Atom::Var(x),
        }));
        true
    }

    fn transpose(&mut self) -> bool {
        let Some(x) = self.pick_var(|ty| ty.rank() >= 1) else {
            return false;
        };
        let rank = self.ty(x).rank();
        let n_perm = self.rng.range(1, rank);
        let mut perm: Vec<usize> = (0..n_perm).collect();
        for i in (1..n_perm).rev() {
            let j = self.rng.below(i + 1);
            perm.swap(i, j);
        }
        self.bind1(Expr::from(Transpose {
            perm,
            array: Atom::Var(x),
        }));
        true
    }

    fn reshape(&mut self) -> bool {
        let Some(x) = self.pick_var(|_| true) else {
            return false;
        };
        let n_elems = self.ty(x).n_elems();
        let divisors: Vec<usize> = (1..=n_elems)
            .filter(|d| n_elems / d * d == n_elems)
            .collect();
        let shape = match self.rng.below(3) {
            0 if !divisors.is_empty() => {
                let d = self.rng.pick(&divisors);
                vec![d, n_elems / d]
            }
            1 if n_elems == 1 => Vec::new(),
            _ => vec![n_elems],
        };
        self.bind1(Expr::from(Reshape {
            shape,
            array: Atom::Var(x),
        }));
        true
    }

    fn cond(&mut self, depth: usize) -> bool {
        let cond = match self.pick_var(|ty| *ty == ArrTy::scalar(Elem::Bool)) {
            Some(var) => Atom::Var(var),
            None => match self.pick_var(|ty| ty.rank() == 0 && ty.elem.is_numeric()) {
                Some(x) => {
                    let ty = self.ty(x);
                    let y = self.literal(ty.elem);
                    Atom::Var(self.bind1(Expr::from(PrimApp(Prim::Lt, vec![Atom::Var(x), y]))))
                }
                None => return false,
            },
        };
        let n_results = self.rng.range(1, 2);
        let result_vars: Vec<VarId> = (0..n_results)
            .filter_map(|_| self.pick_var(|_| true))
            .collect();
        let result_tys: Vec<ArrTy> = result_vars.iter().map(|&var| self.ty(var)).collect();
        let branch = |gen: &mut Self| {
            let tys = result_tys.clone();
            gen.nested(&[], move |gen, _params, since| {
                gen.stmts(depth + 1, 0, 2);
                tys.iter()
                    .map(|ty| {
                        Atom::Var(
                            gen.pick_of_type(ty, since)
                                .expect("an outer variable has this type"),
                        )
                    })
                    .collect()
            })
        };
        let then_block = branch(self);
        let else_block = branch(self);
        self.bind(Expr::from(Cond {
            cond,
            then_block,
            else_block,
        }));
        true
    }

    fn iota(&mut self) -> bool {
        let size = self.size();
        self.bind1(Expr::from(Iota(size)));
        true
    }

    /// The initial carries of a fold or scan.
    fn carries(&mut self) -> Vec<Atom> {
        let n_carry = self.rng.range(1, 2);
        (0..n_carry)
            .map(|_| match self.pick_var(|_| true) {
                Some(var) => Atom::Var(var),
                None => self.literal(Elem::F64),
            })
            .collect()
    }

    fn fold(&mut self, depth: usize) -> bool {
        self.counted_loop(depth, false)
    }

    fn scan(&mut self, depth: usize) -> bool {
        self.counted_loop(depth, true)
    }

    /// A `fold`, or with `stacks` a `scan` (whose body also gives up to two values to stack).
    fn counted_loop(&mut self, depth: usize, stacks: bool) -> bool {
        let size = self.size();
        let init = self.carries();
        let carry_tys: Vec<ArrTy> = init.iter().map(|atom| self.builder.ty(*atom)).collect();
        let mut param_tys = vec![index_ty()];
        param_tys.extend(carry_tys.iter().cloned());
        let body = self.nested(&param_tys, |gen, params, since| {
            gen.index_at(params[0], depth + 1);
            gen.stmts(depth + 1, 0, 2);
            let mut results: Vec<Atom> = carry_tys
                .iter()
                .map(|ty| {
                    Atom::Var(
                        gen.pick_of_type(ty, since)
                            .expect("the carry param has this type"),
                    )
                })
                .collect();
            if stacks {
                results.extend(gen.pick_results(since, 2, Some(size)));
            }
            results
        });
        self.bind(match stacks {
            true => Expr::from(Scan { size, init, body }),
            false => Expr::from(Fold { size, init, body }),
        });
        true
    }

    /// A `reduce`, `assoc_scan` or `assoc_scan_right` over one array or a pair of arrays of
    /// one shape, with `add`, `mul`, `max` or `min` per component (a product monoid).
    fn monoid(&mut self) -> bool {
        let Some(first) = self.pick_var(|ty| ty.rank() >= 1 && ty.elem.is_numeric()) else {
            return false;
        };
        let shape = self.ty(first).shape;
        let mut arrays = vec![first];
        if self.rng.chance(1, 3) {
            if let Some(second) = self.pick_var(|ty| ty.shape == shape && ty.elem.is_numeric()) {
                arrays.push(second);
            }
        }
        let elems: Vec<Elem> = arrays.iter().map(|var| self.ty(*var).elem).collect();
        let mut init = Vec::new();
        for elem in &elems {
            let mut atom = self.literal(*elem);
            for axis in (1..shape.len()).rev() {
                atom = Atom::Var(self.bind1(Expr::from(Replicate {
                    count: shape[axis],
                    array: atom,
                })));
            }
            init.push(atom);
        }
        let program = &mut self.builder.program;
        let params: Vec<VarId> = elems
            .iter()
            .chain(&elems)
            .map(|elem| program.new_var(ArrTy::scalar(*elem), "m"))
            .collect();
        let k = elems.len();
        let mut stmts = Vec::new();
        let mut results = Vec::new();
        for comp in 0..k {
            let prim = self.rng.pick(&[Prim::Add, Prim::Mul, Prim::Max, Prim::Min]);
            let program = &mut self.builder.program;
            let res = program.new_var(ArrTy::scalar(elems[comp]), "m");
            stmts.push(crate::core::ir::Stmt {
                binders: vec![res],
                expr: Expr::from(PrimApp(
                    prim,
                    vec![Atom::Var(params[comp]), Atom::Var(params[k + comp])],
                )),
            });
            results.push(Atom::Var(res));
        }
        let op = self.builder.program.blocks.push(crate::core::ir::Block {
            params,
            stmts,
            results,
        });
        let kind = self.rng.pick(&[
            crate::core::ir::MonoidKind::Reduce,
            crate::core::ir::MonoidKind::Scan,
            crate::core::ir::MonoidKind::ScanRight,
        ]);
        self.bind(Expr::from(Monoid {
            kind,
            arrays: arrays.into_iter().map(Atom::Var).collect(),
            init,
            op,
        }));
        true
    }

    /// A `while` that ends: a counter carry (0 at first, one more every step) and one or two
    /// other carries (`while_body`).
    fn while_loop(&mut self, depth: usize) -> bool {
        let (init, body) = self.while_parts(depth);
        self.bind(Expr::from(While { init, body }));
        true
    }

    /// A `while_reverse` over a `while_loop`'s loop, with one or two accumulators, whose
    /// backward step sees the step's carries.
    fn while_reverse(&mut self, depth: usize) -> bool {
        let (init, body) = self.while_parts(depth);
        let seeds = self.carries();
        let mut param_tys: Vec<ArrTy> = init.iter().map(|atom| self.builder.ty(*atom)).collect();
        let seed_tys: Vec<ArrTy> = seeds.iter().map(|atom| self.builder.ty(*atom)).collect();
        param_tys.extend(seed_tys.iter().cloned());
        let back = self.nested(&param_tys, |gen, _params, since| {
            gen.stmts(depth + 1, 1, 3);
            seed_tys
                .iter()
                .map(|ty| {
                    Atom::Var(
                        gen.pick_of_type(ty, since)
                            .expect("the accumulator param has this type"),
                    )
                })
                .collect()
        });
        self.bind(Expr::from(WhileReverse {
            init,
            seeds,
            body,
            back,
        }));
        true
    }

    /// The initial carries and body of a `while` that ends within 4 steps: its first carry
    /// counts the steps from 0, and the loop continues while the count is below a bound (the
    /// smaller of 4 and an index variable in scope, which may differ between the lanes of a
    /// build) and, sometimes, while a float scalar computed in the body stays below a literal.
    fn while_parts(&mut self, depth: usize) -> (Vec<Atom>, BlockId) {
        let mut init = vec![idx(0)];
        init.extend(self.carries());
        let carry_tys: Vec<ArrTy> = init.iter().map(|atom| self.builder.ty(*atom)).collect();
        let body = self.nested(&carry_tys, |gen, params, since| {
            let count = gen.bind1(Expr::from(PrimApp(
                Prim::Add,
                vec![Atom::Var(params[0]), idx(1)],
            )));
            gen.stmts(depth + 1, 0, 2);
            // Index variables from outside the loop, the latest (a build's index) first.
            let outer: Vec<VarId> = (gen.scope[..since].iter().rev())
                .copied()
                .filter(|var| gen.ty(*var) == index_ty())
                .take(2)
                .collect();
            let bound = match outer.is_empty() {
                false if gen.rng.chance(3, 4) => {
                    let var = gen.rng.pick(&outer);
                    Atom::Var(
                        gen.bind1(Expr::from(PrimApp(Prim::Min, vec![Atom::Var(var), idx(4)]))),
                    )
                }
                _ => idx(gen.rng.range(1, 4) as i64),
            };
            let mut go = gen.bind1(Expr::from(PrimApp(Prim::Lt, vec![Atom::Var(count), bound])));
            let float_scalar = |ty: &ArrTy| ty.rank() == 0 && ty.elem.is_float();
            if gen.rng.chance(1, 3) {
                if let Some(x) = gen.pick_var(float_scalar) {
                    let elem = gen.ty(x).elem;
                    let limit = gen.literal(elem);
                    let below = gen.bind1(Expr::from(PrimApp(Prim::Lt, vec![Atom::Var(x), limit])));
                    go = gen.bind1(Expr::from(PrimApp(
                        Prim::And,
                        vec![Atom::Var(go), Atom::Var(below)],
                    )));
                }
            }
            let mut results = vec![Atom::Var(go), Atom::Var(count)];
            for ty in &carry_tys[1..] {
                let var = gen
                    .pick_of_type(ty, since)
                    .expect("the carry param has this type");
                results.push(Atom::Var(var));
            }
            results
        });
        (init, body)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngSeed};

    use super::*;
    use crate::core::parse::parse_program;
    use crate::core::print::annotated;
    use crate::ops::interp::{run, InterpConfig, InterpError};
    use crate::ops::verify::{annotate, verify};

    /// Everything a random program must satisfy: it verifies, print → parse → print is the
    /// identity (and parsing gives back the same arena), and the interpreter runs it in both
    /// modes, giving results of the declared types.
    fn check_random_program(seed: u64) {
        let program = random_program(seed, &GenConfig::default());
        if let Err(errors) = verify(&program) {
            panic!("seed {seed}:\n{}", annotate(&program, &errors));
        }
        let text = program.to_string();
        let parsed =
            parse_program(&text).unwrap_or_else(|error| panic!("seed {seed}: {error}\n{text}"));
        assert_eq!(parsed.to_string(), text, "seed {seed}");
        assert_eq!(
            parsed, program,
            "seed {seed}: parsing changed the arena\n{text}"
        );
        let inputs = random_inputs(&program, seed);
        let results = run(&program, &inputs, &InterpConfig::default())
            .unwrap_or_else(|error| panic!("seed {seed}: {error}\n{text}"));
        let main = &program.blocks[program.main];
        assert_eq!(results.len(), main.results.len());
        for (value, atom) in results.iter().zip(&main.results) {
            assert_eq!(value.ty(), program.atom_ty(atom), "seed {seed}\n{text}");
        }
        let strict = InterpConfig {
            strict: true,
            interrupt: None,
        };
        match run(&program, &inputs, &strict) {
            Ok(strict_results) => assert_eq!(strict_results.len(), results.len()),
            Err(InterpError::OutOfRange { .. }) => {}
            Err(InterpError::Interrupted) => panic!("seed {seed}: interrupted without a flag"),
            Err(error @ InterpError::TooLarge { .. }) => panic!("seed {seed}: {error}"),
        }
    }

    proptest! {
        #![proptest_config(Config {
            cases: 256,
            rng_seed: RngSeed::Fixed(0xd1ce),
            failure_persistence: None,
            ..Config::default()
        })]

        #[test]
        fn random_programs_verify_round_trip_and_run(seed in any::<u64>()) {
            check_random_program(seed);
        }
    }

    #[test]
    fn first_seeds_are_fine_too() {
        for seed in 0..200 {
            check_random_program(seed);
        }
    }

    #[test]
    fn generation_is_deterministic() {
        let config = GenConfig::default();
        for seed in [0, 1, 42, u64::MAX] {
            assert_eq!(random_program(seed, &config), random_program(seed, &config));
            let program = random_program(seed, &config);
            assert_eq!(random_inputs(&program, seed), random_inputs(&program, seed));
        }
        assert_ne!(
            random_program(1, &config).to_string(),
            random_program(2, &config).to_string()
        );
    }

    /// The generator exercises every expression form, multi-result statements and
    /// out-of-range reads (checked over the first 300 seeds).
    #[test]
    fn generator_covers_every_form() {
        let mut forms = HashMap::new();
        let mut multi_result = false;
        let mut nested_build1 = false;
        let mut out_of_range = false;
        for seed in 0..300 {
            let program = random_program(seed, &GenConfig::default());
            for block in program.blocks.values() {
                for stmt in &block.stmts {
                    if let Expr::Build1(Build1 { body, .. }) = &stmt.expr {
                        nested_build1 |= program.blocks[*body]
                            .stmts
                            .iter()
                            .any(|inner| matches!(inner.expr, Expr::Build1(_)));
                    }
                    let form = std::mem::discriminant(&stmt.expr);
                    forms
                        .entry(form)
                        .or_insert_with(|| crate::core::print::expr_name(&stmt.expr));
                    multi_result |= stmt.binders.len() > 1;
                }
            }
            let inputs = random_inputs(&program, seed);
            let strict = InterpConfig {
                strict: true,
                interrupt: None,
            };
            out_of_range |= matches!(
                run(&program, &inputs, &strict),
                Err(InterpError::OutOfRange { .. })
            );
        }
        // Every form but `jvp`/`vjp` and the user-defined derivatives, which lowering emits and
        // the `ad` pass expands.
        assert_eq!(forms.len(), 18, "{:?}", forms.values().collect::<Vec<_>>());
        assert!(multi_result && nested_build1 && out_of_range);
    }

    #[test]
    fn builder_and_annotated_printing() {
        let mut b = Builder::new();
        let x = b.input(ArrTy::new(vec![3], Elem::F64), "x");
        let doubled = b.prim(Prim::Add, &[x, x]);
        b.name(doubled, "twice");
        assert_eq!(b.ty(doubled), ArrTy::new(vec![3], Elem::F64));
        let program = b.finish(vec![doubled]);
        let mut notes = crate::core::print::Notes::default();
        notes.by_var.insert(VarId(1), vec!["doubles".to_string()]);
        notes.program.push("a note".to_string());
        assert_eq!(
            annotated(&program, &notes),
            "program(%0_x: [3]f64) {  ; a note\n  %1_twice: [3]f64 = add %0_x %0_x  ; doubles\n  in %1_twice\n}"
        );
    }
}

/// How `monoid_program` gives its statement the initial values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MonoidInits {
    /// Literal zeros (arrays of rank one only).
    Zeros,
    /// Params of the program (`%150_e`, `%151_e`, …), of the arrays' trailing shape.
    Params,
}

/// The text of a program whose one statement is the monoid operation `kind` (`reduce`,
/// `assoc_scan` or `assoc_scan_right`) over arrays of `shape`, the params `%100_x`,
/// `%101_x`, … of the element types `elems`, with the operator block `op` (its variables
/// numbered below 100).
pub fn monoid_program(
    kind: &str,
    shape: &[usize],
    elems: &[&str],
    op: &str,
    inits: MonoidInits,
) -> String {
    let dims = |shape: &[usize]| {
        let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
        dims.join(", ")
    };
    let result_shape = if kind == "reduce" { &shape[1..] } else { shape };
    let arrays: Vec<String> = (0..elems.len())
        .map(|c| format!("%{}_x", 100 + c))
        .collect();
    let results: Vec<String> = (0..elems.len()).map(|c| format!("%{}", 200 + c)).collect();
    let mut params: Vec<String> = arrays
        .iter()
        .zip(elems)
        .map(|(array, elem)| format!("{array}: [{}]{elem}", dims(shape)))
        .collect();
    let init_atoms: Vec<String> = match inits {
        MonoidInits::Zeros => elems
            .iter()
            .map(|elem| match elem.starts_with('f') {
                true => format!("0.0:{elem}"),
                false => format!("0:{elem}"),
            })
            .collect(),
        MonoidInits::Params => {
            let names: Vec<String> = (0..elems.len())
                .map(|c| format!("%{}_e", 150 + c))
                .collect();
            params.extend(
                names
                    .iter()
                    .zip(elems)
                    .map(|(name, elem)| format!("{name}: [{}]{elem}", dims(&shape[1..]))),
            );
            names
        }
    };
    let binders: Vec<String> = results
        .iter()
        .zip(elems)
        .map(|(res, elem)| format!("{res}: [{}]{elem}", dims(result_shape)))
        .collect();
    format!(
        "program({}) {{\n  {} = {kind} ({}) ({}) {op}\n  in {}\n}}",
        params.join(", "),
        binders.join(", "),
        arrays.join(", "),
        init_atoms.join(", "),
        results.join(", ")
    )
}
