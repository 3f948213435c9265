"""The rename table between our Keras variables and the official TF1 checkpoint names.

Every checkpoint format is converted through the official variable names (the scopes of official ``modeling.py`` and of
the runners' heads) (``bert/embeddings/word_embeddings``, ``bert/encoder/transformer/group_{g}/inner_group_{k}/...``,
``cls/predictions/...``, ``cls/seq_relationship/...``): official TF1 checkpoints use them directly
and Hugging Face names map onto them one to one.

The fine-tuning heads are plain data declared by their task packages (:mod:`albert_tf.checkpoints.heads`) and read
from the model class (``task_heads``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from albert_tf.checkpoints.heads import TaskHead, heads_of

TRANSFORMS = ("identity", "transpose")
#: An official block variable name: ``(group, inner group, suffix under it)``.
OFFICIAL_BLOCK = re.compile(r"^bert/encoder/transformer/group_(\d+)/inner_group_(\d+)/(.+)$")


@dataclass(frozen=True)
class VariableRef:
    """A Keras variable and how the official array maps onto it.

    ``transform="transpose"``: the official array is the transpose of ours (heads whose
    ``output_weights`` are stored [out, in] while our layer keeps a Dense kernel [in, out]).
    """

    variable: object
    transform: str = "identity"

    def to_official(self) -> np.ndarray:
        value = np.asarray(self.variable.numpy())
        return value.T if self.transform == "transpose" else value

    def from_official(self, array: np.ndarray) -> np.ndarray:
        array = np.asarray(array)
        return array.T if self.transform == "transpose" else array

    @property
    def official_shape(self) -> tuple[int, ...]:
        shape = tuple(self.variable.shape)
        return shape[::-1] if self.transform == "transpose" else shape


def dense_names(prefix: str, layer) -> dict[str, VariableRef]:
    return {f"{prefix}/kernel": VariableRef(layer.kernel), f"{prefix}/bias": VariableRef(layer.bias)}


def layer_norm_names(prefix: str, layer) -> dict[str, VariableRef]:
    return {f"{prefix}/gamma": VariableRef(layer.gamma), f"{prefix}/beta": VariableRef(layer.beta)}


def _block_names(prefix: str, block) -> dict[str, VariableRef]:
    att = block.attention_sublayer
    a = att.attention
    out: dict[str, VariableRef] = {}
    for part in ("query", "key", "value"):
        out[f"{prefix}/attention_1/self/{part}/kernel"] = VariableRef(getattr(a, f"{part}_kernel"))
        out[f"{prefix}/attention_1/self/{part}/bias"] = VariableRef(getattr(a, f"{part}_bias"))
    out[f"{prefix}/attention_1/output/dense/kernel"] = VariableRef(a.output_kernel)
    out[f"{prefix}/attention_1/output/dense/bias"] = VariableRef(a.output_bias)
    out.update(layer_norm_names(f"{prefix}/LayerNorm", att.layer_norm))
    ffn = block.ffn_sublayer
    out.update(dense_names(f"{prefix}/ffn_1/intermediate/dense", ffn.intermediate))
    out.update(dense_names(f"{prefix}/ffn_1/intermediate/output/dense", ffn.output_dense))
    out.update(layer_norm_names(f"{prefix}/LayerNorm_1", ffn.layer_norm))
    return out


def encoder_variable_map(encoder, scope: str = "bert") -> dict[str, VariableRef]:
    """Official names of an ``AlbertEncoder``'s variables.

    ``sharing='all'`` maps group g / inner block k to ``group_{g}/inner_group_{k}``;
    ``sharing='none'`` is the G = L layout (``group_{layer}``). The attention-only and FFN-only
    ablations have no official layout and raise.
    """
    if encoder.sharing not in ("all", "none"):
        raise ValueError(
            f"sharing={encoder.sharing!r} has no official checkpoint layout (only 'all' and 'none' do)"
        )
    c = encoder.config
    emb = encoder.embeddings
    out: dict[str, VariableRef] = {
        f"{scope}/embeddings/word_embeddings": VariableRef(emb.word_embeddings.embeddings),
        f"{scope}/embeddings/token_type_embeddings": VariableRef(emb.token_type_embeddings.embeddings),
        f"{scope}/embeddings/position_embeddings": VariableRef(emb.position_embeddings),
    }
    out.update(layer_norm_names(f"{scope}/embeddings/LayerNorm", emb.layer_norm))
    if encoder.embedding_hidden_mapping_in is not None:
        out.update(dense_names(f"{scope}/encoder/embedding_hidden_mapping_in", encoder.embedding_hidden_mapping_in))
    for layer_index, row in enumerate(encoder.layer_blocks):
        group = c.group_of_layer(layer_index) if encoder.sharing == "all" else layer_index
        for k, block in enumerate(row):
            prefix = f"{scope}/encoder/transformer/group_{group}/inner_group_{k}"
            if f"{prefix}/LayerNorm/gamma" not in out:
                out.update(_block_names(prefix, block))
    out.update(dense_names(f"{scope}/pooler/dense", encoder.pooler))
    return out


def pretraining_head_variable_map(pretrainer) -> dict[str, VariableRef]:
    """``cls/predictions/*`` and ``cls/seq_relationship/*`` of an ``AlbertPretrainer``."""
    mlm, sop = pretrainer.mlm_head, pretrainer.sop_head
    out = dense_names("cls/predictions/transform/dense", mlm.transform_dense)
    out.update(layer_norm_names("cls/predictions/transform/LayerNorm", mlm.transform_layer_norm))
    out["cls/predictions/output_bias"] = VariableRef(mlm.output_bias)
    out["cls/seq_relationship/output_weights"] = VariableRef(sop.output_weights)
    out["cls/seq_relationship/output_bias"] = VariableRef(sop.output_bias)
    return out


def official_variable_map(model) -> dict[str, VariableRef]:
    """Official TF1 name -> ``VariableRef`` for an encoder, a pretrainer or a task model.

    A task model exposes its encoder as ``.encoder``; its head names come from the head its task package declared
    (:mod:`albert_tf.checkpoints.heads`).
    """
    from albert_tf.modeling.encoder import AlbertEncoder
    from albert_tf.modeling.models import AlbertPretrainer

    if not model.built:
        raise ValueError("build the model (call it once) before mapping its variables")
    if isinstance(model, AlbertEncoder):
        return encoder_variable_map(model)
    if isinstance(model, AlbertPretrainer):
        out = encoder_variable_map(model.encoder)
        out.update(pretraining_head_variable_map(model))
        return out
    encoder = getattr(model, "encoder", None)
    if not isinstance(encoder, AlbertEncoder):
        raise TypeError(f"{type(model).__name__} is not an ALBERT model (no AlbertEncoder at .encoder)")
    out = encoder_variable_map(encoder)
    for head in heads_of(model):
        out.update(head_variable_map(model, head))
    return out


def head_variable_map(model, head: TaskHead) -> dict[str, VariableRef]:
    """official name -> ``VariableRef`` of ``head``'s weights on ``model`` (each weight's attribute path)."""
    out: dict[str, VariableRef] = {}
    for name, weight in head.weights.items():
        variable = model
        for attribute in weight.path.split("."):
            variable = getattr(variable, attribute)
        out[name] = VariableRef(variable, "transpose" if weight.transposed else "identity")
    return out


def expected_official_shapes(config, with_pretraining_heads: bool = True) -> dict[str, tuple[int, ...]]:
    """Official names and shapes for a config, computed from the spec without building a model.

    Used to check a checkpoint against a config before any weights are materialised.
    """
    V, E, H, I = config.vocab_size, config.embedding_size, config.hidden_size, config.intermediate_size
    shapes: dict[str, tuple[int, ...]] = {
        "bert/embeddings/word_embeddings": (V, E),
        "bert/embeddings/token_type_embeddings": (config.type_vocab_size, E),
        "bert/embeddings/position_embeddings": (config.max_position_embeddings, E),
        "bert/embeddings/LayerNorm/gamma": (E,),
        "bert/embeddings/LayerNorm/beta": (E,),
    }
    if E != H:
        shapes["bert/encoder/embedding_hidden_mapping_in/kernel"] = (E, H)
        shapes["bert/encoder/embedding_hidden_mapping_in/bias"] = (H,)
    for g in range(config.num_hidden_groups):
        for k in range(config.inner_group_num):
            p = f"bert/encoder/transformer/group_{g}/inner_group_{k}"
            for part in ("query", "key", "value"):
                shapes[f"{p}/attention_1/self/{part}/kernel"] = (H, H)
                shapes[f"{p}/attention_1/self/{part}/bias"] = (H,)
            shapes[f"{p}/attention_1/output/dense/kernel"] = (H, H)
            shapes[f"{p}/attention_1/output/dense/bias"] = (H,)
            shapes[f"{p}/LayerNorm/gamma"] = (H,)
            shapes[f"{p}/LayerNorm/beta"] = (H,)
            shapes[f"{p}/ffn_1/intermediate/dense/kernel"] = (H, I)
            shapes[f"{p}/ffn_1/intermediate/dense/bias"] = (I,)
            shapes[f"{p}/ffn_1/intermediate/output/dense/kernel"] = (I, H)
            shapes[f"{p}/ffn_1/intermediate/output/dense/bias"] = (H,)
            shapes[f"{p}/LayerNorm_1/gamma"] = (H,)
            shapes[f"{p}/LayerNorm_1/beta"] = (H,)
    shapes["bert/pooler/dense/kernel"] = (H, H)
    shapes["bert/pooler/dense/bias"] = (H,)
    if with_pretraining_heads:
        shapes["cls/predictions/transform/dense/kernel"] = (H, E)
        shapes["cls/predictions/transform/dense/bias"] = (E,)
        shapes["cls/predictions/transform/LayerNorm/gamma"] = (E,)
        shapes["cls/predictions/transform/LayerNorm/beta"] = (E,)
        shapes["cls/predictions/output_bias"] = (V,)
        shapes["cls/seq_relationship/output_weights"] = (2, H)
        shapes["cls/seq_relationship/output_bias"] = (2,)
    return shapes
