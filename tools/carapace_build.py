# SPDX-License-Identifier: MIT
"""The PEP 517 build backend of pyproject.toml, standard library only, so that
`pip install .` needs no download: a wheel holds tools/carapace/ and, under
carapace/_c/, the C headers the snapshot reader parses (carapace.paths
C_HEADERS), which an installed package cannot find in a source tree."""

import base64
import hashlib
import io
import tarfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tools" / "carapace"
TAG = "py3-none-any"


def _project():
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def _c_headers():
    """carapace.paths.C_HEADERS, read without importing the package."""
    scope = {"__file__": str(PACKAGE / "paths.py")}
    exec(compile((PACKAGE / "paths.py").read_text(), "paths.py", "exec"), scope)
    return scope["C_HEADERS"]


def _files():
    """(path in the wheel, file on disk) for every file the package ships."""
    for path in sorted(PACKAGE.rglob("*.py")):
        yield "carapace/" + path.relative_to(PACKAGE).as_posix(), path
    for rel in _c_headers():
        yield f"carapace/_c/{rel}", ROOT / rel


def _metadata(project):
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}",
             f"Version: {project['version']}", f"Summary: {project['description']}",
             f"Requires-Python: {project['requires-python']}",
             f"License: {project['license']['text']}"]
    return "\n".join(lines) + "\n"


def _dist_info(project):
    name = f"{project['name']}-{project['version']}.dist-info"
    scripts = "".join(f"{cmd} = {target}\n" for cmd, target in project["scripts"].items())
    return name, {
        "METADATA": _metadata(project),
        "WHEEL": f"Wheel-Version: 1.0\nGenerator: carapace_build\nRoot-Is-Purelib: true\n"
                 f"Tag: {TAG}\n",
        "entry_points.txt": f"[console_scripts]\n{scripts}",
    }


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}\n"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = _project()
    wheel_name = f"{project['name']}-{project['version']}-{TAG}.whl"
    info, meta = _dist_info(project)
    record = []
    with zipfile.ZipFile(Path(wheel_directory) / wheel_name, "w", zipfile.ZIP_DEFLATED) as whl:
        for name, path in _files():
            data = path.read_bytes()
            whl.writestr(name, data)
            record.append(_record_line(name, data))
        for leaf, text in meta.items():
            data = text.encode()
            whl.writestr(f"{info}/{leaf}", data)
            record.append(_record_line(f"{info}/{leaf}", data))
        record.append(f"{info}/RECORD,,\n")
        whl.writestr(f"{info}/RECORD", "".join(record))
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    """The package's sources, its headers, pyproject.toml and this backend."""
    project = _project()
    base = f"{project['name']}-{project['version']}"
    members = [("pyproject.toml", ROOT / "pyproject.toml"),
               ("tools/carapace_build.py", Path(__file__).resolve())]
    members += [(f"tools/{name}", path) for name, path in _files() if name.count("/_c/") == 0]
    members += [(rel, ROOT / rel) for rel in _c_headers()]
    name = f"{base}.tar.gz"
    with tarfile.open(Path(sdist_directory) / name, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for arc, path in members:
            tar.add(path, arcname=f"{base}/{arc}", recursive=False)
        pkg_info = _metadata(project).encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        tar.addfile(info, io.BytesIO(pkg_info))
    return name

