"""The package as a user installs it: a wheel in a fresh venv, commands run from an empty directory.

The wheel is built from a copy of the source tree (``pip wheel --no-deps --no-build-isolation``) and installed
without dependencies into a temporary venv whose ``.pth`` file points at this test venv's site-packages, so
TensorFlow and friends come from there while ``albert_tf`` and the console scripts come only from the wheel (the
editable install of the checkout is not seen: ``.pth`` files of an added directory are not processed).

* every console script the wheel declares answers ``--help`` with exit 0, lists its own flags and prints none of
  TensorFlow's start-up banners;
* the pipeline block of ``docs/pipeline.md`` (between ``<!-- pipeline:begin -->`` and ``<!-- pipeline:end -->``)
  runs exactly as written, and leaves what the page says it leaves; run again in the same folder, each of its
  commands resumes or keeps what the first run finished (that second run goes through the fork server,
  ``tests/commands.py``: the same command lines, word for word as bash splits them, each the wheel's console script
  run as ``__main__``, without starting Python and TensorFlow again for each).
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
import sysconfig

import commands
import pytest
from conftest import ROOT
from test_demo_output import CPP_LOG, FOREIGN

pytestmark = pytest.mark.slow

# Console script -> flags its --help must list (its own, not the shared trainer's only).
OWN_FLAGS = {
    "albert-demo": ["--stages"],
    "run_pretraining": ["--input_file", "--masked_lm_budget", "--max_predictions_per_seq"],
    "run_classifier": ["--task_name", "--albert_hub_module_handle", "--export_dir"],
    "run_squad": ["--version_2_with_negative", "--predict_file", "--null_score_diff_threshold"],
    "run_race": ["--max_qa_length", "--high_only", "--data_dir"],
    "run_tagging": ["--train_file", "--tag_scheme", "--window_stride"],
    "create_pretraining_data": ["--input_file", "--dupe_factor", "--sentence_order"],
    "export_savedmodel": ["--task", "--export_dir"],
    "albert_convert_checkpoint": ["--input_format", "--output_format", "--spm_model_file"],
    "albert_train_vocab": ["--model_prefix", "--vocab_size"],
    "albert_prepare_text": ["--input_file", "--min_sentences"],
    "albert_make_sample_corpus": ["--documents_dir", "--glue_dir", "--num_documents"],
}
BANNER = re.compile(r"absl::InitializeLog|oneDNN custom operations|cuda drivers|cpu_feature_guard")
SOURCES = ("setup.py", "pyproject.toml", "README.md", "LICENSE", "albert_tf")


def _run(args, cwd, env, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, cwd=str(cwd), env=env, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """``(venv bin dir, env, entry points)`` of the wheel installed in a fresh venv."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif path.exists():
            shutil.copy(path, src / name)
    built = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                  "-w", str(base / "dist"), str(src)], base, os.environ)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (base / "dist").glob("albert_tf-*.whl")
    venv = base / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], base, os.environ)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], base,
                   os.environ).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (base / "venv" / purelib.split(str(venv) + os.sep, 1)[1] / "test_venv.pth").write_text("\n".join(sorted(ours)))
    install = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                    "--no-index", str(wheel)], base, os.environ)
    assert install.returncode == 0, install.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TF_CPP_MIN_LOG_LEVEL")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    (dist_info,) = [p for p in os.listdir(purelib) if p.startswith("albert_tf-") and p.endswith(".dist-info")]
    parser = configparser.ConfigParser()
    parser.read(os.path.join(purelib, dist_info, "entry_points.txt"))
    scripts = sorted(parser["console_scripts"])
    return venv / "bin", env, scripts


def test_the_wheel_is_what_runs(installed, tmp_path):
    bin_dir, env, scripts = installed
    where = _run([str(bin_dir / "python"), "-c", "import albert_tf, albert_tf.configs as c; "
                  "print(albert_tf.__file__); print(albert_tf.__version__); print(c.recipes())"], tmp_path, env)
    assert where.returncode == 0, where.stderr[-2000:]
    path, version, recipes = where.stdout.strip().splitlines()
    assert path.startswith(str(bin_dir.parent)) and version == "0.1.0"
    assert "glue/mrpc" in recipes and "pretrain_base" in recipes and "squad/v2" in recipes and "race" in recipes
    assert sorted(OWN_FLAGS) == scripts, "a console script without a --help check (or a check for none)"


@pytest.mark.parametrize("script", sorted(OWN_FLAGS))
def test_console_script_help(installed, tmp_path, script):
    bin_dir, env, _ = installed
    result = _run([str(bin_dir / script), "--help"], tmp_path, env)
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-2000:])
    for flag in OWN_FLAGS[script]:
        assert re.search(rf"(^|\s)(--{flag[2:]}|--\[no\]{flag[2:]})\b", result.stdout), (flag, result.stdout[-3000:])
    assert not BANNER.search(result.stderr), result.stderr[-2000:]
    assert not list(tmp_path.iterdir()), "--help wrote files"


def _readme_pipeline() -> str:
    text = (ROOT / "docs" / "pipeline.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- pipeline:begin -->\s*```bash\n(.*?)```\s*<!-- pipeline:end -->", text, re.S)
    assert block, "docs/pipeline.md has no pipeline block"
    return block.group(1)


def _pipeline_commands(block: str, cwd) -> list[list[str]]:
    """The block's command lines (continuations joined), each as the words bash passes to the command: bash itself
    splits them (quotes, globs in ``cwd``), so they are the argv the block's own run gave."""
    lines = [line.strip() for line in block.replace("\\\n", " ").splitlines()]
    out = []
    for line in filter(None, lines):
        words = subprocess.run(["bash", "-c", f"printf '%s\\0' {line}"], cwd=cwd, capture_output=True, check=True)
        out.append(words.stdout.decode("utf-8").split("\0")[:-1])
    return out


def _as_command(words: list[str], bin_dir) -> list[str]:
    """``words`` (a console script or ``python -c``, then its arguments) as the arguments of :func:`commands.run`:
    the wheel's console script file itself (run as ``__main__``, as its shebang would), or ``-c`` and the code."""
    if words[0] == "python":
        assert words[1] == "-c", words
        return words[1:]
    return [str(bin_dir / words[0]), *words[1:]]


def _own_lines_only(output: str, attempt: str, cpp_log_lines_too: bool = True) -> None:
    assert "Traceback" not in output and not BANNER.search(output), (attempt, output[-4000:])
    # Only the commands' own lines: no absl prefixes, TensorFlow C++ notices or library warnings.
    foreign = [line for line in output.splitlines()
               if FOREIGN.search(line) and (cpp_log_lines_too or not CPP_LOG.search(line))]
    assert not foreign, (attempt, "\n".join(foreign[:20]))


def test_readme_pipeline_runs_as_written(installed, tmp_path):
    bin_dir, env, _ = installed
    script = tmp_path / "pipeline.sh"
    script.write_text("set -euo pipefail\n" + _readme_pipeline(), encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    result = _run(["bash", str(script)], work, env, timeout=1200)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    _own_lines_only(output, "first")
    # The block again in the same folder (a user runs it again: after an interruption, to show someone): every
    # command succeeds, and the second run resumes or keeps what the first finished.
    again = []
    for words in _pipeline_commands(_readme_pipeline(), work):
        done = commands.run(_as_command(words, bin_dir), cwd=work, env=env, timeout=1200)
        assert done.returncode == 0, (words, (done.stdout + done.stderr)[-4000:])
        again.append(done.stdout + done.stderr)
    output = "".join(again)
    _own_lines_only(output, "second", cpp_log_lines_too=False)
    assert "is the export of" in output and "holds the export of" in output and "nothing left to train" in output
    # What docs/pipeline.md says the block leaves (no eval/ events: the block runs no --do_eval).
    assert sorted(p.name for p in (work / "records").iterdir()) == [
        "train.tfrecord-00000-of-00002", "train.tfrecord-00001-of-00002", "train.tfrecord.json"]
    assert (work / "out" / "pretrain" / "ckpt-20.index").exists()
    assert list((work / "out" / "pretrain" / "train").glob("events.out.tfevents.*"))
    assert not (work / "out" / "pretrain" / "eval").exists()
    assert (work / "out" / "sst-2" / "eval_results.json").exists() and (work / "out" / "sst-2" / "SST-2.tsv").exists()
    assert list((work / "out" / "sst-2" / "eval").glob("events.out.tfevents.*"))
    assert any((work / "out" / "sst-2" / "export").glob("*/saved_model.pb"))
    for name in ("encoder", "preprocessor"):
        assert (work / "out" / "hub" / name / "saved_model.pb").exists()
    assert {"model.safetensors", "config.json", "spiece.model", "tokenizer_config.json"} <= {
        p.name for p in (work / "out" / "hf").iterdir()}
    # The exported Hugging Face directory is usable by transformers as the README says.
    transformers = pytest.importorskip("transformers")
    tok = transformers.AutoTokenizer.from_pretrained(str(work / "out" / "hf"))
    assert len(tok) == 256 and tok("Anna buys bread.")["input_ids"][0] == 2  # [CLS]
