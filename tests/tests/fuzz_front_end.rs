//! Fuzzing the front end (`dx_lang::syntax`): whatever the text, `split_chunks` and
//! `entry_status` return (no panic, no stack overflow, no hang), quickly, with chunks that tile
//! the source minus its `>` lines and spans that lie inside the source on `char` boundaries.
//!
//! Random inputs come from a fixed seed, so a failure reproduces. Each case runs on a helper
//! thread with a deadline, so a hang fails the test instead of stalling it.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use dx_lang::syntax::ast::*;
use dx_lang::syntax::sexp::sexp;
use dx_lang::syntax::{entry_status, split_chunks, ChunkKind, ParseError, ParseErrorKind, Span};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};

/// How long one case may take before it counts as a hang. A guard against hangs, not a
/// speed test: the 100 000-token cases take seconds in a debug build and several times that
/// on a loaded CI machine.
const DEADLINE: Duration = Duration::from_secs(180);

fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x00d0_c5e5),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        max_shrink_iters: 200,
        ..Config::default()
    }
}

/// Runs the front end on `src` on a helper thread and checks its output. Returns an error
/// message instead of panicking so that proptest can shrink.
fn check(src: String) -> Result<(), String> {
    let (sender, receiver) = mpsc::channel();
    let shown = if src.len() > 200 {
        let cut = (0..=200)
            .rev()
            .find(|&cut| src.is_char_boundary(cut))
            .unwrap_or(0);
        format!("{:?}… ({} bytes)", &src[..cut], src.len())
    } else {
        format!("{src:?}")
    };
    thread::Builder::new()
        .name("fuzz-case".to_string())
        .stack_size(64 << 20)
        .spawn(move || {
            let res = std::panic::catch_unwind(|| check_on_this_thread(&src));
            let _ = sender.send(res.unwrap_or_else(|_| Err("panicked".to_string())));
        })
        .map_err(|err| format!("cannot spawn: {err}"))?;
    match receiver.recv_timeout(DEADLINE) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(message)) => Err(format!("{message} on {shown}")),
        Err(_) => Err(format!("timed out on {shown}")),
    }
}

fn check_on_this_thread(src: &str) -> Result<(), String> {
    let chunks = split_chunks(src);
    let joined: String = chunks
        .iter()
        .map(|chunk| &src[chunk.span.range()])
        .collect();
    let expected: String = src
        .split_inclusive('\n')
        .filter(|line| !line.starts_with('>'))
        .collect();
    if joined != expected {
        return Err("chunks do not tile the source".to_string());
    }
    for chunk in &chunks {
        if let ChunkKind::Code(res) = &chunk.kind {
            match res {
                Ok(block) => {
                    check_span(src, block.span)?;
                    check_decl(src, &block.decl)?;
                }
                Err(err) => check_error(src, err)?,
            }
        }
    }
    let _ = entry_status(src);
    Ok(())
}

fn check_span(src: &str, span: Span) -> Result<(), String> {
    let (start, end) = (span.start as usize, span.end as usize);
    if start > end || end > src.len() || !src.is_char_boundary(start) || !src.is_char_boundary(end)
    {
        return Err(format!("bad span {span:?}"));
    }
    Ok(())
}

fn check_error(src: &str, err: &ParseError) -> Result<(), String> {
    check_span(src, err.span)?;
    if err.message.is_empty() || err.kind == ParseErrorKind::Internal {
        return Err(format!("bad error {err:?}"));
    }
    Ok(())
}

fn check_decl(src: &str, decl: &Decl) -> Result<(), String> {
    match decl {
        Decl::Def(def) => check_def(src, def),
        Decl::Let(binding) => check_let(src, binding),
        Decl::Command { expr, .. } => check_expr(src, expr),
        Decl::Import(ident) => check_span(src, ident.span),
        Decl::CustomLinearization { func, lin } => {
            check_span(src, func.span)?;
            check_span(src, lin.span)
        }
        Decl::Data(data) => {
            check_span(src, data.span)?;
            check_span(src, data.name.span)?;
            for con in &data.cons {
                check_span(src, con.span)?;
                for field in &con.fields {
                    check_span(src, field.ty.span)?;
                }
            }
            data.methods.iter().try_for_each(|def| check_def(src, def))
        }
        Decl::Interface(interface) => {
            check_span(src, interface.span)?;
            for method in &interface.methods {
                check_span(src, method.name.span)?;
                check_span(src, method.ty.span)?;
            }
            interface
                .defaults
                .iter()
                .try_for_each(|def| check_def(src, def))
        }
        Decl::Instance(instance) => {
            check_span(src, instance.span)?;
            for item in &instance.methods {
                match item {
                    InstanceItem::Def(def) => check_def(src, def)?,
                    InstanceItem::Let(binding) => check_let(src, binding)?,
                }
            }
            Ok(())
        }
        Decl::TypeAlias(alias) => {
            check_span(src, alias.span)?;
            check_span(src, alias.ty.span)
        }
    }
}

fn check_def(src: &str, def: &FunDef) -> Result<(), String> {
    check_span(src, def.span)?;
    for param in &def.params {
        check_span(src, param.span)?;
    }
    check_expr(src, &def.body)
}

fn check_let(src: &str, binding: &LetBinding) -> Result<(), String> {
    check_span(src, binding.span)?;
    check_span(src, binding.pat.span())?;
    check_expr(src, &binding.value)
}

fn check_expr(src: &str, expr: &Expr) -> Result<(), String> {
    check_span(src, expr.span)?;
    match &expr.kind {
        ExprKind::Var(_)
        | ExprKind::Lit(_)
        | ExprKind::Section(_)
        | ExprKind::Hole
        | ExprKind::Range(..) => Ok(()),
        ExprKind::Lam { body, .. } | ExprKind::For { body, .. } => check_expr(src, body),
        ExprKind::If {
            cond,
            then_branch,
            else_branch,
        } => {
            check_expr(src, cond)?;
            check_expr(src, then_branch)?;
            check_expr(src, else_branch)
        }
        ExprKind::App { func, arg, .. } => {
            check_expr(src, func)?;
            check_expr(src, arg)
        }
        ExprKind::BinOp { lhs, rhs, .. } => {
            check_expr(src, lhs)?;
            check_expr(src, rhs)
        }
        ExprKind::Neg(inner)
        | ExprKind::At { value: inner, .. }
        | ExprKind::Annot { expr: inner, .. } => check_expr(src, inner),
        ExprKind::UserOp { op, lhs, rhs } => {
            check_span(src, op.span)?;
            check_expr(src, lhs)?;
            check_expr(src, rhs)
        }
        ExprKind::Field { base, field } => {
            check_span(src, field.span)?;
            check_expr(src, base)
        }
        ExprKind::Case { scrutinee, alts } => {
            check_expr(src, scrutinee)?;
            for alt in alts {
                check_span(src, alt.span)?;
                check_span(src, alt.pat.span())?;
                check_expr(src, &alt.body)?;
            }
            Ok(())
        }
        ExprKind::Index { base, indices } => {
            check_expr(src, base)?;
            indices.iter().try_for_each(|index| check_expr(src, index))
        }
        ExprKind::Tuple(items) | ExprKind::Table(items) => {
            items.iter().try_for_each(|item| check_expr(src, item))
        }
        ExprKind::Numbers(numbers) => numbers
            .iter()
            .try_for_each(|number| check_expr(src, &number.expr())),
        ExprKind::Block { stmts, result } => {
            for stmt in stmts {
                match stmt {
                    Stmt::Let(binding) => check_let(src, binding)?,
                    Stmt::Def(def) => check_def(src, def)?,
                    Stmt::TypeAlias(alias) => check_span(src, alias.span)?,
                }
            }
            check_expr(src, result)
        }
    }
}

/// Pieces of dx text: tokens, layout and the odd characters the front end must survive.
const PIECES: &[&str] = &[
    "def",
    "for",
    "if",
    "then",
    "else",
    "given",
    "import",
    "True",
    "False",
    "Fin",
    "x",
    "y",
    "f",
    "n",
    "i",
    "j",
    "xs",
    "Float",
    "Ix",
    "n_to_f",
    "é",
    "x'",
    "_",
    "0",
    "1",
    "1.",
    "2.5e3",
    "1e-3",
    "\"s\"",
    "\"é#\"",
    "+",
    "-",
    "*",
    "/",
    ".*",
    "**",
    "**.",
    ".**",
    "==",
    "!=",
    "<",
    ">",
    "<=",
    ">=",
    "~~",
    "&&",
    "||",
    "$",
    "@",
    "`mod`",
    "`",
    "=>",
    "->",
    "=",
    ":",
    "::",
    "|",
    ",",
    ".",
    "\\",
    "\\x.",
    "for i.",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ";",
    ":p",
    ":t",
    ":plot",
    ":q",
    "%time",
    "%bench \"b\"",
    "%passes core",
    "'",
    "#",
    "# c",
    "--",
    "-- c",
    "\n",
    "\n",
    "\n",
    "\n  ",
    "\n    ",
    "\n      ",
    "\n\n",
    "\n> out\n",
    "\n\t",
    "\t",
    "\r\n",
    "→",
    "\u{0}",
    "x[i]",
    "f(x, y)",
    "f(n=x, _)",
    "(+)",
    "(==)",
    "()",
    "x :: T",
    "a = 1; b = 2",
    "for _.",
    "[+1, -2]",
    "(a, b) =",
    "x =",
    "def f(x) =",
    "struct",
    "data",
    "enum",
    "interface",
    "instance",
    "case",
    "of",
    "Type",
    "Just(x)",
    "Nothing",
    "MkPair a b",
    "p.x",
    "t.0",
    ".x",
    "'a'",
    "'",
    "'\\n'",
    "<>",
    "./",
    "+>>",
    "(./)",
    "def (./)(x, y) =",
    "struct P =\n  x : Float\n  y : Float\n",
    "data S =\n  A(Float)\n  B\n",
    "enum C =\n  R\n  G\n",
    "case x of\n  A(y) -> y\n  B -> 0\n",
    "case x of A -> 1",
    "interface Sh(a)\n  area : (a) -> Float\n",
    "instance Sh(P)\n  def area(p) = p.x\n",
    "show x",
    "x | f a",
    "n -| 1",
    "(-|)",
    "(|)",
    "v *. 2.0",
    "def f(n|Ix, x: n=>Float) =",
    "def g(a,\n      b\n) = a",
    "\"n = \" <> show n",
    "mempty",
    "instance Show(P)\n  def show(p) = \"p\" <> show p.x\n",
    "instance Monoid(P)\n  mempty = P(0.0, 0.0)\n  def (<>)(p, q) = p\n",
    "given (a|Add|Sub)",
    "Maybe(Float)",
    "MyPair Int Float",
    "def V(n: Nat) -> Type =",
    "L : Type = Float",
    "(..i)",
    "(i<..)",
    "(i:n)=>(..i)=>Float",
    "inject j",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec((prop::sample::select(PIECES), any::<bool>()), 0..80).prop_map(|pieces| {
        let mut src = String::new();
        for (piece, spaced) in pieces {
            src.push_str(piece);
            if spaced {
                src.push(' ');
            }
        }
        src
    })
}

#[test]
fn random_bytes() {
    let strategy = prop::collection::vec(any::<u8>(), 0..300)
        .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    proptest::test_runner::TestRunner::new(config(1500))
        .run(&strategy, |src| check(src).map_err(TestCaseError::fail))
        .unwrap();
}

#[test]
fn random_unicode() {
    proptest::test_runner::TestRunner::new(config(1500))
        .run(&any::<String>(), |src| {
            check(src).map_err(TestCaseError::fail)
        })
        .unwrap();
}

#[test]
fn random_source_like_text() {
    let strategy = "[a-z0-9 \\n\\t()\\[\\]=.,:+*\\\\>'#%@$|_-]{0,200}";
    proptest::test_runner::TestRunner::new(config(1500))
        .run(&strategy, |src| check(src).map_err(TestCaseError::fail))
        .unwrap();
}

#[test]
fn random_token_sequences() {
    proptest::test_runner::TestRunner::new(config(3000))
        .run(&token_soup(), |src| check(src).map_err(TestCaseError::fail))
        .unwrap();
}

#[track_caller]
fn check_explicit(src: String) {
    if let Err(message) = check(src) {
        panic!("{message}");
    }
}

#[test]
fn deep_brackets() {
    check_explicit(format!(":p {}", "(".repeat(100_000)));
    check_explicit(format!(":p {}", "[".repeat(100_000)));
    check_explicit(format!(
        ":p {}1{}",
        "(".repeat(100_000),
        ")".repeat(100_000)
    ));
    check_explicit(format!(":p {}", ")".repeat(100_000)));
    check_explicit(format!("x : {}Float = 1", "(".repeat(100_000)));
    check_explicit(format!("{}x = 1", "(".repeat(100_000)));
    check_explicit(format!(":p x{}", "[i]".repeat(100_000)));
    check_explicit(format!(":p f{}", "(x)".repeat(100_000)));
}

#[test]
fn deep_heads() {
    check_explicit(format!(":p {}x", "\\x.".repeat(50_000)));
    check_explicit(format!(":p {}x", "for i. ".repeat(50_000)));
    check_explicit(format!(":p {}x", "if c then x else ".repeat(50_000)));
    check_explicit(format!(":p {}x", "f $ ".repeat(100_000)));
    check_explicit(format!(":p {}x", "-".repeat(100_000)));
    check_explicit(format!("x : {}Float = 1", "n=>".repeat(100_000)));
    check_explicit(format!("x : {}Float = 1", "n -> ".repeat(100_000)));
}

#[test]
fn long_chains() {
    check_explicit(format!(":p 1{}", "+1".repeat(200_000)));
    check_explicit(format!(":p 1{}", " * 1".repeat(200_000)));
    check_explicit(format!(":p f{}", " x".repeat(200_000)));
    check_explicit(format!(":p 1{}", " `mod` 2".repeat(100_000)));
    check_explicit(format!(":p [{}1]", "1, ".repeat(100_000)));
    check_explicit(format!(":p x # {}\n", "comment é ".repeat(100_000)));
}

#[test]
fn deep_indentation() {
    let mut nested = String::from("x =\n");
    for depth in 1..2_000 {
        nested.push_str(&" ".repeat(depth));
        nested.push_str("y =\n");
    }
    check_explicit(nested);
    let mut lambdas = String::from(":p\n");
    for depth in 1..2_000 {
        lambdas.push_str(&" ".repeat(depth));
        lambdas.push_str("f \\x.\n");
    }
    check_explicit(lambdas);
    let staircase: String = (0..5_000)
        .map(|depth| format!("{}x\n", " ".repeat(depth % 300)))
        .collect();
    check_explicit(staircase);
    let long_block: String = std::iter::once("def f(x) =\n".to_string())
        .chain((0..20_000).map(|_| "  x = x + 1\n".to_string()))
        .collect();
    check_explicit(long_block);
}

// ---------------------------------------------------------------------------------------------
// Valid programs: random expressions, printed with the fewest parentheses precedence allows and
// broken across lines in random places, must parse back to the same tree.

#[derive(Clone, Debug)]
enum Tree {
    Var(&'static str),
    Int(u32),
    Float(&'static str),
    Bin(&'static str, Box<Tree>, Box<Tree>),
    Neg(Box<Tree>),
    App(Box<Tree>, Box<Tree>),
    Call(Box<Tree>, Box<Tree>, Box<Tree>),
    Index(Box<Tree>, Box<Tree>),
    Lam(&'static str, Box<Tree>),
    For(&'static str, Box<Tree>),
    If(Box<Tree>, Box<Tree>, Box<Tree>),
    Tuple(Box<Tree>, Box<Tree>),
    Table(Vec<Tree>),
    Field(Box<Tree>, &'static str),
}

const LAM: u8 = 0;
const APP: u8 = 9;
const ATOM: u8 = 10;

/// Precedence level of a binary operator (higher binds tighter), and whether it is `$`.
fn level(op: &str) -> u8 {
    match op {
        "$" => 1,
        "||" => 2,
        "&&" => 3,
        "==" | "<" | "~~" | "<=>" => 4,
        "+" | "-" | "<>" => 6,
        _ => 7,
    }
}

/// Prints a tree: (text, precedence level, ends with an open lambda/`for`/`if` body).
fn print(tree: &Tree) -> (String, u8, bool) {
    // A child printed where it must bind at least `min`; `followed` if text comes after it.
    let child = |tree: &Tree, min: u8, followed: bool| -> String {
        let (text, child_level, open_end) = print(tree);
        if child_level < min || (followed && open_end) {
            format!("({text})")
        } else {
            text
        }
    };
    match tree {
        Tree::Var(name) => (name.to_string(), ATOM, false),
        Tree::Int(value) => (value.to_string(), ATOM, false),
        Tree::Float(text) => (text.to_string(), ATOM, false),
        Tree::Bin(op, lhs, rhs) => {
            let op_level = level(op);
            let (lhs_min, rhs_min) = match op_level {
                1 => (2, 1),
                4 => (5, 5),
                _ => (op_level, op_level + 1),
            };
            let lhs = child(lhs, lhs_min, true);
            let (rhs_text, rhs_level, rhs_open) = print(rhs);
            let (rhs, open_end) = if rhs_level < rhs_min {
                (format!("({rhs_text})"), false)
            } else {
                (rhs_text, rhs_open)
            };
            let op = if *op == "mod" { "`mod`" } else { op };
            (format!("{lhs} {op} {rhs}"), op_level, open_end)
        }
        Tree::Neg(inner) => {
            let (text, inner_level, open_end) = print(inner);
            let text = if inner_level < 8 {
                format!("({text})")
            } else {
                text
            };
            let space = if text.starts_with('-') { " " } else { "" };
            (format!("-{space}{text}"), 8, open_end && inner_level >= 8)
        }
        Tree::App(func, arg) => {
            let func = child(func, APP, true);
            let arg = child(arg, ATOM, false);
            (format!("{func} {arg}"), APP, false)
        }
        Tree::Call(func, first, second) => {
            let func = child(func, ATOM, true);
            let first = child(first, LAM, true);
            let second = child(second, LAM, false);
            (format!("{func}({first}, {second})"), ATOM, false)
        }
        Tree::Index(base, index) => {
            let base = child(base, ATOM, true);
            let index = child(index, LAM, false);
            (format!("{base}[{index}]"), ATOM, false)
        }
        Tree::Lam(param, body) => (format!("\\{param}. {}", child(body, LAM, false)), LAM, true),
        Tree::For(index, body) => (
            format!("for {index}. {}", child(body, LAM, false)),
            LAM,
            true,
        ),
        Tree::If(cond, then_branch, else_branch) => {
            let cond = child(cond, LAM, true);
            let then_branch = child(then_branch, LAM, true);
            let else_branch = child(else_branch, LAM, false);
            (
                format!("if {cond} then {then_branch} else {else_branch}"),
                LAM,
                true,
            )
        }
        Tree::Tuple(first, second) => {
            let first = child(first, LAM, true);
            (
                format!("({first}, {})", child(second, LAM, false)),
                ATOM,
                false,
            )
        }
        Tree::Table(items) => {
            let count = items.len();
            let items: Vec<String> = items
                .iter()
                .enumerate()
                .map(|(idx, item)| child(item, LAM, idx + 1 < count))
                .collect();
            (format!("[{}]", items.join(", ")), ATOM, false)
        }
        // A number before `.x` would read as a float: `(49).0`.
        Tree::Field(base, name) => match **base {
            Tree::Int(_) | Tree::Float(_) => (format!("({}).{name}", print(base).0), ATOM, false),
            _ => (format!("{}.{name}", child(base, ATOM, true)), ATOM, false),
        },
    }
}

/// The tree as the S-expression `sexp` gives for its parse.
fn tree_sexp(tree: &Tree) -> String {
    match tree {
        Tree::Var(name) => name.to_string(),
        Tree::Int(value) => value.to_string(),
        Tree::Float(text) => format!("{:?}", text.parse::<f64>().unwrap_or(0.0)),
        Tree::Bin("$", func, arg) | Tree::App(func, arg) => {
            format!("({} {})", tree_sexp(func), tree_sexp(arg))
        }
        Tree::Bin("mod", lhs, rhs) => format!("((mod {}) {})", tree_sexp(lhs), tree_sexp(rhs)),
        Tree::Bin(op, lhs, rhs) => format!("({op} {} {})", tree_sexp(lhs), tree_sexp(rhs)),
        Tree::Neg(inner) => format!("(neg {})", tree_sexp(inner)),
        Tree::Call(func, first, second) => {
            format!(
                "(({} {}) {})",
                tree_sexp(func),
                tree_sexp(first),
                tree_sexp(second)
            )
        }
        Tree::Index(base, index) => format!("(index {} {})", tree_sexp(base), tree_sexp(index)),
        Tree::Lam(param, body) => format!("(\\ {param} . {})", tree_sexp(body)),
        Tree::For(index, body) => format!("(for {index} . {})", tree_sexp(body)),
        Tree::If(cond, then_branch, else_branch) => format!(
            "(if {} {} {})",
            tree_sexp(cond),
            tree_sexp(then_branch),
            tree_sexp(else_branch)
        ),
        Tree::Tuple(first, second) => format!("(tuple {} {})", tree_sexp(first), tree_sexp(second)),
        Tree::Field(base, name) => format!("(. {} {name})", tree_sexp(base)),
        Tree::Table(items) => {
            let items: Vec<String> = items.iter().map(tree_sexp).collect();
            format!("[{}]", items.join(" "))
        }
    }
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = prop_oneof![
        prop::sample::select(vec!["x", "y", "f", "xs", "n_to_f"]).prop_map(Tree::Var),
        (0u32..100).prop_map(Tree::Int),
        prop::sample::select(vec!["1.0", "2.5", "1e-3", "3.", "2.5e3"]).prop_map(Tree::Float),
    ];
    leaf.prop_recursive(5, 48, 3, |inner| {
        let boxed = || inner.clone().prop_map(Box::new);
        let ops = vec![
            "$", "||", "&&", "==", "<", "~~", "+", "-", "*", "/", ".*", "**", "**.", ".**", "mod",
            "<>", "./", "<=>", "*.",
        ];
        prop_oneof![
            (prop::sample::select(ops), boxed(), boxed())
                .prop_map(|(op, lhs, rhs)| Tree::Bin(op, lhs, rhs)),
            boxed().prop_map(Tree::Neg),
            (boxed(), boxed()).prop_map(|(func, arg)| Tree::App(func, arg)),
            (boxed(), boxed(), boxed())
                .prop_map(|(func, first, second)| Tree::Call(func, first, second)),
            (boxed(), boxed()).prop_map(|(base, index)| Tree::Index(base, index)),
            boxed().prop_map(|body| Tree::Lam("x", body)),
            boxed().prop_map(|body| Tree::For("i", body)),
            (boxed(), boxed(), boxed()).prop_map(|(cond, then_branch, else_branch)| Tree::If(
                cond,
                then_branch,
                else_branch
            )),
            (boxed(), boxed()).prop_map(|(first, second)| Tree::Tuple(first, second)),
            prop::collection::vec(inner.clone(), 0..4).prop_map(Tree::Table),
            (boxed(), prop::sample::select(vec!["x", "0", "pos"]))
                .prop_map(|(base, name)| Tree::Field(base, name)),
        ]
    })
}

/// Replaces some of the spaces of `text` by line breaks with ever deeper indentation (from
/// `indent` on), so that every new line continues the one before.
fn break_lines(text: &str, breaks: &[bool], indent: usize) -> String {
    let mut out = String::new();
    let mut depth = indent;
    for (idx, piece) in text.split(' ').enumerate() {
        if idx > 0 {
            if breaks
                .get(idx % breaks.len().max(1))
                .copied()
                .unwrap_or(false)
            {
                out.push('\n');
                out.push_str(&" ".repeat(depth));
                depth += 1;
            } else {
                out.push(' ');
            }
        }
        out.push_str(piece);
    }
    out
}

fn value_of(src: &str) -> Result<String, String> {
    let chunks = split_chunks(src);
    let [chunk] = chunks.as_slice() else {
        return Err(format!("expected one chunk, got {}", chunks.len()));
    };
    let block = match &chunk.kind {
        ChunkKind::Code(Ok(block)) => block,
        ChunkKind::Code(Err(err)) => return Err(format!("{err:?}")),
        _ => return Err("not code".to_string()),
    };
    match &block.decl {
        Decl::Command { expr, .. } => Ok(sexp(expr)),
        Decl::Let(binding) => Ok(sexp(&binding.value)),
        Decl::Def(def) => match &def.body.kind {
            ExprKind::Block { stmts, .. } => match stmts.as_slice() {
                [Stmt::Let(binding)] => Ok(sexp(&binding.value)),
                _ => Err("unexpected block".to_string()),
            },
            _ => Err("unexpected body".to_string()),
        },
        Decl::Import(_)
        | Decl::CustomLinearization { .. }
        | Decl::Data(_)
        | Decl::Interface(_)
        | Decl::Instance(_)
        | Decl::TypeAlias(_) => Err("not a value".to_string()),
    }
}

#[test]
fn valid_programs_parse_back() {
    let strategy = (tree(), prop::collection::vec(any::<bool>(), 1..12));
    proptest::test_runner::TestRunner::new(config(1000))
        .run(&strategy, |(tree, breaks)| {
            let (text, _, _) = print(&tree);
            let expected = tree_sexp(&tree);
            let programs = [
                format!(":p {text}"),
                format!("x =\n  {}\n", break_lines(&text, &breaks, 3)),
                format!(
                    "def f(x) =\n  y = {}\n  y\n",
                    break_lines(&text, &breaks, 4)
                ),
            ];
            for program in programs {
                let parsed = value_of(&program)
                    .map_err(|err| TestCaseError::fail(format!("{err}\nin\n{program}")))?;
                prop_assert_eq!(&parsed, &expected, "in\n{}", program);
            }
            Ok(())
        })
        .unwrap();
}
