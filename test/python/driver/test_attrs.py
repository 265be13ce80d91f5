"""fastci.attrs, the Python side's spelling of the IR attributes it reads,
names only attributes a pass declares (`fastci-opt --list-attributes`, the
table of docs/IR.md), on the hosts it reads them from: a renamed or moved
attribute fails here instead of silently reading nothing."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("FASTCI_BUILD_DIR", ROOT / "build")).resolve()
FASTCI_OPT = BUILD / "bin" / "fastci-opt"
sys.path.insert(0, str(ROOT / "python"))

from fastci import attrs  # noqa: E402

pytestmark = pytest.mark.skipif(
    not FASTCI_OPT.exists(), reason="fastci-opt is not built (set FASTCI_BUILD_DIR)")


def declared():
    """name -> set of hosts, from the attribute table fastci-opt prints."""
    out = subprocess.run([str(FASTCI_OPT), "--list-attributes"], check=True,
                         stdout=subprocess.PIPE, universal_newlines=True).stdout
    hosts = {}
    for line in out.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        hosts.setdefault(cells[0].strip("`"), set()).update(cells[1].split(", "))
    return hosts


def test_every_ir_attribute_read_is_declared_on_tests():
    table = declared()
    for name in attrs.IR_ATTRIBUTES:
        assert "test" in table.get(name, set()), (name, table.get(name))


def test_ir_attributes_lists_every_constant():
    constants = {v for k, v in vars(attrs).items()
                 if k.isupper() and isinstance(v, str) and not k.startswith("PLAN_")}
    assert constants == set(attrs.IR_ATTRIBUTES)
