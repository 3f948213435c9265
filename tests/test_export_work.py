"""The work a raw-text request costs the default classifier export, read from a traced request (no timing).

A guard for serving latency that cannot flake: a short pair must run its own tokens through every dense layer (not
its length bucket, not ``max_seq_length``), the last layer only the ``[CLS]`` token the pooler reads, and a batch of
mixed lengths only its real tokens. A change that adds dense work to a request fails here.
"""

from __future__ import annotations

import collections

import artefacts
import pytest
from conftest import shared_path

LAYERS, HIDDEN, INTERMEDIATE = 3, 32, 64
SHORT = ("The company said its quarterly profit rose by nearly a third on strong sales.",
         "Quarterly earnings at the firm climbed almost thirty percent, the company reported on Tuesday.")
OTHER = ("A cat.", "A dog.")


@pytest.fixture(scope="module")
def exports(tmp_path_factory, spm_model):
    """The default export and the every-position export padded to ``max_seq_length`` (the official export) of one
    tiny classifier (the session's ``classifier_variants``, ``tests/artefacts.py``), with its preprocessor."""
    from albert_tf.tokenization import AlbertPreprocessor, FullTokenizer

    shared_path("spm", "30k-clean.model")  # the token counts below are 30k-clean's
    shared = artefacts.exports(tmp_path_factory, spm_model, "classifier_variants")
    config = shared.config()
    assert (config.num_hidden_layers, config.hidden_size, config.intermediate_size) == (LAYERS, HIDDEN, INTERMEDIATE)
    assert shared.seq == 128
    pre = AlbertPreprocessor.from_tokenizer(FullTokenizer(spm_model_file=str(spm_model)), 128)
    return {"default": shared.path("default"), "padded": shared.path("padded")}, pre


def _tokens(pre, pairs) -> list[int]:
    import tensorflow as tf

    feats = pre({"text_a": tf.constant([a for a, _ in pairs]), "text_b": tf.constant([b for _, b in pairs])})
    return [int(n) for n in feats["input_mask"].numpy().sum(1)]


def _dense(export_dir, pairs) -> list[tuple[int, int]]:
    from albert_tf.export.work import dense_work, trace_request

    feeds = {"text_a": [a for a, _ in pairs], "text_b": [b for _, b in pairs]}
    return dense_work(trace_request(export_dir, feeds, output="label", warmup=1))


def _ffn_positions(work) -> list[int]:
    return [positions for positions, width in work if width == INTERMEDIATE]


@pytest.mark.heavy
def test_a_short_pair_runs_its_own_tokens_through_the_dense_layers(exports):
    paths, pre = exports
    (n,) = _tokens(pre, [SHORT])
    assert 32 < n < 48  # a real request's length (about 40 tokens), between two bucket lengths
    work = _dense(paths["default"], [SHORT])
    # every layer's FFN on the pair's n tokens, the last one on its [CLS] alone (the pooler reads nothing else)
    assert _ffn_positions(work) == [n] * (LAYERS - 1) + [1]
    assert max(positions for positions, _ in work) == n  # nothing at the bucket (48) or at max_seq_length (128)
    widths = collections.Counter(width for _, width in work)
    # Q, K, V and the output projection of each layer, the FFN's second matmul, the E -> H projection, the pooler
    assert widths == {HIDDEN: 4 * LAYERS + LAYERS + 2, INTERMEDIATE: LAYERS, 2: 1}
    total = sum(positions * width for positions, width in work)
    # the official export's work on the same pair: every position of 128 in every dense layer
    padded = _dense(paths["padded"], [SHORT])
    assert _ffn_positions(padded) == [128] * LAYERS
    assert total < sum(positions * width for positions, width in padded) * n / 128


@pytest.mark.heavy
def test_a_batch_of_mixed_lengths_runs_only_its_real_tokens(exports):
    paths, pre = exports
    lengths = _tokens(pre, [SHORT, OTHER])
    assert lengths[1] < lengths[0] / 2  # the short row is mostly padding once the batch is cut to its longest
    work = _dense(paths["default"], [SHORT, OTHER])
    assert _ffn_positions(work) == [sum(lengths)] * (LAYERS - 1) + [2]
