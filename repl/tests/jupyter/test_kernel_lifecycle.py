"""The dx kernel's lifecycle against jupyter_client, as ipykernel behaves (run by
repl/tests/jupyter.rs): an error or an interrupt ends the cell, completion sees the cell being
edited, many cells and requests sent while the kernel is busy all get their answers, and a
kernel whose client is killed does not outlive it.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
import unittest

from kernel_client import TIMEOUT, KernelTestCase


# A cell that computes for several seconds in a debug build and checks for interrupts.
LONG_CELL = ":p sum (for i:(Fin 30000) j:(Fin 30000). sin (n_to_f (ordinal i) * n_to_f (ordinal j)))"


def process_gone(pid):
    """Whether no process `pid` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return any(line.startswith("State:") and "Z" in line.split()[1] for line in status)
    except FileNotFoundError:
        return True


class KernelClient(KernelTestCase):
    """A kernel whose process must be gone after the test."""

    def setUp(self):
        super().setUp()
        self.pid = self.km.provisioner.process.pid

    def tearDown(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=False)
        deadline = time.monotonic() + 10
        while not process_gone(self.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(process_gone(self.pid), "the kernel outlived its shutdown")

    def outputs(self, msg_id):
        return self.iopub_until_idle(msg_id)

    def execute(self, code, **options):
        reply, messages = super().execute(code, **options)
        return reply["content"], messages

    def results(self, messages):
        return self.result_text(messages)


class CellTests(KernelClient):
    def test_an_error_stops_the_rest_of_the_cell(self):
        reply, messages = self.execute("a = 1\n:p a + True\nb = 2\n:p 3")
        self.assertEqual(reply["status"], "error")
        self.assertEqual([m["msg_type"] for m in messages if m["msg_type"] in ("error", "execute_result")], ["error"])
        # `a` was defined before the error; `b` after it never was.
        reply, messages = self.execute(":p a")
        self.assertEqual(self.results(messages), ["1"])
        reply, _ = self.execute(":t b")
        self.assertEqual(reply["status"], "error")
        self.assertIn("b", reply["evalue"])

    def test_an_interrupt_stops_the_rest_of_the_cell(self):
        msg_id = self.kc.execute(LONG_CELL + "\nafter = 7\n:p after")
        time.sleep(1.0)
        self.km.interrupt_kernel()
        reply = self.reply_to(msg_id, timeout=10)["content"]
        messages = self.outputs(msg_id)
        self.assertEqual(reply["status"], "error")
        self.assertEqual(self.results(messages), [])
        reply, _ = self.execute(":t after")
        self.assertEqual(reply["status"], "error")

    def test_completion_knows_names_bound_earlier_in_the_cell(self):
        cell = "def scaled_loss(w: Float) -> Float = w * 2.0\nlearning_rate = 0.1\n:p scaled_loss learn"
        reply = self.reply_to(self.kc.complete(cell, len(cell)))["content"]
        self.assertEqual(reply["matches"], ["learning_rate"])
        self.assertEqual(reply["cursor_start"], len(cell) - len("learn"))
        inside = "def f(weight_decay: Float) -> Float =\n  weight_"
        reply = self.reply_to(self.kc.complete(inside, len(inside)))["content"]
        self.assertEqual(reply["matches"], ["weight_decay"])


class ProgressTests(KernelClient):
    def test_a_long_cell_shows_its_progress_in_place_and_removes_it(self):
        msg_id = self.kc.execute("xs = for i:(Fin 2000). n_to_f (ordinal i)\n" + LONG_CELL)
        time.sleep(3.0)
        self.km.interrupt_kernel()
        self.assertEqual(self.reply_to(msg_id)["content"]["status"], "error")
        messages = self.outputs(msg_id)
        shown = [m for m in messages if m["msg_type"] == "display_data" and "display_id" in m["content"].get("transient", {})]
        self.assertEqual(len(shown), 1, [m["msg_type"] for m in messages])
        display_id = shown[0]["content"]["transient"]["display_id"]
        self.assertIn("running for", shown[0]["content"]["data"]["text/plain"])
        updates = [m for m in messages if m["msg_type"] == "update_display_data"]
        self.assertGreaterEqual(len(updates), 2)
        self.assertTrue(all(m["content"]["transient"]["display_id"] == display_id for m in updates))
        texts = [m["content"]["data"]["text/plain"] for m in updates]
        self.assertIn("schedule steps", texts[0])
        self.assertIn("<progress", updates[0]["content"]["data"]["text/html"])
        self.assertEqual(texts[-1], "", "the display is emptied when the cell ends")
        # A short cell shows none.
        _, messages = self.execute(":p 1 + 1")
        self.assertFalse([m for m in messages if m["msg_type"] in ("display_data", "update_display_data")])

    def test_each_long_block_has_its_own_progress_display_emptied_when_it_ends(self):
        # Two blocks of seconds each (tens of millions of `sin`s in a debug build), a short
        # one between them.
        long_block = ":p sum (for i:(Fin 6000) j:(Fin {}). sin (n_to_f (ordinal i) * n_to_f (ordinal j)))"
        cell = "\n".join([long_block.format(6000), ":p 2 + 2", long_block.format(5999)])
        msg_id = self.kc.execute(cell)
        self.assertEqual(self.reply_to(msg_id, timeout=600)["content"]["status"], "ok")
        messages = self.outputs(msg_id)
        shown = [m for m in messages if m["msg_type"] == "display_data" and "display_id" in m["content"].get("transient", {})]
        ids = [m["content"]["transient"]["display_id"] for m in shown]
        self.assertEqual(len(ids), 2, [m["msg_type"] for m in messages])
        self.assertNotEqual(ids[0], ids[1])
        for display_id in ids:
            updates = [m["content"]["data"]["text/plain"] for m in messages
                       if m["msg_type"] == "update_display_data" and m["content"]["transient"]["display_id"] == display_id]
            self.assertTrue(updates, display_id)
            self.assertEqual(updates[-1], "", "each display is emptied when its block ends")
        # The first block's display is emptied before the second one's appears.
        order = [(m["msg_type"], m["content"].get("transient", {}).get("display_id"), m["content"].get("data", {}).get("text/plain"))
                 for m in messages if m["msg_type"] in ("display_data", "update_display_data")]
        emptied_first = order.index(("update_display_data", ids[0], ""))
        second_shown = next(k for k, (kind, display_id, _) in enumerate(order) if kind == "display_data" and display_id == ids[1])
        self.assertLess(emptied_first, second_shown)
        self.assertEqual(len(self.results(messages)), 3)


class LoadTests(KernelClient):
    def test_requests_sent_while_busy_are_all_answered_in_order(self):
        busy = self.kc.execute("slow = fold(0.0, \\i:(Fin 3000000) c. c * 0.5 + 1.0)\n:p 1")
        # While that cell runs: introspection, and cells that queue behind it.
        info = self.kc.kernel_info()
        complete = self.kc.complete(":p slo", 6)
        inspect = self.kc.inspect("sum", 2)
        is_complete = self.kc.is_complete("def f(x: Float) -> Float =")
        cells = [self.kc.execute(f":p {k} * 3") for k in range(50)]
        self.assertEqual(self.reply_to(busy)["content"]["status"], "ok")
        self.assertEqual(self.reply_to(info)["msg_type"], "kernel_info_reply")
        self.assertEqual(self.reply_to(complete)["content"]["matches"], ["slow"])
        self.assertTrue(self.reply_to(inspect)["content"]["found"])
        self.assertEqual(self.reply_to(is_complete)["content"]["status"], "incomplete")
        counts = []
        for k, msg_id in enumerate(cells):
            reply = self.reply_to(msg_id)["content"]
            self.assertEqual(reply["status"], "ok")
            counts.append(reply["execution_count"])
            self.assertEqual(self.results(self.outputs(msg_id)), [str(k * 3)])
        self.assertEqual(counts, sorted(counts))

    def test_ten_thousand_cells_lose_no_answer(self):
        self.execute("base = 1000")
        n_cells, window = 10_000, 200
        started = time.monotonic()
        pending = {}
        sent = 0
        answered = 0
        while answered < n_cells:
            while sent < n_cells and len(pending) < window:
                pending[self.kc.execute(f":p base + {sent}")] = sent
                sent += 1
            reply = self.kc.get_shell_msg(timeout=TIMEOUT)
            k = pending.pop(reply["parent_header"]["msg_id"])
            self.assertEqual(reply["content"]["status"], "ok", k)
            answered += 1
        # Every cell's value reached IOPub, once, with its own parent.
        seen = {}
        while len(seen) < n_cells:
            msg = self.kc.get_iopub_msg(timeout=TIMEOUT)
            if msg["msg_type"] == "execute_result":
                code = msg["content"]["data"]["text/plain"]
                self.assertNotIn(code, seen)
                seen[code] = msg["parent_header"]["msg_id"]
        self.assertEqual(set(seen), {str(1000 + k) for k in range(n_cells)})
        print(f"{n_cells} cells in {time.monotonic() - started:.1f} s")
        reply, messages = self.execute(":p base")
        self.assertEqual(self.results(messages), ["1000"])


CLIENT = textwrap.dedent(
    """
    import sys, time
    from jupyter_client.manager import start_new_kernel
    km, kc = start_new_kernel(kernel_name="dx")
    kc.execute(sys.argv[1])
    print(km.provisioner.process.pid, flush=True)
    time.sleep(600)
    """
)


class OrphanTests(unittest.TestCase):
    def test_a_kernel_whose_client_is_killed_mid_cell_exits(self):
        client = subprocess.Popen(
            [sys.executable, "-c", CLIENT, LONG_CELL], stdout=subprocess.PIPE, text=True
        )
        try:
            kernel_pid = int(client.stdout.readline())
            time.sleep(1.0)
            self.assertFalse(process_gone(kernel_pid), "the kernel runs its cell")
            os.kill(client.pid, signal.SIGKILL)
            client.wait()
            deadline = time.monotonic() + 10
            while not process_gone(kernel_pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertTrue(process_gone(kernel_pid), "the kernel outlived its client")
        finally:
            client.kill()
            client.wait()
            client.stdout.close()


if __name__ == "__main__":
    unittest.main()
