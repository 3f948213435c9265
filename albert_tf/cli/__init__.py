"""Command lines: every console script and root ``*.py`` script is a thin shell over a ``main`` here.

``app`` (``--help`` that exits 0 and lists the command's flags; one-line errors), ``flags`` (the trainer and run
flags every runner shares), then one module per command.
"""
