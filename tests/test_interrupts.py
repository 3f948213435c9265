"""Ctrl-C and SIGTERM: one line, exit 130 / 143, nothing half-written, and the same command then finishes the job.

The module's rules in-process (a signal held inside ``deferred`` and raised at its end, a second one at once, the
message), then SIGINT at five moments of ``run_pretraining`` and of ``run_squad`` and ten of
``create_pretraining_data`` through the real command lines: start-up (TensorFlow importing), data and model
building, training, checkpoint saves, the worker pool, the records written.

Each moment is an event of the command, most of them picked at random among the reference run's: a library loaded
(read from ``/proc/<pid>/maps``), its signal handlers in place (``SigCgt``), the output folder's lock taken, a
progress line, a checkpoint's files, a child process, the partial records' size. The signal is sent when the event
happens; every wait is bounded by a timeout that only a hang reaches. A moment of start-up runs the command in a
fresh interpreter; the others run through the fork server (``tests/commands.py``), except create_pretraining_data's,
which stops differently where TensorFlow is loaded (see its test).
"""

from __future__ import annotations

import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import commands
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
#: Bounds every wait on a command; only a hang reaches it (a busy machine makes a test slower, never red).
TIMEOUT = 600
#: How often a wait looks for its event (a line, a file, a child process, a library loaded).
LOOK_S = 0.005

#: A command run through the fork server as ``python script.py ARGS`` runs it. The server imported albert_tf.cli,
#: whose import installs the Ctrl-C and SIGTERM handlers, before it forked, and the child starts with Python's own
#: handlers: this installs them again, as that import does in a fresh interpreter. stdout is line-buffered (what
#: PYTHONUNBUFFERED=1 does; the server cannot take it), so a progress line is in the capture file once printed.
AS_SCRIPT = """\
import os, runpy, sys
sys.stdout.reconfigure(line_buffering=True)
from albert_tf import interrupts
interrupts.install()
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(sys.argv[0])
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def start_script(script, args):
    """``python <ROOT>/<script> ARGS`` through the fork server (:data:`AS_SCRIPT`): a :class:`commands.Command`."""
    return commands.Command(["-c", AS_SCRIPT, os.path.join(ROOT, script), *map(str, args)], env=command_env(),
                            cwd=ROOT)


def command_env():
    """The environment of a command, read now: the fork server refuses a start-up variable that differs from its
    own, and an import (scikit-learn's) sets one in this process after this module was imported."""
    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return fixtures.build(tmp_path_factory.mktemp("interrupt_inputs"))


def _command(script, args):
    return [sys.executable, os.path.join(ROOT, script), *args]


def _complete(script, args):
    result = commands.run([os.path.join(ROOT, script), *args], env=command_env(), cwd=ROOT, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


# ------------------------------------------------------------------ events of a process, read from /proc
def handlers_installed(pid):
    """Whether process ``pid`` has albert-tf's signal handlers in place: it catches SIGTERM (Python leaves SIGTERM
    at its default; :func:`albert_tf.interrupts.install` routes it and Ctrl-C to the one-line stop)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            caught = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return False
    return bool(caught >> (signal.SIGTERM - 1) & 1)


def _maps(pid):
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _libraries(pid):
    """The shared objects process ``pid`` has loaded so far (each appears in its memory map as it is loaded)."""
    found = (line.split(None, 5) for line in _maps(pid).splitlines())
    return {fields[5] for fields in found if len(fields) == 6 and ".so" in fields[5]}


def children(pid) -> list[int]:
    """The pids of the processes ``pid`` has started that still run (a pool's workers, multiprocessing's resource
    tracker)."""
    try:
        found = []
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
                found += [int(child) for child in f.read().split()]
        return found
    except OSError:  # the process or one of its threads has ended
        return []


class _Fresh:
    """The command in a fresh interpreter (``subprocess``: a signal during its start-up, TensorFlow importing, is
    only that there), stdout and stderr to files of ``folder``; as a context, killed on the way out if it still
    runs (a failed check)."""

    def __init__(self, script, args, folder):
        folder.mkdir(parents=True, exist_ok=True)
        self.stdout, self.stderr = folder / "stdout.txt", folder / "stderr.txt"
        with open(self.stdout, "w") as out, open(self.stderr, "w") as err:
            self.proc = subprocess.Popen(_command(script, args), stdout=out, stderr=err, cwd=ROOT,
                                         env=dict(ENV, PYTHONUNBUFFERED="1"))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def wait_for(self, happened):
        """Look at ``happened()`` every LOOK_S until it is true (returned) or the command has ended (None)."""
        deadline = time.monotonic() + TIMEOUT
        while self.proc.poll() is None:
            found = happened()
            if found:
                return found
            assert time.monotonic() < deadline, f"the command's event did not come in {TIMEOUT} s"
            try:
                self.proc.wait(LOOK_S)  # returns at once if the command ends
            except subprocess.TimeoutExpired:
                pass
        return happened() or None

    def printed(self):
        return self.stdout.stat().st_size > 0

    def finish(self, signum=None):
        """Send ``signum`` (unless the command has ended) and wait for the end: (exit status, stdout, stderr)."""
        if signum is not None and self.proc.poll() is None:
            self.proc.send_signal(signum)
        code = self.proc.wait(TIMEOUT)
        return code, self.stdout.read_text(), self.stderr.read_text()


def _reference(script, args, folder):
    """The command uninterrupted in a fresh interpreter: (exit status, stdout, stderr, its start-up events), the
    events being the libraries it loaded from the moment its signal handlers were in place until its first line on
    stdout (TensorFlow's and the rest of the stack's, for a training command)."""
    with _Fresh(script, args, folder) as run:
        run.wait_for(lambda: handlers_installed(run.proc.pid))
        before = _libraries(run.proc.pid)
        run.wait_for(run.printed)
        loaded = _libraries(run.proc.pid) - before
        return (*run.finish(), sorted(loaded))


def _interrupt_at_startup(script, args, folder, library):
    """SIGINT the command, a fresh interpreter, during its start-up: once its handlers are in place and it has loaded
    ``library`` (None: at once then), or at its first line on stdout should ``library`` not come before it."""
    with _Fresh(script, args, folder) as run:
        run.wait_for(lambda: handlers_installed(run.proc.pid) and (
            library is None or run.printed() or library in _maps(run.proc.pid)))
        return run.finish(signal.SIGINT)


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


# ------------------------------------------------------------------ training commands
_STEP = re.compile(r"^step (\d+)/\d+ ", re.MULTILINE)
_SAVED = re.compile(r"saved checkpoint \S*ckpt-(\d+)$", re.MULTILINE)


def training_events(stdout, folder, before=()):
    """A training run's events so far, as keys in the order they come: its progress lines ``step N/T`` (N, 0) and
    the checkpoints it has written, ``ckpt-N.index`` in ``folder`` not among ``before`` (N, 1): the save follows
    the line of its step."""
    keys = [(int(n), 0) for n in _STEP.findall(stdout)]
    for path in glob.glob(os.path.join(folder, "ckpt-*.index")):
        if path not in before:
            keys.append((int(path[: -len(".index")].rsplit("-", 1)[1]), 1))
    return keys


def holds_lock(pid, folder):
    """Whether process ``pid`` holds the run lock of ``folder`` (its ``run.lock`` names it): a training command
    takes it before it builds its data and model (and traces its training step)."""
    try:
        with open(os.path.join(folder, "run.lock"), encoding="utf-8") as f:
            return json.load(f).get("pid") == pid
    except (OSError, ValueError):  # not there, or being written
        return False


def _interrupt_in_training(script, args, folder, target):
    """SIGINT the command (through the fork server) at the reference run's event ``target``, or at the first later
    one this run reaches (a resumed run starts after its checkpoint): right after its progress line ``step N/T``,
    key (N, 0), so that the signal lands in the next loop or in the save that follows; or as its ckpt-N.index
    appears, key (N, 1), in the middle of the save (the state file naming it comes next). ``target`` None: once it
    holds the folder's lock (it builds its data and model and traces its training step next)."""
    before = set(glob.glob(os.path.join(folder, "ckpt-*.index")))
    command = start_script(script, args)
    try:
        if target is None:
            command.wait_for(lambda: holds_lock(command.pid, folder), TIMEOUT)
        else:
            command.wait_for(lambda: any(key >= target for key in training_events(command.output()[0], folder,
                                                                                  before)), TIMEOUT)
        command.send_signal(signal.SIGINT)
        code = command.wait(TIMEOUT)
        out, err = command.output()
    finally:
        command.close()
    return code, out, err


def _chain(script, args, tmp, final, total, seed):
    """The reference run uninterrupted (a fresh interpreter); then five runs of the same command, each stopped by
    SIGINT at an event, one in each state a run passes through, the events drawn at random among the reference
    run's: two during start-up, in a fresh interpreter (once its handlers are in place, and as it loads one of the
    libraries the reference loaded then: TensorFlow and the rest of the stack importing); one as it builds its data
    and model (once it holds the output folder's lock); two during training, in the order they came: after a
    progress line that follows the first save (the signal lands in the next loop, or in the save that follows), and
    as a checkpoint's files appear (in the middle of a save). Training moments are in the first half of the
    ``total`` steps, so that no run resumes from a checkpoint so near the end that the rest could finish before the
    signal lands. The last three run through the fork server (TensorFlow imported already). Then the same command
    to the end, whose checkpoint must equal the reference's."""
    code, out, err, libraries = _reference(script, args(tmp / "ref"), tmp / "logs" / "ref")
    assert code == 0, err[-3000:]
    assert libraries, "the reference run loaded no library between its handlers and its first progress line"
    saves = [(int(n), 1) for n in _SAVED.findall(err) if int(n) < total // 2]  # the checkpoints it logged
    assert saves, err[-2000:]
    lines = [key for key in training_events(out, str(tmp / "ref")) if key[1] == 0 and saves[0][0] < key[0] < total // 2]
    assert lines, out[-2000:]
    rng = random.Random(seed)
    startup = [None, rng.choice(libraries)]
    # In the order they come, so that each run has training of its own left before its moment.
    training = [None, *sorted([rng.choice(lines), rng.choice(saves)])]
    stops = []
    for i, library in enumerate(startup):
        code, out, err = _interrupt_at_startup(script, args(tmp / "out"), tmp / "logs" / str(i), library)
        stops.append(_check_clean_stop(code, out, err, str(tmp / "out")))
    for target in training:
        code, out, err = _interrupt_in_training(script, args(tmp / "out"), str(tmp / "out"), target)
        stops.append(_check_clean_stop(code, out, err, str(tmp / "out")))
    _complete(script, args(tmp / "out"))
    _same_checkpoints(str(tmp / "ref" / final), str(tmp / "out" / final))
    return stops


@pytest.mark.slow
def test_run_pretraining_sigint_at_five_moments_resumes_to_the_same_weights(tmp_path, inputs):
    def args(out):
        return [f"--albert_config_file={inputs['config']}", f"--input_file={inputs['records']}",
                f"--output_dir={out}", "--max_seq_length=32", "--max_predictions_per_seq=5", "--train_batch_size=8",
                "--num_train_steps=600", "--steps_per_loop=5", "--save_checkpoints_steps=50", "--num_warmup_steps=0"]

    # 600 steps (a few ms each): a stop at step 300 at the latest leaves the run a second or more of training, so a
    # test process that a busy machine schedules late still signals it before its end.
    lines = _chain("run_pretraining.py", args, tmp_path, "ckpt-600", total=600, seed=0)
    assert any(" at step " in line and "the last checkpoint is step" in line for line in lines), lines
    assert all(line.endswith("run the same command to resume") for line in lines)


@pytest.mark.slow
def test_run_squad_sigint_at_five_moments_resumes_to_the_same_weights(tmp_path, inputs):
    def args(out):
        return [f"--train_file={inputs['squad']}/train.json", f"--output_dir={out}",
                f"--albert_config_file={inputs['config']}", f"--spm_model_file={inputs['spm']}",
                "--max_seq_length=32", "--max_query_length=12", "--doc_stride=8", "--version_2_with_negative",
                "--do_train", "--train_step=1200", "--train_batch_size=4", "--save_checkpoints_steps=120",
                "--iterations_per_loop=20", "--warmup_step=0"]

    # 1,200 steps (~4 ms each): a stop at step 600 at the latest leaves the run seconds of work (at 300 steps it had
    # under a second: CI saw runs finish first, when the moments were times).
    lines = _chain("run_squad.py", args, tmp_path, "ckpt-1200", total=1200, seed=1)
    assert any(" at step " in line for line in lines), lines


# ------------------------------------------------------------------ create_pretraining_data
#: The advice that ends create_pretraining_data's last line after a Ctrl-C once its own code runs.
AGAIN = "nothing was published (the records appear only complete); run the same command to start again"
RECORD_EVENTS = ("start", "child", "workers", "bytes", "published")


def records_event(pid, out, kind, size=0):
    """A predicate: whether create_pretraining_data (process ``pid``, writing into the folder ``out``) has reached its
    event ``kind``. Its events, in the order they come: "start" (at once), "child" and "workers" (its first and its
    second child process run: multiprocessing's resource tracker and the pool's workers, while the chunks are
    processed), "bytes" (a child has run, and the hidden partial shards hold ``size`` bytes: the shuffled records
    are being written), "published" (a shard is under its final name; where a whole set was there already, its
    sidecar has been removed or replaced)."""
    seen_child = False
    sidecar = os.path.join(out, "train.tfrecord.json")

    def stamp():
        try:
            st = os.stat(sidecar)
        except OSError:
            return None
        return st.st_ino, st.st_mtime_ns

    first = stamp()

    def partial_bytes():
        total = 0
        for path in glob.glob(os.path.join(out, ".*.partial")):
            try:
                total += os.path.getsize(path)
            except OSError:  # renamed meanwhile
                pass
        return total

    def happened():
        nonlocal seen_child
        if kind == "start":
            return True
        running = len(children(pid))
        seen_child = seen_child or running > 0
        if kind == "child":
            return running >= 1
        if kind == "workers":
            return running >= 2
        if kind == "bytes":
            return seen_child and partial_bytes() >= size
        if first is None:
            return bool(glob.glob(os.path.join(out, "train.tfrecord-*")))
        return stamp() != first

    return happened


def records_moments(rng, n, size, kinds=RECORD_EVENTS):
    """``n`` events of create_pretraining_data picked at random: a kind, and for "bytes" a size under the whole
    records' ``size``."""
    picked = []
    for _ in range(n):
        kind = rng.choice(kinds)
        picked.append((kind, rng.randrange(1, size) if kind == "bytes" else 0))
    return picked


@pytest.mark.slow
def test_create_pretraining_data_sigint_at_ten_moments_then_the_same_records(tmp_path, inputs):
    """Every run in a fresh interpreter: without TensorFlow loaded (create_pretraining_data on local paths never
    imports it) a Ctrl-C ends the command by SystemExit, so that multiprocessing's finalizers run; in a child of the
    fork server, where TensorFlow is loaded, it would end by os._exit (and the resource tracker would report the
    pool's semaphores as leaked)."""
    def args(out):
        return [f"--input_file={inputs['corpus']}", f"--output_file={out}/train.tfrecord@3",
                f"--spm_model_file={inputs['spm']}", "--max_seq_length=64", "--max_predictions_per_seq=10",
                "--dupe_factor=3", "--num_workers=2", "--chunk_size_mb=0.02"]

    script = "create_pretraining_data.py"
    code, _, err, libraries = _reference(script, args(tmp_path / "ref"), tmp_path / "logs" / "ref")
    assert code == 0, err[-3000:]
    reference = {name: (tmp_path / "ref" / name).read_bytes() for name in os.listdir(tmp_path / "ref")}
    assert len(reference) == 4  # 3 shards + the sidecar
    size = sum(len(data) for name, data in reference.items() if not name.endswith(".json"))
    out = tmp_path / "out"
    rng = random.Random(2)
    # Three moments during start-up (as it loads a library the reference loaded after its handlers were in place),
    # seven once it works: while the pool starts and works, while the records are written.
    moments = [("startup", rng.choice([None, *libraries])) for _ in range(3)]
    moments += records_moments(rng, 7, size, kinds=("child", "workers", "bytes"))
    for i, (kind, detail) in enumerate(moments):
        if kind == "startup":
            code, stdout, stderr = _interrupt_at_startup(script, args(out), tmp_path / "logs" / str(i), detail)
        else:
            with _Fresh(script, args(out), tmp_path / "logs" / str(i)) as run:
                later = records_event(run.proc.pid, str(out), kind, detail)
                run.wait_for(lambda: handlers_installed(run.proc.pid) and later())  # noqa: B023 - used in this pass
                code, stdout, stderr = run.finish(signal.SIGINT)
        if code == 0:  # only a signal sent as the last bytes were written can come after the end
            assert kind == "bytes", (kind, stderr[-3000:])
        else:
            line = _check_clean_stop(code, stdout, stderr, str(out))
            if kind == "startup":  # before the command's own code: the line of any command
                assert line == "interrupted; run the same command to resume" or line.endswith(AGAIN), line
            else:
                assert line.endswith(AGAIN), line
        # Nothing hidden is left, and a file under a final name is the whole file of the reference.
        for name in os.listdir(out) if out.exists() else []:
            assert (out / name).read_bytes() == reference.get(name), name
        if code == 0:
            shutil.rmtree(out)
    _complete(script, args(out))
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
