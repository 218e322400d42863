"""The PEP 517 build backend of fenced-client, standard library only.

It builds a pure-Python wheel of the ``fenced_client`` package (and an
sdist, and a PEP 660 editable wheel) from the ``[project]`` table of
pyproject.toml, so that ``pip install`` needs no build requirement from a
package index. It reads the table with tomllib where Python has it (3.11+)
and otherwise the few ``key = "string"`` lines it needs.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import sys
import tarfile
import zipfile
from typing import Any, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "fenced_client"
_EPOCH = (1980, 1, 1, 0, 0, 0)


def _project() -> Dict[str, Any]:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        text = f.read().decode("utf-8")
    if sys.version_info >= (3, 11):
        import tomllib

        return dict(tomllib.loads(text)["project"])
    project: Dict[str, Any] = {}
    section = ""
    for line in text.splitlines():
        m = re.match(r"\s*\[([^\]]+)\]\s*$", line)
        if m:
            section = m.group(1).strip()
            continue
        m = re.match(r'\s*([A-Za-z-]+)\s*=\s*"([^"]*)"\s*$', line)
        if m and section == "project":
            project[m.group(1)] = m.group(2)
    return project


def _names() -> Tuple[Dict[str, Any], str, str]:
    p = _project()
    dist = re.sub(r"[-_.]+", "_", p["name"]).lower()
    return p, dist, p["version"]


def _metadata() -> bytes:
    p, _, version = _names()
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + version]
    if p.get("description"):
        lines.append("Summary: " + p["description"])
    if p.get("requires-python"):
        lines.append("Requires-Python: " + p["requires-python"])
    for c in p.get("classifiers") or []:
        lines.append("Classifier: " + c)
    body = ""
    readme = p.get("readme")
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
            body = f.read()
    return ("\n".join(lines) + "\n\n" + body).encode("utf-8")


def _package_files() -> List[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, PACKAGE)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py") or name == "py.typed":
                out.append(os.path.relpath(os.path.join(dirpath, name), ROOT).replace(os.sep, "/"))
    return out


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def _wheel(wheel_directory: str, files: List[Tuple[str, bytes]]) -> str:
    _, dist, version = _names()
    info = "%s-%s.dist-info" % (dist, version)
    files = files + [
        (info + "/METADATA", _metadata()),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: fenced_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
        (info + "/top_level.txt", (PACKAGE + "\n").encode("ascii")),
    ]
    record = [_record_line(path, data) for path, data in files] + [info + "/RECORD,,"]
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode("utf-8")))
    name = "%s-%s-py3-none-any.whl" % (dist, version)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            zi = zipfile.ZipInfo(path, _EPOCH)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return name


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    files = []
    for path in _package_files():
        with open(os.path.join(ROOT, path), "rb") as f:
            files.append((path, f.read()))
    return _wheel(wheel_directory, files)


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """A wheel whose .pth file puts this source directory on sys.path."""
    return _wheel(wheel_directory, [("%s.pth" % PACKAGE, (ROOT + "\n").encode("utf-8"))])


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    _, dist, version = _names()
    base = "%s-%s" % (dist, version)
    paths = ["pyproject.toml", "README.md", "_build/fenced_build.py"] + _package_files()
    tests = os.path.join(ROOT, "tests")
    if os.path.isdir(tests):
        paths += sorted("tests/" + n for n in os.listdir(tests) if n.endswith(".py"))
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        entries = [(p, open(os.path.join(ROOT, p), "rb").read()) for p in paths]
        entries.append(("PKG-INFO", _metadata()))
        for path, data in entries:
            ti = tarfile.TarInfo(base + "/" + path)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 0
            tar.addfile(ti, io.BytesIO(data))
    return name
