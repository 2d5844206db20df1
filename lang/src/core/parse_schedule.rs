//! The schedule parser: reads the text `Schedule::display` prints (the `fused` stage) back
//! into the `Schedule` of a block of a given program.
//!
//! Assumes: text in that printer's syntax, with whitespace between tokens free, as
//! `core::parse` reads the IR (this parser shares its lexer; `;` is no comment here: a
//! monoid step's line holds one). Names resolve against the program: a variable by its
//! number (a hint written must be its hint), a statement by its binders (where several
//! statements have the same ones, none, by its text), the schedule of a loop's body by the
//! body's params.
//!
//! Guarantees: `parse_schedule(program, block, &schedule.display(program).to_string())`
//! rebuilds `schedule` exactly, but for the payloads of NaN literals, which print alike
//! (loop bodies come in the order of their loops' steps, as `fuse` makes them). What the
//! text repeats (a statement's text, a kernel's reads and its output's type, the block's
//! inputs and results, why a monoid step's result is not stored) must agree with what it
//! names. Nothing else is checked (`verify_schedule` does that), so ill-formed schedules
//! can be written for the verifier's tests. Errors are `line:column: message`.

use super::ids::IdVec;
use super::ir::{BlockId, Program, VarId};
use super::kernel::{
    Affine, Coord, Kernel, MatMul, MatOperand, MonoidStep, Node, NodeId, Reduction, Rows, Schedule,
    Step,
};
use super::parse::{is_ident_char, is_literal_char, reads_through_lexer, Lexer, Res};
use super::print::{atom_text, expr_name, stmt_text, ty_text, var_text};
use super::visit::{expr_atoms, expr_blocks};
use crate::prim::Prim;

/// Parses the schedule of `block` of `program` from its printed text.
pub fn parse_schedule(program: &Program, block: BlockId, text: &str) -> Result<Schedule, String> {
    if program.blocks.get(block).is_none() {
        return Err(format!("{block} is not a block of the program"));
    }
    let mut parser = Parser {
        lexer: Lexer::new(text).without_comments(),
        program,
    };
    let schedule = parser.schedule(&[block])?;
    parser.skip_ws();
    if !parser.rest().is_empty() {
        return parser.error(format!("unexpected {} after the schedule", parser.found()));
    }
    Ok(schedule)
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    program: &'a Program,
}

reads_through_lexer!(Parser);

/// The tokens of printed text: its words, split around brackets and commas (which the IR's
/// parser takes with whitespace around them).
fn pieces(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    for word in text.split_whitespace() {
        let mut start = 0;
        for (at, c) in word.char_indices() {
            if matches!(c, ',' | '(' | ')' | '[' | ']') {
                pieces.extend([&word[start..at], &word[at..at + 1]]);
                start = at + 1;
            }
        }
        pieces.push(&word[start..]);
    }
    pieces.retain(|piece| !piece.is_empty());
    pieces
}

/// The reductions a kernel may have, to read their names.
const REDUCTIONS: [Reduction; 3] = [Reduction::Sum, Reduction::Max, Reduction::Min];

impl Parser<'_> {
    /// `schedule(inputs) { steps in results }`, of the one of `blocks` whose inputs these are.
    fn schedule(&mut self, blocks: &[BlockId]) -> Res<Schedule> {
        self.expect("schedule")?;
        self.skip_ws();
        let start = self.pos;
        self.expect("(")?;
        let inputs = self.list(")", Self::var)?;
        let Some(&block) = blocks.iter().find(|&&block| self.inputs(block) == inputs) else {
            let expected: Vec<String> = (blocks.iter())
                .map(|&block| format!("({})", self.names(&self.inputs(block))))
                .collect();
            return self.error_at(
                start,
                format!("expected the inputs {}", expected.join(" or ")),
            );
        };
        self.expect("{")?;
        let mut schedule = Schedule {
            block,
            steps: Vec::new(),
            loop_bodies: Vec::new(),
        };
        while self.peek_word() != "in" {
            let step = self.step(&mut schedule)?;
            schedule.steps.push(step);
        }
        self.word()?;
        let results: Vec<String> = (self.program.blocks[block].results.iter())
            .map(|atom| atom_text(self.program, atom))
            .collect();
        self.text(&results.join(", "))?;
        self.expect("}")?;
        Ok(schedule)
    }

    /// The variables a schedule of `block` starts from: the program's inputs for `main`, the
    /// params for a loop's body.
    fn inputs(&self, block: BlockId) -> Vec<VarId> {
        if block == self.program.main {
            self.program.inputs.clone()
        } else {
            self.program.blocks[block].params.clone()
        }
    }

    fn names(&self, vars: &[VarId]) -> String {
        let names: Vec<String> = (vars.iter())
            .map(|&var| var_text(self.program, var))
            .collect();
        names.join(", ")
    }

    /// The next step of `schedule`; a loop's bodies join `schedule.loop_bodies`.
    fn step(&mut self, schedule: &mut Schedule) -> Res<Step> {
        let (block, number) = (schedule.block, schedule.steps.len());
        let label = number.to_string();
        match self.peek_word() {
            "kernel" => {
                self.skip_ws();
                let start = self.pos;
                match self.kernel(&label)? {
                    (_, true) => self.error_at(start, "a kernel step is never local"),
                    (kernel, false) => Ok(Step::Kernel(kernel)),
                }
            }
            "rows" => self.rows(block, &label),
            "matmul" => self.matmul(&label),
            "bulk" => {
                self.word()?;
                self.label(&label)?;
                self.expect(":")?;
                Ok(Step::Stmt(self.statement(block)?))
            }
            "loop" => self.loop_step(schedule, &label),
            "monoid" => self.monoid(block, &label),
            "scatter" => {
                self.expect("scatter-add")?;
                self.label(&label)?;
                self.expect("into")?;
                let into = self.var()?;
                self.expect(":")?;
                let stmt = self.statement(block)?;
                Ok(Step::ScatterAdd { stmt, into })
            }
            _ => self.error(format!(
                "expected a step (`kernel`, `rows`, `matmul`, `bulk`, `loop`, `monoid`, \
                 `scatter-add`) or `in`, found {}",
                self.found()
            )),
        }
    }

    /// `k{label}`, the step's number as the printer gives it (`k2`, `k2.1`).
    fn label(&mut self, label: &str) -> Res<()> {
        self.skip_ws();
        let start = self.pos;
        let found = self.take_while(|c| is_ident_char(c) || c == '.');
        if found != format!("k{label}") {
            return self.error_at(start, format!("expected `k{label}`, found `{found}`"));
        }
        Ok(())
    }

    /// `kernel k{label} over [shape] (sum i0)?: reads {…} writes (local)? %out: type`, its
    /// nodes and its `out`/`sum` line; whether its output is local.
    fn kernel(&mut self, label: &str) -> Res<(Kernel, bool)> {
        self.expect("kernel")?;
        self.label(label)?;
        self.expect("over")?;
        let shape = self.usize_list()?;
        let reduce = self.reduction();
        if reduce.is_some() {
            self.expect("i0")?;
        }
        self.expect(":")?;
        self.expect("reads")?;
        self.skip_ws();
        let reads_at = self.pos;
        self.expect("{")?;
        let reads = self.list("}", Self::var)?;
        self.expect("writes")?;
        let local = self.eat_word("local");
        let out = self.typed_var()?;
        let mut nodes = IdVec::new();
        while self.peek_word() != "out" && self.reduction_ahead().is_none() {
            self.skip_ws();
            let start = self.pos;
            let id = self.node_id()?;
            if id.0 as usize != nodes.len() {
                return self.error_at(start, format!("expected `v{}`, found `{id}`", nodes.len()));
            }
            self.expect(":")?;
            let elem = self.elem()?;
            self.expect("=")?;
            let node = self.node()?;
            nodes.push((node, elem));
        }
        let end = reduce.map_or("out", Reduction::name);
        if self.peek_word() != end {
            return self.error(format!("expected `{end}`, found {}", self.found()));
        }
        self.word()?;
        let root = self.node_id()?;
        let kernel = Kernel {
            shape,
            reduce,
            nodes,
            output: (out, root),
        };
        if kernel.reads() != reads {
            return self.error_at(
                reads_at,
                format!("expected the reads {{{}}}", self.names(&kernel.reads())),
            );
        }
        Ok((kernel, local))
    }

    /// A reduction's name, if one comes next (consumed).
    fn reduction(&mut self) -> Option<Reduction> {
        let reduction = self.reduction_ahead()?;
        self.pos += reduction.name().len();
        Some(reduction)
    }

    /// A reduction's name, if one comes next (not consumed).
    fn reduction_ahead(&mut self) -> Option<Reduction> {
        let word = self.peek_word();
        REDUCTIONS
            .into_iter()
            .find(|reduction| reduction.name() == word)
    }

    /// What follows `=` in a node's line.
    fn node(&mut self) -> Res<Node> {
        let word = self.peek_word();
        let after = self.rest()[word.len()..].chars().next();
        match word {
            "index" => {
                self.word()?;
                Ok(Node::Index(self.affine()?))
            }
            "read" => {
                self.word()?;
                let var = self.var()?;
                self.expect("[")?;
                let coords = self.list("]", Self::coord)?;
                Ok(Node::Read { var, coords })
            }
            // A literal's value is followed by its type (`inf:f32`).
            _ if after == Some(':') => Ok(Node::Lit(self.scalar("a node")?)),
            _ => match Prim::from_name(word) {
                Some(prim) => {
                    self.word()?;
                    let mut operands = Vec::new();
                    while self.operand_ahead() {
                        operands.push(self.node_id()?);
                    }
                    Ok(Node::Prim(prim, operands))
                }
                None => Ok(Node::Lit(self.scalar("a node")?)),
            },
        }
    }

    /// Whether a node (`v3`) comes next that is an operand, not the next node's definition
    /// (`v3:`).
    fn operand_ahead(&mut self) -> bool {
        self.skip_ws();
        let rest = self.rest();
        let Some(digits) = rest.strip_prefix('v') else {
            return false;
        };
        let after = digits.trim_start_matches(|c: char| c.is_ascii_digit());
        after.len() < digits.len() && !after.trim_start().starts_with(':')
    }

    /// `v{N}`.
    fn node_id(&mut self) -> Res<NodeId> {
        self.skip_ws();
        let start = self.pos;
        let word = self.take_while(is_ident_char);
        match word.strip_prefix('v').map(str::parse) {
            Some(Ok(number)) => Ok(NodeId(number)),
            _ => self.error_at(start, format!("expected a node (`v3`), found `{word}`")),
        }
    }

    /// A coordinate as `Coord`'s `Display` prints it.
    fn coord(&mut self) -> Res<Coord> {
        self.skip_ws();
        if self.eat("(") {
            let affine = self.affine()?;
            self.expect(")")?;
            self.expect("mod")?;
            return Ok(Coord::Wrapped(affine, self.usize()?));
        }
        if self.rest().starts_with('v') {
            return Ok(Coord::Node(self.node_id()?));
        }
        let affine = self.affine()?;
        if self.eat_word("in") {
            self.expect("0..")?;
            return Ok(Coord::Masked(affine, self.usize()?));
        }
        Ok(Coord::Affine(affine))
    }

    /// An affine function as `Affine`'s `Display` prints it: `2*i0 + i1 + -3`, `0`.
    fn affine(&mut self) -> Res<Affine> {
        let mut affine = Affine::default();
        let mut constant = None;
        loop {
            self.skip_ws();
            let start = self.pos;
            if self.rest().starts_with('i') {
                affine.terms.push((self.axis()?, 1));
            } else {
                let value = self.int()?;
                if self.eat("*") {
                    affine.terms.push((self.axis()?, value));
                } else if constant.replace(value).is_some() {
                    return self.error_at(start, "a second constant");
                }
            }
            if !self.eat("+") {
                break;
            }
        }
        affine.constant = constant.unwrap_or(0);
        Ok(affine)
    }

    /// `i{axis}`.
    fn axis(&mut self) -> Res<usize> {
        self.skip_ws();
        let start = self.pos;
        let word = self.take_while(is_ident_char);
        match word.strip_prefix('i').map(str::parse) {
            Some(Ok(axis)) => Ok(axis),
            _ => self.error_at(start, format!("expected an axis (`i0`), found `{word}`")),
        }
    }

    /// `i0, i2, …` (at least one).
    fn axes(&mut self) -> Res<Vec<usize>> {
        let mut axes = vec![self.axis()?];
        while self.eat(",") {
            axes.push(self.axis()?);
        }
        Ok(axes)
    }

    /// An integer, possibly negative.
    fn int(&mut self) -> Res<i64> {
        self.skip_ws();
        let start = self.pos;
        let negative = self.eat("-");
        let digits = self.take_while(|c| c.is_ascii_digit());
        let text = if negative {
            format!("-{digits}")
        } else {
            digits.to_string()
        };
        match text.parse() {
            Ok(value) => Ok(value),
            Err(_) => self.error_at(start, "expected an integer"),
        }
    }

    /// `rows k{label} over [rows] { kernels (scatter-add by rows into %v: stmt)? }`.
    fn rows(&mut self, block: BlockId, label: &str) -> Res<Step> {
        self.expect("rows")?;
        self.label(label)?;
        self.expect("over")?;
        self.expect("[")?;
        let rows = self.usize()?;
        self.expect("]")?;
        self.expect("{")?;
        let (mut kernels, mut local) = (Vec::new(), Vec::new());
        while self.peek_word() == "kernel" {
            let (kernel, is_local) = self.kernel(&format!("{label}.{}", kernels.len()))?;
            kernels.push(kernel);
            local.push(is_local);
        }
        let scatter_add = if self.peek_word() == "scatter" {
            self.expect("scatter-add")?;
            self.expect("by")?;
            self.expect("rows")?;
            self.expect("into")?;
            self.skip_ws();
            let start = self.pos;
            let into = self.var()?;
            if Some(into) != kernels.last().map(|kernel: &Kernel| kernel.output.0) {
                return self.error_at(start, "expected the last member's output");
            }
            self.expect(":")?;
            Some(self.statement(block)?)
        } else {
            None
        };
        self.expect("}")?;
        Ok(Step::Rows(Rows {
            rows,
            kernels,
            local,
            scatter_add,
        }))
    }

    /// `matmul k{label} over [shape] sum i0, … (m i)? (n i)? (batch i, …)?: %out = (factor *)?
    /// terms: type`.
    fn matmul(&mut self, label: &str) -> Res<Step> {
        self.expect("matmul")?;
        self.label(label)?;
        self.expect("over")?;
        let shape = self.usize_list()?;
        self.expect("sum")?;
        self.skip_ws();
        let start = self.pos;
        let mut summed = self.axes()?;
        if summed.remove(0) != 0 {
            return self.error_at(start, "expected `i0` first");
        }
        let m_axis = self.eat_word("m").then(|| self.axis()).transpose()?;
        let n_axis = self.eat_word("n").then(|| self.axis()).transpose()?;
        let batch_axes = if self.eat_word("batch") {
            self.axes()?
        } else {
            Vec::new()
        };
        self.expect(":")?;
        let out = self.var()?;
        self.expect("=")?;
        let scale = self.factor()?;
        let mut terms = Vec::new();
        if self.eat("(") {
            terms.push(self.term()?);
            while self.eat("+") {
                terms.push(self.term()?);
            }
            self.expect(")")?;
        } else {
            terms.push(self.term()?);
        }
        self.expect(":")?;
        self.var_type(out)?;
        let mut terms = terms.into_iter();
        let (lhs, rhs) = terms.next().expect("a first term");
        Ok(Step::MatMul(MatMul {
            shape,
            out,
            elem: self.program.var_ty(out).elem,
            lhs,
            rhs,
            m_axis,
            n_axis,
            batch_axes,
            scale,
            more: terms.collect(),
            summed,
        }))
    }

    /// A product's factor `2^scale` and its `*`, as `MatMul::factor` prints it; none is 1.
    fn factor(&mut self) -> Res<i32> {
        self.skip_ws();
        if self.rest().starts_with(['%', '(']) {
            return Ok(0);
        }
        let start = self.pos;
        let text = self.take_while(is_literal_char);
        let value: f64 = match text.parse() {
            Ok(value) => value,
            Err(_) => return self.error_at(start, "expected a factor or an operand"),
        };
        let scale = value.log2().round();
        if !(scale.abs() < 2048.0 && 2f64.powi(scale as i32) == value) {
            return self.error_at(start, format!("`{text}` is not a power of two"));
        }
        self.expect("*")?;
        Ok(scale as i32)
    }

    /// `%a[coords] * %b[coords]`.
    fn term(&mut self) -> Res<(MatOperand, MatOperand)> {
        let lhs = self.operand()?;
        self.expect("*")?;
        Ok((lhs, self.operand()?))
    }

    fn operand(&mut self) -> Res<MatOperand> {
        let var = self.var()?;
        self.expect("[")?;
        let coords = self.list("]", Self::affine)?;
        Ok(MatOperand { var, coords })
    }

    /// `loop k{label}: binders = name (atoms) each step:` and the schedules of the loop's
    /// bodies, which join `schedule.loop_bodies`.
    fn loop_step(&mut self, schedule: &mut Schedule, label: &str) -> Res<Step> {
        let program = self.program;
        self.expect("loop")?;
        self.label(label)?;
        self.expect(":")?;
        self.skip_ws();
        let start = self.pos;
        let mut binders = Vec::new();
        if !self.rest().starts_with('=') {
            binders.push(self.var()?);
            while self.eat(",") {
                binders.push(self.var()?);
            }
        }
        self.expect("=")?;
        let after_binders = self.pos;
        let stmts = &program.blocks[schedule.block].stmts;
        let mut found = None;
        for (index, stmt) in stmts.iter().enumerate() {
            if stmt.binders != binders {
                continue;
            }
            let atoms: Vec<String> = (expr_atoms(&stmt.expr).iter())
                .map(|atom| atom_text(program, atom))
                .collect();
            let header = format!(
                "{} ({}) each step:",
                expr_name(&stmt.expr),
                atoms.join(", ")
            );
            self.pos = after_binders;
            if self.text(&header).is_ok() {
                found = Some((index, stmt));
                break;
            }
        }
        let Some((index, stmt)) = found else {
            return self.error_at(
                start,
                format!(
                    "expected a loop of the block binding ({})",
                    self.names(&binders)
                ),
            );
        };
        let mut blocks = expr_blocks(&stmt.expr);
        while self.peek_word() == "schedule" {
            let body = self.schedule(&blocks)?;
            blocks.retain(|&block| block != body.block);
            schedule.loop_bodies.push(body);
        }
        if blocks.len() == expr_blocks(&stmt.expr).len() {
            return self.error(format!(
                "expected the schedule of the loop's body, found {}",
                self.found()
            ));
        }
        Ok(Step::Stmt(index))
    }

    /// `monoid k{label} (unread, not stored: …; consumed, not stored: …)?: stmt`, then its
    /// producers (local) and consumers, `kernel k{label}.{position}`.
    fn monoid(&mut self, block: BlockId, label: &str) -> Res<Step> {
        let program = self.program;
        self.expect("monoid")?;
        self.label(label)?;
        // The unstored binders, whether the text says they are consumed, and where.
        let mut unstored: Vec<(VarId, bool, usize)> = Vec::new();
        if self.eat("(") {
            loop {
                self.skip_ws();
                let start = self.pos;
                let consumed = match self.word()?.as_str() {
                    "unread" => false,
                    "consumed" => true,
                    _ => return self.error_at(start, "expected `unread` or `consumed`"),
                };
                self.expect(",")?;
                self.expect("not")?;
                self.expect("stored")?;
                self.expect(":")?;
                loop {
                    self.skip_ws();
                    let at = self.pos;
                    unstored.push((self.var()?, consumed, at));
                    if !self.eat(",") {
                        break;
                    }
                }
                if !self.eat(";") {
                    break;
                }
            }
            self.expect(")")?;
        }
        self.expect(":")?;
        let stmt = self.statement(block)?;
        let binders = &program.blocks[block].stmts[stmt].binders;
        let mut live = vec![true; binders.len()];
        let mut positions = Vec::with_capacity(unstored.len());
        for &(var, _, at) in &unstored {
            let Some(position) = binders.iter().position(|&binder| binder == var) else {
                let name = var_text(program, var);
                return self.error_at(at, format!("{name} is not a binder of the statement"));
            };
            live[position] = false;
            positions.push(position);
        }
        let (mut producers, mut consumers) = (Vec::new(), Vec::new());
        while self.member_ahead(label) {
            self.skip_ws();
            let start = self.pos;
            let member = format!("{label}.{}", producers.len() + consumers.len());
            match self.kernel(&member)? {
                (_, true) if !consumers.is_empty() => {
                    return self.error_at(start, "a producer (local) after a consumer")
                }
                (kernel, true) => producers.push(kernel),
                (kernel, false) => consumers.push(kernel),
            }
        }
        let monoid = MonoidStep {
            stmt,
            producers,
            live,
            consumers,
        };
        let consumed = monoid.consumed(program, block);
        for (&(var, says, at), position) in unstored.iter().zip(positions) {
            if consumed[position] != says {
                let what = if consumed[position] {
                    "consumed"
                } else {
                    "unread"
                };
                return self.error_at(at, format!("{} is {what}", var_text(program, var)));
            }
        }
        Ok(Step::Monoid(monoid))
    }

    /// Whether `kernel k{label}.…` comes next: a kernel of the step `label`.
    fn member_ahead(&mut self, label: &str) -> bool {
        let start = self.pos;
        let ahead = self.eat_word("kernel") && {
            self.skip_ws();
            self.rest().starts_with(&format!("k{label}."))
        };
        self.pos = start;
        ahead
    }

    /// A statement of `block` as `stmt_text` prints it: the statement with the binders
    /// written (and the text written, where several have them).
    fn statement(&mut self, block: BlockId) -> Res<usize> {
        let program = self.program;
        self.skip_ws();
        let start = self.pos;
        let mut binders = Vec::new();
        if !self.eat("()") {
            loop {
                binders.push(self.var()?);
                self.expect(":")?;
                self.eat_word("lin");
                self.ty()?;
                if !self.eat(",") {
                    break;
                }
            }
        }
        let mut mismatch = None;
        let stmts = program.blocks[block].stmts.iter().enumerate();
        for (index, stmt) in stmts.filter(|(_, stmt)| stmt.binders == binders) {
            self.pos = start;
            match self.text(&stmt_text(program, stmt, 1)) {
                Ok(()) => return Ok(index),
                Err(error) => {
                    mismatch.get_or_insert(error);
                }
            }
        }
        match mismatch {
            Some(error) => Err(error),
            None => self.error_at(
                start,
                format!(
                    "expected a statement of the block, found one binding ({})",
                    self.names(&binders)
                ),
            ),
        }
    }

    /// The tokens of `expected` (`pieces`) with any whitespace between them: a statement's
    /// text, whose nested blocks are indented as deep as the step is.
    fn text(&mut self, expected: &str) -> Res<()> {
        for piece in pieces(expected) {
            self.skip_ws();
            let rest = self.rest();
            let glued = piece.ends_with(is_ident_char)
                && (rest.get(piece.len()..)).is_some_and(|after| after.starts_with(is_ident_char));
            if !rest.starts_with(piece) || glued {
                return self.error(format!("expected `{piece}`, found {}", self.found()));
            }
            self.pos += piece.len();
        }
        Ok(())
    }

    /// Consumes `word` if it comes next as a whole word.
    fn eat_word(&mut self, word: &str) -> bool {
        let matches = self.peek_word() == word;
        if matches {
            self.pos += word.len();
        }
        matches
    }

    /// `item, …` up to `close` (consumed).
    fn list<T>(&mut self, close: &str, item: fn(&mut Self) -> Res<T>) -> Res<Vec<T>> {
        let mut items = Vec::new();
        if self.eat(close) {
            return Ok(items);
        }
        loop {
            items.push(item(self)?);
            if self.eat(close) {
                return Ok(items);
            }
            self.expect(",")?;
        }
    }

    /// A variable of the program, `%N` or `%N_hint` (its own hint).
    fn var(&mut self) -> Res<VarId> {
        self.skip_ws();
        let start = self.pos;
        let (var, hint) = self.var_name()?;
        if self.program.vars.get(var).is_none() {
            return self.error_at(start, format!("{var} is not a variable of the program"));
        }
        let name = var_text(self.program, var);
        match hint {
            Some(hint) if name != format!("{var}_{hint}") => {
                self.error_at(start, format!("{var} is `{name}`, not `{var}_{hint}`"))
            }
            _ => Ok(var),
        }
    }

    /// `%v: type`, the variable's own type.
    fn typed_var(&mut self) -> Res<VarId> {
        let var = self.var()?;
        self.expect(":")?;
        self.var_type(var)?;
        Ok(var)
    }

    /// `var`'s type.
    fn var_type(&mut self, var: VarId) -> Res<()> {
        self.skip_ws();
        let start = self.pos;
        let declared = self.program.var_ty(var);
        if self.ty()? != *declared {
            return self.error_at(
                start,
                format!(
                    "expected {}'s type {}",
                    var_text(self.program, var),
                    ty_text(declared)
                ),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    use super::*;
    use crate::core::parse::parse_program;
    use crate::core::verify_schedule::verify_schedule;
    use crate::ops::testgen::{random_program, GenConfig};
    use crate::passes::{bot, fuse, simplify};

    /// A block for a schedule of every kind of step. The statements a schedule computes as
    /// kernels and products are placeholders (copies): a schedule names them by their
    /// binders only; those it runs as statements are what it prints.
    const PROGRAM: &str = r"program(%0_x: [64, 8]f32, %1_w: [8, 16]f32, %2_i: [64]i64, %3_v: [64]f32, %4_q: [8, 2, 16]f32) {
  %5_e: [64, 8]f32 = exp %0_x
  %6_p: [64, 16]f32 = %0_x
  %7_o: [2, 64]f32 = %0_x
  %8_m: [64]f32 = %3_v
  %9: [64, 16]f32 = %0_x
  %10_ones: [64]f32 = replicate 64 1.0:f32
  %11_hot: [64, 16]f32 = scatter [64, 16] %10_ones (\%12: []i64 ->
    %13: []i64 = index %2_i [%12]
    in %12, %13)
  %14_y: [64, 16]f32 = add %9 %11_hot
  %15_t: [2, 64, 16]f32 = table [%14_y, %6_p]
  %16_acc: [64, 16]f32 = fold 3 (%6_p) (\%17: []i64, %18: [64, 16]f32 ->
    %19: [64, 16]f32 = add %18 %18
    in %19)
  %20_a: [64]f32 = neg %3_v
  %21_c: [64]f32, %22_d: [64]f32 = assoc_scan (%20_a, %3_v) (0.0:f32, 0.0:f32) (\%23: []f32, %24: []f32, %25: []f32, %26: []f32 ->
    %27: []f32 = add %23 %25
    %28: []f32 = add %24 %26
    in %27, %28)
  %29_z: [64]f32 = mul %21_c %21_c
  %30_s: [64]f32 = scatter [64] %3_v (\%31: []i64 ->
    %32: []i64 = index %2_i [%31]
    in %32)
  %33_r: [64]f32 = add %3_v %30_s
  in %15_t, %16_acc, %29_z, %7_o, %33_r, %9
}";

    /// A schedule of `PROGRAM` with a step of every kind, as the printer prints it: kernels
    /// with every kind of node and coordinate, products (scaled, of two terms, with batch and
    /// summed axes), a row group with a local member and a scatter added by rows, a bulk
    /// statement, a loop and its body's schedule, a monoid step with a producer, a consumer
    /// and unstored results, and a scatter added into a kernel's output.
    const SCHEDULE: &str = r"schedule(%0_x, %1_w, %2_i, %3_v, %4_q) {
  kernel k0 over [64, 8]: reads {%0_x} writes %5_e: [64, 8]f32
    v0: f32 = read %0_x[i0, i1]
    v1: f32 = exp v0
    out v1
  matmul k1 over [8, 64, 16] sum i0 m i1 n i2: %6_p = %5_e[i1, i0] * %1_w[i0, i2]: [64, 16]f32
  matmul k2 over [8, 2, 64, 16] sum i0, i3 m i2 batch i1: %7_o = 0.5 * (%4_q[i0, i1, i3] * %5_e[i2, i0] + %4_q[i0, i1, i3] * %5_e[i2, i0]): [2, 64]f32
  kernel k3 over [64, 16]: reads {%2_i, %6_p, %0_x} writes %9: [64, 16]f32
    v0: i64 = index 2*i0 + -1*i1 + 3
    v1: i64 = read %2_i[(i0 + 1) mod 64]
    v2: f32 = read %6_p[v1, i1 + -1 in 0..16]
    v3: f32 = read %0_x[i0, 7]
    v4: f32 = -0.0:f32
    v5: bool = true
    v6: f32 = select v5 v2 v4
    v7: f32 = add v6 v3
    out v7
  kernel k4 over [64]: reads {} writes %10_ones: [64]f32
    v0: f32 = 1.0:f32
    out v0
  rows k5 over [64] {
    kernel k5.0 over [16, 64] max i0: reads {%6_p} writes local %8_m: [64]f32
      v0: f32 = read %6_p[i1, i0]
      max v0
    kernel k5.1 over [64, 16]: reads {%6_p, %8_m} writes %14_y: [64, 16]f32
      v0: f32 = read %6_p[i0, i1]
      v1: f32 = read %8_m[i0]
      v2: f32 = sub v0 v1
      out v2
    scatter-add by rows into %14_y: %11_hot: [64, 16]f32 = scatter [64, 16] %10_ones (\%12: []i64 ->
      %13: []i64 = index %2_i [%12]
      in %12, %13)
  }
  bulk k6: %15_t: [2, 64, 16]f32 = table [%14_y, %6_p]
  loop k7: %16_acc = fold (%6_p) each step:
    schedule(%17, %18) {
      kernel k0 over [64, 16]: reads {%18} writes %19: [64, 16]f32
        v0: f32 = read %18[i0, i1]
        v1: f32 = add v0 v0
        out v1
      in %19
    }
  monoid k8 (unread, not stored: %22_d; consumed, not stored: %21_c): %21_c: [64]f32, %22_d: [64]f32 = assoc_scan (%20_a, %3_v) (0.0:f32, 0.0:f32) (\%23: []f32, %24: []f32, %25: []f32, %26: []f32 ->
    %27: []f32 = add %23 %25
    %28: []f32 = add %24 %26
    in %27, %28)
    kernel k8.0 over [64]: reads {%3_v} writes local %20_a: [64]f32
      v0: f32 = read %3_v[i0]
      v1: f32 = neg v0
      out v1
    kernel k8.1 over [64]: reads {%21_c} writes %29_z: [64]f32
      v0: f32 = read %21_c[i0]
      v1: f32 = mul v0 v0
      out v1
  kernel k9 over [64]: reads {%3_v} writes %33_r: [64]f32
    v0: f32 = read %3_v[i0]
    out v0
  scatter-add k10 into %33_r: %30_s: [64]f32 = scatter [64] %3_v (\%31: []i64 ->
    %32: []i64 = index %2_i [%31]
    in %32)
  in %15_t, %16_acc, %29_z, %7_o, %33_r, %9
}";

    fn program() -> Program {
        parse_program(PROGRAM).unwrap_or_else(|error| panic!("{error}"))
    }

    /// Equal as `==` says, but that a NaN literal equals itself (and a zero's sign counts):
    /// the derived `Debug` text.
    fn same(a: &Schedule, b: &Schedule) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    #[test]
    fn every_kind_of_step_reads_back_and_prints_again() {
        let program = program();
        let schedule = parse_schedule(&program, program.main, SCHEDULE)
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(schedule.display(&program).to_string(), SCHEDULE);
        assert_eq!(verify_schedule(&program, &schedule), Ok(()));
        let Step::MatMul(product) = &schedule.steps[2] else {
            panic!("a product")
        };
        assert_eq!(
            (product.scale, product.more.len(), &product.summed),
            (-1, 1, &vec![3])
        );
        assert_eq!(
            (product.m_axis, product.n_axis, &product.batch_axes),
            (Some(2), None, &vec![1])
        );
        let Step::Rows(rows) = &schedule.steps[5] else {
            panic!("a row group")
        };
        assert_eq!(
            (&rows.local, rows.scatter_add),
            (&vec![true, false], Some(6))
        );
        let Step::Monoid(monoid) = &schedule.steps[8] else {
            panic!("a monoid step")
        };
        assert_eq!(
            (monoid.stmt, &monoid.live, monoid.producers.len()),
            (11, &vec![false, false], 1)
        );
        assert_eq!(
            schedule.steps[10],
            Step::ScatterAdd {
                stmt: 13,
                into: VarId(33)
            }
        );
        assert_eq!(schedule.loop_bodies.len(), 1);
        // Free whitespace, as the IR's parser takes it.
        let loose = SCHEDULE.replace('\n', " \n\t").replace(", ", " ,  ");
        let again = parse_schedule(&program, program.main, &loose)
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(again, schedule);
    }

    fn check_error(text: &str, expect: Expect) {
        let program = program();
        match parse_schedule(&program, program.main, text) {
            Ok(schedule) => panic!("parsed:\n{}", schedule.display(&program)),
            Err(error) => expect.assert_eq(&error),
        }
    }

    /// `SCHEDULE` with `from` replaced by `to` (once).
    fn edited(from: &str, to: &str) -> String {
        assert!(SCHEDULE.contains(from), "{from}");
        SCHEDULE.replacen(from, to, 1)
    }

    #[test]
    fn parse_errors_say_where_and_what_was_expected() {
        check_error(
            &edited("kernel k0", "kernel k1"),
            expect!["2:10: expected `k0`, found `k1`"],
        );
        check_error(
            &edited("read %0_x[i0, i1]", "read %99[i0, i1]"),
            expect!["3:20: %99 is not a variable of the program"],
        );
        check_error(
            &edited("read %0_x[i0, i1]", "read %0_y[i0, i1]"),
            expect!["3:20: %0 is `%0_x`, not `%0_y`"],
        );
        check_error(
            &edited("reads {%0_x}", "reads {%1_w}"),
            expect!["2:33: expected the reads {%0_x}"],
        );
        check_error(
            &edited("%5_e: [64, 8]f32\n", "%5_e: [64, 8]f64\n"),
            expect!["2:53: expected %5_e's type [64, 8]f32"],
        );
        check_error(
            &edited("v0: f32 = read %0_x", "v1: f32 = read %0_x"),
            expect!["3:5: expected `v0`, found `v1`"],
        );
        check_error(
            &edited("      max v0", "      out v0"),
            expect!["24:7: expected `max`, found `out`"],
        );
        check_error(
            &edited("[%14_y, %6_p]", "[%6_p, %14_y]"),
            expect!["34:43: expected `%14_y`, found `%6_p,`"],
        );
        check_error(
            &edited(
                "bulk k6: %15_t: [2, 64, 16]f32",
                "bulk k6: %0_x: [64, 8]f32",
            ),
            expect!["34:12: expected a statement of the block, found one binding (%0_x)"],
        );
        check_error(
            &edited("unread, not", "consumed, not"),
            expect!["43:36: %22_d is unread"],
        );
        check_error(
            &edited("= 0.5 * (", "= 3 * ("),
            expect!["7:66: `3` is not a power of two"],
        );
        check_error(
            &edited("sum i0, i3 m", "sum i3, i0 m"),
            expect!["7:37: expected `i0` first"],
        );
        check_error(
            &edited("    schedule(%17, %18)", "    schedule(%18)"),
            expect!["36:13: expected the inputs (%17, %18)"],
        );
        check_error(&edited("  bulk k6", "  frob k6"), expect!["34:3: expected a step (`kernel`, `rows`, `matmul`, `bulk`, `loop`, `monoid`, `scatter-add`) or `in`, found `frob`"]);
        check_error(
            &edited("in %15_t,", "in %16_acc,"),
            expect!["61:6: expected `%15_t`, found `%16_acc,`"],
        );
        check_error(
            &edited("into %14_y", "into %6_p"),
            expect!["30:30: expected the last member's output"],
        );
        check_error(
            &SCHEDULE[..SCHEDULE.len() / 2],
            expect!["30:46: expected `[`, found the end of the text"],
        );
        check_error(
            &format!("{SCHEDULE} extra"),
            expect!["62:3: unexpected `extra` after the schedule"],
        );
    }

    /// Bad text is an error, never a panic: every proper prefix of `SCHEDULE` is refused,
    /// and `SCHEDULE` without any one of its characters or lines reads or is refused. (A
    /// kernel whose output is no node reads: that is the verifier's to refuse.)
    #[test]
    fn truncated_or_broken_text_is_an_error() {
        let program = program();
        for (end, c) in SCHEDULE.char_indices() {
            assert!(parse_schedule(&program, program.main, &SCHEDULE[..end]).is_err());
            let without = format!("{}{}", &SCHEDULE[..end], &SCHEDULE[end + c.len_utf8()..]);
            let _ = parse_schedule(&program, program.main, &without);
        }
        let lines: Vec<&str> = SCHEDULE.lines().collect();
        for skipped in 0..lines.len() {
            let mut kept = lines.clone();
            kept.remove(skipped);
            let _ = parse_schedule(&program, program.main, &kept.join("\n"));
        }
    }

    /// `schedule` and each of its loop bodies' schedules read back from their text, and
    /// verify.
    fn check_round_trip(program: &Program, schedule: &Schedule, what: &str) {
        let text = schedule.display(program).to_string();
        let parsed = parse_schedule(program, schedule.block, &text)
            .unwrap_or_else(|error| panic!("{what}: {error}\n{text}"));
        assert!(
            same(&parsed, schedule),
            "{what}: read back differently\n{text}"
        );
        assert_eq!(verify_schedule(program, schedule), Ok(()), "{what}\n{text}");
        for body in &schedule.loop_bodies {
            check_round_trip(program, body, what);
        }
    }

    /// The random programs of the fused engine's tests (`ops::testgen`, then `bot` and
    /// `simplify`, as the pipeline runs them): every schedule `fuse` makes of them, and of
    /// their loops' bodies, reads back from its text as it was, and verifies.
    #[test]
    fn fused_random_programs_read_back_from_their_text() {
        let deeper = GenConfig::deeper();
        let (mut steps, mut bodies) = (0, 0);
        for (config, seeds) in [(GenConfig::default(), 0..800), (deeper, 10_000..10_200)] {
            for seed in seeds {
                let mut program = bot::run(&random_program(seed, &config));
                simplify::run(&mut program);
                let schedule = fuse::run(&program);
                check_round_trip(&program, &schedule, &format!("seed {seed}"));
                steps += schedule.steps.len();
                bodies += schedule.loop_bodies.len();
            }
        }
        assert!(
            steps > 2000 && bodies > 50,
            "{steps} steps, {bodies} loop bodies"
        );
    }

    /// The benchmarks (`benches/dx`, at their sizes): each measured expression's schedule
    /// reads back from its text, and verifies. The set-up runs; the expressions are only
    /// compiled.
    #[test]
    fn benchmark_schedules_read_back_from_their_text() {
        use crate::session::{Output, Session, SessionConfig};
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/dx");
        let mut paths: Vec<_> = (std::fs::read_dir(&dir).unwrap().flatten())
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "dx"))
            .collect();
        paths.sort();
        assert!(paths.len() > 20, "{}", dir.display());
        // The steps of each kind the schedules have (loops among the statements), at any
        // depth.
        let mut kinds = std::collections::BTreeMap::new();
        for path in paths {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let src = std::fs::read_to_string(&path).unwrap();
            let (setup, measured) = src.split_once("-- @primal").expect("a set-up");
            let mut session = Session::new(SessionConfig::default());
            for output in session
                .eval_source(setup)
                .into_iter()
                .flat_map(|r| r.outputs)
            {
                assert!(!matches!(output, Output::Error(_)), "{name}: {output:?}");
            }
            // The line after each `%bench` binds the measured expression.
            let lines: Vec<&str> = measured.lines().collect();
            for pair in lines.windows(2) {
                if !pair[0].starts_with("%bench") {
                    continue;
                }
                let (_, expr) = pair[1].split_once(" = ").expect("a binding");
                let (_, program) = (session.compile_expr(expr))
                    .unwrap_or_else(|error| panic!("{name}: {expr}: {error:?}"));
                let schedule = fuse::run(&program);
                check_round_trip(&program, &schedule, &format!("{name}: {expr}"));
                count_kinds(&program, &schedule, &mut kinds);
            }
        }
        eprintln!("steps of the benchmarks' schedules: {kinds:?}");
        let kinds: Vec<&str> = kinds.into_keys().collect();
        assert_eq!(
            kinds,
            [
                "bulk",
                "kernel",
                "loop",
                "matmul",
                "monoid",
                "rows",
                "scatter-add"
            ]
        );
    }

    /// Adds the steps of `schedule` and of its loops' bodies to `kinds`, by kind.
    fn count_kinds(
        program: &Program,
        schedule: &Schedule,
        kinds: &mut std::collections::BTreeMap<&'static str, usize>,
    ) {
        for step in &schedule.steps {
            let kind = match step {
                Step::Kernel(_) => "kernel",
                Step::MatMul(_) => "matmul",
                Step::Rows(_) => "rows",
                Step::Monoid(_) => "monoid",
                Step::ScatterAdd { .. } => "scatter-add",
                Step::Stmt(_) if schedule.step_bodies(program, step).is_empty() => "bulk",
                Step::Stmt(_) => "loop",
            };
            *kinds.entry(kind).or_insert(0) += 1;
        }
        for body in &schedule.loop_bodies {
            count_kinds(program, body, kinds);
        }
    }
}
