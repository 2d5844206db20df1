"""A dx kernel started with jupyter_client for one test, and the helpers the tests share."""

import unittest

from jupyter_client.manager import start_new_kernel

TIMEOUT = 60


class KernelTestCase(unittest.TestCase):
    """Starts a dx kernel before each test and shuts it down after."""

    def setUp(self):
        self.km, self.kc = start_new_kernel(kernel_name="dx")

    def tearDown(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    def execute(self, code, **options):
        """Runs a cell; returns its reply and its IOPub messages."""
        msg_id = self.kc.execute(code, **options)
        reply = self.reply_to(msg_id)
        return reply, self.iopub_until_idle(msg_id)

    def reply_to(self, msg_id, timeout=TIMEOUT):
        while True:
            reply = self.kc.get_shell_msg(timeout=timeout)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply

    def iopub_until_idle(self, msg_id):
        """The IOPub messages of a request, up to its `idle`."""
        messages = []
        while True:
            msg = self.kc.get_iopub_msg(timeout=TIMEOUT)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return messages
            messages.append(msg)

    def result_text(self, messages):
        return [
            msg["content"]["data"]["text/plain"]
            for msg in messages
            if msg["msg_type"] == "execute_result"
        ]
