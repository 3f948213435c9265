"""Every serving signature of every task's export, fed the way TF Serving feeds it (the C++ ``Session::Run``, no
check of the request's shape against the signature: tensorflow/serving#1436), with the requests a client gets
wrong: every input a scalar, every input one rank more (a ``[1, 1]`` string tensor), an empty batch, token ids of
no length, and an ``input_mask`` row of zeros. Each is answered by an ``InvalidArgumentError`` naming the input, or
(an empty batch) by an empty answer; never an internal node error or an answer to some other batch.
"""

from __future__ import annotations

import numpy as np
import pytest
from tf1_client import serve_in_fresh_process

pytestmark = pytest.mark.heavy  # the fixture exports three tiny models and reads four of the session's exports

SEQ = 16


def _token_ids(seq: int) -> dict:
    ids = [[2, 20, 21, 3] + [0] * (seq - 4), [2, 22, 3] + [0] * (seq - 3)]
    mask = [[1 if i else 0 for i in row] for row in ids]
    return {"input_ids": ids, "input_mask": mask, "segment_ids": [[0] * seq] * 2}


@pytest.fixture(scope="module")
def exports(tmp_path_factory, spm_model):
    """``{name: (export dir, {signature: valid request})}`` for a tiny model of every task: the session's shared
    exports of the classifier, SQuAD v1 and v2 and RACE (``tests/artefacts.py``, read only), and an export of the
    tagger, the encoder and the preprocessor made here."""
    import artefacts
    import keras
    import tensorflow as tf

    from albert_tf.config import AlbertConfig
    from albert_tf.export.encoder import export_encoder, export_preprocessor
    from albert_tf.modeling import AlbertEncoder
    from albert_tf.tasks.tagging.export import export_tagger
    from albert_tf.tasks.tagging.model import AlbertTagger
    from albert_tf.tokenization import AlbertPreprocessor, FullTokenizer

    out = {}
    shared = artefacts.exports(tmp_path_factory, spm_model, "classifier")
    token_ids = _token_ids(shared.seq)
    example = tf.train.Example(features=tf.train.Features(feature={
        k: tf.train.Feature(int64_list=tf.train.Int64List(value=v[0])) for k, v in token_ids.items()}))
    out["classifier"] = (shared.path(), {
        "serving_default": {"text_a": ["the sun", "rain"], "text_b": ["was bright", "fell"]},
        "serve_token_ids": token_ids,
        "serve_tf_examples": {"serialized_example": [example.SerializeToString().decode("latin-1")]},
    })
    squad = artefacts.exports(tmp_path_factory, spm_model, "squad")
    for version in ("v1", "v2"):
        ids = _token_ids(squad.seq)
        squad_ids = {**ids, **({"p_mask": [[0] * squad.seq] * 2} if version == "v2" else {})}
        out[f"squad_{version}"] = (squad.path(version), {
            "serving_default": {"question": ["what was bright?"], "context": ["the sun was bright over the hills."]},
            "serve_token_ids": squad_ids})
    race = artefacts.exports(tmp_path_factory, spm_model, "race")
    out["race"] = (race.path(), {
        "serving_default": {"article": ["the sun was bright."], "question": ["what was bright?"],
                            "options": [["the sun", "the rain", "the river", "the night"]]},
        "serve_token_ids": {k: [[row] * 4 for row in v] for k, v in _token_ids(race.seq).items()},
    })

    root = tmp_path_factory.mktemp("serving_inputs")
    tokenizer = FullTokenizer(spm_model_file=str(spm_model))
    pre = AlbertPreprocessor.from_tokenizer(tokenizer, SEQ)
    config = AlbertConfig.from_name("albert_tiny").replace(vocab_size=tokenizer.vocab_size)
    keras.utils.set_random_seed(0)
    token_ids = _token_ids(SEQ)
    ids, mask = token_ids["input_ids"], token_ids["input_mask"]

    def path(name):
        return str(root / name / "1")

    export_tagger(AlbertTagger(config, ["O", "B-x", "I-x"]), path("tagging"), preprocessor=pre)
    out["tagging"] = (path("tagging"), {"serving_default": {"sentence": ["anna smiled", "the sun rose"]},
                                        "serve_token_ids": token_ids})
    encoder = AlbertEncoder(config)
    encoder({k: np.asarray(v, "int32") for k, v in token_ids.items()})
    export_encoder(encoder, path("encoder"), spm_model_file=str(spm_model))
    out["encoder"] = (path("encoder"), {"serving_default": {
        "input_word_ids": ids, "input_mask": mask, "input_type_ids": token_ids["segment_ids"]}})
    export_preprocessor(path("preprocessor"), preprocessor=pre)
    out["preprocessor"] = (path("preprocessor"), {"serving_default": {"text_a": ["the sun", "rain"]},
                                                  "serve_text_pair": {"text_a": ["the sun"], "text_b": ["rain"]}})
    return out


def _bad_requests(valid: dict) -> dict[str, tuple[dict, str | None]]:
    """``{case: (feeds, fragment of the expected error or None for an empty answer)}`` from a valid request."""
    arrays = {k: np.array(v, dtype=object if isinstance(np.ravel(v)[0], str) else "int64") for k, v in valid.items()}
    strings = all(a.dtype == object for a in arrays.values())
    cases = {
        "scalar": ({k: a.reshape(-1)[0] for k, a in arrays.items()}, "must have the shape"),
        "one_rank_more": ({k: a[..., None] for k, a in arrays.items()}, "must have the shape"),
        "empty_batch": ({k: a[:0] for k, a in arrays.items()}, None),
    }
    if not strings:
        mask = next(k for k in arrays if k == "input_mask")
        ids = next(k for k in arrays if k in ("input_ids", "input_word_ids"))
        cases["zero_length_ids"] = ({k: a[..., :0] for k, a in arrays.items()}, f"{ids}: sequences of no token")
        cases["all_zero_mask"] = ({**arrays, mask: np.zeros_like(arrays[mask])}, f"{mask}: a row with no real token")
    return {name: ({k: {"shape": list(np.shape(v)), "values": np.asarray(v).tolist()} for k, v in feeds.items()},
                   fragment) for name, (feeds, fragment) in cases.items()}


@pytest.mark.slow
def test_every_signature_checks_its_inputs(exports, tmp_path):
    from tf1_client import as_json_text

    requests, expected = [], {}
    for name, (export_dir, signatures) in exports.items():
        for signature, valid in signatures.items():
            if signature == "serve_tf_examples":  # bytes that are not UTF-8 travel as surrogate-escaped text
                valid = {"serialized_example": [as_json_text(s.encode("latin-1"))
                                                for s in valid["serialized_example"]]}
            requests.append({"name": f"{name}/{signature}/valid", "dir": export_dir, "signature": signature,
                             "feeds": valid})
            expected[f"{name}/{signature}/valid"] = "ok"
            for case, (feeds, fragment) in _bad_requests(valid).items():
                key = f"{name}/{signature}/{case}"
                requests.append({"name": key, "dir": export_dir, "signature": signature, "feeds": feeds})
                expected[key] = fragment
    got = serve_in_fresh_process(tmp_path, requests)
    failures = []
    for key, fragment in expected.items():
        answer = got[key]
        if fragment == "ok":
            ok = "error" not in answer
        elif fragment is None:  # an empty batch: an empty answer, every output's batch dimension 0 (the
            # classifier's threshold is a scalar of the export, not an answer)
            ok = "error" not in answer and all(len(v) == 0 for k, v in answer.items()
                                               if k not in ("inputs", "method", "threshold"))
        else:
            error = answer.get("error", "")
            # the rank check's message, or (where a nested function's body runs first) EnsureShape's, which names
            # the input and the shape as well
            fragments = (fragment, "is not compatible with expected shape") if "shape" in fragment else (fragment,)
            ok = error.startswith("InvalidArgumentError") and any(f in error for f in fragments)
        if not ok:
            failures.append(f"{key}: {str(answer)[:400]}")
    assert not failures, "\n".join(failures)
    names = {key.split("/")[0] for key in expected}
    assert len(names) == 7 and len(expected) >= 7 * 4
