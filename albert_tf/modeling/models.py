"""Task models built on AlbertEncoder. ``AlbertPretrainer``: encoder + MLM + SOP heads."""

from __future__ import annotations

from typing import Any

import keras

from albert_tf.config import AlbertConfig
from albert_tf.modeling.encoder import INPUT_NAMES, AlbertEncoder, as_config, build_from_preset, encoder_inputs
from albert_tf.modeling.heads import MaskedLMHead, SentenceOrderHead
from albert_tf.modeling.serialization import RebuiltFromConfig


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertPretrainer(RebuiltFromConfig, keras.Model):
    """ALBERT with its pretraining heads (official ``run_pretraining.py`` model).

    Inputs: ``input_ids``, ``input_mask``, ``segment_ids`` int32 [B, S] and
    ``masked_lm_positions`` int32 [B, P].
    Outputs: ``mlm_logits`` float32 [B, P, V], ``sop_logits`` float32 [B, 2], ``pooled_output``, and
    with ``last_layer_subset=False`` also ``sequence_output`` [B, S, H]. Losses: ``albert_tf.modeling.losses``.

    ``last_layer_subset`` (default True): the last transformer block runs only at [CLS] and the masked
    positions (``AlbertEncoder``'s option of that name), which is exact for both losses and every
    gradient and saves most of one layer's work per step; the full last layer, and so ``sequence_output``,
    is not computed. ``False`` computes it everywhere (for reading ``sequence_output``). The variables
    are the same either way, so checkpoints and ``.keras`` files move freely between the two.
    With dropout > 0 in training the two draw their dropout masks over different shapes (same
    distribution, not the same numbers).
    """

    config_options = ("sharing", "last_layer_subset")

    def __init__(
        self,
        config: AlbertConfig | dict[str, Any],
        sharing: str = "all",
        last_layer_subset: bool = True,
        name: str = "albert_pretrainer",
        **kwargs,
    ):
        config = as_config(config)
        dtype = kwargs.pop("dtype", None)
        encoder = AlbertEncoder(
            config, sharing=sharing, last_layer_subset=last_layer_subset, name="albert_encoder", dtype=dtype
        )
        mlm_head = MaskedLMHead(
            config.embedding_size,
            config.vocab_size,
            hidden_act=config.hidden_act,
            initializer_range=config.initializer_range,
            tied_embedding=encoder.word_embeddings,
            name="predictions",
            dtype=dtype,
        )
        sop_head = SentenceOrderHead(
            2, initializer_range=config.initializer_range, name="seq_relationship", dtype=dtype
        )

        inputs = encoder_inputs()
        inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32", name="masked_lm_positions")
        if last_layer_subset:
            enc = encoder(dict(inputs))
            outputs = {"mlm_logits": mlm_head(enc["masked_sequence_output"])}  # already at the masked positions
        else:
            enc = encoder({k: inputs[k] for k in INPUT_NAMES})
            outputs = {
                "mlm_logits": mlm_head(enc["sequence_output"], inputs["masked_lm_positions"]),
                "sequence_output": enc["sequence_output"],
            }
        outputs["sop_logits"] = sop_head(enc["pooled_output"])
        outputs["pooled_output"] = enc["pooled_output"]
        super().__init__(inputs=inputs, outputs=outputs, name=name, dtype=dtype, **kwargs)
        self.config = config
        self.sharing = sharing
        self.last_layer_subset = bool(last_layer_subset)
        self.encoder = encoder
        self.mlm_head = mlm_head
        self.sop_head = sop_head

    @classmethod
    def from_preset(cls, preset: str, /, **kwargs: Any) -> AlbertPretrainer:
        """A pretrainer from a preset name: a pretrained preset (``albert_base_v2``, ``albert/albert-base-v2``, ...)
        loads its released encoder weights (fetched and cached on first use; its MLM and SOP heads too where the
        checkpoint holds them), a model config (``albert_tiny``) is randomly initialised; ``load_weights=False``
        builds the config alone.

        ``kwargs`` holding ``AlbertConfig`` fields change the config; the rest go to the constructor (``sharing``,
        ``last_layer_subset``, ``name``, ``dtype``). An unknown preset raises ``ConfigError`` listing the known
        ones.
        """
        return build_from_preset(cls, preset, kwargs)
