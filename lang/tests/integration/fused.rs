//! The fused engine through the session: what the `fused` stage shows (kernel counts are
//! structure, not text), summation accuracy and determinism, matrix products against the
//! reference interpreter, and memory requests that cannot be met.

use crate::common::{on_threads, session, stage_text, value, value_on};
use dx_lang::core::value::{ArrayData, Value};
use dx_lang::session::{Engine, Output, Session};

/// The Float64 elements of each table of a value (a table, or a tuple of them, in order).
fn float64_tables(value: Value) -> Vec<Vec<f64>> {
    match value {
        Value::Array(array) => match &*array.data {
            ArrayData::F64(values) => vec![values.clone()],
            other => panic!("Float64 elements, not {other:?}"),
        },
        Value::Tuple(parts) => parts.into_iter().flat_map(float64_tables).collect(),
    }
}

/// The outputs of a source without its timings.
fn outputs(session: &mut Session, src: &str) -> Vec<Output> {
    crate::common::outputs(session, src)
        .into_iter()
        .filter(|output| !matches!(output, Output::Timing { .. }))
        .collect()
}

/// The text of the `fused` stage of an expression.
fn fused_stage(session: &mut Session, expr: &str) -> String {
    stage_text(session, "fused", expr)
}

fn count_lines(text: &str, prefix: &str) -> usize {
    text.lines()
        .filter(|line| line.trim_start().starts_with(prefix))
        .count()
}

const DEFS: &str = "n = 100000\nx : (Fin n)=>Float = for i. sin (n_to_f (ordinal i))\ny : (Fin n)=>Float = for i. cos (n_to_f (ordinal i))\n";

#[test]
fn a_sum_of_an_elementwise_chain_is_one_kernel() {
    let mut session = session(Engine::Fused);
    outputs(&mut session, DEFS);
    let text = fused_stage(&mut session, "sum for i. x[i] * x[i] + y[i]");
    assert_eq!(count_lines(&text, "kernel"), 1, "{text}");
    assert_eq!(count_lines(&text, "bulk"), 0, "{text}");
    let text = fused_stage(&mut session, "grad (\\v. sum for i. v[i] * v[i] + y[i]) x");
    assert_eq!(count_lines(&text, "kernel"), 1, "{text}");
    assert_eq!(count_lines(&text, "bulk"), 0, "{text}");
}

#[test]
fn values_read_twice_at_the_same_point_and_index_masks_are_not_materialised() {
    let mut session = session(Engine::Fused);
    outputs(&mut session, DEFS);
    outputs(
        &mut session,
        "def leaky(v: (Fin n)=>Float) -> (Fin n)=>Float =\n  t = for i. v[i] * y[i]\n  for i. select (t[i] > 0.0) t[i] (0.1 * t[i])\n\ndef masked(v: (Fin n)=>Float) -> ((Fin n)=>Float, Float) =\n  m = for i:(Fin n). ordinal i == 0\n  (for i. select m[i] 0.0 v[i], sum for i. select m[i] y[i] 0.0)\n\n",
    );
    // `t` is read twice by one kernel at its own coordinates: computed once, inlined.
    let text = fused_stage(&mut session, "leaky x");
    assert_eq!(count_lines(&text, "kernel"), 1, "{text}");
    // A mask of the first row, read by the kernels of both results: it reads no memory, so
    // each computes it.
    let text = fused_stage(&mut session, "masked x");
    assert_eq!(count_lines(&text, "kernel"), 2, "{text}");
    assert!(!text.contains("]bool"), "{text}");
}

#[test]
fn values_read_several_times_under_a_reduction_or_a_transpose_are_not_materialised() {
    // NNMF's objective and its gradient ([Shaikhha23] §7): `u[i] * v[j]` is read by `log` and by
    // the division (through the transpose of the inner sum), three times by the gradient's
    // divisions under its column sum; each kernel computes it once per point.
    let defs = "u : (Fin 48)=>Float = for i. 1.5 + sin (n_to_f (ordinal i))\nv : (Fin 40)=>Float = for j. 1.5 + cos (n_to_f (ordinal j))\na : (Fin 48)=>(Fin 40)=>Float = for i j. 1.0 + 0.5 * sin (n_to_f (ordinal i * 40 + ordinal j))\ndef nnmf(w: (Fin 40)=>Float) -> Float =\n  sum for i. sum for j. log (u[i] * w[j]) + a[i, j] / (u[i] * w[j])\n\n";
    let mut fused = session(Engine::Fused);
    outputs(&mut fused, defs);
    let text = fused_stage(&mut fused, "nnmf v");
    // The row sums and the sum of those.
    assert_eq!(count_lines(&text, "kernel"), 2, "{text}");
    assert!(!text.contains("local"), "{text}");
    let text = fused_stage(&mut fused, "grad nnmf v");
    assert_eq!(count_lines(&text, "kernel"), 1, "{text}");
    let mut reference = session(Engine::Reference);
    outputs(&mut reference, defs);
    for expr in ["nnmf v", "grad nnmf v"] {
        assert_eq!(
            value(&mut fused, &format!(":p {expr}")),
            value(&mut reference, &format!(":p {expr}")),
            "{expr}"
        );
    }
}

#[test]
fn a_stop_gradient_maximum_leaves_no_kernel_for_its_derivative() {
    let mut session = session(Engine::Fused);
    outputs(
        &mut session,
        "xs : (Fin 64)=>(Fin 50)=>Float = for r c. sin (n_to_f (ordinal r * 50 + ordinal c))\n",
    );
    // `logsumexp` shifts by `stop_gradient` of the row maximum where it is finite (0 where it
    // is not, as JAX's): the gradient is the row maximum, the shift (a map over the rows),
    // the exponentials, their sums, the reciprocals and the product; no tie count and no
    // share of the cotangent for the shift.
    let text = fused_stage(&mut session, "grad (\\x. sum for r. logsumexp x[r]) xs");
    assert_eq!(count_lines(&text, "kernel"), 6, "{text}");
    assert_eq!(
        count_lines(&text, "kernel k0 over [50, 64] max"),
        1,
        "{text}"
    );
    assert_eq!(count_lines(&text, "kernel k1 over [64]:"), 1, "{text}");
    assert!(
        !text.contains(" = eq ") && !text.contains("stopgradient"),
        "{text}"
    );
    // Without it, the shift's derivative costs two more reductions (the ties of each row's
    // maximum and the shift's cotangent) and the shares of the ties.
    outputs(
        &mut session,
        "def lse(xs: n=>Float) -> Float given (n|Ix) =\n  m = maximum xs\n  m + log (sum for i. exp (xs[i] - m))\n\n",
    );
    let text = fused_stage(&mut session, "grad (\\x. sum for r. lse x[r]) xs");
    assert!(
        count_lines(&text, "kernel") > 6 && text.matches("_ties: [64]f32").count() == 1,
        "{text}"
    );
    agrees_with_the_interpreter_on_1_and_2_threads(
        "xs : (Fin 64)=>(Fin 50)=>Float = for r c. sin (n_to_f (ordinal r * 50 + ordinal c))\n:p grad (\\x. sum for r. logsumexp x[r]) xs\n",
    );
}

/// Note [Scatters added in place]: the gradient of `x[r, label r]` is a scatter of one value
/// per row, which the gradient kernel adds in place instead of reading a zero table; it also
/// works where the other operand is -0 (the kernel's `0 + y` gives +0, as the interpreter's
/// zero-based scatter does), and where that operand is never -0 (softmax cross-entropy's
/// `exp(…) * (1/R) / Σ exp(…)`, Note [Sign-clear values]) the kernel computes it without the
/// `0 +`. The values are the interpreter's bits (1 and 2 threads).
#[test]
fn scatters_into_a_sum_are_added_in_place() {
    let defs = "xs : (Fin 300)=>(Fin 50)=>Float = for r c. select (ordinal c == 7) (-0.0) (sin (n_to_f (ordinal r * 50 + ordinal c)))\n\
        labels = for r:(Fin 300). (mod (ordinal r * 7) 50) @ (Fin 50)\n\
        def xent(z: (Fin 300)=>(Fin 50)=>Float) -> Float =\n  mean for r. logsumexp z[r] - z[r, labels[r]]\n\n\
        def picked(z: (Fin 300)=>(Fin 50)=>Float) -> Float =\n  sum for r. sum for c. xs[r, c] * z[r, c] + z[r, labels[r]] * 2.0\n\n\
        def shifted(z: (Fin 300)=>(Fin 50)=>Float) -> Float =\n  sum for r. sum for c. xs[r, c] * z[r, c] + z[r, (ordinal labels[r] + 45) @ (Fin 50)]\n\n\
        t : (Fin 40)=>(Fin 50)=>(Fin 30)=>Float = for i j k. cos (n_to_f (ordinal i * 1500 + ordinal j * 30 + ordinal k))\n\
        def rows(z: (Fin 40)=>(Fin 50)=>(Fin 30)=>Float) -> Float =\n  sum for i. sum for j. sum for k. t[i, j, k] * z[i, j, k] + 3.0 * z[i, labels[(ordinal i) @ (Fin 300)], k]\n\n";
    let mut session = session(Engine::Fused);
    outputs(&mut session, defs);
    // `shifted` reads out of range for some rows (zero; the scatter drops those targets),
    // `rows` scatters rows of 30 values (trailing axis) at `[i, labels i]`.
    for expr in [
        "grad xent xs",
        "grad picked xs",
        "grad shifted xs",
        "grad rows t",
    ] {
        let text = fused_stage(&mut session, expr);
        assert_eq!(count_lines(&text, "scatter-add"), 1, "{expr}: {text}");
        assert_eq!(count_lines(&text, "bulk"), 0, "{expr}: {text}");
        let adds = text.matches("= add ").count();
        assert!((adds == 0) == (expr == "grad xent xs"), "{expr}: {text}");
    }
    agrees_with_the_interpreter_on_1_and_2_threads(&format!(
        "{defs}:p (grad xent xs, grad picked xs, grad shifted xs, grad rows t)\n"
    ));
}

#[test]
fn the_gradient_of_a_reduce_is_two_scans_and_one_kernel() {
    let mut session = session(Engine::Fused);
    outputs(&mut session, DEFS);
    // `max` written as a conditional: not a selection, so the general rule of [Paszke21].
    let larger = "(\\v. reduce(v, v[0 @ _], \\a b. if a >= b then a else b))";
    let text = fused_stage(&mut session, &format!("grad {larger} x"));
    // The first element (the monoid's `e`), the prefix and suffix scans, the cotangents.
    assert_eq!(count_lines(&text, "bulk"), 2, "{text}");
    assert_eq!(count_lines(&text, "kernel"), 2, "{text}");
    assert_eq!(count_lines(&text, "kernel k0 over []"), 1, "{text}");
}

/// Notes [Monoid steps] and [Monoid consumers]: the gradient of `sum (cumprod x)` is the
/// forward scan and the right scan over ⊗, which computes its operands (the shifted input and
/// the constant cotangent) where its chunks read them, stores none of its results, and runs
/// the last map on the cotangents where its rescan computes them; the values are the
/// interpreter's bits on 1 and 2 threads (the right scan on compiled chains: it folds more
/// elements than `JIT_MIN_ITERATIONS`).
#[test]
fn the_right_scan_of_a_cumprod_gradient_fuses_its_operands_and_its_consumer() {
    let defs = "xs : (Fin 70000)=>Float = for i. 1.0 + 0.001 * sin (n_to_f (ordinal i) * 0.37)\n";
    let mut session = session(Engine::Fused);
    outputs(&mut session, defs);
    let text = fused_stage(&mut session, "grad (\\v. sum (cumprod v)) xs");
    let monoid: Vec<&str> = text
        .lines()
        .filter(|line| line.trim_start().starts_with("monoid k"))
        .collect();
    assert_eq!(monoid.len(), 1, "{text}");
    assert!(
        monoid[0].contains("assoc_scan_right")
            && monoid[0].contains("(unread, not stored: %")
            && monoid[0].contains("; consumed, not stored: %"),
        "{text}"
    );
    let inner: Vec<&str> = text
        .lines()
        .filter(|line| line.trim_start().starts_with("kernel k1."))
        .collect();
    assert_eq!(inner.len(), 3, "{text}");
    // Two producers (local), then the consumer, whose output is the gradient.
    assert_eq!(
        inner
            .iter()
            .map(|line| line.contains("writes local"))
            .collect::<Vec<_>>(),
        [true, true, false],
        "{text}"
    );
    let top_kernels = text
        .lines()
        .filter(|line| line.starts_with("  kernel k"))
        .count();
    assert_eq!(top_kernels, 0, "{text}");
    assert_eq!(count_lines(&text, "bulk"), 1, "{text}");
    agrees_with_the_interpreter_on_1_and_2_threads(&format!(
        "{defs}:p grad (\\v. sum (cumprod v)) xs\n"
    ));
}

#[test]
fn maximum_and_its_gradient_are_reduction_kernels_that_agree_with_the_general_rule() {
    let mut session = session(Engine::Fused);
    outputs(&mut session, DEFS);
    // Ties: `x` rounded to one decimal repeats its maximum. `u` and `p` have none: their
    // values are distinct multiples of 7919 modulo `n`.
    let ties = "t : (Fin n)=>Float = for i. round (10.0 * x[i]) / 10.0\nm = for i:(Fin 400) j:(Fin 250). round (10.0 * sin (n_to_f (250 * ordinal i + ordinal j))) / 10.0\n";
    outputs(&mut session, ties);
    outputs(
        &mut session,
        "u : (Fin n)=>Float = for i. n_to_f (mod (ordinal i * 7919) n)\np = for i:(Fin 400) j:(Fin 250). n_to_f (mod ((250 * ordinal i + ordinal j) * 7919) n)\n",
    );
    // The max fused with its producer, the tie count, the shares (JAX's rule, Note [Ties of
    // min and max] in `prim::arith`): the tie indicator is computed by both of its readers
    // (Note [Light values] in `passes::fuse`), so nothing else is materialised. No scan, no
    // transposed copy.
    let text = fused_stage(&mut session, "grad (\\v. maximum v) t");
    assert_eq!(count_lines(&text, "bulk"), 0, "{text}");
    assert_eq!(count_lines(&text, "kernel"), 3, "{text}");
    assert_eq!(count_lines(&text, "max v"), 1, "{text}");
    assert_eq!(count_lines(&text, "sum v"), 1, "{text}");
    assert_eq!(count_lines(&text, "v2: bool = eq"), 2, "{text}");
    let rows = "(\\w. sum for i. maximum w[i])";
    let columns = "(\\w. sum for j. maximum for i. w[i, j])";
    let text = fused_stage(&mut session, &format!("grad {rows} m"));
    assert_eq!(count_lines(&text, "bulk"), 0, "{text}");
    // Without ties, the same bits as the general rule (an operator that is not a selection,
    // whose derivative is the one-hot at the maximum).
    let general = "\\a b. if a >= b then a else b";
    for (selection, by_rule) in [
        (
            "grad (\\v. maximum v) u".to_string(),
            format!("grad (\\v. reduce(v, v[0 @ _], {general})) u"),
        ),
        (
            format!("grad {rows} p"),
            format!("grad (\\w. sum for i. reduce(w[i], w[i, 0 @ _], {general})) p"),
        ),
        (
            format!("grad {columns} p"),
            format!("grad (\\w. sum for j. reduce(for i. w[i, j], w[0 @ _, j], {general})) p"),
        ),
        (
            "maximum t".to_string(),
            format!("reduce(t, t[0 @ _], {general})"),
        ),
    ] {
        assert_eq!(
            value(&mut session, &selection),
            value(&mut session, &by_rule),
            "{selection}"
        );
    }
    assert_eq!(
        value(
            &mut session,
            "grad (\\v. maximum v) u == (for i. select (i == argmax u) 1.0 0.0)"
        ),
        "True"
    );
    // With ties, JAX's: the tied elements share the derivative evenly.
    for (reduction, extreme) in [("maximum", "argmax"), ("minimum", "argmin")] {
        let shares = format!(
            "(for i. select (t[i] == t[{extreme} t]) (1.0 / (sum for j. select (t[j] == t[{extreme} t]) 1.0 0.0)) 0.0)"
        );
        assert_eq!(
            value(
                &mut session,
                &format!("(sum for i. select (t[i] == {reduction} t) 1.0 0.0) > 1.0")
            ),
            "True",
            "{reduction}: the test needs ties"
        );
        assert_eq!(
            value(
                &mut session,
                &format!("grad (\\v. {reduction} v) t == {shares}")
            ),
            "True",
            "{reduction}"
        );
    }
    agrees_with_the_interpreter_on_1_and_2_threads(&format!(
        "{DEFS}{ties}:p (grad (\\v. maximum v) t, grad (\\v. minimum v) t)\n:p (grad {rows} m, grad {columns} m)\n"
    ));
}

#[test]
fn the_matmul_loss_gradient_uses_two_matrix_products_and_no_cube() {
    let mut session = session(Engine::Fused);
    outputs(
        &mut session,
        "m = 64\na : (Fin m)=>(Fin m)=>Float = for i j. sin (n_to_f (ordinal i * 7 + ordinal j))\nb : (Fin m)=>(Fin m)=>Float = for i j. cos (n_to_f (ordinal i + 3 * ordinal j))\ndef loss(p: (Fin m)=>(Fin m)=>Float, q: (Fin m)=>(Fin m)=>Float) -> Float =\n  c = for i k. sum for j. p[i, j] * q[j, k]\n  sum for i. sum for k. c[i, k] * c[i, k]\n\n",
    );
    let text = fused_stage(&mut session, "grad (\\p. loss p b) a");
    assert_eq!(count_lines(&text, "matmul"), 2, "{text}");
    // The cotangent `2 (A B)` is the second product's scale, not a kernel of its own (Note
    // [Scaled products]).
    assert_eq!(count_lines(&text, "kernel"), 0, "{text}");
    assert!(text.contains("= 2 * "), "{text}");
    // No kernel iterates over m³ points except the matrix products themselves.
    for line in text
        .lines()
        .filter(|line| line.trim_start().starts_with("kernel"))
    {
        assert!(
            !line.contains("[64, 64, 64]"),
            "a cube is computed: {line}\n{text}"
        );
    }
}

/// Note [Slices of products]: a loop's step that multiplies the slice at its own position
/// (an RNN's input row `xs[t]`; the reverse loop's stored carry) by a matrix runs a matrix
/// product on a copy of the slice, not a reduction kernel reading through a clamped index,
/// in the forward and the reverse loop. The values are the reference interpreter's, bit for
/// bit: small integers, whose products and sums are exact in any order.
#[test]
fn a_loop_step_multiplying_its_own_slice_runs_matrix_products() {
    let defs = "xs : (Fin 6)=>(Fin 16)=>(Fin 12)=>Float64 = for t b i. n_to_f (mod (ordinal t + 3 * ordinal b + 5 * ordinal i) 5) - 2.0\n\
        u : (Fin 24)=>(Fin 12)=>Float64 = for j i. n_to_f (mod (ordinal j * 7 + ordinal i) 3) - 1.0\n\
        w0 : (Fin 24)=>(Fin 24)=>Float64 = for j k. n_to_f (mod (ordinal j + 2 * ordinal k) 3) - 1.0\n\
        def rnn(w: (Fin 24)=>(Fin 24)=>Float64) -> Float64 =\n  \
        h0 = for b:(Fin 16) j:(Fin 24). 0.0\n  \
        hT = fold(h0, \\t h. for b j. 0.25 * ((sum for k. w[j, k] * h[b, k]) + (sum for i. u[j, i] * xs[t, b, i])))\n  \
        sum for b. sum for j. hT[b, j]\n";
    let mut session = session(Engine::Fused);
    outputs(&mut session, defs);
    let text = fused_stage(&mut session, "rnn w0");
    // Each step: the recurrent product and the input's (on a copy of row `t`).
    assert_eq!(count_lines(&text, "matmul"), 2, "{text}");
    let text = fused_stage(&mut session, "grad rnn w0");
    // Forward 2; reverse (the step is linear: nothing is recomputed): the carry's cotangent
    // and the weights' gradient, a product on a copy of the stored carry of the step undone.
    assert_eq!(count_lines(&text, "matmul"), 4, "{text}");
    for line in text.lines().filter(|line| line.contains("sum i0")) {
        assert!(
            line.contains("matmul"),
            "a product runs as a kernel: {line}\n{text}"
        );
    }
    agrees_with_the_interpreter_on_1_and_2_threads(&format!("{defs}:p (rnn w0, grad rnn w0)\n"));
}

/// A contraction with two axes of one operand's own (attention's projection
/// `Σ_m x[i, m] w[m, h, e]`, and the same with the left operand's two: `Σ_m w[m, h, e] x[i, m]`
/// over `[e, h, i]`) is a matrix product per value of the shorter axis, not a reduction
/// kernel, also in its gradient. The values are the reference
/// interpreter's, bit for bit: small integers, whose products and sums are exact in any order.
#[test]
fn contractions_with_several_axes_of_one_operand_are_batched_products() {
    let defs = "x : (Fin 40)=>(Fin 24)=>Float64 = for i m. n_to_f (mod (ordinal i * 7 + ordinal m) 5) - 2.0\n\
        w : (Fin 24)=>(Fin 3)=>(Fin 16)=>Float64 = for m h e. n_to_f (mod (ordinal m + 3 * ordinal h + 5 * ordinal e) 7) - 3.0\n\
        def proj(v: (Fin 40)=>(Fin 24)=>Float64) -> (Fin 3)=>(Fin 40)=>(Fin 16)=>Float64 = for h i e. sum for m. v[i, m] * w[m, h, e]\n\
        def projt(v: (Fin 40)=>(Fin 24)=>Float64) -> (Fin 16)=>(Fin 3)=>(Fin 40)=>Float64 = for e h i. sum for m. w[m, h, e] * v[i, m]\n\
        def loss(v: (Fin 40)=>(Fin 24)=>Float64) -> Float64 = sum for h. sum for i. sum for e. sq (proj v)[h, i, e]\n";
    let mut session = session(Engine::Fused);
    outputs(&mut session, defs);
    for expr in ["proj x", "projt x"] {
        let text = fused_stage(&mut session, expr);
        assert_eq!(count_lines(&text, "matmul"), 1, "{text}");
        assert_eq!(count_lines(&text, "kernel"), 0, "{text}");
    }
    // The forward product; the cotangent of `v` sums over two axes (`h` and `e`): one
    // product summed over both (Note [Sums of products]), not a kernel and a sum of it.
    let text = fused_stage(&mut session, "grad loss x");
    assert_eq!(count_lines(&text, "matmul"), 2, "{text}");
    assert!(text.contains(" sum i0, i1 "), "{text}");
    assert!(!text.contains("kernel k2"), "{text}");
    agrees_with_the_interpreter_on_1_and_2_threads(&format!(
        "{defs}:p (proj x, projt x, grad loss x)\n"
    ));
}

/// Note [Sums of products]: a variable read by several contractions (attention's `x` by the
/// projections `q`, `k` and `v`) has a gradient that sums a sum of products over two axes;
/// it is one product step of three terms summed over both axes, as is a single sum of two
/// products. The values are the reference interpreter's, bit for bit: small integers, whose
/// products and sums are exact in any order.
#[test]
fn sums_of_contractions_are_one_product() {
    let defs = "x : (Fin 40)=>(Fin 24)=>Float64 = for i m. n_to_f (mod (ordinal i * 7 + ordinal m) 5) - 2.0\n\
        w : (Fin 24)=>(Fin 3)=>(Fin 16)=>Float64 = for m h e. n_to_f (mod (ordinal m + 3 * ordinal h + 5 * ordinal e) 7) - 3.0\n\
        w2 : (Fin 24)=>(Fin 3)=>(Fin 16)=>Float64 = for m h e. n_to_f (mod (2 * ordinal m + ordinal h + 3 * ordinal e) 5) - 2.0\n\
        w3 : (Fin 24)=>(Fin 3)=>(Fin 16)=>Float64 = for m h e. n_to_f (mod (ordinal m + 2 * ordinal h + ordinal e) 3) - 1.0\n\
        def proj(v: (Fin 40)=>(Fin 24)=>Float64, u: (Fin 24)=>(Fin 3)=>(Fin 16)=>Float64) -> (Fin 3)=>(Fin 40)=>(Fin 16)=>Float64 = for h i e. sum for m. v[i, m] * u[m, h, e]\n\
        def three(v: (Fin 40)=>(Fin 24)=>Float64) -> Float64 =\n  \
          q = proj v w\n  k = proj v w2\n  u = proj v w3\n  \
          sum for h. sum for i. sum for e. q[h, i, e] * k[h, i, e] + sq u[h, i, e]\n\n\
        a : (Fin 20)=>(Fin 30)=>Float64 = for i j. n_to_f (mod (ordinal i * 3 + ordinal j) 7) - 3.0\n\
        b : (Fin 30)=>(Fin 12)=>Float64 = for j k. n_to_f (mod (ordinal j + 5 * ordinal k) 4) - 2.0\n\
        c : (Fin 20)=>(Fin 30)=>Float64 = for i j. n_to_f (mod (ordinal i + 2 * ordinal j) 5) - 2.0\n\
        d : (Fin 30)=>(Fin 12)=>Float64 = for j k. n_to_f (mod (3 * ordinal j + ordinal k) 6) - 3.0\n";
    let mut session = session(Engine::Fused);
    outputs(&mut session, defs);
    let text = fused_stage(&mut session, "grad three x");
    let summed: Vec<&str> = (text.lines())
        .filter(|line| line.contains(" sum i0, i1 "))
        .collect();
    assert_eq!(summed.len(), 1, "{text}");
    assert_eq!(summed[0].matches(" * ").count(), 3, "{text}");
    assert!(summed[0].trim_start().starts_with("matmul"), "{text}");
    // The kernels left are maps (the forward products are products too).
    assert!(!text.contains("] sum i0: reads"), "{text}");
    // One sum over one axis of two products, the second's operands the other way round.
    let two = "for i k. sum for j. a[i, j] * b[j, k] + d[j, k] * c[i, j]";
    let text = fused_stage(&mut session, two);
    assert!(text.contains(" + "), "{text}");
    assert_eq!(count_lines(&text, "matmul"), 1, "{text}");
    agrees_with_the_interpreter_on_1_and_2_threads(&format!("{defs}:p (grad three x, {two})\n"));
}

/// Note [Scaled products]: a doubled operand of a matrix product (the cotangent `c + c` of
/// the matmul loss's square) and one halved are read as the value itself and the product is
/// scaled; one tripled, or a doubled value also returned, keeps its kernel. The values are
/// the reference interpreter's, bit for bit: small integers, whose products and sums are
/// exact in any order.
#[test]
fn doubled_and_halved_operands_of_products_scale_the_product() {
    let defs = "a : (Fin 24)=>(Fin 28)=>Float64 = for i j. n_to_f (mod (ordinal i * 7 + ordinal j) 5) - 2.0\nb : (Fin 28)=>(Fin 20)=>Float64 = for i j. n_to_f (mod (ordinal i + 3 * ordinal j) 7) - 3.0\n";
    let mut session = session(Engine::Fused);
    outputs(&mut session, defs);
    let cases = [
        (
            "for i k. sum for j. (a[i, j] + a[i, j]) * b[j, k]",
            "= 2 * ",
            0,
        ),
        (
            "for i k. sum for j. (0.5 * a[i, j]) * b[j, k]",
            "= 0.5 * ",
            0,
        ),
        ("for i k. sum for j. a[i, j] * (b[j, k] * 4.0)", "= 4 * ", 0),
        ("for i k. sum for j. (3.0 * a[i, j]) * b[j, k]", "= %", 1),
    ];
    for (expr, product, kernels) in cases {
        let text = fused_stage(&mut session, expr);
        assert_eq!(count_lines(&text, "matmul"), 1, "{expr}\n{text}");
        assert!(text.contains(product), "{expr}: no `{product}`\n{text}");
        assert_eq!(count_lines(&text, "kernel"), kernels, "{expr}\n{text}");
        agrees_with_the_interpreter_on_1_and_2_threads(&format!("{defs}:p {expr}\n"));
    }
    // A doubled table that is also a result is materialised, and the product reads it.
    let both = "def both(x: (Fin 24)=>(Fin 28)=>Float64) -> ((Fin 24)=>(Fin 28)=>Float64, (Fin 24)=>(Fin 20)=>Float64) =\n  d = for i j. x[i, j] + x[i, j]\n  (d, for i k. sum for j. d[i, j] * b[j, k])\n\n";
    outputs(&mut session, both);
    let text = fused_stage(&mut session, "both a");
    assert_eq!(count_lines(&text, "matmul"), 1, "{text}");
    assert!(!text.contains("= 2 * "), "{text}");
    assert_eq!(count_lines(&text, "kernel"), 1, "{text}");
    agrees_with_the_interpreter_on_1_and_2_threads(&format!("{defs}{both}:p both a\n"));
}

#[test]
fn the_run_stage_profiles_every_step_of_the_schedule() {
    let mut session = session(Engine::Fused);
    outputs(
        &mut session,
        "m = 64\na : (Fin m)=>(Fin m)=>Float = for i j. sin (n_to_f (ordinal i * 7 + ordinal j))\n",
    );
    let expr = "sum for i. sum for k. (sum for j. a[i, j] * a[j, k]) * a[i, k]";
    let fused = fused_stage(&mut session, expr);
    let run = stage_text(&mut session, "run", expr);
    let lines: Vec<&str> = run.lines().collect();
    // The compile times of every pass of the pipeline, then the run's total.
    assert!(lines[0].starts_with("compile: "), "{run}");
    for pass in dx_lang::passes::PIPELINE {
        assert!(lines[0].contains(&format!("{} ", pass.name)), "{run}");
    }
    let n_steps =
        count_lines(&fused, "kernel") + count_lines(&fused, "matmul") + count_lines(&fused, "bulk");
    assert!(
        lines[1].starts_with("run: ") && lines[1].ends_with(&format!("in {n_steps} steps")),
        "{run}"
    );
    // One line per step, numbered as in the `fused` stage; the matrix product is measured in
    // GFLOP/s (2·64³ flops), the kernels in GB/s.
    let steps: Vec<&str> = lines[2..].to_vec();
    assert_eq!(steps.len(), n_steps, "{run}");
    for (number, line) in steps.iter().enumerate() {
        assert!(
            line.trim_start().starts_with(&format!("k{number} ")),
            "{run}"
        );
    }
    let matmul = steps
        .iter()
        .find(|line| line.contains("matmul"))
        .unwrap_or_else(|| panic!("{run}"));
    assert!(
        matmul.ends_with("GFLOP/s") && matmul.contains("wrote 16 kB"),
        "{run}"
    );
    assert!(
        steps
            .iter()
            .any(|line| line.contains("kernel") && line.ends_with("GB/s")),
        "{run}"
    );
    // Timed by `%bench`: each step's median over the timed runs, as many as the bench made.
    let got = outputs(
        &mut session,
        &format!("%passes run\n%bench \"b\"\nz = {expr}\n"),
    );
    let Some(Output::Stage { name, text: timed }) = got.first() else {
        panic!("no run stage in {got:?}")
    };
    assert_eq!(name, "run");
    let header = timed.lines().nth(1).unwrap_or_default();
    let runs: usize = header
        .strip_prefix("run: ")
        .and_then(|rest| rest.split_once(&format!(" in {n_steps} steps (each step's median of ")))
        .and_then(|(_, runs)| runs.strip_suffix(" runs)"))
        .and_then(|runs| runs.parse().ok())
        .unwrap_or_else(|| panic!("{timed}"));
    assert!(runs >= 5, "a bench runs five times at least: {timed}");
    assert_eq!(timed.lines().count(), lines.len(), "{timed}");
}

/// A training loop: gradient steps on a weight table, and the same with the gradient through
/// the loop (its backward scan carries tables too).
const TRAINING: &str = "\
xs : (Fin 300)=>Float = for i. sin (n_to_f (ordinal i))
ys : (Fin 300)=>Float = for i. cos (n_to_f (ordinal i) * 0.5)
w0 : (Fin 300)=>Float = for i. 0.01 * n_to_f (ordinal i)
def loss(w: (Fin 300)=>Float) -> Float = sum for i. sq (w[i] * xs[i] - ys[i])
def train(w: (Fin 300)=>Float) -> (Fin 300)=>Float =
  fold(w, \\t:(Fin 25) v. for i. v[i] - 0.05 * (grad loss v)[i])
";

#[test]
fn loop_bodies_over_tables_run_as_kernels_and_agree_with_the_interpreter() {
    let exprs = ["sum (train w0)", "sum (grad (\\w. loss (train w)) w0)"];
    let mut reference = session(Engine::Reference);
    let set_up = outputs(&mut reference, TRAINING);
    assert!(set_up.is_empty(), "{set_up:?}");
    let mut fused = session(Engine::Fused);
    outputs(&mut fused, TRAINING);
    for expr in exprs {
        let text = fused_stage(&mut fused, expr);
        // The loop's body is a schedule of kernels, not statements for the bulk evaluator.
        let loops: Vec<&str> = text
            .lines()
            .filter(|line| line.trim_start().starts_with("loop"))
            .collect();
        assert!(!loops.is_empty(), "{expr}: no loop with a schedule\n{text}");
        let body_kernels = text
            .lines()
            .filter(|line| line.starts_with("      kernel") || line.starts_with("      matmul"))
            .count();
        assert!(body_kernels > 0, "{expr}: no kernel in a loop body\n{text}");
        let src = format!(":p {expr}\n");
        assert_eq!(
            value(&mut fused, &src),
            value(&mut reference, &src),
            "{expr}\n{text}"
        );
        let report = fused.last_run().expect("a run report");
        assert!(
            report.kernels > 25,
            "{expr}: the body's kernels ran once per step: {report:?}"
        );
    }
}

#[test]
fn float32_sums_are_accurate() {
    let mut session = session(Engine::Fused);
    let text = value(&mut session, ":p sum for i:(Fin 10000000). 0.1\n");
    let total: f64 = text.trim_end_matches('.').parse().unwrap();
    assert!((total - 1e6).abs() / 1e6 < 1e-6, "{text}");
}

#[test]
fn results_do_not_depend_on_the_number_of_threads() {
    let src = format!(
        "{DEFS}:p (sum for i. x[i] * y[i], for j:(Fin 300). sum for i:(Fin 1000). x[(ordinal i * 300 + ordinal j) @ (Fin n)])\n"
    );
    let one = value_on(Engine::Fused, 1, &src);
    for threads in [2, 4] {
        assert_eq!(
            value_on(Engine::Fused, threads, &src),
            one,
            "{threads} threads"
        );
    }
    // And the bulk evaluator and the interpreter give the same bits.
    assert_eq!(value(&mut session(Engine::Bulk), &src), one);
    assert_eq!(value(&mut session(Engine::Reference), &src), one);
}

/// The fused engine prints the reference interpreter's value of `src` on 1 and 2 threads.
/// Every output of `src` (values, types, errors), as text, on each engine: the fused engine
/// on 1 and 2 threads gives the interpreter's.
fn agrees_with_the_interpreter_on_1_and_2_threads(src: &str) {
    let texts = |session: &mut Session| -> Vec<String> {
        (outputs(session, src).iter())
            .map(|output| dx_lang::display::render_output(output, src))
            .collect()
    };
    let reference = texts(&mut session(Engine::Reference));
    assert!(!reference.is_empty(), "no output from {src:?}");
    for threads in [1, 2] {
        let fused = on_threads(threads, || texts(&mut session(Engine::Fused)));
        assert_eq!(fused, reference, "{threads} threads");
    }
}

/// Index arithmetic through `Nat` and `Int` (Note [Index arithmetic] in `passes::fuse`): a
/// reversal written with `ordinal` and `unsafe_from_ordinal` is one affine read (a backward
/// run, no range mask or clamp); a shift whose `Nat` wraps below zero keeps its masks and
/// its wrapped values. All give the interpreter's values on 1 and 2 threads.
#[test]
fn index_arithmetic_that_cannot_wrap_stays_affine() {
    let defs = "x : (Fin 3000)=>Float = for i. sin (n_to_f (ordinal i) * 0.37)\n";
    let reversed =
        "for i:(Fin 3000). x[unsafe_from_ordinal (Fin 3000) (i_to_n (2999 - n_to_i (ordinal i)))]";
    let shifted =
        "for i:(Fin 3000). x[unsafe_from_ordinal (Fin 3000) (i_to_n (n_to_i (ordinal i) - 5))]";
    let mut fused = session(Engine::Fused);
    outputs(&mut fused, defs);
    let text = fused_stage(&mut fused, reversed);
    assert_eq!(count_lines(&text, "v"), 1, "{text}");
    assert!(text.contains("read %1_x[-1*i0 + 2999]"), "{text}");
    let text = fused_stage(&mut fused, shifted);
    assert_eq!(count_lines(&text, "kernel"), 1, "{text}");
    // The `Nat` cast is computed, and the read is masked where it leaves `x`.
    assert!(
        text.contains("cast_u32") && text.contains(" = select "),
        "{text}"
    );
    // Below zero the `Nat` is 2^32 - 5 + i, whose quotient (2147) is in range: the shift is
    // computed as a `Nat`, wrapped, before the division.
    let divided = "for i:(Fin 3000). x[unsafe_from_ordinal (Fin 3000) (idiv (i_to_n (n_to_i (ordinal i) - 5)) 2000000)]";
    agrees_with_the_interpreter_on_1_and_2_threads(&format!(
        "{defs}:p ({reversed}, {shifted}, {divided})\n"
    ));
}

/// A table indexed by pairs reads its matrix at the quotient and remainder of the pair's
/// ordinal, both known to be in range (Note [Index arithmetic] in `passes::fuse`): the kernel
/// has no range mask or clamp, and the engine reads the matrix at the flat offset (Note
/// [Row-major digits] in `core::digits`). `concat` likewise. Values as the
/// interpreter's on 1 and 2 threads.
#[test]
fn pair_index_sets_and_concat_read_without_masks() {
    let defs =
        "xs : (Fin 40)=>(Fin 30)=>Float = for r c. sin (n_to_f (ordinal r * 30 + ordinal c) * 0.37)\n";
    let pairs = "for rc:(Fin 40, Fin 30). xs[fst rc, snd rc]";
    let mut fused = session(Engine::Fused);
    outputs(&mut fused, defs);
    for expr in [pairs, "concat xs"] {
        let text = fused_stage(&mut fused, expr);
        assert_eq!(count_lines(&text, "kernel"), 1, "{text}");
        for op in [" = select ", " = min ", " = max ", " = ge ", " = lt "] {
            assert!(!text.contains(op), "{op} in {text}");
        }
    }
    agrees_with_the_interpreter_on_1_and_2_threads(&format!(
        "{defs}:p ({pairs}, concat xs, sum {pairs}, maximum {pairs})\n"
    ));
}

/// The gradient of a read through a pair index set (a row of the matrix, then its element)
/// is one scatter of the pairs' cotangents (`simp`'s ScatterOfScatter), not a scatter of
/// one-hot rows (`[1200, 30]` here) summed into the matrix, and that scatter a reshape
/// (ScatterAsReshape); values as the interpreter's.
#[test]
fn gradients_through_pair_index_sets_scatter_once() {
    let defs = "xs : (Fin 40)=>(Fin 30)=>Float = for r c. sin (n_to_f (ordinal r * 30 + ordinal c) * 0.37)\n\
        def fp(x: (Fin 40)=>(Fin 30)=>Float) -> Float = sum (for rc:(Fin 40, Fin 30). x[fst rc, snd rc] * x[fst rc, snd rc] * n_to_f (ordinal rc))\n";
    let mut fused = session(Engine::Fused);
    outputs(&mut fused, defs);
    let text = fused_stage(&mut fused, "grad fp xs");
    assert!(!text.contains("[1200, 30]"), "{text}");
    // Each read's cotangents, scattered to the digits of their points, are a reshape.
    assert!(!text.contains("scatter"), "{text}");
    // Through `concat`, whose digits are computed on `Nat`s (casts around `idiv` and `mod`),
    // with two reads of the concatenation: CSE makes them one gather, so their cotangents
    // add before one scatter, which is a reshape; one kernel in all.
    let concat = "def fc(x: (Fin 40)=>(Fin 30)=>Float) -> Float =\n  ys = concat x\n  sum for i. ys[i] * ys[i]\n";
    outputs(&mut fused, concat);
    let text = fused_stage(&mut fused, "grad fc xs");
    assert!(text.contains("cast_u32"), "{text}");
    assert!(!text.contains("scatter"), "{text}");
    assert_eq!(count_lines(&text, "kernel"), 1, "{text}");
    agrees_with_the_interpreter_on_1_and_2_threads(&format!(
        "{defs}{concat}:p (grad fp xs, grad (\\x. sum (concat x)) xs, grad fc xs)\n"
    ));
}

/// The gradients of reads through `reverse`, `slice` and a shift scatter each point to one
/// element at an affine position: `simp`'s ScatterAsGather makes them gathers by the
/// inverse, which fuse reads as affine runs, so the fused stage has no scatter; values as
/// the interpreter's on 1 and 2 threads.
#[test]
fn gradients_through_reversals_and_shifts_gather() {
    let defs = "x : (Fin 3000)=>Float = for i. sin (n_to_f (ordinal i) * 0.37)\n\
        def lr(v: (Fin 3000)=>Float) -> Float =\n  r = reverse v\n  sum for i. r[i] * r[i] * n_to_f (ordinal i)\n\
        def ls(v: (Fin 3000)=>Float) -> Float = sum for i:(Fin 2000). (slice v 700 (Fin 2000))[i] * n_to_f (ordinal i)\n";
    let mut fused = session(Engine::Fused);
    outputs(&mut fused, defs);
    for expr in ["grad lr x", "grad ls x"] {
        let text = fused_stage(&mut fused, expr);
        assert!(!text.contains("scatter"), "{text}");
        assert_eq!(count_lines(&text, "kernel"), 1, "{text}");
    }
    agrees_with_the_interpreter_on_1_and_2_threads(&format!("{defs}:p (grad lr x, grad ls x)\n"));
}

/// A ring's neighbours (`x[(i + 1) mod n]`, periodic boundaries) are wrapped reads in the
/// primal (Note [Wrapped reads]: no `mod` is computed per point), and their gradients
/// scatter by rotations, which `simp` makes gathers by the inverse rotation: the fused
/// stage of the gradient has no scatter and reads wrapped too; values as the interpreter's
/// on 1 and 2 threads (40 000 points: lines cut at the wrap, in parallel).
#[test]
fn gradients_through_ring_neighbours_gather_with_wrapped_reads() {
    let defs = "N = Fin 40000\n\
        x : N=>Float = for i. sin (n_to_f (ordinal i) * 0.37)\n\
        def right(i: N) -> N = (mod (ordinal i + 1) (size N)) @ N\n\
        def left(i: N) -> N = (mod (unsafe_nat_diff (ordinal i + size N) 1) (size N)) @ N\n\
        def lap(v: N=>Float) -> Float = sum for i. (v[right i] - 2.0 * v[i] + v[left i]) * sin v[i]\n";
    let mut fused = session(Engine::Fused);
    outputs(&mut fused, defs);
    for expr in ["lap x", "grad lap x"] {
        let text = fused_stage(&mut fused, expr);
        assert!(!text.contains("scatter"), "{text}");
        assert!(!text.contains(" = mod "), "{text}");
        assert!(text.contains("(i0 + 1) mod 40000]"), "{text}");
        assert!(text.contains("(i0 + 39999) mod 40000]"), "{text}");
    }
    agrees_with_the_interpreter_on_1_and_2_threads(&format!("{defs}:p (lap x, grad lap x)\n"));
}

/// The gradients of stencils (`x[i + a]` for every `i` and `a`: a 1-D filter and a 2-D
/// convolution) scatter each product to the sum of its indices: `simp`'s ScatterAsGather
/// makes them gathers summed over the filter's axes (`Σ_a ct[j − a, a]`), which fuse reads
/// in place with masks at the edges, so the fused stage of the gradient has no scatter and
/// no bulk step. The nested sums of the convolution are one transpose and two sums, so its
/// kernel runs along the image's rows. Values as the interpreter's on 1 and 2 threads.
#[test]
fn gradients_of_stencils_gather_and_sum() {
    let defs = "x : (Fin 300)=>Float = for i. sin (n_to_f (ordinal i) * 0.37)\n\
        img : (Fin 40)=>(Fin 40)=>Float = for i j. sin (n_to_f (ordinal i) * 0.37 + n_to_f (ordinal j) * 0.11)\n\
        w : (Fin 5)=>(Fin 5)=>Float = for a b. 0.2 * cos (n_to_f (ordinal a) * 0.71 + n_to_f (ordinal b) * 0.23)\n\
        def filt(v: (Fin 300)=>Float) -> Float = sum for i:(Fin 296). sq (sum for a:(Fin 5). v[(ordinal i + ordinal a) @ _] * w[a, a])\n\
        def conv(v: (Fin 40)=>(Fin 40)=>Float) -> Float = sum for i:(Fin 36). sum for j:(Fin 36). tanh (sum for a:(Fin 5). sum for b:(Fin 5). v[(ordinal i + ordinal a) @ _, (ordinal j + ordinal b) @ _] * w[a, b])\n";
    let mut fused = session(Engine::Fused);
    outputs(&mut fused, defs);
    for expr in ["grad filt x", "grad conv img"] {
        let text = fused_stage(&mut fused, expr);
        assert!(!text.contains("scatter"), "{text}");
        assert_eq!(count_lines(&text, "bulk"), 0, "{text}");
    }
    // `simp`'s SumOfSums: the stencil's kernel runs over [b, a, i, j], so its read of the
    // image moves along its rows with the kernel's last axis.
    let text = fused_stage(&mut fused, "conv img");
    let read = (text.lines().find(|line| line.contains("= read %")))
        .filter(|line| line.contains("img["))
        .unwrap_or_else(|| panic!("the first read is the image's: {text}"));
    assert!(read.trim_end().ends_with(", i0 + i3]"), "{text}");
    agrees_with_the_interpreter_on_1_and_2_threads(&format!(
        "{defs}:p (grad filt x, grad conv img)\n"
    ));
}

/// Note [Light values]: a value of one cheap operation read at a point and at both its
/// neighbours is computed by its reader three times rather than written and read back; one
/// of three operations read as often is materialised (six extra operations a point). A
/// block's result is read, not recomputed, by a light value: state_sim's backward step
/// scales the loop's cotangent (a result of the step) for the stencil's transpose, and is
/// two kernels a step, not three. Values as the interpreter's on 1 and 2 threads.
#[test]
fn light_values_read_at_neighbours_are_computed_by_their_reader() {
    let defs = r"N = Fin 400
x : N=>Float = for i. sin (n_to_f (ordinal i) * 0.37)
def right(i: N) -> N = (mod (ordinal i + 1) (size N)) @ N
def left(i: N) -> N = (mod (unsafe_nat_diff (ordinal i + size N) 1) (size N)) @ N
def one(v: N=>Float) -> Float =
  s = for i. 0.5 * v[i]
  sum for i. s[right i] * s[i] + s[left i]
def three(v: N=>Float) -> Float =
  s = for i. 0.5 * v[i] + v[i] * v[i]
  sum for i. s[right i] * s[i] + s[left i]
def sim(x0: N=>Float) -> Float =
  xT = yield_state x0 \xr.
    vr <- with_state (for i:N. 0.0)
    for_ t:(Fin 20).
      x = get xr
      v = for i. get vr!i + 0.01 * (x[right i] - 2.0 * x[i] + x[left i] - sin x[i])
      vr := v
      xr := for i. x[i] + 0.01 * v[i]
  sum for i. xT[i] * xT[i]
";
    let mut fused = session(Engine::Fused);
    outputs(&mut fused, defs);
    let text = fused_stage(&mut fused, "one x");
    assert_eq!(count_lines(&text, "kernel"), 1, "{text}");
    let text = fused_stage(&mut fused, "three x");
    assert_eq!(count_lines(&text, "kernel"), 2, "{text}");
    let text = fused_stage(&mut fused, "grad sim x");
    let backward = text
        .split("= fold")
        .nth(1)
        .expect("the gradient's backward loop is a fold");
    assert_eq!(count_lines(backward, "kernel"), 2, "{text}");
    agrees_with_the_interpreter_on_1_and_2_threads(&format!(
        "{defs}:p (one x, three x, grad one x, grad three x, grad sim x)\n"
    ));
}

/// Note [Small values]: in a loop of small steps, a gate `1 / (1 + exp (-h w))` that both
/// results of the step read is computed by each (two kernels a step, not three), in the
/// function's loop and in its gradient's forward loop; read by four results it is materialised (five kernels:
/// recomputing costly operations three more times costs more than a launch); over 400
/// points (more than a small value's) it is materialised when two read it. Values as the
/// interpreter's on 1 and 2 threads.
#[test]
fn small_values_in_loop_bodies_are_computed_by_their_readers() {
    let defs = r"def gated(h0: n=>Float) -> Float given (n|Ix) =
  w = for k:n. 0.3 * sin (n_to_f (ordinal k))
  (h, g) = fold((h0, h0), \t:(Fin 30) state.
    (h, g) = state
    s = for k. 1.0 / (1.0 + exp (0.0 - h[k] * w[k]))
    h' = for k. 0.9 * h[k] * s[k] + 0.1 * g[k]
    g' = for k. 0.5 * g[k] - 0.25 * s[k]
    (h', g'))
  sum for k. h[k] * g[k]
def four(h0: (Fin 14)=>Float) -> Float =
  (a, b, c, d) = fold((h0, h0, h0, h0), \t:(Fin 30) state.
    (a, b, c, d) = state
    s = for k. 1.0 / (1.0 + exp (0.0 - a[k] * b[k]))
    (for k. 0.5 * a[k] + s[k], for k. 0.5 * b[k] - s[k], for k. c[k] * s[k], for k. d[k] + 0.1 * s[k]))
  sum for k. a[k] + b[k] + c[k] + d[k]
x14 : (Fin 14)=>Float = for k. 0.5 + 0.25 * cos (n_to_f (ordinal k))
x400 : (Fin 400)=>Float = for k. 0.5 + 0.25 * cos (n_to_f (ordinal k))
";
    let mut fused = session(Engine::Fused);
    outputs(&mut fused, defs);
    // The kernels of the first loop body's schedule (the step of the forward loop).
    let step_kernels = |text: &str| {
        let body = text.split("each step:").nth(1).expect("a loop body");
        let body = body.split("\n    }").next().expect("the body's schedule");
        count_lines(body, "kernel")
    };
    let text = fused_stage(&mut fused, "gated x14");
    assert_eq!(step_kernels(&text), 2, "{text}");
    let text = fused_stage(&mut fused, "grad gated x14");
    assert_eq!(step_kernels(&text), 2, "{text}");
    let text = fused_stage(&mut fused, "four x14");
    assert_eq!(step_kernels(&text), 5, "{text}");
    let text = fused_stage(&mut fused, "gated x400");
    assert_eq!(step_kernels(&text), 3, "{text}");
    agrees_with_the_interpreter_on_1_and_2_threads(&format!(
        "{defs}:p (gated x14, grad gated x14, four x14, grad four x14, gated x400)\n"
    ));
}

/// A contraction too shallow for a matrix product (depth 6 < `MATMUL_MIN_DEPTH`) whose reads
/// are strided across the output (`w[k, j]` along `k`): its lines run across the output, not
/// 6 points at a time along the sum, and add in the same order as the interpreter (1 and 2
/// threads; an output row of 300 is wider than a segment's minimum, and 70 is not a multiple
/// of a leaf).
#[test]
fn shallow_contractions_with_strided_reads_agree_with_the_interpreter() {
    let src = "w : (Fin 300)=>(Fin 6)=>Float = for k j. sin (n_to_f (ordinal k * 6 + ordinal j))\n\
        d : (Fin 70)=>(Fin 6)=>Float = for i j. cos (n_to_f (ordinal i * 6 + ordinal j) * 0.3)\n\
        :p for i k. sum for j. w[k, j] * d[i, j]\n";
    let mut fused = session(Engine::Fused);
    outputs(&mut fused, src);
    let text = fused_stage(&mut fused, "for i k. sum for j. w[k, j] * d[i, j]");
    assert_eq!(count_lines(&text, "matmul"), 0, "{text}");
    agrees_with_the_interpreter_on_1_and_2_threads(src);
}

/// Elementwise kernels whose rows are short (10, 7 and 6 points) and read an operand
/// broadcast along them run their lines down axis 0 (`Launch::short_rows`), storing each line
/// down a column: values as the interpreter's, sequential and parallel (35 000 points).
#[test]
fn maps_with_short_rows_agree_with_the_interpreter() {
    let src = "a : (Fin 1024)=>(Fin 10)=>Float = for i j. sin (n_to_f (ordinal i * 10 + ordinal j))\n\
        b : (Fin 5000)=>(Fin 7)=>Float = for i j. cos (n_to_f (ordinal i * 7 + ordinal j))\n\
        c : (Fin 300)=>(Fin 20)=>(Fin 6)=>Float = for i j k. sin (n_to_f (ordinal i + 20 * ordinal j + ordinal k))\n\
        :p (for i j. exp (a[i, j] - a[i, 0]), for i j. b[i, j] * n_to_f (ordinal i), for i j k. c[i, j, k] + c[i, j, 0])\n";
    agrees_with_the_interpreter_on_1_and_2_threads(src);
}

/// Row reductions of a matrix, which the BOT writes over its transpose: the transpose that
/// feeds a monoid is a tiled copy, and a sum whose reads are strided across the output runs
/// along the summed axis instead. Both give the interpreter's bits (shapes that are not
/// multiples of the tile, outputs wider than a line, 1 and 2 threads).
#[test]
fn row_reductions_of_a_matrix_agree_with_the_interpreter() {
    let src = "m : (Fin 130)=>(Fin 2100)=>Float = for i j. sin (n_to_f (ordinal i * 2100 + ordinal j))\n\
        :p (for i. maximum m[i], for i. sum for j. exp (m[i, j] - maximum m[i]), for i. logsumexp m[i])\n";
    agrees_with_the_interpreter_on_1_and_2_threads(src);
}

/// Note [Float selections]: the fused `max`/`min` folds run in vector lanes, not in the
/// reference's order, and still give its bits: rows of signed zeros only (all `-0.`, or mixed
/// so the answer depends on treating -0 < +0), a NaN, along both layouts, and the gradient.
#[test]
fn selections_over_signed_zeros_and_nan_agree_with_the_interpreter() {
    let src = "z : (Fin 70)=>(Fin 2100)=>Float = for i j. select (mod (ordinal i) 7 == 0 || mod (ordinal i + ordinal j) 5 == 0) (-0.0) (select (ordinal i == 3 && ordinal j == 1500) nan 0.0)\n\
        :p (for i. maximum z[i], for i. minimum z[i], for j. maximum for i. z[i, j], for j. minimum for i. z[i, j])\n\
        :p grad (\\w. sum for i. maximum w[i] + minimum w[i]) z\n";
    agrees_with_the_interpreter_on_1_and_2_threads(src);
}

#[test]
fn first_maxima_in_later_lines_and_chunks_agree_with_the_interpreter() {
    // Rows of 2500 span three lines and three chunks: the row's maximum 3.0 comes first at
    // column 617 i mod 2500 (in any line or chunk) and again at the end; row 5 is all equal
    // (first maximum at 0), row 7 a NaN late in the row. The gradient shares each row's
    // weight among its maxima (JAX's rule): the ties are counted across lines and chunks,
    // and row 7's gradient is NaN.
    let src = "z : (Fin 40)=>(Fin 2500)=>Float = for i j. select (ordinal i == 5) 1.0 (select (ordinal i == 7 && ordinal j == 2200) nan (select (ordinal j == mod (ordinal i * 617) 2500 || ordinal j == 2499) 3.0 (sin (n_to_f (ordinal i * 2500 + ordinal j)))))\n\
        :p grad (\\w. sum for i. n_to_f (ordinal i + 1) * (maximum w[i] - minimum w[i])) z\n\
        :p sum for i. sum for j. n_to_f (ordinal j) * (grad (\\w. sum for i. maximum w[i]) z)[i, j]\n";
    agrees_with_the_interpreter_on_1_and_2_threads(src);
}

/// Note [Row groups]: chains of kernels over the same rows run a block of rows at a time, and
/// what only the chain reads is never materialised. The `fused` stage shows the group of the
/// `logsumexp` gradient (max, the shift where the max is finite, exponentials, sums,
/// reciprocals, quotients) with every output but the last local; values are the
/// interpreter's bits on 1 and 2 threads for chains of maps, sums and selections: 301 rows
/// (not a multiple of a block), rows of 20000 (more than one run of a sum), rank-3 rows
/// (reductions with outputs `[rows, 3]`), reads of a member's output shifted within the row
/// (masked at its end) and gathered within it (the labels), a scatter added into a member's
/// output, NaN and signed zeros in the maxima; and a read of the next row's maximum, which
/// keeps the reader out of the maxima's group.
#[test]
fn row_chains_run_in_groups_and_agree_with_the_interpreter() {
    let defs = "x : (Fin 301)=>(Fin 200)=>Float = for i j. 4.0 * sin (n_to_f (ordinal i * 200 + ordinal j) * 0.37)\n\
        labels = for i:(Fin 301). ((ordinal i * 7) `mod` 200) @ (Fin 200)\n\
        long : (Fin 8)=>(Fin 20000)=>Float = for i j. cos (n_to_f (ordinal i * 20000 + ordinal j) * 0.01)\n\
        cube : (Fin 150)=>(Fin 3)=>(Fin 100)=>Float = for i k j. sin (n_to_f (ordinal i * 300 + ordinal k * 100 + ordinal j))\n\
        z : (Fin 70)=>(Fin 2100)=>Float = for i j. select (mod (ordinal i) 7 == 0 || mod (ordinal i + ordinal j) 5 == 0) (-0.0) (select (ordinal i == 3 && ordinal j == 1500) nan 0.0)\n\
        def xent(z: (Fin 301)=>(Fin 200)=>Float) -> Float =\n  mean for r. logsumexp z[r] - z[r, labels[r]]\n\
        def norm(v: n=>Float) -> n=>Float given (n|Ix) =\n  m = mean v\n  s = mean for j. sq (v[j] - m)\n  for j. (v[j] - m) / sqrt (s + 1.0e-5)\n\
        def smooth(v: (Fin 200)=>Float) -> (Fin 200)=>Float =\n  e = for j. exp (v[j] - maximum v)\n  t = sum e\n  for j:(Fin 200). e[j] / t + (select (ordinal j < 199) e[((ordinal j + 1) `mod` 200) @ (Fin 200)] 0.0)\n\n";
    let mut fused = session(Engine::Fused);
    outputs(&mut fused, defs);
    let text = fused_stage(&mut fused, "grad (\\w. sum for r. logsumexp w[r]) x");
    assert_eq!(count_lines(&text, "rows k0 over [301]"), 1, "{text}");
    assert_eq!(count_lines(&text, "kernel k0."), 6, "{text}");
    assert_eq!(text.matches("writes local").count(), 5, "{text}");
    // The one-hot of softmax cross-entropy's labels is added by rows into the group's last
    // member; its array (`-1/R` at each row) is a member of the group too, and local: only
    // the group's last output is materialised.
    let text = fused_stage(&mut fused, "grad xent x");
    assert_eq!(count_lines(&text, "rows k"), 1, "{text}");
    assert_eq!(count_lines(&text, "scatter-add by rows"), 1, "{text}");
    assert_eq!(text.matches("writes %").count(), 1, "{text}");
    let text = fused_stage(&mut fused, "for i. norm long[i]");
    assert_eq!(count_lines(&text, "rows k"), 1, "{text}");
    // Maps over few rows alone stay kernels of their own: nothing to block.
    let text = fused_stage(
        &mut fused,
        "grad (\\v. sum (cumprod v)) (for i:(Fin 5000). 1.0 + 0.001 * n_to_f (ordinal i))",
    );
    assert_eq!(count_lines(&text, "rows k"), 0, "{text}");
    assert!(count_lines(&text, "kernel k") >= 2, "{text}");
    // Over many rows they make a group: the masked Newton step of a `while` under a `for`
    // (the step, the kept carries, the mask) with the step itself local.
    let newton =
        "(for i:(Fin 40001). yield_state (1.0 + 0.001 * n_to_f (ordinal i)) \\x. while \\. \n\
        \x20 xv = get x\n\
        \x20 x' = xv - (xv * xv * xv - 2.0) / (3.0 * xv * xv)\n\
        \x20 x := x'\n\
        \x20 abs (x' - xv) > 0.00001 * x')";
    let text = fused_stage(&mut fused, newton);
    assert_eq!(count_lines(&text, "rows k0 over [40001]"), 1, "{text}");
    assert_eq!(text.matches("writes local").count(), 1, "{text}");
    let src = format!(
        "{defs}:p sum {newton}\n\
         :p (sum for r. logsumexp x[r], for r. sum (softmax x[r]), grad xent x)\n\
         :p (for i. norm long[i], grad (\\w. sum for i. sum (norm w[i]) * n_to_f (ordinal i)) long)\n\
         :p for i k. norm cube[i, k]\n\
         :p grad (\\w. sum for i. sum for k. sum (norm w[i, k]) * n_to_f (ordinal k)) cube\n\
         :p (for r. smooth x[r], grad (\\w. sum for r. sum (smooth w[r])) x)\n\
         :p (for i. logsumexp z[i], for i. softmax z[i])\n\
         :p grad (\\w. sum for r. sum for j. exp (w[r, j] - (for q. maximum w[q])[((ordinal r + 1) `mod` 301) @ (Fin 301)])) x\n"
    );
    agrees_with_the_interpreter_on_1_and_2_threads(&src);
}

/// A `while` under a `for` over many lanes, batched with its mask: Newton's method (a
/// per-lane input read at its lane, a division), a carry that is a table per lane, an integer
/// step count beside a float, and a step that builds a table literal (a bulk statement): the
/// interpreter's bits on 1 and 2 threads.
#[test]
fn whiles_over_many_lanes_agree_with_the_interpreter() {
    let defs = "a = for i:(Fin 40001). 0.5 + 8.0 * (0.5 + 0.5 * sin (n_to_f (ordinal i) * 0.37))\n\
        def cbrt(a: Float, x0: Float) -> Float =\n  yield_state x0 \\x.\n    while \\.\n      xv = get x\n      x' = xv - (xv * xv * xv - a) / (3.0 * xv * xv)\n      x := x'\n      abs (x' - xv) > 0.00001 * x'\n\
        def steps(a: Float) -> (Fin 2)=>Float =\n  yield_state [1.0, 0.5] \\s.\n    while \\.\n      v = get s\n      s := for j. v[j] * 1.5 + 0.1 * a\n      v[0 @ (Fin 2)] < a\n\
        def count(a: Float) -> Nat =\n  yield_state 0 \\k.\n    vr <- with_state 1.0\n    while \\.\n      vr := get vr * 1.1\n      k := get k + 1\n      get vr < a\n\
        def pair(a: Float) -> (Fin 2)=>Float =\n  yield_state [1.0, 0.0] \\s.\n    while \\.\n      v = get s\n      s := [v[0 @ (Fin 2)] * 1.5, v[1 @ (Fin 2)] + a]\n      v[0 @ (Fin 2)] < a\n\n";
    let src = format!(
        "{defs}:p sum for i. cbrt a[i] (a[i] + 1.0)\n\
         :p (for i. steps a[i])[40000 @ (Fin 40001)]\n\
         :p sum for i. steps a[i]\n\
         :p sum for i. n_to_f (count a[i])\n\
         :p sum for i. pair a[i]\n"
    );
    agrees_with_the_interpreter_on_1_and_2_threads(&src);
}

#[test]
fn maps_over_transposed_operands_agree_with_the_interpreter() {
    // Kernels over [130, 2100] that read [2100, 130] arrays run their lines down axis 0.
    let src = "m : (Fin 130)=>(Fin 2100)=>Float = for i j. sin (n_to_f (ordinal i * 2100 + ordinal j))\n\
        mt = for j i. m[i, j] * 0.5 + 1.0\n\
        w = for i:(Fin 130) j:(Fin 2100). cos (n_to_f (ordinal i + 3 * ordinal j))\n\
        g = grad (\\x. sum for i. logsumexp x[i]) m\n\
        :p (sum for i. sum for j. w[i, j] * g[i, j], sum for i. sum for j. w[i, j] * (mt[j, i] - m[i, j]))\n";
    agrees_with_the_interpreter_on_1_and_2_threads(src);
}

#[test]
fn matrix_products_agree_with_the_interpreter_within_the_bound() {
    // Float64 products of size 48 (above the matrix-product threshold): faer sums in its own
    // order, so the results agree within a few ulps of the sum of magnitudes, not bit for bit.
    let src = "m = 48\na : (Fin m)=>(Fin 40)=>Float64 = for i j. sin (n_to_f (ordinal i * 40 + ordinal j))\nb : (Fin 40)=>(Fin m)=>Float64 = for i j. cos (n_to_f (ordinal i * 3 + ordinal j))\nc = for i k. sum for j. a[i, j] * b[j, k]\n";
    let mut fused = session(Engine::Fused);
    let mut reference = session(Engine::Reference);
    outputs(&mut fused, src);
    outputs(&mut reference, src);
    let text = fused_stage(&mut fused, "for i k. sum for j. a[i, j] * b[j, k]");
    assert_eq!(count_lines(&text, "matmul"), 1, "{text}");
    for expr in [
        "c",
        "for k i. c[i, k]",
        "for i. sum for j. a[i, j] * b[j, 3 @ Fin m]",
    ] {
        let got = fused.evaluate(expr).unwrap().1;
        let want = reference.evaluate(expr).unwrap().1;
        let (got, want) = (format!("{got:?}"), format!("{want:?}"));
        let numbers = |text: &str| -> Vec<f64> {
            text.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == 'e'))
                .filter_map(|word| word.parse().ok())
                .collect()
        };
        let (got, want) = (numbers(&got), numbers(&want));
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            // |error| ≤ k · 2⁻⁵² · Σ|a||b| ≤ 40 · 2.2e-16 · 40 for entries of magnitude ≤ 1.
            assert!((g - w).abs() <= 40.0 * 40.0 * 2.3e-16, "{expr}: {g} vs {w}");
        }
    }
}

#[test]
fn an_impossible_allocation_is_a_runtime_error_and_the_session_goes_on() {
    let mut session = session(Engine::Fused);
    outputs(&mut session, "keep = 41\n");
    let got = outputs(
        &mut session,
        "big : (Fin 1000000)=>(Fin 1000000)=>Float = for i j. n_to_f (ordinal i)\n",
    );
    let error = got
        .iter()
        .find_map(|output| match output {
            Output::Error(diagnostic) => Some(diagnostic.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("expected an error, got {got:?}"));
    assert_eq!(
        error.kind(),
        dx_lang::session::ErrorKind::Runtime,
        "{error:?}"
    );
    assert!(error.message.contains("not enough memory"), "{error:?}");
    assert_eq!(value(&mut session, ":p keep + 1\n"), "42");
}

/// Note [Batched products]: products with a batch axis between the output's rows and
/// columns (gmm's `Q_k (x_i - μ_k)`), with the small operand on either side (2500 columns
/// make the right one too large for a panel, so the product runs as `cᵀ = bᵀaᵀ`), run in
/// panels of every batch on one thread each; Note [Long batched products]: a contraction
/// over the long axis (gmm's `Σₙ g[n, k, i] d[n, k, j]`) runs in depth chunks added into
/// each batch's output. Within the bound of the interpreter, and the same bits on 1, 2 and
/// 3 threads.
#[test]
fn batched_products_agree_with_the_interpreter_and_across_threads() {
    let src = "q : (Fin 6)=>(Fin 16)=>(Fin 16)=>Float64 = for k j i. sin (n_to_f (ordinal k * 256 + ordinal j * 16 + ordinal i))\n\
        d : (Fin 2500)=>(Fin 6)=>(Fin 16)=>Float64 = for n k i. cos (n_to_f (ordinal n * 96 + ordinal k * 16 + ordinal i) * 0.37)\n\
        e : (Fin 2500)=>(Fin 6)=>(Fin 16)=>Float64 = for n k i. sin (n_to_f (ordinal n * 96 + ordinal k * 16 + ordinal i) * 0.23)\n";
    // (expression, depth, number of output elements)
    let exprs = [
        (
            "for n k j. sum for i. q[k, j, i] * d[n, k, i]",
            16,
            2500 * 6 * 16,
        ),
        (
            "for k j n. sum for i. d[n, k, i] * q[k, j, i]",
            16,
            2500 * 6 * 16,
        ),
        (
            "for k i j. sum for n. e[n, k, i] * d[n, k, j]",
            2500,
            6 * 16 * 16,
        ),
    ];
    let mut fused = session(Engine::Fused);
    let mut reference = session(Engine::Reference);
    outputs(&mut fused, src);
    outputs(&mut reference, src);
    let numbers = |session: &mut Session, expr: &str| -> Vec<f64> {
        let text = format!("{:?}", session.evaluate(expr).unwrap().1);
        text.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == 'e'))
            .filter_map(|word| word.parse().ok())
            .collect()
    };
    for (expr, depth, len) in exprs {
        let text = fused_stage(&mut fused, expr);
        assert_eq!(count_lines(&text, "matmul"), 1, "{text}");
        let (got, want) = (numbers(&mut fused, expr), numbers(&mut reference, expr));
        assert!(got.len() >= len, "{expr}: {} numbers", got.len());
        assert_eq!(got.len(), want.len());
        let bound = (depth * depth) as f64 * 2.3e-16;
        for (g, w) in got.iter().zip(&want) {
            // |error| ≤ k · 2⁻⁵² · Σ|a||b| ≤ k · 2.3e-16 · k for entries of magnitude ≤ 1.
            assert!((g - w).abs() <= bound, "{expr}: {g} vs {w}");
        }
        let entry = format!("{src}:p {expr}\n");
        let on = |threads: usize| value_on(Engine::Fused, threads, &entry);
        let one = on(1);
        for threads in [2, 3] {
            assert_eq!(on(threads), one, "{expr} on {threads} threads");
        }
    }
}

/// Note [Diagonals of products]: dot products `Σₙ e[n, k, j] d[n, k, j]` computed after the
/// product `Σₙ e[n, k, i] d[n, k, j]` (gmm's gradients of `q` and `L`) read its diagonal, in
/// either operand order and either output order: the fused stage has one product and no
/// other sum over `n`, the dot products are the product's diagonal bit for bit, and all are
/// within the product bound of the interpreter.
#[test]
fn dot_products_on_a_products_diagonal_read_it() {
    let src = "d : (Fin 2500)=>(Fin 6)=>(Fin 16)=>Float64 = for n k i. cos (n_to_f (ordinal n * 96 + ordinal k * 16 + ordinal i) * 0.37)\n\
        e : (Fin 2500)=>(Fin 6)=>(Fin 16)=>Float64 = for n k i. sin (n_to_f (ordinal n * 96 + ordinal k * 16 + ordinal i) * 0.23)\n";
    let expr = "(for k i j. sum for n. e[n, k, i] * d[n, k, j], for k j. sum for n. e[n, k, j] * d[n, k, j], for k j. sum for n. d[n, k, j] * e[n, k, j], for j k. sum for n. e[n, k, j] * d[n, k, j])";
    let mut fused = session(Engine::Fused);
    let mut reference = session(Engine::Reference);
    outputs(&mut fused, src);
    outputs(&mut reference, src);
    let text = fused_stage(&mut fused, expr);
    assert_eq!(count_lines(&text, "matmul"), 1, "{text}");
    let sums = text
        .lines()
        .filter(|line| line.trim_start().starts_with("kernel") && line.contains(" sum "));
    assert_eq!(sums.count(), 0, "{text}");
    let tables = |session: &mut Session| float64_tables(session.evaluate(expr).unwrap().1);
    let (got, want) = (tables(&mut fused), tables(&mut reference));
    let (product, dots, swapped, transposed) = (&got[0], &got[1], &got[2], &got[3]);
    assert_eq!(product.len(), 6 * 16 * 16);
    assert_eq!((dots.len(), swapped.len(), transposed.len()), (96, 96, 96));
    for k in 0..6 {
        for j in 0..16 {
            let on_diagonal = product[k * 256 + j * 16 + j].to_bits();
            assert_eq!(dots[k * 16 + j].to_bits(), on_diagonal, "k {k} j {j}");
            assert_eq!(swapped[k * 16 + j].to_bits(), on_diagonal);
            assert_eq!(transposed[j * 6 + k].to_bits(), on_diagonal);
        }
    }
    let bound = 2500.0 * 2500.0 * 2.3e-16;
    for (g, w) in got.iter().flatten().zip(want.iter().flatten()) {
        assert!((g - w).abs() <= bound, "{g} vs {w}");
    }
}

/// Note [Products in bands]: a product of 301 rows runs in a band of rows per thread
/// (150 + 151 on 2 threads, ~100 on 3, one faer call on 1), one of 301 columns in bands of
/// columns, and so does one row of 301 columns (deep enough to be worth two threads: its
/// bands are calls of one column); each gives the same bits on every number of threads,
/// within the product bound of the interpreter.
#[test]
fn products_in_bands_give_the_same_bits_on_any_number_of_threads() {
    for (m, k, n) in [(301, 200, 250), (250, 200, 301), (1, 4000, 301)] {
        let src = format!(
            "a : (Fin {m})=>(Fin {k})=>Float64 = for i j. sin (n_to_f (ordinal i * {k} + ordinal j))\n\
             b : (Fin {k})=>(Fin {n})=>Float64 = for i j. cos (n_to_f (ordinal i * 3 + ordinal j))\n"
        );
        let expr = "for i k. sum for j. a[i, j] * b[j, k]";
        let elements = |session: &mut Session| -> Vec<f64> {
            outputs(session, &src);
            float64_tables(session.evaluate(expr).unwrap().1).concat()
        };
        let on = |threads: usize| on_threads(threads, || elements(&mut session(Engine::Fused)));
        let one = on(1);
        assert_eq!(one.len(), m * n);
        for threads in [2, 3] {
            let bits = |values: &[f64]| values.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert!(
                bits(&on(threads)) == bits(&one),
                "{m}×{n}, {threads} threads"
            );
        }
        let mut fused = session(Engine::Fused);
        outputs(&mut fused, &src);
        assert_eq!(count_lines(&fused_stage(&mut fused, expr), "matmul"), 1);
        let want = elements(&mut session(Engine::Reference));
        let bound = (k * k) as f64 * 2.3e-16;
        for (g, w) in one.iter().zip(&want) {
            // |error| ≤ k · 2⁻⁵² · Σ|a||b| ≤ k · 2.3e-16 · k for entries of magnitude ≤ 1.
            assert!((g - w).abs() <= bound, "{g} vs {w}");
        }
    }
}
