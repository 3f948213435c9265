"""The docs stay true: the paper map (docs/paper-map.md) and README's "Which entry point for which user": every name
imports, every command parses; every relative link of README.md and docs/ resolves; every ``--flag=value`` written in
them is accepted by a command that defines the flag.

Paper map, one table row per idea of the paper: the code column holds `albert_tf.<module>.<name>` spans (the longest
importable module prefix is imported, the rest is a getattr chain, so a rename breaks this test) and file paths
(which must exist); the command column holds commands (and flags of those commands on their own), each command one of

* a console script of setup.py or ``python -m MODULE``: the entry point exists and the command line parses with that
  command's own flags: ``define_flags(fv)`` on a fresh ``absl.flags.FlagValues`` with ``--recipe`` expanded as the
  command expands it (so unknown flags, bad enum values and bad numbers fail; a ``define_flags()`` that only
  defines on absl's global FLAGS runs in one subprocess per command), ``parse_args`` for an argparse command, else
  the flag names that its ``--help`` lists;
* ``pytest FILE [-k EXPR] [--run-slow]``: the file exists and EXPR selects at least one of its test functions, not
  only slow ones unless the command says ``--run-slow``;
* ``python benchmarks/NAME.py --flag ...``: the script exists and defines every flag;
* ``make TARGET``: the Makefile has the target.

A row without any command must say why ("planned" or "not reproduced"). In "Which entry point for which user" the
commands of the code blocks and the inline spans that are commands or `albert_tf.` names are checked the same way.
"""

from __future__ import annotations

import ast
import atexit
import functools
import importlib
import importlib.util
import inspect
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest
from absl import flags

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAPER_MAP_PAGE = ROOT / "docs" / "paper-map.md"
#: Every page a user reads: README, the docs/ pages, the benchmarks' README.
DOC_PAGES = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")), "benchmarks/README.md"]
PAPER_MAP = "## Paper map"
ENTRY_POINTS = "## Which entry point for which user"
MIN_ROWS = 12
NO_COMMAND_REASONS = ("planned", "not reproduced")
# What every albert-tf command line accepts besides its own flags (albert_tf/cli/app.py and absl).
APP_FLAGS = {"recipe", "verbose", "flagfile", "help"}
PYTEST_SWITCHES = {"-q", "-v", "-x", "--run-slow"}
CODE_SPAN = re.compile(r"`([^`]+)`")
NAME = re.compile(r"^albert_tf(\.[A-Za-z_]\w*)+")


# ----------------------------------------------------------------------------------------------- reading README


def section(heading: str, page: pathlib.Path = README) -> str:
    """The text under ``heading`` up to the next ``## `` heading ("" when ``page`` has no such heading)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    if heading not in lines:
        return ""
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end])


def split_row(line: str) -> list[str]:
    """Cells of a markdown table row; a ``|`` inside a code span does not split."""
    cells, cell, in_code = [], [], False
    for ch in line.strip():
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append("".join(cell).strip())
            cell = []
        else:
            cell.append(ch)
    cells.append("".join(cell).strip())
    return cells[1:-1]  # the text before the first and after the last "|" is empty


def table_rows(text: str) -> list[list[str]]:
    """Body rows of the first markdown table in ``text`` (header and ``---`` line dropped)."""
    rows, started = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("|"):
            started = True
            rows.append(split_row(line))
        elif started:
            break
    return rows[2:]


def code_blocks(text: str) -> list[str]:
    """Commands of the fenced code blocks in ``text``, backslash continuations joined."""
    commands = []
    for block in re.findall(r"```(?:bash|sh)?\n(.*?)```", text, re.S):
        for command in block.replace("\\\n", " ").splitlines():
            if command.strip() and not command.lstrip().startswith("#"):
                commands.append(command.strip())
    return commands


PAPER_MAP_ROWS = table_rows(section(PAPER_MAP, PAPER_MAP_PAGE))


# ----------------------------------------------------------------------------------------------- names and paths


def resolve(dotted: str) -> object:
    """Import the longest importable prefix of ``dotted``, then getattr the rest."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        module_name = ".".join(parts[:i])
        try:
            obj = importlib.import_module(module_name)
        except ModuleNotFoundError as e:  # only "this prefix is not a module" moves on to a shorter prefix
            if e.name is None or not (module_name == e.name or module_name.startswith(e.name + ".")):
                raise
            continue
        for depth, attr in enumerate(parts[i:], start=i + 1):
            if not hasattr(obj, attr):
                raise AttributeError(f"{'.'.join(parts[:depth - 1])} has no attribute {attr!r}")
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(f"no module {parts[0]!r}")


def name_problems(dotted: str) -> list[str]:
    try:
        resolve(dotted)
    except (ImportError, AttributeError) as e:
        return [f"`{dotted}`: {e}"]
    return []


def path_problems(path: str) -> list[str]:
    return [] if (ROOT / path).exists() else [f"`{path}`: no such file or folder in the repository"]


# ----------------------------------------------------------------------------------------------- commands


@functools.cache
def console_scripts() -> dict[str, str]:
    """setup.py's console scripts: name -> ``module:function``."""
    return dict(re.findall(r'"([\w-]+)\s*=\s*([\w.]+:\w+)"', (ROOT / "setup.py").read_text(encoding="utf-8")))


def is_command(text: str) -> bool:
    words = text.split()
    if not words:
        return False
    return words[0] in console_scripts() or words[0] in ("pytest", "make") or (
        words[0] == "python" and len(words) > 1 and (words[1] == "-m" or words[1].endswith(".py"))
    )


def flag_name(arg: str) -> str:
    return arg[2:].split("=", 1)[0]


# Defines a command's flags on absl's global FLAGS (a define_flags() without a FlagValues argument), away from the
# test process, whose global FLAGS other tests own; then answers each JSON argv line with "" or absl's error.
FLAG_PARSER = r"""
import importlib, json, sys
from absl import flags
importlib.import_module(sys.argv[1]).define_flags()
for line in sys.stdin:
    flags.FLAGS.unparse_flags()
    try:
        flags.FLAGS(json.loads(line))
        answer = ""
    except flags.Error as e:
        answer = str(e) or type(e).__name__
    print(json.dumps(answer), flush=True)
"""


def _stop(process: subprocess.Popen) -> None:
    process.stdin.close()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


@functools.cache
def global_flags_parser(module_name: str) -> subprocess.Popen:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    process = subprocess.Popen([sys.executable, "-c", FLAG_PARSER, module_name], cwd=ROOT, env=env, text=True,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    atexit.register(_stop, process)
    return process


def parse_with_global_flags(module_name: str, argv: list[str]) -> str:
    """absl's error for ``argv`` against the flags ``module_name.define_flags()`` defines ("" when it parses)."""
    process = global_flags_parser(module_name)
    process.stdin.write(json.dumps(argv) + "\n")
    process.stdin.flush()
    answer = process.stdout.readline()
    if not answer:
        return f"the flag parser of {module_name} exited ({process.poll()}); try python -m {module_name} --help"
    return json.loads(answer)


@functools.cache
def flags_from_help(module_name: str) -> frozenset[str]:
    """Flag names that ``python -m module_name --help`` lists (absl format: ``--[no]name:`` / ``--name:``)."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "-m", module_name, "--help"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, f"python -m {module_name} --help exited {done.returncode}: {done.stderr[-500:]}"
    return frozenset(re.findall(r"^\s*--(?:\[no\])?(\w+):", done.stdout, re.M))


def main_module(module_name: str):
    """The module that ``python -m module_name`` runs (a package's ``__main__``), or None."""
    spec = importlib.util.find_spec(module_name)
    if spec is None:
        return None
    if spec.submodule_search_locations is not None:
        return main_module(module_name + ".__main__")
    module = importlib.import_module(module_name)
    source = inspect.getsource(module)
    return module if re.search(r"""__name__\s*==\s*['"]__main__['"]""", source) else None


def entry_point_problems(command: str, module_name: str, args: list[str], prog: str, run_name: str) -> list[str]:
    """The flags of ``args`` against the command whose code is ``module_name`` (``run_name``: for ``python -m``)."""
    module = importlib.import_module(module_name)
    define_flags = getattr(module, "define_flags", None)
    if define_flags is not None:
        from albert_tf.cli.app import VERBOSE, expand_recipes

        try:
            argv = [prog, *expand_recipes([a for a in args if a != VERBOSE])]
        except ValueError as e:  # UnknownNameError
            return [f"`{command}`: {e}"]
        if not inspect.signature(define_flags).parameters:
            error = parse_with_global_flags(module_name, argv)
            return [f"`{command}`: {error}"] if error else []
        fv = flags.FlagValues()
        define_flags(fv)
        try:
            fv(argv)
        except flags.Error as e:
            return [f"`{command}`: {e}"]
        return []
    parse_args = getattr(module, "parse_args", None)
    if parse_args is not None:  # argparse: exits 2 with a message on a bad flag
        try:
            parse_args(args)
        except SystemExit as e:
            return [f"`{command}`: its argparse parser refuses the arguments (exit {e.code})"]
        return []
    given = [a for a in args if a.startswith("--")]
    if not given:
        return []
    known = flags_from_help(run_name) | (APP_FLAGS if module_name.startswith("albert_tf.cli.") else set())
    return [
        f"`{command}`: --{flag_name(a)} is not a flag of {prog}"
        for a in given
        if flag_name(a) not in known and not (flag_name(a).startswith("no") and flag_name(a)[2:] in known)
    ]


def console_script_problems(command: str, argv: list[str]) -> list[str]:
    module_name, function = console_scripts()[argv[0]].split(":")
    module = importlib.import_module(module_name)
    if not callable(getattr(module, function, None)):
        return [f"`{command}`: setup.py names {module_name}:{function}, which does not exist"]
    return entry_point_problems(command, module_name, argv[1:], argv[0], module_name)


def python_module_problems(command: str, module_name: str, args: list[str]) -> list[str]:
    module = main_module(module_name)
    if module is None:
        return [f"`{command}`: python -m {module_name} runs nothing (no such module, or no __main__)"]
    return entry_point_problems(command, module.__name__, args, f"python -m {module_name}", module_name)


@functools.cache
def collected_tests(path: pathlib.Path) -> dict[str, tuple[str, bool]]:
    """``name -> (class name or "", marked slow)`` for the test functions of a test file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module_slow = any(
        isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets)
        and "slow" in ast.unparse(node.value)
        for node in tree.body
    )

    def slow(fn) -> bool:
        return module_slow or any("mark.slow" in ast.unparse(d) for d in fn.decorator_list)

    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            found[node.name] = ("", slow(node))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for fn in node.body:
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name.startswith("test"):
                    found[fn.name] = (node.name, slow(fn))
    return found


def keyword_selects(expression: str, names: list[str]) -> bool:
    """Whether pytest's ``-k expression`` matches a test whose keywords are ``names`` (substring, any case)."""
    from _pytest.mark.expression import Expression  # the parser pytest itself uses for -k

    lowered = [n.lower() for n in names if n]
    return Expression.compile(expression).evaluate(lambda sub, **kw: any(sub.lower() in n for n in lowered))


def pytest_problems(command: str, args: list[str]) -> list[str]:
    files, expression, run_slow, problems = [], None, False, []
    it = iter(args)
    for arg in it:
        if arg == "-k":
            expression = next(it, "")
        elif arg.startswith("-k"):
            expression = arg[2:]
        elif arg in PYTEST_SWITCHES:
            run_slow = run_slow or arg == "--run-slow"
        elif arg.startswith("-"):
            problems.append(f"`{command}`: option {arg} is not one this test knows how to check")
        else:
            files.append(arg)
    if not files:
        problems.append(f"`{command}`: names no test file")
    for spec in files:
        path, _, node = spec.partition("::")
        if not (ROOT / path).is_file():
            problems.append(f"`{command}`: {path} does not exist")
            continue
        tests = collected_tests(ROOT / path)
        if node and node not in tests:
            problems.append(f"`{command}`: {path} has no test {node}")
            continue
        selected = [
            name for name, (cls, _) in tests.items()
            if (not node or name == node)
            and (expression is None or keyword_selects(expression, [name, cls, pathlib.Path(path).name]))
        ]
        if not selected:
            problems.append(f"`{command}`: -k {expression!r} selects no test of {path}")
        elif not run_slow and all(tests[name][1] for name in selected):
            problems.append(f"`{command}`: every test it selects is marked slow; add --run-slow")
    return problems


def script_problems(command: str, script: str, args: list[str]) -> list[str]:
    path = ROOT / script
    if not path.is_file():
        return [f"`{command}`: {script} does not exist"]
    source = path.read_text(encoding="utf-8")
    return [
        f"`{command}`: {script} defines no flag --{flag_name(a)}"
        for a in args
        if a.startswith("--")
        and f'"--{flag_name(a)}"' not in source
        and not re.search(rf'DEFINE_\w+\(\s*"{flag_name(a)}"', source)
    ]


def make_problems(command: str, args: list[str]) -> list[str]:
    targets = [a for a in args if "=" not in a and not a.startswith("-")]
    if not targets:
        return [f"`{command}`: names no target"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return [f"`{command}`: the Makefile has no target {t}" for t in targets
            if not re.search(rf"^{re.escape(t)}\s*:", makefile, re.M)]


def command_problems(command: str) -> list[str]:
    try:
        argv = shlex.split(command, comments=True)
    except ValueError as e:
        return [f"`{command}`: {e}"]
    if not argv:
        return [f"`{command}`: empty"]
    head, rest = argv[0], argv[1:]
    if head == "pytest":
        return pytest_problems(command, rest)
    if head == "make":
        return make_problems(command, rest)
    if head == "python" and rest[:2] == ["-m", "pytest"]:
        return pytest_problems(command, rest[2:])
    if head == "python" and len(rest) >= 2 and rest[0] == "-m":
        return python_module_problems(command, rest[1], rest[2:])
    if head == "python" and rest and rest[0].endswith(".py"):
        return script_problems(command, rest[0], rest[1:])
    if head in console_scripts():
        return console_script_problems(command, argv)
    return [f"`{command}`: not a command of this repository (console script, python -m, pytest, benchmark, make)"]


def loose_flag_problems(loose_flags: list[str], commands: list[str], where: str) -> list[str]:
    """A flag written on its own must be accepted by one of the commands written beside it."""
    return [
        f"`{flag}` is a flag of no command in {where}"
        for flag in loose_flags
        if not any(is_command(c) and not command_problems(f"{c} {flag}") for c in commands)
    ]


# ----------------------------------------------------------------------------------------------- tests


def test_paper_map_has_enough_rows_of_three_columns():
    assert section(PAPER_MAP, PAPER_MAP_PAGE), f"docs/paper-map.md has no {PAPER_MAP!r} section"
    assert len(PAPER_MAP_ROWS) >= MIN_ROWS, f"the paper map has {len(PAPER_MAP_ROWS)} rows, fewer than {MIN_ROWS}"
    bad = [row[0] for row in PAPER_MAP_ROWS if len(row) != 3]
    assert not bad, f"rows without exactly 3 cells (idea | code | command): {bad}"


@pytest.mark.parametrize("row", PAPER_MAP_ROWS, ids=[f"row{i + 1}" for i in range(len(PAPER_MAP_ROWS))])
def test_paper_map_code_exists(row):
    idea, code = row[0], row[1]
    spans = CODE_SPAN.findall(code)
    problems = []
    for span in spans:
        if "/" in span:
            problems += path_problems(span)
        elif NAME.fullmatch(span):
            problems += name_problems(span)
        else:
            problems.append(f"`{span}` is neither an albert_tf.<module>.<name> nor a repository path")
    if not any(NAME.fullmatch(s) for s in spans):
        problems.append("no albert_tf.<module>.<name> in the code column")
    assert not problems, f"paper map row {idea!r}:\n" + "\n".join(problems)


@pytest.mark.parametrize("row", PAPER_MAP_ROWS, ids=[f"row{i + 1}" for i in range(len(PAPER_MAP_ROWS))])
def test_paper_map_commands_exist(row):
    idea, shown_by = row[0], row[2]
    spans = CODE_SPAN.findall(shown_by)
    commands = [s for s in spans if not s.startswith("--")]
    problems = [p for command in commands for p in command_problems(command)]
    problems += loose_flag_problems([s for s in spans if s.startswith("--")], commands, "this cell")
    if not commands and not any(reason in shown_by for reason in NO_COMMAND_REASONS):
        problems.append(f"no command, and it does not say why ({' / '.join(NO_COMMAND_REASONS)})")
    assert not problems, f"paper map row {idea!r}:\n" + "\n".join(problems)


def test_entry_point_section_commands_and_names_exist():
    text = section(ENTRY_POINTS)
    assert text, f"README.md has no {ENTRY_POINTS!r} section"
    blocks = code_blocks(text)
    assert len(blocks) >= 3, "expected a first command (a code block) for each kind of user"
    spans = CODE_SPAN.findall(re.sub(r"```.*?```", "", text, flags=re.S))
    commands = blocks + [s for s in spans if is_command(s)]
    problems = [p for command in commands for p in command_problems(command)]
    problems += loose_flag_problems([s for s in spans if s.startswith("--")], commands, "this section")
    for span in spans:
        match = NAME.match(span)
        if match and not is_command(span):
            problems += name_problems(match.group(0))
    assert not problems, "\n".join(problems)


@pytest.mark.heavy
def test_the_checker_catches_a_wrong_name_flag_and_test():
    """The checks above are not vacuous: each kind of mistake is reported."""
    assert not name_problems("albert_tf.modeling.encoder.AlbertEncoder")
    assert name_problems("albert_tf.modeling.encoder.AlbertEncoderr")
    assert name_problems("albert_tf.modeling.encoderr.AlbertEncoder")
    assert not command_problems("run_pretraining --sharing=attention --recipe=pretrain_small_cpu")
    assert command_problems("run_pretraining --sharing=everything")
    assert command_problems("run_pretraining --no_such_flag=1")
    assert command_problems("run_classifier --recipe=glue/no_such_task")
    assert not command_problems("create_pretraining_data --sentence_order=nsp --nodo_lower_case")
    assert command_problems("create_pretraining_data --sentence_order=nothing")
    assert command_problems("create_pretraining_data --no_such_flag")
    assert not command_problems("python -m albert_tf.tasks.squad span_upper_bound --predict_file=dev.json")
    assert command_problems("python -m albert_tf.tasks.squad span_upper_bound --no_such_flag")
    assert not command_problems("python -m albert_tf.demo --stages=table1")
    assert command_problems("python -m albert_tf.demo --no_such_flag")
    assert command_problems("python -m albert_tf.no_such_module")
    assert not command_problems("pytest tests/test_modeling.py -k sharing_ablation")
    assert command_problems("pytest tests/test_modeling.py -k no_such_test")
    assert command_problems("pytest tests/test_demo_output.py -k runs_twice")  # slow only, without --run-slow
    assert command_problems("python benchmarks/profile_encoder.py --no_such_flag=1")
    assert command_problems("make no_such_target")
    assert command_problems("no_such_command --flag")


# ------------------------------------------------------------------------------------ flag values written anywhere

FLAG_VALUE_SPAN = re.compile(r"^--(\w+)=(\S+)$")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*$|\|")  # --steps=N, --tpu=NAME, --strategy=a|b|c: not literal values


@functools.cache
def console_flag_names() -> dict[str, frozenset[str]]:
    """Each console script that has flags: the names it defines (``define_flags`` on a fresh FlagValues, or, for one
    that defines on absl's global FLAGS, its ``--help``)."""
    out = {}
    for script, target in console_scripts().items():
        module_name = target.split(":")[0]
        define_flags = getattr(importlib.import_module(module_name), "define_flags", None)
        if define_flags is None:
            continue
        if inspect.signature(define_flags).parameters:
            fv = flags.FlagValues()
            define_flags(fv)
            out[script] = frozenset(fv)
        else:
            out[script] = flags_from_help(module_name)
    return out


def flag_value_problems(spans: list[str], where: str) -> list[str]:
    """A ``--flag=value`` span whose flag some console script defines must be accepted, value and all, by one of them
    (an enum value the flag refuses, such as ``--mixed_precision=bfloat16``, is reported)."""
    problems = []
    for span in spans:
        match = FLAG_VALUE_SPAN.match(span)
        if not match or PLACEHOLDER.search(match.group(2)):
            continue
        scripts = [script for script, names in console_flag_names().items() if match.group(1) in names]
        # no script: a flag of a benchmark script or a python -m command (checked elsewhere)
        problems += loose_flag_problems([span], scripts, where) if scripts else []
    return problems


@pytest.mark.heavy
@pytest.mark.parametrize("doc", DOC_PAGES)
def test_flag_values_written_in_the_docs_are_accepted(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    spans = CODE_SPAN.findall(re.sub(r"```.*?```", "", text, flags=re.S))  # inline spans (blocks: other tests)
    if doc in ("docs/fine-tuning.md", "benchmarks/README.md"):  # pages that must keep their flag examples
        assert len([s for s in spans if FLAG_VALUE_SPAN.match(s)]) >= 3
    problems = flag_value_problems(spans, doc)
    assert not problems, "\n".join(problems)
    assert flag_value_problems(["--mixed_precision=bfloat16"], doc)  # the check is not vacuous
    assert not flag_value_problems(["--mixed_precision=mixed_bfloat16", "--bucket_lengths=none"], doc)


def test_the_user_docs_hold_the_flag_examples_the_readme_held():
    """README.md and docs/ together keep at least the 20 inline ``--flag=value`` examples README held alone before
    its sections moved to docs/, so the check above is not vacuous."""
    spans = [s for doc in DOC_PAGES if doc != "benchmarks/README.md"
             for s in CODE_SPAN.findall(re.sub(r"```.*?```", "", (ROOT / doc).read_text(encoding="utf-8"), flags=re.S))]
    assert len([s for s in spans if FLAG_VALUE_SPAN.match(s)]) >= 20


LINK = re.compile(r"\]\(([^)\s]+)\)")


def link_problems(doc: str) -> list[str]:
    """Relative links of ``doc`` whose file does not exist, or whose ``#anchor`` names no heading of it."""
    page = ROOT / doc
    problems = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            problems.append(f"{doc}: link to {target}: no such file")
        elif anchor and file.suffix == ".md":
            headings = [re.sub(r"[^\w\- ]", "", h.strip("# ").lower()).replace(" ", "-")
                        for h in file.read_text(encoding="utf-8").splitlines() if h.startswith("#")]
            if anchor not in headings:
                problems.append(f"{doc}: link to {target}: no such heading")
    return problems


@pytest.mark.parametrize("doc", DOC_PAGES)
def test_every_relative_link_resolves(doc):
    assert not link_problems(doc), "\n".join(link_problems(doc))


def test_the_link_check_sees_a_broken_link(tmp_path, monkeypatch):
    page = ROOT / "docs" / "index.md"
    assert "](missing-page.md)" not in page.read_text(encoding="utf-8")
    monkeypatch.setattr(pathlib.Path, "read_text", lambda self, encoding=None: "see [x](missing-page.md), [y](#nope)")
    assert len(link_problems("docs/index.md")) == 2


def test_readme_stays_a_front_page():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


@pytest.mark.parametrize("doc", DOC_PAGES)
def test_commands_in_the_docs_code_blocks_parse(doc):
    """Each line of a ``bash`` code block that starts with a console script parses with that command's flags."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    commands = [re.sub(r"\s+#.*$", "", c) for c in code_blocks(text) if is_command(c)]
    problems = [p for command in commands for p in command_problems(command)]
    assert not problems, "\n".join(problems)


@pytest.mark.heavy
def test_the_docs_build_as_a_site(tmp_path):
    """``mkdocs build`` (mkdocs.yml) makes a page of every docs/*.md, and the nav lists every page."""
    pytest.importorskip("mkdocs")
    import yaml

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    listed = {page for entry in nav for page in entry.values()}
    assert listed == {p.name for p in (ROOT / "docs").glob("*.md")}
    site = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(ROOT / "mkdocs.yml"),
                             "-d", str(site)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    for page in listed:
        built = site / ("index.html" if page == "index.md" else page[:-3])
        assert (built if page == "index.md" else built / "index.html").exists(), page


def test_no_docs_page_links_out_of_docs():
    """mkdocs builds only docs/: a link to ../README.md (or any file outside docs/) is dead on the built site, so
    the pages name such files in backticks instead."""
    offenders = [f"{page.name}: {m.group(0)}" for page in sorted((ROOT / "docs").glob("*.md"))
                 for m in re.finditer(r"\]\(\.\./[^)]*\)", page.read_text(encoding="utf-8"))]
    assert not offenders, offenders
