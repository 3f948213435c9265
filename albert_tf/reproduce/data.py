"""The reproduction's data: documents, a held-out split, TFRecords per sentence task, a GLUE subset.

* Text: the budget's sub-folders of ``<shared_data>/text`` (whole files, sorted, until ``text_mb``), cut into
  documents of paragraph size (:func:`albert_tf.data.documents.prepare_split`: a document closes at the first
  paragraph end after ``document_sentences`` sentences; a file without blank lines, such as a State of the Union
  address, is one document) and split by a hash of (file name, document index) into training and held-out
  documents. No run trains on a held-out document.
* Training records (official n-gram MLM, seq/predictions of the budget) of the training documents, one set per
  sentence task: ``pure`` (the paper's SOP: negatives are swapped segments only), ``nsp`` (BERT's NSP: negatives
  take segment B from a random other document) and ``none`` (one segment, no sentence task).
* Held-out records of the held-out documents: ``heldout_sop`` (pure SOP; also the MLM set of every model) and
  ``heldout_nsp`` (NSP, its random documents drawn from the held-out documents only). Their majority-label
  accuracies are the baselines the tables print.
* Vocabulary: the official 30k-clean SentencePiece model (``<shared_data>/spm``), so every run shares one vocab.
* GLUE: the first ``glue_train_examples`` / ``glue_dev_examples`` rows of ``<shared_data>/glue/<task>``.

Everything is written under ``<workdir>/data``; ``data.json`` there marks it complete (a second run of the same
budget reuses it; a changed budget builds it again).
"""

from __future__ import annotations

import collections
import glob
import json
import os
import shutil
import time
from collections.abc import Callable

from albert_tf import files as _fs
from albert_tf.data.documents import prepare_split
from albert_tf.reproduce.budgets import Budget, same_fields

__all__ = ["SOP_POLICY", "label_majority", "masking_records", "prepare_data", "text_files"]

#: The records the SOP arm trains on. The paper's SOP (§3.1, §4.6) takes only swapped segments as negatives; the
#: released code's default (``official``) also takes a random other document as segment B for every one-segment
#: chunk (google-research/albert#234), which is NSP's negative: a model trained on it is taught NSP directly, and
#: the Table 5 question "does SOP solve NSP?" would lose its meaning. So the SOP arm trains on ``pure``.
SOP_POLICY = "pure"
TRAIN_POLICIES = {"sop": SOP_POLICY, "nsp": "nsp", "none": "none"}
HELDOUT_POLICIES = {"sop": "pure", "nsp": "nsp"}
ENCODINGS = ("utf-8", "iso-8859-1")


def text_files(shared_data: str, budget: Budget) -> list[str]:
    """Whole text files of the budget's sources, in a fixed order, until ``budget.text_mb`` is reached."""
    chosen: list[str] = []
    total = 0
    for source in budget.text_sources:
        for path in sorted(glob.glob(os.path.join(shared_data, "text", source, "*"))):
            if os.path.basename(path).upper().startswith("README") or not os.path.isfile(path):
                continue
            if "finnish" in os.path.basename(path):  # nltk_genesis carries other languages
                continue
            size = os.path.getsize(path)
            if chosen and total + size > budget.text_mb * 1e6:
                continue
            chosen.append(path)
            total += size
    if not chosen:
        raise FileNotFoundError(f"no text under {os.path.join(shared_data, 'text')} for {budget.text_sources}")
    return chosen


def label_majority(record_files: list[str]) -> dict:
    """Label counts of ``next_sentence_labels`` in the records and the majority-label accuracy."""
    from albert_tf.data.pretraining.records import parse_examples

    counts = collections.Counter(int(ex["next_sentence_labels"][0]) for ex in parse_examples(record_files))
    total = sum(counts.values())
    return {
        "records": total,
        "label_0": counts.get(0, 0),
        "label_1": counts.get(1, 0),
        "majority_accuracy": max(counts.values()) / total if total else 0.0,
    }


def _glue_subset(shared_data: str, budget: Budget, out_dir: str) -> str:
    """``out_dir/<task>/{train,dev}.tsv``: the header and the first N rows of the real files (0 = all)."""
    task_dir = os.path.join(out_dir, budget.glue_task)
    os.makedirs(task_dir, exist_ok=True)
    for split, limit in (("train", budget.glue_train_examples), ("dev", budget.glue_dev_examples)):
        src = os.path.join(shared_data, "glue", budget.glue_task, f"{split}.tsv")
        if not os.path.exists(src):
            raise FileNotFoundError(f"{src} is missing: the downstream column needs the real {budget.glue_task}")
        with open(src, encoding="utf-8") as f:
            lines = f.readlines()
        keep = lines if not limit else lines[: 1 + limit]
        _fs.write_text_atomic(os.path.join(task_dir, f"{split}.tsv"), "".join(keep))
    return out_dir


def _dev_labels(path: str) -> tuple[int, float | None]:
    """Rows of a GLUE dev TSV with a header and the majority-label accuracy (None without a label column)."""
    with open(path, encoding="utf-8-sig") as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    header, rows = rows[0], rows[1:]
    names = [h.strip().lower() for h in header]
    column = names.index("label") if "label" in names else names.index("quality") if "quality" in names else None
    if column is None or not rows:
        return len(rows), None
    labels = collections.Counter(r[column] for r in rows if len(r) > column)
    return len(rows), max(labels.values()) / sum(labels.values())


def _saved(marker: str, budget: Budget, part: str) -> dict | None:
    """The JSON at ``marker`` when it says complete and was made under the budget's fields of ``part``."""
    if not os.path.exists(marker):
        return None
    with open(marker, encoding="utf-8") as f:
        done = json.load(f)
    return done if done.get("complete") and same_fields(done.get("budget_fields"), budget, part) else None


def _make_records(text: str, path: str, spec, budget: Budget, policy: str, dupe_factor: int) -> dict:
    """Official n-gram MLM records of ``text`` with the budget's shapes and seed (``create_pretraining_data``)."""
    from albert_tf.data.pretraining.pipeline import PretrainingDataConfig, create_pretraining_data

    cfg = PretrainingDataConfig(
        max_seq_length=budget.max_seq_length, max_predictions_per_seq=budget.max_predictions_per_seq,
        dupe_factor=dupe_factor, random_seed=budget.seed, sentence_order=policy, shuffle_buffer_size=100_000,
    )
    return create_pretraining_data(text, path, spec, cfg, log=None)


def prepare_data(budget: Budget, shared_data: str, workdir: str, log: Callable[[str], None] = print) -> dict:
    """Build (or reuse) the data of ``budget``; returns ``data.json``'s content (paths, counts, baselines)."""
    from albert_tf.data.pretraining.stats import majority_baselines
    from albert_tf.data.pretraining.vocabulary import TokenizerSpec

    data_dir = os.path.join(workdir, "data")
    marker = os.path.join(data_dir, "data.json")
    done = _saved(marker, budget, "data")
    if done is not None:
        log(f"data: reusing {data_dir}")
        return done
    if os.path.isdir(data_dir):
        shutil.rmtree(data_dir)
    os.makedirs(data_dir)
    start = time.time()
    files = text_files(shared_data, budget)
    train_text, heldout_text = os.path.join(data_dir, "train.txt"), os.path.join(data_dir, "heldout.txt")
    text_counts = prepare_split(
        files, train_text, heldout_text, document_unit="paragraphs", document_sentences=budget.document_sentences,
        heldout_fraction=budget.heldout_fraction, encodings=ENCODINGS,
    )
    log(f"data: {text_counts['documents']} training and {text_counts['heldout_documents']} held-out documents "
        f"from {len(files)} files")
    spm_model = os.path.join(shared_data, "spm", "30k-clean.model")
    spec = TokenizerSpec(spm_model_file=spm_model)
    records: dict[str, str] = {}
    record_counts: dict[str, dict] = {}
    jobs = [(f"train_{k}", train_text, policy, budget.dupe_factor) for k, policy in TRAIN_POLICIES.items()]
    jobs += [(f"heldout_{k}", heldout_text, policy, 1) for k, policy in HELDOUT_POLICIES.items()]
    for name, text, policy, dupe in jobs:
        path = os.path.join(data_dir, f"{name}.tfrecord")
        summary = _make_records(text, path, spec, budget, policy, dupe)
        records[name] = path
        record_counts[name] = {"instances": summary["counts"]["instances"], "sentence_order": policy}
        log(f"data: {name}: {summary['counts']['instances']} records ({policy})")
    baselines = {
        "heldout_sop": label_majority([records["heldout_sop"]]),
        "heldout_nsp": label_majority([records["heldout_nsp"]]),
        "mlm_majority_token": majority_baselines([records["train_sop"]], [records["heldout_sop"]])[
            "masked_lm_accuracy_majority_token"
        ],
    }
    glue_dir = _glue_subset(shared_data, budget, os.path.join(data_dir, "glue"))
    dev_rows, dev_majority = _dev_labels(os.path.join(glue_dir, budget.glue_task, "dev.tsv"))
    done = {
        "complete": True,
        "budget": budget.name,
        "budget_fields": budget.fields(),  # all of them, for the record; reuse compares the data fields
        "text_files": [os.path.relpath(p, shared_data) for p in files],
        "text": text_counts,
        "records": records,
        "record_counts": record_counts,
        "baselines": baselines,
        "spm_model_file": spm_model,
        "glue_dir": glue_dir,
        "glue_dev_rows": dev_rows,
        "glue_dev_majority": dev_majority,
        "seconds": round(time.time() - start, 1),
    }
    _fs.write_text_atomic(marker, json.dumps(done, indent=1))
    return done


def masking_records(budget: Budget, data: dict, workdir: str, log: Callable[[str], None] = print) -> dict:
    """The static-vs-dynamic comparison's training records (or the saved ones): the SOP records of the first
    ``budget.masking_text_mb`` MB of the training documents (whole documents, in the order of ``train.txt``; 0: all
    of them, ``train_sop`` itself), made like ``train_sop``. Returns ``{"path", "records", "documents"}``."""
    from albert_tf.data.pretraining.vocabulary import TokenizerSpec

    if not budget.masking_text_mb:
        return {"path": data["records"]["train_sop"], "records": data["record_counts"]["train_sop"]["instances"],
                "documents": data["text"]["documents"]}
    out_dir = os.path.join(workdir, "data_masking")
    marker = os.path.join(out_dir, "records.json")
    done = _saved(marker, budget, "masking")
    if done is not None:
        return done
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    train_text = os.path.join(os.path.dirname(data["records"]["train_sop"]), "train.txt")
    with open(train_text, encoding="utf-8") as f:
        documents = [d for d in f.read().split("\n\n") if d.strip()]
    kept, size = [], 0
    for document in documents:
        size += len(document.encode("utf-8"))
        if kept and size > budget.masking_text_mb * 1e6:
            break
        kept.append(document)
    text = os.path.join(out_dir, "train.txt")
    _fs.write_text_atomic(text, "\n\n".join(kept) + "\n")
    path = os.path.join(out_dir, "train_sop.tfrecord")
    spec = TokenizerSpec(spm_model_file=data["spm_model_file"])
    summary = _make_records(text, path, spec, budget, SOP_POLICY, budget.dupe_factor)
    done = {"complete": True, "path": path, "records": summary["counts"]["instances"], "documents": len(kept),
            "budget_fields": budget.fields()}
    log(f"data: masking comparison: {done['records']} records of the first {len(kept)} training documents")
    _fs.write_text_atomic(marker, json.dumps(done, indent=1))
    return done
