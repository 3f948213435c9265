"""In-graph AlbertPreprocessor: parity with Python + official packing; .keras and SavedModel round trips.

Parity holds for any vocabulary, so these tests take ``spm_model`` / ``wordpiece_vocab`` / ``english_lines`` (the real
files where ``../shared`` is present, else substitutes built from the sample corpus); only the all-real-lines run
needs the real text.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import english_lines, shared_path

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")
keras = pytest.importorskip("keras")

from albert_tf.tokenization import AlbertPreprocessor, FullTokenizer  # noqa: E402
from albert_tf.tokenization.corpus import iter_lines  # noqa: E402

SEQ = 64


@pytest.fixture(scope="module")
def spm_file(spm_model):
    return spm_model


@pytest.fixture(scope="module")
def tok(spm_file):
    return FullTokenizer(spm_model_file=spm_file)


@pytest.fixture(scope="module")
def layer(tok):
    return AlbertPreprocessor.from_tokenizer(tok, SEQ)


def _official_pack(tokens_a, tokens_b, max_seq_length, cls_id=2, sep_id=3):
    """classifier_utils.convert_single_example restated: _truncate_seq_pair pops from the end of the longer list."""
    tokens_a, tokens_b = list(tokens_a), list(tokens_b) if tokens_b else None
    if tokens_b:
        while len(tokens_a) + len(tokens_b) > max_seq_length - 3:
            (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()
    else:
        tokens_a = tokens_a[: max_seq_length - 2]
    ids = [cls_id] + tokens_a + [sep_id]
    seg = [0] * len(ids)
    if tokens_b:
        ids += tokens_b + [sep_id]
        seg += [1] * (len(tokens_b) + 1)
    mask = [1] * len(ids)
    pad = [0] * (max_seq_length - len(ids))
    return ids + pad, mask + pad, seg + pad


def _real_lines(n):
    """All of the real text (slow test): skips where ``../shared`` is absent."""
    lines = []
    for line in iter_lines([shared_path("text")]):
        lines.append(line)
        if len(lines) >= n:
            break
    return lines


def _check_parity(tok, layer, lines, seq):
    py = [tok.encode(s) for s in lines]
    graph_ids = tf.function(layer.tokenize)(tf.constant(lines)).to_list()
    single_bad = [i for i, (a, b) in enumerate(zip(py, graph_ids)) if a != b]
    out = tf.function(lambda a, b: layer({"text_a": a, "text_b": b}))(tf.constant(lines[:-1]), tf.constant(lines[1:]))
    out = {k: v.numpy() for k, v in out.items()}
    pair_bad = []
    for i in range(len(lines) - 1):
        ids, mask, seg = _official_pack(py[i], py[i + 1], seq)
        if list(out["input_ids"][i]) != ids or list(out["input_mask"][i]) != mask or list(out["segment_ids"][i]) != seg:
            pair_bad.append(i)
    return single_bad, pair_bad


@pytest.mark.heavy
def test_python_and_graph_agree_on_english_lines(tok, layer):
    lines = english_lines(3000)
    assert len(lines) == 3000
    single_bad, pair_bad = _check_parity(tok, layer, lines, SEQ)
    assert not single_bad and not pair_bad, (single_bad[:5], pair_bad[:5], [lines[i] for i in single_bad[:3]])


@pytest.mark.slow
@pytest.mark.parametrize("do_lower_case", [True, False])
def test_python_and_graph_agree_on_all_real_lines(spm_file, do_lower_case):
    tok = FullTokenizer(spm_model_file=spm_file, do_lower_case=do_lower_case)
    layer = AlbertPreprocessor.from_tokenizer(tok, 128)
    lines = _real_lines(10**9)
    assert len(lines) >= 50_000
    single_bad, pair_bad = _check_parity(tok, layer, lines, 128)
    assert not single_bad and not pair_bad, (single_bad[:5], pair_bad[:5])


def test_single_segment_and_special_cases(layer, tok):
    out = layer(tf.constant(["hello world", "", "   ", "x " * 500]))
    ids, mask, seg = (out[k].numpy() for k in ("input_ids", "input_mask", "segment_ids"))
    assert ids.dtype == np.int32 and ids.shape == (4, SEQ)
    hello = tok.encode("hello world")
    assert list(ids[0, : len(hello) + 2]) == [2, *hello, 3] and ids[0, len(hello) + 2 :].sum() == 0
    assert list(ids[1, :3]) == [2, 3, 0] and list(ids[2, :3]) == [2, 3, 0]
    assert ids[3, -1] == 3 and mask[3].sum() == SEQ  # cut to max_seq_length - 2 + [CLS], [SEP]
    assert seg.sum() == 0


def test_pair_inputs_forms_and_empty_b(layer, tok):
    a, b = tf.constant(["one two three", "alpha"]), tf.constant(["four five", ""])
    by_dict = layer({"text_a": a, "text_b": b})
    by_tuple = layer((a, b))
    for k in by_dict:
        np.testing.assert_array_equal(by_dict[k], by_tuple[k])
    ref_ids, _, ref_seg = _official_pack(tok.encode("one two three"), tok.encode("four five"), SEQ)
    assert list(by_dict["input_ids"][0].numpy()) == ref_ids and list(by_dict["segment_ids"][0].numpy()) == ref_seg
    # an empty text_b counts as absent (official `if tokens_b:`): no second [SEP]
    alpha = tok.encode("alpha")
    assert list(by_dict["input_ids"][1].numpy()[: len(alpha) + 3]) == [2, *alpha, 3, 0]
    with pytest.raises(ValueError, match="text_a"):
        layer({"text_b": b})


def _model(layer):
    text_a = keras.Input(shape=(), dtype="string", name="text_a")
    text_b = keras.Input(shape=(), dtype="string", name="text_b")
    return keras.Model({"text_a": text_a, "text_b": text_b}, layer({"text_a": text_a, "text_b": text_b}))


SAMPLE_A = ["Ünïcödé ΟΔΟΣ 1999,2000, and 2001,", "In the beginning God created the heaven and the earth.", "😀 \x00 x"]
SAMPLE_B = ["it cost 3,000, then 4,5,6,", "", "Tiếng Việt"]


def test_keras_file_round_trip(layer, tmp_path):
    model = _model(layer)
    inputs = {"text_a": tf.constant(SAMPLE_A), "text_b": tf.constant(SAMPLE_B)}
    before = model(inputs)
    path = tmp_path / "pre.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    after = loaded(inputs)
    for k in before:
        np.testing.assert_array_equal(before[k], after[k])
    restored = [lyr for lyr in loaded.layers if isinstance(lyr, AlbertPreprocessor)][0]
    assert restored.get_config() == layer.get_config()


@pytest.mark.heavy
def test_savedmodel_reloads_in_fresh_process_with_only_tensorflow_text(layer, tmp_path):
    _savedmodel_round_trip(layer, tmp_path, SAMPLE_A, SAMPLE_B)


def _savedmodel_round_trip(layer, tmp_path, SAMPLE_A, SAMPLE_B):  # noqa: N803 (names used in the script below)
    model = _model(layer)
    inputs = {"text_a": tf.constant(SAMPLE_A), "text_b": tf.constant(SAMPLE_B)}
    expected = {k: v.numpy().tolist() for k, v in model(inputs).items()}
    export_dir = tmp_path / "saved"
    model.export(str(export_dir), verbose=False)
    script = textwrap.dedent(
        f"""
        import json, os, sys
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the SentencePiece kernels)
        a = tf.constant({SAMPLE_A!r}); b = tf.constant({SAMPLE_B!r})
        m = tf.saved_model.load({str(export_dir)!r})
        out = m.signatures["serving_default"](text_a=a, text_b=b)
        res = {{"tf2": {{k: v.numpy().tolist() for k, v in out.items()}}}}
        # the TF1 session loader, as TF Serving's SavedModelBundle loads it
        g = tf.Graph()
        with g.as_default(), tf.compat.v1.Session(graph=g) as sess:
            meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], {str(export_dir)!r})
            sig = meta.signature_def["serving_default"]
            feed = {{sig.inputs["text_a"].name: {SAMPLE_A!r}, sig.inputs["text_b"].name: {SAMPLE_B!r}}}
            names = sorted(sig.outputs)
            vals = sess.run([sig.outputs[n].name for n in names], feed)
            res["tf1"] = {{n: v.tolist() for n, v in zip(names, vals)}}
        res["albert_tf_imported"] = any(k.startswith("albert_tf") for k in sys.modules)
        print(json.dumps(res))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["albert_tf_imported"] is False
    for loader in ("tf1", "tf2"):
        for k, v in expected.items():
            assert res[loader][k] == v, (loader, k)


# ------------------------------------------------------------------------------------------------------ WordPiece
@pytest.fixture(scope="module")
def wp_tok(wordpiece_vocab):
    return FullTokenizer(vocab_file=wordpiece_vocab)


@pytest.fixture(scope="module")
def wp_layer(wp_tok):
    return AlbertPreprocessor.from_tokenizer(wp_tok, SEQ)


WP_TEXTS = [
    "我爱北京天安门。",
    "ALBERT模型很小, 但是很强!",
    "混合 English 和 中文 123",
    "Héllo wörld",
    "𠀀罕见字 标点：“引号”",
    "ΟΔΟΣ İstanbul a\x00b\u2028c\x0bd ｆｕｌｌ，。 ß Straße ひらがな",
    "x" * 201 + " " + "y" * 200,
    "",
]


def test_wordpiece_graph_equals_python(wp_tok, wp_layer):
    texts = WP_TEXTS + english_lines(300)
    graph = wp_layer.tokenize(tf.constant(texts)).to_list()
    bad = [(t, g, wp_tok.encode(t)) for t, g in zip(texts, graph) if g != wp_tok.encode(t)]
    assert not bad, bad[:3]
    out = wp_layer({"text_a": tf.constant(WP_TEXTS[:2]), "text_b": tf.constant(WP_TEXTS[2:4])})
    ids, _, seg = _official_pack(wp_tok.encode(WP_TEXTS[0]), wp_tok.encode(WP_TEXTS[2]), SEQ, cls_id=101, sep_id=102)
    assert list(out["input_ids"][0].numpy()) == ids and list(out["segment_ids"][0].numpy()) == seg


def test_wordpiece_layer_keras_round_trip(wp_layer, tmp_path):
    model = _model(wp_layer)
    inputs = {"text_a": tf.constant(WP_TEXTS[:4]), "text_b": tf.constant(WP_TEXTS[4:])}
    before = model(inputs)
    model.save(tmp_path / "wp.keras")
    after = keras.models.load_model(tmp_path / "wp.keras")(inputs)
    for k in before:
        np.testing.assert_array_equal(before[k], after[k])


@pytest.mark.slow
def test_wordpiece_savedmodel_reloads_in_fresh_process(wp_layer, tmp_path):
    _savedmodel_round_trip(wp_layer, tmp_path, WP_TEXTS[:4], WP_TEXTS[4:])


@pytest.mark.parametrize(
    "switches",
    [{"keep_accents": True}, {"official_digit_comma": False}, {"do_lower_case": False, "keep_accents": True}],
)
def test_switches_give_the_same_ids_in_python_and_graph(spm_file, switches):
    tok = FullTokenizer(spm_model_file=spm_file, **switches)
    layer = AlbertPreprocessor.from_tokenizer(tok, SEQ)
    texts = SAMPLE_A + SAMPLE_B + ["Tiếng Việt ΟΔΟΣ İSTANBUL naïve café", "in 1999,2000, and 2001,"]
    texts += english_lines(200)
    assert layer.tokenize(tf.constant(texts)).to_list() == [tok.encode(t) for t in texts]
    assert layer.get_config()["keep_accents"] == tok.keep_accents


def test_layer_survives_a_seed_reset(spm_file):
    """``keras.utils.set_random_seed`` after the layer is built resets TF's eager kernel cache, which owns
    tensorflow-text's SentencePiece resource (tensorflow/text#570); the layer's eager calls still answer."""
    import keras
    import tensorflow as tf

    layer = AlbertPreprocessor(spm_model_file=str(spm_file), max_seq_length=64)  # the whole sentence, any model
    text = tf.constant(["The seed was reset, 1,000 times."])
    before = layer(text)["input_ids"].numpy()
    keras.utils.set_random_seed(3)
    np.testing.assert_array_equal(layer(text)["input_ids"].numpy(), before)
    keras.utils.set_random_seed(4)
    ids, begin, end = layer.encode_with_offsets(layer.preprocess(text))
    pieces = [i for i in before[0] if i not in (0, layer.cls_id, layer.sep_id)]
    assert ids.flat_values.numpy().tolist() == pieces and begin.shape == end.shape
