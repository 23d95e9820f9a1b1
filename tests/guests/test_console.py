# SPDX-License-Identifier: MIT
"""The host console shows each guest line as "[name] text"; a guest must not
be able to drive the terminal, erase or overwrite its own tag, or make a line
look like another VM's (issue 22). tests/guests/console_forge.c tries it with
backspaces, a lone carriage return, CSI (ESC [, raw 0x9b, UTF-8 U+009B), NEL,
the line separator, an OSC string and other controls, through SBI DBCN and the
UART, each followed by "[victim] FORGED"; this reads the raw bytes QEMU wrote
(carapace-run --log) and checks what any terminal would show."""

import re
import unicodedata

import pytest

from harness.runs import EXIT_OK, run_carapace, vm_spec

pytestmark = pytest.mark.quick

TRICKS = 11        # console_forge.c tricks[]
PATHS = 3          # DBCN write, DBCN write_byte, UART


def shown_controls(text):
    """Characters that would move the cursor, erase or start a line: every
    C0 and C1 control but tab, and the line/paragraph separators and bidi
    controls (category Cf covers those and is never needed here)."""
    return [c for c in text if c != "\t" and
            (unicodedata.category(c) == "Cc" or c in "\u2028\u2029" or
             unicodedata.category(c) == "Cf")]


def test_guest_cannot_forge_another_vms_line(guests_built, tmp_path):
    log = tmp_path / "console.raw"
    run = run_carapace([vm_spec("evil", "console_forge", 1),
                        vm_spec("victim", "demo", 1, "count=3 delay_us=1000")],
                       names=["evil", "victim"], extra=["--log", str(log)])
    assert run.code == EXIT_OK, run.out
    raw = log.read_bytes()
    text = raw.decode("utf-8", "replace")
    lines = text.split("\n")
    assert lines[-1] == "", lines[-1:]  # ends with a whole line
    lines = [l[:-1] if l.endswith("\r") else l for l in lines[:-1]]   # the UART's CR LF
    bad = [(l, shown_controls(l)) for l in lines if shown_controls(l)]
    assert not bad, bad
    forged = [l for l in lines if "FORGED" in l]
    assert len(forged) == TRICKS * PATHS, "\n".join(forged)
    assert all(l.startswith("[evil] ") for l in forged), "\n".join(forged)
    assert not [l for l in lines if l.startswith("[victim] FORGED")]
    # the victim's own lines are all there, tagged as its own
    assert len([l for l in lines if re.match(r"^\[victim\] hello from 0 \(\d/3\)$", l)]) == 3
    assert "[evil] FORGE-DONE" in lines
    raw.decode("utf-8")     # strict: only well-formed UTF-8 reaches the terminal
