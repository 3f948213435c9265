"""Evaluation history of a run, its result files and the best checkpoint copy.

Every evaluated checkpoint is kept in ``eval_results.json`` (all metrics of every checkpoint plus the
best) and appended to ``eval_results.jsonl``; ``eval_results.txt`` is the official ``key = value``
layout per checkpoint; ``best_trial.txt`` the official ``global_step:best_step:best_value``. The best
checkpoint by the task's key metric (earliest on ties, as the official loop) is copied to
``best/ckpt-best`` (``albert_tf.checkpoints.trainer_layout``); nothing is ever deleted.
"""

from __future__ import annotations

import json
import os
from typing import Any

from absl import logging

from albert_tf import files as _fs
from albert_tf.checkpoints import trainer_layout
from albert_tf.files import write_text_atomic
from albert_tf.training.run_dir import read_json, write_json


def recorded_history(results_dir: str) -> list[dict[str, Any]]:
    """Every evaluation written to ``<results_dir>/eval_results.json`` so far (none yet: empty)."""
    path = os.path.join(results_dir, "eval_results.json")
    return read_json(path).get("checkpoints", []) if _fs.exists(path) else []


class CheckpointEvaluator:
    """Records evaluations of checkpoints, keeps the best copy, writes the result files."""

    def __init__(self, results_dir: str, task_name: str, key_metric: str, log=print) -> None:
        self.results_dir = results_dir
        self.task_name = task_name
        self.key = key_metric
        self.log = log
        self.json_path = os.path.join(results_dir, "eval_results.json")
        self.history: list[dict[str, Any]] = recorded_history(results_dir)

    @property
    def evaluated_steps(self) -> set[int]:
        return {int(h["global_step"]) for h in self.history}

    @property
    def best(self) -> dict[str, Any] | None:
        if not self.history:
            return None
        return max(self.history, key=lambda h: (h[self.key], -h["global_step"]))

    def record(self, metrics: dict[str, Any], step: int, model: Any) -> dict[str, Any]:
        """Add the metrics of ``model`` at ``step``; copy the weights to ``best/`` when they are the new best."""
        metrics = dict(metrics, global_step=int(step))
        previous = self.best
        self.history = sorted(
            [h for h in self.history if h["global_step"] != step] + [metrics], key=lambda h: h["global_step"]
        )
        if previous is None or metrics[self.key] > previous[self.key]:
            trainer_layout.save_best(model, self.results_dir, step)
            logging.info("new best %s = %.4f at step %d", self.key, metrics[self.key], step)
        self.write(metrics)
        if self.log is not None:
            values = ", ".join(f"{k} {v:.4f}" for k, v in sorted(metrics.items()) if isinstance(v, float))
            if metrics.get("predicted_classes") == 1:  # a model that learned nothing yet can look good on MRPC
                values += " (every prediction is one label: the scores of always answering it)"
            self.log(f"eval step {step}: {values}")
        return metrics

    def write(self, latest: dict[str, Any]) -> None:
        _fs.makedirs(self.results_dir)
        best = self.best
        write_json(self.json_path, {"task": self.task_name, "key_metric": self.key, "best": best,
                                    "checkpoints": self.history})
        jsonl = os.path.join(self.results_dir, "eval_results.jsonl")
        lines = _fs.read_text(jsonl) if _fs.exists(jsonl) else ""
        write_text_atomic(jsonl, lines + json.dumps(latest, sort_keys=True) + "\n")
        text = []
        for h in self.history:
            text.append(f"***** eval results at global_step {h['global_step']} *****")
            text.extend(f"{k} = {h[k]}" for k in sorted(h))
        if best is not None:
            text.append(f"***** best by {self.key} *****")
            text.extend(f"{k} = {best[k]}" for k in sorted(best))
            last = self.history[-1]["global_step"]
            write_text_atomic(
                os.path.join(self.results_dir, "best_trial.txt"), f"{last}:{best['global_step']}:{best[self.key]}\n"
            )
        write_text_atomic(os.path.join(self.results_dir, "eval_results.txt"), "\n".join(text) + "\n")
