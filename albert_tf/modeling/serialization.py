"""Serialisation shared by the ALBERT models.

Every model here is a functional ``keras.Model`` built in ``__init__`` from an ``AlbertConfig``
(plus a few options). Saving stores that recipe, and loading runs ``__init__`` again rather than
replaying the functional graph, so shared blocks and the tied MLM decoder are rebuilt as the same
objects.
"""

from __future__ import annotations

from typing import Any

import keras


class RebuiltFromConfig:
    """Mixin for ``keras.Model`` subclasses; ``config_options`` names the extra constructor args."""

    config_options: tuple[str, ...] = ()

    def get_config(self) -> dict[str, Any]:
        out = {"config": self.config.to_dict()}
        out.update({key: getattr(self, key) for key in self.config_options})
        out.update(
            name=self.name,
            trainable=self.trainable,
            dtype=keras.saving.serialize_keras_object(self.dtype_policy),
        )
        return out

    @classmethod
    def from_config(cls, config: dict[str, Any]):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.saving.deserialize_keras_object(config["dtype"])
        return cls(**config)
