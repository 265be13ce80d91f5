"""PEP 517 backend of the `fastci` package: setuptools, found offline.

pip builds a pyproject.toml project in an isolated environment into which it
downloads the build requirements; on a CI runner without a package index
(FastCI's own machines reach Debian's archive only) that download fails
before anything is built. This backend requires nothing from pip and
delegates to the setuptools (and wheel) the installing interpreter already
has, e.g. Debian's python3-setuptools seen from a `--system-site-packages`
venv or with `--break-system-packages`. Where pip's isolation hides them, it
asks that interpreter, run without pip's overlay, where they live."""

import os
import subprocess
import sys


def _add_interpreter_packages():
    """Puts the directories holding the interpreter's own setuptools and wheel
    on sys.path."""
    environ = {key: value for key, value in os.environ.items()
               if key not in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONNOUSERBASE")}
    probe = ("import os, setuptools, wheel\n"
             "for m in (setuptools, wheel):\n"
             "    print(os.path.dirname(os.path.dirname(m.__file__)))")
    try:
        found = subprocess.run([sys.executable, "-c", probe], env=environ,
                               capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        raise ImportError(
            "building fastci needs setuptools and wheel (Debian: apt-get "
            "install python3-setuptools python3-wheel)") from None
    for directory in found.stdout.split("\n"):
        if directory and directory not in sys.path:
            sys.path.append(directory)


try:
    import setuptools  # noqa: F401
    import wheel  # noqa: F401
except ImportError:
    _add_interpreter_packages()
from setuptools import build_meta as _backend  # noqa: E402

build_wheel = _backend.build_wheel
build_sdist = _backend.build_sdist
prepare_metadata_for_build_wheel = _backend.prepare_metadata_for_build_wheel
build_editable = getattr(_backend, "build_editable", None)
prepare_metadata_for_build_editable = getattr(
    _backend, "prepare_metadata_for_build_editable", None)
if build_editable is None:
    del build_editable, prepare_metadata_for_build_editable


# setuptools asks pip for `wheel` here; it is importable already (above), and
# asking would make pip download it.
def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []
