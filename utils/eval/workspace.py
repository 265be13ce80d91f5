"""The scratch repository an evaluation replays merge requests in.

The workload (minus its history/) is copied to a temporary git repository
whose `main` branch plays the project's main branch. Each MR is applied on a
branch `mr` off main and committed; a merged MR is then fast-forwarded into
main, a rejected one is dropped. Diffs are read back with git so the figures
use exactly what the passes see (mark-changed diffs the same commits).
"""

import json
import os
import re
import shutil
import subprocess
import tempfile

from fastci.replay.changes import code_lines

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def load_history(workload):
    """The MR list of the workload's history/index.json, in order."""
    with open(os.path.join(workload, "history", "index.json")) as f:
        return json.load(f)


def copy_workload(workload, dst):
    """Copies the workload's tree, minus its history/ and caches, to `dst`; returns `dst`."""
    shutil.copytree(workload, dst, ignore=shutil.ignore_patterns(
        "history", "__pycache__", ".pytest_cache"))
    return dst


def apply_patch(tree, patch, reverse=False):
    """`git apply` (or with `reverse`, `git apply -R`) of `patch` in `tree`, which need not be a repository."""
    cmd = ["git", "apply", "-p1"] + (["-R"] if reverse else []) + [patch]
    proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("git apply %s%s failed:\n%s" % (
            "-R " if reverse else "", patch, proc.stderr))


class ScratchRepo:
    """A git copy of the workload; `path` is the working tree."""

    def __init__(self, workload, parent=None):
        self.workload = os.path.abspath(workload)
        self.tmp = tempfile.mkdtemp(prefix="fastci_eval_", dir=parent)
        self.path = copy_workload(self.workload, os.path.join(self.tmp, "minitron"))
        self.git("init", "-q", "-b", "main")
        self.git("add", "-A")
        self.commit("base")

    def git(self, *args):
        """Runs git in the tree with a fixed identity and date; returns stdout."""
        env = dict(os.environ, GIT_AUTHOR_NAME="eval", GIT_AUTHOR_EMAIL="eval@localhost",
                   GIT_COMMITTER_NAME="eval", GIT_COMMITTER_EMAIL="eval@localhost",
                   GIT_AUTHOR_DATE="2026-01-01T00:00:00Z",
                   GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")
        proc = subprocess.run(["git", "-c", "core.autocrlf=false", *args], cwd=self.path,
                              env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError("git %s failed: %s" % (" ".join(args), proc.stderr.strip()))
        return proc.stdout

    def commit(self, message):
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    def head(self):
        return self.git("rev-parse", "HEAD").strip()

    def apply_mr(self, entry):
        """Checks out a branch `mr` off main with the MR committed; returns its sha."""
        self.git("checkout", "-q", "-B", "mr", "main")
        self.git("apply", "-p1", os.path.join(self.workload, "history", entry["patch"]))
        self.git("add", "-A")
        return self.commit(entry["id"])

    def finish_mr(self, entry):
        """Merges the MR into main if the history merged it, else drops it."""
        self.git("checkout", "-q", "main")
        if entry["merged"]:
            self.git("merge", "-q", "--ff-only", "mr")
        self.git("branch", "-q", "-D", "mr")

    def checkout(self, rev):
        self.git("checkout", "-q", rev)

    def changed_lines(self, base, head):
        """{path: set(old-side lines)} the diff base..head touches.

        Removed or replaced lines count as themselves; a pure insertion after
        old line p touches p and p + 1, the code it lands between. A hunk
        whose removed and added lines hold no code (blank, comment-only and
        docstring lines, as the replay harness's ground truth has it:
        fastci.replay.changes.code_lines) touches nothing: it cannot change
        behaviour."""
        out = self.git("diff", "--no-ext-diff", "--no-renames", "-U0", base, head)
        changed, path, old_path = {}, None, None
        code = {}

        def code_of(revision, name):
            """Code lines of `name` at `revision`: none for an absent side,
            None (any line may be code) for other files and Python that
            does not tokenize."""
            if name is None:
                return set()
            if not name.endswith(".py"):
                return None
            if (revision, name) not in code:
                proc = subprocess.run(["git", "show", "%s:%s" % (revision, name)], cwd=self.path,
                                      capture_output=True, text=True)
                code[(revision, name)] = code_lines(proc.stdout) if proc.returncode == 0 else set()
            return code[(revision, name)]

        for line in out.splitlines():
            if line.startswith("--- "):
                path = old_path = line[6:] if line.startswith("--- a/") else None
                new_path = None
            elif line.startswith("+++ "):
                new_path = line[6:] if line.startswith("+++ b/") else None
                if path is None and new_path is not None:
                    path = new_path  # an added file: nothing old to touch, but record it
                    changed.setdefault(path, set())
            match = HUNK.match(line)
            if match and path is not None:
                start, count = int(match.group(1)), int(match.group(2) or "1")
                new_start, new_count = int(match.group(3)), int(match.group(4) or "1")
                old_code, new_code = code_of(base, old_path), code_of(head, new_path)
                if (old_code is not None and new_code is not None
                        and not old_code & set(range(start, start + count))
                        and not new_code & set(range(new_start, new_start + new_count))):
                    changed.setdefault(path, set())
                    continue
                lines = changed.setdefault(path, set())
                if count:
                    lines.update(range(start, start + count))
                else:
                    lines.update(n for n in (start, start + 1) if n > 0)
        return changed

    def changed_files(self, base, head):
        """Paths the diff base..head touches (both sides of a rename)."""
        out = self.git("diff", "--no-ext-diff", "--no-renames", "--name-only", base, head)
        return [p for p in out.splitlines() if p]

    def line_map(self, old, new, path):
        """Maps lines of `path` at `new` back to `old` (None: changed since)."""
        out = self.git("diff", "--no-ext-diff", "--no-renames", "-U0", old, new, "--", path)
        hunks = [(int(m.group(1)), int(m.group(2) or "1"), int(m.group(3)), int(m.group(4) or "1"))
                 for m in map(HUNK.match, out.splitlines()) if m]

        def back(line):
            shift = 0
            for old_start, old_count, new_start, new_count in hunks:
                new_first = new_start if new_count else new_start + 1
                if line < new_first:
                    break
                if line < new_first + new_count:
                    return None
                shift = (old_start + old_count if old_count else old_start + 1) - (
                    new_start + new_count if new_count else new_start + 1)
            return line + shift
        return back

    def cleanup(self):
        """Removes the scratch directory and everything the run wrote in it."""
        shutil.rmtree(self.tmp, ignore_errors=True)
