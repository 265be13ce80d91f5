"""A small git repository for the replay tests, built commit by commit.

`calc/` is a package with three modules; `tests/` has one test file per
module plus a test that runs the package in a child interpreter (so ground
truth must come from every process). The commits after the base:

1. an added branch in `calc/ops.py` (executed by test_ops tests),
2. a comment-only change (affects nothing),
3. a new function nothing calls in `calc/extra.py`,
4. a deleted line in `calc/fmt.py` (affects the tests covering it),
5. a change in `calc/cli.py`, reached only through the child process.
"""

import os
import subprocess
import sys

FILES = {
    "calc/__init__.py": "",
    "calc/ops.py": (
        "def add(a, b):\n"
        "    return a + b\n"
        "\n"
        "\n"
        "def clamp(x, low, high):\n"
        "    if x < low:\n"
        "        return low\n"
        "    return x\n"
    ),
    "calc/fmt.py": (
        "def show(x):\n"
        "    text = str(x)\n"
        "    text = text.strip()\n"
        "    return '<' + text + '>'\n"
    ),
    "calc/extra.py": (
        "SCALE = 2\n"
        "\n"
        "\n"
        "def scale(x):\n"
        "    return x * SCALE\n"
    ),
    "calc/cli.py": (
        "import sys\n"
        "\n"
        "from calc import ops\n"
        "\n"
        "\n"
        "def main():\n"
        "    print(ops.add(int(sys.argv[1]), int(sys.argv[2])))\n"
        "\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    main()\n"
    ),
    "tests/test_ops.py": (
        "from calc import ops\n"
        "\n"
        "\n"
        "def test_add():\n"
        "    assert ops.add(2, 3) == 5\n"
        "\n"
        "\n"
        "def test_clamp():\n"
        "    assert ops.clamp(-1, 0, 3) == 0\n"
        "    assert ops.clamp(2, 0, 3) == 2\n"
    ),
    "tests/test_fmt.py": (
        "from calc import fmt\n"
        "\n"
        "\n"
        "def test_show():\n"
        "    assert fmt.show(' 7 ') == '<7>'\n"
    ),
    "tests/test_extra.py": (
        "from calc import extra\n"
        "\n"
        "\n"
        "def test_scale():\n"
        "    assert extra.scale(3) == 6\n"
    ),
    "tests/test_cli.py": (
        "import os\n"
        "import subprocess\n"
        "import sys\n"
        "\n"
        "\n"
        "def test_cli_in_child():\n"
        "    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
        "    out = subprocess.run([sys.executable, '-m', 'calc.cli', '2', '2'], cwd=root,\n"
        "                         capture_output=True, text=True, check=True).stdout\n"
        "    assert out.strip() == '4'\n"
    ),
}

COMMITS = [
    ("clamp: upper bound", {"calc/ops.py": FILES["calc/ops.py"].replace(
        "    return x\n", "    if x > high:\n        return high\n    return x\n")}),
    ("comment", {"calc/extra.py": "# Scaling helpers.\n" + FILES["calc/extra.py"]}),
    ("unused helper", {"calc/extra.py": "# Scaling helpers.\n" + FILES["calc/extra.py"]
                       + "\n\ndef unscale(x):\n    return x // SCALE\n"}),
    ("fmt: no strip", {"calc/fmt.py": FILES["calc/fmt.py"].replace("    text = text.strip()\n", "")}),
    ("cli: sum of all", {"calc/cli.py": FILES["calc/cli.py"].replace(
        "    print(ops.add(int(sys.argv[1]), int(sys.argv[2])))\n",
        "    total = 0\n    for word in sys.argv[1:]:\n        total = ops.add(total, int(word))\n"
        "    print(total)\n")}),
]

# test_fmt fails once the strip is gone: " 7 " shows as "< 7 >".
FMT_TEST_AFTER = "def test_show():\n    assert fmt.show('7') == '<7>'\n"


def git(repo, *args):
    subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x",
                        "GIT_AUTHOR_DATE": "2024-01-01T00:00:00", "GIT_COMMITTER_DATE":
                        "2024-01-01T00:00:00"})


def write(repo, files):
    for path, text in files.items():
        full = os.path.join(repo, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)


def make(repo):
    """Creates the repository at `repo`; returns the pytest command."""
    os.makedirs(repo)
    git(repo, "init", "-q", "-b", "main")
    write(repo, FILES)
    with open(os.path.join(repo, "pytest.ini"), "w") as f:
        f.write("[pytest]\naddopts = -p no:cacheprovider\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    for subject, files in COMMITS:
        if "calc/fmt.py" in files:
            files = dict(files, **{"tests/test_fmt.py": FILES["tests/test_fmt.py"].replace(
                "def test_show():\n    assert fmt.show(' 7 ') == '<7>'\n", FMT_TEST_AFTER)})
        write(repo, files)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", subject)
    return ["/usr/bin/python3", "-m", "pytest", "-q", "tests"]


if __name__ == "__main__":
    print(" ".join(make(sys.argv[1])))
