#!/usr/bin/env python3
"""`dtensorc run --progress`: with stderr not a terminal it writes nothing at
all (stdout unchanged); in a pseudo-terminal it draws `for at line N: i/N`
lines with carriage returns and erases the line (ESC [K) before the program's
own output and at the end. The same under `--reference` (the single-device
reference evaluator reports its loops the same way).

usage: progress_test.py DTENSORC
"""
import os
import pty
import subprocess
import sys
import time

DTENSORC = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "loop.dt")


def piped(extra):
    r = subprocess.run([DTENSORC, "run", "--progress", PROG] + extra, capture_output=True,
                       timeout=120)
    assert r.returncode == 0, r
    assert r.stdout == b"done true\n", r.stdout
    assert r.stderr == b"", "--progress wrote to a non-terminal stderr: %r" % r.stderr


def terminal(extra):
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(DTENSORC, [DTENSORC, "run", "--progress", PROG] + extra)
    out = b""
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0, out
    text = out.decode(errors="replace")
    assert "\rfor at line 5: 0/400 (0%)" in text.replace("\x1b[K", ""), text
    assert "/400" in text and "it/s" in text, text
    # A `for` whose bound is a run-time value shows the count read at its start.
    assert "\rfor at line 10: 0/50 (0%)" in text.replace("\x1b[K", ""), text
    # The indicator is erased before the program's line, which then stands alone.
    assert "\r\x1b[Kdone true" in text, repr(text)
    assert text.rstrip("\r\n").endswith("done true"), repr(text)


for extra in ([], ["--reference"]):
    piped(extra)
    terminal(extra)
print("PASS")
