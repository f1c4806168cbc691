"""A progress bar on stderr, without dependencies.

On a terminal it redraws one line (``\\r``); in a log (CI, ``make > log``) it
prints a line whenever the phase changes or another tenth is done.
"""
from __future__ import annotations

import sys
import time
from typing import IO, Optional


class Progress:
    def __init__(self, total: float, stream: Optional[IO[str]] = None, width: int = 28) -> None:
        self.total = max(total, 1e-9)
        self.done = 0.0
        self.stream = stream or sys.stderr
        self.width = width
        self.t0 = time.monotonic()
        self.label = ""
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last_tenth = -1
        self._last_label = None

    def advance(self, amount: float = 1.0, label: Optional[str] = None) -> None:
        self.done = min(self.total, self.done + amount)
        if label is not None:
            self.label = label
        self._draw()

    def set_label(self, label: str) -> None:
        self.label = label
        self._draw()

    def note(self, text: str) -> None:
        """Print a line above the bar (warnings, errors)."""
        if self.tty:
            self.stream.write("\r\x1b[2K")
        self.stream.write(text + "\n")
        self._draw(force=True)

    def close(self) -> None:
        self.done = self.total
        self._draw(force=True)
        if self.tty:
            self.stream.write("\n")
        self.stream.flush()

    def _draw(self, force: bool = False) -> None:
        frac = self.done / self.total
        elapsed = time.monotonic() - self.t0
        eta = elapsed / frac - elapsed if frac > 0.02 else None
        filled = int(round(frac * self.width))
        bar = "#" * filled + "." * (self.width - filled)
        eta_s = "eta %ds" % eta if eta is not None else "eta ?"
        line = "[%s] %3d%% %4ds %s  %s" % (bar, frac * 100, elapsed, eta_s, self.label)
        if self.tty:
            self.stream.write("\r\x1b[2K" + line[:160])
            self.stream.flush()
            return
        tenth = int(frac * 10)
        if force or tenth != self._last_tenth or self.label.split(":")[0] != self._last_label:
            self._last_tenth = tenth
            self._last_label = self.label.split(":")[0]
            self.stream.write(line + "\n")
            self.stream.flush()
