"""Demo stage 1: the paper's Table 1, measured by building each official configuration.

For every released size we build the ALBERT encoder and count its parameters, split into the
embedding part (tables in E, their LayerNorm and the E->H projection) and the transformer part,
and put beside it the unshared BERT-style equivalent (E = H, no cross-layer sharing). The
unshared count is measured too: a 1-layer encoder with E = H is built and its block counted,
then ``embeddings + L * block + pooler`` (building a 1.3-billion-parameter BERT-xxlarge just to
count it would take minutes here).

The encoders are built with variables that have their shapes and no values (:func:`shapes_only`): a count needs
no weights, and drawing the random values of every size (ALBERT-xxlarge, BERT-large) is nearly all the time and
memory a real build takes.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Iterator
from typing import Any

import keras

from albert_tf.config import AlbertConfig
from albert_tf.modeling import AlbertEncoder
from albert_tf.progress import Progress

SIZES = ("base", "large", "xlarge", "xxlarge")
PAPER_ALBERT = {"base": "12M", "large": "18M", "xlarge": "60M", "xxlarge": "235M"}
PAPER_BERT = {"base": "108M", "large": "334M", "xlarge": "1270M", "xxlarge": "-"}


def _embedding_params(enc: AlbertEncoder) -> int:
    n = enc.embeddings.count_params()
    if enc.embedding_hidden_mapping_in is not None:
        n += enc.embedding_hidden_mapping_in.count_params()
    return n


@contextlib.contextmanager
def shapes_only() -> Iterator[None]:
    """Variables made inside have a shape and no value (Keras defers the value of a variable made in a
    ``StatelessScope(initialize_variables=False)`` and lists it for the next plain scope to fill in; that list is
    put back as it was on the way out, so nothing ever allocates the values of the models built here)."""
    from keras.src.backend.common import global_state

    pending = list(global_state.get_global_attribute("uninitialized_variables") or [])
    try:
        with keras.StatelessScope(initialize_variables=False):
            yield
    finally:
        global_state.set_global_attribute("uninitialized_variables", pending)


def measure(config: AlbertConfig) -> dict[str, Any]:
    """Parameter counts of the ALBERT encoder and of its unshared E = H equivalent."""
    with shapes_only():
        return _measure(config)


def _measure(config: AlbertConfig) -> dict[str, Any]:
    enc = AlbertEncoder(config)
    total = enc.count_params()
    embedding = _embedding_params(enc)
    blocks = sum(b.count_params() for b in enc.unique_blocks())
    del enc
    one = AlbertEncoder(
        config.replace(embedding_size=config.hidden_size, num_hidden_layers=1, num_hidden_groups=1), name="bert_1"
    )
    block = one.unique_blocks()[0].count_params()
    unshared = one.count_params() + (config.num_hidden_layers - 1) * block * config.inner_group_num
    unshared_embedding = _embedding_params(one)
    del one
    gc.collect()
    return {
        "params": total,
        "embedding_params": embedding,
        "transformer_params": blocks,
        "embedding_share": embedding / total,
        "unshared_equivalent_params": unshared,
        "unshared_embedding_share": unshared_embedding / unshared,
    }


def run(workdir: str | None = None, args: Any = None, version: str = "v2") -> dict[str, Any]:
    """Print Table 1 and return the measured rows."""
    rows = {}
    print(f"Table 1 (measured from the code, albert_*_{version} configs; paper figures in brackets)")
    header = (
        f"{'model':<16}{'params':>14}{'layers':>8}{'hidden':>8}{'embed':>7}{'sharing':>9}"
        f"{'embed share':>13}{'unshared (BERT-style)':>24}{'embed share':>13}"
    )
    print(header)
    print("-" * len(header))
    for size in SIZES:
        cfg = AlbertConfig.from_name(f"albert_{size}_{version}")
        with Progress(f"  (building ALBERT-{size})").ticking():  # a line if a model takes over 10 s to build
            m = measure(cfg)
        rows[f"albert_{size}"] = {**m, "layers": cfg.num_hidden_layers, "hidden": cfg.hidden_size,
                                  "embedding": cfg.embedding_size}
        print(
            f"{'ALBERT-' + size:<16}{m['params']:>14,}{cfg.num_hidden_layers:>8}{cfg.hidden_size:>8}"
            f"{cfg.embedding_size:>7}{'all':>9}{m['embedding_share']:>12.1%} "
            f"{m['unshared_equivalent_params']:>23,}{m['unshared_embedding_share']:>12.1%}"
        )
        print(f"{'':<16}{'[' + PAPER_ALBERT[size] + ']':>14}{'':>45}{'[BERT ' + PAPER_BERT[size] + ']':>24}")
    for size in ("base", "large"):
        cfg = AlbertConfig.from_name(f"bert_{size}")
        with Progress(f"  (building BERT-{size})").ticking(), shapes_only():
            enc = AlbertEncoder(cfg)
        n = enc.count_params()
        rows[f"bert_{size}"] = {"params": n, "embedding_share": _embedding_params(enc) / n}
        print(
            f"{'BERT-' + size:<16}{n:>14,}{cfg.num_hidden_layers:>8}{cfg.hidden_size:>8}{cfg.embedding_size:>7}"
            f"{'none':>9}{_embedding_params(enc) / n:>12.1%}   (configs/bert_{size}.json, vocab 30000)"
        )
        del enc
        gc.collect()
    print("Counts include the pooler. ALBERT-xxlarge: the code gives 223M; the paper's 235M does not match its")
    print("own released config (albert_config.json). v1 and v2 share dimensions, so their counts are identical.")
    if workdir:
        import os

        os.makedirs(workdir, exist_ok=True)
        with open(os.path.join(workdir, "table1.json"), "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=2)
    return rows
