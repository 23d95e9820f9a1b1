# SPDX-License-Identifier: MIT
"""The result protocol of the bare-metal test payloads (tests/guests/lib): a
payload prints `PASS: t: what`, `FAIL: t: what (got X, want Y)`, `SKIP: ...`,
`INFO: ...` and finally `DONE: N passed, M failed`. Report holds one guest's
lines, check_report() fails the test on anything but a clean DONE; the CFI
payloads' `INFO: observed lp=N ss=M` line (what their trap handler saw) is
observed()'s."""

import re
from dataclasses import dataclass, field

OBSERVED_RE = re.compile(r"INFO: observed lp=(\d+) ss=(\d+)")   # the CFI payloads


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


def observed(rep, where):
    """(lp, ss) the guest's handler saw."""
    hits = [OBSERVED_RE.match(l) for l in rep.lines]
    hits = [m for m in hits if m]
    assert hits, f"{where}: no 'INFO: observed' line\n" + "\n".join(rep.lines)
    return int(hits[-1].group(1)), int(hits[-1].group(2))


def append_summary(path, line):
    """Print a soak's result @line and append it to its summary file @path
    (under build/, read after the run)."""
    print(line)
    path.parent.mkdir(exist_ok=True)
    with open(path, "a") as f:
        f.write(line + "\n")
