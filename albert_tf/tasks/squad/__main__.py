"""``python -m albert_tf.tasks.squad span_upper_bound ...``: :mod:`albert_tf.tasks.squad.diagnostics`."""

import sys

from albert_tf.tasks.squad.diagnostics import upper_bound_main

if __name__ == "__main__":
    sys.exit(upper_bound_main(sys.argv))
