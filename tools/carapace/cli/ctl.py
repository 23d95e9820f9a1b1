# SPDX-License-Identifier: MIT
"""carapace-ctl: manage a running Carapace hypervisor over its control channel.

The hypervisor owns a virtio-serial device that no guest sees; QEMU connects
its port "org.carapace.control" to a UNIX socket (carapace-run --ctl-socket,
whose path carapace-run prints when it starts).  On it runs a line protocol,
one JSON object per line; docs/management.md is its specification.  A second
port, "org.carapace.stream" (carapace-run --stream-socket), carries the bytes
of snapshot streams (docs/snapshot-format.md).  In short:

    request  {"v":1,"id":7,"cmd":"pause","vm":"alpha"}
    reply    {"v":1,"id":7,"ok":true,"vm":"alpha","state":"paused"}
    error    {"v":1,"id":7,"ok":false,"code":"bad-state","error":"vm alpha is not running"}

Exit status: 0 the command succeeded; 1 the hypervisor answered with an error;
2 transport problem (no socket, refused, timeout, connection closed, a reply
that is not a reply to this request, a stream of the wrong length); 3 usage
error, or a local file problem (snapshot FILE not writable, restore FILE not
readable or not a valid snapshot).

From Python, use the carapace package (docs/python-api.md).

Live migration (docs/migration.md): `migrate VM HOST:PORT` connects to the
destination's relay over TLS (tools/carapace-tls: both hosts authenticated
with X.509 certificates, or plain TCP on the loopback when asked for with
--plain), waits until the destination says it is ready, then relays the
migration stream both ways between the source hypervisor's stream port and
that connection while the "migrate" request runs; `incoming PORT` is the
same relay on a running destination, which refuses every peer that does not
authenticate before any of its bytes reach the hypervisor.  The relay
follows both directions' framing to print progress, and has testing hooks
(--cut-at, --hold-at) that break or stall it at a phase.
"""

import argparse
import json
import re
import sys
import time
from pathlib import Path

from ..checks import bootargs, cfi_policy, image_name, irqchip, vcpu_count, vm_mem, vm_name
from ..client import DEFAULT_TIMEOUT, MAX_TIMEOUT, Client
from ..errors import FileError, RemoteError, TransportError, UsageError
from ..limits import CFI_POLICIES, DEFAULT_CFI, DEFAULT_MEM, DEFAULT_VCPUS
from ..metrics import collect, exposition
from ..migration import (Refusal, MigReporter, connect_destination, incoming_args, incoming_vm,
                         migrate_vm, parse_target, tcp_port)
from ..paths import default_stream_socket
from ..relay import MIG_DOWNTIME_LIMIT_MAX, MIG_MAX_ROUNDS, Hook, parse_phase
from ..streams import check_disk_targets, restore_vm, snapshot_vm, verify_snapshot
from ..units import human_size

EXIT_OK, EXIT_REMOTE, EXIT_TRANSPORT, EXIT_USAGE = 0, 1, 2, 3


def request_for(args):
    """(cmd, arguments) of the request the command line asks for, checked."""
    c = args.command
    if c in ("hello", "list", "images"):
        return c, {}
    if c == "stats":
        return c, {"vm": vm_name(args.vm)} if args.vm is not None else {}
    if c in ("cfi", "pause", "resume", "wake", "destroy", "devices"):
        return c, {"vm": vm_name(args.vm)}
    if c == "nic":
        if not 0 <= args.index <= 1:
            raise UsageError(f"NIC index {args.index}: a VM has NICs 0 and 1 at most")
        return c, {"vm": vm_name(args.vm), "nic": args.index, "action": args.action}
    if c == "create":
        return c, {"name": vm_name(args.name),
                   "kernel": image_name(args.kernel, "--kernel"),
                   "initrd": image_name(args.initrd, "--initrd") if args.initrd else None,
                   "mem": vm_mem(args.mem) if args.mem is not None else DEFAULT_MEM,
                   "vcpus": vcpu_count(args.vcpus) if args.vcpus is not None
                   else DEFAULT_VCPUS,
                   "cfi": cfi_policy(args.cfi) if args.cfi is not None else DEFAULT_CFI,
                   "bootargs": bootargs(args.bootargs),
                   # only when asked: older hypervisors know no irqchip
                   **({"irqchip": irqchip(args.irqchip)} if args.irqchip else {})}
    raise UsageError(f"unknown command '{c}'")


# --- output for people -------------------------------------------------------------


def hexa(value):
    return f"{value:#x}" if isinstance(value, int) else str(value)


def table(headers, rows):
    """Aligned columns; numbers right-aligned."""
    rows = [[str(cell) for cell in row] for row in rows]
    widths = [max(len(x) for x in column) for column in zip(headers, *rows)]
    numeric = [all(re.fullmatch(r"-?[0-9]+", row[i]) for row in rows) if rows else False
               for i in range(len(headers))]
    lines = []
    for row in [list(headers)] + rows:
        cells = [cell.rjust(w) if num else cell.ljust(w)
                 for cell, w, num in zip(row, widths, numeric)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def yes_no(value):
    return "yes" if value else "no"


def hyp_cfi_text(c):
    """The hypervisor's own CFI, from hello's "hyp_cfi" (hyp/host/mgmt.c), as
    its boot log says it."""
    if not isinstance(c, dict):
        return "unknown (an older hypervisor)"
    if c.get("build") != "cfi":
        return "plain build"

    def state(on, locked):
        return ("on (locked)" if locked else "on (not locked)") if on else "OFF"
    text = (f"landing pads {state(c.get('landing_pads'), c.get('landing_pads_locked'))}, "
            f"shadow stack {state(c.get('shadow_stack'), c.get('shadow_stack_locked'))}")
    return text + (", debug hooks built in" if c.get("debug_hooks") else "")


def show_hello(r):
    vmids = f", {r['vmids']} VMIDs" if isinstance(r.get("vmids"), int) else ""
    return (f"{r.get('hypervisor', '?')} hypervisor, protocol {r.get('protocol', '?')}, "
            f"{r.get('harts', '?')} harts, at most {r.get('vm_max', '?')} VMs{vmids}\n"
            f"hypervisor CFI: {hyp_cfi_text(r.get('hyp_cfi'))}\n"
            f"commands: {' '.join(r.get('commands', []))}")


def show_list(r):
    vms = r.get("vms", [])
    if not vms:
        return "no VMs"
    return table(["NAME", "INDEX", "STATE", "VCPUS", "MEM", "CFI", "BOOTS", "FAILED"],
                 [[v.get("name"), v.get("index"),
                   v.get("state") + (f" ({v['migration']})" if v.get("migration") else ""),
                   v.get("vcpus"),
                   human_size(v.get("mem")), v.get("cfi"), v.get("boots"),
                   yes_no(v.get("failed"))] for v in vms])


def show_images(r):
    images = r.get("images", [])
    if not images:
        return "no images"
    return table(["NAME", "BYTES", "SIZE"],
                 [[i.get("name"), i.get("size"), human_size(i.get("size"))] for i in images])


STATS_COLUMNS = (("exits", "EXITS"), ("sbi", "SBI"), ("guest_page_faults", "PAGE-FAULTS"),
                 ("virtual_insn", "VIRT-INSN"), ("host_irq", "HOST-IRQ"),
                 ("sw_check", "SW-CHECK"), ("mmio", "MMIO"), ("wfi", "WFI"),
                 ("injected", "INJECTED"))


def show_stats(r):
    vms = r.get("vms", [])
    out = table(["NAME"] + [h for _, h in STATS_COLUMNS],
                [[v.get("name")] + [v.get(k) for k, _ in STATS_COLUMNS] for v in vms]) \
        if vms else "no VMs"
    free = (r.get("host") or {}).get("free_mem")
    if free is not None:
        out += f"\nhost: {human_size(free)} free ({free} bytes)"
    return out


def on_off(enabled, locked):
    return ("on" if enabled else "off") + (" (locked)" if locked else "")


def show_vcpu_cfi(v):
    parts = [f"shadow stack {on_off(v.get('ss_enabled'), v.get('ss_locked'))}"]
    if v.get("ss_enabled") or v.get("ssp"):
        parts.append(f"ssp={hexa(v.get('ssp'))}")
    parts.append(f"landing pads {on_off(v.get('lp_enabled'), v.get('lp_locked'))}")
    parts.append(f"ELP={'expected' if v.get('elp') else 'none'}")
    parts.append(f"senvcfg={hexa(v.get('senvcfg'))}")
    lp, ss = v.get("violations_lp", 0), v.get("violations_ss", 0)
    if lp or ss or v.get("last_from"):
        text = f"violations: {lp} landing pad, {ss} shadow stack"
        if v.get("last_from"):
            text += (f"; last at pc {hexa(v.get('last_pc'))}, tval {hexa(v.get('last_tval'))}"
                     f", from {v.get('last_from')}")
    else:
        text = "violations: none"
    parts.append(text)
    return f"vcpu {v.get('id')} ({v.get('hsm')}): " + ", ".join(parts)


def show_cfi(r):
    asked = r.get("policy_requested")
    policy = r.get("policy")
    if asked and asked != policy:
        policy = f"{policy} (asked for {asked}, which cannot be exact on this CPU)"
    head = (f"vm {r.get('vm')}: policy {policy}; may use landing pads: "
            f"{yes_no(r.get('landing_pads'))}, shadow stacks: {yes_no(r.get('shadow_stacks'))}")
    return "\n".join([head] + [show_vcpu_cfi(v) for v in r.get("vcpus", [])])


def counts(c):
    return (f"{c.get('requests', 0)} req, {human_size(c.get('bytes', 0))}, "
            f"{c.get('errors', 0)} errors, {c.get('drops', 0)} drops")


def limit_text(d, ops, unit):
    """A device's rate limit in words: '2000 req/s, 32M/s, held 5 times'."""
    lim = d.get("limit", {})
    parts = [f"{lim[ops]} {unit}/s" if lim.get(ops) else f"{unit}/s unlimited",
             f"{human_size(lim['bandwidth'])}/s" if lim.get("bandwidth") else "bytes/s unlimited"]
    return f"limit {', '.join(parts)}, held {d.get('held', 0)} times"


def show_device(d):
    if d.get("kind") == "blk":
        return (f"  slot {d.get('slot')}: disk at host {d.get('host')}, "
                f"{human_size(d.get('sectors', 0) * 512)}{', read-only' if d.get('read_only') else ''}"
                f": {counts(d.get('io', {}))}; {limit_text(d, 'iops', 'req')}")
    state = "on" if d.get("attached") else "detached from"
    return (f"  slot {d.get('slot')}: nic {d.get('nic')} {d.get('mac')} {state} switch "
            f"{d.get('switch')}: sent {counts(d.get('tx', {}))}; received {counts(d.get('rx', {}))}"
            f"; spoofed frames dropped {d.get('tx_spoofed', 0)}; {limit_text(d, 'pps', 'frames')}")


def show_devices(r):
    devs = r.get("devices", [])
    return "\n".join([f"vm {r.get('vm')}: {len(devs)} device(s)"] + [show_device(d) for d in devs])


SHOW = {
    "hello": show_hello,
    "list": show_list,
    "images": show_images,
    "stats": show_stats,
    "cfi": show_cfi,
    "devices": show_devices,
    "nic": lambda r: (f"vm {r.get('vm')}: nic {r.get('nic')} "
                      f"{'attached to' if r.get('attached') else 'detached from'} its switch"),
    "pause": lambda r: f"vm {r.get('vm')}: {r.get('state')}",
    "resume": lambda r: f"vm {r.get('vm')}: {r.get('state')}",
    "wake": lambda r: f"vm {r.get('vm')}: {r.get('state')}",
    "destroy": lambda r: f"vm {r.get('vm')}: destroyed, {human_size(r.get('freed'))} freed",
    "create": lambda r: f"vm {r.get('vm')}: created, index {r.get('index')}",
    "snapshot": lambda r: (f"vm {r.get('vm')}: {'live ' if r.get('live') else ''}snapshot "
                           f"written: {r.get('bytes')} bytes ({human_size(r.get('bytes'))}), "
                           f"{r.get('pages')} memory pages{snapshot_disks_text(r)}, "
                           f"paused {pause_text(r.get('pause_us'))}"),
    "restore": lambda r: (f"vm {r.get('vm')}: restored, index {r.get('index')}, "
                          f"{r.get('pages')} memory pages" +
                          (f", {r['disk_runs']} disk runs written"
                           if r.get("disk_runs") else "") + nics_text(r)),
    "migrate": lambda r: show_migrate(r),
    "incoming": lambda r: show_incoming(r),
}


def snapshot_disks_text(r):
    """What a snapshot holds of the VM's disks (its reply's disks, disk_runs)."""
    if r.get("disks") is True:
        return f", the disks' content in {r.get('disk_runs')} run(s)"
    if r.get("disks") is False:
        return ", without the disks' content (--no-disks)"
    return ""


def nics_text(r):
    """A restored VM's NICs that got a new MAC (a copy beside its original)."""
    new = [f"NIC {n.get('nic')} has the new MAC {n.get('mac')} (its saved one is on its "
           "switch)" for n in r.get("nics") or [] if isinstance(n, dict) and n.get("new_mac")]
    return "; " + "; ".join(new) if new else ""


def pause_text(us):
    if not isinstance(us, int):
        return str(us)
    return f"{us / 1000:.3f} ms" if us < 10_000_000 else f"{us / 1e6:.1f} s"


# --- command line --------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message} (see --help)")


EPILOG = """\
commands:
  hello                  protocol version, harts, the commands the hypervisor knows
  list                   VMs: state, vCPUs, memory, CFI policy, boots
  images                 images in host RAM that create can boot (VM.kernel,
                         VM.initrd of the boot VMs, carapace-run --image NAME)
  stats [VM]             exit counters (all VMs, or one) and free host memory
  metrics                every counter of the host and its VMs in the Prometheus
                         text format (--json: the counters as one JSON object),
                         for a textfile collector or a scraper
  cfi VM                 each vCPU's CFI state in words
  pause VM               stop VM's vCPUs (replies once all are off their harts)
  resume VM              let a paused VM run again
  wake VM                wake a VM its guest suspended (SBI SUSP, state
                         "suspended"), as a wake-up interrupt would
  destroy VM             stop VM and give its memory back
  create NAME --kernel IMG [--initrd IMG] [--mem 64M] [--vcpus 1] [--cfi trap]
         [--irqchip plic|aia] [--bootargs TEXT]
                         a new VM booting from images (see `images`)
  snapshot VM FILE [--live] [--no-compress] [--no-disks]
                         save VM (paused meanwhile, then resumed) to FILE: the
                         stream goes to FILE.tmp, gzipped unless --no-compress,
                         renamed to FILE once complete; it holds the content
                         of the VM's disks (blocks of zeroes left out) unless
                         --no-disks (then each disk's content stays only in
                         its image)
  restore FILE [--name NEW] [--disk N]... [--no-verify]
                         check FILE (as carapace-snap verify does), then create
                         and start the VM it holds, as NEW if given; a gzip
                         FILE is expanded on the way (the hypervisor reads the
                         stream only); its disks go to the host disks at PCI
                         device N (one --disk per disk, in order), else to the
                         ones they were saved on; each must be free and of the
                         saved disk's size. A FILE holding its disks' content
                         writes it there: give --disk N for every disk, each
                         a fresh zeroed host disk no VM has (carapace-run
                         --spare-disk PATH:size=SIZE makes one; never the
                         disk it was saved from). Without it (--no-disks)
                         the disk's content is yours to match: the restore
                         refuses (no-device) a host disk whose sampled blocks
                         differ from the snapshot's (its DISK_ID)
  migrate VM HOST:PORT [--max-rounds N] [--downtime-limit MS] [--no-auto-converge]
          [--json] [TRANSPORT] [--tls-name NAME]
                         live-migrate VM to the destination listening at
                         HOST:PORT (carapace-run --incoming PORT there, or
                         carapace-ctl incoming PORT): this command relays the
                         stream between the local stream socket and a TLS
                         connection, printing each pre-copy round; the VM stays
                         here unless the destination confirms it runs. The
                         destination chooses how the disks move: their blocks
                         in the stream (copy) or not (shared: the same images);
                         the result says which. Pre-copy stops once what is
                         left would go within --downtime-limit (default 20
                         ms) at the stream's measured rate; a guest that
                         writes pages faster than half that rate has its
                         page writes paced until it fits (auto-converge;
                         --no-auto-converge: it runs at full speed and
                         pre-copy stops once rounds stop shrinking)
  incoming PORT [--listen ADDR] [--name NEW] [--disk N]... [--copy-disks] [--wait SEC]
         [--json] [TRANSPORT] [--tls-peer NAME]...
                         receive one VM on this (running) host: listen on
                         ADDR:PORT (default 127.0.0.1), wait for a source that
                         authenticates (others are refused, and reported), relay.
                         The VM's disks go to the host disks --disk N (one per
                         disk, in order; default: the numbers they had there).
                         Shared (the default): each is the image the source
                         uses. --copy-disks: the disks' blocks come with the
                         stream; each --disk N must be a free host disk of the
                         source disk's size, all zeroes (carapace-run
                         --spare-disk PATH:size=SIZE makes one)
  raw LINE               send LINE verbatim, print the reply line (debugging)

TRANSPORT (migrate, incoming; docs/migration.md, "Transport"): TLS 1.3 with an
X.509 certificate on each side, checked against one CA:
  --tls-dir DIR          ca-cert.pem and the side's certificate and key:
                         client-cert.pem, client-key.pem (migrate: the source),
                         server-cert.pem, server-key.pem (incoming: the
                         destination); default $CARAPACE_TLS_DIR;
                         `tools/carapace-tls init DIR` makes a test set
  --tls-ca F, --tls-cert F, --tls-key F   the files one by one
  --tls-name NAME        migrate: the name the destination's certificate must
                         carry (default: HOST)
  --tls-peer NAME        incoming: accept only a source whose certificate
                         carries NAME (repeatable; default: any the CA signed)
  --plain                plain TCP, neither authenticated nor encrypted: only
                         on the loopback (HOST, ADDR 127.0.0.1, ::1, localhost)

migrate testing hooks (for tests; docs/migration.md):
  --cut-at PHASE         close both connections when the relay reaches PHASE
  --hold-at PHASE --hold-seconds S
                         stop relaying for S seconds at PHASE (a test kills the
                         destination meanwhile)
  PHASE: negotiation (the destination's CAPS went to the source), round:N
  (round N's ROUND went to the destination), stop-and-copy (SWITCHOVER, the
  next section's header and half its payload went), confirmation (the
  destination's RUNNING arrived: it is never forwarded), done (RUNNING went to
  the source, whose DONE is never forwarded)

exit status: 0 ok; 1 the hypervisor answered an error (CODE on stderr);
2 transport problem (no socket, refused, timeout, closed, a stream of the wrong
length, nothing listening at HOST:PORT, a destination that failed or refused
the TLS handshake); 3 usage error or a local file problem (FILE unwritable,
unreadable, or not a valid snapshot; TLS credentials missing or unusable).

The socket is where carapace-run --ctl-socket put it (carapace-run prints it);
default $CARAPACE_CTL_SOCKET, else ${XDG_RUNTIME_DIR:-/tmp}/carapace-$UID/ctl.sock.
Snapshot streams travel on the stream socket (carapace-run --stream-socket):
default $CARAPACE_STREAM_SOCKET, else stream.sock beside a ctl.sock control
socket, NAME.stream.sock beside any other NAME.sock.
A host started with carapace-run --incoming PORT has one too (the network
side is its TLS relay's).
--timeout bounds silence: a snapshot or restore may take longer while bytes
keep moving.  Progress (bytes, MiB/s) goes to stderr when it is a terminal, or
with --progress.  Protocol: docs/management.md; format: docs/snapshot-format.md.

examples:
  carapace-ctl list
  carapace-ctl pause alpha && carapace-ctl resume alpha
  carapace-ctl create gamma --kernel alpha.kernel --initrd alpha.initrd --mem 256M
  carapace-ctl --json stats alpha
  carapace-ctl metrics > /var/lib/node_exporter/textfile/carapace.prom.$$ &&
      mv /var/lib/node_exporter/textfile/carapace.prom.$$ \
         /var/lib/node_exporter/textfile/carapace.prom
  carapace-ctl snapshot alpha alpha.snap && carapace-ctl restore alpha.snap --name alpha2
  carapace-ctl migrate alpha b.example:4444 --tls-dir /etc/carapace/tls --max-rounds 10
  carapace-ctl --socket /tmp/dst.sock incoming 4444 --listen 0.0.0.0 --tls-dir tls \
      --name alpha2
  carapace-ctl migrate alpha 127.0.0.1:4444 --plain      # tests, one machine
"""


def build_parser():
    p = Parser(prog="carapace-ctl", epilog=EPILOG,
               formatter_class=argparse.RawDescriptionHelpFormatter,
               description="Manage a running Carapace hypervisor (list, pause, resume, "
                           "destroy, create VMs; counters and CFI state).")
    p.add_argument("--socket", type=Path, metavar="PATH",
                   help="control socket (default: $CARAPACE_CTL_SOCKET or "
                        "${XDG_RUNTIME_DIR:-/tmp}/carapace-$UID/ctl.sock)")
    p.add_argument("--json", action="store_true",
                   help="print the reply object as JSON on one line")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SEC",
                   help=f"wait this long for the reply (default {DEFAULT_TIMEOUT:g}); "
                        "snapshot/restore: for silence")
    p.add_argument("--stream-socket", type=Path, metavar="PATH",
                   help="stream socket for snapshot/restore/migrate/incoming (default: "
                        "$CARAPACE_STREAM_SOCKET, else stream.sock beside a ctl.sock, NAME.stream.sock "
                        "beside NAME.sock)")
    p.add_argument("--progress", action="store_true",
                   help="snapshot/restore: show progress on stderr even when it is not a "
                        "terminal")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in ("hello", "list", "images"):
        sub.add_parser(name)
    sub.add_parser("stats").add_argument("vm", nargs="?", metavar="VM")
    sub.add_parser("metrics")
    for name in ("cfi", "pause", "resume", "wake", "destroy", "devices"):
        sub.add_parser(name).add_argument("vm", metavar="VM")
    nic = sub.add_parser("nic", help="take a VM's NIC off its switch, or put it back")
    nic.add_argument("vm", metavar="VM")
    nic.add_argument("index", type=int, metavar="N", help="the NIC: 0 (eth0) or 1 (eth1)")
    nic.add_argument("action", choices=("detach", "attach"))
    create = sub.add_parser("create")
    create.add_argument("name", metavar="NAME")
    create.add_argument("--kernel", required=True, metavar="IMG")
    create.add_argument("--initrd", metavar="IMG")
    create.add_argument("--mem", metavar="SIZE", help="guest RAM (default 64M)")
    create.add_argument("--vcpus", metavar="N", help="1..8 (default 1)")
    create.add_argument("--cfi", metavar="POLICY",
                        help=f"{' | '.join(CFI_POLICIES)} (default trap)")
    create.add_argument("--irqchip", metavar="KIND",
                        help="plic | aia (default plic; aia needs a host with Ssaia)")
    create.add_argument("--bootargs", metavar="TEXT")
    snapshot = sub.add_parser("snapshot")
    snapshot.add_argument("vm", metavar="VM")
    snapshot.add_argument("file", type=Path, metavar="FILE")
    snapshot.add_argument("--live", action="store_true",
                          help="ask for a live snapshot (the VM runs on meanwhile)")
    snapshot.add_argument("--no-compress", action="store_true",
                          help="write the stream itself, not gzipped")
    snapshot.add_argument("--no-disks", action="store_true",
                          help="leave the disks' content out (it stays in their images)")
    restore = sub.add_parser("restore")
    restore.add_argument("file", type=Path, metavar="FILE")
    restore.add_argument("--name", metavar="NEW", help="the restored VM's name")
    restore.add_argument("--disk", type=int, action="append", metavar="N",
                         help="the host disk (PCI device number) for the next disk")
    restore.add_argument("--no-verify", action="store_true",
                         help="send FILE without checking it first (to test the "
                              "hypervisor's own checks)")
    migrate = sub.add_parser("migrate")
    migrate.add_argument("vm", metavar="VM")
    migrate.add_argument("target", metavar="HOST:PORT")
    migrate.add_argument("--max-rounds", metavar="N",
                         help=f"pre-copy rounds at most, 1..{MIG_MAX_ROUNDS} (default: the "
                              "hypervisor's, 30)")
    migrate.add_argument("--downtime-limit", metavar="MS",
                         help=f"the downtime pre-copy aims for, 1..{MIG_DOWNTIME_LIMIT_MAX} ms "
                              "(default: the hypervisor's, 20)")
    migrate.add_argument("--no-auto-converge", action="store_true",
                         help="never pace the guest's page writes")
    migrate.add_argument("--json", dest="sub_json", action="store_true",
                         help="one JSON object per progress event, then the reply")
    migrate.add_argument("--cut-at", metavar="PHASE",
                         help="testing: close both connections at PHASE")
    migrate.add_argument("--hold-at", metavar="PHASE",
                         help="testing: stop relaying for --hold-seconds at PHASE")
    migrate.add_argument("--hold-seconds", type=float, metavar="S",
                         help="testing: how long --hold-at holds")
    add_transport_options(migrate, "source")
    incoming = sub.add_parser("incoming")
    incoming.add_argument("port", metavar="PORT")
    incoming.add_argument("--listen", default="127.0.0.1", metavar="ADDR",
                          help="address to listen on (default 127.0.0.1)")
    incoming.add_argument("--name", metavar="NEW", help="the received VM's name here")
    incoming.add_argument("--disk", type=int, action="append", metavar="N",
                          help="the host disk (PCI device number) for the next disk")
    incoming.add_argument("--copy-disks", action="store_true",
                          help="copy the disks' blocks with the stream into the --disk host "
                               "disks (each free, zeroed, of the source disk's size); default: "
                               "shared, the host disks are the images the source uses")
    incoming.add_argument("--wait", type=float, metavar="SEC",
                          help="give up if no source connects within SEC (default: wait)")
    incoming.add_argument("--json", dest="sub_json", action="store_true",
                          help="one JSON object per progress event, then the reply")
    add_transport_options(incoming, "destination")
    sub.add_parser("raw").add_argument("line", metavar="LINE")
    return p


def add_transport_options(parser, side):
    """The TRANSPORT options of migrate (@side "source") and incoming."""
    files = ("client-cert.pem, client-key.pem" if side == "source"
             else "server-cert.pem, server-key.pem")
    parser.add_argument("--tls-dir", type=Path, metavar="DIR",
                        help=f"credentials: ca-cert.pem, {files} (default $CARAPACE_TLS_DIR)")
    parser.add_argument("--tls-ca", type=Path, metavar="FILE", help="the CA certificate")
    parser.add_argument("--tls-cert", type=Path, metavar="FILE", help="this side's certificate")
    parser.add_argument("--tls-key", type=Path, metavar="FILE", help="this side's private key")
    if side == "source":
        parser.add_argument("--tls-name", metavar="NAME",
                            help="the name the destination's certificate must carry "
                                 "(default: HOST)")
    else:
        parser.add_argument("--tls-peer", action="append", metavar="NAME",
                            help="accept only a source whose certificate carries NAME "
                                 "(repeatable)")
    parser.add_argument("--plain", action="store_true",
                        help="plain TCP, not authenticated, not encrypted: loopback only")


def transport_from_args(args, host):
    """The carapace-tls Transport the TRANSPORT options ask for (@host: where
    migrate connects, or where incoming listens)."""
    from .. import tls      # imported when needed: carapace-ctl starts faster

    source = args.command == "migrate"
    named = [(opt, value) for opt, value in (
        ("--tls-dir", args.tls_dir), ("--tls-ca", args.tls_ca), ("--tls-cert", args.tls_cert),
        ("--tls-key", args.tls_key),
        ("--tls-name", getattr(args, "tls_name", None)),
        ("--tls-peer", getattr(args, "tls_peer", None))) if value]
    try:
        if args.plain:
            if named:
                raise UsageError(f"{args.command}: --plain and {named[0][0]}: plain TCP has no "
                                 "certificates")
            what = f"migrate --plain {host}" if source else f"incoming --plain --listen {host}"
            return tls.plain_transport(host, what)
        hint = "; or, on the loopback only, --plain"
        if source:
            return tls.source_transport(args.tls_dir, args.tls_ca, args.tls_cert, args.tls_key,
                                        args.tls_name, hint)
        return tls.destination_transport(args.tls_dir, args.tls_ca, args.tls_cert,
                                         args.tls_key, args.tls_peer or (), hint)
    except tls.ConfigError as e:
        raise FileError(str(e)) from None


def print_reply(reply, as_json, command):
    if as_json:
        print(json.dumps(reply, separators=(",", ":"), ensure_ascii=False))
    else:
        print(SHOW[command](reply))


def run(argv):
    args = build_parser().parse_args(argv)
    if args.command is None:
        raise UsageError("no command given (see --help)")
    if not 0 < args.timeout <= MAX_TIMEOUT:
        raise UsageError(f"--timeout {args.timeout:g}: must be more than 0 and at most "
                         f"{MAX_TIMEOUT:g}")
    if args.command == "raw":
        if "\n" in args.line:
            raise UsageError("raw: LINE must not contain a newline")
        if not args.line:
            raise UsageError("raw: LINE is empty (the hypervisor answers no empty line)")
        with Client(args.socket, args.timeout) as client:
            line = client.raw(args.line)
        print(line)
        try:
            reply = json.loads(line)
        except ValueError:
            raise TransportError("the reply is not JSON") from None
        if isinstance(reply, dict) and reply.get("ok") is False:
            raise RemoteError(str(reply.get("code")), str(reply.get("error")), reply)
        return EXIT_OK
    if args.command in ("snapshot", "restore"):
        return run_stream_command(args)
    if args.command in ("migrate", "incoming"):
        return run_migration_command(args)
    if args.command == "metrics":
        return run_metrics(args)
    cmd, request_args = request_for(args)          # checked before connecting
    with Client(args.socket, args.timeout) as client:
        try:
            reply = client.request(cmd, request_args)
        except RemoteError as e:
            if args.json:
                print_reply(e.reply, True, cmd)
            raise
    print_reply(reply, args.json, cmd)
    return EXIT_OK


def run_metrics(args):
    """metrics: the host's counters, then each VM's, printed at once."""
    with Client(args.socket, args.timeout) as client:
        try:
            data = collect(client)
        except RemoteError as e:
            if args.json:
                print_reply(e.reply, True, "metrics")
            raise
    if args.json:
        print(json.dumps(data, separators=(",", ":"), ensure_ascii=False))
    else:
        sys.stdout.write(exposition(data))
    return EXIT_OK


def run_stream_command(args):
    """snapshot and restore: the control socket and the stream socket."""
    progress = sys.stderr if (args.progress or sys.stderr.isatty()) else None
    stream_path = args.stream_socket or default_stream_socket(args.socket)
    if args.command == "snapshot":
        vm = vm_name(args.vm)
        if args.file.is_dir():
            raise UsageError(f"snapshot: {args.file} is a directory; give a file name")
    else:
        name = vm_name(args.name) if args.name is not None else None
        stream_bytes = None
        if not args.no_verify:
            snap = verify_snapshot(args.file)                   # before connecting
            stream_bytes = snap.size
            check_disk_targets(args.file, snap, args.disk or [])
    with Client(args.socket, args.timeout) as client:
        try:
            if args.command == "snapshot":
                reply = snapshot_vm(client, stream_path, vm, args.file, args.live, progress,
                                    compress=not args.no_compress, disks=not args.no_disks)
            else:
                reply = restore_vm(client, stream_path, args.file, name, verify=False,
                                   progress=progress, stream_bytes=stream_bytes,
                                   disks=args.disk)
        except RemoteError as e:
            if args.json:
                print_reply(e.reply, True, args.command)
            raise
    if args.json:
        print_reply(reply, True, args.command)
    elif args.command == "snapshot":
        saved = (f"saved to {args.file} (gzip, {human_size(reply['file_bytes'])}, "
                 f"{100.0 * reply['file_bytes'] / max(reply.get('bytes') or 1, 1):.1f} % of "
                 "the stream)") if reply["compressed"] else f"saved to {args.file}"
        print(SHOW["snapshot"](reply) + "; " + saved)
    else:
        print(SHOW["restore"](reply) + f" (from {args.file})")
    return EXIT_OK


def migration_hook(args):
    """The --cut-at / --hold-at testing hook of migrate, checked, or None."""
    if args.cut_at is not None and args.hold_at is not None:
        raise UsageError("migrate: give --cut-at or --hold-at, not both")
    if args.hold_at is None and args.hold_seconds is not None:
        raise UsageError("migrate: --hold-seconds needs --hold-at")
    if args.cut_at is not None:
        return Hook("cut", parse_phase(args.cut_at, "--cut-at"))
    if args.hold_at is not None:
        phase = parse_phase(args.hold_at, "--hold-at")
        if args.hold_seconds is None:
            raise UsageError("migrate: --hold-at needs --hold-seconds S")
        if not 0 <= args.hold_seconds <= MAX_TIMEOUT:
            raise UsageError(f"--hold-seconds {args.hold_seconds:g}: must be 0..{MAX_TIMEOUT:g}")
        return Hook("hold", phase, args.hold_seconds)
    return None


def option_count(text, option, most, unit=""):
    """An option's whole number 1..@most (None if not given)."""
    if text is None:
        return None
    if not re.fullmatch(r"[0-9]{1,9}", text) or not 1 <= int(text) <= most:
        raise UsageError(f"{option} {text}: must be 1..{most}{unit}")
    return int(text)


def pace_text(reply):
    """What auto-converge did, from a migrate reply; "" if nothing."""
    limit = reply.get("dirty_limit")
    if not isinstance(limit, int) or not limit:
        return ""
    return (f"; auto-converge held its page writes to {limit}/s "
            f"({reply.get('dirty_holds')} holds, {pause_text(reply.get('dirty_held_us'))} "
            f"in all)")


def downtime_text(reply):
    src, dst = reply.get("downtime_us"), reply.get("dest_downtime_us")
    if isinstance(src, int) and isinstance(dst, int):
        return (f"downtime {pause_text(src + dst)} of virtual time ({pause_text(src)} on the "
                f"source + {pause_text(dst)} on the destination)")
    return f"downtime {pause_text(src)} on the source"


def show_migrate(r):
    wall = r.get("wall_us")
    total = r.get("total_us")
    return (f"vm {r.get('vm')}: migrated to {r.get('to', '?')} in "
            f"{wall / 1e6:.2f} s wall time" if isinstance(wall, int) else
            f"vm {r.get('vm')}: migrated to {r.get('to', '?')}") + \
        (f" ({total / 1e6:.2f} s on the source)" if isinstance(total, int) else "") + \
        (f": {r.get('bytes')} bytes ({human_size(r.get('bytes'))}), {r.get('rounds')} "
         f"round(s), {r.get('pages')} pages{migration_disks_text(r, 'sent')}; "
         f"{downtime_text(r)}{expected_text(r)}{pace_text(r)}")


def expected_text(r):
    expected = r.get("expected_downtime_us")
    return f" (expected {pause_text(expected)})" if isinstance(expected, int) and expected else ""


def show_incoming(r):
    index = f", index {r['index']}" if isinstance(r.get("index"), int) else ""
    rounds = f"{r['rounds']} round(s), " if isinstance(r.get("rounds"), int) else ""
    return (f"vm {r.get('vm')}: received from {r.get('from', '?')} and running{index}: "
            f"{rounds}{r.get('pages')} pages, {r.get('bytes')} bytes "
            f"({human_size(r.get('bytes'))}), downtime {pause_text(r.get('downtime_us'))} "
            f"on this host{migration_disks_text(r, 'received')}")


def migration_disks_text(r, verb):
    """How a migration moved the VM's disks (its reply's disk_mode,
    disk_blocks, disk_bytes); nothing for a VM without disks ("none") or a
    reply without them."""
    mode = r.get("disk_mode")
    if mode == "copy":
        return (f"; disks copied: {r.get('disk_blocks')} blocks {verb}, "
                f"{r.get('disk_bytes')} bytes ({human_size(r.get('disk_bytes'))})")
    if mode == "shared":
        return "; disks shared (the same images on both hosts)"
    return ""


def run_migration_command(args):
    """migrate and incoming: the control socket, the stream socket, TCP."""
    as_json = args.json or args.sub_json
    stream_path = args.stream_socket or default_stream_socket(args.socket)
    if args.command == "migrate":
        vm = vm_name(args.vm)
        host, port = parse_target(args.target)
        rounds = option_count(args.max_rounds, "--max-rounds", MIG_MAX_ROUNDS)
        limit = option_count(args.downtime_limit, "--downtime-limit", MIG_DOWNTIME_LIMIT_MAX,
                             " (ms)")
        converge = False if args.no_auto_converge else None
        hook = migration_hook(args)
        transport = transport_from_args(args, host)
        reporter = MigReporter(sys.stdout, as_json, "source")
    else:
        port = tcp_port(args.port, f"incoming {args.port}")
        name = vm_name(args.name) if args.name is not None else None
        if args.wait is not None and not 0 < args.wait <= MAX_TIMEOUT:
            raise UsageError(f"--wait {args.wait:g}: must be more than 0 and at most "
                             f"{MAX_TIMEOUT:g}")
        incoming_args(name, args.disk, args.copy_disks)       # checked before connecting
        transport = transport_from_args(args, args.listen)
        reporter = MigReporter(sys.stdout, as_json, "destination")
    try:
        if args.command == "migrate":
            start = time.monotonic()
            # first: is D there, and is it who we think (before S is asked anything)
            remote = connect_destination(host, port, transport, args.timeout, reporter)
            try:
                with Client(args.socket, args.timeout) as client:
                    reply = migrate_vm(client, stream_path, vm, host, port, rounds, reporter,
                                       hook, remote, start, downtime_limit_ms=limit,
                                       auto_converge=converge)
            finally:
                remote.close()
        else:
            with Client(args.socket, args.timeout) as client:
                client.request("hello")       # fail now, not after a source came
            reply = incoming_vm(lambda: Client(args.socket, args.timeout), stream_path,
                                args.listen, port, name, reporter, args.wait, transport,
                                args.disk, args.copy_disks)
    except RemoteError as e:
        if as_json:
            print_reply(e.reply, True, args.command)
        raise
    except TransportError as e:
        if as_json:       # the last line a script reads: why (stderr has it too)
            fields = {"reason": e.reason, "stage": e.stage} if isinstance(e, Refusal) else {}
            reporter.note("error", f"error: {e}", error=str(e), **fields)
        raise
    if as_json:
        print_reply(reply, True, args.command)
    else:
        print(SHOW[args.command](reply))
    return EXIT_OK


def main(argv=None):
    try:
        return run(argv)
    except FileError as e:
        print(f"carapace-ctl: {e}", file=sys.stderr)
        return EXIT_USAGE
    except UsageError as e:
        print(f"carapace-ctl: usage: {e}", file=sys.stderr)
        return EXIT_USAGE
    except RemoteError as e:
        print(f"carapace-ctl: {e.code}: {e.message}", file=sys.stderr)
        return EXIT_REMOTE
    except TransportError as e:
        print(f"carapace-ctl: {e}", file=sys.stderr)
        return EXIT_TRANSPORT
    except KeyboardInterrupt:
        print("carapace-ctl: interrupted", file=sys.stderr)
        return 130

