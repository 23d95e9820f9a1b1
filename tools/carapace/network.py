# SPDX-License-Identifier: MIT
"""The VMs' network (issue 24): the --switch options (parse_switches), the
net=SWITCH[/MAC][:pps=N][:bw=SIZE] values of --vm (parse_nic; the rate limits:
carapace.ratelimits), MACs derived from names
(derive_mac), the plan across VMs and switches (plan_network: unknown
switches, MAC collisions, ports per switch, each VM's address on a switch
with an uplink, put in its bootargs, and the port forwards), the forwards'
host ports checked free (check_host_ports), and the QEMU arguments of each
uplink (uplink_args).

Switches live in the hypervisor (hyp/vdev/vswitch.c); an uplink is a QEMU
virtio-net-pci device on QEMU user networking (slirp: 10.0.2.0/24, gateway
10.0.2.2), which the hypervisor plugs into its switch as the port that gets
every unicast frame for an address no VM of the switch has."""

import dataclasses
import hashlib
import re
import socket

from .errors import LaunchError
from .limits import MAX_BOOTARGS, NAME_RE
from .ratelimits import parse_bandwidth, parse_rate, split_options

MAX_SWITCHES = 8               # VSWITCH_MAX (hyp/include/vswitch.h)
MAX_PORTS = 16                 # VSWITCH_MAX_PORTS: the NICs and the uplink
MAX_NICS = 2                   # VM_MAX_NICS (hyp/include/vm_lifecycle.h)
UPLINK_KINDS = ("user",)
UPLINK_NET = "10.0.2.0/24"     # QEMU user networking's network ...
UPLINK_PREFIX = "10.0.2."
UPLINK_GATEWAY = "10.0.2.2"    # ... and its gateway (and DNS at 10.0.2.3)
FIRST_GUEST_HOST = 15          # the k-th VM of a switch gets 10.0.2.(15 + k)
FORWARD_ADDR = "127.0.0.1"     # forwards listen on the loopback only
DEFAULT_GUEST_PORT = 22
MAC_PREFIX = "52:54:00"        # QEMU's own OUI, locally administered use
SWITCH_KEYS = ("name", "uplink", "fwd")
MAC_RE = re.compile(r"[0-9a-f]{2}(?::[0-9a-f]{2}){5}\Z")


@dataclasses.dataclass
class Forward:
    vm: str
    host_port: int
    guest_port: int
    guest_ip: str | None = None    # the VM's address on the switch (plan_network)


@dataclasses.dataclass
class SwitchSpec:
    index: int
    name: str
    uplink: str | None = None      # "user" or None
    forwards: list = dataclasses.field(default_factory=list)
    pci_dev: int | None = None     # the uplink's device number on bus 0
    mac: str | None = None         # the uplink NIC's own MAC (plan_network)

    @property
    def netdev_id(self):
        return f"uplink-{self.name}"


@dataclasses.dataclass
class NicSpec:
    switch: str
    mac: str | None = None         # None until plan_network derives it
    given: bool = False            # the MAC came from the command line
    index: int = 0                 # 0: the guest's first NIC (eth0)
    pps: int | None = None         # frames sent a second; None: the default, 0: no limit
    bandwidth: int | None = None   # their bytes a second; the same


def port_number(text, what):
    if not re.fullmatch(r"[0-9]{1,5}", text) or not 1 <= int(text) <= 65535:
        raise LaunchError(f"{what}: '{text}' is not a port number (1..65535)")
    return int(text)


def parse_forward(value, what):
    """VM:HOSTPORT[:GUESTPORT] (GUESTPORT 22 if left out)."""
    parts = value.split(":")
    if len(parts) not in (2, 3) or not NAME_RE.match(parts[0]):
        raise LaunchError(f"{what}: want fwd=VM:HOSTPORT[:GUESTPORT]")
    guest = port_number(parts[2], what) if len(parts) == 3 else DEFAULT_GUEST_PORT
    return Forward(parts[0], port_number(parts[1], what), guest)


def parse_switch(spec, index):
    """One --switch name=NAME[,uplink=user][,fwd=VM:HOSTPORT[:GUESTPORT]]..."""
    fwds, values = [], {}
    for token in spec.split(","):
        key, eq, value = token.partition("=")
        if not eq or key not in SWITCH_KEYS:
            raise LaunchError(f"--switch '{spec}': expected name=, uplink= or fwd=, got "
                              f"'{token}'")
        if key == "fwd":
            fwds.append(parse_forward(value, f"--switch '{spec}': fwd={value}"))
            continue
        if key in values:
            raise LaunchError(f"--switch '{spec}': '{key}' given twice")
        values[key] = value
    name = values.get("name")
    if name is None or not NAME_RE.match(name):
        raise LaunchError(f"--switch '{spec}': want name=NAME, NAME of 1-15 of a-z 0-9 _ -")
    uplink = values.get("uplink")
    if uplink is not None and uplink not in UPLINK_KINDS:
        raise LaunchError(f"--switch '{spec}': uplink={uplink}: must be "
                          f"{' or '.join(UPLINK_KINDS)}")
    if fwds and uplink is None:
        raise LaunchError(f"--switch '{spec}': fwd= needs uplink=user (forwards come "
                          "from the host through the uplink)")
    return SwitchSpec(index, name, uplink, fwds)


def parse_switches(specs):
    switches = [parse_switch(spec, i) for i, spec in enumerate(specs)]
    if len(switches) > MAX_SWITCHES:
        raise LaunchError(f"{len(switches)} switches given; the hypervisor has at most "
                          f"{MAX_SWITCHES}")
    seen = set()
    for sw in switches:
        if sw.name in seen:
            raise LaunchError(f"two switches are named '{sw.name}' (names must be unique)")
        seen.add(sw.name)
    return switches


def parse_mac(text, what):
    """aa:bb:cc:dd:ee:ff, either case; unicast and not all zero."""
    mac = text.lower()
    if not MAC_RE.match(mac):
        raise LaunchError(f"{what}: '{text}' is not a MAC address (want 52:54:00:12:34:56)")
    if int(mac[:2], 16) & 1:
        raise LaunchError(f"{what}: {text} is a multicast address; a NIC needs a unicast one")
    if mac == "00:00:00:00:00:00":
        raise LaunchError(f"{what}: the all-zero MAC is not an address")
    return mac


def parse_nic(value, vm, index):
    """net=SWITCH[/MAC][:pps=N][:bw=SIZE] of --vm @vm, its @index-th NIC."""
    what = f"vm {vm}: net={value}"
    text, _, opts = split_options(value, (), ("pps", "bw"), what)
    name, slash, mac = text.partition("/")
    if not NAME_RE.match(name):
        raise LaunchError(f"{what}: want net=SWITCH[/MAC][:pps=N][:bw=SIZE]")
    pps = parse_rate(opts["pps"], what, "frames") if "pps" in opts else None
    bandwidth = parse_bandwidth(opts["bw"], what) if "bw" in opts else None
    if slash:
        return NicSpec(name, parse_mac(mac, what), True, index, pps, bandwidth)
    return NicSpec(name, None, False, index, pps, bandwidth)


def derive_mac(seed):
    """52:54:00 and three bytes of SHA-256(@seed): stable for a name."""
    h = hashlib.sha256(seed.encode()).digest()
    return MAC_PREFIX + "".join(f":{b:02x}" for b in h[:3])


def nic_seed(vm, index):
    return f"{vm}/nic{index}"


def plan_network(vms, switches):
    """Check the NICs against the switches and fill in what is derived: each
    NIC's MAC (from the VM's name and the NIC's index unless given), each
    uplink's MAC, each VM's address on a switch with an uplink (in its
    bootargs: carapace.ip=10.0.2.X/24 carapace.gw=10.0.2.2 carapace.hostname=NAME, and
    carapace.ipdev=ethN when that NIC is not the first) and the forwards'
    guest addresses."""
    by_name = {sw.name: sw for sw in switches}
    owners = {}                       # MAC -> who has it, for collisions

    def claim(mac, who, derived):
        if mac in owners:
            hint = " (a derived MAC: give one, net=SWITCH/MAC)" if derived else ""
            raise LaunchError(f"{who} and {owners[mac]} have the same MAC {mac}{hint}")
        owners[mac] = who

    for sw in switches:
        if sw.uplink:
            sw.mac = derive_mac(f"switch/{sw.name}")
            claim(sw.mac, f"switch {sw.name}'s uplink", True)
    for vm in vms:                    # given MACs first: a derived one yields to them
        for nic in vm.nics:
            if nic.switch not in by_name:
                known = ", ".join(by_name) or "none"
                raise LaunchError(f"vm {vm.name}: net={nic.switch}: no --switch named "
                                  f"'{nic.switch}' (switches: {known})")
            if nic.given:
                claim(nic.mac, f"vm {vm.name} NIC {nic.index}", False)
    for vm in vms:
        for nic in vm.nics:
            if not nic.given:
                nic.mac = derive_mac(nic_seed(vm.name, nic.index))
                claim(nic.mac, f"vm {vm.name} NIC {nic.index}", True)
    for sw in switches:
        ports = sum(nic.switch == sw.name for vm in vms for nic in vm.nics)
        ports += 1 if sw.uplink else 0
        if ports > MAX_PORTS:
            raise LaunchError(f"switch {sw.name}: {ports} ports (NICs and uplink); a switch "
                              f"has at most {MAX_PORTS}")
    plan_addresses(vms, by_name)
    plan_forwards(vms, switches)


def plan_addresses(vms, by_name):
    """10.0.2.(15 + k) for the k-th VM (in --vm order) with a NIC on a switch
    with an uplink; a VM reaches at most one such switch."""
    count = {}
    for vm in vms:
        uplinked = [nic for nic in vm.nics if by_name[nic.switch].uplink]
        switches = sorted({nic.switch for nic in uplinked})
        if len(switches) > 1:
            raise LaunchError(f"vm {vm.name}: NICs on {len(switches)} switches with an "
                              f"uplink ({', '.join(switches)}); at most one (its address "
                              "and gateway come from it)")
        if not uplinked:
            continue
        nic = uplinked[0]
        k = count.get(nic.switch, 0)
        count[nic.switch] = k + 1
        vm.ip = f"{UPLINK_PREFIX}{FIRST_GUEST_HOST + k}"
        vm.ip_switch = nic.switch
        extra = (f"carapace.ip={vm.ip}/24 carapace.gw={UPLINK_GATEWAY} "
                 f"carapace.hostname={vm.name}")
        if nic.index:
            extra += f" carapace.ipdev=eth{nic.index}"
        vm.bootargs = f"{vm.bootargs} {extra}" if vm.bootargs else extra
        if len(vm.bootargs.encode()) > MAX_BOOTARGS:
            raise LaunchError(f"vm {vm.name}: bootargs longer than {MAX_BOOTARGS} bytes "
                              f"with the launcher's '{extra}'")


def plan_forwards(vms, switches):
    by_vm = {vm.name: vm for vm in vms}
    ports = {}
    for sw in switches:
        for fwd in sw.forwards:
            vm = by_vm.get(fwd.vm)
            if vm is None:
                raise LaunchError(f"switch {sw.name}: fwd={fwd.vm}:{fwd.host_port}: no VM "
                                  f"named '{fwd.vm}'")
            if vm.ip_switch != sw.name:
                raise LaunchError(f"switch {sw.name}: fwd={fwd.vm}:{fwd.host_port}: vm "
                                  f"{fwd.vm} has no NIC on switch {sw.name}")
            if fwd.host_port in ports:
                raise LaunchError(f"host port {fwd.host_port} is forwarded twice (switch "
                                  f"{sw.name} to vm {fwd.vm}, and {ports[fwd.host_port]})")
            ports[fwd.host_port] = f"switch {sw.name} to vm {fwd.vm}"
            fwd.guest_ip = vm.ip


def check_host_ports(switches, addr=FORWARD_ADDR):
    """Every forward's host port must be free now (QEMU would only warn and run
    on without it): bound and released at once, as QEMU binds it (reuse
    allowed, so a port in TIME_WAIT passes and a listener fails)."""
    for sw in switches:
        for fwd in sw.forwards:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((addr, fwd.host_port))
            except OSError as e:
                raise LaunchError(f"switch {sw.name}: fwd={fwd.vm}:{fwd.host_port}: host "
                                  f"port {fwd.host_port} is not free on {addr}: "
                                  f"{e.strerror or e}") from None
            finally:
                s.close()


def uplink_args(sw):
    """-netdev user (with the forwards) and its virtio-net-pci at the switch's
    device number on pcie.0 (no option ROM: nothing in the machine runs one)."""
    netdev = f"user,id={sw.netdev_id},net={UPLINK_NET}"
    for fwd in sw.forwards:
        netdev += f",hostfwd=tcp:{FORWARD_ADDR}:{fwd.host_port}-{fwd.guest_ip}:{fwd.guest_port}"
    return ["-netdev", netdev,
            "-device", f"virtio-net-pci,netdev={sw.netdev_id},bus=pcie.0,"
                       f"addr={sw.pci_dev:#x},mac={sw.mac},romfile="]


def forward_lines(switches):
    """What a user types to reach each forward, one line each."""
    lines = []
    for sw in switches:
        for fwd in sw.forwards:
            if fwd.guest_port == 22:
                lines.append(f"vm {fwd.vm}: ssh -p {fwd.host_port} root@localhost")
            else:
                lines.append(f"vm {fwd.vm}: localhost:{fwd.host_port} -> "
                             f"{fwd.guest_ip}:{fwd.guest_port} (tcp)")
    return lines
