"""Checks the values `sort.dx` saved (the `sort` library) against `numpy.sort`, stable
`numpy.argsort`, `numpy.searchsorted` and `jax.grad` of a function of `jax.numpy.sort`. Runs
in the folder holding the `.npy` files."""

import numpy as np
import jax
import jax.numpy as jnp

from checks import close, failures, finish, load, same


floats, ties, ints = load("floats"), load("ties"), load("ints")
ascending, descending = load("ascending"), load("descending")
pair_keys, pair_vals = load("pair_keys"), load("pair_vals")
queries, weights = load("queries"), load("weights")

if len(np.unique(ties)) > len(ties) - 10:
    failures.append("the input meant to have ties has too few of them")

# sorting moves values without computing anything: the results are exact
same("sort of distinct floats", load("sort_floats"), np.sort(floats))
same("sort with ties", load("sort_ties"), np.sort(ties))
same("sort of integers with ties", load("sort_ints"), np.sort(ints))
same("sort of sorted input", load("sort_ascending"), np.sort(ascending))
same("sort of reversed input", load("sort_descending"), np.sort(descending))
same("sort of one element", load("sort_one"), np.array([3.5], np.float32))

order = np.lexsort((pair_vals, pair_keys))  # by key, then by value
same("sort of pairs (keys)", load("sort_pair_keys"), pair_keys[order])
same("sort of pairs (values)", load("sort_pair_vals"), pair_vals[order])

same("argsort of distinct floats", load("argsort_floats"), np.argsort(floats, kind="stable"))
same("argsort with ties (stable)", load("argsort_ties"), np.argsort(ties, kind="stable"))
same("argsort of integers (stable)", load("argsort_ints"), np.argsort(ints, kind="stable"))
same("argsort of reversed input", load("argsort_descending"), np.argsort(descending, kind="stable"))
same("argsort of pairs (stable)", load("argsort_pairs"), order)

def numpy_is_sorted(x):
    return int(np.all(x[:-1] <= x[1:]))

sorted_pairs = list(zip(pair_keys[order], pair_vals[order]))
pairs = list(zip(pair_keys, pair_vals))
same("is_sorted", load("is_sorted"), np.array([
    numpy_is_sorted(floats), 1, numpy_is_sorted(ascending), numpy_is_sorted(descending),
    1, 1, int(sorted_pairs == sorted(pairs)), int(pairs == sorted(pairs))], np.int32))

same("merge_sorted_tables", load("merged"), np.sort(np.concatenate([floats, ties])))

# search_sorted: the highest i with xs[i] <= x, or -1: searchsorted(side="right") - 1
sorted_ties = np.sort(ties)
same("search_sorted with ties", load("search_ties"), np.searchsorted(sorted_ties, queries, side="right") - 1)
same("search_sorted", load("search_ascending"), np.searchsorted(ascending, queries, side="right") - 1)
same("search_sorted of the elements themselves", load("search_exact"),
     np.searchsorted(sorted_ties, sorted_ties, side="right") - 1)

# the gradient through sort is the weights sent back to where each element came from
def loss(x):
    return jnp.sum(jnp.sort(x) * weights)

close("grad through sort", load("grad_sort"), jax.grad(loss)(jnp.asarray(floats)))
close("grad through sort with ties", load("grad_sort_ties"), jax.grad(loss)(jnp.asarray(ties)))

finish("sort", "NumPy/JAX")
