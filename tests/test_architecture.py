"""The package's shape: layered imports without circles, the public API, and every command's ``--help``.

Layers (lowest first); a module may import only from its own layer or lower ones:

    config, files, interrupts, progress, lazy, tokenization, evaluation  <  modeling, data, export  <  checkpoints
    <  training  <  tasks  <  entry points (albert_tf.cli, albert_tf.demo, the package root ``albert_tf``)

Every import counts, also the ones inside functions: a lazy import is still an arrow. A ``__main__`` module
belongs to its package's layer (a ``python -m`` shell in a lower package pointing at ``cli`` would close a circle).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT

from tests.fresh_process import run_reporting_tensorflow

PACKAGE = ROOT / "albert_tf"
LAYERS = {
    "config": 0,
    "files": 0,
    "interrupts": 0,
    "progress": 0,
    "lazy": 0,
    "configs": 0,
    "tokenization": 0,
    "evaluation": 0,
    "modeling": 1,
    "data": 1,
    "export": 1,
    "checkpoints": 2,
    "training": 3,
    "tasks": 4,
    "cli": 5,
    "demo": 5,
    "reproduce": 5,
}
ENTRY = 5


def module_name(path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def all_modules() -> dict[str, object]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    parts = module.split(".")
    if module == "albert_tf":
        return ENTRY
    return LAYERS[parts[1]]


def imports_of(path, module: str, known: set[str]) -> set[str]:
    """albert_tf modules imported anywhere in ``path`` (``from albert_tf.x import y`` -> ``albert_tf.x.y`` when
    ``y`` is a module, else ``albert_tf.x``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        out.update(n for n in names if n == "albert_tf" or n.startswith("albert_tf."))
    out.discard(module)
    return out


def graph() -> dict[str, set[str]]:
    modules = all_modules()
    known = set(modules)
    edges = {}
    for name, path in modules.items():
        targets = set()
        for target in imports_of(path, name, known):
            while target not in known:  # albert_tf.x.y.Z (an object) -> its module
                target = target.rsplit(".", 1)[0]
            targets.add(target)
        edges[name] = targets
    return edges


def test_no_import_from_a_lower_layer_to_a_higher_one():
    violations = [
        f"{src} (layer {layer_of(src)}) imports {dst} (layer {layer_of(dst)})"
        for src, targets in graph().items()
        for dst in sorted(targets)
        if layer_of(dst) > layer_of(src)
    ]
    assert not violations, "\n".join(violations)


def test_no_import_circle():
    edges = graph()
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert not cycles, "\n".join(cycles)


def subpackage(module: str) -> str:
    return module.split(".")[1] if module.count(".") else module


def test_no_circle_between_subpackages():
    """The same at the level of the floors: no two subpackages import each other, directly or around a loop."""
    edges: dict[str, set[str]] = {}
    for src, targets in graph().items():
        for dst in targets:
            a, b = subpackage(src), subpackage(dst)
            if a != b and "albert_tf" not in (a, b):
                edges.setdefault(a, set()).add(b)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(edges.get(node, ()))
        return False

    circles = {" <-> ".join(sorted((a, b))) for a in edges for b in edges[a] if reaches(b, a)}
    assert not circles, "\n".join(sorted(circles))


def test_the_layering_check_catches_a_violation(tmp_path):
    """A negative control: an upward import is reported."""
    fake = PACKAGE / "modeling" / "encoder.py"
    known = set(all_modules())
    upward = "from albert_tf.training.trainer import Trainer\n"
    (tmp_path / "encoder.py").write_text(fake.read_text() + "\n" + upward)
    found = imports_of(tmp_path / "encoder.py", "albert_tf.modeling.encoder", known)
    assert "albert_tf.training.trainer" in found and layer_of("albert_tf.training.trainer") > layer_of(
        "albert_tf.modeling.encoder"
    )


def _run(code_or_args, cwd, timeout=300):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("PYTHONPATH", None)
    return subprocess.run(code_or_args, capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)


@pytest.mark.heavy
def test_public_api_in_a_fresh_process(tmp_path):
    code = (
        "from albert_tf import AlbertConfig, AlbertEncoder, AlbertPretrainer, AlbertClassifier, FullTokenizer, "
        "AlbertPreprocessor; import albert_tf; print(albert_tf.__version__)"
    )
    result = _run([sys.executable, "-c", code], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip()


# Each console script of setup.py: its module, and flags its --help must list.
COMMANDS = {
    "run_pretraining": ("albert_tf.cli.run_pretraining", ["--input_file", "--init_from_group0", "--optimizer"]),
    "run_classifier": ("albert_tf.cli.run_classifier", ["--task_name", "--train_step", "--init_checkpoint"]),
    "run_squad": ("albert_tf.cli.run_squad", ["--version_2_with_negative", "--doc_stride", "--predict_file"]),
    "run_race": ("albert_tf.cli.run_race", ["--max_qa_length", "--middle_only", "--train_step"]),
    "run_tagging": ("albert_tf.cli.run_tagging", ["--train_file", "--label_all_pieces", "--train_step"]),
    "create_pretraining_data": ("albert_tf.cli.create_pretraining_data", ["--dupe_factor", "--sentence_order"]),
    "export_savedmodel": ("albert_tf.cli.export_savedmodel", ["--checkpoint", "--export_dir"]),
    "albert_convert_checkpoint": ("albert_tf.cli.convert_checkpoint", ["--input_format", "--output_format"]),
    "albert_prepare_text": ("albert_tf.cli.prepare_text", ["--input_file", "--min_sentences"]),
    "albert_make_sample_corpus": ("albert_tf.cli.make_sample_corpus", ["--num_documents"]),
    "albert_train_vocab": ("albert_tf.cli.train_vocab", ["--model_prefix", "--vocab_size"]),
}


def test_setup_py_console_scripts_are_all_covered():
    text = (ROOT / "setup.py").read_text()
    block = text[text.index('"console_scripts": [') :]
    block = block[: block.index("]")]
    scripts = {line.split("=")[0].strip().strip('"') for line in block.splitlines() if "=" in line}
    assert scripts - {"albert-demo"} == set(COMMANDS)


@pytest.mark.heavy
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_help_exits_0_and_lists_its_flags(tmp_path, command):
    module, expected = COMMANDS[command]
    code = f"import sys; sys.argv[0] = {command!r}; from {module} import main; main()"
    result = _run([sys.executable, "-c", code, "--help"], cwd=tmp_path)
    assert result.returncode == 0, (result.stdout[-1000:], result.stderr[-2000:])
    for flag in expected:
        assert f"{flag}:" in result.stdout or f"--[no]{flag[2:]}:" in result.stdout, (flag, result.stdout[-3000:])
    assert "--helpfull" not in result.stdout or len(result.stdout.splitlines()) < 400


@pytest.mark.heavy
@pytest.mark.parametrize("command", sorted(COMMANDS) + ["albert-demo"])
def test_every_command_answers_helpfull_with_exit_0(tmp_path, command):
    """absl's --helpfull (every module's flags) works as in any absl program, and --helpshort as --help."""
    module, expected = COMMANDS.get(command, ("albert_tf.demo.__main__", ["--workdir"]))
    code = f"import sys; sys.argv[0] = {command!r}; from {module} import main; sys.exit(main())"
    for flag in ("--helpfull", "--helpshort"):
        if command == "albert-demo" and flag == "--helpshort":
            continue
        result = _run([sys.executable, "-c", code, flag], cwd=tmp_path)
        assert result.returncode == 0, (flag, result.stdout[-1000:], result.stderr[-2000:])
        assert "Unknown command line flag" not in result.stderr
        for name in expected:  # a boolean flag is listed as --[no]name
            assert name in result.stdout or f"--[no]{name[2:]}" in result.stdout, (flag, name)


def _without_tensorflow(command: str, args: list[str], cwd) -> subprocess.CompletedProcess:
    """``command args`` in a fresh interpreter whose last stdout line says whether TensorFlow got imported."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("PYTHONPATH", None)
    return run_reporting_tensorflow(COMMANDS[command][0], command, args, cwd, env)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_and_a_mistyped_flag_answer_without_importing_tensorflow(tmp_path, command):
    """``--help`` and an unknown flag are answered before TensorFlow is imported: at once, not after its start-up
    (export_savedmodel's help lists every task's flags: the task packages import their models on first use)."""
    for args, status in ((["--help"], 0), (["--no_such_flag=1"], 2)):
        result = _without_tensorflow(command, args, tmp_path)
        assert result.returncode == status, (args, result.stdout[-1000:], result.stderr[-2000:])
        assert result.stdout.rstrip().endswith("no tensorflow"), (args, result.stdout[-300:])
        if status:
            assert "no_such_flag" in result.stderr, result.stderr[-1000:]


# A flag combination or value that the run config refuses, per runner, and the words of its one error line.
CONFIG_MISTAKES = {
    "run_classifier": (["--task_name=SST-2", "--output_dir=out"], "at least one of --do_train"),
    "run_squad": (["--do_train", "--output_dir=out", "--learning_rate=-1"], "--learning_rate=-1.0 is out of range"),
    "run_race": (["--do_train", "--output_dir=out", "--train_batch_size=0"], "--train_batch_size must be >= 1"),
    "run_tagging": (["--do_train", "--output_dir=out", "--save_checkpoints_steps=0"],
                    "--save_checkpoints_steps must be >= 1"),
    "run_pretraining": (["--input_file=r", "--albert_config_file=c", "--output_dir=out", "--clip_norm=nan"],
                        "--clip_norm=nan is out of range"),
}


@pytest.mark.parametrize("command", sorted(CONFIG_MISTAKES))
def test_a_runner_refuses_a_flag_mistake_before_importing_tensorflow(tmp_path, command):
    """The runners build their config from plain option classes and check it (``run_config.validate_options``)
    before the task, and TensorFlow with it, is imported: a mistake costs no TensorFlow start-up."""
    args, words = CONFIG_MISTAKES[command]
    result = _without_tensorflow(command, args, tmp_path)
    assert result.returncode == 2, (result.stdout[-1000:], result.stderr[-2000:])
    assert words in result.stderr and result.stderr.count("error:") == 1, result.stderr[-1000:]
    assert result.stdout.rstrip().endswith("no tensorflow"), result.stdout[-300:]
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------------------------- task-free floors
# The shared floors learn a task's specifics from its declaration (albert_tf.checkpoints.heads,
# albert_tf.tasks.registry) and name no task: no identifier, attribute, import or string (docstrings aside) that
# names one of the built-in tasks, their models or their head names.
TASK_FREE = ("albert_tf/checkpoints", "albert_tf/export", "albert_tf/training", "albert_tf/cli/export_savedmodel.py")
TASK_WORDS = re.compile(
    r"(?<![a-z])(glue|squad|race|mrpc|sst|cola|mnli|wnut17|qa_outputs|run_classifier|run_squad|run_race"
    r"|run_tagging)(?![a-z])|multiple_?choice|albertclassifier|albertsquad|alberttagger",
    re.IGNORECASE,
)
# The official checkpoints' top-level fine-tuning head names (as whole strings: the pretraining heads' names end the
# same way).
HEAD_STRINGS = {"output_weights", "output_bias"}
# A file name, not a task's code: where albert-tf 0.1's run_classifier kept what run.json keeps now.
ALLOWED = {"run_classifier.json"}


def task_names_in(path) -> list[str]:
    """``file:line: word`` for every code token of ``path`` that names a task (docstrings are prose, not code)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value) for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
        and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
        and isinstance(node.body[0].value.value, str)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words = [node.id]
        elif isinstance(node, ast.Attribute):
            words = [node.attr]
        elif isinstance(node, ast.alias):
            words = [node.name]
        elif isinstance(node, ast.ImportFrom):
            words = [node.module or ""]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            words = [node.name]
        elif isinstance(node, ast.arg):
            words = [node.arg]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            words = [node.value]
        else:
            continue
        strings = isinstance(node, ast.Constant)
        found += [f"{path.relative_to(ROOT)}:{node.lineno}: {w[:80]!r}" for w in words if w not in ALLOWED
                  and (TASK_WORDS.search(w) or (strings and w in HEAD_STRINGS))]
    return found


def test_shared_floors_name_no_task():
    paths = [p for place in TASK_FREE for p in ([ROOT / place] if place.endswith(".py")
                                                else sorted((ROOT / place).rglob("*.py")))]
    assert len(paths) > 30
    offenders = [line for path in paths for line in task_names_in(path)]
    assert not offenders, "a shared floor names a task (declare it in the task's package instead):\n" + "\n".join(
        offenders)


def test_the_task_name_check_sees_task_names(tmp_path):
    sample = tmp_path / "x.py"
    sample.write_text('"""A docstring may say squad."""\nfrom albert_tf.tasks.race.model import AlbertMultipleChoice\n'
                      'HEADS = {"squad_v1": 1, "output_bias": 2}\n'
                      'if task == "cls/predictions/output_bias" and glue: pass\n', encoding="utf-8")
    sample = sample.rename(ROOT / "tests" / f"_task_name_probe_{os.getpid()}.py")
    try:
        found = task_names_in(sample)
    finally:
        sample.unlink()
    assert len(found) == 5 and not any("docstring" in f or "cls/predictions" in f for f in found), found
