"""The demo's closing summary: total time, what each stage wrote, and the pretraining learning curve as a picture.

The picture is an SVG written by hand (a few lines of XML), so the base install needs no plotting library; any
browser or image viewer opens it.
"""

from __future__ import annotations

import os
from typing import Any
from xml.sax.saxutils import escape

#: The held-out curves drawn, with their colours.
CURVES = (("masked_lm_accuracy", "MLM accuracy", "#1f77b4"), ("sentence_order_accuracy", "SOP accuracy", "#d62728"))
WIDTH, HEIGHT, MARGIN = 640, 360, 56


def curve_svg(curve: list[dict], title: str) -> str:
    """An SVG line chart of held-out MLM and SOP accuracy (0 to 1) against the training step."""
    steps = [int(p["step"]) for p in curve]
    last = max(max(steps, default=0), 1)
    plot_w, plot_h = WIDTH - 2 * MARGIN, HEIGHT - 2 * MARGIN

    def x(step: float) -> float:
        return MARGIN + plot_w * step / last

    def y(value: float) -> float:
        return HEIGHT - MARGIN - plot_h * min(max(value, 0.0), 1.0)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" '
        'font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="24" text-anchor="middle" font-size="14">{escape(title)}</text>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line x1="{MARGIN}" x2="{WIDTH - MARGIN}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
                     'stroke="#ddd"/>')
        parts.append(f'<text x="{MARGIN - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.2f}</text>')
    for step in sorted(set(steps)):
        parts.append(f'<text x="{x(step):.1f}" y="{HEIGHT - MARGIN + 16}" text-anchor="middle">{step}</text>')
    parts.append(f'<text x="{WIDTH / 2}" y="{HEIGHT - 12}" text-anchor="middle">training step</text>')
    for i, (key, label, colour) in enumerate(CURVES):
        points = [(x(p["step"]), y(p[key])) for p in curve if p.get(key) is not None]
        if points:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
            parts.extend(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}"/>' for px, py in points)
        ly = MARGIN + 16 * i
        parts.append(f'<line x1="{WIDTH - MARGIN - 130}" x2="{WIDTH - MARGIN - 110}" y1="{ly}" y2="{ly}" '
                     f'stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{WIDTH - MARGIN - 104}" y="{ly + 4}">held-out {escape(label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def write_curve_svg(curve: list[dict], path: str, title: str) -> str:
    """Write :func:`curve_svg` to ``path`` (temporary name, then renamed); returns ``path``."""
    from albert_tf.files import write_text_atomic

    write_text_atomic(path, curve_svg(curve, title))
    return path


def written_files(results: dict[str, Any]) -> list[tuple[str, str]]:
    """(what, path) for each stage's outputs a user would open next."""
    out: list[tuple[str, str]] = []
    data = results.get("pretraining_data") or {}
    if data:
        out.append(("SentencePiece model", data.get("spm_model_file", "")))
        files = data.get("input_files") or []
        if files:
            out.append((f"pretraining records ({len(files)} file(s))", os.path.dirname(files[0]) or "."))
    pretrain = results.get("pretrain") or {}
    if pretrain.get("model_dir"):
        out.append(("pretrained checkpoints", pretrain["model_dir"]))
    if pretrain.get("curve_svg"):
        out.append(("learning curve (SVG)", pretrain["curve_svg"]))
    finetune = results.get("finetune") or {}
    for key, what in (("submission", "predictions"), ("export_dir", "SavedModel (raw-text signature)")):
        if finetune.get(key):
            out.append((what, finetune[key]))
    return [(what, path) for what, path in out if path]


def print_summary(results: dict[str, Any], seconds: float, print_fn=print) -> None:
    """The closing lines of ``make demo``."""
    print_fn(f"\n== demo done in {seconds:.0f}s ({seconds / 60:.1f} min)")
    pretrain = results.get("pretrain") or {}
    if pretrain.get("before") and pretrain.get("after"):
        b, a = pretrain["before"], pretrain["after"]
        print_fn(f"   pretraining: held-out MLM accuracy {b['masked_lm_accuracy']:.3f} -> "
                 f"{a['masked_lm_accuracy']:.3f}, SOP {b['sentence_order_accuracy']:.3f} -> "
                 f"{a['sentence_order_accuracy']:.3f}")
    best = (results.get("finetune") or {}).get("best") or {}
    if best:
        shown = ", ".join(f"{k} {v:.3f}" for k, v in best.items()
                          if isinstance(v, float) and k not in ("eval_batches", "eval_loss", "num_examples"))
        step = f" at step {best['global_step']}" if "global_step" in best else ""
        print_fn(f"   fine-tuning: best dev {shown}{step}")
    files = written_files(results)
    if files:
        print_fn("   wrote:")
        width = max(len(what) for what, _ in files)
        for what, path in files:
            print_fn(f"     {what:<{width}}  {path}")
