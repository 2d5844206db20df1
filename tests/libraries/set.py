"""Checks the values `set.dx` saved (the `set` library) against `numpy.unique`,
`numpy.union1d`, `numpy.intersect1d` and `numpy.isin`. Runs in the folder holding the `.npy`
files."""

import numpy as np

from checks import failures, finish, load, same


left, right, floats = load("left"), load("right"), load("floats")
queries, pair_a, pair_b = load("queries"), load("pair_a"), load("pair_b")

if len(np.unique(left)) > len(left) - 20:
    failures.append("the input meant to have repeats has too few of them")

# Sets move values without computing anything: the results are exact.
same("to_set of integers", load("unique_left"), np.unique(left))
same("to_set of integers with negatives", load("unique_right"), np.unique(right))
same("set_union", load("union"), np.union1d(left, right))
same("set_intersect", load("intersect"), np.intersect1d(left, right))
same("to_set of floats", load("unique_floats"), np.unique(floats))
same("remove_duplicates_from_sorted", load("deduplicated"), np.unique(left))

pairs = sorted(set(zip(pair_a.tolist(), pair_b.tolist())))
same("to_set of pairs (first)", load("unique_pair_a"), np.array([p[0] for p in pairs], np.int32))
same("to_set of pairs (second)", load("unique_pair_b"), np.array([p[1] for p in pairs], np.int32))

unique_left = np.unique(left)
position = np.searchsorted(unique_left, queries)
inside = np.isin(queries, unique_left)
same("member", load("member"), np.where(inside, position, -1).astype(np.int32))
same("value of every index of Element set", load("values"), unique_left)

same(
    "set_size",
    load("sizes"),
    np.array(
        [len(unique_left), len(np.unique(right)), len(np.union1d(left, right)),
         len(np.intersect1d(left, right)), len(pairs)],
        np.uint32,
    ),
)
# set_left == reversed, set_left == set_right, then five identities, then commutativity
same("equalities", load("equalities"), np.array([1, 0, 1, 1, 1, 1, 1, 1], np.int32))

finish("set", "NumPy")
