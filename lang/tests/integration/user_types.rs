//! User types, `case` and interfaces (docs/language.md) through the whole pipeline: values,
//! derivatives and errors, on every engine.

use crate::common::{assert_errors, on_threads, outputs, session, value};
use dx_lang::core::value::Value;
use dx_lang::session::{Engine, Output, Session};

/// A small network: its parameters as a struct of layers, or as a tuple of the same arrays.
const MLP_DATA: &str = "\
N = Fin 16
xs = for n:N. [sin (n_to_f (ordinal n)), cos (0.5 * n_to_f (ordinal n))]
labels = for n:N. ordinal n `mod` 2
def head(z: (Fin 3)=>Float, label: Nat) -> Float =
  logsumexp z - z[label @ Fin 3]
";

const MLP_STRUCT: &str = "\
struct Layer(n|Ix, m|Ix) =
  w : m=>n=>Float
  b : m=>Float
struct MLP =
  hidden : Layer (Fin 2) (Fin 5)
  out : Layer (Fin 5) (Fin 3)
def dense(layer: Layer n m, x: n=>Float) -> m=>Float given (n|Ix, m|Ix) =
  for i. layer.b[i] + sum for j. layer.w[i, j] * x[j]
def loss(p: MLP) -> Float =
  mean for n. head (dense p.out (for i. tanh (dense p.hidden xs[n])[i])) labels[n]
p0 : MLP =
  k = new_key 3
  MLP(Layer(for i j. randn (ixkey k (i, j)), for i. 0.1 * n_to_f (ordinal i)), Layer(for i j. 0.5 * randn (ixkey (ixkey k j) i), zero))
";

const MLP_TUPLE: &str = "\
def dense_t(w: m=>n=>Float, b: m=>Float, x: n=>Float) -> m=>Float given (n|Ix, m|Ix) =
  for i. b[i] + sum for j. w[i, j] * x[j]
def loss_t(p: ((Fin 5)=>(Fin 2)=>Float, (Fin 5)=>Float, (Fin 3)=>(Fin 5)=>Float, (Fin 3)=>Float)) -> Float =
  (w1, b1, w2, b2) = p
  mean for n. head (dense_t w2 b2 (for i. tanh (dense_t w1 b1 xs[n])[i])) labels[n]
t0 = (p0.hidden.w, p0.hidden.b, p0.out.w, p0.out.b)
";

fn mlp_session(engine: Engine) -> Session {
    let mut session = session(engine);
    for src in [MLP_DATA, MLP_STRUCT, MLP_TUPLE] {
        for output in outputs(&mut session, src) {
            assert!(!matches!(output, Output::Error(_)), "{output:?} in {src}");
        }
    }
    session
}

/// The bits of every float of a value, in order.
fn bits(value: &Value) -> Vec<u64> {
    match value {
        Value::Array(array) => (0..array.data.len())
            .map(|position| array.data.get(position).bits())
            .collect(),
        Value::Tuple(items) => items.iter().flat_map(bits).collect(),
    }
}

#[test]
fn the_gradient_over_a_struct_of_layers_is_the_gradient_over_a_tuple_bit_for_bit() {
    for engine in [Engine::Reference, Engine::Fused] {
        let mut session = mlp_session(engine);
        let (struct_ty, struct_grad) = session.evaluate("grad loss p0").expect("struct grad");
        let (tuple_ty, tuple_grad) = session.evaluate("grad loss_t t0").expect("tuple grad");
        assert_eq!(struct_ty.to_string(), "MLP");
        assert!(tuple_ty.to_string().starts_with("(((Fin 5)"), "{tuple_ty}");
        assert_eq!(bits(&struct_grad), bits(&tuple_grad), "{engine:?}");
        assert!(bits(&struct_grad).iter().any(|&b| b != 0));
        // The gradient is an `MLP`: its fields read as the parameters' do.
        assert_eq!(
            value(&mut session, ":p (grad loss p0).out.b\n"),
            value(&mut session, ":p (grad loss_t t0).3\n")
        );
    }
}

#[test]
fn derivatives_through_a_struct_agree_with_finite_differences_and_the_interpreter() {
    let mut fused = mlp_session(Engine::Fused);
    assert_eq!(value(&mut fused, ":p check_deriv loss p0\n"), "True");
    // A directional derivative by central differences in Float64, against `jvp`.
    let src = "\
struct P64 =
  a : Float64
  v : (Fin 3)=>Float64
def f64_loss(p: P64) -> Float64 = sum for i. sin (p.a * p.v[i]) + p.v[i] * p.v[i]
q = P64(0.7, [0.3, -1.2, 2.0])
d = P64(0.5, [1.0, 0.25, -0.5])
h : Float64 = 0.000001
fd = (f64_loss (q + h .* d) - f64_loss (q - h .* d)) / (2.0 * h)
";
    let mut reference = session(Engine::Reference);
    for session in [&mut fused, &mut reference] {
        for output in outputs(session, src) {
            assert!(!matches!(output, Output::Error(_)), "{output:?}");
        }
    }
    let jvp = value(&mut fused, ":p jvp f64_loss q d\n");
    let fd = value(&mut fused, ":p fd\n");
    let (jvp, fd): (f64, f64) = (jvp.parse().unwrap(), fd.parse().unwrap());
    assert!(
        (jvp - fd).abs() < 1e-6 * jvp.abs().max(1.0),
        "{jvp} vs {fd}"
    );
    // Every derivative of the API on the struct, on the engine and on the interpreter.
    for expr in [
        "grad f64_loss q",
        "jvp f64_loss q d",
        "(snd (vjp f64_loss q)) 1.0",
        "(snd (linearize f64_loss q)) d",
        "q + d",
        "2.0 .* q",
        "(zero :: P64)",
    ] {
        let src = format!(":p {expr}\n");
        assert_eq!(
            value(&mut fused, &src),
            value(&mut reference, &src),
            "{expr}"
        );
    }
    assert_eq!(
        value(&mut fused, ":p grad f64_loss q\n").split('(').next(),
        Some("P64")
    );
}

const SHAPES: &str = "\
data Shape =
  Circle(Float)
  Rect(Float, Float)
  Dot
shapes = for i:(Fin 7). case ordinal i `mod` 3 of
  0 -> Circle (n_to_f (ordinal i))
  1 -> Rect (n_to_f (ordinal i)) 2.0
  _ -> Dot
def area(s: Shape) -> Float =
  case s of
    Circle(r) -> 3.0 * r * r
    Rect(w, h) -> w * h
    Dot -> 0.0
";

#[test]
fn case_in_a_for_is_vectorised_and_agrees_with_the_interpreter() {
    let mut texts = Vec::new();
    for engine in [Engine::Reference, Engine::Bulk, Engine::Fused] {
        let mut session = session(engine);
        for output in outputs(&mut session, SHAPES) {
            assert!(!matches!(output, Output::Error(_)), "{output:?}");
        }
        texts.push((
            value(&mut session, ":p shapes\n"),
            value(&mut session, ":p for i. area shapes[i]\n"),
            value(
                &mut session,
                ":p grad (\\r. sum for i:(Fin 4). area (Circle (r * n_to_f (ordinal i)))) 1.5\n",
            ),
        ));
    }
    assert_eq!(
        texts[0].0,
        "[(Circle 0.), (Rect 1. 2.), Dot, (Circle 3.), (Rect 4. 2.), Dot, (Circle 6.)]"
    );
    assert_eq!(texts[0].1, "[0., 2., 0., 27., 8., 0., 108.]");
    assert_eq!(texts[0], texts[1]);
    assert_eq!(texts[0], texts[2]);
}

#[test]
fn a_table_of_a_data_type_is_a_tag_array_and_field_arrays_fused_into_one_kernel() {
    let mut session = session(Engine::Fused);
    for output in outputs(&mut session, SHAPES) {
        assert!(!matches!(output, Output::Error(_)), "{output:?}");
    }
    let core = crate::common::stage_text(&mut session, "core", "for i. area shapes[i]");
    assert!(
        core.contains("%1_shapes.tag: [7]u32") && core.contains("_shapes.Rect.1: [7]f32"),
        "{core}"
    );
    let fused = crate::common::stage_text(&mut session, "fused", "for i. area shapes[i]");
    assert_eq!(fused.matches("kernel").count(), 1, "{fused}");
    assert!(fused.contains("select"), "{fused}");
}

#[test]
fn errors_about_user_types_name_what_is_wrong() {
    let mut session = session(Engine::Fused);
    let setup = "\
struct Point =
  x : Float
  y : Float
interface Shape(a)
  area : (a) -> Float
instance Shape(Point)
  def area(p) = p.x * p.y
def Vec(n: Nat) -> Type = (Fin n)=>Float
";
    for output in outputs(&mut session, setup) {
        assert!(!matches!(output, Output::Error(_)), "{output:?}");
    }
    let cases = [
        (
            ":p (Point 1.0 2.0).z\n",
            "has no field `z`; its fields are: x, y",
        ),
        (
            ":p case Just 1.0 of\n  Just(x) -> x\n",
            "missing an alternative for `Nothing`",
        ),
        (":p area 1.0\n", "there is no instance Shape(Float32)"),
        (
            "instance Shape(a) given (a)\n  def area(p) = 0.0\n",
            "overlaps the instance Shape(Point)",
        ),
        (
            ":p case Just 1.0 of\n  Just(x, y) -> x\n  Nothing -> 0.0\n",
            "constructor `Just` has 1 field, but this pattern gives 2",
        ),
        ("v : Vec Float = [1.0]\n", "expected a size here"),
        (":p\n  Just(x) = Just 1.0\n  x\n", "this pattern can fail"),
        (
            "instance Shape(Float)\n  def perimeter(x) = x\n",
            "does not define the method `area`",
        ),
    ];
    assert_errors(&mut session, &cases);
    // The session goes on.
    assert_eq!(value(&mut session, ":p area (Point 2.0 3.0)\n"), "6.");
}

/// `show` under a `for` is one elementwise computation over the text's positions: every
/// engine (and thread count) writes the same texts, which are C's `%.9g` of the values.
#[test]
fn show_in_a_for_is_vectorised_and_every_engine_writes_the_same_text() {
    let src = "xs = [0.5, -2.25, 1.0e10, 123.456789, 0.0001, 65536.0]\n\
               ns : (Fin 3)=>Int = [7, -40, 2147483647]\n";
    let expected = (
        r#"["0.5", "-2.25", "1e+10", "123.456787", "9.99999975e-05", "65536"]"#,
        r#"["(7, 0.5)", "(-40, -2.25)", "(2147483647, 1e+10)"]"#,
    );
    for (engine, threads) in [
        (Engine::Reference, 1),
        (Engine::Bulk, 2),
        (Engine::Fused, 1),
        (Engine::Fused, 3),
    ] {
        let texts = on_threads(threads, || {
            let mut session = session(engine);
            for output in outputs(&mut session, src) {
                assert!(!matches!(output, Output::Error(_)), "{output:?}");
            }
            (
                value(&mut session, ":p for i. show xs[i]\n"),
                value(
                    &mut session,
                    ":p for i. show (ns[i], xs[(ordinal i) @ _])\n",
                ),
            )
        });
        assert_eq!(
            (texts.0.as_str(), texts.1.as_str()),
            expected,
            "{engine:?} on {threads} threads"
        );
    }
}
