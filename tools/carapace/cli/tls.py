# SPDX-License-Identifier: MIT
"""carapace-tls: the transport that carries a live migration between two hosts.

A migration stream (docs/migration.md) crosses networks nobody trusts, so the
two relays that carry it (carapace-ctl migrate on the source, carapace-run
--incoming or carapace-ctl incoming on the destination) speak TLS 1.3 with an
X.509 certificate on each side, as QEMU's tls-creds-x509 migration does: the
destination is the TLS server, the source the client, and each checks the
other's certificate against the CA it was given (never the system's CAs).  A
peer that fails the handshake is refused before any byte of its reaches a
hypervisor: the destination's relay connects to its hypervisor's stream port
(a UNIX socket) only after the source has been authenticated.  Plain TCP is
kept for tests and debugging on one machine, only when asked for explicitly
and only on the loopback.  docs/migration.md, "Transport", is the contract.

Credentials, as QEMU's tls-creds-x509 dir= lays them out:

    DIR/ca-cert.pem                        the CA both sides trust
    DIR/server-cert.pem, server-key.pem    the destination's (TLS server)
    DIR/client-cert.pem, client-key.pem    the source's (TLS client)

--tls-dir DIR (or $CARAPACE_TLS_DIR) names the directory; --tls-ca, --tls-cert
and --tls-key name files one by one (they win over the directory's).

Command (test credentials; production ones come from your own CA):

    carapace-tls init DIR [--name NAME] [--ip ADDR]... [--ca CA_DIR] [--days N]

makes DIR (mode 0700) with a new CA, or one signed by CA_DIR's CA
(ca-cert.pem and ca-key.pem there), and a server and a client certificate
for NAME (default localhost, with IP 127.0.0.1 and ::1), keys mode 0600, with
the openssl command (Debian's openssl package; Python's ssl cannot make
certificates).

From Python: the carapace.tls module (docs/python-api.md).
"""

import argparse
import sys
from pathlib import Path

from ..tls import CA_KEY_FILE, ConfigError, init_credentials


# --- command line ------------------------------------------------------------------------


def build_parser():
    p = argparse.ArgumentParser(
        prog="carapace-tls", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Credentials for migrations between Carapace hosts (TLS 1.3, an X.509 "
                    "certificate on each side; docs/user-guide.md, \"Migration credentials\").")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    init = sub.add_parser("init", help="make a test credentials directory")
    init.add_argument("dir", type=Path, metavar="DIR")
    init.add_argument("--name", default="localhost",
                      help="the host's name in both certificates (default localhost)")
    init.add_argument("--ip", action="append", metavar="ADDR",
                      help="an IP address the destination is reached at, repeatable "
                           "(default for localhost: 127.0.0.1 and ::1)")
    init.add_argument("--ca", type=Path, metavar="CA_DIR",
                      help="sign with the CA of CA_DIR (ca-cert.pem, ca-key.pem) instead of "
                           "making a new one: a second host of the same deployment")
    init.add_argument("--days", type=int, default=365, help="validity (default 365)")
    init.add_argument("--force", action="store_true", help="replace existing files")
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.command != "init":
        build_parser().print_help(sys.stderr)
        return 3
    try:
        written = init_credentials(args.dir, args.name, args.ip, args.ca, args.days,
                                   args.force)
    except ConfigError as e:
        print(f"carapace-tls: {e}", file=sys.stderr)
        return 3
    for path in written:
        print(f"wrote {path}")
    if args.ca is None:
        print(f"carapace-tls: {args.dir / CA_KEY_FILE} signs certificates for every host: "
              "keep it off the hosts in production (carapace-tls init --ca)", file=sys.stderr)
    return 0

