"""AlbertEncoder: embeddings in E, projection E->H, L layer applications of shared blocks, pooler.

Layer ``l`` uses group ``g = int(l / L * G)`` and applies that group's K inner blocks in
sequence (official ``group_{g}/inner_group_{k}``), so the model holds G*K distinct blocks but
computes L*K of them. Sharing is the same ``TransformerBlock`` object called again.

``sharing`` selects the paper's Table 4 ablation:

* ``all`` (default, ALBERT): whole blocks shared within a group.
* ``attention``: only the attention sublayer (with its LayerNorm) is shared; every layer has
  its own FFN.
* ``ffn``: only the FFN sublayer (with ``LayerNorm_1``) is shared; every layer has its own
  attention.
* ``none``: nothing shared (each layer its own block; the same as G = L).

``last_layer_subset=True`` (what ``AlbertPretrainer`` builds by default) adds the int32 input
``masked_lm_positions`` [B, P] and computes the *last* block (the last inner block of the last layer)
only at [CLS] and those positions: outputs ``masked_sequence_output`` [B, P, H] (the last layer's output
at the masked positions) and ``pooled_output``, no ``sequence_output``. Exact: that block's keys and
values still come from every position of the block below, and no later computation reads other rows.
Only the last inner block can be cut: with K > 1 the earlier inner blocks of the last layer feed the
keys and values of the next one, which need every position. Same variables, so every checkpoint loads.

``recompute_activations=True`` recomputes every block application's activations in the backward pass instead
of keeping them (``modeling.recompute``): training memory grows with the L block inputs instead of L blocks'
attention scores and FFN intermediates, at the cost of one more forward pass. Same variables and outputs.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import keras
from keras import ops

from albert_tf.config import MODEL_CONFIGS, SHARING_MODES, AlbertConfig, ConfigError
from albert_tf.modeling.attention import TokenLayout, attention_bias_from_example_ids, attention_bias_from_mask
from albert_tf.modeling.embeddings import AlbertEmbeddings
from albert_tf.modeling.initializers import truncated_normal
from albert_tf.modeling.serialization import RebuiltFromConfig
from albert_tf.modeling.transformer import AttentionSublayer, ExampleQueries, FeedForwardSublayer, TransformerBlock
from albert_tf.tokenization.packing import INPUT_NAMES


def as_config(config: AlbertConfig | dict[str, Any]) -> AlbertConfig:
    """Accept an AlbertConfig or its dict form (what ``get_config`` stores)."""
    if isinstance(config, AlbertConfig):
        return config
    return AlbertConfig.from_dict(config)


def preset_arguments(
    model_class: type, preset: str, kwargs: dict[str, Any]
) -> tuple[AlbertConfig, dict[str, Any], Callable[[Any], Any] | None]:
    """``(config, constructor options, load)`` for the models' ``from_preset(preset, **kwargs)``.

    A pretrained preset (``albert_base_v2``, ``albert/albert-base-v2``, a ``$ALBERT_TF_PRESETS`` entry) gives its
    own config and ``load(model)``, which loads its weights and returns the load report; ``load_weights=False``
    (keras-hub's keyword) skips the download and builds the model config of that name, randomly initialised. Any
    other name is a packaged model config (``AlbertConfig.from_name``; an unknown name raises ``ConfigError``
    listing them) and ``load`` is None. Every ``kwargs`` key that is an ``AlbertConfig`` field is applied to the config
    (validated), so one call can both pick a preset and adapt it, e.g. ``vocab_size`` to a tokenizer. The
    remaining keys must be named parameters of ``model_class.__init__`` (or Keras' ``dtype``/``trainable``):
    Keras' functional ``Model`` silently drops unknown keywords, so a misspelt option would otherwise be lost
    without a word. No constructor option shares a name with a config field.
    """
    from albert_tf import configs

    load_weights = kwargs.pop("load_weights", True)
    found = configs.pretrained(preset) if load_weights else None
    if found is None and preset not in MODEL_CONFIGS:
        raise ConfigError(f"unknown preset {preset!r}: neither released weights (`python -m albert_tf.configs` lists "
                          f"them) nor a model config ({', '.join(MODEL_CONFIGS)})")
    config, load = found if found is not None else (AlbertConfig.from_name(preset), None)
    config_keys = {f.name for f in fields(AlbertConfig)} - {"extra"}
    params = inspect.signature(model_class.__init__).parameters
    option_keys = {n for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD} - {"self", "config"}
    option_keys |= {"dtype", "trainable"}
    unknown = sorted(set(kwargs) - config_keys - option_keys)
    if unknown:
        raise TypeError(
            f"{model_class.__name__}.from_preset() got unexpected keyword argument(s) {', '.join(unknown)}; "
            f"options: {', '.join(sorted(option_keys))}; config fields: {', '.join(sorted(config_keys))}"
        )
    changes = {k: v for k, v in kwargs.items() if k in config_keys}
    options = {k: v for k, v in kwargs.items() if k not in config_keys}
    return (config.replace(**changes) if changes else config), options, load


def build_from_preset(model_class: type, preset: str, kwargs: dict[str, Any]) -> Any:
    """``model_class.from_preset``: the model built from :func:`preset_arguments`, with the preset's pretrained
    weights loaded where it has them (the encoder's; a task head stays randomly initialised)."""
    config, options, load = preset_arguments(model_class, preset, kwargs)
    model = model_class(config, **options)
    if load is not None:
        load(model)
    return model


def encode(embeddings: Any, mapping: Any, blocks: list[list[Any]], input_ids: Any, segment_ids: Any,
           attention_bias: Any, *, position_ids: Any = None, layout: TokenLayout | None = None,
           query_positions: Any = None, queries: ExampleQueries | None = None,
           training: bool | None = None) -> tuple[Any, Any, list[Any]]:
    """ALBERT's forward pass, written once for both calls of :class:`AlbertEncoder` (the functional graph on
    [B, S] rows and ``call_packed`` on packed rows or their real tokens): embeddings in E, the E -> H projection
    (``mapping``; None when E = H), then the [L][K] ``blocks`` in order. ``layout``: the real tokens the dense
    layers see (attention alone reads it); ``query_positions`` [B, P]: the last block computes only those rows (the
    MLM positions); ``queries``: the last block computes only those tokens (``call_packed(pooled_only=True)``).
    Returns ``(embedding_output, hidden, the block outputs before the last one's subset)``."""
    embedding_output = embeddings(input_ids, segment_ids, training=training, position_ids=position_ids)
    x = mapping(embedding_output) if mapping is not None else embedding_output
    applications = [block for row in blocks for block in row]
    outputs = []
    subset = query_positions is not None or queries is not None
    for block in applications[:-1] if subset else applications:
        x = block(x, attention_bias, training=training, layout=layout)
        outputs.append(x)
    if subset:
        x = applications[-1](x, attention_bias, training=training, query_positions=query_positions, layout=layout,
                             queries=queries)
    return embedding_output, x, outputs


def example_queries(attention_bias: Any, example_positions: Any, tokens: Any) -> ExampleQueries:
    """The [CLS] token of each example of packed rows as the last block's only queries: ``attention_bias`` [R, 1, L, L]
    (``attention_bias_from_example_ids`` of the rows), ``example_positions`` [N] (each [CLS] as a flat index into the
    rows), ``tokens`` [N] (the same tokens as indices into the block's input). Each query keeps its own row of the
    rows' bias, so it attends to exactly the keys it attends to in the full block."""
    length = ops.shape(attention_bias)[-1]
    own = ops.take(ops.reshape(attention_bias, (-1, length)), example_positions, axis=0)  # [N, L]
    return ExampleQueries(tokens, example_positions // length, own[:, None, None, :])


def encoder_inputs() -> dict[str, keras.KerasTensor]:
    """The three int32 [batch, seq] inputs named as in the official TFRecords."""
    return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertEncoder(RebuiltFromConfig, keras.Model):
    """The ALBERT backbone as a functional Keras model.

    Inputs: dict of int32 ``input_ids``, ``input_mask``, ``segment_ids`` [B, S].
    Outputs: dict with ``sequence_output`` [B, S, H] and ``pooled_output`` [B, H]
    (tanh dense on the [CLS] position); with ``output_all_layers=True`` also
    ``encoder_outputs`` (list of the L*K block outputs) and ``embedding_output`` [B, S, E].
    With ``last_layer_subset=True``: a fourth input ``masked_lm_positions`` [B, P] and outputs
    ``masked_sequence_output`` [B, P, H] and ``pooled_output`` (module docstring).
    """

    config_options = ("sharing", "output_all_layers", "last_layer_subset", "recompute_activations")

    def __init__(
        self,
        config: AlbertConfig | dict[str, Any],
        sharing: str = "all",
        output_all_layers: bool = False,
        last_layer_subset: bool = False,
        recompute_activations: bool = False,
        name: str = "albert_encoder",
        **kwargs,
    ):
        config = as_config(config)
        if sharing not in SHARING_MODES:
            raise ConfigError(f"sharing must be one of {', '.join(SHARING_MODES)}, got {sharing!r}")
        if last_layer_subset and output_all_layers:
            raise ConfigError("last_layer_subset computes the last layer at a few positions only; "
                              "output_all_layers needs it everywhere: choose one")
        dtype = kwargs.pop("dtype", None)
        c = config
        init = truncated_normal(c.initializer_range)

        embeddings = AlbertEmbeddings(
            c.vocab_size,
            c.embedding_size,
            max_position_embeddings=c.max_position_embeddings,
            type_vocab_size=c.type_vocab_size,
            initializer_range=c.initializer_range,
            dropout_rate=c.hidden_dropout_prob,
            name="embeddings",
            dtype=dtype,
        )
        mapping = None
        if c.embedding_size != c.hidden_size:
            mapping = keras.layers.Dense(
                c.hidden_size, kernel_initializer=init, name="embedding_hidden_mapping_in", dtype=dtype
            )
        blocks = self._make_blocks(c, sharing, dtype)
        for row in blocks:
            for block in row:
                block.recompute = bool(recompute_activations)
        pooler = keras.layers.Dense(
            c.hidden_size, activation="tanh", kernel_initializer=init, name="pooler_dense", dtype=dtype
        )

        inputs = encoder_inputs()
        if last_layer_subset:
            inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32", name="masked_lm_positions")
        query_positions = None
        if last_layer_subset:
            # [CLS] (row 0) for the pooler, then the masked positions: one [B, 1 + P] query set.
            query_positions = keras.ops.concatenate(
                [keras.ops.zeros_like(inputs["masked_lm_positions"][:, :1]), inputs["masked_lm_positions"]], axis=1
            )
        embedding_output, x, all_layers = encode(
            embeddings, mapping, blocks, inputs["input_ids"], inputs["segment_ids"],
            attention_bias_from_mask(inputs["input_mask"]), query_positions=query_positions)
        if last_layer_subset:
            outputs = {"masked_sequence_output": x[:, 1:, :], "pooled_output": pooler(x[:, 0, :])}
        else:
            outputs = {"sequence_output": x, "pooled_output": pooler(x[:, 0, :])}
        if output_all_layers:
            outputs["encoder_outputs"] = all_layers
            outputs["embedding_output"] = embedding_output

        super().__init__(inputs=inputs, outputs=outputs, name=name, dtype=dtype, **kwargs)
        self.config = c
        self.sharing = sharing
        self.output_all_layers = output_all_layers
        self.last_layer_subset = bool(last_layer_subset)
        self.recompute_activations = bool(recompute_activations)
        self.embeddings = embeddings
        self.embedding_hidden_mapping_in = mapping
        self.pooler = pooler
        self.layer_blocks = blocks  # [L][K] block applied at (layer, inner index)

    @classmethod
    def from_preset(cls, preset: str, /, **kwargs: Any) -> AlbertEncoder:
        """An encoder from a preset name: a pretrained preset (``albert_base_v2``, ``albert/albert-base-v2``, ...)
        with its released weights (fetched and cached on first use), or a model config (``albert_tiny``)
        randomly initialised; ``load_weights=False`` builds the config alone.

        ``kwargs`` holding ``AlbertConfig`` fields change the config (e.g. ``vocab_size``); the rest go
        to the constructor (``sharing``, ``output_all_layers``, ``name``, ``dtype``). An unknown preset raises
        ``ConfigError`` listing the known ones.
        """
        return build_from_preset(cls, preset, kwargs)

    @staticmethod
    def _make_blocks(c: AlbertConfig, sharing: str, dtype) -> list[list[TransformerBlock]]:
        """The block object used at every (layer, inner) position, sharing as requested."""
        def kwargs_for(name):
            return dict(
                hidden_size=c.hidden_size,
                num_attention_heads=c.num_attention_heads,
                intermediate_size=c.intermediate_size,
                hidden_act=c.hidden_act,
                dropout_rate=c.hidden_dropout_prob,
                attention_dropout_rate=c.attention_probs_dropout_prob,
                initializer_range=c.initializer_range,
                name=name,
                dtype=dtype,
            )

        L, K = c.num_hidden_layers, c.inner_group_num
        per_layer: list[list[TransformerBlock]] = []
        if sharing == "all":
            shared = {}
            for layer_index in range(L):
                g = c.group_of_layer(layer_index)
                row = []
                for k in range(K):
                    if (g, k) not in shared:
                        shared[(g, k)] = TransformerBlock(**kwargs_for(f"transformer_group_{g}_inner_group_{k}"))
                    row.append(shared[(g, k)])
                per_layer.append(row)
            return per_layer
        if sharing == "none":
            return [
                [TransformerBlock(**kwargs_for(f"transformer_layer_{layer}_inner_group_{k}")) for k in range(K)]
                for layer in range(L)
            ]
        # Partial sharing: one shared sublayer per (group, inner index), the other per layer.
        shared_sub: dict[tuple[int, int], Any] = {}
        for layer_index in range(L):
            g = c.group_of_layer(layer_index)
            row = []
            for k in range(K):
                if (g, k) not in shared_sub:
                    if sharing == "attention":
                        shared_sub[(g, k)] = AttentionSublayer(
                            c.hidden_size,
                            c.num_attention_heads,
                            dropout_rate=c.hidden_dropout_prob,
                            attention_dropout_rate=c.attention_probs_dropout_prob,
                            initializer_range=c.initializer_range,
                            name=f"shared_attention_group_{g}_inner_group_{k}",
                            dtype=dtype,
                        )
                    else:
                        shared_sub[(g, k)] = FeedForwardSublayer(
                            c.hidden_size,
                            c.intermediate_size,
                            hidden_act=c.hidden_act,
                            dropout_rate=c.hidden_dropout_prob,
                            initializer_range=c.initializer_range,
                            name=f"shared_ffn_group_{g}_inner_group_{k}",
                            dtype=dtype,
                        )
                key = "attention" if sharing == "attention" else "ffn"
                row.append(
                    TransformerBlock(
                        **kwargs_for(f"transformer_layer_{layer_index}_inner_group_{k}"), **{key: shared_sub[(g, k)]}
                    )
                )
            per_layer.append(row)
        return per_layer

    def call_packed(self, features: dict[str, Any], training: bool = False, unpadded: bool = True,
                    pooled_only: bool = False) -> dict[str, Any]:
        """The encoder on packed rows (``albert_tf.data.packing``, slices merged by ``packing.merge_slices``).

        ``features``: ``input_ids``, ``segment_ids``, ``position_ids`` and ``input_mask`` (each token's example
        number, 0 = padding) [R, L], ``example_positions`` [N] (each example's ``[CLS]`` as a flat index into the
        rows). Returns ``sequence_output`` [R, L, H] (zero at padding) and ``pooled_output`` [N, H], one row per
        example in the order of ``example_positions``. The same layers (so the same variables) as the functional
        call; attention is block-diagonal, so every real token's output equals the unpacked one up to float rounding.

        ``unpadded=True``: only the real tokens go through the embeddings and the dense layers (their
        :class:`~albert_tf.modeling.attention.TokenLayout`, used by attention alone): the padding a packed row keeps at
        its end costs only its share of the attention scores, not of the projections and the FFN (nearly all of a
        step's work). The number of real tokens is data-dependent, which XLA does not compile (``jit_compile``;
        TensorFlow 2.21 aborts the process): there ``unpadded=False`` computes every position of the rows (their
        padding included). At inference, rows without padding (a single request, examples of one length) take the
        rows path: there the layout would only gather every token around each attention (rows of padding alone
        take it as well: they have no token to lay out).

        ``pooled_only``: only ``pooled_output`` is returned, and at inference the last block computes only each
        example's ``[CLS]`` token (:class:`~albert_tf.modeling.transformer.ExampleQueries`; its keys and values still
        from every token): of the last layer's dense work, 1 token per example instead of all. Training computes the
        whole last layer (the other tokens' outputs get no gradient either way).
        """
        if unpadded and not training:
            real = ops.not_equal(features["input_mask"], 0)
            full = ops.logical_or(ops.all(real), ops.logical_not(ops.any(real)))  # no padding, or padding alone
            return ops.cond(full, lambda: self._call_packed(features, False, False, pooled_only),
                            lambda: self._call_packed(features, False, True, pooled_only))
        return self._call_packed(features, training, unpadded, pooled_only)

    def _call_packed(self, features: dict[str, Any], training: bool, unpadded: bool,
                     pooled_only: bool) -> dict[str, Any]:
        hidden = self.config.hidden_size
        layout, first_positions = None, features["example_positions"]
        if unpadded:
            real = ops.not_equal(features["input_mask"], 0)
            layout = TokenLayout.of(real, self.config.num_attention_heads)
            first_positions = ops.take(layout.sources, first_positions, axis=0)  # each [CLS] among the T tokens
        attention_bias = attention_bias_from_example_ids(features["input_mask"])
        queries = None
        if pooled_only and not training:
            queries = example_queries(attention_bias, features["example_positions"], first_positions)

        def tokens(name):  # [T] on the unpadded path, [R, L] on the rows
            return features[name] if layout is None else layout.take(features[name])

        _, x, _ = encode(self.embeddings, self.embedding_hidden_mapping_in, self.layer_blocks, tokens("input_ids"),
                         tokens("segment_ids"), attention_bias,
                         position_ids=tokens("position_ids"), layout=layout, queries=queries, training=training)
        if queries is not None:
            return {"pooled_output": self.pooler(x)}  # x: the [CLS] tokens [N, H]
        # Through a reshape, whose gradient makes the gather's sparse gradient dense: a recomputed block
        # (``tf.recompute_grad`` in a graph) takes only dense gradients of its output.
        first_tokens = ops.take(ops.reshape(x, (-1, hidden)), first_positions, axis=0)
        pooled = self.pooler(first_tokens)
        if pooled_only:
            return {"pooled_output": pooled}
        if layout is not None:
            x = layout.to_rows(x)
        return {"sequence_output": x, "pooled_output": pooled}

    @staticmethod
    def example_windows(sequence_output: Any, example_positions: Any, length: Any) -> Any:
        """``call_packed``'s ``sequence_output`` [R, L, H] as one window per example [N, length, H]: position ``j``
        of example ``n`` is the packed token ``example_positions[n] + j``, for heads that read every position (SQuAD's
        span, tagging). Positions past an example's end read what follows it in the rows (another example, padding,
        the last token): the caller masks them (``example_lengths``), so they reach no output and get no gradient."""
        flat = ops.reshape(sequence_output, (-1, ops.shape(sequence_output)[-1]))
        index = ops.expand_dims(example_positions, 1) + ops.expand_dims(ops.arange(length, dtype="int32"), 0)
        return ops.take(flat, ops.minimum(index, ops.shape(flat)[0] - 1), axis=0)

    @property
    def word_embeddings(self):
        """The [V, E] word-embedding layer (the MLM head is tied to its table)."""
        return self.embeddings.word_embeddings

    def unique_blocks(self) -> list[TransformerBlock]:
        """Distinct block objects in application order (G*K for ``sharing='all'``)."""
        seen, out = set(), []
        for row in self.layer_blocks:
            for block in row:
                if id(block) not in seen:
                    seen.add(id(block))
                    out.append(block)
        return out
