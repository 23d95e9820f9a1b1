# SPDX-License-Identifier: MIT
"""What differs between two snapshots: config fields, vCPU registers, device
fields (the virtio devices' too), memory pages (a page not stored is zero),
the disks' blocks when both hold their disks' content (a block not stored is
zero), else the disks' identities (DISK_ID: the sampled blocks' CRCs) when
both have them."""

import json

from .snapshot import _open
from .snapshot_format import DISK_SECTOR, GPR_NAMES, PAGE_SIZE, VCPU
from .snapshot_text import config_json, device_fields, virtio_fields


# --- diff ----------------------------------------------------------------------------


def _pages(snap):
    """{gpa: file offset} of every stored page."""
    out = {}
    for r in snap.runs:
        for i in range(r["pages"]):
            out[r["gpa"] + i * PAGE_SIZE] = r["data_offset"] + i * PAGE_SIZE
    return out


def _page_reader(snap):
    f, _ = _open(snap.source)
    zero = bytes(PAGE_SIZE)

    def read(offset):
        if offset is None:
            return zero
        f.seek(offset)
        return f.read(PAGE_SIZE)
    return f, read


def _disk_blocks(snap):
    """{(slot, sector): (file offset, bytes)} of every stored disk block."""
    return {(r["slot"], r["sector"]): (r["data_offset"], r["sectors"] * DISK_SECTOR)
            for r in snap.disk_runs}


def _read_at(f, where, size):
    if where is None:
        return bytes(size)
    f.seek(where[0])
    return f.read(where[1])


def _disk_diff(a, b):
    """The blocks that differ (a block not stored is zero), as runs of
    blocks per disk: [{"slot", "sector", "sectors"}]."""
    ba, bb = _disk_blocks(a), _disk_blocks(b)
    fa, _ = _open(a.source)
    fb, _ = _open(b.source)
    out = []
    with fa, fb:
        for key in sorted(set(ba) | set(bb)):
            size = max(w[1] for w in (ba.get(key), bb.get(key)) if w)
            x, y = _read_at(fa, ba.get(key), size), _read_at(fb, bb.get(key), size)
            if x == y:
                continue
            slot, sector = key
            last = out[-1] if out else None
            if last and last["slot"] == slot and last["sector"] + last["sectors"] == sector:
                last["sectors"] += size // DISK_SECTOR
            else:
                out.append({"slot": slot, "sector": sector, "sectors": size // DISK_SECTOR})
    return out


def _ranges(gpas):
    out = []
    for gpa in sorted(gpas):
        if out and out[-1]["gpa"] + out[-1]["pages"] * PAGE_SIZE == gpa:
            out[-1]["pages"] += 1
        else:
            out.append({"gpa": gpa, "pages": 1})
    return out


def _field_diffs(a, b):
    return [(k, a.get(k), b.get(k)) for k in list(a) + [k for k in b if k not in a]
            if a.get(k) != b.get(k)]


def _identity_diff(a, b):
    """The sampled blocks whose CRC32C differs between the two streams'
    DISK_IDs of a disk (both version 6 without the disks' content):
    [{"slot", "block", "a", "b"}]."""
    out = []
    for ia in a.disk_ids:
        ib = next((x for x in b.disk_ids if x["slot"] == ia["slot"]), None)
        if ib is None:
            continue
        crcs_b = {x["block"]: x["crc32c"] for x in ib["samples"]}
        for x in ia["samples"]:
            if x["block"] in crcs_b and crcs_b[x["block"]] != x["crc32c"]:
                out.append({"slot": ia["slot"], "block": x["block"], "a": x["crc32c"],
                            "b": crcs_b[x["block"]]})
    return out


def diff(a, b):
    """Guest-state differences between two valid Snapshots (from verify()).
    Memory is compared page by page, a page not stored counting as zero, so
    where a writer elided a zero page and another stored it makes no difference."""
    out = {"identical": True, "header": [], "config": [], "vcpus": [], "devices": [],
           "memory": {"pages": 0, "ranges": [], "zero_in_b": 0, "zero_in_a": 0},
           "disks": {"compared": False, "sectors": 0, "ranges": [], "identity": []}}
    if a.live != b.live:
        out["header"].append({"field": "live", "a": a.live, "b": b.live})
    if a.disks_included != b.disks_included:
        out["header"].append({"field": "disks", "a": a.disks_included, "b": b.disks_included})
    elif a.disks_included:
        ranges = _disk_diff(a, b)
        out["disks"] = {"compared": True, "sectors": sum(r["sectors"] for r in ranges),
                        "ranges": ranges, "identity": []}
    else:
        out["disks"]["identity"] = _identity_diff(a, b)
    derived = ("cfi", "feature_names")
    ca = {k: v for k, v in config_json(a.config).items() if k not in derived}
    cb = {k: v for k, v in config_json(b.config).items() if k not in derived}
    for k, x, y in _field_diffs(ca, cb):
        out["config"].append({"field": k, "a": x, "b": y})
    for i in range(max(len(a.vcpus), len(b.vcpus))):
        if i >= len(a.vcpus) or i >= len(b.vcpus):
            out["vcpus"].append({"vcpu": i, "field": "present", "a": i < len(a.vcpus),
                                 "b": i < len(b.vcpus)})
            continue
        va, vb = a.vcpus[i], b.vcpus[i]
        for fname, _, count, _ in VCPU.fields:
            if count > 1:
                for j in range(count):
                    if va[fname][j] != vb[fname][j]:
                        name = {"gpr": f"x{j}", "f": f"f{j}"}.get(fname, f"{fname}[{j}]")
                        out["vcpus"].append({"vcpu": i, "field": name,
                                             "a": va[fname][j], "b": vb[fname][j]})
            elif va[fname] != vb[fname]:
                out["vcpus"].append({"vcpu": i, "field": fname, "a": va[fname],
                                     "b": vb[fname]})
    for i in range(max(len(a.devices), len(b.devices))):
        da = a.devices[i] if i < len(a.devices) else None
        db = b.devices[i] if i < len(b.devices) else None
        if da is None or db is None or da["name"] != db["name"]:
            out["devices"].append({"device": i, "name": (da or db)["name"], "field": "name",
                                   "a": da and da["name"], "b": db and db["name"]})
            continue
        for k, x, y in _field_diffs(device_fields(da), device_fields(db)):
            out["devices"].append({"device": i, "name": da["name"], "field": k, "a": x, "b": y})
    for i in range(max(len(a.virtio), len(b.virtio))):
        va = a.virtio[i] if i < len(a.virtio) else None
        vb = b.virtio[i] if i < len(b.virtio) else None
        if va is None or vb is None or va["name"] != vb["name"]:
            out["devices"].append({"device": f"virtio {i}", "name": (va or vb)["name"],
                                   "field": "name", "a": va and va["name"],
                                   "b": vb and vb["name"]})
            continue
        for k, x, y in _field_diffs(virtio_fields(va), virtio_fields(vb)):
            out["devices"].append({"device": f"virtio {i}", "name": va["name"], "field": k,
                                   "a": x, "b": y})
    pa, pb = _pages(a), _pages(b)
    fa, read_a = _page_reader(a)
    fb, read_b = _page_reader(b)
    differ = []
    with fa, fb:
        zero = bytes(PAGE_SIZE)
        for gpa in sorted(set(pa) | set(pb)):
            x, y = read_a(pa.get(gpa)), read_b(pb.get(gpa))
            if x != y:
                differ.append(gpa)
                if y == zero:
                    out["memory"]["zero_in_b"] += 1
                elif x == zero:
                    out["memory"]["zero_in_a"] += 1
    out["memory"]["pages"] = len(differ)
    out["memory"]["ranges"] = _ranges(differ)
    out["identical"] = not (out["header"] or out["config"] or out["vcpus"] or out["devices"]
                            or differ or out["disks"]["ranges"] or out["disks"]["identity"])
    return out


def _value(field, value):
    if isinstance(value, bool) or value is None:
        return str(value).lower() if isinstance(value, bool) else "-"
    if isinstance(value, int):
        return f"{value:#x}" if value > 9 and field not in ("nr_vcpus", "boot_count") \
            else str(value)
    return json.dumps(value, ensure_ascii=False)


def diff_text(d, name_a="a", name_b="b"):
    out = []
    for x in d["header"]:
        out.append(f"header {x['field']}: {_value(x['field'], x['a'])} | "
                   f"{_value(x['field'], x['b'])}")
    for x in d["config"]:
        out.append(f"config {x['field']}: {_value(x['field'], x['a'])} | "
                   f"{_value(x['field'], x['b'])}")
    for x in d["vcpus"]:
        field = x["field"]
        if field.startswith("x") and field[1:].isdigit():
            field += f"/{GPR_NAMES[int(field[1:])]}"
        out.append(f"vcpu {x['vcpu']} {field}: {_value(field, x['a'])} | "
                   f"{_value(field, x['b'])}")
    for x in d["devices"]:
        out.append(f"device {x['device']} {x['name']} {x['field']}: "
                   f"{_value(x['field'], x['a'])} | {_value(x['field'], x['b'])}")
    m = d["memory"]
    if m["pages"]:
        out.append(f"memory: {m['pages']} page(s) differ ({m['zero_in_b']} of them zero in "
                   f"{name_b}, {m['zero_in_a']} zero in {name_a}):")
        for r in m["ranges"]:
            end = r["gpa"] + r["pages"] * PAGE_SIZE - 1
            out.append(f"  {r['gpa']:#x}..{end:#x}  {r['pages']} page(s)")
    k = d["disks"]
    if k["ranges"]:
        out.append(f"disks: {k['sectors']} sector(s) differ:")
        for r in k["ranges"]:
            out.append(f"  disk {r['slot']} sectors {r['sector']}..{r['sector'] + r['sectors'] - 1}")
    for x in k["identity"]:
        out.append(f"disk {x['slot']} identity (DISK_ID): block {x['block']} crc32c "
                   f"{x['a']:#010x} | {x['b']:#010x}")
    if d["identical"]:
        out.append("identical guest state" + (" (the disks' content too)" if k["compared"]
                                               else ""))
    else:
        counts = [f"{len(d['header']) + len(d['config'])} config field(s)",
                  f"{len(d['vcpus'])} vCPU register(s)", f"{len(d['devices'])} device "
                  f"field(s)", f"{m['pages']} memory page(s)"]
        if k["compared"]:
            counts.append(f"{k['sectors']} disk sector(s)")
        if k["identity"]:
            counts.append(f"{len(k['identity'])} sampled disk block(s)")
        out.append(f"differ: {', '.join(counts)} (values: {name_a} | {name_b})")
    return "\n".join(out)


