"""Sentence-pair instances from documents: official ``create_pretraining_data.py: create_instances_from_document``.

A *document* is a list of segments (one per input line); a segment is a list of token ids. The algorithm, as in
the official code and with the official RNG call order:

* ``max_num_tokens = max_seq_length - 3``; ``target_seq_length = max_num_tokens``, or with probability
  ``short_seq_prob`` ``rng.randint(2, max_num_tokens)``. The official draws it once per document (and dupe);
  ``short_seq_scope="instance"`` draws again after every instance (then the share of short targets among the
  instances equals ``short_seq_prob``; with per-document draws long documents weight the share by their length).
* segments accumulate into a chunk until it holds ``target_seq_length`` tokens or the document ends; A is the first
  ``a_end`` segments (``rng.randint(1, len(chunk) - 1)``, or 1 for a one-segment chunk).
* the sentence-order policy (``sentence_order``) decides B and the label (1 = swapped or random, 0 = in order):

  - ``official`` (ALBERT's SOP as released): a one-segment chunk takes B from a random *other document* (label 1,
    google-research/albert#234); otherwise with probability 0.5 B = the rest of the chunk and A, B are swapped
    (label 1), else in order (label 0).
  - ``nsp`` (BERT, ``--random_next_sentence``): one-segment chunk or ``rng.random() < 0.5`` -> random-document B
    (label 1, unused segments put back), else the actual next segments (label 0).
  - ``pure``: only swapped pairs are negatives. A one-segment chunk is cut at a random token
    (``rng.randint(1, len - 1)``) into A and B, then swapped with probability 0.5 like any other chunk; a chunk of a
    single token cannot be cut and is skipped (counted).
  - ``none``: no sentence-level task: the whole chunk is one segment, ``[CLS] A [SEP]``, label 0.

* ``truncate_seq_pair``: while too long, drop one token from the longer side, from the front or the back with
  probability 0.5 each (here by moving slice bounds instead of deleting list items: same draws, no O(n^2)).
* ``[CLS] A [SEP] B [SEP]`` with segment ids 0 ... 0 1 ... 1, then :func:`create_masked_lm_predictions`.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from albert_tf.data.pretraining.masking import MaskingConfig, NgramSampler, create_masked_lm_predictions

__all__ = ["SENTENCE_ORDER_POLICIES", "Instance", "InstanceConfig", "create_instances_from_document"]

SENTENCE_ORDER_POLICIES = ("official", "pure", "nsp", "none")


class InstanceConfig:
    """Flags of instance creation plus the special-token ids."""

    def __init__(
        self,
        *,
        max_seq_length: int,
        short_seq_prob: float,
        cls_id: int,
        sep_id: int,
        masking: MaskingConfig,
        sentence_order: str = "official",
        short_seq_scope: str = "document",
    ):
        if sentence_order not in SENTENCE_ORDER_POLICIES:
            raise ValueError(f"sentence_order must be one of {SENTENCE_ORDER_POLICIES}, got {sentence_order!r}")
        if short_seq_scope not in ("document", "instance"):
            raise ValueError(f"short_seq_scope must be 'document' or 'instance', got {short_seq_scope!r}")
        if max_seq_length < 5:
            raise ValueError(
                f"max_seq_length must be >= 5 ([CLS] A [SEP] B [SEP] with 2 target tokens), got {max_seq_length}"
            )
        self.max_seq_length = int(max_seq_length)
        self.short_seq_prob = float(short_seq_prob)
        self.cls_id = int(cls_id)
        self.sep_id = int(sep_id)
        self.masking = masking
        self.sentence_order = sentence_order
        self.short_seq_scope = short_seq_scope


class Instance:
    """One training example: masked ids, the A/B split, masked positions/labels, boundary flags, order label."""

    __slots__ = ("ids", "len_a", "len_b", "token_boundary", "positions", "labels", "label")

    def __init__(self, ids, len_a, len_b, token_boundary, positions, labels, label):
        self.ids = ids  # [CLS] A [SEP] (B [SEP]) after masking
        self.len_a = len_a
        self.len_b = len_b  # 0 for sentence_order="none" (no second segment)
        self.token_boundary = token_boundary
        self.positions = positions
        self.labels = labels
        self.label = label

    @property
    def segment_ids(self) -> list[int]:
        return [0] * (self.len_a + 2) + ([1] * (self.len_b + 1) if self.len_b else [])


def _truncate(a_len: int, b_len: int, max_num_tokens: int, rng: random.Random) -> tuple[int, int, int, int]:
    """Official ``truncate_seq_pair`` as slice bounds: returns how many tokens to cut from (A front, A back, B front,
    B back)."""
    af = ab = bf = bb = 0
    rand = rng.random
    while a_len + b_len > max_num_tokens:
        if a_len > b_len:
            if rand() < 0.5:
                af += 1
            else:
                ab += 1
            a_len -= 1
        else:
            if rand() < 0.5:
                bf += 1
            else:
                bb += 1
            b_len -= 1
    return af, ab, bf, bb


def _flatten(segments) -> list[int]:
    out: list[int] = []
    for s in segments:
        out.extend(s)
    return out


def create_instances_from_document(
    documents: list[list[list[int]]],
    document_index: int,
    cfg: InstanceConfig,
    rng: random.Random,
    sampler: NgramSampler,
    emit: Callable[[Instance], None],
    counters: dict[str, int] | None = None,
) -> None:
    """Create the instances of ``documents[document_index]`` and pass each to ``emit`` (official algorithm)."""
    document = documents[document_index]
    max_num_tokens = cfg.max_seq_length - 3
    policy = cfg.sentence_order
    per_instance_target = cfg.short_seq_scope == "instance"

    def draw_target() -> int:
        if rng.random() < cfg.short_seq_prob:
            return rng.randint(2, max_num_tokens)
        return max_num_tokens

    target_seq_length = draw_target()
    chunk: list[list[int]] = []
    current_length = 0
    i = 0
    n_doc = len(document)
    while i < n_doc:
        segment = document[i]
        chunk.append(segment)
        current_length += len(segment)
        if i == n_doc - 1 or current_length >= target_seq_length:
            if chunk:
                made = _make_instance(documents, document_index, chunk, target_seq_length, max_num_tokens, cfg, rng,
                                      sampler, policy, counters)
                if made is not None:
                    instance, put_back = made
                    i -= put_back
                    emit(instance)
                if per_instance_target:
                    target_seq_length = draw_target()
            chunk = []
            current_length = 0
        i += 1


def _make_instance(documents, document_index, chunk, target_seq_length, max_num_tokens, cfg, rng, sampler, policy,
                   counters):
    a_end = 1
    if len(chunk) >= 2:
        a_end = rng.randint(1, len(chunk) - 1)
    put_back = 0
    if policy == "none":
        tokens_a = _flatten(chunk)
        tokens_b: list[int] = []
        label = 0
    else:
        tokens_a = _flatten(chunk[:a_end])
        if len(chunk) == 1 and policy == "pure":
            if len(tokens_a) < 2:
                if counters is not None:
                    counters["skipped_single_token_chunks"] = counters.get("skipped_single_token_chunks", 0) + 1
                return None
            cut = rng.randint(1, len(tokens_a) - 1)
            tokens_a, tokens_b = tokens_a[:cut], tokens_a[cut:]
            if rng.random() < 0.5:
                tokens_a, tokens_b, label = tokens_b, tokens_a, 1
            else:
                label = 0
        elif (policy != "pure" and len(chunk) == 1) or (policy == "nsp" and rng.random() < 0.5):
            label = 1
            target_b_length = target_seq_length - len(tokens_a)
            random_document_index = document_index
            for _ in range(10):
                random_document_index = rng.randint(0, len(documents) - 1)
                if random_document_index != document_index:
                    break
            random_document = documents[random_document_index]
            random_start = rng.randint(0, len(random_document) - 1)
            tokens_b = []
            for j in range(random_start, len(random_document)):
                tokens_b.extend(random_document[j])
                if len(tokens_b) >= target_b_length:
                    break
            put_back = len(chunk) - a_end
        elif policy != "nsp" and rng.random() < 0.5:
            label = 1
            tokens_b = _flatten(chunk[a_end:])
            tokens_a, tokens_b = tokens_b, tokens_a
        else:
            label = 0
            tokens_b = _flatten(chunk[a_end:])

    af, ab, bf, bb = _truncate(len(tokens_a), len(tokens_b), max_num_tokens, rng)
    a = tokens_a[af:len(tokens_a) - ab]
    b = tokens_b[bf:len(tokens_b) - bb]
    la, lb = len(a), len(b)
    if la < 1 or (policy != "none" and lb < 1):
        raise AssertionError(f"empty segment after truncation (len A={la}, len B={lb}); this is a bug")
    if policy == "none":
        ids = [cfg.cls_id, *a, cfg.sep_id]
        specials = (0, la + 1)
    else:
        ids = [cfg.cls_id, *a, cfg.sep_id, *b, cfg.sep_id]
        specials = (0, la + 1, la + lb + 2)
    m = create_masked_lm_predictions(ids, specials, cfg.masking, rng, sampler)
    return Instance(m.output_ids, la, lb, m.token_boundary, m.positions, m.labels, label), put_back
