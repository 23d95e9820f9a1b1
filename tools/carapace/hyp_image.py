# SPDX-License-Identifier: MIT
"""Which hypervisor image a host can run (docs/security.md, "The hypervisor's
own CFI"). The CFI build's sspush/sspopchk are Zimop may-be-operations: on a
CPU without Zimop they are illegal instructions, and its first C function
faults. So where the QEMU CPU has no Zimop the plain build boots instead,
and the launcher says so."""

from pathlib import Path

from .paths import SOURCE_ROOT

LPAD_0 = bytes.fromhex("17000000")     # lpad 0 (auipc x0, 0): the CFI build's first word
PLAIN_IMAGE = SOURCE_ROOT / "build" / "carapace.bin"


def is_cfi_build(image):
    """The CFI build starts with a landing pad at _start (hyp/boot/head.S),
    the plain build with `csrw sie, zero`."""
    with open(image, "rb") as f:
        return f.read(4) == LPAD_0


def cpu_has_zimop(cpu):
    """QEMU's -cpu STRING: "max" has Zimop, a named model only with zimop=true."""
    model, *props = cpu.split(",")
    return model == "max" and "zimop=false" not in props or "zimop=true" in props


def image_for_cpu(image, cpu):
    """(the image to boot, a notice or None): @image, or the plain build when
    @image is the CFI build and @cpu cannot run it."""
    image = Path(image)
    if cpu_has_zimop(cpu) or not image.is_file() or not is_cfi_build(image):
        return image, None
    if not PLAIN_IMAGE.is_file():
        raise FileNotFoundError(f"the CPU ({cpu}) has no Zimop, which the CFI build "
                                f"{image} needs, and the plain build {PLAIN_IMAGE} is not "
                                f"built (`make`)")
    return PLAIN_IMAGE, (f"the CPU ({cpu}) has no Zimop, which the CFI build's shadow-stack "
                         f"instructions need: booting the plain build {PLAIN_IMAGE}")
