//! One line of documentation per built-in function, shown by `:help name` (the prelude's
//! functions carry theirs as comments above their `def`).

/// The documentation of the built-in `name`, if it is one.
pub fn builtin_doc(name: &str) -> Option<&'static str> {
    Some(match name {
        "neg" => "`-x`, element by element.",
        "abs" => "The absolute value, element by element.",
        "sqrt" | "exp" | "exp2" | "log" | "log2" | "log10" | "log1p" | "expm1" | "sin" | "cos"
        | "tan" | "tanh" | "sinh" | "cosh" | "atan" => {
            "The floating-point function of that name (IEEE 754), element by element."
        }
        "floor" | "ceil" | "round" => "Rounding of floats, element by element.",
        "pow" => "`pow x y`: `x` to the power `y`, element by element.",
        "atan2" => "`atan2 y x`: the angle of the point (x, y), element by element.",
        "min" | "max" => {
            "The smaller (larger) of two values; tuples and tables by Dex's lexicographic order \
             (the first argument on ties)."
        }
        "mod" => "The remainder with the divisor's sign (0 when dividing by zero).",
        "idiv" => "Integer division rounding towards minus infinity (0 when dividing by zero).",
        "select" => "`select c a b`: `a` where `c` holds, else `b`.",
        "not" => "Boolean negation.",
        "isnan" | "isinf" => "Whether a float is NaN (infinite).",
        "threefry_2x32" => "Threefry-2x32 (20 rounds) of a key and a word: the hash of `hash`.",
        "unit_from_bits" => "A float in [0, 1) from the low 23 bits of a word (used by `rand`).",
        "n_to_f" | "i_to_f" | "f_to_i" | "b_to_f" | "n_to_i" | "i_to_n" | "b_to_n" | "f_to_n"
        | "n_to_w64" | "i_to_w64" | "w64_to_n" => {
            "A numeric conversion, named as Dex's (`f` Float, `i` Int, `n` Nat, `b` Bool, `w64` \
             Word64): floats truncate towards zero and saturate, integers wrap, `True` is 1."
        }
        "cast" => "A numeric conversion to the type the context asks for.",
        "ordinal" => "The position of an index in its index set, as a Nat.",
        "size" => "`size n`: the number of elements of the index set `n`.",
        "from_ordinal" | "unsafe_from_ordinal" => {
            "`from_ordinal n k`: the index of the index set `n` at position `k`."
        }
        "coerce_table" => {
            "`coerce_table m xs`: the elements of `xs` in row-major order, indexed by the index \
             set `m` of the same size (`coerce_table _ xs` infers `m`)."
        }
        "unsafe_nat_diff" => "`unsafe_nat_diff x y`: `x - y` on Nat, for `x >= y` (as Dex's).",
        "sum" => "The sum of a table's elements (of any vector space: a matrix sums to a row).",
        "iota" => "`iota n`: the table of the ordinals of the index set `n`.",
        "fold" => "`fold(init, \\i c. body)`: a left fold over an index set.",
        "scan" => {
            "`scan(init, \\i c. (c', y))`: a fold that also returns the table of each step's `y`."
        }
        "reduce" => {
            "`reduce(xs, e, op)`: `xs[0] op xs[1] op …` combined as a parallel tree, for a closed \
             associative `op` on scalars or tuples of scalars with identity `e` (the result for \
             an empty table). Differentiable when `op` is ([Paszke21])."
        }
        "assoc_scan" => {
            "`assoc_scan(xs, e, op)`: the inclusive scan `[xs[0], xs[0] op xs[1], …]` as a \
             parallel scan, for a closed associative `op` with identity `e`. Differentiable \
             when `op` is: the derivatives are parallel scans too ([Paszke21])."
        }
        "apply_n" => "`apply_n(k, x, f)`: `f` applied `k` times to `x`.",
        "zero" => "The zero of the type the context asks for.",
        "one" => "The one (of `*`) of the type the context asks for.",
        "fst" | "snd" => "The first (second) component of a pair.",
        "pi" | "infinity" | "nan" => "A float constant of the type the context asks for.",
        "lowest" | "highest" => {
            "The identity of `max` (`min`) at the type the context asks for: `-infinity` \
             (`infinity`), the smallest (largest) integer, the first (last) index."
        }
        "custom_vjp" => {
            "`custom_vjp(f, fwd, bwd)`: `f` with a reverse-mode derivative of your own (JAX's \
             `custom_vjp`): `fwd x` gives `(f x, residuals)` and `bwd residuals ct` the \
             cotangent of `x`; `grad`, `vjp` and `value_and_grad` use them."
        }
        "grad" => "`grad f x`: the gradient of a function with a scalar float result.",
        "deriv_rev" => "`deriv_rev f x`: the derivative of a scalar function, in reverse mode.",
        "jvp" => "`jvp f x t`: the derivative of `f` at `x` in the direction `t`.",
        "deriv" => "`deriv f x`: the derivative of a scalar function, in forward mode.",
        "vjp" => "`vjp f x`: `(f x, pullback)`, the pullback mapping cotangents to gradients.",
        "linearize" => "`linearize f x`: `(f x, tangent map)`.",
        "transpose_linear" => "`transpose_linear f ct`: the transpose of a linear function.",
        "jacobian" => {
            "`jacobian f x`: one row per output, one column per input; for tuples, a tuple per \
             output of a tuple per input (as JAX's)."
        }
        "hessian" => "`hessian f x`: the Jacobian of `grad f` at `x` (as JAX's).",
        "value_and_grad" => "`value_and_grad f x`: `(f x, grad f x)` from one reverse pass.",
        "stop_gradient" => {
            "`stop_gradient x`: `x`, treated as a constant by differentiation (its derivative is \
             zero), element by element (JAX's `lax.stop_gradient`)."
        }
        "check_deriv" => "Whether `f`'s derivative at `x` agrees with finite differences.",
        "arb" => "`arb k`: a random value of the type the context asks for.",
        "dex_test_mode" => {
            "`dex_test_mode()`: whether the environment variable `DEX_TEST_MODE` was set when the \
             session started, as Dex's \
             (its examples run small under test: `if dex_test_mode() then 10 else 1000`)."
        }
        "file_length" => {
            "`file_length path`: the number of bytes of the file `path`, read when the block is \
             compiled (the prelude's `read_file` is made of it and `file_byte`)."
        }
        "file_byte" => {
            "`file_byte(path, k)`: the `k`-th byte of the file `path` (see `file_length`)."
        }
        "internal_cast" => {
            "`internal_cast(to=T, x)`: the scalar `x` as a value of the scalar type `T`, \
             converted or truncated as Dex's `%cast` (a `Char` to its byte, an `Int` to the low \
             byte of a `Word8`)."
        }
        "<>" => {
            "`xs <> ys`: the elements of the list `xs` followed by those of `ys` (its length is \
             the sum of theirs); for a user type, the `<>` of its `Monoid` instance."
        }
        "mempty" => "`mempty`: the empty list; for a user type, its `Monoid` instance's `mempty`.",
        "show" => {
            "`show x`: the text of `x` as a `String`, as Dex's `show` writes it (`show 1.5` is \
             `\"1.5\"`; tables, tuples and user types as `:p` prints them). Its length is the \
             longest text of `x`'s type; the places past the text hold `'\\x00'`, which \
             printing skips."
        }
        "inject" => {
            "`inject j`: the element of `n` that the index `j` of a range of `n` (`(..i)`, \
             `(i..)`) stands for."
        }
        "unsafe_project" => {
            "`unsafe_project j`: the index of a range of `n` (`(..i)`, `(i..)`; the context \
             decides which) that the element `j` of `n` is, the inverse of `inject`; `j` must \
             be in the range."
        }
        "project" => {
            "`project j`: `Just` the index of a range of `n` that the element `j` of `n` is, \
             or `Nothing` when `j` is outside the range (the context decides the range)."
        }
        "run_state" => "`run_state(init, \\ref. body)`: the body's result and the final state.",
        "with_state" => "`with_state(init, \\ref. body)`: the body's result (state: `get`, `:=`).",
        "yield_state" => "`yield_state(init, \\ref. body)`: the final state.",
        "get" => "`get ref`: the value a `State` reference holds.",
        "run_accum" => {
            "`run_accum(monoid, \\acc. body)`: the body's result and the accumulated value."
        }
        "yield_accum" => {
            "`yield_accum(AddMonoid Float, \\acc. body)`: the sum of every `acc += v` \
             (`acc!i += v` adds to one element)."
        }
        "AddMonoid" | "MulMonoid" | "AndMonoid" | "OrMonoid" => {
            "A monoid for `yield_accum`: `AddMonoid a` (`+`, 0), `MulMonoid a` (`*`, 1), \
             `AndMonoid` (`&&`, True), `OrMonoid` (`||`, False)."
        }
        "with_reader" | "run_reader" => "`with_reader(x, \\r. body)`: `ask r` in the body is `x`.",
        "ask" => "`ask r`: the value of a reader reference.",
        "while" => "`while(\\. body)`: runs the body until it returns `False` (at least once).",
        "iter" => {
            "`iter(\\i. …)`: runs the body for i = 0, 1, … until it returns `Done(x)`; gives `x` \
             (`Continue` goes on)."
        }
        "bounded_iter" => {
            "`bounded_iter(max, fallback, \\i. …)`: `iter`, giving `fallback` after `max` steps."
        }
        "catch" => {
            "`catch(\\. body)`: `Just` the body's result, or `Nothing` if it calls `throw()`."
        }
        "throw" => "`throw()`: leaves the enclosing `catch`, which gives `Nothing`.",
        "error" => "`error \"message\"`: stops the block with `Runtime error: message`.",
        "print" => "`print \"text\"`: writes a line before the block's value (each time it runs).",
        "unsafe_io" => "`unsafe_io(\\. body)`: the body's result; its `print`s are shown.",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::builtin_doc;
    use crate::check::builtins::Builtin;

    #[test]
    fn every_builtin_has_documentation() {
        for name in Builtin::names() {
            assert!(builtin_doc(name).is_some(), "no documentation for `{name}`");
        }
    }
}
