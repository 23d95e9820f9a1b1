# SPDX-License-Identifier: MIT
"""carapace-run: boot the Carapace hypervisor with one or more VMs on QEMU virt.

The launcher describes the VMs to the hypervisor through the host device tree,
much like Xen's dom0less boot.  It asks QEMU for the tree of the machine it is
about to start (-machine virt,dumpdtb=...), adds one node per VM under /chosen
and boots with that tree (-dtb).  The kernel and initrd images, and the extra
images of --image, are put in host RAM by QEMU (-device loader), at the top of
RAM, and their places are recorded in the nodes.  Nothing else in the tree is
changed.

Device tree convention (all under /chosen; "vm@N" in the order given):

    chosen {
        #address-cells = <2>;                 /* added if absent */
        #size-cells = <2>;                    /* added if absent */
        carapace,timeslice-us = <N>;          /* only with --timeslice-us */
        carapace,wfi-traps;                   /* only with --wfi-traps: every guest
                                                 WFI exits (the wait in place) */
        carapace,partial-flush-ms = <0>;      /* only with --batch: whole lines */
        carapace,persist;                     /* only with --persist: stay up
                                                 when every VM is down */
        carapace,vmid-bits = <N>;             /* only with --vmid-bits: use at
                                                 most N bits of VMID */
        carapace,stream-stall-ms = <N>;       /* only with --stream-stall-ms */
        carapace,incoming;                    /* only with --incoming: at boot, wait
                                                 for one migrated VM on the stream
                                                 port (implies carapace,persist) */
        carapace,incoming-disks = <3 4>;      /* only with --incoming-disk: the host
                                                 disks (PCI device numbers) the
                                                 arriving VM's disk 0, 1 go to */
        carapace,incoming-copy-disks;         /* only with --incoming-disk PATH:size=
                                                 SIZE: copy mode, the disks' blocks
                                                 come in the stream */
        carapace,selftest-hostio;             /* only with --selftest-hostio: at boot,
                                                 write and read back every host disk
                                                 and ARP on every host NIC (tests) */
        switch@0 {                            /* one per --switch, in order */
            compatible = "carapace,switch";
            carapace,name = "lan";            /* [a-z0-9_-]{1,15}, unique */
            carapace,uplink-pci-dev = <1>;    /* only with uplink=user: its
                                                 virtio-net-pci at 00:01.0 */
        };
        vm@0 {
            compatible = "carapace,vm";
            #address-cells = <2>;             /* for the module nodes' reg */
            #size-cells = <2>;
            carapace,name = "a";              /* [a-z0-9_-]{1,15} */
            carapace,memory = <HI LO>;        /* guest RAM in bytes, 64-bit */
            carapace,vcpus = <2>;
            carapace,cfi = "trap";            /* trap | delegate | strict | off */
            bootargs = "console=hvc0";        /* only if given */
            kernel@ADDR {                     /* also image "a.kernel" */
                compatible = "carapace,kernel";
                reg = <ADDR_HI ADDR_LO SIZE_HI SIZE_LO>;  /* exact file size */
            };
            ramdisk@ADDR {                    /* only with initrd=; image "a.initrd" */
                compatible = "carapace,ramdisk";
                reg = <...>;
            };
            disk@0 {                          /* one per disk=, in order (vda, vdb) */
                compatible = "carapace,disk";
                carapace,pci-dev = <2>;       /* its virtio-blk-pci at 00:02.0 */
                carapace,read-only;           /* only with disk=PATH:ro */
                carapace,iops = <HI LO>;      /* only with :iops=N (0: no limit) */
                carapace,bandwidth = <HI LO>; /* only with :bw=SIZE, bytes/s */
            };
            nic@0 {                           /* one per net=, in order (eth0, eth1) */
                compatible = "carapace,nic";
                carapace,switch = "lan";      /* a switch@ node's name */
                local-mac-address = [52 54 00 12 34 56];
                carapace,pps = <HI LO>;       /* only with :pps=N (0: no limit) */
                carapace,bandwidth = <HI LO>; /* only with :bw=SIZE, bytes/s */
            };
        };
        image@ADDR {                          /* one per --image NAME=PATH */
            compatible = "carapace,image";
            carapace,name = "NAME";           /* [a-z0-9_.-]{1,31} */
            reg = <ADDR_HI ADDR_LO SIZE_HI SIZE_LO>;  /* /chosen's cells */
        };
    };

Disks and switches (issue 24; docs/user-guide.md, "Disks and networks"): each
disk= is a QEMU virtio-blk-pci device, each switch with an uplink a
virtio-net-pci device on QEMU user networking, on the PCIe bus 0 at device
numbers the launcher gives (uplinks first, in --switch order, then disks in
--vm order, from 1); the hypervisor drives them (carapace.iodevices).

Images are what VMs created at run time (carapace-ctl create) boot from.  The
hypervisor names each boot VM's kernel "VM.kernel" and its initrd "VM.initrd";
those names are reserved, an --image cannot take them.

The hypervisor's management channel is a virtio-serial device (virtio-mmio)
that no guest sees; its port "org.carapace.control" is connected to the UNIX
socket of --ctl-socket, where tools/carapace-ctl talks to it (protocol:
docs/management.md).  A second port, "org.carapace.stream", carries snapshot
streams (docs/snapshot-format.md) through the socket of --stream-socket.  The
QEMU arguments are in ctl_device_args() and stream_device_args().

--incoming [ADDR:]PORT (implies --persist) makes a fresh host that waits for
one VM migrated to it (docs/migration.md): /chosen gets carapace,incoming,
which arms one receive at boot, and the launcher runs the host's migration
relay (class IncomingRelay): a TLS 1.3 server on ADDR:PORT (default
127.0.0.1) that authenticates each source by its X.509 certificate
(tools/carapace-tls; --tls-dir or --tls-ca/--tls-cert/--tls-key) and only
then connects it to the hypervisor's stream port, which stays a UNIX socket
like any host's: a peer that fails the handshake never reaches the
hypervisor.  --incoming-plain [ADDR:]PORT is the same relay without TLS, for
tests on one machine: loopback addresses only.  The relay stops listening
once a VM has arrived.  --incoming-disk (carapace.incoming_disks) gives the
arriving VM's disks their host disks and chooses the disk mode: PATH, the
image the source uses (shared; QEMU's image lock off), or PATH:size=SIZE, a
new zeroed image the disk's blocks are copied into (copy; removed if no VM
arrived); /chosen gets carapace,incoming-disks (and
carapace,incoming-copy-disks).

--restore FILE (repeatable, implies --persist) checks each snapshot file
before QEMU starts, waits until the management channel answers "hello", then
restores the files one by one through the management client
(carapace.streams); a failed restore stops QEMU and exits with 3.  A file
holding its disks' content restores them into new images the launcher
creates before QEMU starts (carapace.restorer); --spare-disk creates one
that no VM has (carapace.spare_disks).

Batch mode reads the hypervisor's console.  It relies on these lines:

    [NAME] text                                 guest NAME printed "text"
    carapace: vm NAME: shut down                outcome "shutdown"
    carapace: vm NAME: shut down (system failure)   outcome "failed"
    carapace: vm NAME: stopped: REASON          outcome "stopped"
    carapace: vm NAME: not created: REASON      outcome "stopped"
    carapace: vm NAME: rebooting                outcome "running" again
    carapace: vm NAME: destroyed, ...           outcome "destroyed" (carapace-ctl
                                                destroy), if it was running
    carapace: all VMs down, powering off        QEMU is about to exit
    carapace: PANIC: ...                        reported if QEMU then exits

With --persist the hypervisor does not power off when every VM is down, so a
batch run ends at its timeout; that is then the normal end, and the outcomes
(every VM "shutdown" unless --expect says otherwise) decide the exit status.
When every --expect names an end other than "running", the run ends as soon
as all those VMs have reached it, every --restore is done and no VM runs.

From Python: carapace.launcher, carapace.vmspec, carapace.console
(docs/python-api.md).
"""

import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from .. import tls
from ..console import DEFAULT_TIMEOUT, EXIT_ERROR, EXIT_OK, OUTCOMES, print_summary, run_batch
from ..devicetree import DTC, build_dtb
from ..disk_images import NewImages
from ..errors import LaunchError
from ..incoming import INCOMING_HOST, IncomingRelay, IncomingSpec, RELAY_IDLE_MARGIN
from ..incoming_disks import incoming_disk_lines, parse_incoming_disks
from ..iodevices import device_args, plan_devices
from ..hyp_image import image_for_cpu
from ..launcher import (AIA_GUESTS_ENV, AIA_GUESTS_MAX, DEFAULT_CPU, DEFAULT_SMP,
                        HostConfig, QEMU, ctl_socket_path, prepare_ctl_socket, qemu_command,
                        remove_ctl_socket, stream_socket_path)
from ..network import check_host_ports, forward_lines, parse_switches
from ..ratelimits import DISK_DEFAULTS, NIC_DEFAULTS, limits_text
from ..limits import MAX_HARTS, NAME_RE
from ..paths import CTL_SOCKET_ENV, HYP_ENV, STREAM_SOCKET_ENV, cache_dir, default_hyp
from ..restorer import Restorer, parse_restores
from ..spare_disks import parse_spare_disks
from ..vmspec import (IMAGE_ALIGN, RAM_BASE, check_host_memory, default_host_mem, format_size,
    parse_images, parse_size, parse_vms, place_images)


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise LaunchError(f"{message} (see --help)")


EPILOG = """\
VM specification (one --vm per VM, in order; they become /chosen/vm@0, vm@1, ...):
  name=NAME        [a-z0-9_-]{1,15}, unique (default vmN)
  kernel=PATH      S-mode kernel: flat binary or RISC-V Linux Image (required)
  initrd=PATH      initial ramdisk
  mem=SIZE         guest RAM, K/M/G suffix, multiple of 2M, >= 8M (default 64M)
  vcpus=N          1..8 (default 1)
  cfi=POLICY       trap | delegate | strict | off (default trap)
  irqchip=KIND     plic | aia (default plic): aia gives the VM an IMSIC per vCPU
                   and an APLIC in MSI mode instead of the PLIC (needs --aia)
  disk=PATH[:ro][:iops=N][:bw=SIZE]
                   a disk (up to 2, the guest's vda and vdb): an image file,
                   qcow2 (by its header) or raw; :ro makes it read-only.  A
                   writable file belongs to one VM (a qcow2 overlay each).
                   Rate limit: iops= requests a second (default 2000), bw=
                   data bytes a second, K/M/G suffix (default 32M); 0: none
  net=SW[/MAC][:pps=N][:bw=SIZE]
                   a NIC (up to 2, eth0 and eth1) on the --switch named SW;
                   MAC default 52:54:00 + 3 bytes of SHA-256("VM/nicN").
                   Rate limit of what it sends: pps= frames a second (default
                   5000), bw= bytes a second (default 8M); 0: none
  bootargs=TEXT    must come last: everything after it, commas included

Switches (--switch, up to 8; VMs on one switch reach each other, never a VM
on another switch):
  --switch name=SW[,uplink=user][,fwd=VM:HOSTPORT[:GUESTPORT]]...
  uplink=user      the switch reaches the host and beyond through QEMU user
                   networking (10.0.2.0/24, gateway and DNS 10.0.2.2/.3): the
                   k-th VM on it (in --vm order) gets 10.0.2.(15+k), in its
                   bootargs as carapace.ip=10.0.2.X/24 carapace.gw=10.0.2.2
                   (carapace.ipdev=ethN if that NIC is not its first); a VM
                   may reach one such switch
  fwd=VM:HP[:GP]   forward 127.0.0.1:HP on the host to the VM's GP (default 22)
                   over TCP; the host port must be free (checked at start)
The forwards are printed at start, e.g. "vm alpha: ssh -p 2222 root@localhost".

Each VM becomes a /chosen node (compatible "carapace,vm") with carapace,name,
carapace,memory (64-bit), carapace,vcpus, carapace,cfi, bootargs and the
module nodes kernel@ADDR / ramdisk@ADDR (compatible "carapace,kernel" /
"carapace,ramdisk", reg = <addr size>, 2+2 cells), disk@N (compatible
"carapace,disk", carapace,pci-dev = <device number on bus 0>,
carapace,read-only if :ro, carapace,iops and carapace,bandwidth if given)
and nic@N (compatible "carapace,nic", carapace,switch = "SW",
local-mac-address = [6 bytes], carapace,pps and carapace,bandwidth if given).  Each --switch
becomes /chosen/switch@N (compatible "carapace,switch", carapace,name,
carapace,uplink-pci-dev = <device number> with an uplink).  Each --image NAME=PATH
becomes /chosen/image@ADDR (compatible "carapace,image", carapace,name = NAME,
reg = <addr size> in /chosen's cells, 2+2).  QEMU loads all images there,
2 MiB aligned, stacked downward from 16 MiB below the end of host RAM: the
VMs' kernels and initrds in order, then the --image files.  --persist adds
/chosen/carapace,persist; --incoming (--incoming-plain) adds
/chosen/carapace,incoming.

Images (for VMs created at run time with carapace-ctl create):
  --image NAME=PATH  NAME is [a-z0-9_.-]{1,31}, unique; each boot VM's kernel
                     and initrd are images too, named VM.kernel and VM.initrd
                     (so those names are reserved).  At most 24 images in all.
  --spare-mem SIZE   host RAM kept free for such VMs (added to the default --mem)
  --persist          the hypervisor stays up when every VM is down; --vm may
                     then be left out (a host waiting for VMs)

Management: QEMU connects the hypervisor's control port to the UNIX socket
--ctl-socket (default $CARAPACE_CTL_SOCKET, else
${XDG_RUNTIME_DIR:-/tmp}/carapace-$UID/ctl.sock, directory mode 0700), where
tools/carapace-ctl connects (docs/management.md), and its snapshot stream port
to --stream-socket (default $CARAPACE_STREAM_SOCKET, else stream.sock beside
a ctl.sock control socket, NAME.stream.sock beside any other NAME.sock).  The launcher refuses to start if another Carapace answers
on either, and removes both when it exits.

Snapshots: --restore FILE[,disk=PATH[:ro]]... (repeatable) checks each file
before starting, implies --persist, waits until the hypervisor answers hello,
then restores the VMs one by one (progress on stderr) and runs on,
interactively or in batch; --expect may name them.  A VM saved with disks
needs them.  A FILE holding its disks' content (the default of carapace-ctl
snapshot; carapace-snap inspect says "disks: content in the snapshot")
restores each disk into a new image the launcher creates, zeroed and sparse,
of the saved disk's size: disk=NEWPATH (it must not exist: never the original
image) or, by default, FILE.disk0.raw, FILE.disk1.raw beside FILE; a restore
that does not complete removes them.  A FILE without it (snapshot
--no-disks, or older) takes one disk=PATH per disk, in order, each a host
disk as a --vm's of the saved disk's size (its content is yours to match).
Its NICs need their --switch.  --spare-disk PATH:size=SIZE adds a new zeroed
image that no VM has, for a later `carapace-ctl restore FILE --disk N` into
this running host (its device number N is printed at start).  A failed
restore stops QEMU: exit status 3 with the hypervisor's message.  Files come from `carapace-ctl snapshot VM FILE`
(docs/snapshot-format.md; tools/carapace-snap inspects them).

Live migration: --incoming [ADDR:]PORT starts a fresh host that waits for
one VM (implies --persist; --vm optional): /chosen/carapace,incoming arms one
receive at boot, and the launcher's relay listens on ADDR:PORT (default
127.0.0.1; 0.0.0.0 or [::] for every interface) with TLS 1.3, authenticating
each source by its certificate (--tls-dir DIR: ca-cert.pem, server-cert.pem,
server-key.pem; or --tls-ca/--tls-cert/--tls-key; default $CARAPACE_TLS_DIR;
`tools/carapace-tls init DIR` makes a test set; --tls-peer NAME narrows the
sources to those named NAME).  Only an authenticated source is connected to
the hypervisor's stream port, which stays a UNIX socket; a refused peer is
reported (`carapace-run: incoming: refused ADDR:PORT: REASON: ...`, and as
JSON in --incoming-events FILE).  On the source run `carapace-ctl migrate VM
HOST:PORT --tls-dir DIR` (docs/migration.md).  --incoming-plain PORT does the
same without TLS, for tests on one machine: a loopback ADDR only, and any
local user can then reach the hypervisor with a stream.  Not with --restore.
Give it host RAM for the VM (--spare-mem or --mem): the source refuses a
destination with too little free memory.  Once a VM has arrived, the relay
stops listening; the VM moves on from there like any host's, through its
stream socket (ping-pong).
The VM's disks (up to 2, all of one mode; the k-th goes to its disk k):
  --incoming-disk PATH       shared: PATH is the image the source uses (shared
                             storage, or the same machine); QEMU opens it
                             without its image lock, since the source's QEMU
                             holds it; the disk's blocks do not move
  --incoming-disk PATH:size=SIZE
                             copy: the launcher creates PATH (it must not
                             exist), a zeroed sparse image of SIZE bytes, the
                             source disk's exact size; the disk's blocks come
                             in the stream; if no VM has arrived when
                             carapace-run ends, the images are removed
Their device numbers go to /chosen/carapace,incoming-disks (and copy mode
adds /chosen/carapace,incoming-copy-disks).  Without --incoming-disk a disk
goes to the host disk of the device number it had on the source.

Interactively, QEMU owns Ctrl-A (Ctrl-A X quits). Keyboard input goes to the
focused VM; Ctrl-] opens Carapace's monitor (a digit gives that VM the
keyboard; l lists VMs, s shows exit counters, c shows CFI state).

Batch mode exit status:
  0  every VM shut down cleanly (or ended as --expect said; outcomes are
     shutdown, failed, stopped, destroyed, running)
  1  a VM failed or was stopped (or did not end as expected)
  2  timeout: QEMU was killed
  3  launcher or QEMU error: bad arguments, QEMU did not start or ended
     before all VMs were down
--expect NAME=running makes the timeout the expected end of the run.  With
--persist the hypervisor never powers off by itself: the run ends at the
timeout, which is then not an error, and the --expect outcomes (every VM
"shutdown" unless said otherwise) still decide the status; when every
--expect names an end other than "running", the run ends as soon as those VMs
have all reached it (and every --restore is done, and no VM runs).  With
--persist, --expect may also name VMs that carapace-ctl will create.

Examples:
  tools/carapace-run --vm name=a,kernel=build/guests/demo.bin,vcpus=2 \\
                     --vm name=b,kernel=Image,initrd=rootfs.cpio,mem=256M,bootargs=console=hvc0
  tools/carapace-run --switch name=lan,uplink=user,fwd=alpha:2222,fwd=beta:2223 \\
                     --vm name=alpha,kernel=Image,mem=512M,disk=alpha.qcow2,net=lan \\
                     --vm name=beta,kernel=Image,mem=512M,disk=beta.qcow2,disk=data.img:ro,net=lan
  tools/carapace-run --batch --timeout 60 --expect bad=stopped --vm ... --vm name=bad,...
  tools/carapace-run --dry-run --keep /tmp/cr --vm kernel=guest.bin
  tools/carapace-run --persist --image web=Image --image web-rd=rootfs.cpio \\
                     --spare-mem 512M --ctl-socket /tmp/c1.sock
  tools/carapace-run --restore alpha.snap --batch --timeout 60 --expect alpha=shutdown
  tools/carapace-run --incoming 0.0.0.0:4444 --tls-dir /etc/carapace/tls \\
                     --ctl-socket /tmp/dst.sock --spare-mem 256M
  tools/carapace-run --incoming-plain 4444 --ctl-socket /tmp/dst.sock --spare-mem 256M
  tools/carapace-run --incoming 0.0.0.0:4444 --tls-dir /etc/carapace/tls \\
                     --spare-mem 256M --incoming-disk /var/lib/carapace/alpha-copy.raw:size=8G
"""


def build_parser():
    p = Parser(prog="carapace-run", epilog=EPILOG,
               formatter_class=argparse.RawDescriptionHelpFormatter,
               description="Boot the Carapace hypervisor and its VMs on QEMU virt.")
    p.add_argument("--vm", action="append", default=[], metavar="SPEC",
                   help="a VM: name=,kernel=,initrd=,mem=,vcpus=,cfi=,irqchip=,disk=,net=,bootargs= "
                        "(see below); "
                        "at least one unless --persist")
    p.add_argument("--switch", action="append", default=[], metavar="SPEC",
                   help="a virtual switch: name=SW[,uplink=user][,fwd=VM:HOSTPORT[:GUESTPORT]]"
                        "... (see below); VMs join it with net=SW")
    p.add_argument("--image", action="append", default=[], metavar="NAME=PATH",
                   help="an extra image in host RAM for VMs created at run time, repeatable")
    p.add_argument("--spare-mem", metavar="SIZE", default="0",
                   help="host RAM left for VMs created at run time, added to the "
                        "default --mem (default 0)")
    p.add_argument("--persist", action="store_true",
                   help="the hypervisor stays up when every VM is down (/chosen/carapace,"
                        "persist); --vm becomes optional")
    p.add_argument("--ctl-socket", metavar="PATH",
                   help="UNIX socket of the management channel, for carapace-ctl "
                        "(default: $CARAPACE_CTL_SOCKET or "
                        "${XDG_RUNTIME_DIR:-/tmp}/carapace-$UID/ctl.sock)")
    p.add_argument("--stream-socket", metavar="PATH",
                   help="UNIX socket of the snapshot stream port (default: "
                        "$CARAPACE_STREAM_SOCKET, else stream.sock beside a ctl.sock, NAME.stream.sock "
                        "beside NAME.sock)")
    p.add_argument("--restore", action="append", default=[], metavar="FILE[,disk=PATH]",
                   help="restore the VM saved in FILE once the hypervisor is up, its disks "
                        "on the images PATH (repeatable; implies --persist); a FILE holding "
                        "its disks' content writes it into new images PATH (default "
                        "FILE.diskN.raw), which must not exist")
    p.add_argument("--spare-disk", action="append", default=[], metavar="PATH:size=SIZE",
                   help="a new zeroed image PATH of SIZE bytes (it must not exist), a host "
                        "disk no VM has: for carapace-ctl restore FILE --disk N (repeatable)")
    p.add_argument("--incoming", metavar="[ADDR:]PORT",
                   help="a host waiting for one migrated VM: /chosen/carapace,incoming, and "
                        "a TLS relay on ADDR:PORT (default ADDR 127.0.0.1) that authenticates "
                        "the source before it reaches the hypervisor; needs TLS credentials "
                        "(--tls-dir); implies --persist; not with --restore")
    p.add_argument("--incoming-plain", metavar="[ADDR:]PORT",
                   help="as --incoming, but plain TCP, neither authenticated nor encrypted: "
                        "for tests on one machine, loopback ADDR only")
    p.add_argument("--tls-dir", type=Path, metavar="DIR",
                   help="--incoming: ca-cert.pem, server-cert.pem, server-key.pem (default "
                        "$CARAPACE_TLS_DIR; tools/carapace-tls init DIR makes a test set)")
    p.add_argument("--tls-ca", type=Path, metavar="FILE", help="--incoming: the CA certificate")
    p.add_argument("--tls-cert", type=Path, metavar="FILE",
                   help="--incoming: this host's (server) certificate")
    p.add_argument("--tls-key", type=Path, metavar="FILE", help="--incoming: its private key")
    p.add_argument("--tls-peer", action="append", metavar="NAME",
                   help="--incoming: accept only a source whose certificate carries NAME "
                        "(repeatable; default: any the CA signed)")
    p.add_argument("--incoming-events", type=Path, metavar="FILE",
                   help="--incoming: append the relay's events to FILE, one JSON object a line")
    p.add_argument("--incoming-disk", action="append", default=[],
                   metavar="PATH|PATH:size=SIZE",
                   help="--incoming: the host disk of the arriving VM's next disk (up to 2, "
                        "one mode): PATH, the image the source uses (shared), or "
                        "PATH:size=SIZE, a new zeroed image its blocks are copied into (copy; "
                        "removed if no VM arrives)")
    p.add_argument("--hyp", type=Path, metavar="PATH", default=default_hyp(),
                   help=f"hypervisor image (default: ${HYP_ENV}, else %(default)s)")
    p.add_argument("--bios", type=Path, metavar="PATH", default=cache_dir() / "fw_dynamic.bin",
                   help="OpenSBI fw_dynamic (default: %(default)s)")
    p.add_argument("--smp", type=int, default=DEFAULT_SMP, metavar="N",
                   help=f"host harts, 1..{MAX_HARTS} (default {DEFAULT_SMP})")
    p.add_argument("--mem", metavar="SIZE",
                   help="host RAM (default: guest RAM + images + 256M + --spare-mem, "
                        "at least 512M)")
    p.add_argument("--cpu", default=DEFAULT_CPU, metavar="STRING",
                   help="QEMU -cpu (default: %(default)s)")
    p.add_argument("--aia", action="store_true",
                   help="the AIA machine: QEMU virt aia=aplic-imsic (an APLIC and IMSICs "
                        "instead of the PLIC); host interrupts through hart 0's S-level "
                        "IMSIC file. Guests keep their emulated PLIC (default: the PLIC "
                        f"machine, or the AIA one if ${AIA_GUESTS_ENV} is set)")
    p.add_argument("--no-aclint", dest="aclint", action="store_false",
                   help="the PLIC machine without QEMU's aclint=on: no ACLINT SSWI, so "
                        "host IPIs go through the firmware (SBI); default: aclint=on, "
                        "host IPIs by one store to the SSWI")
    p.add_argument("--plic", action="store_true",
                   help=f"the PLIC machine, whatever ${AIA_GUESTS_ENV} says")
    p.add_argument("--aia-guests", type=int, metavar="N",
                   help=f"with --aia: N guest interrupt files per hart, 0..{AIA_GUESTS_MAX} "
                        f"(QEMU aia-guests; default ${AIA_GUESTS_ENV}, else 0)")
    p.add_argument("--timeslice-us", type=int, metavar="N",
                   help="scheduler timeslice: /chosen/carapace,timeslice-us")
    p.add_argument("--wfi-traps", action="store_true",
                   help="every guest WFI exits, even of a vCPU with a hart to itself "
                        "(/chosen/carapace,wfi-traps: tests of the wait in place)")
    p.add_argument("--vmid-bits", type=int, metavar="N",
                   help="use at most N VMID bits, 0..14 (tests: more VMs than VMIDs)")
    p.add_argument("--stream-stall-ms", type=int, metavar="MS",
                   help="abandon a snapshot or restore whose client moves no byte for MS "
                        "ms (default 30000): a stuck client keeps no VM paused")
    p.add_argument("--selftest-hostio", action="store_true",
                   help="tests: at boot, write a pattern to sectors 8-15 of every host "
                        "virtio-blk disk (--qemu-arg) and read it back, ARP for 10.0.2.2 "
                        "on every host virtio-net NIC")
    p.add_argument("--icount", action="store_true",
                   help="deterministic timing: -icount shift=0,align=off")
    p.add_argument("--selftest-pci-irq", action="store_true",
                   help="test hook: at boot the hypervisor reads sector 0 of the first "
                        "host disk again and again for 500 ms, each read completed by its "
                        "INTx, and reports where they were taken")
    p.add_argument("--selftest-wx", choices=("store", "exec"), default=None,
                   help=argparse.SUPPRESS)  # test hook: W^X of the hypervisor's own map
    p.add_argument("--selftest-cfi", choices=("ret", "call"),
                   help="test hook of the debug CFI build (make cfi): at boot the "
                        "hypervisor corrupts a return address on its stack (ret) or calls "
                        "past a landing pad (call); its CFI must stop the host")
    p.add_argument("--qemu-arg", action="append", default=[], metavar="ARG",
                   help="extra QEMU argument, repeatable (write --qemu-arg=-d for dashes)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the QEMU command and the device tree; do not run")
    p.add_argument("--keep", type=Path, metavar="DIR",
                   help="keep the generated device tree files in DIR")
    p.add_argument("--batch", action="store_true",
                   help="no terminal: follow the console, summarise, exit with a status")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help=f"batch: kill QEMU after this long (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--expect", action="append", default=[], metavar="NAME=OUTCOME",
                   help=f"batch: VM NAME must end {'|'.join(OUTCOMES)}")
    p.add_argument("--log", type=Path, metavar="FILE", help="batch: raw console to FILE")
    return p


def parse_expects(items, names, persist=False):
    """--expect NAME=OUTCOME.  With @persist NAME may be a VM that carapace-ctl
    creates later (it must still be a valid VM name)."""
    expect = {}
    for item in items:
        name, eq, outcome = item.partition("=")
        if not eq or outcome not in OUTCOMES:
            raise LaunchError(f"--expect {item}: want NAME=OUTCOME, OUTCOME one of "
                              f"{', '.join(OUTCOMES)}")
        if name not in names and not (persist and NAME_RE.match(name)):
            raise LaunchError(f"--expect {item}: no VM named '{name}'")
        expect[name] = outcome
    return expect


def parse_spare_mem(text):
    spare = parse_size(text, "--spare-mem")
    if spare % IMAGE_ALIGN:
        raise LaunchError(f"--spare-mem {text}: must be a multiple of 2M")
    return spare


def listen_address(text, option):
    """[ADDR:]PORT (IPv6 as [ADDR]:PORT) -> (addr, port); ADDR defaults to
    127.0.0.1."""
    addr, sep, port = text.rpartition(":")
    if not sep:
        addr, port = INCOMING_HOST, text
    elif addr.startswith("[") and addr.endswith("]"):
        addr = addr[1:-1]
    if not addr or not re.fullmatch(r"[0-9]{1,5}", port) or not 1 <= int(port) <= 65535:
        raise LaunchError(f"{option} {text}: want [ADDR:]PORT, PORT 1..65535")
    return addr, int(port)


TLS_OPTIONS = ("tls_dir", "tls_ca", "tls_cert", "tls_key", "tls_peer")


def incoming_spec(args):
    """--incoming / --incoming-plain checked, with its transport (carapace-tls);
    None without either.  The default needs credentials; plain TCP only when
    asked for, and only on the loopback."""
    given = [f"--{name.replace('_', '-')}" for name in TLS_OPTIONS if getattr(args, name)]
    if args.incoming is None and args.incoming_plain is None:
        extra = given + (["--incoming-events"] if args.incoming_events else []) \
            + (["--incoming-disk"] if args.incoming_disk else [])
        if extra:
            raise LaunchError(f"{extra[0]} needs --incoming")
        return None
    if args.incoming is not None and args.incoming_plain is not None:
        raise LaunchError("--incoming and --incoming-plain: give one")
    if args.restore:
        raise LaunchError("--incoming and --restore: a host waiting for a migrated VM "
                          "restores nothing at start (restore later with carapace-ctl)")
    try:
        if args.incoming_plain is not None:
            addr, port = listen_address(args.incoming_plain, "--incoming-plain")
            if given:
                raise LaunchError(f"--incoming-plain and {given[0]}: plain TCP has no "
                                  "certificates (use --incoming for TLS)")
            transport = tls.plain_transport(addr, f"--incoming-plain {args.incoming_plain}")
        else:
            addr, port = listen_address(args.incoming, "--incoming")
            transport = tls.destination_transport(
                args.tls_dir, args.tls_ca, args.tls_cert, args.tls_key, args.tls_peer or (),
                plain_hint="; or, for tests on one machine, --incoming-plain PORT (loopback "
                           "only, neither authenticated nor encrypted)")
    except tls.ConfigError as e:
        raise LaunchError(str(e) if args.incoming_plain is not None
                          else f"--incoming: {e}") from None
    return IncomingSpec(addr, port, transport, args.incoming_events,
                        parse_incoming_disks(args.incoming_disk))


def bind_incoming(spec):
    """The relay's listening socket, bound now: a port in use fails before QEMU
    starts, not later."""
    try:
        return tls.listen(spec.addr, spec.port)
    except OSError as e:
        raise LaunchError(f"--incoming: cannot listen on {spec.where}: "
                          f"{e.strerror or e}") from None


def host_config(args, vms, extra=(), spare=0, persist=None, incoming=None):
    if not 1 <= args.smp <= MAX_HARTS:
        raise LaunchError(f"--smp {args.smp}: must be 1..{MAX_HARTS}")
    mem = parse_size(args.mem, "--mem") if args.mem else default_host_mem(vms, extra, spare)
    if mem % IMAGE_ALIGN or mem == 0:
        raise LaunchError(f"--mem {args.mem}: must be a non-zero multiple of 2M")
    if args.vmid_bits is not None and not 0 <= args.vmid_bits <= 14:
        raise LaunchError(f"--vmid-bits {args.vmid_bits}: must be 0..14")
    if args.stream_stall_ms is not None and not 100 <= args.stream_stall_ms <= 3_600_000:
        raise LaunchError(f"--stream-stall-ms {args.stream_stall_ms}: must be 100..3600000")
    if args.timeslice_us is not None and not 0 < args.timeslice_us < 1 << 32:
        raise LaunchError(f"--timeslice-us {args.timeslice_us}: must be 1..{(1 << 32) - 1}")
    if not args.bios.is_file():
        raise LaunchError(f"OpenSBI firmware not found: {args.bios}; run `make deps`")
    if not args.hyp.is_file():
        msg = f"hypervisor image not found: {args.hyp}; build it with `make`"
        if not args.dry_run:
            raise LaunchError(msg)
        print(f"carapace-run: warning: {msg}", file=sys.stderr)
    for tool in (QEMU, DTC):
        if not shutil.which(tool):
            raise LaunchError(f"{tool} not found; run `make deps`")
    try:
        hyp, notice = image_for_cpu(args.hyp, args.cpu)
    except FileNotFoundError as e:
        raise LaunchError(str(e)) from None
    if notice:
        print(f"carapace-run: {notice}", file=sys.stderr)
    ctl_socket = ctl_socket_path(args.ctl_socket)
    guest_files = aia_guests(args)
    if guest_files and not args.icount:
        print(f"carapace-run: warning: {GUEST_FILES_MTTCG}", file=sys.stderr)
    return HostConfig(aia_guests=guest_files, aclint=args.aclint, hyp=hyp.absolute(), bios=args.bios.absolute(), mem=mem,
                      smp=args.smp, cpu=args.cpu, timeslice_us=args.timeslice_us,
                      wfi_traps=args.wfi_traps,
                      icount=args.icount, batch=args.batch, extra=list(args.qemu_arg),
                      persist=args.persist if persist is None else persist,
                      ctl_socket=ctl_socket, vmid_bits=args.vmid_bits,
                      stream_stall_ms=args.stream_stall_ms,
                      selftest_hostio=args.selftest_hostio,
                      stream_socket=stream_socket_path(args.stream_socket, ctl_socket),
                      incoming=incoming, selftest_pci_irq=args.selftest_pci_irq,
                      selftest_wx=args.selftest_wx, selftest_cfi=args.selftest_cfi)


# QEMU 10.0.2's multi-threaded TCG updates a hart's hgeip (its guest files'
# lines) without a lock, from every hart that stores into one of its files:
# a guest file's line can stick high or low (docs/design-aia.md, "Stage 4 as
# built"). One thread (-icount) has no race.
GUEST_FILES_MTTCG = ("guest interrupt files under QEMU's multi-threaded TCG: QEMU 10.0.2 can "
                     "lose or invent an AIA guest's external interrupts (its hgeip updates "
                     "race between harts); add --icount for reliable runs")


def check_irqchips(vms, host):
    """irqchip=aia needs the AIA machine: the guest's IMSIC CSRs are the host CPU's
    Ssaia (the hypervisor refuses such a VM on a host without it, too)."""
    for vm in vms:
        if vm.irqchip == "aia" and host.aia_guests is None:
            raise LaunchError(f"vm {vm.name}: irqchip=aia needs the AIA machine (--aia): "
                              "the PLIC machine's CPU has no Ssaia")


def aia_guests(args, env=None):
    """--aia, --plic and --aia-guests as HostConfig.aia_guests: None for the
    PLIC machine. Without --aia or --plic, $CARAPACE_AIA_GUESTS (N: the AIA
    machine with N guest files) decides, so a whole test tier can run on the
    AIA machine."""
    env = os.environ if env is None else env
    value = env.get(AIA_GUESTS_ENV, "")
    if args.aia and args.plic:
        raise LaunchError("--aia and --plic: choose one machine")
    if value and not args.plic:
        if not value.isdigit() or int(value) > AIA_GUESTS_MAX:
            raise LaunchError(f"{AIA_GUESTS_ENV}={value}: must be 0..{AIA_GUESTS_MAX}")
    aia = args.aia or (bool(value) and not args.plic)
    if args.aia_guests is not None and not aia:
        raise LaunchError("--aia-guests needs --aia")
    if args.aia_guests is not None and not 0 <= args.aia_guests <= AIA_GUESTS_MAX:
        raise LaunchError(f"--aia-guests {args.aia_guests}: must be 0..{AIA_GUESTS_MAX}")
    if not aia:
        return None
    if args.aia_guests is not None:
        return args.aia_guests
    return int(value) if value else 0


def check_batch_options(args):
    if not args.batch:
        for flag, value in (("--timeout", args.timeout), ("--expect", args.expect),
                            ("--log", args.log)):
            if value:
                raise LaunchError(f"{flag} needs --batch")
    if args.timeout is not None and args.timeout <= 0:
        raise LaunchError(f"--timeout {args.timeout:g}: must be positive")


def print_dry_run(cmd, dts, vms, images, host, kept, spare=0, restores=(), switches=(),
                  spares=()):
    print("# QEMU command line")
    print(shlex.join(cmd))
    spare_text = f", {format_size(spare)} kept spare" if spare else ""
    print(f"\n# host RAM {format_size(host.mem)} at {RAM_BASE:#x}{spare_text}; images:")
    kinds = {vm.name: vm.kernel_info.kind for vm in vms}
    for image in images:
        if image.vm is None:
            print(f"#   image {image.name}: {image.path} ({image.size} bytes) "
                  f"at {image.addr:#x}")
            continue
        kind = kinds[image.vm] if image.kind == "kernel" else "initrd"
        print(f"#   vm {image.vm}: {image.kind} {image.path} ({kind}, {image.size} bytes) "
              f"at {image.addr:#x}, image {image.name}")
    if not images:
        print("#   (none)")
    print_devices(vms, switches)
    print(f"# control socket: {host.ctl_socket} (carapace-ctl --socket PATH; not created "
          "by --dry-run)")
    print(f"# stream socket: {host.stream_socket} (snapshot streams; not created by "
          "--dry-run)")
    if host.incoming is not None:
        print(f"# incoming: {incoming_text(host.incoming)}")
        for line in incoming_disk_lines(host.incoming.disks, ", created when QEMU starts"):
            print(f"# {line}")
    if host.persist:
        print("# --persist: the hypervisor stays up when every VM is down")
    for r in restores:
        print(f"# restore: {r.path}: vm {r.name}, {r.vcpus} vCPU(s), {format_size(r.mem)} "
              f"RAM, {r.pages} memory pages, {r.size} bytes (once the hypervisor answers "
              "hello)")
        for d in r.disks:
            what = (f"new image {d.path} ({d.new_size} bytes, zeroed, created when QEMU "
                    "starts; the snapshot's disk content is written into it)"
                    if d.new_size is not None else f"{d.path} ({d.fmt})")
            print(f"#   disk {d.index}: {what} at 00:{d.pci_dev:02x}.0")
    for line in spare_lines(spares):
        print(f"# {line} (created when QEMU starts)")
    if not kept:
        print("# (the files above are temporary; use --keep DIR to keep them)")
    print("\n# host device tree")
    print(dts, end="")


def spare_lines(spares):
    """Where each --spare-disk is, and what it is for."""
    return [f"spare disk {d.path} ({d.new_size} bytes, zeroed) at host PCI device "
            f"{d.pci_dev} (00:{d.pci_dev:02x}.0): carapace-ctl restore FILE --disk {d.pci_dev}"
            for d in spares]


def remove_unrestored(new, restores):
    """The new images of every --restore that did not complete go (a failed
    restore leaves its image half written)."""
    for r in restores:
        if r.restored:
            continue
        for path in new.remove([d for d in r.disks if d.new_size is not None]):
            print(f"carapace-run: restore {r.path} did not complete: removed the new image "
                  f"{path}", file=sys.stderr)


def remove_unarrived(new, incoming):
    """The new images of the --incoming-disk copy mode go if no VM arrived
    (every attempt failed, or the run was interrupted): a failed copy leaves
    a partial disk. Once a VM has arrived they are its disks and stay."""
    if incoming is None or incoming.disks is None or incoming.arrived:
        return
    for path in new.remove(incoming.disks.new):
        print(f"carapace-run: no VM arrived: removed the new image {path} (--incoming-disk)",
              file=sys.stderr)


def print_devices(vms, switches):
    """--dry-run: where each disk, NIC and uplink went."""
    for sw in switches:
        where = f"uplink (QEMU user networking) at 00:{sw.pci_dev:02x}.0, MAC {sw.mac}" \
            if sw.uplink else "no uplink"
        print(f"# switch {sw.name}: {where}")
    for vm in vms:
        for disk in vm.disks:
            print(f"#   vm {vm.name}: disk {disk.index} {disk.path} ({disk.fmt}"
                  f"{', read-only' if disk.read_only else ''}) at 00:{disk.pci_dev:02x}.0, "
                  f"{limits_text(disk.iops, disk.bandwidth, DISK_DEFAULTS, 'requests')}")
        for nic in vm.nics:
            ip = f", {vm.ip}" if vm.ip and vm.ip_switch == nic.switch else ""
            print(f"#   vm {vm.name}: NIC {nic.index} on switch {nic.switch}, MAC {nic.mac}{ip}, "
                  f"{limits_text(nic.pps, nic.bandwidth, NIC_DEFAULTS, 'frames')}")
    for line in forward_lines(switches):
        print(f"# {line} (the host port is checked when QEMU starts, not by --dry-run)")


def incoming_text(spec):
    """What the --incoming relay does, in words."""
    t = spec.transport
    if t.mode == "tls":
        peers = f", only sources named {', '.join(t.peers)}" if t.peers else ""
        return (f"TLS relay on {spec.where}, waiting for one migrated VM (sources "
                f"authenticated against {t.creds.ca}{peers}; this host is {t.creds.cert}; "
                f"carapace-ctl migrate VM {spec.where} --tls-dir ...)")
    return (f"plain TCP relay on {spec.where} (not authenticated, not encrypted: any local "
            f"user can send a stream), waiting for one migrated VM (carapace-ctl migrate VM "
            f"{spec.where} --plain)")


def stream_text(host):
    """Where the stream port is, for the start-up line."""
    text = f"stream socket {host.stream_socket}"
    if host.incoming is not None:
        text += f", {incoming_text(host.incoming)}"
    return text


def run_interactive(cmd, vms, ctl_socket, persist=False, stream=None, on_start=None):
    """@stream: where the stream port is, in words (stream_text()); @on_start(proc)
    runs once QEMU has started (--restore, --incoming)."""
    names = ", ".join(f"{i}={vm.name}" for i, vm in enumerate(vms)) or "none yet"
    print(f"carapace-run: starting QEMU; quit with Ctrl-A X; "
          f"Ctrl-] then N gives the keyboard to VM N ({names}), "
          f"Ctrl-] l/s/c lists VMs, counters, CFI state", file=sys.stderr)
    print(f"carapace-run: control socket {ctl_socket} "
          f"(carapace-ctl --socket {shlex.quote(str(ctl_socket))} list)"
          + (f", {stream}" if stream else "")
          + ("; --persist: stays up when every VM is down" if persist else ""),
          file=sys.stderr)
    # umask 077: QEMU's sockets (control, stream) are its user's only
    proc = subprocess.Popen(cmd, umask=0o077)
    if on_start:
        on_start(proc)
    try:
        while True:
            try:
                status = proc.wait()
                return status if status >= 0 else 128 - status
            except KeyboardInterrupt:
                continue    # QEMU got the same SIGINT and exits on its own
    finally:
        if proc.poll() is None:    # we were terminated: do not leave QEMU behind
            proc.terminate()
            proc.wait()


def launch(argv):
    args = build_parser().parse_args(argv)
    check_batch_options(args)
    incoming = incoming_spec(args)
    # --restore and --incoming imply --persist
    persist = args.persist or bool(args.restore) or incoming is not None
    vms = parse_vms(args.vm, persist)
    switches = parse_switches(args.switch)
    restores = parse_restores(args.restore, vms)
    spares = parse_spare_disks(args.spare_disk)
    arriving = incoming.disks.disks if incoming is not None and incoming.disks else []
    plan_devices(vms, switches, restores, spares, arriving)
    expect = parse_expects(args.expect, {vm.name for vm in vms}
                           | {r.name for r in restores}, persist)
    extra = parse_images(args.image, vms)
    spare = parse_spare_mem(args.spare_mem)
    restored = sum(r.mem for r in restores)
    host = host_config(args, vms, extra, spare + restored, persist, incoming)
    check_irqchips(vms, host)
    images = place_images(vms, host.mem, extra)
    check_host_memory(vms, images, host.mem, spare, restored)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    listening = None
    if not args.dry_run:
        # The default directory is checked to be ours; a path the user chose is
        # the user's business.
        default_ctl = not args.ctl_socket and not os.environ.get(CTL_SOCKET_ENV)
        default_stream = not args.stream_socket and not os.environ.get(STREAM_SOCKET_ENV)
        prepare_ctl_socket(host.ctl_socket, private=default_ctl)
        prepare_ctl_socket(host.stream_socket, private=default_ctl and default_stream,
                           option="--stream-socket")
        check_host_ports(switches)
        if incoming is not None:
            listening = bind_incoming(incoming)
    try:
        with tempfile.TemporaryDirectory(prefix="carapace-run.") as tmp:
            workdir = args.keep.absolute() if args.keep else Path(tmp)
            dtb, dts = build_dtb(host, vms, images, workdir, switches)
            cmd = qemu_command(host, dtb, images, args.batch,
                               device_args(vms, switches, restores, spares, arriving))
            if args.dry_run:
                print_dry_run(cmd, dts, vms, images, host, bool(args.keep), spare, restores,
                              switches, spares)
                return EXIT_OK
            for line in forward_lines(switches):
                print(f"carapace-run: {line}", file=sys.stderr)
            new = NewImages()
            try:
                new.create([d for r in restores for d in r.disks if d.new_size is not None]
                           + [d for d in arriving if d.new_size is not None] + spares)
                for line in (incoming_disk_lines(incoming.disks if incoming else None)
                             + spare_lines(spares)):
                    print(f"carapace-run: {line}", file=sys.stderr)
                return run_qemu(args, cmd, vms, host, expect, restores, listening)
            finally:
                remove_unrestored(new, restores)
                remove_unarrived(new, incoming)
    finally:
        if listening is not None:
            listening.close()
        if not args.dry_run:
            remove_ctl_socket(host.ctl_socket)
            remove_ctl_socket(host.stream_socket)


def run_qemu(args, cmd, vms, host, expect, restores=(), listening=None):
    """Run QEMU interactively or in batch; restore @restores once the
    hypervisor answers; with --incoming, run the relay on @listening.
    Returns the exit status."""
    restorer = relay = None
    crlf = not args.batch and sys.stderr.isatty()
    if restores:
        restorer = Restorer(list(restores), host.ctl_socket, host.stream_socket,
                            group=args.batch, crlf=crlf)
    if host.incoming is not None:
        stall = (host.stream_stall_ms or 30000) / 1000
        relay = IncomingRelay(host.incoming, listening, host.ctl_socket, host.stream_socket,
                              stall + RELAY_IDLE_MARGIN, crlf=crlf)
    try:
        return run_with_helpers(args, cmd, vms, host, expect, restores, restorer, relay)
    finally:
        if relay:
            relay.stop()


def run_with_helpers(args, cmd, vms, host, expect, restores, restorer, relay):
    helpers = [h for h in (restorer, relay) if h]

    def on_start(proc):
        for helper in helpers:
            helper.start(proc)
    if not args.batch:
        status = run_interactive(cmd, vms, host.ctl_socket, host.persist, stream_text(host),
                                 on_start)
        return restore_failed(restorer) or status
    timeout = DEFAULT_TIMEOUT if args.timeout is None else args.timeout
    if restorer:
        restorer.hello_timeout = timeout
    note = "; --persist: the run ends at the timeout" if host.persist else ""
    print(f"carapace-run: batch run, timeout {timeout:g} s, control socket "
          f"{host.ctl_socket}, {stream_text(host)}{note}", file=sys.stderr)
    names = [vm.name for vm in vms] + [r.name for r in restores]
    names += [name for name in expect if name not in names]   # created at run time
    result = run_batch(cmd, names, timeout, args.log, persist=host.persist,
                       on_start=on_start if helpers else None,
                       settled=persist_settled(expect, restorer) if host.persist else None)
    if restore_failed(restorer, result.error):
        return EXIT_ERROR
    if result.settled:
        print("carapace-run: --persist: every expected VM ended; run over", file=sys.stderr)
    elif result.timed_out and host.persist:
        print(f"carapace-run: --persist: run ended at the timeout ({timeout:g} s)",
              file=sys.stderr)
    elif result.timed_out:
        print(f"carapace-run: timeout after {timeout:g} s", file=sys.stderr)
    elif result.error:
        print(f"carapace-run: {result.error}", file=sys.stderr)
    return print_summary(result, expect)


def persist_settled(expect, restorer):
    """For a --persist batch run: a test that names what each VM must end as
    (--expect, none of them "running") is over once all of them have, every
    --restore is done and no other VM runs; it need not wait for the timeout."""
    if not expect or "running" in expect.values():
        return None

    def settled(result):
        if restorer and len(restorer.results) < len(restorer.restores):
            return False
        if any(result.vms[name].outcome != outcome for name, outcome in expect.items()):
            return False
        return all(vm.outcome != "running" for vm in result.vms.values())
    return settled


def restore_failed(restorer, qemu_error=None):
    """EXIT_ERROR after printing why, if a --restore failed or the run ended
    before every file was restored; else None.  QEMU has exited."""
    if restorer is None:
        return None
    restorer.join(5.0)
    if not restorer.error and len(restorer.results) < len(restorer.restores):
        spec = restorer.restores[len(restorer.results)]
        restorer.error = f"restore {spec.path}: not done, the run ended first"
    if restorer.error:
        print(f"carapace-run: error: {restorer.error}", file=sys.stderr)
        if qemu_error:
            print(f"carapace-run: {qemu_error}", file=sys.stderr)
        return EXIT_ERROR
    return None


def terminate(signum, frame):
    raise SystemExit(128 + signum)   # unwinds, so QEMU is killed and files removed


def main(argv=None):
    # Installed here, not under `if __name__ == "__main__"`: the command is a
    # thin script that imports this module, and without the handler a SIGTERM
    # ends the launcher at once and leaves QEMU (in its own session) running.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, terminate)
    try:
        return launch(argv)
    except (LaunchError, OSError) as e:    # OSError: --keep or --log not writable
        print(f"carapace-run: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("carapace-run: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
