//! Tests of the front end: chunk splitting, layout, the grammar, spans, errors, entry status.
//!
//! Expressions are compared as S-expressions (`sexp`), so a test reads as data.

use super::ast::*;
use super::sexp::{decl_sexp, sexp, ty_sexp};
use super::*;

// ---------------------------------------------------------------------------------------------
// Helpers.

#[track_caller]
fn expr(src: &str) -> String {
    match parse_expr(src) {
        Ok(expr) => sexp(&expr),
        Err(err) => panic!("parse error in {src:?}: {err:?}"),
    }
}

#[track_caller]
fn code(src: &str) -> CodeBlock {
    match parse_code(src, Span::new(0, src.len())) {
        Ok(block) => block,
        Err(err) => panic!("parse error in {src:?}: {err:?}"),
    }
}

#[track_caller]
fn decl(src: &str) -> String {
    decl_sexp(&code(src).decl)
}

#[track_caller]
fn code_err(src: &str) -> ParseError {
    match parse_code(src, Span::new(0, src.len())) {
        Ok(block) => panic!(
            "expected an error in {src:?}, got {}",
            decl_sexp(&block.decl)
        ),
        Err(err) => err,
    }
}

#[track_caller]
fn expr_err(src: &str) -> ParseError {
    match parse_expr(src) {
        Ok(expr) => panic!("expected an error in {src:?}, got {}", sexp(&expr)),
        Err(err) => err,
    }
}

fn text(src: &str, span: Span) -> &str {
    &src[span.range()]
}

fn print_expr(block: &CodeBlock) -> &Expr {
    match &block.decl {
        Decl::Command { expr, .. } => expr,
        other => panic!("expected a command, got {}", decl_sexp(other)),
    }
}

// ---------------------------------------------------------------------------------------------
// Expressions.

#[test]
fn literals() {
    assert_eq!(expr("3"), "3");
    assert_eq!(
        expr("[1.0, 1., 1e-3, 2.5e3, 1.e2, 7E+1]"),
        "[1.0 1.0 0.001 2500.0 100.0 70.0]"
    );
    assert_eq!(expr("[True, False]"), "[True False]");
    assert_eq!(expr("[]"), "[]");
    assert_eq!(expr("\"a \\\"b\\\" é\""), "\"a \\\"b\\\" é\"");
    // `1.` followed by `,`, `]`, `)` or a space is a float.
    assert_eq!(expr("(1., f 2.)"), "(tuple 1.0 (f 2.0))");
    assert_eq!(expr("-1"), "(neg 1)");
    assert_eq!(expr("- 2.0 * x"), "(* (neg 2.0) x)");
}

#[test]
fn identifiers() {
    assert_eq!(
        expr("x' + x_1 + _y + n_to_f"),
        "(+ (+ (+ x' x_1) _y) n_to_f)"
    );
    assert_eq!(expr("αβ + x₁"), "(+ αβ x₁)");
    // Keywords are not identifiers, but may start one.
    assert_eq!(
        expr("iff + format + elsewhere"),
        "(+ (+ iff format) elsewhere)"
    );
}

#[test]
fn operator_precedence() {
    assert_eq!(expr("1 + 2 * 3 - 4 / 5"), "(- (+ 1 (* 2 3)) (/ 4 5))");
    assert_eq!(
        expr("a .* b ** c **. d .** e"),
        "(.** (**. (** (.* a b) c) d) e)"
    );
    assert_eq!(expr("a || b && c == d + e"), "(|| a (&& b (== c (+ d e))))");
    assert_eq!(expr("a != b"), "(!= a b)");
    assert_eq!(
        expr("a <= b && a >= c && a < d && a > e"),
        "(&& (&& (&& (<= a b) (>= a c)) (< a d)) (> a e))"
    );
    assert_eq!(expr("xs ~~ ys"), "(~~ xs ys)");
    assert_eq!(expr("-a * b"), "(* (neg a) b)");
    assert_eq!(expr("a * -b"), "(* a (neg b))");
    assert_eq!(expr("-f x"), "(neg (f x))");
    assert_eq!(expr("a - -b"), "(- a (neg b))");
    assert_eq!(expr("f x - 1"), "(- (f x) 1)");
}

#[test]
fn comparisons_do_not_chain() {
    let err = expr_err("a < b < c");
    assert!(err.message.contains("do not chain"), "{err:?}");
    assert_eq!(err.span, Span::new(6, 7));
    assert_eq!(expr("(a < b) < c"), "(< (< a b) c)");
    assert_eq!(expr("a == (b < c)"), "(== a (< b c))");
    assert_eq!(expr("a < b && b < c"), "(&& (< a b) (< b c))");
}

#[test]
fn at_conversion() {
    assert_eq!(
        expr("ordinal i + 1 @ Fin 5"),
        "(@ (+ (ordinal i) 1) (Fin 5))"
    );
    assert_eq!(expr("(3 @ _)"), "(@ 3 _)");
    assert_eq!(expr("x[7 @ Fin 4]"), "(index x (@ 7 (Fin 4)))");
    assert_eq!(expr("i @ n == j"), "(== (@ i n) j)");
    assert_eq!(expr("i @ (Fin (n + 1))"), "(@ i (Fin (+ n 1)))");
}

#[test]
fn application() {
    assert_eq!(expr("f x y"), "((f x) y)");
    assert_eq!(expr("f(x, y)"), "((f x) y)");
    assert_eq!(expr("f(x, y) z"), "(((f x) y) z)");
    assert_eq!(expr("f (x, y)"), "(f (tuple x y))");
    assert_eq!(expr("f(x)(y)"), "((f x) y)");
    assert_eq!(expr("split_key(n=2, key)"), "((split_key n=2) key)");
    assert_eq!(expr("f(n = g x, k == 1)"), "((f n=(g x)) (== k 1))");
    assert_eq!(expr("f $ g $ h x"), "(f (g (h x)))");
    assert_eq!(expr("f $ x + 1"), "(f (+ x 1))");
    assert_eq!(expr("x `mod` 5"), "((mod x) 5)");
    assert_eq!(expr("a + x `mod` 5 * 2"), "(+ a (* ((mod x) 5) 2))");
    assert_eq!(expr("iota (Fin 5)"), "(iota (Fin 5))");
    assert_eq!(expr("sum for i. x[i]"), "(sum (for i . (index x i)))");
    assert_eq!(
        expr("fold 0.0 \\i c. c + 1.0"),
        "((fold 0.0) (\\ i c . (+ c 1.0)))"
    );
    assert_eq!(
        expr("fold(0.0, \\i:(Fin 5) c. c + n_to_f (ordinal i))"),
        "((fold 0.0) (\\ i:(Fin 5) c . (+ c (n_to_f (ordinal i)))))"
    );
    assert_eq!(expr("select(c, a, b)"), "(((select c) a) b)");
}

#[test]
fn postfix_indexing() {
    assert_eq!(expr("x[i]"), "(index x i)");
    assert_eq!(expr("x[i, j]"), "(index x i j)");
    assert_eq!(expr("x[i][j]"), "(index (index x i) j)");
    assert_eq!(expr("f x[i]"), "(f (index x i))");
    assert_eq!(expr("f(x)[i]"), "(index (f x) i)");
    assert_eq!(expr("x [i]"), "(x [i])");
    assert_eq!(expr("-x[i] * 2"), "(* (neg (index x i)) 2)");
}

#[test]
fn lambdas() {
    assert_eq!(expr("\\x. x"), "(\\ x . x)");
    assert_eq!(expr("\\x y. x + y * 2"), "(\\ x y . (+ x (* y 2)))");
    assert_eq!(expr("\\x:Float. x"), "(\\ x:Float . x)");
    assert_eq!(expr("\\x:Float y. x"), "(\\ x:Float y . x)");
    assert_eq!(expr("\\x:(n=>Float). x"), "(\\ x:(=> n Float) . x)");
    assert_eq!(expr("\\(a, b). a"), "(\\ (ptuple a b) . a)");
    assert_eq!(expr("\\_. 1"), "(\\ _ . 1)");
    assert_eq!(expr("\\x.\\y.x"), "(\\ x . (\\ y . x))");
    assert_eq!(expr("(\\x. x) 1"), "((\\ x . x) 1)");
    assert_eq!(expr("\\x. 1."), "(\\ x . 1.0)");
    assert_eq!(expr("f $ \\x. x + 1"), "(f (\\ x . (+ x 1)))");
    assert_eq!(expr("1 + \\x. x + 1"), "(+ 1 (\\ x . (+ x 1)))");
}

#[test]
fn for_expressions() {
    assert_eq!(expr("for i. x[i]"), "(for i . (index x i))");
    assert_eq!(expr("for i:(Fin n). 1"), "(for i:(Fin n) . 1)");
    assert_eq!(expr("for i j. m[j, i]"), "(for i j . (index m j i))");
    assert_eq!(expr("for i:n j:m. 1"), "(for i:n j:m . 1)");
    assert_eq!(expr("for i:n. 1"), "(for i:n . 1)");
    assert_eq!(
        expr("for i:(Fin 2) j:(Fin 3). n_to_f (ordinal i * 3 + ordinal j)"),
        "(for i:(Fin 2) j:(Fin 3) . (n_to_f (+ (* (ordinal i) 3) (ordinal j))))"
    );
}

#[test]
fn if_expressions() {
    assert_eq!(expr("if c then a else b"), "(if c a b)");
    assert_eq!(
        expr("if a < b then a + 1 else b + 1"),
        "(if (< a b) (+ a 1) (+ b 1))"
    );
    assert_eq!(
        expr("if a then b else if c then d else e"),
        "(if a b (if c d e))"
    );
    assert_eq!(expr("f if c then a else b"), "(f (if c a b))");
}

#[test]
fn tuples_tables_annotations() {
    assert_eq!(expr("(a, b)"), "(tuple a b)");
    assert_eq!(expr("(a, b, c)"), "(tuple a b c)");
    assert_eq!(expr("((a))"), "a");
    assert_eq!(expr("[1., 2., 3.]"), "[1.0 2.0 3.0]");
    assert_eq!(expr("[[1, 2], [3, 4]]"), "[[1 2] [3 4]]");
    assert_eq!(expr("(e :: Float)"), "(:: e Float)");
    assert_eq!(
        expr("(x + 1 :: (Fin 3)=>Int)"),
        "(:: (+ x 1) (=> (Fin 3) Int))"
    );
}

// ---------------------------------------------------------------------------------------------
// Types.

fn ty_of(src: &str) -> String {
    match &code(src).decl {
        Decl::Let(LetBinding { ty: Some(ty), .. }) => ty_sexp(ty),
        other => panic!("expected an annotated binding, got {}", decl_sexp(other)),
    }
}

#[test]
fn types() {
    for name in [
        "Float", "Float32", "Float64", "Int", "Int32", "Int64", "Nat", "Word64", "Bool", "Key",
        "n", "Height",
    ] {
        assert_eq!(ty_of(&format!("x : {name} = y")), name);
    }
    assert_eq!(ty_of("x : Fin 4 = y"), "(Fin 4)");
    assert_eq!(ty_of("x : Fin n = y"), "(Fin n)");
    assert_eq!(ty_of("x : Fin (n + 1) = y"), "(Fin (+ n 1))");
    assert_eq!(ty_of("x : Fin (size m) = y"), "(Fin (size m))");
    assert_eq!(ty_of("x : n=>m=>Float = y"), "(=> n (=> m Float))");
    assert_eq!(
        ty_of("x : (Fin 3)=>Fin 4=>Float = y"),
        "(=> (Fin 3) (=> (Fin 4) Float))"
    );
    assert_eq!(ty_of("x : Fin 3 => Float = y"), "(=> (Fin 3) Float)");
    assert_eq!(ty_of("x : (Float, Int) = y"), "(ttuple Float Int)");
    assert_eq!(ty_of("x : (n, m)=>Float = y"), "(=> (ttuple n m) Float)");
    assert_eq!(ty_of("x : a -> b = y"), "(-> (a) b)");
    assert_eq!(ty_of("x : a -> b -> c = y"), "(-> (a) (-> (b) c))");
    assert_eq!(ty_of("x : (a, b) -> c = y"), "(-> (a b) c)");
    assert_eq!(ty_of("x : ((a, b)) -> c = y"), "(-> ((ttuple a b)) c)");
    assert_eq!(
        ty_of("x : n=>Float -> Float = y"),
        "(-> ((=> n Float)) Float)"
    );
    assert_eq!(ty_of("x : _ = y"), "_");
    assert_eq!(ty_of("x : n=>_ = y"), "(=> n _)");
}

#[test]
fn effect_rows() {
    assert_eq!(
        ty_of("x : Ref h Float -> {State h} () = y"),
        "(-> {State h|} ((Ref h Float)) (ttuple ))"
    );
    assert_eq!(ty_of("x : (a) -> {|eff} b = y"), "(-> {|eff} (a) b)");
    assert_eq!(
        ty_of("x : a -> {Accum h, IO|e} b = y"),
        "(-> {Accum h,IO|e} (a) b)"
    );
    assert_eq!(ty_of("x : a -> {} b = y"), "(-> {|} (a) b)");
    // Dex names the parameters of a function type; the names are not used.
    assert_eq!(
        ty_of("x : (x: Float) -> {State h} Float = y"),
        "(-> {State h|} (Float) Float)"
    );
    assert_eq!(
        ty_of("x : (x: Float, n: Nat) -> Float = y"),
        "(-> (Float Nat) Float)"
    );
    assert_eq!(
        decl("def f(r: Ref h Float) -> {State h} () = r := 1.0"),
        "(def f(r:(Ref h Float)) -> {State h|} (ttuple ) (:= r 1.0))"
    );
    // A row is one line of names: braces around anything else are not one.
    code_err("x : a -> {State (h)} b = y");
}

// ---------------------------------------------------------------------------------------------
// Declarations.

#[test]
fn definitions() {
    assert_eq!(
        decl("def dot(a: n=>Float, b: n=>Float) -> Float given (n|Ix) =\n  sum for i. a[i] * b[i]\n"),
        "(def dot(a:(=> n Float), b:(=> n Float)) -> Float given (n|Ix) (sum (for i . (* (index a i) (index b i)))))"
    );
    assert_eq!(decl("def f(x, y) = x + y"), "(def f(x, y) (+ x y))");
    assert_eq!(
        decl("def f(x: Float) -> Float = x"),
        "(def f(x:Float) -> Float x)"
    );
    assert_eq!(decl("def f() = 1"), "(def f() 1)");
    assert_eq!(
        decl("def f(x) given (n, m|Ix) = x"),
        "(def f(x) given (n, m|Ix) x)"
    );
    assert_eq!(
        decl("def f(n: Nat) -> (Fin n)=>Float = y"),
        "(def f(n:Nat) -> (=> (Fin n) Float) y)"
    );
    assert_eq!(
        decl("def f((a, b): (Float, Float)) = a"),
        "(def f((ptuple a b):(ttuple Float Float)) a)"
    );
    assert_eq!(
        decl("def apply(f: Float -> Float, x: Float) = f x"),
        "(def apply(f:(-> (Float) Float), x:Float) (f x))"
    );
}

#[test]
fn bindings_and_commands() {
    assert_eq!(decl("x = 1"), "(let x 1)");
    assert_eq!(decl("x : Float = 1"), "(let x:Float 1)");
    assert_eq!(decl("(a, b) = f x"), "(let (ptuple a b) (f x))");
    assert_eq!(
        decl("[k1, k2] = split_key key"),
        "(let [k1 k2] (split_key key))"
    );
    assert_eq!(decl("Height = Fin 3"), "(let Height (Fin 3))");
    assert_eq!(decl(":p x"), "(Print x)");
    assert_eq!(decl(":t x"), "(Type x)");
    assert_eq!(decl(":plot xs"), "(Plot xs)");
    assert_eq!(decl(":plotgrad f 0. 1."), "(PlotGrad ((f 0.0) 1.0))");
    assert_eq!(decl(":table xs"), "(Table xs)");
    assert_eq!(decl(":stages f x"), "(Stages (f x))");
    assert_eq!(decl("x + 1"), "(Print bare (+ x 1))");
    assert_eq!(decl("x == 1"), "(Print bare (== x 1))");
    assert_eq!(decl("(a, b)"), "(Print bare (tuple a b))");
    assert_eq!(decl("import plot"), "(import plot)");
}

#[test]
fn pragmas() {
    let block =
        code("%time\n%passes parse typed core\n%bench \"my bench\"\n%strict\n:p 1 # done\n");
    let stages = |pragma: &Pragma| match pragma {
        Pragma::Passes(stages) => stages
            .iter()
            .map(|stage| stage.name.clone())
            .collect::<Vec<_>>(),
        _ => Vec::new(),
    };
    assert_eq!(block.pragmas.len(), 4);
    assert_eq!(block.pragmas[0], Pragma::Time);
    assert_eq!(stages(&block.pragmas[1]), ["parse", "typed", "core"]);
    assert_eq!(block.pragmas[2], Pragma::Bench("my bench".to_string()));
    assert_eq!(block.pragmas[3], Pragma::Strict);
    assert_eq!(decl_sexp(&block.decl), "(Print 1)");
    assert_eq!(code_err("%bogus\n:p 1").message, "unknown pragma '%bogus'");
    assert_eq!(
        code_err("%bench name\n:p 1").message,
        "expected a quoted benchmark name"
    );
    assert_eq!(code_err("%time 3\n:p 1").message, "unexpected '3'");
    let err = code_err("%time\n");
    assert_eq!(err.message, "expected a block after the pragma");
    assert!(err.is_incomplete());
}

// ---------------------------------------------------------------------------------------------
// Layout.

#[test]
fn layout_grad_lambda_block_inside_parens() {
    let src =
        ":p grad (\\p.\n    (a, b) = p\n    sum for i. a[i] * a[i] * b[i]) ([1., 2.], [3., 4.])\n";
    assert_eq!(
        decl(src),
        "(Print ((grad (\\ p . (block (let (ptuple a b) p) (sum (for i . (* (* (index a i) (index a i)) (index b i))))))) (tuple [1.0 2.0] [3.0 4.0])))"
    );
}

#[test]
fn layout_command_with_let_block() {
    let src = ":p\n  (a, b) = (2.0, 3)\n  a * i_to_f b\n";
    assert_eq!(
        decl(src),
        "(Print (block (let (ptuple a b) (tuple 2.0 3)) (* a (i_to_f b))))"
    );
    // A block whose only item is an expression is that expression.
    assert_eq!(decl(":p\n  1 + 2\n"), "(Print (+ 1 2))");
}

#[test]
fn layout_def_with_let_block() {
    let src = "def f(x: Float) -> Float =\n  y = x * x\n  y + 1.0\n";
    assert_eq!(
        decl(src),
        "(def f(x:Float) -> Float (block (let y (* x x)) (+ y 1.0)))"
    );
    let src =
        "def f(x) =\n  y : Float = x\n  def g(z) = z + y\n  [k1, k2] = split_key key\n  g y\n";
    assert_eq!(
        decl(src),
        "(def f(x) (block (let y:Float x) (def g(z) (+ z y)) (let [k1 k2] (split_key key)) (g y)))"
    );
}

#[test]
fn layout_continuation_lines() {
    assert_eq!(decl("x = f 1\n  2\n"), "(let x ((f 1) 2))");
    assert_eq!(decl("def f(x) =\n  x\n    + 1"), "(def f(x) (+ x 1))");
    assert_eq!(
        decl(":p\n  x = 1\n   + 2\n  x"),
        "(Print (block (let x (+ 1 2)) x))"
    );
    assert_eq!(decl("x = f(\n  1,\n2)"), "(let x ((f 1) 2))");
    assert_eq!(decl("x = [1,\n     2,\n     3]"), "(let x [1 2 3])");
    assert_eq!(decl("def f(x) = x +\n  1"), "(def f(x) (+ x 1))");
    // A line ending in an operator is continued by the next line at the block's column (Dex's
    // `(xs[j] - m[i]) *` + the other factor below it).
    assert_eq!(
        decl(":p\n  x = 1\n  2 *\n  x\n  x"),
        "(Print (block (let x 1) (let _ (* 2 x)) x))"
    );
    assert_eq!(
        decl("y = (sum for j.\n       (a + 1.0) *\n       (a - 1.0))"),
        "(let y (sum (for j . (* (+ a 1.0) (- a 1.0)))))"
    );
}

#[test]
fn layout_if_over_lines() {
    assert_eq!(decl("x = if c\n  then a\n  else b"), "(let x (if c a b))");
    assert_eq!(
        decl(":p\n  if c\n  then a\n  else b\n"),
        "(Print (if c a b))"
    );
    assert_eq!(
        decl("x = if c then\n    1\n  else 2\n"),
        "(let x (if c 1 2))"
    );
    assert_eq!(
        decl("x = if c\n  then\n    y = 1\n    y\n  else\n    z = 2\n    z\n"),
        "(let x (if c (block (let y 1) y) (block (let z 2) z)))"
    );
    // An `else` closes the block opened after its `then`: at the block's column, dedented, or
    // at the end of the block's last line.
    assert_eq!(
        decl("x = if c then\n  y = 1\n  y\n  else 2\n"),
        "(let x (if c (block (let y 1) y) 2))"
    );
    assert_eq!(
        decl("x = if c then\n    y = 1\n    y else 2\n"),
        "(let x (if c (block (let y 1) y) 2))"
    );
    assert_eq!(
        decl("x = if c then\n    if d then 1 else 2\n  else\n    3\n"),
        "(let x (if c (if d 1 2) 3))"
    );
    assert_eq!(
        decl("x = if c then\n    if d\n      then 1\n      else 2\n  else 3\n"),
        "(let x (if c (if d 1 2) 3))"
    );
    assert_eq!(
        decl("x = if f \\y.\n    y then 1 else 2\n"),
        "(let x (if (f (\\ y . y)) 1 2))"
    );
}

#[test]
fn layout_nested_for_blocks() {
    let src = "x = for i.\n  y = i\n  for j.\n    z = j\n    z + y\n";
    assert_eq!(
        decl(src),
        "(let x (for i . (block (let y i) (for j . (block (let z j) (+ z y))))))"
    );
    let src = ":p for i.\n      for j.\n        x[i, j]\n";
    assert_eq!(decl(src), "(Print (for i . (for j . (index x i j))))");
}

#[test]
fn layout_comments_and_blank_lines_inside_blocks() {
    let src = "def f(x) = # comment\n  -- another\n  y = x # trailing\n\n# column-0 comment\n  y -- done\n";
    assert_eq!(decl(src), "(def f(x) (block (let y x) y))");
    assert_eq!(decl(":p x -- comment\n  + 1 # more\n"), "(Print (+ x 1))");
    assert_eq!(
        decl(":p \"a # not a comment\" # comment é\n"),
        "(Print \"a # not a comment\")"
    );
}

#[test]
fn layout_comma_closes_blocks() {
    let src = ":p (\\x.\n    y = x\n    y\n  , 3)";
    assert_eq!(decl(src), "(Print (tuple (\\ x . (block (let y x) y)) 3))");
    let src = ":p fold(0.0, \\i c.\n    d = c + 1.0\n    d\n  )";
    assert_eq!(
        decl(src),
        "(Print ((fold 0.0) (\\ i c . (block (let d (+ c 1.0)) d))))"
    );
}

#[test]
fn tabs_count_to_the_next_multiple_of_eight() {
    assert_eq!(
        decl("def f(x) =\n\ty = x\n        y\n"),
        "(def f(x) (block (let y x) y))"
    );
}

// ---------------------------------------------------------------------------------------------
// Spans.

#[test]
fn expression_spans() {
    let src = "f x * y[i] + (a + b)";
    let parsed = parse_expr(src).unwrap();
    assert_eq!(text(src, parsed.span), src);
    let ExprKind::BinOp { lhs, rhs, .. } = &parsed.kind else {
        panic!()
    };
    assert_eq!(text(src, lhs.span), "f x * y[i]");
    assert_eq!(text(src, rhs.span), "a + b");
    let ExprKind::BinOp {
        lhs: product_lhs,
        rhs: product_rhs,
        ..
    } = &lhs.kind
    else {
        panic!()
    };
    assert_eq!(text(src, product_lhs.span), "f x");
    assert_eq!(text(src, product_rhs.span), "y[i]");
    let ExprKind::App { func, arg, .. } = &product_lhs.kind else {
        panic!()
    };
    assert_eq!(text(src, func.span), "f");
    assert_eq!(text(src, arg.span), "x");
    let ExprKind::Index { base, indices } = &product_rhs.kind else {
        panic!()
    };
    assert_eq!(text(src, base.span), "y");
    assert_eq!(text(src, indices[0].span), "i");

    let src = "(a + b) * c";
    let parsed = parse_expr(src).unwrap();
    assert_eq!(text(src, parsed.span), src);

    let src = "f(x, y)";
    let parsed = parse_expr(src).unwrap();
    assert_eq!(text(src, parsed.span), "f(x, y)");
    let ExprKind::App { func, arg, .. } = &parsed.kind else {
        panic!()
    };
    assert_eq!(text(src, func.span), "f(x");
    assert_eq!(text(src, arg.span), "y");

    let src = "\\x. for i. if c then -x else x @ Fin 3";
    let parsed = parse_expr(src).unwrap();
    assert_eq!(text(src, parsed.span), src);
    let ExprKind::Lam { params, body } = &parsed.kind else {
        panic!()
    };
    assert_eq!(text(src, params[0].span), "x");
    assert_eq!(text(src, body.span), "for i. if c then -x else x @ Fin 3");
    let ExprKind::For { binders, body } = &body.kind else {
        panic!()
    };
    assert_eq!(text(src, binders[0].name.span), "i");
    let ExprKind::If {
        then_branch,
        else_branch,
        ..
    } = &body.kind
    else {
        panic!()
    };
    assert_eq!(text(src, then_branch.span), "-x");
    assert_eq!(text(src, else_branch.span), "x @ Fin 3");
    let ExprKind::At { ty, .. } = &else_branch.kind else {
        panic!()
    };
    assert_eq!(text(src, ty.span), "Fin 3");

    let src = "x `mod` 5";
    let parsed = parse_expr(src).unwrap();
    let ExprKind::App { func, .. } = &parsed.kind else {
        panic!()
    };
    let ExprKind::App { func: name, .. } = &func.kind else {
        panic!()
    };
    assert_eq!(text(src, name.span), "`mod`");
}

#[test]
fn spans_are_absolute_and_survive_unicode_and_markers() {
    let src = "' prose é\n\n-- ünïcode comment\ndef f(x: Float) -> Float = # é\n  y = x * x # ü\n  y + 1.0\n> 3.\n:p f 2.0\n";
    let chunks = split_chunks(src);
    let defs: Vec<&CodeBlock> = chunks
        .iter()
        .filter_map(|chunk| match &chunk.kind {
            ChunkKind::Code(Ok(block)) => Some(block),
            _ => None,
        })
        .collect();
    assert_eq!(defs.len(), 2);
    let Decl::Def(def) = &defs[0].decl else {
        panic!()
    };
    assert_eq!(
        text(src, def.span),
        "def f(x: Float) -> Float = # é\n  y = x * x # ü\n  y + 1.0"
    );
    assert_eq!(text(src, def.name.span), "f");
    assert_eq!(text(src, def.params[0].span), "x: Float");
    assert_eq!(text(src, def.ret.as_ref().unwrap().span), "Float");
    let ExprKind::Block { stmts, result } = &def.body.kind else {
        panic!()
    };
    assert_eq!(text(src, def.body.span), "y = x * x # ü\n  y + 1.0");
    let Stmt::Let(binding) = &stmts[0] else {
        panic!()
    };
    assert_eq!(text(src, binding.span), "y = x * x");
    assert_eq!(text(src, binding.value.span), "x * x");
    assert_eq!(text(src, result.span), "y + 1.0");
    assert_eq!(text(src, print_expr(defs[1]).span), "f 2.0");
    assert_eq!(text(src, defs[1].span), ":p f 2.0");
}

// ---------------------------------------------------------------------------------------------
// Chunks.

const SMOKE: &str = r#"'# Smoke test

x = for i:(Fin 4). n_to_f (ordinal i)
:p x
> [0., 1., 2., 3.]

:t x
> ((Fin 4) => Float32)

def dot(a: n=>Float, b: n=>Float) -> Float given (n|Ix) =
  sum for i. a[i] * b[i]

:p dot x x
> 14.

m = for i:(Fin 2) j:(Fin 3). n_to_f (ordinal i * 3 + ordinal j)
:p for j i. m[i, j]
> [[0., 3.], [1., 4.], [2., 5.]]

:p
  (a, b) = (2.0, 3)
  a * i_to_f b
> 6.

:p fold(0.0, \i:(Fin 5) c. c + n_to_f (ordinal i))
> 10.

:p 1.0 / 3.0
> 0.3333333

:p x[7 @ Fin 4]
> 0.
"#;

fn without_output(src: &str) -> String {
    src.split_inclusive('\n')
        .filter(|line| !line.starts_with('>'))
        .collect()
}

#[track_caller]
fn assert_concatenation(src: &str) {
    let chunks = split_chunks(src);
    let joined: String = chunks.iter().map(|chunk| text(src, chunk.span)).collect();
    assert_eq!(joined, without_output(src));
}

fn kinds(src: &str) -> Vec<String> {
    split_chunks(src)
        .iter()
        .map(|chunk| match &chunk.kind {
            ChunkKind::Prose => "prose".to_string(),
            ChunkKind::Comment => "comment".to_string(),
            ChunkKind::Blank => "blank".to_string(),
            ChunkKind::Code(Ok(block)) => decl_sexp(&block.decl),
            ChunkKind::Code(Err(err)) => format!("error: {}", err.message),
        })
        .collect()
}

#[test]
fn smoke_file() {
    assert_eq!(
        kinds(SMOKE),
        [
            "prose",
            "blank",
            "(let x (for i:(Fin 4) . (n_to_f (ordinal i))))",
            "(Print x)",
            "blank",
            "(Type x)",
            "blank",
            "(def dot(a:(=> n Float), b:(=> n Float)) -> Float given (n|Ix) (sum (for i . (* (index a i) (index b i)))))",
            "blank",
            "(Print ((dot x) x))",
            "blank",
            "(let m (for i:(Fin 2) j:(Fin 3) . (n_to_f (+ (* (ordinal i) 3) (ordinal j)))))",
            "(Print (for j i . (index m i j)))",
            "blank",
            "(Print (block (let (ptuple a b) (tuple 2.0 3)) (* a (i_to_f b))))",
            "blank",
            "(Print ((fold 0.0) (\\ i:(Fin 5) c . (+ c (n_to_f (ordinal i))))))",
            "blank",
            "(Print (/ 1.0 3.0))",
            "blank",
            "(Print (index x (@ 7 (Fin 4))))",
        ]
    );
    assert_concatenation(SMOKE);
    // Chunk spans cover whole lines.
    let chunks = split_chunks(SMOKE);
    assert_eq!(text(SMOKE, chunks[0].span), "'# Smoke test\n");
    assert_eq!(text(SMOKE, chunks[3].span), ":p x\n");
}

#[test]
fn chunk_kinds() {
    let src = "' Some *prose*\nstill prose\n> a quote in prose\n\n# comment\n-- comment\n\n\n%time\n%passes core\nx = 1\n  + 2\n> 3\n> 4\ny = 2";
    assert_eq!(
        kinds(src),
        [
            "prose",
            "blank",
            "comment",
            "blank",
            "(let x (+ 1 2))",
            "(let y 2)"
        ]
    );
    assert_concatenation(src);
    let chunks = split_chunks(src);
    assert_eq!(
        text(src, chunks[4].span),
        "%time\n%passes core\nx = 1\n  + 2\n"
    );
    let ChunkKind::Code(Ok(block)) = &chunks[4].kind else {
        panic!()
    };
    assert_eq!(block.pragmas.len(), 2);
    assert_eq!(text(src, chunks[5].span), "y = 2");
}

#[test]
fn chunks_output_lines_inside_prose_are_dropped() {
    let src = "' a\n> b\nc\n\nx = 1\n";
    assert_eq!(kinds(src), ["prose", "prose", "blank", "(let x 1)"]);
    assert_concatenation(src);
}

#[test]
fn chunks_a_line_of_spaces_inside_prose_is_prose() {
    // Dex ends prose at two line breaks in a row; a line of spaces between paragraphs of one
    // prose block keeps the block going (the code line after it would otherwise be prose's
    // end and a parse error).
    let src = "' a\n   \nb c\n\nx = 1\n";
    assert_eq!(kinds(src), ["prose", "blank", "(let x 1)"]);
    assert_eq!(text(src, split_chunks(src)[0].span), "' a\n   \nb c\n");
    let src = "' a\n\t\r\n\r\nx = 1\n";
    assert_eq!(kinds(src), ["prose", "blank", "(let x 1)"]);
    assert_concatenation(src);
}

#[test]
fn chunks_blank_lines_followed_by_indented_lines_stay_in_the_block() {
    let src = "def f(x) =\n  y = x\n\n\n  y\n\nz = 1\n";
    assert_eq!(
        kinds(src),
        ["(def f(x) (block (let y x) y))", "blank", "(let z 1)"]
    );
    assert_concatenation(src);
}

#[test]
fn chunks_orphans_and_stray_pragmas() {
    let src = "x = 1\n> out\n  y\n  # only a comment\n\n%time\n\n:p 1\n";
    assert_eq!(
        kinds(src),
        [
            "(let x 1)",
            "error: unexpected indentation",
            "blank",
            "error: expected a block after the pragma",
            "blank",
            "(Print 1)"
        ]
    );
    assert_concatenation(src);
    assert_eq!(kinds("  # indented comment\n"), ["comment"]);
}

#[test]
fn chunks_odd_inputs() {
    for src in [
        "",
        "\n",
        "\n\n",
        ">",
        "> x\n> y",
        "x",
        "'",
        "#",
        "%",
        "\r\n",
        "x\r\n  + 1\r\n",
        "é\n  ü",
        "\t\n\tx",
    ] {
        assert_concatenation(src);
    }
    assert!(split_chunks("").is_empty());
    assert_eq!(kinds("x\r\n  + 1\r\n"), ["(Print bare (+ x 1))"]);
}

// ---------------------------------------------------------------------------------------------
// Errors.

#[test]
fn error_positions() {
    let err = code_err(":p (1 +)");
    assert_eq!(
        (err.message.as_str(), err.span, err.is_incomplete()),
        ("expected an expression, found ')'", Span::new(7, 8), false)
    );
    let err = code_err("x = )");
    assert_eq!(
        (err.message.as_str(), err.span),
        ("unexpected ')'", Span::new(4, 5))
    );
    let err = code_err(":p (1, 2]");
    assert_eq!(
        (err.message.as_str(), err.span),
        ("unexpected ']'", Span::new(8, 9))
    );
    let err = code_err("x = 1 2 then");
    assert_eq!(
        (err.message.as_str(), err.span),
        ("unexpected 'then'", Span::new(8, 12))
    );
    let err = code_err("def f x = 1");
    assert_eq!(
        (err.message.as_str(), err.span),
        ("expected '(', found 'x'", Span::new(6, 7))
    );
    let err = code_err("x : = 3");
    assert_eq!(
        (err.message.as_str(), err.span),
        ("expected a type, found '='", Span::new(4, 5))
    );
    let err = code_err(":q x");
    assert_eq!(
        (err.message.as_str(), err.span),
        ("unknown command ':q'", Span::new(0, 2))
    );
    let err = code_err(":p 99999999999999999999999");
    assert_eq!(err.message, "integer literal too large");
    let err = code_err("x = {1}");
    assert_eq!(
        (err.message.as_str(), err.span),
        ("unexpected '{'", Span::new(4, 5))
    );
    let err = code_err("x = 1; 2");
    assert_eq!(
        err.message,
        "unexpected ';' (it separates the lines of an indented block)"
    );
    let err = code_err(":p \"abc\n");
    assert_eq!(
        (err.message.as_str(), err.span),
        ("unterminated string", Span::new(3, 4))
    );
    let err = code_err("  x = 1");
    assert_eq!(
        (err.message.as_str(), err.span),
        ("unexpected indentation", Span::new(2, 3))
    );
    let err = code_err(":p\n  x = 1\n  2 +\n");
    assert_eq!(err.message, "expected an expression");
    assert_eq!(err.span, Span::new(16, 16));
    let err = code_err(":p é → 1");
    assert_eq!(
        (err.message.as_str(), text(":p é → 1", err.span)),
        ("unexpected '→'", "→")
    );
}

#[test]
fn errors_at_end_of_input_are_incomplete() {
    for src in [
        "x = (",
        ":p f(1, 2",
        ":p x[",
        "x = 1 +",
        "x =",
        "def f(x) =",
        "def f(x) =\n  y = 1\n",
        "if c then",
        "x = if c then",
        "x = if c then a else",
        ":p \\x",
        ":p \\x.",
        ":p for i.",
        ":p",
        ":p x @",
        "def f(x:",
        "x = f $",
        "x = a `mod`",
        ":p \"abc\n",
    ] {
        let err = code_err(src);
        assert!(err.is_incomplete(), "{src:?}: {err:?}");
    }
    for src in [
        ":p (1 +)",
        "x = )",
        "x = 1 2 then",
        "def f x = 1",
        ":p\n  x = 1\n  y = 2\n  3 +\n  z = 3\n  4",
    ] {
        let err = code_err(src);
        assert!(!err.is_incomplete(), "{src:?}: {err:?}");
    }
    let err = code_err("x = (");
    assert_eq!(
        (err.message.as_str(), err.span),
        ("unclosed '('", Span::new(4, 5))
    );
    let err = code_err("x = 1 +");
    assert_eq!(
        (err.message.as_str(), err.span),
        ("expected an expression", Span::new(7, 7))
    );
    // Without `else`, the other branch is `()` (Dex's form for effects).
    assert_eq!(decl("if c then a"), "(Print bare (if c a (tuple )))");
    let err = code_err("def f(x) =\n  y = 1\n");
    assert_eq!(err.message, "a block must end with an expression");
}

#[test]
fn nesting_limits() {
    let deep = |depth: usize| format!(":p {}1{}", "(".repeat(depth), ")".repeat(depth));
    assert!(parse_code(&deep(128), Span::new(0, deep(128).len())).is_ok());
    let src = deep(129);
    let err = code_err(&src);
    assert_eq!(
        (err.message.as_str(), err.span),
        ("expression nested too deeply", Span::new(3 + 128, 3 + 129))
    );
    let src = format!(":p {}x", "\\x. ".repeat(200));
    assert_eq!(code_err(&src).message, "expression nested too deeply");
    let src = format!(":p 1{}", " + 1".repeat(1990));
    assert!(parse_code(&src, Span::new(0, src.len())).is_ok());
    let src = format!(":p 1{}", " + 1".repeat(100_000));
    assert_eq!(code_err(&src).message, "expression too long");
    // Separators reset the length: a long table literal is fine.
    let src = format!(":p [{}1]", "1, ".repeat(20_000));
    assert!(parse_code(&src, Span::new(0, src.len())).is_ok());
}

#[test]
fn a_table_of_plain_numbers_reads_as_the_expression_rules_read_it() {
    // A table of numbers only is one `numbers` token, kept as data (`ExprKind::Numbers`); with
    // a name at the end, the same numbers go through the expression rules. Each number, read
    // back as an expression, is what the expression rules made of it, spans included.
    let numbers = "0.5, -1,2e3 ,\n  +2, 1., 1.e3, 7, -0.25E-2, 18446744073709551615";
    let parse = |src: &str| parse_expr(src).expect("parses").kind;
    let ExprKind::Numbers(fast) = parse(&format!("[{numbers}]")) else {
        panic!("not read as numbers");
    };
    let ExprKind::Table(general) = parse(&format!("[{numbers}, x]")) else {
        panic!("not read as a table");
    };
    let fast: Vec<Expr> = fast.iter().map(|number| number.expr()).collect();
    assert_eq!(fast.len(), 9);
    assert_eq!(fast[..], general[..9]);
    let sexps: Vec<String> = fast.iter().map(sexp).collect();
    assert_eq!(sexps[..4], ["0.5", "(neg 1)", "2000.0", "2"]);
    // However a table of numbers is written, it is the same tree.
    assert_eq!(
        sexp(&parse_expr("[(1), -(2.5)]").unwrap()),
        sexp(&parse_expr("[1, -2.5]").unwrap())
    );
    assert!(matches!(parse("[(1), -(2.5)]"), ExprKind::Numbers(_)));
    // Not all numbers: the expression rules read the whole table.
    let ExprKind::Table(mixed) = parse("[1 - 2, -x, 3]") else {
        panic!("not read as a table");
    };
    let mixed: Vec<String> = mixed.iter().map(sexp).collect();
    assert_eq!(mixed, ["(- 1 2)", "(neg x)", "3"]);
    assert_eq!(
        code_err(":p [1, 99999999999999999999]").message,
        "integer literal too large"
    );
}

// ---------------------------------------------------------------------------------------------
// Entry status.

#[test]
fn entry_status_rules() {
    use EntryStatus::{Complete, Incomplete};
    for (src, status) in [
        ("", Complete),
        (":p 1", Complete),
        (":p (1 +)", Complete),
        (":p )", Complete),
        ("x = (1,", Incomplete),
        ("x = (1,\n  2", Incomplete),
        ("x = (1,\n  2)", Incomplete),
        ("x = (1,\n  2)\n", Complete),
        ("def f(x) =", Incomplete),
        ("def f(x) =\n  x + 1", Incomplete),
        ("def f(x) =\n  x + 1\n", Complete),
        ("def f(x) = x +", Incomplete),
        (":p\n  y = 1\n", Incomplete),
        (":p\n  y = 1\n  y\n", Complete),
        ("x = 1 +\n# comment", Incomplete),
        ("if c then a", Complete),
        ("if c then", Incomplete),
        ("x = if c", Incomplete),
        (":p \\x", Incomplete),
        ("%time", Incomplete),
        ("%time\n:p 1", Complete),
        ("def f(x) =\n:p 1", Complete),
        ("'prose", Complete),
        ("x = (\n\n' prose", Complete),
        // A string spans lines until it is closed.
        ("x = \"ab", Incomplete),
        ("x = \"ab\n'cd", Incomplete),
        ("x = \"ab\n'cd\"\n", Complete),
    ] {
        assert_eq!(entry_status(src), status, "{src:?}");
    }
}
