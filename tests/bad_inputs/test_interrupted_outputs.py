"""Interrupted runs tell the truth: a signal that lands at the moment an output is committed (a checkpoint saved, an
export renamed into place) ends with a last line that names the output, not one that says nothing exists.

The signal is sent from inside the commit (the checkpoint manager's save, the export's rename), the moment a
Ctrl-C has to wait for (:func:`albert_tf.interrupts.deferred`); the commands' whole-process interruptions at many
moments are in ``tests/test_interrupts.py``.
"""

from __future__ import annotations

import os
import signal
import types

import pytest

from albert_tf import interrupts


def _signal_self():
    os.kill(os.getpid(), signal.SIGINT)


def test_a_checkpoint_saved_as_the_signal_lands_is_named(installed):
    """The first checkpoint of a run (step 40) is written while Ctrl-C is held: the last line names it, where the
    training loop's own note still said "no checkpoint yet"."""
    from albert_tf.training.trainer import Trainer

    saved = []

    def save(checkpoint_number):
        _signal_self()  # the Ctrl-C lands during the write
        saved.append(checkpoint_number)
        return f"run/ckpt-{checkpoint_number}"

    trainer = types.SimpleNamespace(
        _manager=types.SimpleNamespace(save=save), global_step=types.SimpleNamespace(numpy=lambda: 40), chief=True,
        config=types.SimpleNamespace(num_train_steps=100), _manager_dir=lambda: "run")
    trainer._where = lambda step, last: Trainer._where(trainer, step, last)
    interrupts.note(Trainer._where(trainer, 40, 0))
    assert "no checkpoint yet" in interrupts.message()
    with pytest.raises(interrupts.Interrupted):
        Trainer.save(trainer)
    assert saved == [40]  # the save finished before the signal was let through
    assert interrupts.message() == ("interrupted at step 40 of 100 (the last checkpoint is step 40); run the same "
                                    "command to resume")


def test_an_export_renamed_as_the_signal_lands_is_named(installed, tmp_path, monkeypatch):
    """The export's rename is its commit: a signal during it leaves the export whole and says so; a signal while
    its files are written publishes nothing and leaves the command's own advice ("nothing was published")."""
    from albert_tf import files as _fs
    from albert_tf.export import savedmodel

    rename = _fs.rename_dir

    def rename_then_signal(src, dst):
        rename(src, dst)
        _signal_self()

    monkeypatch.setattr(_fs, "rename_dir", rename_then_signal)
    export_dir = str(tmp_path / "export" / "1")
    interrupts.advise(interrupts.AGAIN)
    with pytest.raises(interrupts.Interrupted):
        savedmodel.write_savedmodel_atomic(export_dir, lambda tmp: _write(tmp), {"task": "test"})
    assert os.path.isfile(os.path.join(export_dir, "saved_model.pb"))
    assert interrupts.message() == (f"interrupted after writing {export_dir}; {export_dir} is complete (written "
                                    "before the stop); the same command keeps it")

    monkeypatch.setattr(_fs, "rename_dir", rename)
    other = str(tmp_path / "export" / "2")
    interrupts.note("")
    interrupts.advise(interrupts.AGAIN)

    def write_then_signal(tmp):
        _write(tmp)
        _signal_self()
        import time

        time.sleep(1)  # the handler raises at the next instruction

    with pytest.raises(interrupts.Interrupted):
        savedmodel.write_savedmodel_atomic(other, write_then_signal, {"task": "test"})
    assert not os.path.exists(other) and os.listdir(tmp_path / "export") == ["1"]
    assert interrupts.message() == "interrupted; nothing was published; run the same command again"


def _write(folder):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "saved_model.pb"), "wb") as f:
        f.write(b"\x08\x01")
