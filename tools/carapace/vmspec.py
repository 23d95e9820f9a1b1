# SPDX-License-Identifier: MIT
"""What carapace-run boots: the --vm specifications (parse_vm_spec: name,
kernel, initrd, mem, vcpus, cfi, debug, irqchip, disk, net, bootargs, checked against
the hypervisor's limits; disks: carapace.disks, NICs: carapace.network), the
--image extra images, and where every image goes in host memory
(place_images, check_host_memory)."""

import dataclasses
import re
from pathlib import Path

from .units import KiB, MiB
from .disks import MAX_DISKS, parse_disk
from .errors import LaunchError
from .network import MAX_NICS, parse_nic
from .limits import CFI_POLICIES, IMAGE_RE, IRQCHIPS, MAX_BOOTARGS, MAX_VCPUS, MAX_VMS, NAME_RE, VM_MEM_MIN
from .units import GiB

RAM_BASE = 0x80000000          # QEMU virt DRAM
IMAGE_ALIGN = 2 * MiB
TOP_GAP = 16 * MiB             # QEMU puts its FDT in the last 2 MiB of RAM: keep clear
IMAGE_FLOOR = RAM_BASE + 64 * MiB  # below: OpenSBI and the hypervisor image
HOST_HEADROOM = 256 * MiB      # default --mem: room for the hypervisor's own tables
HOST_MIN_DEFAULT = 512 * MiB
GUEST_KERNEL_OFFSET = 2 * MiB  # flat kernels load at guest RAM base + 2 MiB
GUEST_FDT_MAX = 64 * KiB       # the guest DT sits at the top of guest RAM
GUEST_PAGE = 4 * KiB
VM_KEYS = ("name", "kernel", "initrd", "mem", "vcpus", "cfi", "debug", "irqchip", "disk", "net",
           "bootargs")
VM_REPEATABLE = {"disk": MAX_DISKS, "net": MAX_NICS}   # key -> how many times at most
MAX_HOST_IMAGES = 24           # HOST_MAX_IMAGES: the VMs' kernels and initrds + --image


@dataclasses.dataclass
class KernelInfo:
    kind: str          # "flat binary", "Linux Image", "Linux Image (EFI stub)"
    load_offset: int   # where the hypervisor puts it in guest RAM
    claim: int         # bytes it occupies there, bss included


@dataclasses.dataclass
class VmSpec:
    index: int
    name: str
    kernel: Path
    initrd: Path | None = None
    mem: int = 64 * MiB
    vcpus: int = 1
    cfi: str = "trap"
    debug: bool = False     # offer the guest Carapace's debug SBI extension (tests)
    irqchip: str = "plic"   # "aia": an IMSIC per vCPU and an APLIC (needs --aia)
    bootargs: str | None = None
    kernel_info: KernelInfo | None = None
    disks: list = dataclasses.field(default_factory=list)   # disks.DiskSpec
    nics: list = dataclasses.field(default_factory=list)    # network.NicSpec
    ip: str | None = None          # its address on a switch with an uplink (plan_network)
    ip_switch: str | None = None   # that switch


def parse_size(text, what):
    """Parse '64M', '1G', '512K' or a byte count into bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise LaunchError(f"{what}: cannot parse size '{text}' (use e.g. 64M, 1G)")
    scale = {"": 1, "K": KiB, "M": MiB, "G": GiB}[m.group(2).upper()]
    return int(m.group(1)) * scale


def align_up(n, a):
    return -(-n // a) * a


def format_size(n):
    for unit, scale in (("G", GiB), ("M", MiB), ("K", KiB)):
        if n and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def split_vm_spec(spec):
    """Split 'k=v,k=v,bootargs=...' into pairs; bootargs takes the rest verbatim."""
    fields, rest = [], spec
    while True:
        if rest.startswith("bootargs="):
            fields.append(("bootargs", rest[len("bootargs="):]))
            break
        token, comma, rest = rest.partition(",")
        key, eq, value = token.partition("=")
        if not eq or not key:
            raise LaunchError(f"--vm '{spec}': expected KEY=VALUE, got '{token}'")
        fields.append((key, value))
        if not comma:
            break
    return fields


def existing_file(text, what):
    path = Path(text).expanduser().absolute()
    if not text or not path.is_file():
        raise LaunchError(f"{what}: no such file: {text or '(empty)'}")
    if path.stat().st_size == 0:
        raise LaunchError(f"{what}: file is empty: {text}")
    return path


def inspect_kernel(path):
    """Recognise the kernel format; reject formats the hypervisor cannot boot."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(64)
    if head.startswith(b"\x7fELF"):
        raise LaunchError(f"{path}: is an ELF file; convert it: objcopy -O binary")
    if head.startswith(b"\x1f\x8b"):
        raise LaunchError(f"{path}: is gzip-compressed; pass the uncompressed Image")
    if head[:2] == b"MZ" and head[4:8] == b"zimg":
        raise LaunchError(f"{path}: is an EFI zboot image; pass the uncompressed Image")
    is_image = len(head) == 64 and (head[0x30:0x38] == b"RISCV\0\0\0"
                                    or head[0x38:0x3C] == b"RSC\x05")
    if not is_image:
        return KernelInfo("flat binary", GUEST_KERNEL_OFFSET, size)
    text_offset = int.from_bytes(head[8:16], "little")
    image_size = int.from_bytes(head[16:24], "little")
    kind = "Linux Image (EFI stub)" if head[:2] == b"MZ" else "Linux Image"
    return KernelInfo(kind, text_offset or GUEST_KERNEL_OFFSET, max(image_size, size))


def check_guest_fit(vm):
    """Mirror the hypervisor's layout check (lifecycle/vm_lifecycle.c) so the error comes early."""
    k = vm.kernel_info
    need = k.load_offset + k.claim + GUEST_FDT_MAX
    if vm.initrd:
        need += align_up(vm.initrd.stat().st_size, GUEST_PAGE)
    if need > vm.mem:
        raise LaunchError(f"vm {vm.name}: mem={format_size(vm.mem)} is too small for its "
                          f"kernel ({k.kind}, {k.claim} bytes at +{k.load_offset:#x})"
                          f"{' and initrd' if vm.initrd else ''}; it needs at least "
                          f"{format_size(align_up(need, IMAGE_ALIGN))}")


def parse_vm_spec(spec, index):
    """Turn one --vm argument into a validated VmSpec (vm@index)."""
    values, repeated = {}, {key: [] for key in VM_REPEATABLE}
    for key, value in split_vm_spec(spec):
        if key not in VM_KEYS:
            raise LaunchError(f"--vm '{spec}': unknown key '{key}' "
                              f"(known: {', '.join(VM_KEYS)})")
        if key in repeated:
            repeated[key].append(value)
            if len(repeated[key]) > VM_REPEATABLE[key]:
                raise LaunchError(f"--vm '{spec}': more than {VM_REPEATABLE[key]} {key}= "
                                  "(the hypervisor's limit per VM)")
            continue
        if key in values:
            raise LaunchError(f"--vm '{spec}': '{key}' given twice")
        values[key] = value
    name = values.get("name", f"vm{index}")
    if not NAME_RE.match(name):
        raise LaunchError(f"--vm '{spec}': bad name '{name}' (1-15 of a-z 0-9 _ -)")
    what = f"vm {name}"
    if "kernel" not in values:
        raise LaunchError(f"{what}: kernel=PATH is required")
    vm = VmSpec(index, name, existing_file(values["kernel"], f"{what}: kernel"))
    if "initrd" in values:
        vm.initrd = existing_file(values["initrd"], f"{what}: initrd")
    if "mem" in values:
        vm.mem = parse_size(values["mem"], f"{what}: mem")
    if vm.mem < VM_MEM_MIN or vm.mem % IMAGE_ALIGN:
        raise LaunchError(f"{what}: mem={values.get('mem')} must be a multiple of 2M "
                          f"and at least {format_size(VM_MEM_MIN)}")
    if "vcpus" in values:
        if not re.fullmatch(r"[0-9]+", values["vcpus"]) or \
                not 1 <= int(values["vcpus"]) <= MAX_VCPUS:
            raise LaunchError(f"{what}: vcpus={values['vcpus']} must be 1..{MAX_VCPUS}")
        vm.vcpus = int(values["vcpus"])
    if "cfi" in values:
        if values["cfi"] not in CFI_POLICIES:
            raise LaunchError(f"{what}: cfi={values['cfi']} must be one of "
                              f"{', '.join(CFI_POLICIES)}")
        vm.cfi = values["cfi"]
    if "debug" in values:
        if values["debug"] not in ("0", "1"):
            raise LaunchError(f"{what}: debug={values['debug']} must be 0 or 1")
        vm.debug = values["debug"] == "1"
    if "irqchip" in values:
        if values["irqchip"] not in IRQCHIPS:
            raise LaunchError(f"{what}: irqchip={values['irqchip']} must be one of "
                              f"{', '.join(IRQCHIPS)}")
        vm.irqchip = values["irqchip"]
    if values.get("bootargs"):
        vm.bootargs = values["bootargs"]
        if len(vm.bootargs.encode()) > MAX_BOOTARGS:
            raise LaunchError(f"{what}: bootargs longer than {MAX_BOOTARGS} bytes")
    vm.disks = [parse_disk(value, name, i) for i, value in enumerate(repeated["disk"])]
    vm.nics = [parse_nic(value, name, i) for i, value in enumerate(repeated["net"])]
    vm.kernel_info = inspect_kernel(vm.kernel)
    check_guest_fit(vm)
    return vm


def parse_vms(specs, persist=False):
    """Parse every --vm; none is fine with --persist (VMs come later)."""
    vms = [parse_vm_spec(spec, i) for i, spec in enumerate(specs)]
    if not vms and not persist:
        raise LaunchError("no VMs: give at least one --vm "
                          "(or --persist for a host that waits for VMs)")
    if len(vms) > MAX_VMS:
        raise LaunchError(f"{len(vms)} VMs given; the hypervisor runs at most {MAX_VMS}")
    seen = set()
    for vm in vms:
        if vm.name in seen:
            raise LaunchError(f"two VMs are named '{vm.name}' (names must be unique)")
        seen.add(vm.name)
    return vms


# --- extra images ------------------------------------------------------------------


@dataclasses.dataclass
class ExtraImage:
    """An --image NAME=PATH: loaded into host RAM for VMs created at run time."""
    name: str
    path: Path


def reserved_image_names(vms):
    """The names the hypervisor gives the boot VMs' own images.  Both are reserved
    for every VM, with or without an initrd, so a name always means one thing."""
    return {f"{vm.name}.{kind}": vm.name for vm in vms for kind in ("kernel", "initrd")}


def parse_images(items, vms):
    """Turn the --image NAME=PATH arguments into ExtraImages, checked."""
    total = len(items) + sum(2 if vm.initrd else 1 for vm in vms)
    if total > MAX_HOST_IMAGES:
        raise LaunchError(f"{total} images in all (each VM's kernel and initrd count, and "
                          f"each --image); the hypervisor takes at most {MAX_HOST_IMAGES}")
    reserved = reserved_image_names(vms)
    images, seen = [], set()
    for item in items:
        name, eq, path = item.partition("=")
        if not eq:
            raise LaunchError(f"--image {item}: expected NAME=PATH")
        if not IMAGE_RE.match(name):
            raise LaunchError(f"--image {item}: bad image name '{name}' "
                              "(1-31 of a-z 0-9 _ . -)")
        if name in reserved:
            raise LaunchError(f"--image {item}: the name '{name}' is taken by vm "
                              f"{reserved[name]}'s own image (VM.kernel and VM.initrd "
                              "are reserved)")
        if name in seen:
            raise LaunchError(f"--image {item}: two images are named '{name}' "
                              "(names must be unique)")
        seen.add(name)
        images.append(ExtraImage(name, existing_file(path, f"--image {name}")))
    return images


# --- host memory layout ---------------------------------------------------------


@dataclasses.dataclass
class Image:
    vm: str | None     # the boot VM it belongs to; None for an --image
    kind: str          # "kernel", "ramdisk" or "image" (the node name)
    path: Path
    addr: int
    size: int
    name: str = ""     # the hypervisor's name for it: "VM.kernel", "VM.initrd", NAME


def host_files(vms, extra=()):
    """(vm name or None, node name, path, image name) of every file QEMU loads."""
    for vm in vms:
        yield vm.name, "kernel", vm.kernel, f"{vm.name}.kernel"
        if vm.initrd:
            yield vm.name, "ramdisk", vm.initrd, f"{vm.name}.initrd"
    for image in extra:
        yield None, "image", image.path, image.name


def suggested_host_mem(guest_ram, image_bytes, spare):
    return max(guest_ram + image_bytes + HOST_HEADROOM + spare, HOST_MIN_DEFAULT)


def default_host_mem(vms, extra=(), spare=0):
    """Default --mem: guest RAM + images + 256M + --spare-mem, at least 512M."""
    images = sum(align_up(path.stat().st_size, IMAGE_ALIGN)
                 for _, _, path, _ in host_files(vms, extra))
    return suggested_host_mem(sum(vm.mem for vm in vms), images, spare)


def place_images(vms, ram_size, extra=()):
    """Stack the images downward from RAM end - 16 MiB, each 2 MiB aligned: the
    boot VMs' kernels and initrds in --vm order, then the --image files."""
    images, top = [], RAM_BASE + ram_size - TOP_GAP
    for vm, kind, path, name in host_files(vms, extra):
        size = path.stat().st_size
        addr = (top - size) // IMAGE_ALIGN * IMAGE_ALIGN
        if addr < IMAGE_FLOOR:
            raise LaunchError(f"host RAM too small, use --mem: the images need "
                              f"{format_size(align_up(RAM_BASE + ram_size - addr, MiB))} "
                              f"below the top of {format_size(ram_size)} of RAM")
        images.append(Image(vm, kind, path, addr, size, name))
        top = addr
    return images


def check_host_memory(vms, images, ram_size, spare=0, restored=0):
    """Guest RAM (and --spare-mem, for VMs created later, and the RAM of the
    --restore VMs) comes out of host RAM too; fail here rather than in the
    hypervisor."""
    lowest = min((image.addr for image in images), default=RAM_BASE + ram_size)
    guest = sum(vm.mem for vm in vms)
    need = (IMAGE_FLOOR - RAM_BASE) + guest + spare + restored + (RAM_BASE + ram_size - lowest)
    if need > ram_size:
        image_bytes = sum(align_up(image.size, IMAGE_ALIGN) for image in images)
        spare_text = f", {format_size(spare)} of --spare-mem" if spare else ""
        spare_text += f", {format_size(restored)} for --restore VMs" if restored else ""
        try_mem = suggested_host_mem(guest, image_bytes, spare + restored)
        raise LaunchError(f"host RAM too small, use --mem: {format_size(ram_size)} cannot "
                          f"hold {format_size(guest)} of guest RAM{spare_text}, "
                          f"the images and 64M for firmware and hypervisor (try --mem "
                          f"{format_size(try_mem)})")


