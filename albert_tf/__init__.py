"""albert-tf: ALBERT (A Lite BERT) for TensorFlow 2 / Keras 3.

The public API::

    from albert_tf import AlbertConfig, AlbertEncoder, AlbertPretrainer, AlbertClassifier
    from albert_tf import FullTokenizer, AlbertPreprocessor

Layers of the package, each importing only from the ones before it (``tests/test_architecture.py``):
``config``/``tokenization``/``evaluation`` < ``modeling``/``data``/``export`` < ``checkpoints`` < ``training``
< ``tasks`` < ``cli``/``demo``. See ARCHITECTURE.md.
"""

from albert_tf.config import AlbertConfig, ConfigError
from albert_tf.modeling import AlbertClassifier, AlbertEncoder, AlbertPretrainer
from albert_tf.tokenization import AlbertPreprocessor, FullTokenizer

__version__ = "0.1.0"

__all__ = [
    "AlbertClassifier",
    "AlbertConfig",
    "AlbertEncoder",
    "AlbertPreprocessor",
    "AlbertPretrainer",
    "ConfigError",
    "FullTokenizer",
    "__version__",
]
