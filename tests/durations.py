"""The suite's time, test by test and file by file, from the JUnit XML of a run (``make test
PYTEST_ARGS=--junitxml=run.xml``): ``python tests/durations.py run.xml [N]`` prints the N slowest tests (default 40)
and the slowest files as Markdown tables, for ``tests/README.md``.

A test's time is pytest's for its setup, call and teardown together, so a module fixture's build is counted on the
first test that asks for it; a file's time is the sum over its tests, which is what one xdist worker spends on it
under ``--dist loadfile``.
"""

from __future__ import annotations

import collections
import sys
import xml.etree.ElementTree as ElementTree


def read(path: str) -> list[tuple[float, str, str, str]]:
    """``(seconds, file, test name, outcome)`` for every test case of the report."""
    cases = []
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag
        module = case.get("classname") or ""
        cases.append((float(case.get("time") or 0.0), module.replace(".", "/") + ".py", case.get("name", ""), outcome))
    return cases


def tables(cases: list[tuple[float, str, str, str]], slowest: int = 40) -> str:
    counts = collections.Counter(outcome for _, _, _, outcome in cases)
    files: collections.Counter[str] = collections.Counter()
    for seconds, file, _, _ in cases:
        files[file] += seconds
    lines = [f"{len(cases)} tests ({', '.join(f'{n} {k}' for k, n in sorted(counts.items()))}), "
             f"{sum(c[0] for c in cases):.0f} s of test time in all", "",
             "| # | seconds | test |", "|---|---|---|"]
    for rank, (seconds, file, name, outcome) in enumerate(sorted(cases, reverse=True)[:slowest], 1):
        note = "" if outcome == "passed" else f" ({outcome})"
        lines.append(f"| {rank} | {seconds:.1f} | `{file.removeprefix('tests/')}::{name}`{note} |")
    lines += ["", "| seconds | file |", "|---|---|"]
    lines += [f"| {seconds:.0f} | `{file}` |" for file, seconds in files.most_common(slowest // 2)]
    return "\n".join(lines)


if __name__ == "__main__":
    print(tables(read(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 40))
