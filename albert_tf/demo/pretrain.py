"""Demo stage ``pretrain``: a small ALBERT pretrained on the sample-corpus TFRecords of the previous stage.

Prints held-out masked-LM and sentence-order accuracy before training and after a few hundred LAMB steps
(same trainer, optimizer and schedule as ``run_pretraining.py``).
"""

from __future__ import annotations

import glob
import os

DEFAULT_STEPS = 600  # SOP is learned between steps 200 and 400 (held-out 0.60 -> 0.92 at 600)


def _previous_stage_files(workdir: str, args) -> tuple[str, str, str | None]:
    """(train glob, eval glob, spm model) from the ``pretraining_data`` stage result, else found in workdir."""
    result = getattr(args, "pretraining_data_result", None) or {}

    def pick(*names):
        for name in names:
            value = result.get(name)
            if value:
                return ",".join(value) if isinstance(value, (list, tuple)) else str(value)
        return None

    train = pick("input_files", "train_files", "output_files")
    held_out = pick("eval_files", "eval_tfrecords", "heldout_files", "held_out_files", "eval_file", "dev_files")
    spm_model = pick("spm_model_file", "spm_model", "model_file")
    if not train:
        found = sorted(glob.glob(os.path.join(workdir, "**", "*.tfrecord*"), recursive=True))
        train_found = [f for f in found if "eval" not in os.path.basename(f) and "heldout" not in os.path.basename(f)]
        eval_found = [f for f in found if f not in train_found]
        if not train_found:
            raise FileNotFoundError(
                f"pretrain stage: no pretraining TFRecords in {workdir}; run the pretraining_data stage first"
            )
        train = ",".join(train_found)
        held_out = held_out or (",".join(eval_found) if eval_found else None)
    if not spm_model:
        models = sorted(glob.glob(os.path.join(workdir, "**", "*.model"), recursive=True))
        spm_model = models[0] if models else None
    return train, held_out or train, spm_model


def _vocab_size(spm_model: str | None, train: str) -> int:
    if spm_model and os.path.exists(spm_model):
        import sentencepiece as spm

        return int(spm.SentencePieceProcessor(model_file=spm_model).get_piece_size())
    from albert_tf.data.example_proto import Example
    from albert_tf.data.pretraining.record_files import expand_globs
    from albert_tf.data.pretraining.validation import read_tfrecord_file

    top = 0
    for path in expand_globs(train):
        for raw in read_tfrecord_file(path):
            ex = Example.FromString(raw)
            top = max(top, max(ex.features.feature["input_ids"].int64_list.value))
    return top + 1


def _held_out_records(workdir: str, train: str, spm_model: str | None, seed: int) -> str | None:
    """Records of *unseen* sample-corpus documents (another generator seed), made like the training ones."""
    if not spm_model:
        return None
    import json

    from albert_tf.data.pretraining import PretrainingDataConfig, TokenizerSpec, create_pretraining_data
    from albert_tf.data.pretraining.record_files import expand_globs
    from albert_tf.data.sample_corpus import write_sample_corpus

    first = expand_globs(train)[0]
    sidecar = first.split("-00000-of-")[0] + ".json" if "-00000-of-" in first else first + ".json"
    flags = {}
    if os.path.exists(sidecar):
        with open(sidecar, encoding="utf-8") as f:
            flags = json.load(f).get("flags", {})
    out_dir = os.path.join(workdir, "pretrain_heldout")
    os.makedirs(out_dir, exist_ok=True)
    corpus = os.path.join(out_dir, "heldout_corpus.txt")
    write_sample_corpus(corpus, num_documents=300, seed=seed + 1)
    keep = {k: v for k, v in flags.items() if k in PretrainingDataConfig.FIELDS}
    keep.update(dupe_factor=1, random_seed=seed + 1)
    record = os.path.join(out_dir, "heldout.tfrecord")
    create_pretraining_data([corpus], record, TokenizerSpec(spm_model_file=spm_model),
                            PretrainingDataConfig(**keep), log=None)
    return record


def run(workdir: str, args) -> dict:
    from albert_tf.data.pretraining.stats import majority_baselines
    from albert_tf.demo.summary import write_curve_svg
    from albert_tf.tasks.pretraining.curve import pretrain_with_curve, small_albert_config

    train, held_out, spm_model = _previous_stage_files(workdir, args)
    seed = int(getattr(args, "seed", 12345))
    if held_out == train:
        held_out = _held_out_records(workdir, train, spm_model, seed) or train
    previous = getattr(args, "pretraining_data_result", None) or {}
    vocab_size = int(previous.get("vocab_size") or _vocab_size(spm_model, train))
    steps = int(getattr(args, "pretrain_steps", 0) or DEFAULT_STEPS)
    config = small_albert_config(vocab_size, embedding_size=64, hidden_size=128, layers=2, heads=2)
    print(f"pretraining a small ALBERT (E 64, H 128, 2 layers, vocab {vocab_size}) for {steps} LAMB steps")
    print(f"  train: {train}\n  held-out: {held_out}" + ("  (same as train: no held-out files given)"
                                                        if held_out == train else ""))
    result = pretrain_with_curve(
        config,
        train,
        held_out,
        os.path.join(workdir, "pretrain"),
        num_train_steps=steps,
        train_batch_size=32,
        learning_rate=5e-3,
        eval_every=max(1, steps // 3),
        eval_batch_size=32,
        max_eval_steps=10,
        seed=seed,
    )
    before, after = result["curve"][0], result["curve"][-1]
    baselines = majority_baselines(result["train_files"], result["eval_files"])
    print(
        f"held-out MLM accuracy {before['masked_lm_accuracy']:.3f} -> {after['masked_lm_accuracy']:.3f} "
        f"(always the most frequent token: {baselines['masked_lm_accuracy_majority_token']:.3f}), "
        f"SOP accuracy {before['sentence_order_accuracy']:.3f} -> {after['sentence_order_accuracy']:.3f} "
        f"(majority label: {baselines['sentence_order_accuracy_majority_label']:.3f}) "
        f"after {result['steps_done']} steps in {result['seconds']:.0f}s"
    )
    svg = write_curve_svg(result["curve"], os.path.join(workdir, "pretrain_curve.svg"),
                          f"Held-out accuracy while pretraining a small ALBERT ({result['steps_done']} steps)")
    return {
        "before": before,
        "after": after,
        "curve": result["curve"],
        "curve_svg": svg,
        "steps": result["steps_done"],
        "baselines": baselines,
        "model_dir": os.path.join(workdir, "pretrain"),
        "albert_config": config.to_dict(),
    }
