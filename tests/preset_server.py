"""A loopback HTTP server for the preset tests: serves files from memory, honours ``Range``, counts requests, and
misbehaves on request (404, a transfer cut short, a slow transfer). Nothing reaches the internet."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import os
import pathlib
import tarfile
import threading
import time


class PresetServer:
    """``http://127.0.0.1:<port>/<name>`` for every ``files[name]``; ``requests`` lists ``(path, range header)``."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.cut_after: int | None = None  # close the connection after this many body bytes (once)
        self.delay_s = 0.0  # sleep between 64 KiB chunks (a slow server)
        self.missing: set[str] = set()
        self.range_supported = True
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep pytest's output clean
                pass

            def do_GET(self):  # noqa: N802 (http.server's name)
                name = self.path.lstrip("/")
                server.requests.append((name, self.headers.get("Range")))
                if name not in server.files or name in server.missing:
                    self.send_error(404, "Not Found")
                    return
                data = server.files[name]
                start = 0
                rng = self.headers.get("Range")
                if rng and server.range_supported:
                    start = int(rng.split("=")[1].split("-")[0])
                    if start >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(data)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                body = data[start:]
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()
                limit = server.cut_after
                if limit is not None:
                    server.cut_after = None
                    self.wfile.write(body[:limit])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                for i in range(0, len(body), 1 << 16):
                    self.wfile.write(body[i:i + (1 << 16)])
                    if server.delay_s:
                        time.sleep(server.delay_s)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def url(self, name: str) -> str:
        return f"{self.base}/{name}"

    def gets(self, name: str) -> int:
        return sum(1 for path, _ in self.requests if path == name)

    def __enter__(self) -> PresetServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def tarball(folder: pathlib.Path, top: str) -> bytes:
    """``folder``'s files as a .tar.gz whose members sit under ``top/`` (the layout of Google's tarballs)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(folder.iterdir()):
            tar.add(str(path), arcname=f"{top}/{path.name}")
    return buffer.getvalue()


def write_release(folder: pathlib.Path, spm_model: pathlib.Path, config: dict | None = None) -> pathlib.Path:
    """A tiny released model in Google's tarball layout: ``model.ckpt-best.*`` (official names, with the
    pretraining heads), ``albert_config.json`` and ``30k-clean.model`` (``spm_model``, whose size sets the vocab)."""
    import keras
    import sentencepiece as spm

    from albert_tf.checkpoints.official import save_official_checkpoint
    from albert_tf.config import AlbertConfig
    from albert_tf.modeling import AlbertPretrainer

    folder.mkdir(parents=True, exist_ok=True)
    vocab = spm.SentencePieceProcessor(model_file=str(spm_model)).get_piece_size()
    data = {**json.loads(AlbertConfig.from_name("albert_tiny").to_json_string()), "vocab_size": vocab,
            "max_position_embeddings": 512, **(config or {})}
    albert_config = AlbertConfig.from_dict(data)
    albert_config.to_json_file(str(folder / "albert_config.json"))
    keras.utils.set_random_seed(0)
    model = AlbertPretrainer(albert_config)
    save_official_checkpoint(model, str(folder / "model.ckpt-best"))
    (folder / "30k-clean.model").write_bytes(spm_model.read_bytes())
    return folder


def presets_file(path: pathlib.Path, entries: dict) -> str:
    path.write_text(json.dumps(entries, indent=1), encoding="utf-8")
    return str(path)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cache_env(tmp: pathlib.Path, presets: str, **extra: str) -> dict[str, str]:
    """The process environment of a command that fetches presets into ``tmp/cache``."""
    env = {k: v for k, v in os.environ.items() if k != "ALBERT_TF_OFFLINE"}
    return {**env, "ALBERT_TF_PRESETS": presets, "ALBERT_TF_CACHE": str(tmp / "cache"), **extra}
