"""Python reference of the official input packing: ``[CLS] a [SEP] b [SEP]``, pair truncation, zero padding.

``convert_single_example`` (classifier_utils.py): with a non-empty ``tokens_b`` the pair is truncated by
``_truncate_seq_pair`` (pop from the end of the longer list, ``b`` on ties, until ``len(a) + len(b) <= max - 3``);
otherwise ``a`` is cut to ``max - 2`` and no second ``[SEP]`` is written (an empty ``b`` counts as absent, as the
official ``if tokens_b:``). Segment ids are 0 for ``[CLS]``, ``a`` and the first ``[SEP]``, 1 for ``b`` and the final
``[SEP]``; padding is id 0, mask 0, segment 0.
"""

from __future__ import annotations

__all__ = ["INPUT_NAMES", "pack_inputs", "truncated_pair_lengths"]

#: The id tensors of one packed example: what the packing writes, every task's features hold and the encoder reads.
INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


def truncated_pair_lengths(len_a: int, len_b: int, max_num_tokens: int) -> tuple[int, int]:
    """Lengths the official ``_truncate_seq_pair`` leaves, in closed form.

    The shorter side keeps everything if it fits in its half; otherwise ``a`` keeps ``ceil(L/2)`` and ``b``
    ``floor(L/2)`` (``b`` loses the tie). Equivalent to ``lb' = min(lb, max(L // 2, L - la))`` and
    ``la' = min(la, L - lb')``.
    """
    new_b = min(len_b, max(max_num_tokens // 2, max_num_tokens - len_a))
    new_a = min(len_a, max_num_tokens - new_b)
    return new_a, new_b


def pack_inputs(
    ids_a: list[int], ids_b: list[int] | None, max_seq_length: int, cls_id: int = 2, sep_id: int = 3
) -> dict[str, list[int]]:
    """``input_ids`` / ``input_mask`` / ``segment_ids`` of one example, each ``max_seq_length`` long."""
    if max_seq_length < 3:
        raise ValueError(f"max_seq_length must be >= 3 for [CLS] a [SEP] b [SEP], got {max_seq_length}")
    if ids_b:
        la, lb = truncated_pair_lengths(len(ids_a), len(ids_b), max_seq_length - 3)
        ids = [cls_id, *ids_a[:la], sep_id, *ids_b[:lb], sep_id]
        segments = [0] * (la + 2) + [1] * (lb + 1)
    else:
        a = ids_a[: max_seq_length - 2]
        ids = [cls_id, *a, sep_id]
        segments = [0] * len(ids)
    pad = max_seq_length - len(ids)
    return {
        "input_ids": ids + [0] * pad,
        "input_mask": [1] * len(ids) + [0] * pad,
        "segment_ids": segments + [0] * pad,
    }
