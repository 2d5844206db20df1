//! The core IR parser: reads the text form of `core::print` back into a `Program`.
//!
//! Assumes: text in the printer's syntax (see `print.rs`); whitespace between tokens is free
//! and `;` starts a comment to the end of the line. Hand-written recursive descent.
//!
//! Guarantees: print → parse → print is the identity. Variables keep their printed numbers
//! (`%N` is `VarId(N)`), so the arena has `max N + 1` variables; numbers that appear nowhere
//! get a placeholder `[]f32` entry with no hint. Blocks are numbered in the order their `(`
//! appears, `main` first.
//!
//! The parser checks only what it needs to build the arena: every variable must be bound
//! somewhere (its binder gives its type), two binders of one variable must agree on its type,
//! a hint written at a use must be the binder's, and a primitive gets exactly its arity of
//! operands. Everything else (scope, single definition, typing) is the verifier's job, so
//! ill-formed programs can be written for verifier tests.

use super::ir::{
    AdMode, ArrTy, Atom, Block, BlockId, Build1, Cond, CustomJvp, CustomLinear, CustomVjp,
    Derivative, Elem, Expr, Fold, Gather, Index, Iota, Monoid, MonoidKind, PrimApp, Program,
    Replicate, Reshape, Scalar, Scan, Scatter, Stmt, SumOuter, Table, Transpose, VarId, VarInfo,
    While, WhileReverse,
};
use crate::prim::Prim;

/// The largest variable number accepted (the arena is allocated densely).
const MAX_VAR: u32 = 1 << 24;

/// Parses a program in the printer's syntax; errors are `line:column: message`.
pub fn parse_program(text: &str) -> Result<Program, String> {
    let mut parser = Parser {
        lexer: Lexer::new(text),
        program: Program::new(),
        declared: Vec::new(),
        uses: Vec::new(),
    };
    parser.program()?;
    parser.finish()
}

/// The tokens of the printed forms, shared with the schedule's parser
/// (`core::parse_schedule`): a position in the text, errors that say where, and the words,
/// sizes, shapes, element types, variable names and literals both read.
pub(super) struct Lexer<'a> {
    text: &'a str,
    /// Byte offset of the next unread character.
    pub(super) pos: usize,
    /// Whether `;` starts a comment.
    comments: bool,
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    program: Program,
    /// Whether each variable number has a binder.
    declared: Vec<bool>,
    /// Every use: the variable, the hint written there, and where.
    uses: Vec<(VarId, Option<String>, usize)>,
}

/// A parser over a `Lexer` (its field `lexer`) dereferences to it, so that it reads tokens
/// with the lexer's methods (`Parser` here and in `core::parse_schedule`).
macro_rules! reads_through_lexer {
    ($parser:ident) => {
        impl<'a> std::ops::Deref for $parser<'a> {
            type Target = Lexer<'a>;

            fn deref(&self) -> &Lexer<'a> {
                &self.lexer
            }
        }

        impl std::ops::DerefMut for $parser<'_> {
            fn deref_mut(&mut self) -> &mut Self::Target {
                &mut self.lexer
            }
        }
    };
}
pub(super) use reads_through_lexer;

reads_through_lexer!(Parser);

pub(super) type Res<T> = Result<T, String>;

pub(super) fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Characters of a literal's value (`-1.5e-3`, `NaN`, `inf`).
pub(super) fn is_literal_char(c: char) -> bool {
    is_ident_char(c) || matches!(c, '.' | '+' | '-')
}

impl<'a> Lexer<'a> {
    pub(super) fn new(text: &'a str) -> Lexer<'a> {
        Lexer {
            text,
            pos: 0,
            comments: true,
        }
    }

    /// The lexer with `;` an ordinary character.
    pub(super) fn without_comments(self) -> Lexer<'a> {
        Lexer {
            comments: false,
            ..self
        }
    }

    pub(super) fn error_at<T>(&self, pos: usize, message: impl Into<String>) -> Res<T> {
        let before = &self.text[..pos.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.chars().rev().take_while(|&c| c != '\n').count() + 1;
        Err(format!("{line}:{column}: {}", message.into()))
    }

    pub(super) fn error<T>(&self, message: impl Into<String>) -> Res<T> {
        self.error_at(self.pos, message)
    }

    pub(super) fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    pub(super) fn skip_ws(&mut self) {
        loop {
            let rest = self.rest();
            let trimmed = rest.trim_start();
            self.pos += rest.len() - trimmed.len();
            if self.comments && trimmed.starts_with(';') {
                self.pos += trimmed.find('\n').unwrap_or(trimmed.len());
            } else {
                return;
            }
        }
    }

    pub(super) fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.rest().chars().next()
    }

    /// Consumes `token` if it comes next.
    pub(super) fn eat(&mut self, token: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    pub(super) fn expect(&mut self, token: &str) -> Res<()> {
        if self.eat(token) {
            Ok(())
        } else {
            self.error(format!("expected `{token}`, found {}", self.found()))
        }
    }

    /// A description of what comes next, for error messages.
    pub(super) fn found(&self) -> String {
        match self.rest().split_whitespace().next() {
            Some(token) => format!("`{}`", token.chars().take(20).collect::<String>()),
            None => "the end of the text".to_string(),
        }
    }

    /// Reads a run of characters satisfying `accept` (possibly empty), without skipping
    /// whitespace first.
    pub(super) fn take_while(&mut self, accept: fn(char) -> bool) -> &'a str {
        let start = self.pos;
        let len = self
            .rest()
            .find(|c: char| !accept(c))
            .unwrap_or(self.rest().len());
        self.pos += len;
        &self.text[start..start + len]
    }

    /// The identifier that comes next, without consuming it.
    pub(super) fn peek_word(&mut self) -> &'a str {
        self.skip_ws();
        let rest = self.rest();
        let len = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
        &rest[..len]
    }

    pub(super) fn word(&mut self) -> Res<String> {
        self.skip_ws();
        let word = self.take_while(is_ident_char).to_string();
        if word.is_empty() {
            return self.error(format!("expected a word, found {}", self.found()));
        }
        Ok(word)
    }

    pub(super) fn usize(&mut self) -> Res<usize> {
        self.skip_ws();
        let start = self.pos;
        let digits = self.take_while(|c| c.is_ascii_digit());
        match digits.parse() {
            Ok(value) => Ok(value),
            Err(_) => self.error_at(start, "expected a size"),
        }
    }

    /// `[k, …]`
    pub(super) fn usize_list(&mut self) -> Res<Vec<usize>> {
        self.expect("[")?;
        let mut list = Vec::new();
        if self.eat("]") {
            return Ok(list);
        }
        loop {
            list.push(self.usize()?);
            if self.eat("]") {
                return Ok(list);
            }
            self.expect(",")?;
        }
    }

    pub(super) fn elem(&mut self) -> Res<Elem> {
        self.skip_ws();
        let start = self.pos;
        let name = self.take_while(is_ident_char);
        match Elem::from_name(name) {
            Some(elem) => Ok(elem),
            None => self.error_at(start, format!("unknown element type `{name}`")),
        }
    }

    /// `[shape]elem`
    pub(super) fn ty(&mut self) -> Res<ArrTy> {
        let shape = self.usize_list()?;
        let elem = self.elem()?;
        Ok(ArrTy::new(shape, elem))
    }

    /// `%N` or `%N_hint`: the variable and the hint written.
    pub(super) fn var_name(&mut self) -> Res<(VarId, Option<String>)> {
        self.expect("%")?;
        let start = self.pos;
        let number = match self.take_while(|c| c.is_ascii_digit()).parse::<u32>() {
            Ok(number) if number <= MAX_VAR => number,
            _ => return self.error_at(start, "expected a variable number"),
        };
        let hint = if self.rest().starts_with('_') {
            self.pos += 1;
            Some(
                self.take_while(|c| is_ident_char(c) || c == '.')
                    .to_string(),
            )
        } else {
            None
        };
        Ok((VarId(number), hint))
    }

    /// A literal (`1.5:f32`, `true`); `what` names what was expected, for the error.
    pub(super) fn scalar(&mut self, what: &str) -> Res<Scalar> {
        self.skip_ws();
        let start = self.pos;
        let value = self.take_while(is_literal_char).to_string();
        if !self.rest().starts_with(':') {
            return match value.as_str() {
                "true" => Ok(Scalar::Bool(true)),
                "false" => Ok(Scalar::Bool(false)),
                _ => {
                    self.pos = start;
                    self.error(format!("expected {what}, found {}", self.found()))
                }
            };
        }
        self.pos += 1;
        let elem = self.elem()?;
        let scalar = match elem {
            Elem::F32 => value.parse().map(Scalar::F32).ok(),
            Elem::F64 => value.parse().map(Scalar::F64).ok(),
            Elem::I32 => value.parse().map(Scalar::I32).ok(),
            Elem::I64 => value.parse().map(Scalar::I64).ok(),
            Elem::U32 => value.parse().map(Scalar::U32).ok(),
            Elem::U64 => value.parse().map(Scalar::U64).ok(),
            Elem::Bool => value.parse().map(Scalar::Bool).ok(),
        };
        match scalar {
            Some(scalar) => Ok(scalar),
            None => self.error_at(
                start,
                format!("`{value}` is not a valid {} literal", elem.name()),
            ),
        }
    }
}

impl Parser<'_> {
    /// `%N` or `%N_hint`, growing the arena to hold it.
    fn var(&mut self) -> Res<(VarId, Option<String>)> {
        let (var, hint) = self.var_name()?;
        self.grow_arena(var);
        Ok((var, hint))
    }

    fn grow_arena(&mut self, var: VarId) {
        while self.program.vars.len() <= var.0 as usize {
            self.program.new_var(ArrTy::scalar(Elem::F32), "");
            self.declared.push(false);
        }
    }

    /// `%N_hint: [shape]elem`, declaring the variable.
    fn binder(&mut self) -> Res<VarId> {
        self.skip_ws();
        let start = self.pos;
        let (var, hint) = self.var()?;
        self.expect(":")?;
        let linear = self.eat("lin");
        let ty = self.ty()?;
        let index = var.0 as usize;
        if self.declared[index] {
            if self.program.vars[var].ty != ty || self.program.vars[var].linear != linear {
                return self.error_at(start, format!("{var} is bound again with another type"));
            }
        } else {
            self.declared[index] = true;
            self.program.vars[var] = VarInfo {
                ty,
                hint: hint.unwrap_or_default(),
                linear,
            };
        }
        Ok(var)
    }

    /// `binder, …` up to (not including) `end`; `()` or nothing for none.
    fn binder_list(&mut self, end: &str) -> Res<Vec<VarId>> {
        let mut binders = Vec::new();
        if self.eat("()") {
            return Ok(binders);
        }
        self.skip_ws();
        if self.rest().starts_with(end) {
            return Ok(binders);
        }
        loop {
            binders.push(self.binder()?);
            if !self.eat(",") {
                return Ok(binders);
            }
        }
    }

    fn atom(&mut self) -> Res<Atom> {
        self.skip_ws();
        let start = self.pos;
        if self.rest().starts_with('%') {
            let (var, hint) = self.var()?;
            self.uses.push((var, hint, start));
            return Ok(Atom::Var(var));
        }
        Ok(Atom::Lit(self.scalar("an atom")?))
    }

    /// `open atom, … close`
    fn atom_list(&mut self, open: &str, close: &str) -> Res<Vec<Atom>> {
        self.expect(open)?;
        let mut atoms = Vec::new();
        if self.eat(close) {
            return Ok(atoms);
        }
        loop {
            atoms.push(self.atom()?);
            if self.eat(close) {
                return Ok(atoms);
            }
            self.expect(",")?;
        }
    }

    fn program(&mut self) -> Res<()> {
        self.skip_ws();
        let start = self.pos;
        if self.word()? != "program" {
            return self.error_at(start, "expected `program`");
        }
        self.expect("(")?;
        let inputs = self.binder_list(")")?;
        self.program.inputs = inputs;
        self.expect(")")?;
        self.expect("{")?;
        let main = self.program.main;
        let block = self.body(Vec::new())?;
        self.program.blocks[main] = block;
        self.expect("}")?;
        self.skip_ws();
        if !self.rest().is_empty() {
            return self.error(format!("unexpected {} after the program", self.found()));
        }
        Ok(())
    }

    /// Statements, then `in results`.
    fn body(&mut self, params: Vec<VarId>) -> Res<Block> {
        let mut stmts = Vec::new();
        while self.peek_word() != "in" {
            if !matches!(self.peek(), Some('%' | '(')) {
                return self.error(format!(
                    "expected a statement or `in`, found {}",
                    self.found()
                ));
            }
            stmts.push(self.stmt()?);
        }
        self.word()?;
        let results = if self.eat("()") {
            Vec::new()
        } else {
            let mut results = vec![self.atom()?];
            while self.eat(",") {
                results.push(self.atom()?);
            }
            results
        };
        Ok(Block {
            params,
            stmts,
            results,
        })
    }

    /// `(\params -> body)`
    fn block(&mut self) -> Res<BlockId> {
        self.expect("(")?;
        let block_id = self.program.new_block();
        self.expect("\\")?;
        let params = self.binder_list("->")?;
        self.expect("->")?;
        let block = self.body(params)?;
        self.expect(")")?;
        self.program.blocks[block_id] = block;
        Ok(block_id)
    }

    fn stmt(&mut self) -> Res<Stmt> {
        let binders = self.binder_list("=")?;
        self.expect("=")?;
        let expr = self.expr()?;
        Ok(Stmt { binders, expr })
    }

    fn expr(&mut self) -> Res<Expr> {
        self.skip_ws();
        let start = self.pos;
        if self.rest().starts_with('%') {
            return Ok(Expr::Atom(self.atom()?));
        }
        // A literal is a word followed by `:` (or `true`/`false`); anything else is a keyword.
        let word = self.take_while(is_literal_char).to_string();
        if self.rest().starts_with(':') || word == "true" || word == "false" {
            self.pos = start;
            return Ok(Expr::Atom(self.atom()?));
        }
        let expr = match word.as_str() {
            "build1" => Expr::Build1(Build1 {
                size: self.usize()?,
                body: self.block()?,
            }),
            "index" => Expr::Index(Index {
                array: self.atom()?,
                index: self.atom_list("[", "]")?,
            }),
            "sumOuter" => Expr::SumOuter(SumOuter(self.atom()?)),
            "gather" => Expr::Gather(Gather {
                shape: self.usize_list()?,
                array: self.atom()?,
                body: self.block()?,
            }),
            "scatter" => Expr::Scatter(Scatter {
                shape: self.usize_list()?,
                array: self.atom()?,
                body: self.block()?,
            }),
            "table" => Expr::Table(Table(self.atom_list("[", "]")?)),
            "replicate" => Expr::Replicate(Replicate {
                count: self.usize()?,
                array: self.atom()?,
            }),
            "tr" => Expr::Transpose(Transpose {
                perm: self.usize_list()?,
                array: self.atom()?,
            }),
            "reshape" => Expr::Reshape(Reshape {
                shape: self.usize_list()?,
                array: self.atom()?,
            }),
            "cond" => Expr::Cond(Cond {
                cond: self.atom()?,
                then_block: self.block()?,
                else_block: self.block()?,
            }),
            "iota" => Expr::Iota(Iota(self.usize()?)),
            "fold" => Expr::Fold(Fold {
                size: self.usize()?,
                init: self.atom_list("(", ")")?,
                body: self.block()?,
            }),
            "scan" => Expr::Scan(Scan {
                size: self.usize()?,
                init: self.atom_list("(", ")")?,
                body: self.block()?,
            }),
            "while" => Expr::While(While {
                init: self.atom_list("(", ")")?,
                body: self.block()?,
            }),
            "while_reverse" => Expr::WhileReverse(WhileReverse {
                init: self.atom_list("(", ")")?,
                seeds: self.atom_list("(", ")")?,
                body: self.block()?,
                back: self.block()?,
            }),
            "reduce" | "assoc_scan" | "assoc_scan_right" => Expr::Monoid(Monoid {
                kind: MonoidKind::from_name(&word).expect("one of the three monoid keywords"),
                arrays: self.atom_list("(", ")")?,
                init: self.atom_list("(", ")")?,
                op: self.block()?,
            }),
            "custom_vjp" => Expr::CustomVjp(CustomVjp {
                args: self.atom_list("(", ")")?,
                primal: self.block()?,
                fwd: self.block()?,
                bwd: self.block()?,
            }),
            "custom_jvp" => Expr::CustomJvp(CustomJvp {
                args: self.atom_list("(", ")")?,
                primal: self.block()?,
                lin: self.block()?,
            }),
            "custom_linear" | "custom_linear_t" => Expr::CustomLinear(CustomLinear {
                transposed: word == "custom_linear_t",
                residuals: self.atom_list("(", ")")?,
                operands: self.atom_list("(", ")")?,
                bwd: self.block()?,
            }),
            "jvp" | "vjp" => Expr::Derivative(Derivative {
                mode: if word == "jvp" {
                    AdMode::Jvp
                } else {
                    AdMode::Vjp
                },
                primals: self.atom_list("(", ")")?,
                seeds: self.atom_list("(", ")")?,
                func: self.block()?,
            }),
            name => match Prim::from_name(name) {
                Some(prim) => {
                    let operands = (0..prim.arity())
                        .map(|_| self.atom())
                        .collect::<Res<Vec<_>>>()?;
                    Expr::Prim(PrimApp(prim, operands))
                }
                None => return self.error_at(start, format!("unknown expression `{name}`")),
            },
        };
        Ok(expr)
    }

    /// Checks the uses against the binders.
    fn finish(self) -> Res<Program> {
        for (var, hint, pos) in &self.uses {
            if !self.declared[var.0 as usize] {
                return self.error_at(*pos, format!("{var} is never bound"));
            }
            let bound_hint = &self.program.vars[*var].hint;
            if let Some(hint) = hint {
                if hint != bound_hint {
                    return self.error_at(
                        *pos,
                        format!("{var} is bound as `{var}_{bound_hint}`, not `{var}_{hint}`"),
                    );
                }
            }
        }
        Ok(self.program)
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    use super::*;
    use crate::ops::testgen::{idx, Builder};
    use crate::ops::verify::verify;

    /// Every expression form, multi-binder statements, hints and literals of every type.
    const ALL_FORMS: &str = r"program(%0_xs: [4]f32, %1_n: []i64, %2_m: [2, 3]f64) {
  %3_ys: [4]f32 = build1 4 (\%4_i: []i64 ->
    %5: []f32 = index %0_xs [%4_i]
    %6: []f32 = mul %5 1.5:f32
    in %6)
  %7: [3]f64 = sumOuter %2_m
  %8: [3, 2]f64 = gather [3, 2] %2_m (\%9: []i64, %10: []i64 ->
    in %10, %9)
  %11: [2]f64 = scatter [2] %7 (\%12: []i64 ->
    %13: []i64 = idiv %12 2:i64
    in %13)
  %14: [2, 2, 3]f64 = table [%2_m, %2_m]
  %15: [5, 4]f32 = replicate 5 %3_ys
  %16: [3, 2]f64 = tr [1, 0] %2_m
  %17: [6]f64 = reshape [6] %2_m
  %18: []bool = lt %1_n 3:i64
  %19: []f64, %20: []i64 = cond %18 (\ ->
    %21: []f64 = index %2_m [0:i64, %1_n]
    in %21, %1_n) (\ ->
    in -0.0:f64, -9223372036854775808:i64)
  %22: [4]i64 = iota 4
  %23: []f64 = fold 3 (0.0:f64) (\%24: []i64, %25: []f64 ->
    %26: []f64 = index %7 [%24]
    %27: []f64 = add %25 %26
    in %27)
  %28_acc: []f32, %29: [2]f32 = scan 2 (NaN:f32) (\%30: []i64, %31: []f32 ->
    %32: []f32 = index %3_ys [%30]
    %33: []f32 = max %31 %32
    in %33, %32)
  %34: []u64 = %35
  %35: []bool = select true false true
  %36: []u32 = cast_u32 18446744073709551615:u64
  %37: []f64 = add inf:f64 -inf:f64
  %38: []i32 = neg -2147483648:i32
  %39: []f32 = sub 1e-7:f32 3.4028235e38:f32
  () = build1 0 (\%40: []i64 ->
    in ())
  %41_n: []i64, %42: []f64 = while (0:i64, 1.0:f64) (\%43: []i64, %44: []f64 ->
    %45: []i64 = add %43 1:i64
    %46: []f64 = mul %44 0.5:f64
    %47: []bool = lt %45 %1_n
    in %47, %45, %46)
  %48: []f64 = while_reverse (0:i64) (1.0:f64) (\%49: []i64 ->
    %50: []i64 = add %49 1:i64
    %51: []bool = lt %50 3:i64
    in %51, %50) (\%52: []i64, %53: []f64 ->
    %54: []f64 = mul %53 2.0:f64
    in %54)
  in %3_ys, %28_acc
}";

    fn round_trip(text: &str) -> Program {
        let program = parse_program(text).unwrap_or_else(|error| panic!("{error}\n{text}"));
        assert_eq!(program.to_string(), text);
        let again = parse_program(&program.to_string()).expect("printed text parses");
        assert_eq!(again.to_string(), text);
        program
    }

    fn check_error(text: &str, expect: Expect) {
        match parse_program(text) {
            Ok(program) => panic!("parsed:\n{program}"),
            Err(error) => expect.assert_eq(&error),
        }
    }

    #[test]
    fn all_forms_round_trip() {
        let program = round_trip(ALL_FORMS);
        assert_eq!(program.vars.len(), 55);
        assert_eq!(program.inputs, vec![VarId(0), VarId(1), VarId(2)]);
        assert_eq!(program.vars[VarId(28)].hint, "acc");
        // %34 uses %35 before its definition: the parser accepts it, the verifier does not.
        let errors = verify(&program).unwrap_err();
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        expect![[r#"
            [
                "b0: %34: %35 is used before its definition",
                "b0: %34: %34 is declared []u64 but the expression has type []bool",
            ]
        "#]]
        .assert_debug_eq(&messages);
    }

    #[test]
    fn literals_round_trip_exactly() {
        let program = parse_program(ALL_FORMS).unwrap();
        let main = &program.blocks[program.main];
        let literal = |var: u32, position: usize| {
            let stmt = main
                .stmts
                .iter()
                .find(|stmt| stmt.binders.first() == Some(&VarId(var)))
                .unwrap();
            match &stmt.expr {
                Expr::Prim(PrimApp(_, atoms)) => atoms[position],
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(literal(36, 0), Atom::Lit(Scalar::U64(u64::MAX)));
        assert_eq!(literal(37, 1), Atom::Lit(Scalar::F64(f64::NEG_INFINITY)));
        assert_eq!(literal(38, 0), Atom::Lit(Scalar::I32(i32::MIN)));
        assert_eq!(literal(39, 0), Atom::Lit(Scalar::F32(1e-7)));
        assert_eq!(literal(39, 1), Atom::Lit(Scalar::F32(f32::MAX)));
        assert_eq!(literal(35, 0), Atom::Lit(Scalar::Bool(true)));
    }

    #[test]
    fn printer_snapshot() {
        let mut b = Builder::new();
        let x = b.input(ArrTy::new(vec![4], Elem::F32), "x");
        let body = b.index_block(1, |b, i| {
            let xi = b.let1(Expr::Index(Index {
                array: x,
                index: vec![i[0]],
            }));
            vec![b.prim(Prim::Mul, &[xi, xi])]
        });
        let squares = b.let1(Expr::Build1(Build1 { size: 4, body }));
        b.name(squares, "squares");
        let total = b.let1(Expr::SumOuter(SumOuter(squares)));
        let program = b.finish(vec![squares, total]);
        expect![[r#"
            program(%0_x: [4]f32) {
              %4_squares: [4]f32 = build1 4 (\%1: []i64 ->
                %2: []f32 = index %0_x [%1]
                %3: []f32 = mul %2 %2
                in %3)
              %5: []f32 = sumOuter %4_squares
              in %4_squares, %5
            }"#]]
        .assert_eq(&program.to_string());
        assert_eq!(parse_program(&program.to_string()).unwrap(), program);
    }

    #[test]
    fn hints_are_sanitised_and_read_back() {
        let mut b = Builder::new();
        let x = b.input(ArrTy::scalar(Elem::I64), "x'");
        let y = b.prim(Prim::Add, &[x, idx(1)]);
        b.name(y, "x ct");
        let program = b.finish(vec![y]);
        let text = program.to_string();
        assert!(text.contains("%1_x_ct: []i64 = add %0_x_ 1:i64"), "{text}");
        round_trip(&text);
    }

    #[test]
    fn comments_and_free_whitespace_are_accepted() {
        let text = "; a comment\nprogram ( %0 : [ 2 ] f64 ) { ; header\n %1: [2]f64 = neg %0 ; note\n in %1 }\n";
        let program = parse_program(text).unwrap();
        assert_eq!(
            program.to_string(),
            "program(%0: [2]f64) {\n  %1: [2]f64 = neg %0\n  in %1\n}"
        );
    }

    #[test]
    fn empty_program_and_uses_without_hints() {
        round_trip("program() {\n  in ()\n}");
        let program = parse_program("program(%0_x: []f64) {\n  in %0\n}").unwrap();
        assert_eq!(program.to_string(), "program(%0_x: []f64) {\n  in %0_x\n}");
    }

    #[test]
    fn unbound_numbers_become_placeholders() {
        let program = round_trip("program(%3: []f64) {\n  in %3\n}");
        assert_eq!(program.vars.len(), 4);
        assert_eq!(verify(&program), Ok(()));
    }

    #[test]
    fn parse_errors_say_where() {
        check_error("prog() {\n in () }", expect!["1:1: expected `program`"]);
        check_error(
            "program(%0: []f64) {\n  %1: []f64 = frob %0\n  in %1\n}",
            expect!["2:15: unknown expression `frob`"],
        );
        check_error("program() {\n  in %4\n}", expect!["2:6: %4 is never bound"]);
        check_error(
            "program(%0: []f64) {\n  %1: []f64 = add %0 1.0:f16\n  in %1\n}",
            expect!["2:26: unknown element type `f16`"],
        );
        check_error(
            "program(%0: []f64) {\n  %1: []i64 = add 1.5:i64 %0\n  in %1\n}",
            expect!["2:19: `1.5` is not a valid i64 literal"],
        );
        check_error(
            "program(%0: []f64) {\n  %1: []f64 = neg %0\n}",
            expect!["3:1: expected a statement or `in`, found `}`"],
        );
        check_error(
            "program() {\n  in ()\n} extra",
            expect!["3:3: unexpected `extra` after the program"],
        );
        check_error(
            "program(%0: []f64) {\n  %0: []i64 = iota 0\n  in ()\n}",
            expect!["2:3: %0 is bound again with another type"],
        );
        check_error(
            "program(%0_x: []f64) {\n  in %0_y\n}",
            expect!["2:6: %0 is bound as `%0_x`, not `%0_y`"],
        );
        check_error(
            "program(%0: []f64) {\n  %1: []f64 = neg\n  in %1\n}",
            expect!["3:3: expected an atom, found `in`"],
        );
        check_error(
            "program(%99999999999: []f64) {\n  in ()\n}",
            expect!["1:10: expected a variable number"],
        );
        check_error(
            "program(",
            expect!["1:9: expected `%`, found the end of the text"],
        );
    }
}
