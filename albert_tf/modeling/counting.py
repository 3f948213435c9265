"""The parameter count of an ALBERT encoder as a formula of its configuration (the paper's §3.1 arithmetic).

Written from the architecture, not from the Keras layers, so that tests can check every built model against it
and the reproduction can print it beside the measured counts:

* embeddings: ``V·E + P·E + T·E`` tables and a LayerNorm (``2E``); the projection ``E·H + H`` only when E != H;
* one attention sublayer: Q, K, V and output dense layers ``4(H² + H)`` and its LayerNorm ``2H``;
* one feed-forward sublayer: ``H·I + I + I·H + H`` and its LayerNorm ``2H``;
* the pooler ``H² + H``.

How many attention and feed-forward sublayers exist depends on the sharing mode (L layers, G groups, K inner
blocks): all-shared ``G·K`` of each; shared-attention ``G·K`` attention and ``L·K`` feed-forward; shared-FFN the
reverse; not-shared ``L·K`` of each.
"""

from __future__ import annotations

from typing import Any

__all__ = ["encoder_parameter_formula"]


def encoder_parameter_formula(config: Any, sharing: str = "all") -> int:
    """Parameters of ``AlbertEncoder(config, sharing=sharing)`` (pooler included, no pretraining heads)."""
    c = config
    V, E, H, I = c.vocab_size, c.embedding_size, c.hidden_size, c.intermediate_size
    P, T = c.max_position_embeddings, c.type_vocab_size
    L, G, K = c.num_hidden_layers, c.num_hidden_groups, c.inner_group_num
    embeddings = V * E + T * E + P * E + 2 * E
    mapping = E * H + H if E != H else 0
    attention = 4 * (H * H + H) + 2 * H
    ffn = H * I + I + I * H + H + 2 * H
    pooler = H * H + H
    counts = {"all": (G * K, G * K), "attention": (G * K, L * K), "ffn": (L * K, G * K), "none": (L * K, L * K)}
    if sharing not in counts:
        raise ValueError(f"sharing must be one of {sorted(counts)}, got {sharing!r}")
    n_attention, n_ffn = counts[sharing]
    return embeddings + mapping + n_attention * attention + n_ffn * ffn + pooler
