"""Names of a package imported on first use (PEP 562 module ``__getattr__`` / ``__dir__``).

The package root and the task packages expose classes whose modules import TensorFlow; importing them lazily lets a
command answer ``--help``, build and check its config, and quiet TensorFlow's banners before TensorFlow starts.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, names: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the module ``package`` whose globals are ``namespace``.

    ``names`` maps each public name to the module that defines it, absolute (``albert_tf.config``) or relative to
    ``package`` (``.task``). The module is imported on the name's first access and the value kept in ``namespace``,
    so later accesses are plain attribute lookups.
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *names})

    return __getattr__, __dir__
