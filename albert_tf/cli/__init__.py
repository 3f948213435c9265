"""Command lines: every console script and root ``*.py`` script is a thin shell over a ``main`` here.

``app`` (``--help`` that exits 0 and lists the command's flags; one-line errors), ``flags`` (the trainer and run
flags every runner shares), ``quiet`` (TensorFlow's start-up banners off unless ``--verbose``), then one module
per command. Importing this package makes the first import of TensorFlow, whenever a command needs it, the quiet
one (``quiet.quiet_tensorflow_on_first_import``); a command that never needs it (``create_pretraining_data`` on
local paths) never imports it. It also makes Ctrl-C and SIGTERM, from this moment on (TensorFlow's import
included), a one-line stop with exit status 130 / 143 (:mod:`albert_tf.interrupts`).
"""

from albert_tf import interrupts
from albert_tf.cli.quiet import quiet_tensorflow_on_first_import

interrupts.install()
quiet_tensorflow_on_first_import()
