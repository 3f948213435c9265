"""`make demo`: the main job on a built-in default, stage by stage.

Each stage lives in its own module of this package and exposes ``run(workdir, args)``;
``__main__`` runs them in order. The demo's ``workdir`` is a local directory (its stages use ``os`` and ``glob``
on it); the library calls it makes take ``gs://`` paths as well.
"""

from albert_tf.cli.quiet import import_tensorflow_quietly

import_tensorflow_quietly()
