"""SavedModel export: a raw-text ``serving_default``, token-id and tf.Example signatures (see ``serving``)."""

from albert_tf.export.serving import (
    EXAMPLES_SIGNATURE,
    IDS_SIGNATURE,
    TEXT_SIGNATURE,
    export_classifier,
    load_export_info,
    run_tf1_session,
)

__all__ = [
    "EXAMPLES_SIGNATURE",
    "IDS_SIGNATURE",
    "TEXT_SIGNATURE",
    "export_classifier",
    "load_export_info",
    "run_tf1_session",
]
