"""The answers of one raw-text SavedModel of each task, for ``tests/test_export_golden.py``.

Each model is the tiny ALBERT config with the official 30k-clean vocabulary, initialised from a fixed seed, exported
through the task's public export function and asked fixed questions through its ``serving_default`` signature. The
stored file ``tests/data/export_golden.json`` holds what the code *before* the one-writer redesign of the exports
answered (``python tests/export_golden.py --write FILE --spm_model_file ...`` run in a checkout of that commit);
the test asks the current code the same questions. Only public functions of the package are used, so the same file
runs against both.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

SEQ = 64
PAIRS = [
    ("The cat sat on the mat.", "A cat was sitting on a mat near the door."),
    ("Who wrote it?", "Jane Austen wrote Pride and Prejudice in 1813."),
    ("Shares rose 4 percent on Tuesday.", "The company's stock climbed in early trading after the results."),
]
CONTEXT = ("Jane Austen wrote Pride and Prejudice, which was published in 1813. The novel follows Elizabeth Bennet, "
           "the second of five daughters, as she deals with manners, upbringing and marriage in rural England.")
QUESTIONS = ["Who wrote Pride and Prejudice?", "When was the novel published?", "How many daughters are there?"]
ARTICLES = [CONTEXT, "The cat sat on the mat near the door because the sun was warm there in the afternoon."]
RACE_QUESTIONS = ["Who is the novel about?", "The cat sat _ ."]
RACE_OPTIONS = [["Elizabeth Bennet", "Jane Austen", "a cat", "England"],
                ["on the mat", "in the sun", "under a tree", "at night"]]


def _export_all(spm_model_file: str, work: str) -> dict[str, str]:
    import keras
    import numpy as np

    from albert_tf.config import AlbertConfig
    from albert_tf.tasks.glue.export import export_classifier
    from albert_tf.tasks.glue.model import AlbertClassifier
    from albert_tf.tasks.race.export import export_multiple_choice
    from albert_tf.tasks.race.model import AlbertMultipleChoice
    from albert_tf.tasks.squad.export import export_squad
    from albert_tf.tasks.squad.model import AlbertSquad
    from albert_tf.tokenization import AlbertPreprocessor, FullTokenizer

    tokenizer = FullTokenizer(spm_model_file=spm_model_file)
    # A wide initialisation, so that the answers differ clearly between inputs (0.02 gives near-ties everywhere).
    config = AlbertConfig.from_name("albert_tiny").replace(vocab_size=tokenizer.vocab_size, initializer_range=0.5)
    keys = ("input_ids", "input_mask", "segment_ids")
    paths = {}

    def built(model, shape):
        model({k: np.zeros(shape, np.int32) for k in keys}, training=False)
        return model

    keras.utils.set_random_seed(1)
    paths["classifier"] = export_classifier(
        built(AlbertClassifier(config, 3), (1, 2)), os.path.join(work, "classifier", "1"),
        labels=["contradiction", "entailment", "neutral"], text_pair=True,
        preprocessor=AlbertPreprocessor.from_tokenizer(tokenizer, SEQ))
    keras.utils.set_random_seed(2)
    paths["regression"] = export_classifier(
        built(AlbertClassifier(config, 1), (1, 2)), os.path.join(work, "regression", "1"), labels=None,
        text_pair=True, preprocessor=AlbertPreprocessor.from_tokenizer(tokenizer, SEQ))
    for seed, version_2 in ((3, False), (4, True)):
        keras.utils.set_random_seed(seed)
        model = AlbertSquad(config, version_2_with_negative=version_2)
        dummy = {k: np.zeros((1, 16), np.int32) for k in (*keys, "p_mask")}
        model(dummy, training=False)
        name = "squad_v2" if version_2 else "squad_v1"
        paths[name] = export_squad(model, os.path.join(work, name, "1"), doc_stride=24, max_query_length=16,
                                   preprocessor=AlbertPreprocessor.from_tokenizer(tokenizer, SEQ))
    keras.utils.set_random_seed(5)
    paths["race"] = export_multiple_choice(
        built(AlbertMultipleChoice(config), (1, 4, 2)), os.path.join(work, "race", "1"), max_qa_length=16,
        preprocessor=AlbertPreprocessor.from_tokenizer(tokenizer, SEQ))
    return paths


REQUESTS: dict[str, dict[str, Any]] = {
    "classifier": {"text_a": [a for a, _ in PAIRS], "text_b": [b for _, b in PAIRS]},
    "regression": {"text_a": [a for a, _ in PAIRS], "text_b": [b for _, b in PAIRS]},
    "squad_v1": {"question": QUESTIONS, "context": [CONTEXT] * len(QUESTIONS)},
    "squad_v2": {"question": QUESTIONS, "context": [CONTEXT] * len(QUESTIONS)},
    "race": {"article": ARTICLES, "question": RACE_QUESTIONS, "options": RACE_OPTIONS},
}


def _plain(value: Any) -> Any:
    import numpy as np

    value = np.asarray(value)
    if value.dtype.kind in "SO":
        return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in value.reshape(-1)]
    return value.tolist()


def answers(spm_model_file: str) -> dict[str, dict[str, Any]]:
    """Every task's raw-text answers to :data:`REQUESTS`, from exports written to a temporary folder (removed
    after) by a fresh process running this module, so the caller's TensorFlow state (RNG, loaded ops) plays no
    part."""
    with tempfile.TemporaryDirectory() as work:
        out = subprocess.run([sys.executable, __file__, "--spm_model_file", spm_model_file, "--work", work],
                             capture_output=True, text=True, timeout=900,
                             env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
        if out.returncode:
            raise RuntimeError(out.stderr[-3000:])
        return json.loads(out.stdout)


def _main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spm_model_file", required=True)
    parser.add_argument("--work", default="")
    parser.add_argument("--write", default="", help="write the answers here as the stored golden file")
    parser.add_argument("--made_by", default="", help="the commit whose code answered (recorded in the file)")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="export_golden_")
    paths = _export_all(args.spm_model_file, work)
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the SentencePiece ops of the raw-text signatures)

    result = {}
    for name, path in paths.items():
        signature = tf.saved_model.load(path).signatures["serving_default"]
        got = signature(**{k: tf.constant(v) for k, v in REQUESTS[name].items()})
        result[name] = {k: _plain(v.numpy()) for k, v in sorted(got.items())}
    if args.write:
        with open(args.write, "w", encoding="utf-8") as f:
            json.dump({"made_by": args.made_by, "max_seq_length": SEQ, "answers": result}, f, indent=1)
            f.write("\n")
    print(json.dumps(result))


if __name__ == "__main__":
    _main()
