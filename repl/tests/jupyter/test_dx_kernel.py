"""The dx kernel against real Jupyter clients (run by repl/tests/jupyter.rs).

The kernelspec `dx` must be installed where JUPYTER_PATH points. `DX_TOUR` names the tour
notebook that nbclient runs end to end.
"""

import base64
import io
import os
import re
import queue
import subprocess
import tempfile
import time
import unittest
import xml.etree.ElementTree as ElementTree

import jupyter_kernel_test as jkt
import nbclient
import nbformat
import numpy as np
import pygments.lexers
from jupyter_client.session import Session
from PIL import Image

from kernel_client import TIMEOUT, KernelTestCase


# Colours of the first two series of a plot (display/plot.rs PALETTE).
BLUE = (31, 119, 180)
ORANGE = (255, 127, 14)

SVG = "{http://www.w3.org/2000/svg}"


def svg_words(svg):
    """The words of a plot's SVG: each text element that draws some, with its attributes."""
    root = ElementTree.fromstring(svg)
    assert root.tag == SVG + "svg", root.tag
    return [
        ((element.text or "").strip(), element.attrib)
        for element in root.iter(SVG + "text")
        if (element.text or "").strip()
    ]


def is_progress(msg):
    """Whether `msg` is the progress display of a block that ran past a second (its
    `display_id` names it; under load even a plot can take that long): not a cell's output."""
    display_id = msg["content"].get("transient", {}).get("display_id") or ""
    return display_id.startswith("dx-progress-")


def output_displays(messages):
    """The cell's `display_data` messages, progress displays left out."""
    return [m for m in messages if m["msg_type"] == "display_data" and not is_progress(m)]


def is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


class DxKernelTests(jkt.KernelTests):
    """jupyter_kernel_test with a sample for every test it has."""

    kernel_name = "dx"
    language_name = "dx"
    file_extension = ".dx"

    code_hello_world = ':p "hello, world"'
    code_stderr = "import no_such_library"
    completion_samples = [
        {"text": "logsumex", "matches": {"logsumexp", "logsumexp_online"}},
        {"text": ":plotg", "matches": {":plotgrad"}},
        {"text": "for i. maxim", "matches": {"maximum", "maximum_by"}},
    ]
    complete_code_samples = [":p 1 + 2", "def f(x: Float) -> Float = x * x", "x = 3.0"]
    incomplete_code_samples = [":p (1 +", "def f(x: Float) -> Float ="]
    invalid_code_samples = [":p 1 +* )", "x = )"]
    code_generate_error = ":p 1.0 + True"
    code_execute_result = [
        {"code": ":p 6 * 7", "result": "42"},
        {"code": "[1., 2.] + [3., 4.]", "result": "[4., 6.]"},
        {"code": ":t [1., 2.]", "result": "((Fin 2) => Float32)"},
    ]
    code_display_data = [
        {"code": ":plot [1., 4., 9.]", "mime": "image/png"},
        {"code": ":plotgrad sin 0.0 3.0", "mime": "image/svg+xml"},
    ]
    code_inspect_sample = "sum"
    code_history_pattern = ":p 6*"
    supported_history_operations = ("tail", "range", "search")

    # dx has no pager and never clears output: these two tests have no sample to give.
    test_pager = None
    test_clear_output = None

    def test_display_data(self):
        """jupyter_kernel_test's, with a block's progress display left out: every other
        `display_data` of each sample has the sample's type."""
        for sample in self.code_display_data:
            with self.subTest(code=sample["code"]):
                self.flush_channels()
                reply, output_msgs = self.execute_helper(sample["code"])
                self.assertEqual(reply["content"]["status"], "ok")
                displays = output_displays(output_msgs)
                self.assertTrue(displays, "display_data message not found")
                for msg in displays:
                    self.assertIn(sample["mime"], msg["content"]["data"])


class DxIopubWelcomeTests(jkt.IopubWelcomeTests):
    kernel_name = "dx"
    support_iopub_welcome = True


class ClientTests(KernelTestCase):
    """Interrupts, errors, stop-on-error and signatures, with jupyter_client."""

    def test_interrupt_stops_a_long_cell_and_the_session_survives(self):
        self.execute("x = 21")
        long_cell = ":p sum (for i:(Fin 30000) j:(Fin 30000). sin (n_to_f (ordinal i) * n_to_f (ordinal j)))"
        msg_id = self.kc.execute(long_cell)
        time.sleep(1.5)
        started = time.monotonic()
        self.km.interrupt_kernel()
        reply = self.reply_to(msg_id, timeout=10)
        latency = time.monotonic() - started
        messages = self.iopub_until_idle(msg_id)
        self.assertEqual(reply["content"]["status"], "error")
        errors = [msg for msg in messages if msg["msg_type"] == "error"]
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0]["content"]["ename"], "RuntimeError")
        self.assertIn("interrupted", errors[0]["content"]["evalue"])
        print(f"interrupt latency: {latency * 1000:.0f} ms")
        # 100 ms is the goal; a debug build on a loaded machine gets some slack.
        self.assertLess(latency, 1.0)
        reply, messages = self.execute(":p x * 2")
        self.assertEqual(reply["content"]["status"], "ok")
        self.assertEqual(self.result_text(messages), ["42"])

    def test_an_error_leaves_the_session_usable(self):
        self.execute("x = 5")
        reply, messages = self.execute(":p x + True")
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "TypeError")
        error = [msg for msg in messages if msg["msg_type"] == "error"][0]["content"]
        self.assertEqual(error["ename"], "TypeError")
        traceback = "\n".join(error["traceback"])
        self.assertIn("Type error", traceback)
        self.assertIn(":p x + True", traceback)
        self.assertIn("^", traceback)
        reply, messages = self.execute(":p x * 2")
        self.assertEqual(reply["content"]["status"], "ok")
        self.assertEqual(self.result_text(messages), ["10"])

    def test_stop_on_error_aborts_the_queued_cells(self):
        # The failing cell computes for a while first, so that the next two requests are
        # queued before it fails (a kernel aborts what it has received, as ipykernel does).
        first = self.kc.execute("slow = fold(0.0, \\i:(Fin 10000000) c. c * 0.5 + 1.0)\n:p 1 + True")
        second = self.kc.execute("y = 1")
        third = self.kc.execute(":p 2", stop_on_error=False)
        self.assertEqual(self.reply_to(first)["content"]["status"], "error")
        self.assertEqual(self.reply_to(second)["content"]["status"], "aborted")
        self.assertEqual(self.reply_to(third)["content"]["status"], "aborted")
        reply, messages = self.execute(":p 3")
        self.assertEqual(self.result_text(messages), ["3"])
        # Without stop_on_error, the queue runs on.
        first = self.kc.execute(":p 1 + True", stop_on_error=False)
        second = self.kc.execute(":p 4")
        self.assertEqual(self.reply_to(first)["content"]["status"], "error")
        self.assertEqual(self.reply_to(second)["content"]["status"], "ok")

    def test_a_message_with_a_bad_signature_is_ignored(self):
        forger = Session(key=b"not-the-key", username="mallory")
        message = forger.msg("execute_request", {
            "code": "forged = 1.0", "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True,
        })
        forger.send(self.kc.shell_channel.socket, message)
        with self.assertRaises(queue.Empty):
            self.reply_to(message["header"]["msg_id"], timeout=2)
        # The kernel keeps answering, and did not run the forged cell.
        reply, messages = self.execute(":t forged")
        self.assertEqual(reply["content"]["status"], "error")
        reply, messages = self.execute(":p 1 + 1")
        self.assertEqual(self.result_text(messages), ["2"])

    def test_tables_stages_and_timings_are_rich(self):
        _, messages = self.execute("[[1., 2.], [3., 4.]]")
        data = [msg["content"]["data"] for msg in messages if msg["msg_type"] == "execute_result"]
        self.assertEqual(data[0]["text/plain"], "[[1., 2.], [3., 4.]]")
        self.assertIn("<td style=\"text-align:right\">4.</td>", data[0]["text/html"])
        _, messages = self.execute(":table ([1., 2.], [3., 4.])")
        data = [msg["content"]["data"] for msg in messages if msg["msg_type"] == "execute_result"]
        self.assertIn("┆", data[0]["text/plain"])
        self.assertIn("<th>.1</th>", data[0]["text/html"])
        _, messages = self.execute("'# A *title*\n\n:p 1")
        markdown = [msg["content"]["data"].get("text/markdown") for msg in output_displays(messages)]
        self.assertEqual(markdown, ["# A *title*"])
        _, messages = self.execute("%passes core\n%time\n:p sum [1., 2.]")
        displays = [msg["content"]["data"] for msg in output_displays(messages)]
        self.assertTrue(any("<details><summary><code>core</code>" in d.get("text/html", "") for d in displays))
        self.assertTrue(any("Run time" in d.get("text/html", "") for d in displays))

    def test_kernel_info_names_the_dx_lexer(self):
        reply = self.reply_to(self.kc.kernel_info())["content"]
        info = reply["language_info"]
        self.assertEqual(info["name"], "dx")
        self.assertEqual(info["file_extension"], ".dx")
        self.assertEqual(info["pygments_lexer"], "dx")
        # The name is one Pygments knows here (the venv has editors/pygments installed), so
        # a notebook's dx cells are highlighted as dx.
        lexer = pygments.lexers.get_lexer_by_name(info["pygments_lexer"])
        self.assertEqual(type(lexer).__name__, "DxLexer")

    def test_complete_and_inspect_see_the_session(self):
        self.execute("my_weights = [1., 2.]")
        msg_id = self.kc.complete(":p sum my_we", 12)
        reply = self.reply_to(msg_id)["content"]
        self.assertEqual(reply["matches"], ["my_weights"])
        self.assertEqual((reply["cursor_start"], reply["cursor_end"]), (7, 12))
        msg_id = self.kc.inspect(":p sum my_weights", 10)
        reply = self.reply_to(msg_id)["content"]
        self.assertTrue(reply["found"])
        self.assertEqual(reply["data"]["text/plain"], "my_weights : ((Fin 2) => Float32)")


def plot_outputs(notebook):
    """The image outputs of a notebook's code cells: (source, PNG bytes, SVG text)."""
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.outputs:
            if output.get("output_type") == "display_data" and "image/png" in output["data"]:
                yield cell.source, base64.b64decode(output["data"]["image/png"]), output["data"].get("image/svg+xml")


def run_cells(*sources):
    """A new notebook of code cells with these sources, run on the dx kernel."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbclient.NotebookClient(notebook, kernel_name="dx", timeout=TIMEOUT).execute()
    return notebook


def expects_error(cell):
    """Whether a converted cell's recorded outputs (the literate file's `>` lines) hold an error."""
    return cell.cell_type == "code" and any(
        re.search(r"^[A-Z][a-z]+ error:", "".join(out.get("text", "")), re.M) for out in cell.outputs
    )


class NotebookTests(unittest.TestCase):
    def test_converted_examples_are_valid_notebooks_that_run(self):
        examples = os.path.join(os.path.dirname(os.environ["DX_TOUR"]))
        for name in sorted(os.listdir(examples)):
            if not name.endswith(".dx"):
                continue
            with self.subTest(example=name), tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "example.ipynb")
                subprocess.run([os.environ["DX_BIN"], "convert", os.path.join(examples, name), path], check=True)
                notebook = nbformat.read(path, as_version=4)
                nbformat.validate(notebook)
                # An example may show an error on purpose (its literate output says so); every
                # other cell must run without one.
                expected = [expects_error(cell) for cell in notebook.cells]
                # The kernel runs in the example's folder (Jupyter starts kernels in the
                # notebook's folder), so data paths resolve as in `dx run`.
                nbclient.NotebookClient(
                    notebook,
                    kernel_name="dx",
                    timeout=TIMEOUT,
                    allow_errors=True,
                    resources={"metadata": {"path": examples}},
                ).execute()
                got = [
                    cell.cell_type == "code" and any(out.output_type == "error" for out in cell.outputs)
                    for cell in notebook.cells
                ]
                self.assertEqual(got, expected, name)


    def test_the_tour_runs_and_its_plotgrad_is_a_picture(self):
        path = os.environ["DX_TOUR"]
        notebook = nbformat.read(path, as_version=4)
        client = nbclient.NotebookClient(notebook, kernel_name="dx", timeout=TIMEOUT, allow_errors=True)
        client.execute()
        nbformat.validate(notebook)
        errors = [
            output
            for cell in notebook.cells
            if cell.cell_type == "code"
            for output in cell.outputs
            if output.get("output_type") == "error"
        ]
        # The tour shows exactly one error on purpose; everything else runs.
        self.assertEqual(len(errors), 1, errors)
        plots = [(source, png, svg) for source, png, svg in plot_outputs(notebook) if ":plotgrad" in source]
        self.assertTrue(plots, "the tour has a :plotgrad")
        for source, png, svg in plots:
            image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
            self.assertEqual(image.shape, (400, 640, 3))
            not_white = np.any(image != 255, axis=2).mean()
            self.assertGreater(not_white, 0.01, "the plot is not blank")
            # The tour plots a lambda and its derivative (two colours), and the gradient of
            # `loss` at a point (bars in the first colour).
            colours = (BLUE,) if "loss" in source else (BLUE, ORANGE)
            for colour in colours:
                self.assertGreater(np.all(image == colour, axis=2).sum(), 100, f"{colour} in {source}")
            # The words are text elements: the title, the axis's label, the series' names.
            words = [text for text, _ in svg_words(svg)]
            if "loss" in source:
                expected = ["gradient of loss at [0., 0., 0., 0.]", "index", "∂loss/∂x[i]"]
            else:
                expected = ["f(x) = x * sin x", "x", "f", "f′"]
            for text in expected:
                self.assertIn(text, words, source)
            self.assertTrue(any(is_number(text) for text in words), f"tick labels in {source}")

    def test_html_shows_library_plots_images_and_markup(self):
        notebook = run_cells(
            "import plot",
            # Points on the diagonal, coloured from dark (first) to light (last).
            "xs = for i:(Fin 50). n_to_f (ordinal i)\n:html show_plot (xyc_plot xs xs xs)",
            # Left half red, right half blue.
            ":html imshow for i:(Fin 10) j:(Fin 20). "
            "if ordinal j < 10 then [1., 0., 0.] else [0., 0., 1.]",
            ':html "<b>dx</b> in <i>HTML</i>"',
        )
        [scatter, picture, markup] = [cell.outputs[-1]["data"] for cell in notebook.cells[1:]]
        image = np.asarray(Image.open(io.BytesIO(base64.b64decode(scatter["image/png"]))).convert("RGB"))
        dark = np.all(np.abs(image.astype(int) - (68, 1, 84)) < 30, axis=2)
        light = np.all(np.abs(image.astype(int) - (253, 231, 37)) < 30, axis=2)
        self.assertGreater(dark.sum(), 5, "the first point in viridis' dark end")
        self.assertGreater(light.sum(), 5, "the last point in viridis' light end")
        # The first point is at the bottom left, the last at the top right.
        self.assertLess(np.nonzero(dark)[1].mean(), np.nonzero(light)[1].mean())
        self.assertGreater(np.nonzero(dark)[0].mean(), np.nonzero(light)[0].mean())
        self.assertIn("image/svg+xml", scatter)
        pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(picture["image/png"]))).convert("RGB"))
        height, width, _ = pixels.shape
        self.assertEqual(width, 2 * height, "the image keeps its shape")
        self.assertGreaterEqual(width, 256, "a small image is enlarged")
        self.assertEqual(tuple(pixels[0, 0]), (255, 0, 0))
        self.assertEqual(tuple(pixels[-1, -1]), (0, 0, 255))
        self.assertEqual(markup["text/html"], "<b>dx</b> in <i>HTML</i>")

    def test_html_draws_diagrams_as_svg(self):
        notebook = run_cells(
            "import diagram",
            # A red disc of radius 1 at (1, 1) in the square from (-2, -2) to (2, 2).
            ":html render_svg (circle 1.0 | move_xy(1.0, 1.0) | set_fill_color red) "
            "(Point(-2.0, -2.0), Point(2.0, 2.0))",
        )
        svg = notebook.cells[1].outputs[-1]["data"]["text/html"]
        root = ElementTree.fromstring(svg)
        self.assertTrue(root.tag.endswith("svg"))
        self.assertEqual((root.get("width"), root.get("height")), ("400", "400"))
        [group] = list(root)
        self.assertEqual(group.get("fill"), "#ff0000")
        [disc] = list(group)
        self.assertTrue(disc.tag.endswith("circle"))
        # 100 pixels a unit; y goes up, so (1, 1) is right of and above the centre.
        self.assertEqual((disc.get("cx"), disc.get("cy"), disc.get("r")), ("100", "-100", "100"))
        self.assertEqual(root.get("viewBox"), "-200 -200 400 400")

    def test_the_legend_is_beside_the_data_and_plots_stay_small(self):
        notebook = run_cells(
            # Both curves end in the top right corner, where a legend drawn on the plot would sit.
            "xs = for i:(Fin 400). n_to_f (ordinal i) / 400.0\n"
            ":plot (xs, for i. xs[i] * xs[i], for i. sqrt xs[i]) \"Curves\" \"x\" \"y\" \"square\" \"root\"",
            ":plot for i:(Fin 1000) j:(Fin 1000). sin (n_to_f (ordinal i * ordinal j) * 0.001)",
            ":plot for i:(Fin 1000000). sin (n_to_f (ordinal i) * 0.37)",
        )
        # (A cell that runs for over a second also has a progress display, emptied at its end.)
        [curves, heatmap, long_line] = [
            [output for output in cell.outputs if "image/png" in output.get("data", {})][0]
            for cell in notebook.cells
        ]
        image = np.asarray(Image.open(io.BytesIO(base64.b64decode(curves["data"]["image/png"]))).convert("RGB"))
        blue = np.all(np.abs(image.astype(int) - BLUE) < 30, axis=2)
        columns = np.unique(np.nonzero(blue)[1])
        gaps = np.diff(columns)
        widest = gaps.argmax()
        data_right, legend_left = columns[widest], columns[widest + 1]
        self.assertGreater(gaps[widest], 10, "a gap between the data and the legend")
        # Everything drawn right of the gap (the legend's samples and names) is clear of the
        # data: no curve pixel of either colour there.
        orange = np.all(np.abs(image.astype(int) - ORANGE) < 30, axis=2)
        legend_rows = np.unique(np.nonzero(blue[:, legend_left:])[0])
        self.assertLess(legend_rows.max() - legend_rows.min(), 10, "one legend sample, not a curve")
        self.assertEqual(int(orange[:, data_right + 2 : legend_left].sum()), 0)
        text = np.any(image[:, legend_left:] < 100, axis=2).sum()
        self.assertGreater(text, 30, "the legend names its series")
        every = svg_words(curves["data"]["image/svg+xml"])
        words = dict(every)
        for text in ["Curves", "square", "root", "x", "y"]:
            self.assertIn(text, words)
        ticks = [attributes for text, attributes in every if is_number(text)]
        self.assertGreaterEqual(len(ticks), 4, "tick labels")
        # The title is above every other word; the series' names are right of every tick
        # label (in the legend, beside the plot); the y axis's label is turned.
        top = float(words["Curves"]["y"])
        self.assertTrue(all(float(a["y"]) > top for text, a in every if text != "Curves"))
        for name in ["square", "root"]:
            self.assertGreater(float(words[name]["x"]), max(float(a["x"]) for a in ticks), name)
        self.assertIn("rotate", words["y"].get("transform", ""))
        self.assertNotIn("transform", words["x"])
        # A 1000×1000 heat map and a 10⁶-point line stay small in the notebook.
        for output in (heatmap, long_line):
            size = sum(len(value) for value in output["data"].values())
            self.assertLess(size, 1_000_000, output["data"].keys())
        self.assertNotIn("image/svg+xml", heatmap["data"], "a heat map is a PNG")
        self.assertLess(len(long_line["data"]["image/svg+xml"]), 200_000)

    @staticmethod
    def plot_right(image):
        """The column where the data ends: before the widest gap in the columns that hold the
        first series' colour (the legend's sample is beyond it)."""
        columns = np.unique(np.nonzero(np.all(np.abs(image.astype(int) - BLUE) < 30, axis=2))[1])
        gaps = np.diff(columns)
        if gaps.size and gaps.max() > 10:
            return columns[gaps.argmax()] + 1
        return image.shape[1]

    def test_a_sine_and_its_derivative_are_where_they_should_be(self):
        notebook = run_cells(":plotgrad sin 0.0 6.283185")
        [(_, png, _)] = list(plot_outputs(notebook))
        image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
        # The data are left of the legend (its samples are in the series' colours too).
        plot = image[:, : self.plot_right(image)]
        blue_rows, blue_columns = np.nonzero(np.all(plot == BLUE, axis=2))
        orange_rows, orange_columns = np.nonzero(np.all(plot == ORANGE, axis=2))
        # x runs left to right: sin rises from the middle height at the left edge (its peak is a
        # quarter of the way across); cos starts at its peak at the left edge.
        left = blue_columns.min()
        quarter = left + (blue_columns.max() - left) // 4
        peak_column = blue_columns[blue_rows.argmin()]
        self.assertLess(abs(peak_column - quarter), 15)
        self.assertLess(abs(orange_columns[orange_rows.argmin()] - left), 15)


if __name__ == "__main__":
    unittest.main()
