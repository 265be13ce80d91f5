"""`fastci replay`: a replay harness that scores FastCI and baseline
selection strategies on a repository's own history against exact per-test
line coverage and seeded mutants (harness.py; docs/Evaluation.md).

Kept import-free: child processes of traced tests import
`fastci.replay.linetrace` through this package.
"""


def main(argv: "list[str] | None" = None) -> int:
    from .harness import main as harness_main
    return harness_main(argv)
