# SPDX-License-Identifier: MIT
"""The legal values of the fields a restore installs, read from the C header
the hypervisor is built with (paths.C_HEADERS), not restated here, so that
this reader and a restore refuse exactly the same records."""

import ast
import os
import re

from . import paths
from .snapshot_format import CONFIG, FEAT_SVADU, FEAT_ZICFILP, FEAT_ZICFISS, VCPU


SOURCE_ROOT = str(paths.header_root())
LEGAL_HEADERS = paths.C_HEADERS
MASK64 = (1 << 64) - 1


def _c_macros(text):
    """{name: body} of the object-like macros and {name: body} of the
    function-like ones (their parameters dropped) #defined in C @text."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S).replace("\\\n", " ")
    objects, functions = {}, {}
    for line in text.splitlines():
        m = re.match(r"\s*#\s*define\s+([A-Za-z_]\w*)(\()?(.*)$", line)
        if m:
            name, paren, body = m.groups()
            if paren:
                functions[name] = body.partition(")")[2].strip()
            else:
                objects[name] = body.strip()
    return objects, functions


_C_TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*|([A-Za-z_]\w*)|(<<|>>|[-+~|&(),]))")


def _c_value(expr, macros, depth=0):
    """The value (mod 2^64) of the C integer constant expression @expr: numbers,
    names of @macros, BIT(), _UL(), | & ~ << >> + - and parentheses."""
    if depth > 16:
        raise ValueError(f"macros nested too deep in {expr!r}")
    out, pos, expr = [], 0, expr.strip()
    while pos < len(expr):
        m = _C_TOKEN.match(expr, pos)
        if not m:
            raise ValueError(f"cannot read {expr[pos:]!r}")
        pos = m.end()
        number, name, op = m.groups()
        if number:
            out.append(str(int(number, 16) if number[:2] in ("0x", "0X") else int(number)))
        elif name in ("BIT", "_UL"):
            out.append(name)
        elif name:
            if name not in macros:
                raise ValueError(f"{name} is not #defined in {', '.join(LEGAL_HEADERS)}")
            out.append(f"({_c_value(macros[name], macros, depth + 1)})")
        else:
            out.append(op)

    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.USub)):
            v = value(node.operand)
            return ~v if isinstance(node.op, ast.Invert) else -v
        if isinstance(node, ast.BinOp):
            ops = {ast.BitOr: lambda a, b: a | b, ast.BitAnd: lambda a, b: a & b,
                   ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
                   ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b}
            if type(node.op) in ops:
                return ops[type(node.op)](value(node.left), value(node.right)) & MASK64
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and
                node.func.id in ("BIT", "_UL") and len(node.args) == 1 and not node.keywords):
            v = value(node.args[0])
            return 1 << v if node.func.id == "BIT" else v
        raise ValueError(f"not an integer constant expression: {expr!r}")
    return value(ast.parse(" ".join(out), mode="eval").body) & MASK64


def _c_rows(body):
    """The argument lists of the X(...) rows in a table macro's @body: each a list
    of argument texts (a string literal keeps its quotes)."""
    rows, pos = [], 0
    while True:
        start = body.find("X(", pos)
        if start < 0:
            return rows
        args, depth, arg, i, quoted = [], 0, "", start + 2, False
        while True:
            ch = body[i]
            i += 1
            if quoted:
                arg += ch
                if ch == "\\":
                    arg += body[i]
                    i += 1
                elif ch == '"':
                    quoted = False
            elif ch == '"':
                quoted, arg = True, arg + ch
            elif ch == "(":
                depth, arg = depth + 1, arg + ch
            elif ch == ")" and depth:
                depth, arg = depth - 1, arg + ch
            elif ch == ")" or (ch == "," and not depth):
                args.append(arg.strip())
                arg = ""
                if ch == ")":
                    break
            else:
                arg += ch
        rows.append(args)
        pos = i


def _c_string(literal):
    """The text of a C string literal (adjacent literals joined)."""
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', literal)
    if not parts:
        raise ValueError(f"not a string literal: {literal!r}")
    return "".join(parts).encode().decode("unicode_escape")


def load_legal_rules(root=SOURCE_ROOT):
    """The legal-value rules of include/abi/snapshot_legal.h under @root:
    {"CONFIG"/"VCPU": {"bits": [(field, any, zicfilp, zicfiss, svadu, what)],
                       "values": [(field, shift, mask, legal, what)]}}."""
    objects, functions = {}, {}
    for rel in LEGAL_HEADERS:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            o, fn = _c_macros(f.read())
        objects.update(o)
        functions.update(fn)
    rules = {}
    for section, layout in (("CONFIG", CONFIG), ("VCPU", VCPU)):
        bits, values = [], []
        for args in _c_rows(functions[f"SNAP_{section}_BITS"]):
            field, *exprs, what = args
            layout.offset(field)                   # a field of the struct, or KeyError
            bits.append((field, *(_c_value(e, objects) for e in exprs), _c_string(what)))
        for args in _c_rows(functions[f"SNAP_{section}_VALUES"]):
            field, *exprs, what = args
            layout.offset(field)
            values.append((field, *(_c_value(e, objects) for e in exprs), _c_string(what)))
        if not bits or any(len(r) != 6 for r in bits) or any(len(r) != 5 for r in values):
            raise ValueError(f"SNAP_{section}_BITS/VALUES: unexpected rows")
        rules[section] = {"bits": bits, "values": values}
    return rules


LEGAL = load_legal_rules()


def legal_problems(section, record, features):
    """(field, message) for each rule of include/abi/snapshot_legal.h that the
    decoded @record of @section ("CONFIG" or "VCPU") breaks, for a VM given
    @features (the CONFIG's)."""
    out = []
    for field, any_, lp, ss, ad, what in LEGAL[section]["bits"]:
        allowed = (any_ | (lp if features & FEAT_ZICFILP else 0) |
                   (ss if features & FEAT_ZICFISS else 0) | (ad if features & FEAT_SVADU else 0))
        value = record[field]
        if value & ~allowed:
            out.append((field, f"{field} is {value:#x}; bits {value & ~allowed:#x} are not "
                               f"legal for this VM: {what}"))
    for field, shift, mask, legal, what in LEGAL[section]["values"]:
        value = record[field]
        sub = value >> shift & mask
        if not (sub < 64 and legal >> sub & 1):
            out.append((field, f"{field} is {value:#x}; legal: {what}"))
    return out


