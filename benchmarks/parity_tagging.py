"""``finetune_parity.py --task=wnut17``: WNUT 2017 token tagging, albert-tf's ``run_tagging`` job against
transformers' ``AlbertForTokenClassification`` from the same initial weights.

Both sides read the same windows: WNUT 2017's train and dev files read by ``albert_tf.data.tagging`` (IOB2, the
labels ``O`` first, then B-/I- of each type), each word's label on its first piece, sentences longer than a window
split into overlapping windows (``sentence_windows``, what the task builds). transformers trains on them with
``-100`` where albert-tf has ``IGNORE`` (its loss: the mean cross-entropy over labelled pieces, as albert-tf's), each
batch padded to its longest window; its dev predictions are mapped back to words through the same windows and
scored by the same ``conlleval`` scorer (``albert_tf.tasks.tagging.scoring``, equal to seqeval's:
``tests/test_tagging_data.py``).
"""

from __future__ import annotations

import functools
import os
import statistics
import types

#: 3,394 training sentences, 106 batches of 32: ten epochs at 3e-4, chosen on albert-tf's dev curve for a seed the
#: comparison does not use (shorter or faster schedules find no entity with the small model: benchmarks/README.md).
TAGGING_DEFAULTS = {"steps": 1060, "learning_rate": 3e-4, "train_batch_size": 32, "max_seq_length": 128}
TRAIN_FILE, DEV_FILE = "wnut17train.conll", "emerging.dev.conll"
METRICS = ("f1", "precision", "recall", "accuracy")


def files(shared_data: str) -> tuple[str, str]:
    folder = os.path.join(shared_data, "ner", "wnut17")
    return os.path.join(folder, TRAIN_FILE), os.path.join(folder, DEV_FILE)


@functools.lru_cache(maxsize=1)
def tagging_inputs(shared_data: str, max_seq_length: int) -> types.SimpleNamespace:
    """The labels, the dev sentences and both files' windows (one list per sentence), made once per process."""
    from albert_tf.data.tagging import labels_of, read_conll, sentence_windows
    from albert_tf.tasks.tagging.task import continuation_ids
    from benchmarks.common import tokenizer_of

    tokenizer = tokenizer_of(shared_data)
    train_file, dev_file = files(shared_data)
    train, dev = read_conll(train_file), read_conll(dev_file)
    labels = tuple(labels_of(s.tags for s in train))
    index = {label: i for i, label in enumerate(labels)}

    def windows(sentences):
        return [sentence_windows(tokenizer, s.words, [index[t] for t in s.tags], max_seq_length,
                                 continuation=continuation_ids(labels)) for s in sentences]

    train_windows = windows(train)
    return types.SimpleNamespace(labels=labels, dev=dev, dev_windows=windows(dev),
                                 train=[w for sentence in train_windows for w in sentence])


def albert_tf_config(args, common: dict, settings: dict):
    """``run_tagging``'s experiment on WNUT 2017 with the runner options both albert-tf paths share."""
    from albert_tf.tasks import tagging

    train_file, dev_file = files(args.shared_data)
    return tagging.make_config(**common, train_file=train_file, dev_file=dev_file, do_eval=True, eval_batch_size=64,
                               classifier_dropout=settings["classifier_dropout"])


def albert_tf_metrics(history: list[dict], steps: int) -> dict:
    """The scores and dev loss of the evaluation at ``steps`` (the last step's, as the transformers side)."""
    from benchmarks.common import DEV_LOSS

    last = next(h for h in history if h["global_step"] == steps)
    return {**{k: float(last[k]) for k in METRICS}, DEV_LOSS: float(last["eval_loss"])}


def transformers_model(hf_dir: str, settings: dict, data: types.SimpleNamespace):
    """``AlbertForTokenClassification`` from ``hf_dir`` (a new ``classifier`` where the folder has none) with the
    settings' dropout, in training mode."""
    import transformers

    model = transformers.AlbertForTokenClassification.from_pretrained(
        hf_dir, num_labels=len(data.labels), classifier_dropout_prob=settings["classifier_dropout"],
        hidden_dropout_prob=settings["encoder_dropout"], attention_probs_dropout_prob=settings["encoder_dropout"],
        id2label=dict(enumerate(data.labels)), label2id={label: i for i, label in enumerate(data.labels)})
    model.train()
    return model


def _tensors(rows: list):
    """Windows padded to the batch's longest: ids, mask, and labels with transformers' ignore index -100."""
    import torch

    from albert_tf.data.tagging import IGNORE

    longest = max(len(r.input_ids) for r in rows)

    def pad(values, fill):
        return list(values) + [fill] * (longest - len(values))

    ids = torch.tensor([pad(r.input_ids, 0) for r in rows], dtype=torch.long)
    mask = torch.tensor([pad([1] * len(r.input_ids), 0) for r in rows], dtype=torch.long)
    labels = torch.tensor([pad([-100 if v == IGNORE else v for v in (r.label_ids or ())], -100) for r in rows],
                          dtype=torch.long)
    return ids, mask, labels


def transformers_train(model, settings: dict, train: list, batches) -> list[float]:
    """``settings["steps"]`` official updates on ``train[i] for i in`` each of ``batches``; each step's loss."""
    import torch

    from benchmarks.pretraining_parity import OfficialUpdate, official_lr

    update = OfficialUpdate(model.named_parameters(), lamb=False, bias_correction=False)
    losses = []
    for step in range(settings["steps"]):
        ids, mask, labels = _tensors([train[i] for i in next(batches)])
        out = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids), labels=labels)
        out.loss.backward()
        losses.append(out.loss.item())
        update.step(official_lr(step, settings["learning_rate"], settings["steps"], settings["warmup_steps"]))
    return losses


def transformers_scores(model, data: types.SimpleNamespace) -> dict:
    """Entity scores of ``model``'s dev predictions (each word from the window that scores it) and the mean loss
    over labelled dev pieces."""
    import torch

    from albert_tf.data.tagging import word_tags
    from albert_tf.tasks.tagging.scoring import score
    from benchmarks.common import DEV_LOSS

    model.eval()
    rows = [w for sentence in data.dev_windows for w in sentence]
    predictions, loss_sum, labelled = [], 0.0, 0
    with torch.no_grad():
        for i in range(0, len(rows), 64):
            ids, mask, labels = _tensors(rows[i:i + 64])
            logits = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).logits
            kept = labels != -100
            loss_sum += torch.nn.functional.cross_entropy(logits[kept], labels[kept], reduction="sum").item()
            labelled += int(kept.sum())
            predictions.extend(logits.argmax(-1).tolist())
    predicted = word_tags(data.dev_windows, [len(s.words) for s in data.dev], predictions, data.labels)
    result = score([s.tags for s in data.dev], predicted)
    return {**{k: result[k] for k in METRICS}, DEV_LOSS: loss_sum / labelled}


def fixed_batches(train: list, batches: list, max_seq_length: int):
    """``tf.data`` of the given batches of training windows, in order, padded to ``max_seq_length`` (albert-tf's
    training input in lockstep; ``window_arrays``, as the task pads them)."""
    import tensorflow as tf

    from albert_tf.data.tagging import window_arrays

    rows = window_arrays([train[i] for batch in batches for i in batch], max_seq_length)
    shape = (len(batches), len(batches[0]), max_seq_length)
    return tf.data.Dataset.from_tensor_slices({name: value.reshape(shape) for name, value in rows.items()})


def baseline(data: types.SimpleNamespace) -> dict:
    """A constant "O": no entity found (F1 0), token accuracy the share of O words."""
    words = [tag for sentence in data.dev for tag in sentence.tags]
    return {"f1": 0.0, "precision": 0.0, "recall": 0.0, "accuracy": statistics.fmean(t == "O" for t in words)}
