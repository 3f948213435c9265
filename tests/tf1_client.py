"""What TF Serving does with an export, as a test helper: a fresh process, ``tensorflow_text`` imported for its ops,
the TF1 ``SavedModelBundle`` loader, each export loaded once and asked every request for it in turn, one C++
``Session::Run`` per request (no shape check of the request against the signature: the ModelServer does none), so a
bad request is followed by the next on the same session, as on a server.

Requests are dicts ``{"name", "dir", "signature", "feeds"}``. Feed values are nested lists (or ``{"shape",
"values"}`` for a shape the lists cannot say, an empty batch ``[0, 16]``); each input's dtype is the signature's
own (``DT_STRING`` inputs take ``str`` or ``bytes``: bytes that are not UTF-8 travel through JSON with
``surrogateescape`` and reach the graph as the same bytes). A request that fails returns ``{"error": "Type:
message"}`` instead of killing the process, so bad requests can be checked for their message. String outputs come
back as ``str``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from conftest import ROOT

_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # registers SentencepieceOp & co., as the ModelServer links them

    def raw(x):
        return x.encode("utf-8", "surrogateescape") if isinstance(x, str) else x

    def text(x):
        return x.decode("utf-8", "surrogateescape")

    results = {}
    loaded = {}  # export dir -> (graph, session, meta graph): loaded once, as the ModelServer loads a version
    for req in json.load(open(sys.argv[1])):
        if req["dir"] not in loaded:
            graph = tf.Graph()
            sess = tf.compat.v1.Session(graph=graph)
            with graph.as_default():
                loaded[req["dir"]] = graph, sess, tf.compat.v1.saved_model.loader.load(sess, ["serve"], req["dir"])
        graph, sess, meta = loaded[req["dir"]]
        with graph.as_default():
            sig = meta.signature_def[req["signature"]]
            feeds = {}
            for k, v in req["feeds"].items():
                dtype = tf.dtypes.as_dtype(sig.inputs[k].dtype)
                tensor = graph.get_tensor_by_name(sig.inputs[k].name)._as_tf_output()
                shape = None
                if isinstance(v, dict):  # {"shape": [...], "values": [...]}: a shape JSON cannot carry ([0, 16])
                    shape, v = v["shape"], v["values"]
                if dtype == tf.string:
                    value = np.vectorize(raw, otypes=[object])(np.array(v, dtype=object))
                else:
                    value = np.array(v, dtype=dtype.as_numpy_dtype)
                feeds[tensor] = value if shape is None else value.reshape(shape)
            names = sorted(sig.outputs)
            fetches = [graph.get_tensor_by_name(sig.outputs[k].name)._as_tf_output() for k in names]
            try:  # the C++ Session::Run, as the ModelServer calls it: no check of a request's shape against the
                # signature's (tensorflow/serving#1436), which Python's Session.run would add
                values = sess._call_tf_sessionrun(None, feeds, fetches, [], None)
            except Exception as e:  # a bad request must fail with a message, not kill the server
                results[req["name"]] = {"error": type(e).__name__ + ": " + str(e)[:3000]}
                continue
            out = {"inputs": sorted(sig.inputs), "method": sig.method_name}
            for k, v in zip(names, values):
                v = np.asarray(v)
                out[k] = np.vectorize(text, otypes=[object])(v).tolist() if v.dtype == object else v.tolist()
            results[req["name"]] = out
    for _, sess, _ in loaded.values():
        sess.close()
    json.dump(results, open(sys.argv[2], "w"))
    """
)


def as_json_text(value: bytes) -> str:
    """``bytes`` (possibly not UTF-8) as a JSON-safe ``str`` the client turns back into the same bytes."""
    return value.decode("utf-8", "surrogateescape")


def serve_in_fresh_process(tmp_path, requests: list[dict], timeout: int = 600) -> dict[str, dict]:
    """Run ``requests`` against their exports in a new Python process; ``{name: outputs or {"error": ...}}``."""
    req_path, out_path, script = tmp_path / "tf1_requests.json", tmp_path / "tf1_out.json", tmp_path / "tf1_client.py"
    req_path.write_text(json.dumps(requests))
    script.write_text(_SCRIPT)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(script), str(req_path), str(out_path)], capture_output=True, text=True,
                          env=env, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out_path.read_text())
