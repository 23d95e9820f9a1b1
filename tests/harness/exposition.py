# SPDX-License-Identifier: MIT
"""A strict parser of the Prometheus text exposition format, version 0.0.4
(written from its specification), for the tests of `carapace-ctl metrics`:
every line must be a HELP, a TYPE or a sample line of the exact syntax, one
family's lines together, TYPE before its samples, no series twice, and the
naming rules docs/management.md follows (counters end in _total, base units
last, one prefix)."""

import re

METRIC_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL_NAME = r"[a-zA-Z_][a-zA-Z0-9_]*"
LABEL_VALUE = r'(?:[^"\\\n]|\\[\\"n])*'
LABEL = rf'({LABEL_NAME})="({LABEL_VALUE})"'
SAMPLE = re.compile(rf"({METRIC_NAME})(?:\{{({LABEL}(?:,{LABEL})*)?\}})? (\S+)(?: (-?[0-9]+))?")
FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?Inf|NaN")
HELP = re.compile(rf"# HELP ({METRIC_NAME}) ((?:[^\\\n]|\\[\\n])*)")
TYPE = re.compile(rf"# TYPE ({METRIC_NAME}) (counter|gauge|histogram|summary|untyped)")


def unescape(value):
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), value)


def parse_exposition(text, prefix="carapace_"):
    """Every line checked against the format (version 0.0.4) and the naming
    rules; returns {family: {"type", "help", "samples": {labels tuple: value}}}."""
    assert text.endswith("\n"), "the last line ends with a line feed"
    families, current, finished = {}, None, set()
    for number, line in enumerate(text[:-1].split("\n"), 1):
        where = f"line {number}: {line!r}"
        if line.startswith("#"):
            m = HELP.fullmatch(line) or TYPE.fullmatch(line)
            assert m, f"{where}: a comment that is neither HELP nor TYPE"
            name = m.group(1)
            family = families.setdefault(name, {"type": None, "help": None, "samples": {}})
            key = "help" if line.startswith("# HELP") else "type"
            assert family[key] is None, f"{where}: a second {key.upper()} for {name}"
            assert not family["samples"], f"{where}: {key.upper()} after the samples"
            family[key] = m.group(2)
        else:
            m = SAMPLE.fullmatch(line)
            assert m, f"{where}: not a sample line"
            name, labels_text, value = m.group(1), m.group(2) or "", m.group(7)
            assert FLOAT.fullmatch(value), f"{where}: value {value!r}"
            labels = re.findall(LABEL, labels_text)
            keys = [k for k, _ in labels]
            assert len(set(keys)) == len(keys), f"{where}: a label twice"
            assert not any(k.startswith("__") for k in keys), f"{where}: reserved label"
            assert name in families and families[name]["type"], f"{where}: no TYPE first"
            series = tuple((k, unescape(v)) for k, v in labels)
            assert series not in families[name]["samples"], f"{where}: duplicate series"
            families[name]["samples"][series] = value
        if name != current:          # one family's lines together, never again later
            assert name not in finished, f"{where}: {name} is split"
            if current:
                finished.add(current)
            current = name
    for name, family in families.items():
        assert family["type"] and family["help"], f"{name}: HELP and TYPE"
        if family["type"] == "counter":
            assert name.endswith("_total"), f"{name}: a counter ends in _total"
        else:
            assert not name.endswith("_total"), f"{name}: only counters end in _total"
        for unit in ("bytes", "seconds"):
            if unit in name:
                assert re.search(rf"_{unit}(_total)?$", name), f"{name}: base unit last"
        assert name.startswith(prefix), f"{name}: not {prefix}*"
    return families
