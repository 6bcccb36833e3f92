"""Headless Chromium driven over the DevTools protocol through `--remote-debugging-pipe` (JSON
messages separated by NUL bytes on file descriptors 3 and 4), so the browser tests need no
websocket client, Selenium or Playwright: open a page, evaluate JavaScript in it, take a screenshot."""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
FLAGS = ["--headless", "--no-sandbox", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-quic", "--mute-audio",
         # WebGL (Model Explorer draws with three.js) in software, without a GPU
         "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist"]


class Browser:
    def __init__(self, profile_dir, width: int = 1400, height: int = 900):
        to_child_r, self._w = os.pipe()
        self._r, from_child_w = os.pipe()
        self.log = os.path.join(str(profile_dir), "chromium.log")
        self._log_file = open(self.log, "wb")
        argv = [CHROMIUM, *FLAGS, f"--user-data-dir={profile_dir}", f"--window-size={width},{height}",
                "--remote-debugging-pipe", "about:blank"]

        def place_pipes():  # in the child: commands in on fd 3, replies out on fd 4 (dup2 leaves them inheritable)
            r, w = os.dup(to_child_r), os.dup(from_child_w)  # neither can be overwritten by the other's dup2
            os.dup2(r, 3)
            os.dup2(w, 4)
        # close_fds=False: subprocess would close 3 and 4 after place_pipes; every other descriptor of this
        # process is non-inheritable (PEP 446), so nothing else leaks into the browser
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log_file,
                                     preexec_fn=place_pipes, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        self._next, self._buf, self.session = 0, b"", None
        self.size = (width, height)

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 60):
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params or {}}
        if session or self.session:
            msg["sessionId"] = session or self.session
        try:
            os.write(self._w, json.dumps(msg).encode() + b"\0")
        except BrokenPipeError:
            raise RuntimeError(f"Chromium has exited ({self.proc.poll()}): {self.log_tail()}") from None
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" not in self._buf:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no reply to {method}")
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"Chromium closed the pipe during {method}: {self.log_tail()}")
                self._buf += chunk
            raw, self._buf = self._buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def open(self, url: str) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=None)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        w, h = self.size
        self.send("Emulation.setDeviceMetricsOverride", {"width": w, "height": h, "deviceScaleFactor": 1,
                                                          "mobile": False})
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression: str):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression[:60]}...: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 40, interval: float = 0.5):
        """Poll until the JavaScript expression is truthy; returns its value (None on timeout)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = self.evaluate(expression)
            if v:
                return v
            time.sleep(interval)
        return None

    def click(self, expression: str) -> bool:
        """A real mouse click at the centre of the element the JavaScript expression finds (False: none)."""
        box = self.evaluate(f"(() => {{ const e = {expression}; if (!e) return null; "
                            "const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        if not box:
            return False
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left",
                                                    "clickCount": 1})
        return True

    def log_tail(self) -> str:
        with open(self.log, "rb") as f:
            return f.read()[-2000:].decode(errors="replace")

    def screenshot(self) -> bytes:
        return base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"])

    def close(self) -> None:
        try:
            self.send("Browser.close", session=None, timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)
        self._log_file.close()
