# SPDX-License-Identifier: MIT
"""The errors of the management client, its streams and the migration relay;
carapace-ctl maps each to its exit status (docs/management.md)."""


class UsageError(Exception):
    """Bad command line or argument value: nothing was sent (exit 3)."""


class FileError(UsageError):
    """A local file problem: the snapshot FILE cannot be written, the restore
    FILE cannot be read or is not a valid snapshot (exit 3)."""


class TransportError(Exception):
    """No usable reply: cannot connect, timeout, closed, not our reply (exit 2)."""


class RemoteError(Exception):
    """The hypervisor answered with ok=false (exit 1)."""

    def __init__(self, code, message, reply):
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.reply = code, message, reply


class LaunchError(Exception):
    """A problem the user of carapace-run can fix; main() prints it and exits with 3."""
