"""SavedModel export: what every task's export shares, and the exports that belong to no task.

* ``savedmodel``: signature names, the atomic write, the export's metadata file, the in-graph tokenizer and the TF1
  session loader TF Serving uses. Each task's own serving signatures live in its package
  (``albert_tf.tasks.<task>.export``).
* ``encoder``: the pretrained encoder as a reusable TF-Hub-style SavedModel (``input_word_ids`` / ``input_mask`` /
  ``input_type_ids`` -> ``pooled_output`` / ``sequence_output``) and its raw-text preprocessor SavedModel.
* ``tflite``: a token-id signature of an export converted to a builtin-ops-only ``.tflite`` file, and its runner.
"""

from albert_tf.export.encoder import (
    ENCODER_INPUTS,
    ENCODER_OUTPUTS,
    PAIR_SIGNATURE,
    export_encoder,
    export_encoder_and_preprocessor,
    export_preprocessor,
)
from albert_tf.export.savedmodel import (
    EXAMPLES_SIGNATURE,
    IDS_SIGNATURE,
    TEXT_SIGNATURE,
    load_export_info,
    run_tf1_session,
)

__all__ = [
    "ENCODER_INPUTS",
    "ENCODER_OUTPUTS",
    "EXAMPLES_SIGNATURE",
    "IDS_SIGNATURE",
    "PAIR_SIGNATURE",
    "TEXT_SIGNATURE",
    "export_encoder",
    "export_encoder_and_preprocessor",
    "export_preprocessor",
    "load_export_info",
    "run_tf1_session",
]
