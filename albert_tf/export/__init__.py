"""SavedModel export.

* ``serving``: a fine-tuned classifier answering raw text (``serving_default``), token-id and tf.Example
  signatures.
* ``squad``: a fine-tuned SQuAD model answering a raw question and context (windows and post-processing in the
  graph) with the answer, its character offsets and score (v2: null score, has_answer); token-id signature.
* ``multiple_choice``: a fine-tuned RACE model answering a raw article, question and 4 options.
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
from albert_tf.export.serving import (
    EXAMPLES_SIGNATURE,
    IDS_SIGNATURE,
    TEXT_SIGNATURE,
    export_classifier,
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
    "export_classifier",
    "export_encoder",
    "export_encoder_and_preprocessor",
    "export_preprocessor",
    "load_export_info",
    "run_tf1_session",
]
