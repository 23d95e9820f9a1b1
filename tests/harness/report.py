# SPDX-License-Identifier: MIT
"""The result protocol of the bare-metal test payloads (tests/guests/lib): a
payload prints `PASS: t: what`, `FAIL: t: what (got X, want Y)`, `SKIP: ...`,
`INFO: ...` and finally `DONE: N passed, M failed`. Report holds one guest's
lines, check_report() fails the test on anything but a clean DONE."""

import re
from dataclasses import dataclass, field


@dataclass
class Report:
    """The result lines of one guest (one VM, or the whole bare-QEMU console)."""
    lines: list = field(default_factory=list)

    def kind(self, prefix):
        return [l for l in self.lines if l.startswith(prefix)]

    def done(self):
        """(passed, failed) from the DONE line, or None."""
        for l in self.kind("DONE: "):
            m = re.match(r"DONE: (\d+) passed, (\d+) failed", l)
            if m:
                return int(m.group(1)), int(m.group(2))
        return None

    def last_boot(self):
        """Lines of the last boot (a rebooting payload prints its checks per boot)."""
        starts = [i for i, l in enumerate(self.lines) if l.startswith("INFO: init:")]
        return self.lines[starts[-1]:] if starts else self.lines


def check_report(rep, where, markers=()):
    """Fail on any FAIL line, a missing or bad DONE line, or a missing marker."""
    text = "\n".join(rep.lines)
    fails = rep.kind("FAIL: ")
    assert not fails, f"{where}: failed checks:\n" + "\n".join(fails) + f"\n--- log ---\n{text}"
    done = rep.done()
    assert done is not None, f"{where}: no DONE line\n--- log ---\n{text}"
    passes = [l for l in rep.last_boot() if l.startswith("PASS: ")]
    assert done == (len(passes), 0), \
        f"{where}: DONE says {done}, log has {len(passes)} PASS lines\n--- log ---\n{text}"
    assert passes, f"{where}: no PASS lines\n--- log ---\n{text}"
    for m in markers:
        assert m in rep.lines, f"{where}: missing line '{m}'\n--- log ---\n{text}"
