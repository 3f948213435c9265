"""The walk: every console script and every ``python -m albert_tf.*`` entry point, each file-valued flag given a
missing, an empty, a truncated and a wrong-kind file (outputs: a file where a folder goes, a folder where a file
goes, a path under a file, a new path), one at a time on an otherwise valid command line. No case may end in a
traceback or a signal; a failure is one ``error:`` line, and for a wrong input file one that names it
(``tests/bad_inputs/entry_points.py`` has the table).
"""

from __future__ import annotations

import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys

import commands
import pytest
from bad_inputs import entry_points, fixtures

OUTPUT_KINDS = tuple(entry_points.OUTPUT_VARIANTS)
TIMEOUT = 600


def cases() -> list[tuple[str, str, str, str]]:
    """``(case id, entry point, flag, variant)`` for every file-valued flag of every entry point."""
    out = []
    for name, (_, _, file_flags) in entry_points.ENTRY_POINTS.items():
        for flag, (kind, _) in file_flags.items():
            for variant in entry_points.OUTPUT_VARIANTS.get(kind, entry_points.VARIANTS):
                out.append((f"{name.replace(' ', '-')}--{flag}-{variant}", name, flag, variant))
    return out


CASES = cases()


def command_line(name: str, flag: str, value: str, fill: dict[str, str],
                 variant: str = "") -> tuple[list[str], dict[str, str]]:
    """The argv (interpreter first) and the extra environment of one case (``variant``: of ``value``)."""
    prefix, base, file_flags = entry_points.ENTRY_POINTS[name]
    kind, extra = file_flags[flag]
    values = {**base}
    for key, given in extra.items():
        if given is None:
            values.pop(key, None)
        else:
            values[key] = given
    env = {}
    if kind == "presets_env":
        env[flag] = value
    else:
        values[flag] = value
    args = [f"--{k}" if v is True else f"--{k}={v.format(**fill)}" for k, v in values.items()]
    if kind == "flagfile" and variant == "empty" and name in entry_points.ENDS_AFTER_PARSING:
        args.append("--helpshort")
    script = pathlib.Path(sys.executable).with_name(name.split(" ")[0])
    if script.name in entry_points.CONSOLE_SCRIPTS and script.exists():  # the installed console script itself
        argv = [str(script), *prefix[2:]]
    else:
        argv = [sys.executable, *prefix]
    return [*argv, *args], env


def prepare(root: pathlib.Path) -> dict[str, object]:
    """The valid inputs (``fixtures.build``), the wrong files of every kind, and a valid Hugging Face folder."""
    from albert_tf.checkpoints.convert import convert

    paths = fixtures.build(root / "inputs")
    kinds = entry_points.variants(paths, root / "variants")
    hf = str(root / "hf")
    convert(paths["run"] + "/ckpt-2", "albert_tf", hf, "huggingface", paths["config"], spm_model_file=paths["spm"],
            log=lambda line: None)
    return {"paths": {**paths, "hf": hf}, "kinds": kinds}


def run_one(case: tuple[str, str, str, str], prepared: dict, case_dir: pathlib.Path) -> subprocess.CompletedProcess:
    """One case in a subprocess, in its own scratch folder ``case_dir``."""
    case_id, name, flag, variant = case
    case_dir.mkdir(parents=True, exist_ok=True)
    kind = entry_points.ENTRY_POINTS[name][2][flag][0]
    if kind in OUTPUT_KINDS:
        value = entry_points.output_variants(case_dir / "outputs", kind)[variant]
    else:
        value = prepared["kinds"][kind][variant]
    fill = {**prepared["paths"], "out": str(case_dir / "out")}
    argv, env = command_line(name, flag, value, fill, variant)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONHASHSEED": "0",
           "ALBERT_TF_CACHE": str(case_dir / "cache"), **env}
    try:
        result = commands.run(argv[1:] if argv[0] == sys.executable else argv, cwd=str(case_dir), env=env,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        result = subprocess.CompletedProcess(argv, -9, "", f"timed out after {TIMEOUT} s: {e.stderr!r}")
    result.value = value  # what the flag (or variable) was given
    return result


@pytest.fixture(scope="module")
def walked(request, tmp_path_factory):
    """``{case id: completed process}`` for the selected cases, two at a time."""
    wanted = {item.callspec.params["case"][0] for item in request.session.items
              if getattr(item, "originalname", "") == "test_no_traceback"}
    selected = [c for c in CASES if c[0] in wanted]
    root = tmp_path_factory.mktemp("walk")
    prepared = prepare(root)
    before = fixtures.checksums(str(root))

    def one(case):
        return run_one(case, prepared, tmp_path_factory.mktemp(case[0][:60]))

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = dict(zip([c[0] for c in selected], pool.map(one, selected)))
    after = fixtures.checksums(str(root))
    results["changed inputs"] = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    return results


@pytest.mark.slow
def test_the_walk_changes_no_input(walked):
    """Every input and wrong file the cases read is byte for byte as before (outputs go to each case's folder)."""
    assert walked["changed inputs"] == []


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_no_traceback(case, walked):
    result = walked[case[0]]
    output = result.stdout + result.stderr
    where = f"{' '.join(result.args)}\n{output[-3000:]}"
    assert result.returncode >= 0, f"killed by signal {-result.returncode}: {where}"
    assert "Traceback" not in output, where
    case_id, name, flag, variant = case
    if flag == "flagfile" and variant == "empty" and name in entry_points.ENDS_AFTER_PARSING:  # read, then the help
        assert result.returncode == 0 and result.stdout.startswith(f"{name}: "), where
    if result.returncode:
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, where
        if entry_points.ENTRY_POINTS[name][2][flag][0] not in OUTPUT_KINDS:  # a wrong input file: the line names it
            assert result.value in errors[0] or os.path.basename(result.value) in errors[0], where


def _help_flags(name: str) -> set[str]:
    prefix = entry_points.ENTRY_POINTS[name][0]
    argv = [sys.executable, *prefix, "--help"]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    out = commands.run(argv[1:], capture_output=True, text=True, timeout=600, env=env)
    return set(re.findall(r"^\s+--(?:\[no\])?([a-z_0-9]+)", out.stdout, re.M))


PATH_LIKE = re.compile(r"(file|dir|checkpoint|path|handle|prefix|workdir|records|^input$|^output$|shared_data|"
                       r"reuse_results)")


@pytest.mark.heavy
@pytest.mark.parametrize("name", [n for n in entry_points.ENTRY_POINTS if " " not in n and n != "albert_tf.configs"])
def test_the_table_has_every_file_flag(name):
    """A file-valued flag added to a command without a row here fails (names that look like paths and are not:
    ``entry_points.NOT_PATHS``)."""
    found = {f for f in _help_flags(name) if PATH_LIKE.search(f)} - entry_points.NOT_PATHS - {"flagfile"}
    listed = set(entry_points.ENTRY_POINTS[name][2]) - {"flagfile"}
    assert found <= listed, f"{name}: file flags without a row: {sorted(found - listed)}"


def test_every_entry_point_is_walked():
    """Every console script of setup.py and every ``python -m albert_tf.*`` module with a ``__main__`` is in
    the table."""
    import albert_tf

    root = pathlib.Path(albert_tf.__file__).parent
    modules = {".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__main__")
               for p in root.rglob("*.py")
               if p.name == "__main__.py" or ('if __name__ == "__main__"' in p.read_text()
                                              and "is a library module" not in p.read_text())}
    walked = {prefix[1] for prefix, _, _ in entry_points.ENTRY_POINTS.values()}
    assert modules - walked == set()
    setup = (root.parent / "setup.py").read_text()
    scripts = dict(re.findall(r'"([\w-]+)=([\w.]+):main"', setup))
    assert {k: v.removesuffix(".__main__") for k, v in scripts.items()} == entry_points.CONSOLE_SCRIPTS
    assert set(entry_points.CONSOLE_SCRIPTS.values()) <= walked


if __name__ == "__main__":  # the walk outside pytest, a line per case with its time: python test_entry_points.py DIR
    import tempfile
    import time

    base = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
    ready = prepare(base)
    pattern = re.compile(sys.argv[2]) if len(sys.argv) > 2 else None

    def timed(case):
        start = time.time()
        result = run_one(case, ready, base / "cases" / case[0])
        bad = "Traceback" in result.stdout + result.stderr or result.returncode < 0
        tail = (result.stderr.strip().splitlines() or [""])[-1][:150]
        return f"{time.time() - start:6.1f}s rc={result.returncode} {'TRACEBACK ' if bad else ''}{case[0]}: {tail}"

    todo = [c for c in CASES if pattern is None or pattern.search(c[0])]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        for line in pool.map(timed, todo):
            print(line, flush=True)
