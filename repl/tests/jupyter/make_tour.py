"""Writes examples/tour.ipynb with its outputs produced by the dx kernel itself.

Run with the test venv's Python, with the `dx` kernelspec installed:
    target/test-venv/bin/python repl/tests/jupyter/make_tour.py examples/tour.ipynb
"""

import sys

import nbclient
import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

CELLS = [
    ("md", "# A tour of dx\n\ndx is a Dex-like differentiable array language. Tables are "
           "indexed by index sets; `for` builds them; `grad` differentiates."),
    ("code", "xs = [1., 2., 3., 4.]\n:p sum xs"),
    ("md", "A 2-D table is shown as a table, with its index labels."),
    ("code", "m = for i:(Fin 3) j:(Fin 4). n_to_f (ordinal i) * 10.0 + n_to_f (ordinal j)\nm"),
    ("code", ":table (xs, for i. xs[i] * xs[i])"),
    ("md", "Shapes are part of the types:"),
    ("code", ":t m"),
    ("md", "An error shows the source with carets under the problem:"),
    ("code", ":p xs + True"),
    ("md", "Gradients come from dx's own reverse mode:"),
    ("code", "def loss(w: (Fin 4)=>Float) -> Float = sum (for i. (w[i] - xs[i]) * (w[i] - xs[i]))\n"
             ":p grad loss [0., 0., 0., 0.]"),
    ("code", ":plotgrad (\\x. x * sin x) (-6.0) 6.0"),
    ("code", ":plotgrad loss [0., 0., 0., 0.]"),
    ("md", "Plots have a title and axis labels (from the expression, or given after it: title, "
           "x label, y label, then the series' names), a legend beside the data and a colour "
           "bar beside a heat map:"),
    ("code", ":plot (xs, for i. xs[i] * xs[i], for i. sqrt xs[i]) \"Powers\" \"x\" \"y\" \"square\" \"root\""),
    ("code", ":plot m"),
    ("md", "Every compiler stage can be shown; in a notebook each is a collapsible section:"),
    ("code", "%passes core bot fused\n%time\n:p sum (for i. xs[i] * xs[i])"),
]


def main(path):
    notebook = new_notebook()
    notebook.metadata["kernelspec"] = {"name": "dx", "display_name": "dx", "language": "dx"}
    notebook.cells = [
        new_markdown_cell(text) if kind == "md" else new_code_cell(text) for kind, text in CELLS
    ]
    nbclient.NotebookClient(notebook, kernel_name="dx", timeout=120, allow_errors=True).execute()
    nbformat.validate(notebook)
    nbformat.write(notebook, path)


if __name__ == "__main__":
    main(sys.argv[1])
