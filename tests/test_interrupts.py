"""Ctrl-C and SIGTERM: one line, exit 130 / 143, nothing half-written, and the same command then finishes the job.

The module's rules in-process (a signal held inside ``deferred`` and raised at its end, a second one at once, the
message), then SIGINT at ten random moments of ``run_pretraining``, ``run_squad`` and ``create_pretraining_data``
through the real command lines: start-up (TensorFlow importing), feature building, training, checkpoint saves.
"""

from __future__ import annotations

import glob
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from bad_inputs import fixtures
from conftest import ROOT

from albert_tf import interrupts

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
PARTIAL_MARKS = (".partial", ".tmp", "-tmp", "_temp")


def test_a_signal_is_interrupted_with_the_shells_exit_status(installed):
    for signum, status in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        with pytest.raises(interrupts.Interrupted) as caught:
            os.kill(os.getpid(), signum)
            time.sleep(1)  # the handler runs at the next instruction; this line is never finished
        assert caught.value.exit_status == status and isinstance(caught.value, KeyboardInterrupt)


def test_deferred_holds_a_signal_until_the_block_ends(installed):
    finished = []
    with pytest.raises(interrupts.Interrupted):
        with interrupts.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            finished.append("the block")  # reached: the signal waits
        finished.append("after")  # not reached: raised at the block's end
    assert finished == ["the block"]


def test_a_second_signal_inside_deferred_stops_at_once(installed):
    finished = []
    with pytest.raises(interrupts.Interrupted):
        with interrupts.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            finished.append("first held")
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
            finished.append("second held")
    assert finished == ["first held"]
    with interrupts.deferred():  # nothing pending is left over for the next block
        pass


def test_the_message_says_where_and_what_to_do(installed):
    assert interrupts.message() == "interrupted; run the same command to resume"
    interrupts.note("at step 57 of 100 (the last checkpoint is step 40)")
    assert interrupts.message() == ("interrupted at step 57 of 100 (the last checkpoint is step 40); run the same "
                                    "command to resume")
    interrupts.advise(interrupts.AGAIN)
    assert interrupts.message().endswith("; nothing was published; run the same command again")


def test_an_error_raised_from_an_interruption_is_one():
    try:
        try:
            raise interrupts.Interrupted(signal.SIGINT)
        except interrupts.Interrupted as e:
            raise ImportError("initialization failed") from e  # what a C extension's import makes of it
    except ImportError as e:
        assert interrupts.cause(e).exit_status == 130
    assert interrupts.cause(ValueError("no")) is None


def test_a_handler_installed_by_someone_else_is_left_alone(installed):
    def mine(signum, frame):
        pass

    signal.signal(signal.SIGTERM, mine)
    interrupts.install()
    assert signal.getsignal(signal.SIGTERM) is mine


_AT_EXIT = """
import atexit, os, signal, sys, time
import albert_tf.cli
from albert_tf.cli import app

def at_exit():  # a Ctrl-C that lands while the interpreter tears down, after the command's work
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)

def main(argv):
    atexit.register(at_exit)
    if sys.argv[-1] == "fail":
        raise ValueError("bad input")
    print("done")

app.run(main, "a command", errors=(ValueError,), argv=sys.argv[:1])
"""


def test_a_command_run_inside_a_process_leaves_no_ignored_signal_behind(installed):
    """``settled`` drops signals in the command's own process only: an ignored SIGINT would be inherited by every
    process started afterwards (a test's subprocesses ignored Ctrl-C in the full run)."""
    from albert_tf.cli import app

    with pytest.raises(SystemExit):
        app.run(lambda argv: 0, "a command", argv=["command"])
    for signum in interrupts.SIGNALS:
        assert signal.getsignal(signum) not in (signal.SIG_IGN, None)
    probe = subprocess.run([sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"],
                           capture_output=True, text=True, timeout=60)
    assert "default_int_handler" in probe.stdout, probe.stdout
    assert interrupts.install()  # a later command in the same process takes the signals again
    assert signal.getsignal(signal.SIGINT) is interrupts._handler


@pytest.mark.parametrize("outcome, status", [("ok", 0), ("fail", 2)])
def test_a_signal_after_the_outcome_is_settled_does_not_change_it(tmp_path, outcome, status):
    """Once a command has finished (or printed its error) a signal during the exit is ignored: the full run saw a
    Ctrl-C land in TensorFlow's teardown kill a finished run_pretraining (exit -2, no line)."""
    script = tmp_path / "command.py"
    script.write_text(_AT_EXIT)
    result = subprocess.run([sys.executable, str(script), outcome], capture_output=True, text=True, cwd=ROOT,
                            env=dict(ENV, PYTHONPATH=ROOT), timeout=120)
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr and "interrupted" not in result.stderr, result.stderr


_SWALLOWED = """
import os, signal, sys, time
import albert_tf.cli
from albert_tf.cli import app

def main(argv):
    try:  # a library's own Python catches the KeyboardInterrupt and raises its own error without it as the cause
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)
    except KeyboardInterrupt:
        pass
    raise RuntimeError("Graph execution error:")

app.run(main, "a command", errors=(RuntimeError,), argv=sys.argv[:1])
"""


def test_an_error_after_a_signal_is_the_interruption(tmp_path):
    """The full run saw a Ctrl-C during a SQuAD training step come back from TensorFlow as ``error: Graph execution
    error:`` with exit status 2: an error that follows a signal is reported as the interruption."""
    script = tmp_path / "command.py"
    script.write_text(_SWALLOWED)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT,
                            env=dict(ENV, PYTHONPATH=ROOT), timeout=120)
    assert result.returncode == 130, result.stderr
    assert result.stderr.strip().splitlines() == ["interrupted; run the same command to resume"], result.stderr


def test_a_later_command_in_the_same_process_forgets_an_earlier_signal(installed):
    from albert_tf.cli import app

    with pytest.raises(interrupts.Interrupted):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)
    assert interrupts.received() is not None

    def fails(argv):
        raise ValueError("bad input")

    with pytest.raises(SystemExit) as stopped:  # the error's own line and status, not an interruption
        app.run(fails, "a command", errors=(ValueError,), argv=["command"])
    assert stopped.value.code == 2 and interrupts.received() is None


def test_a_graph_execution_error_is_told_by_its_own_message():
    import tensorflow as tf

    from albert_tf.cli.app import one_line

    @tf.function
    def gather(index):
        checked = tf.debugging.assert_less(index, 3, message="index past the table")
        with tf.control_dependencies([checked]):  # the check runs first, so its message is the error's
            return tf.gather(tf.range(3), index)

    with pytest.raises(tf.errors.InvalidArgumentError) as caught:
        gather(tf.constant(7))
    assert caught.value.message.startswith("Graph execution error:\n")
    line = one_line(caught.value)
    assert line.startswith("Graph execution error: assertion failed: [index past the table]"), line
    assert one_line(RuntimeError("Graph execution error:")) == "Graph execution error:"


# --------------------------------------------------------------------------------------- the real commands
@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return fixtures.build(tmp_path_factory.mktemp("interrupt_inputs"))


def _command(script, args):
    return [sys.executable, os.path.join(ROOT, script), *args]


def _complete(script, args):
    result = subprocess.run(_command(script, args), capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _interrupt(script, args, tmp, seconds=None, at_step=None, reference=False):
    """Run the command and SIGINT it: ``seconds`` after its start (or at its first progress line, if sooner); or,
    with ``at_step=(target, fraction)``, once its progress reaches step ``target`` (lines ``step N/T``), ``fraction``
    of the last loop's duration later, so that the signal lands inside a loop or a save however fast the machine is at
    the moment; ``reference``: read the progress, send nothing. Returns (exit status, stdout, stderr, (seconds to the
    first progress line, seconds to the end))."""
    env = dict(ENV, PYTHONUNBUFFERED="1")
    with open(tmp / "stderr.txt", "w+", encoding="utf-8") as err:
        start = time.time()
        proc = subprocess.Popen(_command(script, args), stdout=subprocess.PIPE, stderr=err, text=True, env=env,
                                cwd=ROOT)
        lines, first_step, signal_now = [], None, False
        if at_step is None and not reference:
            if seconds is not None:
                # At ``seconds``, or at the first line on stdout (progress: training has begun) if that comes first,
                # so that a moment taken from a slower run of the command still lands before this run's end.
                select.select([proc.stdout], [], [], seconds)
                signal_now = True
        else:
            last = None
            for line in proc.stdout:
                lines.append(line)
                found = re.match(r"step (\d+)/(\d+) ", line)
                if not found:
                    continue
                now = time.time()
                first_step = first_step or now - start
                if reference:
                    break
                target, fraction = at_step
                if int(found.group(1)) >= target:
                    time.sleep(fraction * (now - last if last else 0.0))
                    signal_now = True
                    break
                last = now
        if signal_now and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        lines.append(proc.stdout.read())
        proc.wait(timeout=600)
        elapsed = time.time() - start
        err.seek(0)
        return proc.returncode, "".join(lines), err.read(), (first_step, elapsed)


def _check_clean_stop(code, out, err, folder):
    """One line, exit 130, no traceback; no lock, no half-written file left behind. Returns the line."""
    crash = err.find("Fatal Python error")  # a crash: its stacks, not the list of extension modules after them
    assert code == 130, (code, err[crash:crash + 6000] if crash >= 0 else err[-3000:])
    text = out + err
    assert "Traceback" not in text and "Segmentation" not in text and "Fatal Python" not in text, text[-3000:]
    lines = [line for line in err.splitlines() if line.startswith("interrupted")]
    assert len(lines) == 1 and err.rstrip().endswith(lines[0]), err[-2000:]
    if os.path.isdir(folder):
        assert not os.path.exists(os.path.join(folder, "run.lock"))
        left = [p for p in glob.glob(os.path.join(folder, "**", "*"), recursive=True)
                if any(m in os.path.basename(p) for m in PARTIAL_MARKS)]
        left += glob.glob(os.path.join(folder, "**", ".*"), recursive=True)
        assert not left, left
    return lines[0]


def _same_checkpoints(a, b):
    import tensorflow as tf

    def arrays(prefix):  # the iterator state is a variant tensor; its effect shows in the weights
        reader = tf.train.load_checkpoint(prefix)
        return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()
                if "OBJECT_GRAPH" not in k and "ITERATOR_STATE" not in k}

    ours, theirs = arrays(a), arrays(b)
    assert sorted(ours) == sorted(theirs)
    for key, value in ours.items():
        np.testing.assert_array_equal(value, theirs[key], err_msg=key)


def _chain(script, args, tmp, final, total, loop, seed):
    """The reference run uninterrupted; then ten runs of the same command, each stopped by SIGINT: three during
    start-up (a random moment before the reference run's first progress line, or at this run's own first one if that
    comes sooner), seven at a random step of the first half of the ``total`` (progress every ``loop`` steps), a random
    part of a loop after that step's progress line; then the same command to the end, whose checkpoint must equal the
    reference's. Moments are steps (or capped by them), not bare seconds, so a machine that is busier during the
    reference run than during the rest still stops every run before its end; and as no stop passes the middle, no run
    resumes from a checkpoint so near the end that the rest of it could finish before the signal lands."""
    code, _, err, (first_step, _) = _interrupt(script, args(tmp / "ref"), tmp, reference=True)
    assert code == 0 and first_step, err[-3000:]
    rng = random.Random(seed)
    lines = []
    for i in range(10):
        if i < 3:
            code, out, err, _ = _interrupt(script, args(tmp / "out"), tmp, seconds=rng.uniform(0.3, first_step))
        else:
            at = (rng.randrange(loop, total // 2), rng.uniform(0.0, 0.8))
            code, out, err, _ = _interrupt(script, args(tmp / "out"), tmp, at_step=at)
        lines.append(_check_clean_stop(code, out, err, str(tmp / "out")))
    _complete(script, args(tmp / "out"))
    _same_checkpoints(str(tmp / "ref" / final), str(tmp / "out" / final))
    return lines


@pytest.mark.slow
def test_run_pretraining_sigint_at_ten_moments_resumes_to_the_same_weights(tmp_path, inputs):
    def args(out):
        return [f"--albert_config_file={inputs['config']}", f"--input_file={inputs['records']}",
                f"--output_dir={out}", "--max_seq_length=32", "--max_predictions_per_seq=5", "--train_batch_size=8",
                "--num_train_steps=600", "--steps_per_loop=5", "--save_checkpoints_steps=50", "--num_warmup_steps=0"]

    lines = _chain("run_pretraining.py", args, tmp_path, "ckpt-600", total=600, loop=5, seed=0)
    assert any(" at step " in line and "the last checkpoint is step" in line for line in lines), lines
    assert all(line.endswith("run the same command to resume") for line in lines)


@pytest.mark.slow
def test_run_squad_sigint_at_ten_moments_resumes_to_the_same_weights(tmp_path, inputs):
    def args(out):
        return [f"--train_file={inputs['squad']}/train.json", f"--output_dir={out}",
                f"--albert_config_file={inputs['config']}", f"--spm_model_file={inputs['spm']}",
                "--max_seq_length=32", "--max_query_length=12", "--doc_stride=8", "--version_2_with_negative",
                "--do_train", "--train_step=1200", "--train_batch_size=4", "--save_checkpoints_steps=120",
                "--iterations_per_loop=20", "--warmup_step=0"]

    # 1,200 steps (~5 s of training for this model, ~4 ms a step): a stop at step 600 at the latest leaves the run
    # seconds of work, so a test process that a busy machine schedules late still signals before the run ends (at
    # 300 steps it had under a second: CI saw runs finish first).
    lines = _chain("run_squad.py", args, tmp_path, "ckpt-1200", total=1200, loop=20, seed=1)
    assert any(" at step " in line for line in lines), lines


@pytest.mark.slow
def test_create_pretraining_data_sigint_at_ten_moments_then_the_same_records(tmp_path, inputs):
    def args(out):
        return [f"--input_file={inputs['corpus']}", f"--output_file={out}/train.tfrecord@3",
                f"--spm_model_file={inputs['spm']}", "--max_seq_length=64", "--max_predictions_per_seq=10",
                "--dupe_factor=6", "--num_workers=2", "--chunk_size_mb=0.02"]

    code, _, err, (_, duration) = _interrupt("create_pretraining_data.py", args(tmp_path / "ref"), tmp_path)
    assert code == 0, err[-3000:]
    reference = {name: (tmp_path / "ref" / name).read_bytes() for name in os.listdir(tmp_path / "ref")}
    assert len(reference) == 4  # 3 shards + the sidecar
    out = tmp_path / "out"
    stopped = 0
    rng = random.Random(2)
    for _ in range(10):
        code, stdout, stderr, (_, elapsed) = _interrupt("create_pretraining_data.py", args(out), tmp_path,
                                                        seconds=rng.uniform(0.3, duration))
        if code == 130:
            line = _check_clean_stop(code, stdout, stderr, str(out))
            assert line.endswith("nothing was published (the records appear only complete); run the same command "
                                 "to start again"), line
            stopped += 1
        else:
            assert code == 0, stderr[-3000:]  # the signal came after the end
        # Nothing hidden is left, and a file under a final name is the whole file of the reference.
        for name in os.listdir(out) if out.exists() else []:
            assert (out / name).read_bytes() == reference.get(name), name
        if code == 0:  # the machine is faster now than during the reference: later moments scale to this run
            duration = min(duration, elapsed)
            shutil.rmtree(out)
    assert stopped >= 6
    _complete("create_pretraining_data.py", args(out))
    assert {n: (out / n).read_bytes() for n in os.listdir(out)} == reference


@pytest.mark.slow
def test_a_signal_held_while_the_worker_pool_starts_stops_it_cleanly(inputs, tmp_path):
    """Ctrl-C during ``multiprocessing.Pool(...)`` is held until the pool exists, then raised where the pool is
    terminated and joined: no worker left reading a closed pipe, no 'Exception ignored in Pool.__del__' at exit."""
    script = tmp_path / "pool.py"
    script.write_text(f"""
import multiprocessing, multiprocessing.context, os, signal
from albert_tf import interrupts
from albert_tf.data.pretraining import pipeline
from albert_tf.data.pretraining.chunks import PretrainingDataConfig
from albert_tf.data.pretraining.vocabulary import TokenizerSpec

interrupts.install()
real = multiprocessing.context.SpawnContext.Pool

def pool_then_signal(self, *args, **kwargs):
    pool = real(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGINT)  # arrives inside the pool's start-up block
    return pool

multiprocessing.context.SpawnContext.Pool = pool_then_signal
spec = TokenizerSpec(spm_model_file={inputs['spm']!r})
try:
    list(pipeline._chunk_results(iter([]), None, (PretrainingDataConfig(), spec), 2))
except interrupts.Interrupted as e:
    print("workers left:", len(multiprocessing.active_children()), flush=True)
    interrupts.stop(e)
print("not interrupted")
""")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=ENV, cwd=ROOT,
                            timeout=300)
    assert result.returncode == 130, result.stderr[-3000:]
    assert result.stdout == "workers left: 0\n", result.stdout  # terminated and joined before the stop
    assert result.stderr.strip() == "interrupted; run the same command to resume", result.stderr[-3000:]
