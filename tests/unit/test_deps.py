# SPDX-License-Identifier: MIT
"""Tests for scripts/deps.sh's system_mirror: which Debian mirror it takes from
the system's apt sources (deb822 and one-line formats), run through bash on
fake sources files."""

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[2]
DEPS = ROOT / "scripts" / "deps.sh"

# Placeholder hosts (RFC 2606 .test names): the repository names no real mirror.
MAIN = "http://main.mirror.test/debian"
SECURITY = "http://security.mirror.test/debian-security"
OTHER = "https://other.mirror.test/debian"


def system_mirror(tmp_path, deb822=None, one_line=None, codename="bookworm"):
    """Run system_mirror on fake files; None means the file does not exist."""
    sources = tmp_path / "debian.sources"
    listfile = tmp_path / "sources.list"
    for path, text in ((sources, deb822), (listfile, one_line)):
        if text is not None:
            path.write_text(textwrap.dedent(text))
    proc = subprocess.run(
        ["bash", "-c", 'source "$1"; system_mirror "$2" "$3" "$4"',
         "bash", str(DEPS), str(sources), str(listfile), codename],
        capture_output=True, text=True, timeout=30)
    return proc.returncode, proc.stdout.strip()


def test_deb822_several_uris_prefers_release_suite(tmp_path):
    rc, out = system_mirror(tmp_path, deb822=f"""\
        Types: deb
        # a comment line inside the stanza
        URIs: {SECURITY}
        Suites: bookworm-security
        Components: main

        Types: deb-src
        URIs: {OTHER}
        Suites: bookworm
        Components: main

        Types: deb deb-src
        URIs: {MAIN}/ {OTHER}
        Suites: bookworm bookworm-updates
        Components: main
        Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
        """, one_line=f"deb {OTHER} bookworm main\n")
    assert (rc, out) == (0, MAIN)


def test_deb822_first_uri_and_disabled_stanza(tmp_path):
    rc, out = system_mirror(tmp_path, deb822=f"""\
        Types: deb
        URIs: {OTHER}
        Suites: bookworm
        Enabled: no

        Types: deb
        URIs:
         {MAIN}
         {OTHER}
        Suites: bookworm
        """)
    assert (rc, out) == (0, MAIN)


def test_one_line_with_options(tmp_path):
    rc, out = system_mirror(tmp_path, deb822=None, one_line=f"""\
        # deb {OTHER} bookworm main
        deb-src {OTHER} bookworm main
        deb [arch=amd64,arm64 signed-by=/usr/share/keyrings/k.gpg] {SECURITY} bookworm-security main
        deb [ arch=amd64 ] {MAIN} bookworm main contrib
        deb {OTHER} bookworm-updates main
        """)
    assert (rc, out) == (0, MAIN)


def test_no_release_suite_falls_back_to_non_security(tmp_path):
    rc, out = system_mirror(tmp_path, one_line=f"""\
        deb {SECURITY} bookworm-security main
        deb cdrom:[Debian GNU/Linux 12]/ bookworm main
        deb {OTHER} stable main
        """)
    assert (rc, out) == (0, OTHER)


def test_deb822_missing_falls_back_to_one_line(tmp_path):
    rc, out = system_mirror(tmp_path, deb822=None, one_line=f"deb {MAIN} bookworm main\n")
    assert (rc, out) == (0, MAIN)


def test_security_only_is_not_a_mirror(tmp_path):
    rc, out = system_mirror(tmp_path, deb822=f"""\
        Types: deb
        URIs: {SECURITY}
        Suites: bookworm-security
        """, one_line="deb-src http://x.mirror.test/debian bookworm main\n")
    assert (rc, out) == (1, "")


def test_both_missing(tmp_path):
    assert system_mirror(tmp_path) == (1, "")


def test_no_mirror_fails_naming_carapace_mirror(tmp_path):
    """The script itself: no mirror anywhere and no CARAPACE_MIRROR -> a clear error."""
    proc = subprocess.run(
        ["bash", "-c", 'source "$1"; SYS_SOURCES="$2"; SYS_LIST="$3"; MIRROR=; need_mirror',
         "bash", str(DEPS), str(tmp_path / "none.sources"), str(tmp_path / "none.list")],
        capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
    assert "CARAPACE_MIRROR" in proc.stderr


def test_carapace_mirror_overrides(tmp_path):
    proc = subprocess.run(
        ["bash", "-c", 'source "$1"; SYS_SOURCES="$2"; SYS_LIST="$3"; need_mirror; echo "$MIRROR"',
         "bash", str(DEPS), str(tmp_path / "none.sources"), str(tmp_path / "none.list")],
        capture_output=True, text=True, timeout=30,
        env={**os.environ, "CARAPACE_MIRROR": OTHER})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == OTHER
