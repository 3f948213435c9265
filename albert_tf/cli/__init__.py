"""Command lines: every console script and root ``*.py`` script is a thin shell over a ``main`` here.

``app`` (``--help`` that exits 0 and lists the command's flags; one-line errors), ``flags`` (the trainer and run
flags every runner shares), ``quiet`` (TensorFlow's start-up banners off unless ``--verbose``), then one module
per command. Importing this package imports TensorFlow through ``quiet``, before any command module does.
"""

from albert_tf.cli.quiet import import_tensorflow_quietly

import_tensorflow_quietly()
