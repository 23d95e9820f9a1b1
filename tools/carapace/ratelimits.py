# SPDX-License-Identifier: MIT
"""The rate limits of a VM's disks and NICs (issue 24): the options that end
a disk=PATH or net=SWITCH[/MAC] value (split_options: ':ro', ':iops=N',
':pps=N', ':bw=SIZE'), each checked against the hypervisor's bounds
(parse_rate, parse_bandwidth), and the host DT properties they become
(rate_lines). A limit left out is the hypervisor's default; 0 is none
(docs/virtio.md, "Fair share")."""

import re

from .errors import LaunchError
from .units import GiB, KiB, MiB, human_size

RATE_MAX = 1 << 40             # VM_IO_RATE_MAX (hyp/include/vm_lifecycle.h)
BANDWIDTH_MIN = 4096           # VM_IO_BANDWIDTH_MIN: a page a second
# the hypervisor's defaults (VM_DISK_*_DEFAULT, VM_NIC_*_DEFAULT): what --dry-run says
DISK_DEFAULTS = (2000, 32 * MiB)     # requests, bytes a second
NIC_DEFAULTS = (5000, 8 * MiB)       # frames, bytes a second
OPTION_RE = re.compile(r"([a-z]+)=(.*)\Z")
SIZE_RE = re.compile(r"([0-9]+)([KMG]?)\Z")


def split_options(value, flags, keys, what):
    """Peel ':FLAG' and ':KEY=VALUE' options off the end of @value, right to
    left, while the last ':'-separated part is one of @flags or looks like
    KEY=VALUE (an unknown KEY is an error, as is an option given twice).
    Returns (the rest, the flags found, {KEY: VALUE})."""
    rest, found_flags, found = value, set(), {}
    while True:
        head, colon, tail = rest.rpartition(":")
        if not colon:
            break
        m = OPTION_RE.match(tail)
        if tail in flags:
            if tail in found_flags:
                raise LaunchError(f"{what}: ':{tail}' given twice")
            found_flags.add(tail)
        elif m:
            if m.group(1) not in keys:
                known = ", ".join([*flags, *(f"{k}=" for k in keys)])
                raise LaunchError(f"{what}: unknown option ':{tail}' (known: {known})")
            if m.group(1) in found:
                raise LaunchError(f"{what}: '{m.group(1)}=' given twice")
            found[m.group(1)] = m.group(2)
        else:
            break
        rest = head
    return rest, found_flags, found


def parse_rate(text, what, unit):
    """A count a second: 0 (no limit) or 1..2^40."""
    if not re.fullmatch(r"[0-9]{1,14}", text) or int(text) > RATE_MAX:
        raise LaunchError(f"{what}: '{text}' is not 0 (no limit) or 1..{RATE_MAX} {unit} "
                          "a second")
    return int(text)


def parse_bandwidth(text, what):
    """Bytes a second, with a K, M or G suffix (binary): 0 (no limit) or
    4K..2^40."""
    m = SIZE_RE.match(text.upper())
    value = int(m.group(1)) * {"": 1, "K": KiB, "M": MiB, "G": GiB}[m.group(2)] if m else -1
    if value != 0 and not BANDWIDTH_MIN <= value <= RATE_MAX:
        raise LaunchError(f"{what}: bw={text} is not 0 (no limit) or 4K..1024G bytes a second "
                          "(e.g. bw=8M)")
    return value


def limits_text(ops, bandwidth, defaults, unit):
    """A device's rate limits in words ('500 requests/s, 8M/s'; a default
    says so; 0: 'no limit')."""
    def one(value, default, show):
        if value is None:
            return f"{show(default)} (default)"
        return show(value) if value else "no limit"
    return (f"rate limits {one(ops, defaults[0], lambda v: f'{v} {unit}/s')}, "
            f"{one(bandwidth, defaults[1], lambda v: f'{human_size(v)}/s')}")


def rate_lines(props):
    """DTS property lines for the limits given ({name: value or None})."""
    return [f"\t\tcarapace,{name} = <{value >> 32:#x} {value & 0xFFFFFFFF:#x}>;"
            for name, value in props.items() if value is not None]
