# SPDX-License-Identifier: MIT
"""The legal values of the fields a restore installs, read from the tables of
include/abi/snapshot_records.h and snapshot_devices.h (paths.C_HEADERS), the
tables the hypervisor checks and masks with, not restated here, so that this
reader and a restore refuse exactly the same records and device states."""

from . import paths
from .c_header import MASK64
from .snapshot_format import FEAT_SVADU, FEAT_ZICFILP, FEAT_ZICFISS, TABLES, load_records


SOURCE_ROOT = str(paths.header_root())
LEGAL_HEADERS = paths.C_HEADERS


def _rules(fields):
    """The bit and value rules of @fields (those that allow everything left out)."""
    ruled = [f for f in fields if f[3] is not None and f[1] != "s"]
    return {"bits": [(f[0], *f[3], f[6]) for f in ruled if f[3] != (MASK64, 0, 0, 0)],
            "values": [(f[0], *f[4], f[6]) for f in ruled if f[4] != (0, 0, 1)]}


def _legal(tables):
    out = {"CONFIG": _rules(tables["CONFIG"]),
           "VCPU": _rules([f for _, _, _, fields in tables["records"] for f in fields])}
    out.update({name: _rules(fields) for _, _, name, fields in tables["devices"]})
    out.update({name: _rules(fields) for _, name, _, fields in tables["vio_models"]})
    return out


def load_legal_rules(root=SOURCE_ROOT):
    """The legal-value rules of the tables of include/abi/snapshot_records.h
    and snapshot_devices.h under @root: {"CONFIG"/"VCPU"/a device model's
    name: {"bits": [(field, any, zicfilp, zicfiss, svadu, what)], "values":
    [(field, shift, mask, legal, what)]}}."""
    return _legal(load_records(root))


LEGAL = _legal(TABLES)


def legal_problems(section, record, features):
    """(field, message, index) for each rule of the tables that the decoded
    @record of @section ("CONFIG", "VCPU" or a device model's name: its state)
    breaks, for a VM given @features (the CONFIG's; a device's rules have no
    extension columns); @index: the element of an array."""
    out = []
    for field, any_, lp, ss, ad, what in LEGAL[section]["bits"]:
        allowed = (any_ | (lp if features & FEAT_ZICFILP else 0) |
                   (ss if features & FEAT_ZICFISS else 0) | (ad if features & FEAT_SVADU else 0))
        values = record[field] if isinstance(record[field], list) else [record[field]]
        for i, value in enumerate(values):
            name = f"{field}[{i}]" if len(values) > 1 else field
            if value & ~allowed:
                out.append((field, f"{name} is {value:#x}; bits {value & ~allowed:#x} are not "
                                   f"legal for this VM: {what}", i))
    for field, shift, mask, legal, what in LEGAL[section]["values"]:
        values = record[field] if isinstance(record[field], list) else [record[field]]
        for i, value in enumerate(values):
            name = f"{field}[{i}]" if len(values) > 1 else field
            sub = value >> shift & mask
            if not (sub < 64 and legal >> sub & 1):
                out.append((field, f"{name} is {value:#x}; legal: {what}", i))
    return out
