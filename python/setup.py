"""Build script of the `fastci` package beside pyproject.toml, which holds
the metadata. It only adds the optional C parts of fastci.trace: every
`fastci/trace/_<name>.c` becomes the extension module `fastci.trace._<name>`,
compiled with the shared sources of `fastci/trace/native/` (CMake builds the
same sources for build trees). They are `optional`: where
no compiler or no Python headers exist (no python3-dev), setuptools reports
the failed build and installs the package without them, and fastci.trace
records sampled evidence only."""

import glob
import os

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def native_extensions():
    trace = os.path.join(HERE, "fastci", "trace")
    shared = sorted(glob.glob(os.path.join(trace, "native", "*.c")))
    headers = sorted(glob.glob(os.path.join(trace, "native", "*.h")))
    extensions = []
    for source in sorted(glob.glob(os.path.join(trace, "_*.c"))):
        name = os.path.splitext(os.path.basename(source))[0]
        extensions.append(Extension(
            "fastci.trace." + name,
            sources=[os.path.relpath(path, HERE) for path in [source] + shared],
            depends=[os.path.relpath(path, HERE) for path in headers],
            optional=True))
    return extensions


setup(ext_modules=native_extensions())
