# SPDX-License-Identifier: MIT
"""Reading the tables of the C headers the hypervisor is built with
(paths.C_HEADERS): their #defines, the integer constant expressions of their
rows, their string literals.  Enough C for those headers, no more: a table is
a macro whose body is rows X(...); an argument is a number, a #defined name,
BIT(), _UL(), | & ~ << >> + - and parentheses, or a string literal."""

import ast
import os
import re

from . import paths

MASK64 = (1 << 64) - 1


def c_macros(text):
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


TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*|([A-Za-z_]\w*)|(<<|>>|[-+~|&(),]))")


def c_value(expr, macros, depth=0):
    """The value (mod 2^64) of the C integer constant expression @expr: numbers,
    names of @macros, BIT(), _UL(), | & ~ << >> + - and parentheses."""
    if depth > 16:
        raise ValueError(f"macros nested too deep in {expr!r}")
    out, pos, expr = [], 0, expr.strip()
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
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
                raise ValueError(f"{name} is not #defined in {', '.join(paths.C_HEADERS)}")
            out.append(f"({c_value(macros[name], macros, depth + 1)})")
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


def c_rows(body):
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


def c_string(literal):
    """The text of a C string literal (adjacent literals joined)."""
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', literal)
    if not parts:
        raise ValueError(f"not a string literal: {literal!r}")
    return "".join(parts).encode().decode("unicode_escape")


def call_args(text, name, objects):
    """The arguments of @text, a call of macro @name (an object-like macro
    standing for one is expanded first)."""
    text = text.strip()
    for _ in range(4):
        if text in objects:
            text = objects[text].strip()
    if not text.startswith(name + "("):
        raise ValueError(f"expected {name}(...), found {text!r}")
    return c_rows("X" + text[len(name):])[0]


def read_macros(root, headers=paths.C_HEADERS):
    """{name: body} of the object-like and of the function-like macros of
    @headers (paths relative to @root), later headers winning."""
    objects, functions = {}, {}
    for rel in headers:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            o, fn = c_macros(f.read())
        objects.update(o)
        functions.update(fn)
    return objects, functions
