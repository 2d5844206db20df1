//! The core IR: [Smeding25]'s core language (§3.2, Figs 7–8) in A-normal form, in an arena.
//!
//! Every value is a regular array of one element type with a static shape (a scalar is a
//! rank-0 array). Tuples of the surface language do not exist here: a statement binds several
//! variables and a block returns several atoms, so a tuple (or a table of tuples, which is a
//! tuple of tables) is a list of variables. `build1` over a tuple body, `cond` with tuple
//! branches and `fold` with a tuple carry therefore simply have several results.
//!
//! Index values (elements of `Fin n`) are `I64` scalars; an index outside its range is allowed
//! and reads zero (total semantics, [Smeding25] §5.2).

use std::collections::HashMap;

use super::ids::IdVec;
use crate::define_id;
pub use crate::prim::scalar::{Elem, Scalar};
use crate::prim::Prim;

define_id!(
    /// A variable of the core IR.
    VarId,
    "%"
);
define_id!(
    /// A nested block (body of build1, gather/scatter index functions, cond branches, loops).
    BlockId,
    "b"
);

/// The type of a core variable: `Array sh ρ` of Fig 8.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArrTy {
    pub shape: Vec<usize>,
    pub elem: Elem,
}

impl ArrTy {
    pub fn scalar(elem: Elem) -> ArrTy {
        ArrTy {
            shape: Vec::new(),
            elem,
        }
    }

    pub fn new(shape: Vec<usize>, elem: Elem) -> ArrTy {
        ArrTy { shape, elem }
    }

    /// The bytes of an array of this type (in `u128`: a requested shape may overflow `usize`).
    pub fn n_bytes(&self) -> u128 {
        let n_elems: u128 = self.shape.iter().map(|&dim| dim as u128).product();
        n_elems * self.elem.bytes() as u128
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    pub fn n_elems(&self) -> usize {
        self.shape.iter().product()
    }
}

/// An operand: a variable or a scalar constant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Atom {
    Var(VarId),
    Lit(Scalar),
}

impl Atom {
    /// The value of an integer literal, if an `i64` holds it.
    pub fn int_literal(self) -> Option<i64> {
        match self {
            Atom::Lit(scalar) => scalar.int_value(),
            Atom::Var(_) => None,
        }
    }
}

/// One `let` statement: `binders = expr`. Most expressions bind one variable; `build1`,
/// `cond`, `fold`, `scan` and `while` bind one per result of their block.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub binders: Vec<VarId>,
    pub expr: Expr,
}

/// A block: parameters (bound by the construct that owns the block), statements, results.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Block {
    pub params: Vec<VarId>,
    pub stmts: Vec<Stmt>,
    pub results: Vec<Atom>,
}

/// The enum of the forms and, for each form's struct, `From` into it: `Expr::from(Fold { size,
/// init, body })` builds a statement's expression without naming the variant, so that the
/// places that name a form (`Expr::Fold(…)`) are the ones that match on it. One list for both.
macro_rules! forms {
    ($(#[$enum_doc:meta])* enum Expr { $($(#[$doc:meta])* $variant:ident($form:ty)),* $(,)? }) => {
        $(#[$enum_doc])*
        #[derive(Clone, Debug, PartialEq)]
        pub enum Expr {
            $($(#[$doc])* $variant($form),)*
        }

        $(impl From<$form> for Expr {
            fn from(form: $form) -> Expr {
                Expr::$variant(form)
            }
        })*
    };
}

forms!(
    /// The expression forms of Fig 7, in ANF, plus `iota`, `fold`, `scan` and `while`.
    ///
    /// Each form but `Atom` carries a struct of its own (as `syn`'s syntax tree does), so that
    /// the rules of a form (`ops::Operation`, implemented in the form's rule home) are written
    /// against its fields, and a rule that needs one form takes that struct.
    enum Expr {
        /// A copy of an atom.
        Atom(Atom),
        Prim(PrimApp),
        Build1(Build1),
        Index(Index),
        SumOuter(SumOuter),
        Gather(Gather),
        Scatter(Scatter),
        Table(Table),
        Replicate(Replicate),
        Transpose(Transpose),
        Reshape(Reshape),
        Cond(Cond),
        Iota(Iota),
        Fold(Fold),
        Scan(Scan),
        While(While),
        WhileReverse(WhileReverse),
        Monoid(Monoid),
        Derivative(Derivative),
        CustomVjp(CustomVjp),
        CustomJvp(CustomJvp),
        CustomLinear(CustomLinear),
    }
);

/// `op`: an elementwise primitive over operands of equal shape (scalars are rank 0).

#[derive(Clone, Debug, PartialEq)]
pub struct PrimApp(pub Prim, pub Vec<Atom>);

/// `build1 k (λi. body)`: `body.params == [i]` (an `I64` scalar); one binder per result,
/// each with `k` prepended to the result's shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Build1 {
    pub size: usize,
    pub body: BlockId,
}

/// `index t [ix…]`: indexes the outermost `index.len()` axes; out of range reads zero.
#[derive(Clone, Debug, PartialEq)]
pub struct Index {
    pub array: Atom,
    pub index: Vec<Atom>,
}

/// `sumOuter t`: sums along the outermost axis.
#[derive(Clone, Debug, PartialEq)]
pub struct SumOuter(pub Atom);

/// `gather sh t (λ[i…]. ix)`: `body.params` are the `I64` indices of the leading axes of
/// the result, `body.results` the index into `array`'s leading axes. Out of range reads zero.
#[derive(Clone, Debug, PartialEq)]
pub struct Gather {
    pub shape: Vec<usize>,
    pub array: Atom,
    pub body: BlockId,
}

/// `scatter sh t (λ[i…]. ix)`: sends each element of `t`'s leading axes (`body.params`)
/// to `body.results` in a zero array of shape `shape`, adding collisions. Out-of-range
/// targets are dropped.
#[derive(Clone, Debug, PartialEq)]
pub struct Scatter {
    pub shape: Vec<usize>,
    pub array: Atom,
    pub body: BlockId,
}

/// A literal table `[t1, …, tn]` of atoms of equal type.
#[derive(Clone, Debug, PartialEq)]
pub struct Table(pub Vec<Atom>);

/// `replicate k t`
#[derive(Clone, Debug, PartialEq)]
pub struct Replicate {
    pub count: usize,
    pub array: Atom,
}

/// `tr_perm t`: result axis `a` is input axis `perm[a]` for `a < perm.len()`; the rest stay.
#[derive(Clone, Debug, PartialEq)]
pub struct Transpose {
    pub perm: Vec<usize>,
    pub array: Atom,
}

/// `reshape sh t`
#[derive(Clone, Debug, PartialEq)]
pub struct Reshape {
    pub shape: Vec<usize>,
    pub array: Atom,
}

/// `cond c u v` (strict in [Smeding25]; the reference interpreter may evaluate only the taken
/// branch since every operation is total). One binder per result.
#[derive(Clone, Debug, PartialEq)]
pub struct Cond {
    pub cond: Atom,
    pub then_block: BlockId,
    pub else_block: BlockId,
}

/// `iota n`: `[0, 1, …, n-1]` as `I64`.
#[derive(Clone, Debug, PartialEq)]
pub struct Iota(pub usize);

/// Sequential left fold over `0..size`: `body.params == [i, carry…]`, `body.results` is
/// the new carry. Binds the final carry.
#[derive(Clone, Debug, PartialEq)]
pub struct Fold {
    pub size: usize,
    pub init: Vec<Atom>,
    pub body: BlockId,
}

/// Sequential scan: like `Fold` but `body.results == [carry…, y…]`; binds the final carry
/// followed by the `y`s stacked along a new outermost axis of size `size`.
#[derive(Clone, Debug, PartialEq)]
pub struct Scan {
    pub size: usize,
    pub init: Vec<Atom>,
    pub body: BlockId,
}

/// A do-while loop with a data-dependent trip count: `while (init…) (λcarry…. body)`.
/// `body.params` are one per carry (no index), `body.results` are `[continue, carry'…]`,
/// `continue` a `Bool` scalar. `c = init; loop { (k, c) = body(c); if !k break }`: the
/// body runs at least once. Binds the final carries (`ops::while_loop`).
#[derive(Clone, Debug, PartialEq)]
pub struct While {
    pub init: Vec<Atom>,
    pub body: BlockId,
}

/// The reverse sweep over the trajectory of a `while` (the transpose of a differentiated
/// `while`, Note [Reverse mode through a while loop] in `ops::while_loop`):
/// `while_reverse (init…) (seeds…) (λcarry…. body) (λcarry… acc…. back)` runs `body`
/// from `init` exactly as `While` does, keeping the carries `c₀ … cₙ₋₁` entering each step,
/// then folds `back` over them last to first: `acc = seeds; acc = back(cₙ₋₁, acc); …;
/// acc = back(c₀, acc)`. `back.params` are the carries then one per seed, its results
/// the new accumulators. Binds the final accumulators.
#[derive(Clone, Debug, PartialEq)]
pub struct WhileReverse {
    pub init: Vec<Atom>,
    pub seeds: Vec<Atom>,
    pub body: BlockId,
    pub back: BlockId,
}

/// A monoid reduction or inclusive scan over the outer axis ([Paszke21] §2):
/// `reduce (xs…) (e…) op`, `assoc_scan (xs…) (e…) op` and its right-to-left twin
/// `assoc_scan_right`. Every array has the shape `[n, rest…]`, every `e` the shape
/// `rest`; `op` is closed, its params are the left then the right scalar operands (one
/// per array) and its results the combined ones. On arrays of rank > 1 `op` applies
/// elementwise over `rest`. `e` must be an identity of `op` (a left identity for
/// `assoc_scan`, a right one for `assoc_scan_right`); it is the result of reducing an
/// empty array. The order of combination is fixed (`ops::monoid`, Note [Monoid order]).
/// Binds one variable per array: of shape `rest` for `reduce`, `[n, rest…]` for scans.
#[derive(Clone, Debug, PartialEq)]
pub struct Monoid {
    pub kind: MonoidKind,
    pub arrays: Vec<Atom>,
    pub init: Vec<Atom>,
    pub op: BlockId,
}

/// `jvp (xs…) (ts…) f` / `vjp (xs…) (cts…) f`: a derivative of the function block `func`
/// (one param per leaf of its argument) at `primals`, as lowering emits it; the `ad` pass
/// replaces the statement by the derivative program (`passes::derivatives::PASS`). `jvp` binds
/// `func`'s results then their tangents, `seeds` being a tangent per param; `vjp` binds
/// `func`'s results then the cotangents of its params, `seeds` being a cotangent per
/// result. Tangents and cotangents of non-float leaves are zero.
#[derive(Clone, Debug, PartialEq)]
pub struct Derivative {
    pub mode: AdMode,
    pub primals: Vec<Atom>,
    pub seeds: Vec<Atom>,
    pub func: BlockId,
}

/// `custom_vjp (xs…) primal fwd bwd`: a function with a user-defined reverse-mode
/// derivative (JAX's `custom_vjp`, Dex's `custom-linearization`; `ops::custom`). Its value
/// is `primal`'s at `args` (one param per leaf of the argument); `fwd` has the same params
/// and returns the values (one per binder) then the residuals; `bwd`'s params are the
/// residuals then one cotangent per binder, its results a cotangent per arg. The `ad`
/// pass differentiates it by its rule and replaces every one left by `primal`.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomVjp {
    pub args: Vec<Atom>,
    pub primal: BlockId,
    pub fwd: BlockId,
    pub bwd: BlockId,
}

/// `custom_jvp (xs…) primal lin`: a function with a user-defined linearization (Dex's
/// `custom-linearization f g`; `ops::custom`). Its value is `primal`'s at `args`; `lin`'s
/// params are the args then one tangent per arg (of the same types), its results the
/// values then their tangents, which must be linear in the tangents. The `ad` pass
/// differentiates it by inlining `lin` (reverse mode transposes the user's linear
/// statements as any others) and replaces every one left by `primal`.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomJvp {
    pub args: Vec<Atom>,
    pub primal: BlockId,
    pub lin: BlockId,
}

/// The linear map of a differentiated `custom_vjp`, which only exists between the `ad`
/// pass's steps (`ops::custom`): `custom_linear (res…) (ts…) bwd` (`transposed: false`,
/// made by `jvp`) maps the tangents of the args to those of the results, and has no
/// forward rule; `custom_linear_t (res…) (cts…) bwd` (its transpose) maps the
/// cotangents of the results to those of the args by running `bwd` on the residuals and
/// the cotangents.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomLinear {
    pub transposed: bool,
    pub residuals: Vec<Atom>,
    pub operands: Vec<Atom>,
    pub bwd: BlockId,
}

/// What a `Monoid` statement computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MonoidKind {
    /// `x0 ⊙ x1 ⊙ … ⊙ x(n-1)`.
    Reduce,
    /// Inclusive left scan: `ys[i] = x0 ⊙ … ⊙ xi`.
    Scan,
    /// Inclusive right scan: `ys[i] = xi ⊙ … ⊙ x(n-1)` ([Paszke21] Thm 3.7's `scan_right`).
    ScanRight,
}

impl MonoidKind {
    /// The keyword of printed IR.
    pub fn name(self) -> &'static str {
        match self {
            MonoidKind::Reduce => "reduce",
            MonoidKind::Scan => "assoc_scan",
            MonoidKind::ScanRight => "assoc_scan_right",
        }
    }

    pub fn from_name(name: &str) -> Option<MonoidKind> {
        Some(match name {
            "reduce" => MonoidKind::Reduce,
            "assoc_scan" => MonoidKind::Scan,
            "assoc_scan_right" => MonoidKind::ScanRight,
            _ => return None,
        })
    }
}

/// Why the engines and the passes after `ad` never meet a `Derivative`.
pub const EXPANDED: &str = "the `ad` pass expands every derivative before the bot runs";

/// Why the engines and the passes after `ad` never meet a `CustomVjp` or `CustomLinear`.
pub const CUSTOM_INLINED: &str =
    "the `ad` pass replaces every custom_vjp by its primal before the bot runs";

/// Forward (`jvp`) or reverse (`vjp`) mode of a `Derivative`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AdMode {
    Jvp,
    Vjp,
}

/// A structural key for an atom: variables by id, literals by type and bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomKey {
    Var(VarId),
    Lit(Elem, u64),
    /// A variable bound inside the expression being keyed, numbered in binding order.
    Local(u32),
}

impl From<Atom> for AtomKey {
    fn from(atom: Atom) -> AtomKey {
        match atom {
            Atom::Var(var) => AtomKey::Var(var),
            Atom::Lit(scalar) => AtomKey::Lit(scalar.elem(), scalar.bits()),
        }
    }
}

/// A structural key for an expression: two expressions with equal keys compute the same
/// value (floats compare by bits, so `0.0` and `-0.0` differ). The variables bound inside
/// an expression's blocks are numbered in binding order, so blocks that differ only in the
/// names of their own variables (two reads `x[i]` lowered apart) have equal keys.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ExprKey {
    Atom(AtomKey),
    Prim(Prim, Vec<AtomKey>),
    Index(AtomKey, Vec<AtomKey>),
    SumOuter(AtomKey),
    Table(Vec<AtomKey>),
    Replicate(usize, AtomKey),
    Transpose(Vec<usize>, AtomKey),
    Reshape(Vec<usize>, AtomKey),
    Iota(usize),
    /// An expression with blocks: its form, its sizes, its operands and its blocks.
    Nested {
        form: &'static str,
        sizes: Vec<usize>,
        atoms: Vec<AtomKey>,
        blocks: Vec<BlockKey>,
    },
}

/// The structural key of a block inside an expression being keyed: the types of its params,
/// its statements (binder types and expression) and its results.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlockKey {
    params: Vec<ArrTy>,
    stmts: Vec<(Vec<ArrTy>, ExprKey)>,
    results: Vec<AtomKey>,
}

/// Computes [`ExprKey`]s, numbering the variables bound inside the expression.
struct Keyer<'p> {
    program: &'p Program,
    locals: HashMap<VarId, u32>,
}

impl Keyer<'_> {
    fn atom(&self, atom: Atom) -> AtomKey {
        match atom {
            Atom::Var(var) => match self.locals.get(&var) {
                Some(&local) => AtomKey::Local(local),
                None => AtomKey::Var(var),
            },
            Atom::Lit(_) => atom.into(),
        }
    }

    fn atoms(&self, atoms: &[Atom]) -> Vec<AtomKey> {
        atoms.iter().map(|&atom| self.atom(atom)).collect()
    }

    fn bind(&mut self, var: VarId) -> ArrTy {
        let local = u32::try_from(self.locals.len()).expect("fewer than 2^32 variables");
        self.locals.insert(var, local);
        self.program.var_ty(var).clone()
    }

    fn block(&mut self, block: BlockId) -> Option<BlockKey> {
        let block = &self.program.blocks[block];
        let params = block.params.iter().map(|&param| self.bind(param)).collect();
        let mut stmts = Vec::with_capacity(block.stmts.len());
        for stmt in &block.stmts {
            let key = self.expr(&stmt.expr)?;
            let binders = stmt.binders.iter().map(|&var| self.bind(var)).collect();
            stmts.push((binders, key));
        }
        let results = self.atoms(&block.results);
        Some(BlockKey {
            params,
            stmts,
            results,
        })
    }

    fn nested(
        &mut self,
        form: &'static str,
        sizes: Vec<usize>,
        atoms: Vec<AtomKey>,
        blocks: &[BlockId],
    ) -> Option<ExprKey> {
        let blocks = (blocks.iter())
            .map(|&block| self.block(block))
            .collect::<Option<_>>()?;
        Some(ExprKey::Nested {
            form,
            sizes,
            atoms,
            blocks,
        })
    }

    fn expr(&mut self, expr: &Expr) -> Option<ExprKey> {
        let atom = |atom: &Atom| self.atom(*atom);
        Some(match expr {
            Expr::Atom(array) => ExprKey::Atom(atom(array)),
            Expr::Prim(PrimApp(prim, atoms)) => ExprKey::Prim(*prim, self.atoms(atoms)),
            Expr::Index(Index { array, index }) => ExprKey::Index(atom(array), self.atoms(index)),
            Expr::SumOuter(SumOuter(array)) => ExprKey::SumOuter(atom(array)),
            Expr::Table(Table(atoms)) => ExprKey::Table(self.atoms(atoms)),
            Expr::Replicate(Replicate { count, array }) => ExprKey::Replicate(*count, atom(array)),
            Expr::Transpose(Transpose { perm, array }) => {
                ExprKey::Transpose(perm.clone(), atom(array))
            }
            Expr::Reshape(Reshape { shape, array }) => ExprKey::Reshape(shape.clone(), atom(array)),
            Expr::Iota(Iota(size)) => ExprKey::Iota(*size),
            Expr::Build1(Build1 { size, body }) => {
                return self.nested("build1", vec![*size], vec![], &[*body])
            }
            Expr::Gather(Gather { shape, array, body }) => {
                let array = atom(array);
                return self.nested("gather", shape.clone(), vec![array], &[*body]);
            }
            Expr::Scatter(Scatter { shape, array, body }) => {
                let array = atom(array);
                return self.nested("scatter", shape.clone(), vec![array], &[*body]);
            }
            Expr::Cond(Cond {
                cond,
                then_block,
                else_block,
            }) => {
                let cond = atom(cond);
                return self.nested("cond", vec![], vec![cond], &[*then_block, *else_block]);
            }
            Expr::Fold(Fold { size, init, body }) | Expr::Scan(Scan { size, init, body }) => {
                let form = if matches!(expr, Expr::Fold(_)) {
                    "fold"
                } else {
                    "scan"
                };
                let init = self.atoms(init);
                return self.nested(form, vec![*size], init, &[*body]);
            }
            Expr::While(While { init, body }) => {
                let init = self.atoms(init);
                return self.nested("while", vec![], init, &[*body]);
            }
            Expr::WhileReverse(WhileReverse {
                init,
                seeds,
                body,
                back,
            }) => {
                let atoms = self.atoms(&[&init[..], &seeds[..]].concat());
                return self.nested("while_reverse", vec![init.len()], atoms, &[*body, *back]);
            }
            Expr::Monoid(Monoid {
                kind,
                arrays,
                init,
                op,
            }) => {
                let atoms = self.atoms(&[&arrays[..], &init[..]].concat());
                return self.nested(kind.name(), vec![arrays.len()], atoms, &[*op]);
            }
            Expr::Derivative(_)
            | Expr::CustomVjp(_)
            | Expr::CustomJvp(_)
            | Expr::CustomLinear(_) => return None,
        })
    }
}

impl Scatter {
    /// `expr` as a scatter, if it is one: the view of the passes whose strategies take one
    /// apart (the fuser's and the engine's scatter-adds in place and by rows, the schedule
    /// verifier); its facts are rules in its home, `ops::gather_scatter`.
    pub fn of(expr: &Expr) -> Option<&Scatter> {
        match expr {
            Expr::Scatter(scatter) => Some(scatter),
            _ => None,
        }
    }
}

impl Monoid {
    /// `expr` as a monoid operation, if it is one: the view of the fuser's and the engine's
    /// monoid steps and the schedule verifier; its rules are in `ops::monoid`.
    pub fn of(expr: &Expr) -> Option<&Monoid> {
        match expr {
            Expr::Monoid(monoid) => Some(monoid),
            _ => None,
        }
    }
}

impl Expr {
    /// A `scan` (when `is_scan`) or a `fold`.
    pub fn sequential_loop(is_scan: bool, size: usize, init: Vec<Atom>, body: BlockId) -> Expr {
        if is_scan {
            Expr::Scan(Scan { size, init, body })
        } else {
            Expr::Fold(Fold { size, init, body })
        }
    }
}

/// Information kept per variable.
#[derive(Clone, Debug, PartialEq)]
pub struct VarInfo {
    pub ty: ArrTy,
    /// A name for printing (`x`, `acc`), taken from the source where there is one.
    pub hint: String,
    /// The program is linear in this variable: a tangent of a forward derivative or a
    /// cotangent of its transpose, while `passes::derivatives` takes one derivative ([Smeding25]
    /// §7.3). The verifier checks that each statement uses it where its operation is linear
    /// (`ops::linearity`); placing the derivative clears the flags. Printed `lin`.
    pub linear: bool,
}

/// A whole program: the arena and its entry block. `inputs` are bound from outside (the
/// session's top-level values); `main` has no params.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Program {
    pub vars: IdVec<VarId, VarInfo>,
    pub blocks: IdVec<BlockId, Block>,
    pub inputs: Vec<VarId>,
    pub main: BlockId,
    /// Source map: where in the user's text a variable's defining statement came from (used
    /// for runtime errors such as `--strict` out-of-range reads). Never part of equality
    /// checks of passes.
    pub source_map: std::collections::BTreeMap<VarId, crate::syntax::Span>,
}

impl Program {
    /// The structural key of `expr` (`None` for a derivative, which is never compared).
    pub fn expr_key(&self, expr: &Expr) -> Option<ExprKey> {
        let mut keyer = Keyer {
            program: self,
            locals: HashMap::new(),
        };
        keyer.expr(expr)
    }

    pub fn new() -> Program {
        let mut program = Program::default();
        program.main = program.blocks.push(Block::default());
        program
    }

    pub fn new_var(&mut self, ty: ArrTy, hint: &str) -> VarId {
        self.vars.push(VarInfo {
            ty,
            hint: hint.to_string(),
            linear: false,
        })
    }

    /// A new variable the program is linear in (`VarInfo::linear`).
    pub fn new_linear_var(&mut self, ty: ArrTy, hint: &str) -> VarId {
        let var = self.new_var(ty, hint);
        self.vars[var].linear = true;
        var
    }

    /// Whether `atom` is a linear variable (`VarInfo::linear`).
    pub fn is_linear(&self, atom: &Atom) -> bool {
        matches!(atom, Atom::Var(var) if self.vars.get(*var).is_some_and(|info| info.linear))
    }

    /// Clears every linear flag: the program is ordinary IR again.
    pub fn clear_linear(&mut self) {
        for info in self.vars.values_mut() {
            info.linear = false;
        }
    }

    pub fn new_block(&mut self) -> BlockId {
        self.blocks.push(Block::default())
    }

    pub fn var_ty(&self, var: VarId) -> &ArrTy {
        &self.vars[var].ty
    }

    /// The type of an atom.
    pub fn atom_ty(&self, atom: &Atom) -> ArrTy {
        match atom {
            Atom::Var(var) => self.vars[*var].ty.clone(),
            Atom::Lit(scalar) => ArrTy::scalar(scalar.elem()),
        }
    }
}
