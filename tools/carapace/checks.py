# SPDX-License-Identifier: MIT
"""Checks of the arguments a management request carries (VM and image names,
sizes, vCPU counts, CFI policies, bootargs), done before anything is sent:
each returns the checked value or raises UsageError."""

import re

from .errors import UsageError
from .limits import CFI_POLICIES, IMAGE_RE, IRQCHIPS, MAX_BOOTARGS, MAX_VCPUS, NAME_RE, VM_MEM_ALIGN, VM_MEM_MIN
from .units import GiB, KiB, MiB





def vm_name(text):
    if not NAME_RE.match(text):
        raise UsageError(f"bad VM name '{text}' (1-15 of a-z 0-9 _ -)")
    return text


def image_name(text, what):
    if not IMAGE_RE.match(text):
        raise UsageError(f"{what} '{text}': bad image name (1-31 of a-z 0-9 _ . -; "
                         "see `carapace-ctl images`)")
    return text


def parse_size(text, what):
    """'64M', '1G', '512K' or a byte count."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise UsageError(f"{what} {text}: cannot parse size (use e.g. 64M, 1G)")
    return int(m.group(1)) * {"": 1, "K": KiB, "M": MiB, "G": GiB}[m.group(2).upper()]


def vm_mem(text):
    mem = parse_size(text, "--mem")
    if mem < VM_MEM_MIN or mem % VM_MEM_ALIGN or mem >> 64:
        raise UsageError(f"--mem {text}: must be a multiple of 2M and at least 8M")
    return mem


def vcpu_count(text):
    if not re.fullmatch(r"[0-9]+", text) or not 1 <= int(text) <= MAX_VCPUS:
        raise UsageError(f"--vcpus {text}: must be 1..{MAX_VCPUS}")
    return int(text)


def cfi_policy(text):
    if text not in CFI_POLICIES:
        raise UsageError(f"--cfi {text}: must be one of {', '.join(CFI_POLICIES)}")
    return text


def irqchip(text):
    if text not in IRQCHIPS:
        raise UsageError(f"--irqchip {text}: must be one of {', '.join(IRQCHIPS)}")
    return text


def bootargs(text):
    if text is None:
        return None
    if "\0" in text:
        raise UsageError("--bootargs: must not contain NUL")
    if len(text.encode()) > MAX_BOOTARGS:
        raise UsageError(f"--bootargs: longer than {MAX_BOOTARGS} bytes")
    return text


