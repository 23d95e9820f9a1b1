# SPDX-License-Identifier: MIT
"""Sizes: the binary units and how the tools print a byte count."""

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


def human_size(n):
    """Exact when round (64M), else one decimal (34.2M), else bytes."""
    if not isinstance(n, int):
        return str(n)
    for unit, scale in (("G", GiB), ("M", MiB), ("K", KiB)):
        if n >= scale:
            return f"{n // scale}{unit}" if n % scale == 0 else f"{n / scale:.1f}{unit}"
    return f"{n}B"
