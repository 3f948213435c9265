"""A command line run in a fresh interpreter that says, on its last stdout line, whether TensorFlow got imported:
the tests of what a command answers before TensorFlow's start-up use it."""

from __future__ import annotations

import subprocess
import sys


def run_reporting_tensorflow(module: str, command: str, args: list[str], cwd, env: dict,
                             timeout: float = 120) -> subprocess.CompletedProcess:
    """``main()`` of ``module`` as console script ``command`` with ``args``; stdout ends with ``no tensorflow`` or
    ``tensorflow imported``, and the exit status is the command's."""
    code = (f"import sys; sys.argv[0] = {command!r}\nfrom {module} import main\ntry:\n    main()\n"
            "except SystemExit as e:\n    code = e.code\n"
            "print('tensorflow imported' if 'tensorflow' in sys.modules else 'no tensorflow'); sys.exit(code)")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=str(cwd), env=env,
                          timeout=timeout)
