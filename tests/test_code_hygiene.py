"""What the package's source may not hold: file access around the one file layer, citations a reader cannot open,
and dated measurements (those belong in benchmarks/README.md, REPRODUCTION.md or docs/)."""

from __future__ import annotations

import ast
import re

from conftest import ROOT

PACKAGE = ROOT / "albert_tf"
FILE_LAYER = PACKAGE / "files.py"


def _sources(*patterns: str):
    for pattern in patterns:
        yield from sorted(PACKAGE.rglob(pattern))


def _gfile_uses(path) -> list[int]:
    """Lines that reach ``tf.io.gfile`` (any ``.gfile`` attribute or a ``gfile`` name) in code, not in prose."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "gfile":
            lines.append(node.lineno)
        elif isinstance(node, ast.Name) and node.id == "gfile":
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").endswith("io") and any(
                a.name == "gfile" for a in node.names):
            lines.append(node.lineno)
    return sorted(set(lines))


def test_tf_io_gfile_is_reached_only_through_the_file_layer():
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in _sources("*.py") if p != FILE_LAYER for n in _gfile_uses(p)]
    assert not offenders, "use albert_tf.files instead of tf.io.gfile:\n" + "\n".join(offenders)


def test_the_gfile_check_sees_the_spellings_it_forbids(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import tensorflow as tf\nfrom tensorflow.io import gfile\n"
                      "tf.io.gfile.exists('a')\nfs = _fs.gfile()\n", encoding="utf-8")
    assert _gfile_uses(sample) == [2, 3, 4]


SPEC_CITATION = re.compile(r"\bspec(?:\s+section)?\s+§?\d+(?:\.\d+)*", re.IGNORECASE)
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")


def test_no_citation_of_a_document_outside_the_repository():
    offenders = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in _sources("*.py", "*.flags")
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if SPEC_CITATION.search(line)]
    assert not offenders, ("cite the official file and function or the paper's section instead:\n"
                           + "\n".join(offenders))


def test_no_dated_measurement_in_the_package():
    offenders = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in _sources("*.py", "*.flags")
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if DATE.search(line)]
    assert not offenders, ("dates and measurements go to benchmarks/README.md, REPRODUCTION.md or docs/:\n"
                           + "\n".join(offenders))


def test_the_prose_checks_see_what_they_forbid():
    assert SPEC_CITATION.search("names (spec 1.4)") and SPEC_CITATION.search("(spec section 9, item 19)")
    assert not SPEC_CITATION.search("feature_spec(1)") and not SPEC_CITATION.search("a TensorSpec 2")
    assert DATE.search("the run of 2026-11-25") and not DATE.search("version 2.21.0")
