//! Parsing one code block: pragma lines, then the layout pass (`layout.rs`), then the pest
//! grammar (`dx.pest`), then building the surface AST (`ast.rs`) with absolute spans.
//!
//! Assumes: the block's first line starts at column 0 (pragmas first). Guarantees: every node
//! carries its source span (byte offsets into the whole source); errors are `ParseError`s with
//! a short message and `incomplete` set when the input ended too early. Never panics, whatever
//! the input: resource limits are enforced by the layout pass (Note [Parser limits]) before pest
//! runs.
//!
//! Operator precedence, loosest first (pest's PrattParser): Dex's pipe `|` (left; `x | f a` is
//! `f x a`), `$` (right), `||`, `&&`, comparisons `== != < > <= >= ~~` (non-associative:
//! `a < b < c` is an error), `e @ T` (postfix), `-|` (Dex's floored `Nat` subtraction), `+ -`,
//! `* / .* ** **. .**` and backtick infix, unary `-`; application, indexing and field access
//! (`p.x`) bind tighter than all of them. A user operator (`./`, `<>`) binds as the built-in
//! operator it starts with (see `op_user_*` in dx.pest). A lambda, `for`, `if` or `case` body
//! extends as far right as possible.

use std::sync::LazyLock;

use pest::error::{ErrorVariant, InputLocation};
use pest::iterators::Pair;
use pest::pratt_parser::{Assoc, Op, PrattParser};
use pest::Parser;

use super::ast::*;
use super::escape;
use super::hints::with_hint;
use super::layout::{layout, Laid};
use super::lexer::{lex, TokKind};
use super::span::floor_char_boundary;
use super::{ParseError, ParseErrorKind, Span};

#[derive(pest_derive::Parser)]
#[grammar = "syntax/dx.pest"]
struct DxParser;

static PRATT: LazyLock<PrattParser<Rule>> = LazyLock::new(|| {
    PrattParser::new()
        .op(Op::postfix(Rule::annot_suffix))
        .op(Op::infix(Rule::op_assign, Assoc::Right) | Op::infix(Rule::op_accum, Assoc::Right))
        .op(Op::infix(Rule::op_pipe, Assoc::Left))
        .op(Op::infix(Rule::op_dollar, Assoc::Right))
        .op(Op::infix(Rule::op_or, Assoc::Left) | Op::infix(Rule::op_user_or, Assoc::Left))
        .op(Op::infix(Rule::op_and, Assoc::Left) | Op::infix(Rule::op_user_and, Assoc::Left))
        .op(Op::infix(Rule::op_eq, Assoc::Left)
            | Op::infix(Rule::op_user_cmp, Assoc::Left)
            | Op::infix(Rule::op_ne, Assoc::Left)
            | Op::infix(Rule::op_lt, Assoc::Left)
            | Op::infix(Rule::op_gt, Assoc::Left)
            | Op::infix(Rule::op_le, Assoc::Left)
            | Op::infix(Rule::op_ge, Assoc::Left)
            | Op::infix(Rule::op_approx, Assoc::Left))
        .op(Op::postfix(Rule::at_suffix))
        .op(Op::infix(Rule::op_nat_sub, Assoc::Left))
        .op(Op::infix(Rule::op_add, Assoc::Left)
            | Op::infix(Rule::op_sub, Assoc::Left)
            | Op::infix(Rule::op_user_add, Assoc::Left))
        .op(Op::infix(Rule::op_mul, Assoc::Left)
            | Op::infix(Rule::op_user_mul, Assoc::Left)
            | Op::infix(Rule::op_div, Assoc::Left)
            | Op::infix(Rule::op_scale, Assoc::Left)
            | Op::infix(Rule::op_matmul, Assoc::Left)
            | Op::infix(Rule::op_matvec, Assoc::Left)
            | Op::infix(Rule::op_vecmat, Assoc::Left)
            | Op::infix(Rule::op_backtick, Assoc::Left))
        .op(Op::prefix(Rule::op_neg) | Op::prefix(Rule::op_pos))
});

type PResult<T> = Result<T, ParseError>;

/// The value of a number as the grammar's `int` and `float` rules accept it (`7`, `1.`,
/// `1.e3`, `2.5E-3`).
fn number(text: &str, span: Span) -> PResult<Lit> {
    if text.bytes().all(|byte| byte.is_ascii_digit()) {
        return match text.parse::<u64>() {
            Ok(value) => Ok(Lit::Int(value)),
            Err(_) => Err(error("integer literal too large", span)),
        };
    }
    // Rust's float syntax takes `1.` and `1.e3` as they are.
    match text.parse::<f64>() {
        Ok(value) => Ok(Lit::Float(value)),
        Err(_) => Err(error("malformed float literal", span)),
    }
}

/// The byte of a character literal `'a'`, `'\n'` (a `Char` is a byte, as Dex's `Word8`).
fn char_literal(text: &str, span: Span) -> PResult<Lit> {
    let inner = &text[1..text.len() - 1];
    let unescaped = escape::unescape(inner).unwrap_or_default();
    let mut chars = unescaped.chars();
    match (chars.next(), chars.next()) {
        (Some(ch), None) if inner.starts_with('\\') || ch.is_ascii() => {
            match u8::try_from(u32::from(ch)) {
                Ok(byte) => Ok(Lit::Char(byte)),
                Err(_) => Err(error("a character's code is below 256", span)),
            }
        }
        _ => Err(error(
            "a character literal is one ASCII character or an escape (`'\\n'`, `'\\NUL'`, \
             `'\\210'`): a `Char` is a byte",
            span,
        )),
    }
}

fn error(message: impl Into<String>, span: Span) -> ParseError {
    ParseError {
        message: message.into(),
        span,
        kind: ParseErrorKind::Syntax,
    }
}

/// Parses one code block (pragma lines, then one declaration) lying at `span` of `src`.
/// `span.start` is taken as the start of a line (columns count from it); spans in the result
/// are absolute offsets into `src`. `incomplete` errors are those at the end of the block.
pub fn parse_code(src: &str, span: Span) -> Result<CodeBlock, ParseError> {
    let (start, end) = clamp_span(src, span);
    let mut pragmas = Vec::new();
    let mut decl_start = start;
    let mut pragma_end = start;
    while decl_start < end && matches!(src.as_bytes()[decl_start], b'%' | b'@') {
        let line_end = src[decl_start..end]
            .find('\n')
            .map_or(end, |offset| decl_start + offset);
        pragmas.push(parse_pragma(src, decl_start, line_end)?);
        pragma_end = line_end;
        decl_start = (line_end + 1).min(end);
    }
    let laid = layout(src, decl_start, end)?;
    let Some(first) = laid.tokens.first() else {
        let (message, at) = if pragmas.is_empty() {
            ("expected a declaration", start)
        } else {
            ("expected a block after the pragma", pragma_end)
        };
        return Err(ParseError {
            message: message.to_string(),
            span: Span::new(at, at),
            kind: ParseErrorKind::Incomplete,
        });
    };
    if first.col > 0 {
        return Err(error("unexpected indentation", first.span()));
    }
    let decl = on_big_stack(&laid, || {
        let pairs = DxParser::parse(Rule::decl_top, &laid.text)
            .map_err(|err| with_hint(src, pest_error(&laid, err)))?;
        let top = only_child(pairs)?;
        let decl_pair = top.into_inner().next().ok_or_else(|| internal(&laid))?;
        Builder { laid: &laid }.decl(decl_pair)
    })?;
    Ok(CodeBlock {
        pragmas,
        decl,
        span: Span::new(start, laid.src_end().max(pragma_end)),
    })
}

/// Parses the whole of `src` as one expression. It may span several lines, laid out as in a
/// code block (continuation lines indented more than the first line, let-blocks after `=`, a
/// lambda's `.`, `then` or `else` at the end of a line).
pub fn parse_expr(src: &str) -> Result<Expr, ParseError> {
    let laid = layout(src, 0, src.len())?;
    if laid.tokens.is_empty() {
        return Err(ParseError {
            message: "expected an expression".to_string(),
            span: Span::new(src.len(), src.len()),
            kind: ParseErrorKind::Incomplete,
        });
    }
    on_big_stack(&laid, || {
        let pairs = DxParser::parse(Rule::expr_top, &laid.text)
            .map_err(|err| with_hint(src, pest_error(&laid, err)))?;
        let top = only_child(pairs)?;
        let body = top.into_inner().next().ok_or_else(|| internal(&laid))?;
        Builder { laid: &laid }.body(body)
    })
}

/// Nesting up to which a block is parsed on the caller's stack (about 20 KB per level in a
/// debug build, much less in release).
const INLINE_NESTING: u32 = 12;
/// Path length up to which a block is parsed on the caller's stack.
const INLINE_PATH_TOKENS: u32 = 400;
/// The stack of the helper thread for deep blocks: enough for `MAX_NESTING` levels in a debug
/// build, with a wide margin (it is reserved, not committed, memory).
const BIG_STACK_BYTES: usize = 256 << 20;

/// Runs `parse` (pest and the AST builder) on the caller's stack when the block is shallow, and
/// on a helper thread with a large stack otherwise. See Note [Parser limits] in layout.rs.
fn on_big_stack<T: Send>(laid: &Laid, parse: impl FnOnce() -> PResult<T> + Send) -> PResult<T> {
    if laid.max_nesting <= INLINE_NESTING && laid.max_path_tokens <= INLINE_PATH_TOKENS {
        return parse();
    }
    let parse = std::sync::Mutex::new(Some(parse));
    let take = || parse.lock().ok().and_then(|mut slot| slot.take());
    let joined = std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("dx-parse".to_string())
            .stack_size(BIG_STACK_BYTES)
            .spawn_scoped(scope, || take().map(|parse| parse()));
        spawned.ok().map(|handle| handle.join())
    });
    let failed = |what: &str| {
        let at = Span::new(laid.base, laid.base);
        Err(ParseError::new(ParseErrorKind::Internal, what, at))
    };
    match joined {
        Some(Ok(Some(res))) => res,
        Some(_) => failed("the parser thread failed"),
        // The thread could not be spawned: parse here (pest's stack guard still applies).
        None => match take() {
            Some(parse) => parse(),
            None => failed("lost the parse job"),
        },
    }
}

fn only_child<'i>(mut pairs: pest::iterators::Pairs<'i, Rule>) -> PResult<Pair<'i, Rule>> {
    pairs.next().ok_or_else(|| {
        ParseError::new(
            ParseErrorKind::Internal,
            "the parser gave an empty parse",
            Span::default(),
        )
    })
}

fn internal(laid: &Laid) -> ParseError {
    ParseError::new(
        ParseErrorKind::Internal,
        "the parser met an unexpected parse tree",
        Span::new(laid.base, laid.base),
    )
}

/// Clamps a span to `src` and to `char` boundaries.
fn clamp_span(src: &str, span: Span) -> (usize, usize) {
    let end = floor_char_boundary(src, span.end as usize);
    let start = floor_char_boundary(src, (span.start as usize).min(end));
    (start, end)
}

/// Parses a pragma line `src[start..end]` (which starts with `%`, or `@` for Dex's
/// `@noinline`).
fn parse_pragma(src: &str, start: usize, end: usize) -> PResult<Pragma> {
    if src.as_bytes()[start] == b'@' {
        return match src[start..end].trim_end() {
            "@noinline" => Ok(Pragma::NoInline),
            other => Err(error(
                format!("unknown decorator '{other}' (dx knows `@noinline`)"),
                Span::new(start, end),
            )),
        };
    }
    let lexed = lex(src, start, end)?;
    let tokens = lexed.tokens;
    let name = match tokens.get(1) {
        Some(token) if token.kind == TokKind::Ident && token.start == start + 1 => *token,
        _ => {
            return Err(error(
                "expected a pragma name after '%'",
                Span::new(start, start + 1),
            ))
        }
    };
    let rest = &tokens[2..];
    let no_arguments = |pragma: Pragma| match rest.first() {
        None => Ok(pragma),
        Some(token) => Err(error(
            format!("unexpected '{}'", token.text(src)),
            token.span(),
        )),
    };
    match name.text(src) {
        "time" => no_arguments(Pragma::Time),
        "strict" => no_arguments(Pragma::Strict),
        "passes" => {
            let mut stages = Vec::new();
            for token in rest {
                if token.kind != TokKind::Ident {
                    return Err(error("expected a stage name", token.span()));
                }
                stages.push(Ident {
                    name: token.text(src).to_string(),
                    span: token.span(),
                });
            }
            if stages.is_empty() {
                return Err(error("expected stage names after %passes", name.span()));
            }
            Ok(Pragma::Passes(stages))
        }
        "bench" => match rest {
            [token] if token.kind == TokKind::Str => {
                let text = token.text(src);
                Ok(Pragma::Bench(string_text(text, token.span())?))
            }
            [] => Err(error(
                "expected a benchmark name: %bench \"name\"",
                name.span(),
            )),
            [_, token, ..] if rest[0].kind == TokKind::Str => Err(error(
                format!("unexpected '{}'", token.text(src)),
                token.span(),
            )),
            [token, ..] => Err(error("expected a quoted benchmark name", token.span())),
        },
        other => Err(error(
            format!("unknown pragma '%{other}'"),
            Span::new(start, name.end),
        )),
    }
}

/// The text a string literal (with its quotes) denotes. Its escapes are Haskell's
/// (`syntax::escape`); one naming a byte above 127 is refused, since a string's other
/// characters are its UTF-8 bytes.
fn string_text(quoted: &str, span: Span) -> PResult<String> {
    let inner = &quoted[1..quoted.len() - 1];
    let text = escape::unescape(inner).ok_or_else(|| {
        error(
            "unknown escape in a string (escapes are Haskell's: `\\n`, `\\\"`, `\\NUL`, `\\65`)",
            span,
        )
    })?;
    let high = |text: &str| {
        text.chars()
            .filter(|ch| ('\u{80}'..='\u{ff}').contains(ch))
            .count()
    };
    if high(&text) > high(inner) {
        return Err(error(
            "a string's escapes name bytes below 128 (`'\\210'` is a character)",
            span,
        ));
    }
    Ok(text)
}

// ---------------------------------------------------------------------------------------------
// Errors from pest.

/// What the parser was looking for at the error, as a person would say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Expected {
    /// An expression is required here.
    Expression,
    /// Something that may optionally continue what came before (an operator, an argument,
    /// another parameter, the end of the input).
    Continuation,
    /// A specific thing: `'else'`, `a type`, ...
    Specific(&'static str),
}

fn classify(rule: Rule) -> Expected {
    match rule {
        Rule::expr
        | Rule::app
        | Rule::postfix_expr
        | Rule::fin_field
        | Rule::lambda
        | Rule::for_expr
        | Rule::if_expr
        | Rule::case_expr
        | Rule::kw_case
        | Rule::char
        | Rule::kw_for
        | Rule::kw_if
        | Rule::op_neg
        | Rule::op_pos
        | Rule::float
        | Rule::int
        | Rule::bool
        | Rule::string
        | Rule::var
        | Rule::paren
        | Rule::unit
        | Rule::section
        | Rule::table
        | Rule::block
        | Rule::call_arg => Expected::Expression,
        Rule::ty | Rule::ty_table | Rule::ty_fin | Rule::ty_paren | Rule::hole | Rule::ty_name => {
            Expected::Specific("a type")
        }
        Rule::ty_call | Rule::ty_applied | Rule::ty_size | Rule::kw_type => {
            Expected::Specific("a type")
        }
        Rule::pat_var
        | Rule::pat_tuple
        | Rule::pat_table
        | Rule::wildcard
        | Rule::pat_con
        | Rule::pat_con_call
        | Rule::pat_lit => Expected::Specific("a pattern"),
        Rule::kw_of => Expected::Specific("'of'"),
        Rule::con_decl | Rule::field_decl => Expected::Specific("a constructor or field"),
        Rule::method_sig | Rule::method_binding => Expected::Specific("a method"),
        Rule::ident | Rule::given_binder | Rule::arg_name | Rule::type_param | Rule::op_name => {
            Expected::Specific("a name")
        }
        Rule::def_params => Expected::Specific("'('"),
        Rule::eq => Expected::Specific("'='"),
        Rule::dot => Expected::Specific("'.'"),
        Rule::kw_then => Expected::Specific("'then'"),
        Rule::kw_else => Expected::Specific("'else'"),
        _ => Expected::Continuation,
    }
}

/// Turns pest's error into a short message at an absolute position.
fn pest_error(laid: &Laid, err: pest::error::Error<Rule>) -> ParseError {
    let raw_pos = match err.location {
        InputLocation::Pos(pos) => pos,
        InputLocation::Span((start, _)) => start,
    };
    // Pest may report a position before white space; look at what follows it.
    let text_pos = raw_pos
        + laid.text[raw_pos.min(laid.text.len())..]
            .bytes()
            .take_while(|byte| matches!(byte, b' ' | b'\t' | b'\r' | b'\n'))
            .count();
    let at_end = text_pos >= laid.real_end;
    let positives = match &err.variant {
        ErrorVariant::ParsingError { positives, .. } => positives.clone(),
        ErrorVariant::CustomError { .. } => {
            // Pest's stack or call limit; the layout pass should have caught this first.
            let at = laid.to_src(text_pos);
            return error("expression nested too deeply", Span::new(at, at));
        }
    };
    let mut expected: Vec<Expected> = positives.iter().map(|&rule| classify(rule)).collect();
    expected.sort();
    expected.dedup();
    let (found, span) = found_at(laid, text_pos);
    let found_suffix = match &found {
        Found::Token(text) => format!(", found '{text}'"),
        Found::LineEnd { .. } => " at the end of the line".to_string(),
        Found::End | Found::BlockEnd => String::new(),
    };
    // A missing expression or token is reported where it is missing: at the end of the line.
    let missing_span = match found {
        Found::LineEnd { prev_end } => Span::new(prev_end, prev_end),
        _ => span,
    };
    let specific: Vec<&str> = expected
        .iter()
        .filter_map(|what| match what {
            Expected::Specific(text) => Some(*text),
            _ => None,
        })
        .collect();
    let continuation = expected.contains(&Expected::Continuation);
    let (message, span) = if expected.contains(&Expected::Expression) && !continuation {
        (
            format!("expected an expression{found_suffix}"),
            missing_span,
        )
    } else if !continuation && !specific.is_empty() {
        (
            format!("expected {}{found_suffix}", specific.join(" or ")),
            missing_span,
        )
    } else {
        let message = match (&found, specific.as_slice()) {
            (Found::End, [what]) => format!("expected {what}"),
            (Found::End, _) => "unexpected end of input".to_string(),
            (Found::LineEnd { .. }, _) => {
                "unexpected new line (indent it to continue the line above)".to_string()
            }
            (Found::BlockEnd, _) => "unexpected end of block".to_string(),
            (Found::Token(text), _) => format!("unexpected '{text}'"),
        };
        (message, span)
    };
    ParseError {
        message,
        span,
        kind: if at_end {
            ParseErrorKind::Incomplete
        } else {
            ParseErrorKind::Syntax
        },
    }
}

enum Found {
    /// The end of the input.
    End,
    /// A new item of a block starts (the `;` marker); `prev_end` is where the line before ends.
    LineEnd {
        prev_end: usize,
    },
    /// A block ends (the `}` or `{` marker).
    BlockEnd,
    Token(String),
}

/// What is at `text_pos` of the laid-out text, and its source span.
fn found_at(laid: &Laid, text_pos: usize) -> (Found, Span) {
    if text_pos >= laid.real_end {
        let end = laid.src_end();
        return (Found::End, Span::new(end, end));
    }
    let at = laid.to_src(text_pos);
    let index = laid.tokens.partition_point(|token| token.end <= at);
    if laid.markers.binary_search(&text_pos).is_ok() {
        let is_separator = laid.text.as_bytes().get(text_pos) == Some(&b';');
        return match laid.tokens.get(index) {
            Some(next) if is_separator => {
                let prev_end = index
                    .checked_sub(1)
                    .and_then(|prev| laid.tokens.get(prev))
                    .map_or(at, |prev| prev.end);
                (Found::LineEnd { prev_end }, next.span())
            }
            _ => (Found::BlockEnd, Span::new(at, at)),
        };
    }
    match laid.tokens.get(index) {
        Some(token) => {
            let start = token.start.max(at);
            let text_start = text_pos + (start - at);
            let text_end = text_start + (token.end - start);
            let text = laid.text.get(text_start..text_end).unwrap_or("?");
            (Found::Token(shorten(text)), Span::new(start, token.end))
        }
        None => (Found::End, Span::new(at, at)),
    }
}

fn shorten(text: &str) -> String {
    match text.char_indices().nth(20) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Building the AST.

struct Builder<'a> {
    laid: &'a Laid,
}

/// An expression with the span of its source text including enclosing parentheses, so that a
/// node built from it (`(a + b) * c`) covers the parentheses too.
struct Node {
    expr: Expr,
    outer: Span,
    /// Written in parentheses: `(a < b) < c` is not a chained comparison.
    parenthesized: bool,
}

impl Node {
    fn plain(expr: Expr) -> Node {
        Node {
            outer: expr.span,
            expr,
            parenthesized: false,
        }
    }
}

fn boxed(node: Node) -> Box<Expr> {
    Box::new(node.expr)
}

fn is_comparison(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge | BinOp::Approx
    )
}

impl<'a> Builder<'a> {
    /// The source span of a pair, without the trailing white space pest includes when an
    /// optional part at the end of a rule did not match.
    fn span(&self, pair: &Pair<Rule>) -> Span {
        let pest_span = pair.as_span();
        let trimmed = pest_span.as_str().trim_end_matches([' ', '\t', '\r', '\n']);
        let start = pest_span.start();
        self.laid.span(start, start + trimmed.len())
    }

    fn internal(&self, pair: &Pair<Rule>) -> ParseError {
        ParseError::new(
            ParseErrorKind::Internal,
            format!("the parser met an unexpected {:?}", pair.as_rule()),
            self.span(pair),
        )
    }

    fn next<'i>(
        &self,
        pairs: &mut pest::iterators::Pairs<'i, Rule>,
        parent: &Pair<Rule>,
    ) -> PResult<Pair<'i, Rule>> {
        pairs.next().ok_or_else(|| self.internal(parent))
    }

    fn ident(&self, pair: Pair<Rule>) -> Ident {
        Ident {
            name: pair.as_str().to_string(),
            span: self.span(&pair),
        }
    }

    fn decl(&self, pair: Pair<Rule>) -> PResult<Decl> {
        match pair.as_rule() {
            Rule::def_decl => Ok(Decl::Def(self.fun_def(pair)?)),
            Rule::import_decl => {
                let ident = pair
                    .clone()
                    .into_inner()
                    .find(|child| child.as_rule() == Rule::ident);
                let ident = ident.ok_or_else(|| self.internal(&pair))?;
                Ok(Decl::Import(self.ident(ident)))
            }
            Rule::custom_lin_decl => {
                let mut idents = pair
                    .clone()
                    .into_inner()
                    .filter(|child| child.as_rule() == Rule::ident)
                    .map(|ident| self.ident(ident));
                match (idents.next(), idents.next()) {
                    (Some(func), Some(lin)) => Ok(Decl::CustomLinearization { func, lin }),
                    _ => Err(self.internal(&pair)),
                }
            }
            Rule::command_decl => {
                let mut inner = pair.clone().into_inner();
                let command_pair = self.next(&mut inner, &pair)?;
                let command = match &command_pair.as_str()[1..] {
                    "p" => Command::Print,
                    "t" => Command::Type,
                    "plot" => Command::Plot,
                    "plotgrad" => Command::PlotGrad,
                    "table" => Command::Table,
                    "html" => Command::Html,
                    "stages" => Command::Stages,
                    "help" => Command::Help,
                    "export" => Command::Export,
                    other => {
                        let message = format!("unknown command ':{}'", shorten(other));
                        return Err(error(message, self.span(&command_pair)));
                    }
                };
                let body = self.next(&mut inner, &pair)?;
                Ok(Decl::Command {
                    command,
                    expr: self.body(body)?,
                    bare: false,
                })
            }
            Rule::let_binding => Ok(Decl::Let(self.let_binding(pair)?)),
            Rule::data_decl => Ok(Decl::Data(self.data_decl(pair)?)),
            Rule::interface_decl => Ok(Decl::Interface(self.interface_decl(pair)?)),
            Rule::instance_decl => Ok(Decl::Instance(self.instance_decl(pair)?)),
            Rule::type_def | Rule::annotated_alias | Rule::type_alias => {
                Ok(Decl::TypeAlias(self.type_alias(pair)?))
            }
            Rule::expr => Ok(Decl::Command {
                command: Command::Print,
                expr: self.expr(pair)?.expr,
                bare: true,
            }),
            _ => Err(self.internal(&pair)),
        }
    }

    fn fun_def(&self, pair: Pair<Rule>) -> PResult<FunDef> {
        let span = self.span(&pair);
        let mut name = None;
        let mut params = Vec::new();
        let mut ret = None;
        let mut effects = None;
        let mut given = Vec::new();
        let mut constraints = Vec::new();
        let mut class_params = Vec::new();
        let mut body = None;
        for child in pair.clone().into_inner() {
            match child.as_rule() {
                Rule::kw_def | Rule::eq => {}
                Rule::ident | Rule::op_name => name = Some(self.def_name(child)?),
                Rule::def_params => self.def_params(child, &mut params, &mut class_params)?,
                Rule::ret_ty => {
                    for part in child.clone().into_inner() {
                        match part.as_rule() {
                            Rule::eff_row => effects = Some(self.eff_row(part)),
                            _ => ret = Some(self.ty(part)?),
                        }
                    }
                }
                Rule::given => (given, constraints) = self.given(child)?,
                _ => body = Some(self.body(child)?),
            }
        }
        // A class parameter's classes go with the `given` binders (the parameter itself is a
        // `n: Type` parameter): `def f(n|Ix, x: n=>Float)` is `def f(n: Type, x: n=>Float)
        // given (n|Ix)`.
        class_params.extend(given);
        match (name, body) {
            (Some(name), Some(body)) => Ok(FunDef {
                name,
                params,
                ret,
                effects,
                given: class_params,
                constraints,
                body,
                span,
            }),
            _ => Err(self.internal(&pair)),
        }
    }

    /// A definition's parameters, and the classes of its class parameters (`n|Ix`) as
    /// `given` binders.
    fn def_params(
        &self,
        pair: Pair<Rule>,
        params: &mut Vec<Param>,
        class_params: &mut Vec<GivenBinder>,
    ) -> PResult<()> {
        for param in pair
            .into_inner()
            .filter(|param| param.as_rule() == Rule::def_param)
        {
            if let Some(binder) = self.class_param(&param)? {
                class_params.push(binder);
            }
            params.push(self.param(param)?);
        }
        Ok(())
    }

    /// A definition's name: a name, or an operator in parentheses (`(./)`), named by its
    /// symbols.
    fn def_name(&self, pair: Pair<Rule>) -> PResult<Ident> {
        match pair.as_rule() {
            Rule::ident => Ok(self.ident(pair)),
            Rule::op_name => {
                let symbol = pair
                    .clone()
                    .into_inner()
                    .next()
                    .ok_or_else(|| self.internal(&pair))?;
                Ok(Ident {
                    name: symbol.as_str().to_string(),
                    span: self.span(&pair),
                })
            }
            _ => Err(self.internal(&pair)),
        }
    }

    /// `given (n|Ix, a|Add|Sub, b:Type)` and its constraints (`(Add a, Subset(a, b))`).
    fn given(&self, pair: Pair<Rule>) -> PResult<(Vec<GivenBinder>, Vec<Constraint>)> {
        let mut given = Vec::new();
        let mut constraints = Vec::new();
        for part in pair.into_inner() {
            match part.as_rule() {
                Rule::given_binder => given.push(self.type_param(part)?),
                Rule::given_constraints => {
                    for item in part.into_inner() {
                        constraints.push(self.constraint(item)?);
                    }
                }
                _ => {}
            }
        }
        Ok((given, constraints))
    }

    /// `Add a`, `Subset(a, b)`, `am:AccumMonoid(h, w)`.
    fn constraint(&self, pair: Pair<Rule>) -> PResult<Constraint> {
        let span = self.span(&pair);
        let mut name = None;
        let mut applied = None;
        for part in pair.clone().into_inner() {
            match part.as_rule() {
                Rule::ident => name = Some(self.ident(part)),
                _ => applied = Some(self.ty(part)?),
            }
        }
        let applied = applied.ok_or_else(|| self.internal(&pair))?;
        let (class, args) = match applied.kind {
            TypeExprKind::App(class, args) => (class, args),
            TypeExprKind::Name(class) => (class, Vec::new()),
            _ => {
                return Err(ParseError {
                    message: "a constraint is an interface applied to types: `(Add a)`".into(),
                    span: applied.span,
                    kind: ParseErrorKind::Syntax,
                })
            }
        };
        Ok(Constraint {
            name,
            class,
            args,
            span,
        })
    }

    /// `a`, `a:Type`, `n|Ix`, `a|Add|Sub`.
    fn type_param(&self, pair: Pair<Rule>) -> PResult<TypeParam> {
        let mut inner = pair.clone().into_inner();
        let name = self.ident(self.next(&mut inner, &pair)?);
        let mut kind = None;
        let mut classes = Vec::new();
        for child in inner {
            match child.as_rule() {
                Rule::ident => classes.push(self.ident(child)),
                _ => kind = Some(self.ty(child)?),
            }
        }
        Ok(TypeParam {
            name,
            kind,
            classes,
        })
    }

    /// `struct Name(params) =` fields, `data Name(params) =` constructors, `enum Name =` names.
    fn data_decl(&self, pair: Pair<Rule>) -> PResult<DataDecl> {
        let span = self.span(&pair);
        let mut inner = pair.clone().into_inner();
        let kind_pair = self.next(&mut inner, &pair)?;
        let kind = match kind_pair.as_str() {
            "struct" => DataKind::Struct,
            "data" => DataKind::Data,
            _ => DataKind::Enum,
        };
        let name = self.ident(self.next(&mut inner, &pair)?);
        let mut params = Vec::new();
        let mut given = Vec::new();
        let mut fields = Vec::new();
        let mut cons = Vec::new();
        let mut methods = Vec::new();
        for child in inner {
            match child.as_rule() {
                Rule::type_params => {
                    for param in child.into_inner() {
                        params.push(self.type_param(param)?);
                    }
                }
                Rule::given => {
                    let at = self.span(&child);
                    let (binders, constraints) = self.given(child)?;
                    if !constraints.is_empty() {
                        return Err(error(
                            "a type's `given` names variables (`given (a|Ord)`), not constraints",
                            at,
                        ));
                    }
                    given = binders;
                }
                Rule::eq => {}
                Rule::con_block | Rule::con_line => {
                    for item in child.into_inner() {
                        let item_span = self.span(&item);
                        match item.as_rule() {
                            Rule::field_decl => {
                                let mut parts = item.clone().into_inner();
                                let field = self.ident(self.next(&mut parts, &item)?);
                                let ty = self.ty(self.next(&mut parts, &item)?)?;
                                fields.push((
                                    FieldDecl {
                                        name: Some(field),
                                        ty,
                                    },
                                    item_span,
                                ));
                            }
                            Rule::con_decl => cons.push(self.con_decl(item)?),
                            Rule::def_decl => methods.push((self.fun_def(item)?, item_span)),
                            _ => return Err(self.internal(&item)),
                        }
                    }
                }
                _ => return Err(self.internal(&child)),
            }
        }
        let misplaced = |what: &str, at: Span| {
            Err(error(
                format!(
                    "{what} belongs in a `struct`, not a `{}`",
                    kind_pair.as_str()
                ),
                at,
            ))
        };
        match kind {
            DataKind::Struct => {
                if let Some(con) = cons.first() {
                    return Err(error(
                        "a struct has fields (`name : Type`), not constructors: use `data` for \
                         a type with constructors",
                        con.span,
                    ));
                }
                cons.push(ConDecl {
                    name: name.clone(),
                    fields: fields.into_iter().map(|(field, _)| field).collect(),
                    span,
                });
            }
            DataKind::Data | DataKind::Enum => {
                if let Some((_, at)) = fields.first() {
                    return misplaced("a field `name : Type`", *at);
                }
                if let Some((_, at)) = methods.first() {
                    return misplaced("a method", *at);
                }
            }
        }
        Ok(DataDecl {
            kind,
            name,
            params,
            given,
            cons,
            methods: methods.into_iter().map(|(method, _)| method).collect(),
            span,
        })
    }

    /// `Circle(Float)`, `Rect(w: Float, h: Float)`, `MkPair a b`, `Empty`.
    fn con_decl(&self, pair: Pair<Rule>) -> PResult<ConDecl> {
        let span = self.span(&pair);
        let mut inner = pair.clone().into_inner();
        let name = self.ident(self.next(&mut inner, &pair)?);
        let mut fields = Vec::new();
        for child in inner {
            match child.as_rule() {
                Rule::con_fields => {
                    for field in child.into_inner() {
                        let mut parts: Vec<Pair<Rule>> = field.into_inner().collect();
                        let ty = match parts.pop() {
                            Some(ty) => self.ty(ty)?,
                            None => return Err(self.internal(&pair)),
                        };
                        let name = parts.into_iter().next().map(|ident| self.ident(ident));
                        fields.push(FieldDecl { name, ty });
                    }
                }
                _ => fields.push(FieldDecl {
                    name: None,
                    ty: self.ty(child)?,
                }),
            }
        }
        Ok(ConDecl { name, fields, span })
    }

    /// `interface Name(params)` + method signatures and default definitions.
    fn interface_decl(&self, pair: Pair<Rule>) -> PResult<InterfaceDecl> {
        let span = self.span(&pair);
        let mut name = None;
        let mut params = Vec::new();
        let mut methods = Vec::new();
        let mut defaults = Vec::new();
        for child in pair.clone().into_inner() {
            match child.as_rule() {
                Rule::kw_interface => {}
                Rule::ident => name = Some(self.ident(child)),
                Rule::type_params => {
                    for param in child.into_inner() {
                        params.push(self.type_param(param)?);
                    }
                }
                Rule::method_sig => {
                    let mut parts = child.clone().into_inner();
                    let method = self.def_name(self.next(&mut parts, &child)?)?;
                    let ty = self.ty(self.next(&mut parts, &child)?)?;
                    methods.push(MethodSig { name: method, ty });
                }
                Rule::def_decl => defaults.push(self.fun_def(child)?),
                _ => return Err(self.internal(&child)),
            }
        }
        let name = name.ok_or_else(|| self.internal(&pair))?;
        Ok(InterfaceDecl {
            name,
            params,
            methods,
            defaults,
            span,
        })
    }

    /// `instance Name(T…) given (…)` + the methods' definitions.
    fn instance_decl(&self, pair: Pair<Rule>) -> PResult<InstanceDecl> {
        let span = self.span(&pair);
        let mut named = None;
        let mut class = None;
        let mut args = Vec::new();
        let mut given = Vec::new();
        let mut constraints = Vec::new();
        let mut methods = Vec::new();
        let mut read_args = |child: Pair<Rule>| -> PResult<()> {
            for arg in child.into_inner() {
                args.push(self.ty(arg)?);
            }
            Ok(())
        };
        for child in pair.clone().into_inner() {
            match child.as_rule() {
                Rule::kw_instance | Rule::kw_named_instance => {}
                Rule::ident => class = Some(self.ident(child)),
                Rule::instance_args => read_args(child)?,
                Rule::named_instance => {
                    let mut name = None;
                    let mut params = Vec::new();
                    for part in child.into_inner() {
                        match part.as_rule() {
                            Rule::ident if name.is_none() => name = Some(self.ident(part)),
                            Rule::ident => class = Some(self.ident(part)),
                            Rule::def_params => self.def_params(part, &mut params, &mut given)?,
                            Rule::instance_args => read_args(part)?,
                            _ => {}
                        }
                    }
                    named = name.map(|name| (name, params));
                }
                Rule::given => {
                    let (binders, group) = self.given(child)?;
                    given.extend(binders);
                    constraints.extend(group);
                }
                Rule::def_decl => methods.push(InstanceItem::Def(self.fun_def(child)?)),
                Rule::method_binding => {
                    let item_span = self.span(&child);
                    let mut parts = child.clone().into_inner();
                    let name = self.def_name(self.next(&mut parts, &child)?)?;
                    let value = parts
                        .find(|part| part.as_rule() != Rule::eq)
                        .ok_or_else(|| self.internal(&child))?;
                    methods.push(InstanceItem::Let(LetBinding {
                        pat: Pattern::Var(name),
                        ty: None,
                        value: self.body(value)?,
                        span: item_span,
                    }));
                }
                _ => return Err(self.internal(&child)),
            }
        }
        let class = class.ok_or_else(|| self.internal(&pair))?;
        Ok(InstanceDecl {
            named,
            class,
            args,
            given,
            constraints,
            methods,
            span,
        })
    }

    /// `def Vec(n: Nat) -> Type = T`, `Name : Type = T`, `Name = T`.
    fn type_alias(&self, pair: Pair<Rule>) -> PResult<TypeAlias> {
        let span = self.span(&pair);
        let rule = pair.as_rule();
        let mut name = None;
        let mut params = None;
        let mut ty = None;
        for child in pair.clone().into_inner() {
            match child.as_rule() {
                Rule::kw_def | Rule::kw_type | Rule::eq => {}
                Rule::ident => name = Some(self.ident(child)),
                Rule::def_params => {
                    let mut list = Vec::new();
                    for param in child
                        .into_inner()
                        .filter(|param| param.as_rule() == Rule::def_param)
                    {
                        list.push(self.param(param)?);
                    }
                    params = Some(list);
                }
                _ => ty = Some(self.ty(child)?),
            }
        }
        match (name, ty) {
            (Some(name), Some(ty)) => Ok(TypeAlias {
                name,
                params,
                annotated: rule == Rule::annotated_alias,
                ty,
                span,
            }),
            _ => Err(self.internal(&pair)),
        }
    }

    /// The classes of a class parameter (`n|Ix` among a `def`'s parameters) as a `given`
    /// binder; `None` for any other parameter.
    fn class_param(&self, pair: &Pair<Rule>) -> PResult<Option<GivenBinder>> {
        let Some(class_param) = pair
            .clone()
            .into_inner()
            .next()
            .filter(|inner| inner.as_rule() == Rule::class_param)
        else {
            return Ok(None);
        };
        let mut idents = class_param.into_inner().map(|ident| self.ident(ident));
        let name = idents.next().ok_or_else(|| self.internal(pair))?;
        Ok(Some(GivenBinder {
            name,
            classes: idents.collect(),
            kind: None,
        }))
    }

    /// A `def` parameter or a lambda parameter: a pattern and an optional type. A class
    /// parameter (`n|Ix`) is the type parameter `n: Type` (`class_param` gives its classes).
    fn param(&self, pair: Pair<Rule>) -> PResult<Param> {
        let span = self.span(&pair);
        if let Some(binder) = self.class_param(&pair)? {
            let ty = TypeExpr {
                kind: TypeExprKind::Name(Ident {
                    name: "Type".to_string(),
                    span,
                }),
                span,
            };
            return Ok(Param {
                pat: Pattern::Var(binder.name),
                ty: Some(ty),
                span,
            });
        }
        let mut inner = pair.clone().into_inner();
        let pat = self.pattern(self.next(&mut inner, &pair)?)?;
        let ty = inner.next().map(|ty| self.ty(ty)).transpose()?;
        Ok(Param { pat, ty, span })
    }

    fn let_binding(&self, pair: Pair<Rule>) -> PResult<LetBinding> {
        let span = self.span(&pair);
        let mut pat = None;
        let mut ty = None;
        let mut value = None;
        for child in pair.clone().into_inner() {
            match child.as_rule() {
                Rule::eq => {}
                Rule::pat_var
                | Rule::pat_tuple
                | Rule::pat_table
                | Rule::wildcard
                | Rule::pat_con
                | Rule::pat_lit
                    if pat.is_none() =>
                {
                    pat = Some(self.pattern(child)?);
                }
                Rule::ty => ty = Some(self.ty(child)?),
                _ => value = Some(self.body(child)?),
            }
        }
        match (pat, value) {
            (Some(pat), Some(value)) => Ok(LetBinding {
                pat,
                ty,
                value,
                span,
            }),
            _ => Err(self.internal(&pair)),
        }
    }

    fn pattern(&self, pair: Pair<Rule>) -> PResult<Pattern> {
        let span = self.span(&pair);
        match pair.as_rule() {
            Rule::pat_var => {
                let ident = pair
                    .clone()
                    .into_inner()
                    .next()
                    .ok_or_else(|| self.internal(&pair))?;
                Ok(Pattern::Var(self.ident(ident)))
            }
            Rule::wildcard => Ok(Pattern::Wildcard(span)),
            Rule::pat_tuple => {
                let mut items: Vec<Pattern> = pair
                    .into_inner()
                    .map(|item| self.pattern(item))
                    .collect::<PResult<_>>()?;
                if items.len() == 1 {
                    Ok(items.remove(0))
                } else {
                    Ok(Pattern::Tuple(items, span))
                }
            }
            Rule::pat_table => {
                let items = pair
                    .into_inner()
                    .map(|item| self.pattern(item))
                    .collect::<PResult<_>>()?;
                Ok(Pattern::Table(items, span))
            }
            Rule::pat_con | Rule::pat_con_call => {
                let mut inner = pair.clone().into_inner();
                let name = self.ident(self.next(&mut inner, &pair)?);
                let mut args = Vec::new();
                for arg in inner {
                    match arg.as_rule() {
                        Rule::pat_con_args => {
                            for item in arg.into_inner() {
                                let sub = item
                                    .clone()
                                    .into_inner()
                                    .next()
                                    .ok_or_else(|| self.internal(&item))?;
                                args.push(self.pattern(sub)?);
                            }
                        }
                        _ => args.push(self.pattern(arg)?),
                    }
                }
                Ok(Pattern::Con { name, args, span })
            }
            Rule::pat_lit => {
                let mut negated = false;
                let mut lit = None;
                for child in pair.clone().into_inner() {
                    match child.as_rule() {
                        Rule::pat_neg => negated = true,
                        _ => lit = Some(self.literal(child)?),
                    }
                }
                let lit = lit.ok_or_else(|| self.internal(&pair))?;
                Ok(Pattern::Lit { lit, negated, span })
            }
            _ => Err(self.internal(&pair)),
        }
    }

    /// A literal token: a number, `True`/`False`, a string or a character.
    fn literal(&self, pair: Pair<Rule>) -> PResult<Lit> {
        let span = self.span(&pair);
        match pair.as_rule() {
            Rule::int | Rule::float => number(pair.as_str(), span),
            Rule::bool => Ok(Lit::Bool(pair.as_str() == "True")),
            Rule::string => Ok(Lit::Str(string_text(pair.as_str(), span)?)),
            Rule::char => char_literal(pair.as_str(), span),
            _ => Err(self.internal(&pair)),
        }
    }

    // --- Types ---------------------------------------------------------------------------------

    /// `{State h, IO|eff}` (its braces arrive as the bytes 2 and 3).
    fn eff_row(&self, pair: Pair<Rule>) -> EffRowExpr {
        let span = self.span(&pair);
        let mut effects = Vec::new();
        let mut rest = None;
        for part in pair.into_inner() {
            match part.as_rule() {
                Rule::effect => {
                    let mut names = part.into_inner().map(|name| self.ident(name));
                    if let Some(name) = names.next() {
                        effects.push((name, names.next()));
                    }
                }
                _ => rest = Some(self.ident(part)),
            }
        }
        EffRowExpr {
            effects,
            rest,
            span,
        }
    }

    fn ty(&self, pair: Pair<Rule>) -> PResult<TypeExpr> {
        let span = self.span(&pair);
        match pair.as_rule() {
            Rule::ty => {
                let mut inner = pair.clone().into_inner();
                let lhs = self.next(&mut inner, &pair)?;
                let Some(mut result) = inner.next() else {
                    return self.ty(lhs);
                };
                let mut effects = None;
                if result.as_rule() == Rule::eff_row {
                    effects = Some(self.eff_row(result));
                    result = self.next(&mut inner, &pair)?;
                }
                if lhs.as_rule() == Rule::ty_given {
                    let mut parts = lhs.clone().into_inner();
                    let given = self.next(&mut parts, &lhs)?;
                    let (binders, constraints) = self.given(given.clone())?;
                    if let Some(constraint) = constraints.first() {
                        return Err(ParseError {
                            message: "a function type names its implicit variables' classes \
                                      with `|` (`given (a|Add)`), not in a constraint group"
                                .into(),
                            span: constraint.span,
                            kind: ParseErrorKind::Syntax,
                        });
                    }
                    let params = parts.map(|param| self.ty(param)).collect::<PResult<_>>()?;
                    let fun = TypeExpr {
                        kind: TypeExprKind::Fun(params, Box::new(self.ty(result)?), effects),
                        span,
                    };
                    return Ok(TypeExpr {
                        kind: TypeExprKind::Given {
                            binders,
                            ty: Box::new(fun),
                        },
                        span,
                    });
                }
                // `(a, b) -> c` is a function of two arguments; `((a, b)) -> c` of one tuple.
                let mut lhs_items = lhs.clone().into_inner();
                let params = match (lhs_items.next(), lhs_items.next()) {
                    (Some(only), None)
                        if only.as_rule() == Rule::ty_paren && paren_items(&only).count() > 1 =>
                    {
                        paren_items(&only)
                            .map(|item| self.ty(item))
                            .collect::<PResult<_>>()?
                    }
                    _ => vec![self.ty(lhs)?],
                };
                Ok(TypeExpr {
                    kind: TypeExprKind::Fun(params, Box::new(self.ty(result)?), effects),
                    span,
                })
            }
            Rule::ty_table => {
                let mut inner = pair.clone().into_inner();
                let first = self.next(&mut inner, &pair)?;
                if first.as_rule() == Rule::ty_dep_binder {
                    let mut parts = first.clone().into_inner();
                    let binder = self.ident(self.next(&mut parts, &first)?);
                    let index = self.ty(self.next(&mut parts, &first)?)?;
                    let elem = self.ty(self.next(&mut inner, &pair)?)?;
                    return Ok(TypeExpr {
                        kind: TypeExprKind::DepTable {
                            binder,
                            index: Box::new(index),
                            elem: Box::new(elem),
                        },
                        span,
                    });
                }
                let index = self.ty(first)?;
                match inner.next() {
                    None => Ok(index),
                    Some(elem) => {
                        let elem = self.ty(elem)?;
                        Ok(TypeExpr {
                            kind: TypeExprKind::Table(Box::new(index), Box::new(elem)),
                            span,
                        })
                    }
                }
            }
            Rule::ty_range => {
                let mut kind = RangeKind::UpTo;
                let mut index = None;
                for part in pair.clone().into_inner() {
                    match part.as_rule() {
                        Rule::range_upto => kind = RangeKind::UpTo,
                        Rule::range_before => kind = RangeKind::Before,
                        Rule::range_from => kind = RangeKind::From,
                        Rule::range_after => kind = RangeKind::After,
                        _ => index = Some(self.ident(part)),
                    }
                }
                let index = index.ok_or_else(|| self.internal(&pair))?;
                Ok(TypeExpr {
                    kind: TypeExprKind::Range(kind, index),
                    span,
                })
            }
            Rule::ty_fin => {
                let atom = pair
                    .clone()
                    .into_inner()
                    .nth(1)
                    .ok_or_else(|| self.internal(&pair))?;
                let size = match atom.as_rule() {
                    Rule::fin_field => self.postfix_expr(atom)?,
                    _ => self.atom(atom)?,
                };
                Ok(TypeExpr {
                    kind: TypeExprKind::Fin(boxed(size)),
                    span,
                })
            }
            Rule::ty_paren => {
                let mut items: Vec<TypeExpr> = paren_items(&pair)
                    .map(|item| self.ty(item))
                    .collect::<PResult<_>>()?;
                if items.len() == 1 {
                    let mut only = items.remove(0);
                    only.span = span;
                    Ok(only)
                } else {
                    Ok(TypeExpr {
                        kind: TypeExprKind::Tuple(items),
                        span,
                    })
                }
            }
            Rule::hole => Ok(TypeExpr {
                kind: TypeExprKind::Hole,
                span,
            }),
            Rule::ty_call | Rule::ty_applied => {
                let mut inner = pair.clone().into_inner();
                let name = self.ident(self.next(&mut inner, &pair)?);
                let mut args = Vec::new();
                for arg in inner {
                    match arg.as_rule() {
                        Rule::ty_call_args => {
                            for item in arg.into_inner() {
                                args.push(self.ty(item)?);
                            }
                        }
                        _ => args.push(self.ty(arg)?),
                    }
                }
                Ok(TypeExpr {
                    kind: TypeExprKind::App(name, args),
                    span,
                })
            }
            Rule::ty_infix => {
                let mut inner = pair.clone().into_inner();
                let lhs = self.ty(self.next(&mut inner, &pair)?)?;
                let name = self.ident(self.next(&mut inner, &pair)?);
                let rhs = self.ty(self.next(&mut inner, &pair)?)?;
                Ok(TypeExpr {
                    kind: TypeExprKind::App(name, vec![lhs, rhs]),
                    span,
                })
            }
            Rule::ty_size => {
                let inner = pair
                    .clone()
                    .into_inner()
                    .next()
                    .ok_or_else(|| self.internal(&pair))?;
                let size = match inner.as_rule() {
                    Rule::int => self.atom(inner)?.expr,
                    _ => self.expr(inner)?.expr,
                };
                Ok(TypeExpr {
                    kind: TypeExprKind::Size(Box::new(size)),
                    span,
                })
            }
            Rule::ty_name => {
                let ident = pair
                    .clone()
                    .into_inner()
                    .next()
                    .ok_or_else(|| self.internal(&pair))?;
                Ok(TypeExpr {
                    kind: TypeExprKind::Name(self.ident(ident)),
                    span,
                })
            }
            _ => Err(self.internal(&pair)),
        }
    }

    // --- Expressions ---------------------------------------------------------------------------

    /// A block or an expression.
    fn body(&self, pair: Pair<Rule>) -> PResult<Expr> {
        match pair.as_rule() {
            Rule::block => self.block(pair),
            Rule::expr => Ok(self.expr(pair)?.expr),
            _ => Err(self.internal(&pair)),
        }
    }

    fn block(&self, pair: Pair<Rule>) -> PResult<Expr> {
        let mut items: Vec<Pair<Rule>> = pair.clone().into_inner().collect();
        let close = match items.pop() {
            Some(close) if close.as_rule() == Rule::block_close => close,
            _ => return Err(self.internal(&pair)),
        };
        let Some(last) = items.pop() else {
            return Err(self.internal(&pair));
        };
        if last.as_rule() != Rule::expr {
            let close_pos = close.as_span().start();
            return Err(ParseError {
                message: "a block must end with an expression".to_string(),
                span: self.span(&last),
                kind: if close_pos >= self.laid.real_end {
                    ParseErrorKind::Incomplete
                } else {
                    ParseErrorKind::Syntax
                },
            });
        }
        let mut result = self.expr(last)?.expr;
        // The items before the result, last first: bindings, and expressions run for their
        // effects (`ref := 1.0`, bound to `_`). `x <- e` makes the items after it the body of
        // `\x.` passed to `e`.
        let mut stmts = Vec::new();
        for item in items.into_iter().rev() {
            let span = self.span(&item);
            match item.as_rule() {
                Rule::let_binding => stmts.push(Stmt::Let(self.let_binding(item)?)),
                Rule::def_decl => stmts.push(Stmt::Def(self.fun_def(item)?)),
                Rule::type_def | Rule::annotated_alias | Rule::type_alias => {
                    stmts.push(Stmt::TypeAlias(self.type_alias(item)?))
                }
                Rule::expr => stmts.push(Stmt::Let(LetBinding {
                    pat: Pattern::Wildcard(span),
                    ty: None,
                    value: self.expr(item)?.expr,
                    span,
                })),
                Rule::bind_item => {
                    let body = block_of(std::mem::take(&mut stmts), result);
                    let mut inner = item.clone().into_inner();
                    let pat = self.pattern(self.next(&mut inner, &item)?)?;
                    let func = self.expr(self.next(&mut inner, &item)?)?.expr;
                    let lambda = Expr {
                        span: span.to(body.span),
                        kind: ExprKind::Lam {
                            params: vec![Param {
                                pat,
                                ty: None,
                                span,
                            }],
                            body: Box::new(body),
                        },
                    };
                    result = Expr {
                        span: lambda.span,
                        kind: ExprKind::App {
                            func: Box::new(func),
                            arg: Box::new(lambda),
                            name: None,
                        },
                    };
                }
                _ => return Err(self.internal(&item)),
            }
        }
        Ok(block_of(stmts, result))
    }

    fn expr(&self, pair: Pair<Rule>) -> PResult<Node> {
        PRATT
            .map_primary(|primary| self.operand(primary))
            .map_prefix(|op, rhs| {
                let rhs = rhs?;
                let span = self.span(&op).to(rhs.outer);
                if op.as_rule() == Rule::op_pos {
                    // Unary `+` is the identity (`[+1, 2]`).
                    let mut expr = rhs.expr;
                    expr.span = span;
                    return Ok(Node::plain(expr));
                }
                Ok(Node::plain(Expr {
                    kind: ExprKind::Neg(boxed(rhs)),
                    span,
                }))
            })
            .map_postfix(|lhs, op| {
                let lhs = lhs?;
                let ty_pair = op
                    .clone()
                    .into_inner()
                    .next()
                    .ok_or_else(|| self.internal(&op))?;
                let ty = self.ty(ty_pair)?;
                let span = lhs.outer.to(ty.span);
                let value = boxed(lhs);
                let kind = match op.as_rule() {
                    Rule::annot_suffix => ExprKind::Annot { expr: value, ty },
                    _ => ExprKind::At { value, ty },
                };
                Ok(Node::plain(Expr { kind, span }))
            })
            .map_infix(|lhs, op, rhs| self.infix(lhs?, op, rhs?))
            .parse(pair.into_inner())
    }

    fn infix(&self, lhs: Node, op: Pair<Rule>, rhs: Node) -> PResult<Node> {
        let span = lhs.outer.to(rhs.outer);
        let bin_op = match op.as_rule() {
            Rule::op_dollar => {
                let kind = ExprKind::App {
                    func: boxed(lhs),
                    arg: boxed(rhs),
                    name: None,
                };
                return Ok(Node::plain(Expr { kind, span }));
            }
            Rule::op_backtick => {
                let name_pair = op
                    .clone()
                    .into_inner()
                    .next()
                    .ok_or_else(|| self.internal(&op))?;
                let func = Expr {
                    kind: ExprKind::Var(self.ident(name_pair)),
                    span: self.span(&op),
                };
                let inner_span = lhs.outer.to(self.span(&op));
                let inner_kind = ExprKind::App {
                    func: Box::new(func),
                    arg: boxed(lhs),
                    name: None,
                };
                let inner = Expr {
                    kind: inner_kind,
                    span: inner_span,
                };
                let kind = ExprKind::App {
                    func: Box::new(inner),
                    arg: boxed(rhs),
                    name: None,
                };
                return Ok(Node::plain(Expr { kind, span }));
            }
            Rule::op_pipe => return Ok(Node::plain(pipe(lhs.expr, rhs.expr))),
            Rule::op_user_and
            | Rule::op_nat_sub
            | Rule::op_user_or
            | Rule::op_user_cmp
            | Rule::op_user_add
            | Rule::op_user_mul
            | Rule::op_assign
            | Rule::op_accum => {
                let kind = ExprKind::UserOp {
                    op: Ident {
                        name: op.as_str().to_string(),
                        span: self.span(&op),
                    },
                    lhs: boxed(lhs),
                    rhs: boxed(rhs),
                };
                return Ok(Node::plain(Expr { kind, span }));
            }
            _ => self.bin_op(&op)?,
        };
        if is_comparison(bin_op) && !lhs.parenthesized {
            if let ExprKind::BinOp { op: lhs_op, .. } = &lhs.expr.kind {
                if is_comparison(*lhs_op) {
                    let message = format!(
                        "comparisons do not chain: add parentheses around '{}'",
                        lhs_op.symbol()
                    );
                    return Err(error(message, self.span(&op)));
                }
            }
        }
        let kind = ExprKind::BinOp {
            op: bin_op,
            lhs: boxed(lhs),
            rhs: boxed(rhs),
        };
        Ok(Node::plain(Expr { kind, span }))
    }

    /// The operator of an infix token (not `$` or backtick infix, which are applications).
    fn bin_op(&self, op: &Pair<Rule>) -> PResult<BinOp> {
        Ok(match op.as_rule() {
            Rule::op_or => BinOp::Or,
            Rule::op_and => BinOp::And,
            Rule::op_eq => BinOp::Eq,
            Rule::op_ne => BinOp::Ne,
            Rule::op_lt => BinOp::Lt,
            Rule::op_gt => BinOp::Gt,
            Rule::op_le => BinOp::Le,
            Rule::op_ge => BinOp::Ge,
            Rule::op_approx => BinOp::Approx,
            Rule::op_add => BinOp::Add,
            Rule::op_sub => BinOp::Sub,
            Rule::op_mul => BinOp::Mul,
            Rule::op_div => BinOp::Div,
            Rule::op_scale => BinOp::Scale,
            Rule::op_matmul => BinOp::MatMul,
            Rule::op_matvec => BinOp::MatVec,
            Rule::op_vecmat => BinOp::VecMat,
            _ => return Err(self.internal(op)),
        })
    }

    fn operand(&self, pair: Pair<Rule>) -> PResult<Node> {
        match pair.as_rule() {
            Rule::lambda => self.lambda(pair).map(Node::plain),
            Rule::for_expr => self.for_expr(pair).map(Node::plain),
            Rule::if_expr => self.if_expr(pair).map(Node::plain),
            Rule::case_expr => self.case_expr(pair).map(Node::plain),
            Rule::app => self.app(pair),
            _ => Err(self.internal(&pair)),
        }
    }

    fn app(&self, pair: Pair<Rule>) -> PResult<Node> {
        let mut inner = pair.clone().into_inner();
        let mut func = self.argument(self.next(&mut inner, &pair)?)?;
        for arg_pair in inner {
            let arg = self.argument(arg_pair)?;
            let span = func.outer.to(arg.outer);
            let kind = ExprKind::App {
                func: boxed(func),
                arg: boxed(arg),
                name: None,
            };
            func = Node::plain(Expr { kind, span });
        }
        Ok(func)
    }

    /// One item of a juxtaposition: a postfix expression, or a trailing lambda/`for`/`if`.
    fn argument(&self, pair: Pair<Rule>) -> PResult<Node> {
        match pair.as_rule() {
            Rule::postfix_expr => self.postfix_expr(pair),
            _ => self.operand(pair),
        }
    }

    fn postfix_expr(&self, pair: Pair<Rule>) -> PResult<Node> {
        let mut inner = pair.clone().into_inner();
        let mut base = self.atom(self.next(&mut inner, &pair)?)?;
        for suffix in inner {
            let suffix_span = self.span(&suffix);
            match suffix.as_rule() {
                Rule::call_args => {
                    let args: Vec<Pair<Rule>> = suffix.into_inner().collect();
                    let n_args = args.len();
                    for (arg_idx, call_arg) in args.into_iter().enumerate() {
                        let mut parts = call_arg.clone().into_inner();
                        let first = self.next(&mut parts, &call_arg)?;
                        let (name, value) = if first.as_rule() == Rule::arg_name {
                            let ident_pair = first
                                .clone()
                                .into_inner()
                                .next()
                                .ok_or_else(|| self.internal(&first))?;
                            // Skip the `=` to get to the value.
                            let value = parts.nth(1).ok_or_else(|| self.internal(&call_arg))?;
                            (Some(self.ident(ident_pair)), value)
                        } else {
                            (None, first)
                        };
                        let arg = self.expr(value)?;
                        let mut span = base.outer.to(arg.outer);
                        if arg_idx + 1 == n_args {
                            span = span.to(suffix_span);
                        }
                        let kind = ExprKind::App {
                            func: boxed(base),
                            arg: boxed(arg),
                            name,
                        };
                        base = Node::plain(Expr { kind, span });
                    }
                }
                Rule::index_args => {
                    let indices = suffix
                        .into_inner()
                        .map(|index| Ok(self.expr(index)?.expr))
                        .collect::<PResult<Vec<_>>>()?;
                    let span = base.outer.to(suffix_span);
                    base = Node::plain(Expr {
                        kind: ExprKind::Index {
                            base: boxed(base),
                            indices,
                        },
                        span,
                    });
                }
                Rule::ref_index => {
                    let target = suffix
                        .clone()
                        .into_inner()
                        .next()
                        .ok_or_else(|| self.internal(&suffix))?;
                    let index = self.atom(target)?;
                    let op_span =
                        Span::new(suffix_span.start as usize, suffix_span.start as usize + 1);
                    let span = base.outer.to(suffix_span);
                    base = Node::plain(Expr {
                        kind: ExprKind::UserOp {
                            op: Ident {
                                name: "!".to_string(),
                                span: op_span,
                            },
                            lhs: boxed(base),
                            rhs: boxed(index),
                        },
                        span,
                    });
                }
                Rule::field => {
                    let name_pair = suffix
                        .clone()
                        .into_inner()
                        .next()
                        .ok_or_else(|| self.internal(&suffix))?;
                    let field = Ident {
                        name: name_pair.as_str().to_string(),
                        span: self.span(&name_pair),
                    };
                    let span = base.outer.to(suffix_span);
                    base = Node::plain(Expr {
                        kind: ExprKind::Field {
                            base: boxed(base),
                            field,
                        },
                        span,
                    });
                }
                _ => return Err(self.internal(&suffix)),
            }
        }
        Ok(base)
    }

    /// The elements of a `numbers` token (`0.5, -1, 2e3`), each with its sign and span.
    fn numbers(&self, pair: &Pair<Rule>) -> PResult<Vec<Number>> {
        let mut numbers = Vec::new();
        let mut offset = pair.as_span().start();
        for piece in pair.as_str().split(',') {
            let at = offset + piece.len() - piece.trim_start().len();
            offset += piece.len() + 1;
            let text = piece.trim();
            let span = self.laid.span(at, at + text.len());
            let negated = text.starts_with('-');
            let digits_at = if negated { at + 1 } else { at };
            let digits = self.laid.span(digits_at, at + text.len());
            let unsigned = text.trim_start_matches(['-', '+']);
            let value = match number(unsigned, digits)? {
                Lit::Int(n) => NumberValue::Int(n),
                Lit::Float(x) => NumberValue::Float(x),
                _ => return Err(self.internal(pair)),
            };
            numbers.push(Number {
                value,
                negated,
                span,
                digits,
            });
        }
        Ok(numbers)
    }

    fn atom(&self, pair: Pair<Rule>) -> PResult<Node> {
        let span = self.span(&pair);
        let lit = |lit: Lit| {
            Ok(Node::plain(Expr {
                kind: ExprKind::Lit(lit),
                span,
            }))
        };
        match pair.as_rule() {
            Rule::int | Rule::float | Rule::bool | Rule::string | Rule::char => {
                lit(self.literal(pair)?)
            }
            Rule::var => {
                let ident = pair
                    .clone()
                    .into_inner()
                    .next()
                    .ok_or_else(|| self.internal(&pair))?;
                Ok(Node::plain(Expr {
                    kind: ExprKind::Var(self.ident(ident)),
                    span,
                }))
            }
            Rule::table => {
                let mut items = Vec::new();
                for item in pair.into_inner() {
                    match item.as_rule() {
                        Rule::numbers => {
                            return Ok(Node::plain(Expr {
                                kind: ExprKind::Numbers(self.numbers(&item)?),
                                span,
                            }))
                        }
                        // A plain number element (`table_item`).
                        Rule::float | Rule::int => items.push(self.atom(item)?.expr),
                        _ => items.push(self.expr(item)?.expr),
                    }
                }
                Ok(Node::plain(Expr::table(items, span)))
            }
            Rule::unit => Ok(Node::plain(Expr {
                kind: ExprKind::Tuple(Vec::new()),
                span,
            })),
            Rule::range_arg => {
                let range = pair
                    .clone()
                    .into_inner()
                    .next()
                    .ok_or_else(|| self.internal(&pair))?;
                let TypeExprKind::Range(kind, index) = self.ty(range)?.kind else {
                    return Err(self.internal(&pair));
                };
                Ok(Node::plain(Expr {
                    kind: ExprKind::Range(kind, index),
                    span,
                }))
            }
            Rule::hole => Ok(Node::plain(Expr {
                kind: ExprKind::Hole,
                span,
            })),
            Rule::section => {
                let op = pair
                    .clone()
                    .into_inner()
                    .next()
                    .ok_or_else(|| self.internal(&pair))?;
                let kind = match op.as_rule() {
                    // `(`f`)` is `f`.
                    Rule::op_backtick => {
                        let name = op.into_inner().next().ok_or_else(|| self.internal(&pair))?;
                        ExprKind::Var(self.ident(name))
                    }
                    Rule::op_dollar => return Err(error("`($)` is not a function here", span)),
                    Rule::op_pipe => return Err(error("`(|)` is not a function here", span)),
                    // `(./)` is the function the operator names.
                    Rule::op_nat_sub
                    | Rule::op_user_and
                    | Rule::op_user_or
                    | Rule::op_user_cmp
                    | Rule::op_user_add
                    | Rule::op_user_mul
                    | Rule::op_assign
                    | Rule::op_accum => ExprKind::Var(Ident {
                        name: op.as_str().to_string(),
                        span,
                    }),
                    _ => ExprKind::Section(self.bin_op(&op)?),
                };
                Ok(Node::plain(Expr { kind, span }))
            }
            Rule::paren => {
                let mut inner = pair.clone().into_inner();
                let first = self.expr(self.next(&mut inner, &pair)?)?;
                let rest: Vec<Pair<Rule>> = inner.collect();
                match rest.first() {
                    None => Ok(Node {
                        expr: first.expr,
                        outer: span,
                        parenthesized: true,
                    }),
                    Some(_) => {
                        let mut items = vec![first.expr];
                        for item in rest {
                            items.push(self.expr(item)?.expr);
                        }
                        Ok(Node::plain(Expr {
                            kind: ExprKind::Tuple(items),
                            span,
                        }))
                    }
                }
            }
            _ => Err(self.internal(&pair)),
        }
    }

    fn lambda(&self, pair: Pair<Rule>) -> PResult<Expr> {
        let span = self.span(&pair);
        let mut params = Vec::new();
        let mut body = None;
        for child in pair.clone().into_inner() {
            match child.as_rule() {
                Rule::lam_param => params.push(self.param(child)?),
                Rule::dot => {}
                _ => body = Some(self.body(child)?),
            }
        }
        let body = body.ok_or_else(|| self.internal(&pair))?;
        if params.is_empty() {
            // `\. body` takes `()`.
            params.push(Param {
                pat: Pattern::Tuple(Vec::new(), span),
                ty: None,
                span,
            });
        }
        Ok(Expr {
            kind: ExprKind::Lam {
                params,
                body: Box::new(body),
            },
            span,
        })
    }

    fn for_expr(&self, pair: Pair<Rule>) -> PResult<Expr> {
        let span = self.span(&pair);
        let mut binders = Vec::new();
        let mut body = None;
        let mut for_effects = false;
        for child in pair.clone().into_inner() {
            match child.as_rule() {
                Rule::for_binder => {
                    let mut inner = child.clone().into_inner();
                    // `for _ .` binds the name `_`, which no expression can refer to.
                    let name = self.ident(self.next(&mut inner, &child)?);
                    let ty = inner.next().map(|ty| self.ty(ty)).transpose()?;
                    binders.push(ForBinder { name, ty });
                }
                Rule::kw_for_ => for_effects = true,
                Rule::kw_for | Rule::dot => {}
                _ => body = Some(self.body(child)?),
            }
        }
        let body = body.ok_or_else(|| self.internal(&pair))?;
        let table = Expr {
            kind: ExprKind::For {
                binders,
                body: Box::new(body),
            },
            span,
        };
        if !for_effects {
            return Ok(table);
        }
        // `for_ i. body` is `_ = for i. body` followed by `()`.
        Ok(Expr {
            kind: ExprKind::Block {
                stmts: vec![Stmt::Let(LetBinding {
                    pat: Pattern::Wildcard(span),
                    ty: None,
                    value: table,
                    span,
                })],
                result: Box::new(Expr {
                    kind: ExprKind::Tuple(Vec::new()),
                    span,
                }),
            },
            span,
        })
    }

    fn case_expr(&self, pair: Pair<Rule>) -> PResult<Expr> {
        let span = self.span(&pair);
        let mut scrutinee = None;
        let mut alts = Vec::new();
        for child in pair.clone().into_inner() {
            match child.as_rule() {
                Rule::kw_case | Rule::kw_of => {}
                Rule::expr => scrutinee = Some(self.expr(child)?.expr),
                Rule::case_block => {
                    for alt in child.into_inner() {
                        alts.push(self.case_alt(alt)?);
                    }
                }
                Rule::case_alt => alts.push(self.case_alt(child)?),
                _ => return Err(self.internal(&child)),
            }
        }
        let scrutinee = scrutinee.ok_or_else(|| self.internal(&pair))?;
        Ok(Expr {
            kind: ExprKind::Case {
                scrutinee: Box::new(scrutinee),
                alts,
            },
            span,
        })
    }

    fn case_alt(&self, pair: Pair<Rule>) -> PResult<CaseAlt> {
        let span = self.span(&pair);
        let mut inner = pair.clone().into_inner();
        let pat = self.pattern(self.next(&mut inner, &pair)?)?;
        let body = self.body(self.next(&mut inner, &pair)?)?;
        Ok(CaseAlt { pat, body, span })
    }

    fn if_expr(&self, pair: Pair<Rule>) -> PResult<Expr> {
        let span = self.span(&pair);
        let mut parts = Vec::with_capacity(3);
        for child in pair.clone().into_inner() {
            match child.as_rule() {
                Rule::kw_if | Rule::kw_then | Rule::kw_else => {}
                _ => parts.push(self.body(child)?),
            }
        }
        let unit = |at: Span| Expr {
            kind: ExprKind::Tuple(Vec::new()),
            span: Span::new(at.end as usize, at.end as usize),
        };
        let mut parts = parts.into_iter();
        let (cond, then_branch) = (parts.next(), parts.next());
        let else_branch = parts
            .next()
            .or_else(|| then_branch.as_ref().map(|e| unit(e.span)));
        match (cond, then_branch, else_branch) {
            (Some(cond), Some(then_branch), Some(else_branch)) => Ok(Expr {
                kind: ExprKind::If {
                    cond: Box::new(cond),
                    then_branch: Box::new(then_branch),
                    else_branch: Box::new(else_branch),
                },
                span,
            }),
            _ => Err(self.internal(&pair)),
        }
    }
}

/// `stmts` (last first) followed by `result`, as one expression.
fn block_of(mut stmts: Vec<Stmt>, result: Expr) -> Expr {
    let Some(first) = stmts.last() else {
        return result;
    };
    let start = match first {
        Stmt::Let(binding) => binding.span,
        Stmt::Def(def) => def.span,
        Stmt::TypeAlias(alias) => alias.span,
    };
    stmts.reverse();
    Expr {
        span: start.to(result.span),
        kind: ExprKind::Block {
            stmts,
            result: Box::new(result),
        },
    }
}

/// Dex's pipe `x | f a b`: the application `f x a b`, the value the first argument of the
/// application on the right (of `f` itself when the right side is no application).
fn pipe(value: Expr, target: Expr) -> Expr {
    let span = value.span.to(target.span);
    match target.kind {
        ExprKind::App { func, arg, name } => Expr {
            kind: ExprKind::App {
                func: Box::new(pipe(value, *func)),
                arg,
                name,
            },
            span,
        },
        _ => Expr {
            kind: ExprKind::App {
                func: Box::new(target),
                arg: Box::new(value),
                name: None,
            },
            span,
        },
    }
}

/// The types in parentheses, without the names of parameters (`(x: Float)`).
fn paren_items<'i>(pair: &Pair<'i, Rule>) -> impl Iterator<Item = Pair<'i, Rule>> {
    pair.clone()
        .into_inner()
        .filter(|item| item.as_rule() != Rule::ty_param_name)
}
