"""Demo stage ``finetune``: fine-tune, export a SavedModel, answer raw sentences through it.

Default (no ``--glue_dir``): a small single-sentence task derived from the sample corpus, in the
GLUE SST-2 layout so the real ``run_classifier`` pipeline runs unchanged: the first sentence of
every document says what the weather is ("... where the sun is shining today."); label 1 = sunny,
0 = any other weather, balanced. With ``--glue_dir``: real MRPC (or SST-2) from that folder.

The model starts from the ``pretrain`` stage's checkpoint when that stage ran (its SentencePiece
model and config too); otherwise from a SentencePiece model trained here on the sample corpus
and random initialisation (the runner then prints its loud warning -- expected in this case).
The exported SavedModel is reloaded through the TF1 session loader that TF Serving uses and
asked about two raw sentences it has never seen.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from albert_tf.data import sample_corpus
from albert_tf.tasks import glue
from albert_tf.tasks.glue.task import run as run_glue

# Name/town/adjective combinations chosen at random, not looked up in the training split.
QUESTIONS = [
    "Oscar lives in the famous town of Westport, where the sun is shining today.",
    "Oscar lives in the famous town of Westport, where snow is falling today.",
]
DEFAULT_STEPS = 300
LABEL_NAMES = {"1": "sunny", "0": "other weather"}
MRPC_QUESTIONS = (
    ["The company said its profit rose 10 percent.", "The cat slept on the warm windowsill all afternoon."],
    ["Profit at the company increased by 10 percent, it said.", "Stock markets fell sharply in early trading."],
)


def _stage_result(args: Any, stage: str) -> dict:
    value = getattr(args, f"{stage}_result", None)
    return value if isinstance(value, dict) else {}


def _first(d: dict, *keys: str) -> Any:
    for k in keys:
        if d.get(k):
            return d[k]
    return None


def train_demo_spm(workdir: str, seed: int = 0, vocab_size: int = 800) -> str:
    """A SentencePiece model on the sample corpus, with the official ALBERT spm_train settings."""
    import sentencepiece as spm

    corpus = os.path.join(workdir, "sample_corpus.txt")
    sample_corpus.write_sample_corpus(corpus, num_documents=2000, seed=seed)
    prefix = os.path.join(workdir, "demo_spm")
    spm.SentencePieceTrainer.train(
        input=corpus,
        model_prefix=prefix,
        vocab_size=vocab_size,
        model_type="unigram",
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        control_symbols="[CLS],[SEP],[MASK]",
        character_coverage=1.0,
        hard_vocab_limit=False,
        num_threads=1,
        minloglevel=2,
    )
    return prefix + ".model"


def run(workdir: str, args: Any) -> dict:
    """Fine-tune, export, reload, answer; returns metrics, paths and the answers."""
    from albert_tf.config import AlbertConfig
    from albert_tf.export import savedmodel

    seed = int(getattr(args, "seed", 12345))
    stage_dir = os.path.join(workdir, "finetune")
    os.makedirs(stage_dir, exist_ok=True)
    data_res = _stage_result(args, "pretraining_data")
    pre_res = _stage_result(args, "pretrain")
    spm_file = _first(pre_res, "spm_model_file") or _first(data_res, "spm_model_file", "spm_model")
    init_checkpoint = _first(pre_res, "checkpoint", "init_checkpoint", "model_dir")
    config_file = os.path.join(stage_dir, "albert_config.json")
    if init_checkpoint and spm_file and isinstance(pre_res.get("albert_config"), dict):
        AlbertConfig.from_dict(pre_res["albert_config"]).to_json_file(config_file)
        print(f"starting from the pretrain stage: {init_checkpoint}")
    else:
        init_checkpoint = None
        if not spm_file:
            spm_file = train_demo_spm(stage_dir, seed=seed)
            print(f"no pretraining stage output: trained a SentencePiece model on the sample corpus -> {spm_file}")
        import sentencepiece as spm

        vocab = spm.SentencePieceProcessor(model_file=spm_file).GetPieceSize()
        AlbertConfig.from_name("albert_tiny").replace(vocab_size=vocab).to_json_file(config_file)

    glue_dir = getattr(args, "glue_dir", None)
    if glue_dir:
        task = "MRPC" if os.path.isdir(os.path.join(glue_dir, "MRPC")) else "SST-2"
        data_dir, questions, seq = glue_dir, MRPC_QUESTIONS if task == "MRPC" else (QUESTIONS,), 64
        counts = None
    else:
        task = "SST-2"
        data_dir = os.path.join(stage_dir, "data")
        counts = sample_corpus.write_weather_task(data_dir, seed=seed)
        questions, seq = (QUESTIONS,), 48
        print(f"derived task (sunny vs other weather, SST-2 layout): {counts}")

    steps = int(getattr(args, "finetune_steps", 0) or DEFAULT_STEPS)
    output_dir = os.path.join(stage_dir, f"{task.lower()}_run")
    export_dir = os.path.join(stage_dir, "export")
    cfg = glue.make_config(
        data_dir=data_dir,
        task_name=task,
        output_dir=output_dir,
        albert_config_file=config_file,
        spm_model_file=spm_file,
        init_checkpoint=init_checkpoint,
        max_seq_length=seq,
        do_train=True,
        do_eval=True,
        do_predict=True,
        train_batch_size=32,
        eval_batch_size=64,
        predict_batch_size=64,
        learning_rate=1e-3 if init_checkpoint is None else 5e-4,
        train_step=steps,
        warmup_step=steps // 10,
        save_checkpoints_steps=max(1, steps // 2),
        export_dir=export_dir,
        seed=seed,
    )
    for folder in (output_dir, export_dir):  # what an earlier, unfinished run of this stage left: start clean
        if os.path.isdir(folder) and os.listdir(folder):
            print(f"removing {folder}, left by an earlier run of this stage that did not finish")
            shutil.rmtree(folder)
    summary = run_glue(cfg)
    path = summary["export_dir"]

    feeds = {"text_a": list(questions[0])}
    if len(questions) > 1:
        feeds["text_b"] = list(questions[1])
    answers = savedmodel.run_tf1_session(path, feeds)
    best = summary["best"]
    key = summary["key_metric"]
    print(f"best dev {key} {best[key]:.4f} at step {best['global_step']}; SavedModel: {path}")
    replies = []
    for i, text in enumerate(questions[0]):
        pair = f" | {questions[1][i]}" if len(questions) > 1 else ""
        label = answers["label"][i].decode()
        probs = [round(float(p), 4) for p in answers["probabilities"][i]]
        meaning = f" ({LABEL_NAMES[label]})" if not glue_dir else ""
        print(f"  {text}{pair}\n    -> label {label}{meaning}, probabilities {probs}")
        replies.append(
            {
                "text_a": text,
                "text_b": questions[1][i] if len(questions) > 1 else None,
                "label": label,
                "probabilities": probs,
            }
        )
    return {
        "task": task,
        "data_counts": counts,
        "init_checkpoint": init_checkpoint,
        "best": best,
        "submission": summary["predict"]["submission"],
        "export_dir": path,
        "answers": replies,
    }
