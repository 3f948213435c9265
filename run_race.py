"""RACE multiple-choice fine-tuning (spec 4.3): not built yet.

This entry point exists so the console script and the layout are in place; it does nothing
but say so. The model, tokenizer, checkpoint loading and the shared trainer it will use are in
``albert_tf``; the runner itself is future work.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Console script ``run_race``: exits with status 2 and a one-line explanation."""
    print(
        "run_race: RACE multiple-choice fine-tuning (spec 4.3) is not implemented in this version of albert-tf",
        file=sys.stderr,
    )
    sys.exit(2)


if __name__ == "__main__":
    main()
