"""SQuAD v1.1/v2.0 fine-tuning (spec 4.2): not built yet.

This entry point exists so the console script and the layout are in place; it does nothing
but say so. The model, tokenizer, checkpoint loading and the shared trainer it will use are in
``albert_tf``; the runner itself is future work.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Console script ``run_squad``: exits with status 2 and a one-line explanation."""
    print(
        "run_squad: SQuAD v1.1/v2.0 fine-tuning (spec 4.2) is not implemented in this version of albert-tf",
        file=sys.stderr,
    )
    sys.exit(2)


if __name__ == "__main__":
    main()
