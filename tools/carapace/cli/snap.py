# SPDX-License-Identifier: MIT
"""carapace-snap: inspect, verify and compare Carapace snapshot files.

A snapshot file is a saved snapshot stream, or that stream compressed with
gzip (docs/snapshot-format.md is its specification; include/abi/snapshot_format.h
its C form):

    header (32 bytes), then sections, each a 24-byte section header and a
    payload: CONFIG, VCPU x nr_vcpus, DEVICE x 3, VIRTIO x the virtio devices,
    MEMORY x runs, DISK x runs (the disks' content, with the header flag
    DISKS), END.

Versions 1 to 5 are read (Carapace writes 5: version 4 added the VIRTIO
sections, version 5 the DISK sections; the VCPU section of versions 3 to 5
is the records CORE, FP, CFI, FWFT, HSM, STA, PMU; a version 2 VCPU section
is one 848-byte record, read into the records by field name, and a version 1
one is its first 672 bytes, the rest filled in as a version 1 writer ran the
guest: vcpu_from_stream()).  Any other version is refused.

    carapace-snap inspect FILE      sections, CRCs, config, vCPUs (registers,
                                    CFI/FWFT state in words, SUSP, STA, PMU
                                    counters), devices, memory, the disks'
                                    content (runs per disk)
    carapace-snap verify FILE       exit 0 if valid, else 1 and the first problem
    carapace-snap diff A B          what differs: config fields, vCPU registers,
                                    device fields, memory pages, disk sectors
                                    (exit 0 same, 1 different, 2 error)

Every problem names the section and the byte offset (from the start of the
stream, i.e. of the file once a gzip file is expanded) of what is wrong.  --json prints one JSON object instead.

The layouts of CONFIG and the vCPU records and the legal values of their
fields are not restated here: they are read from the record tables of
include/abi/snapshot_records.h (with the names of include/arch/riscv/encoding.h
and include/abi/snapshot_format.h), the tables the hypervisor saves, checks and
masks with, so both read and refuse the same records.  The tool therefore
needs a Carapace source tree (or the copy of the headers a package installs).

From Python: the carapace.snapshot module (docs/python-api.md).
"""

import argparse
import json
import sys

from ..snapshot import SnapError, parse, verify
from ..snapshot_format import DISK_SECTOR
from ..snapshot_diff import diff, diff_text
from ..snapshot_text import compression_text, config_json, inspect_json, inspect_text
from ..units import human_size

EXIT_OK, EXIT_BAD = 0, 1       # verify / inspect
EXIT_SAME, EXIT_DIFFERENT, EXIT_ERROR = 0, 1, 2      # diff
EXIT_USAGE = 2


# --- command line ----------------------------------------------------------------------


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message} (see --help)")


EPILOG = """\
commands:
  inspect FILE     sections (offsets, lengths, CRCs ok/BAD), the config, each vCPU's
                   registers, CFI and FWFT state in words, SBI system suspend,
                   STA shared memory and PMU counters, the UART, PLIC and VM
                   generation ID state, the virtio devices, the memory runs,
                   whether the disks' content is in it and its runs per disk; a
                   damaged file is shown as far as it can be read
  verify FILE      check every rule of docs/snapshot-format.md; exit 0 if valid,
                   else 1 and the first problem (section and byte offset)
  diff A B         guest-state differences: config fields, vCPU registers, device
                   fields, memory pages (a page not stored is zero), the disks'
                   sectors when both hold them (a block not stored is zero)

exit status: inspect/verify: 0 valid, 1 invalid or unreadable, 2 usage error;
diff: 0 identical, 1 different, 2 error (unreadable or invalid file, usage).
"""


def build_parser():
    p = Parser(prog="carapace-snap", epilog=EPILOG,
               formatter_class=argparse.RawDescriptionHelpFormatter,
               description="Inspect, verify and compare Carapace snapshot files "
                           "(docs/snapshot-format.md).")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in ("inspect", "verify"):
        s = sub.add_parser(name)
        s.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
        s.add_argument("file", metavar="FILE")
    s = sub.add_parser("diff")
    s.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    s.add_argument("a", metavar="A")
    s.add_argument("b", metavar="B")
    return p


def dump(obj):
    print(json.dumps(obj, ensure_ascii=False))


def cmd_inspect(args):
    try:
        snap = parse(args.file, strict=False)
    except OSError as e:
        return unreadable(args, args.file, e)
    if args.json:
        dump(inspect_json(snap))
    else:
        print(inspect_text(snap))
    return EXIT_OK if snap.valid else EXIT_BAD


def unreadable(args, path, e):
    message = f"cannot read {path}: {e.strerror or e}"
    if args.json:
        dump({"file": str(path), "valid": False, "error": {"section": None, "offset": None,
                                                           "message": message}})
    print(f"carapace-snap: {message}", file=sys.stderr)
    return EXIT_BAD


def cmd_verify(args):
    try:
        snap = verify(args.file)
    except OSError as e:
        return unreadable(args, args.file, e)
    except SnapError as e:
        if args.json:
            dump({"file": args.file, "valid": False, "error": e.as_json()})
        print(f"carapace-snap: {args.file}: invalid: {e}", file=sys.stderr)
        return EXIT_BAD
    cfg = config_json(snap.config)
    if args.json:
        dump({"file": args.file, "valid": True, "error": None, "bytes": snap.size,
              "compressed": snap.compressed, "file_bytes": snap.file_size,
              "sections": len(snap.sections), "vm": cfg["name"], "vcpus": cfg["nr_vcpus"],
              "ram_size": cfg["ram_size"], "pages": snap.memory_pages, "live": snap.live,
              "disks": snap.disks_included, "disk_runs": len(snap.disk_runs),
              "disk_bytes": sum(r["sectors"] for r in snap.disk_runs) * DISK_SECTOR})
    else:
        print(f"{args.file}: valid snapshot of vm {cfg['name']}: {cfg['nr_vcpus']} vCPU(s), "
              f"{human_size(cfg['ram_size'])} RAM, {snap.memory_pages} page(s) in "
              f"{len(snap.runs)} run(s), {disks_words(snap)}, {snap.size} bytes"
              + (f" (gzip: {snap.file_size} bytes on disk, {compression_text(snap)})"
                 if snap.compressed else ""))
    return EXIT_OK


def disks_words(snap):
    """What the file holds of the disks, for verify's line."""
    if not snap.disks_included:
        return f"{len(snap.disks)} disk(s), their content not in it"
    runs = len(snap.disk_runs)
    size = sum(r["sectors"] for r in snap.disk_runs) * DISK_SECTOR
    return (f"{len(snap.disks)} disk(s) with their content ({runs} run(s), "
            f"{human_size(size)})")


def cmd_diff(args):
    snaps = []
    for path in (args.a, args.b):
        try:
            snaps.append(verify(path))
        except OSError as e:
            message = f"cannot read {path}: {e.strerror or e}"
        except SnapError as e:
            message = f"{path}: invalid: {e}"
        else:
            continue
        if args.json:
            dump({"error": message})
        print(f"carapace-snap: {message}", file=sys.stderr)
        return EXIT_ERROR
    d = diff(*snaps)
    if args.json:
        dump({"a": args.a, "b": args.b, **d})
    else:
        print(diff_text(d, "a", "b"))
    return EXIT_SAME if d["identical"] else EXIT_DIFFERENT


def main(argv=None):
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            raise UsageError("no command given (see --help)")
        return {"inspect": cmd_inspect, "verify": cmd_verify, "diff": cmd_diff}[args.command](args)
    except UsageError as e:
        print(f"carapace-snap: usage: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("carapace-snap: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK

