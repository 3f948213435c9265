"""AlbertConfig: official JSON keys, round trip, validation messages, presets."""

import json
import subprocess
import sys

import pytest

from albert_tf.config import MODEL_CONFIGS, AlbertConfig, ConfigError

# albert_base_v2's albert_config.json as released (Hugging Face mirror of the official file).
OFFICIAL_BASE_V2 = {
    "attention_probs_dropout_prob": 0,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0,
    "embedding_size": 128,
    "hidden_size": 768,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "num_hidden_groups": 1,
    "net_structure_type": 0,
    "gap_size": 0,
    "num_memory_blocks": 0,
    "inner_group_num": 1,
    "down_scale_factor": 1,
    "type_vocab_size": 2,
    "vocab_size": 30000,
}


def test_official_json_round_trip_keeps_unknown_keys(tmp_path):
    data = dict(OFFICIAL_BASE_V2, my_custom_key={"a": [1, 2]})
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps(data))
    cfg = AlbertConfig.from_json_file(str(path))
    assert cfg.hidden_size == 768 and cfg.vocab_size == 30000
    assert cfg.extra["my_custom_key"] == {"a": [1, 2]}
    out = tmp_path / "out.json"
    cfg.to_json_file(str(out))
    assert json.loads(out.read_text()) == data
    # Official layout: indent 2, sorted keys.
    assert out.read_text() == json.dumps(data, indent=2, sort_keys=True) + "\n"


def test_constructor_defaults_are_official_xxlarge():
    cfg = AlbertConfig(vocab_size=30000)
    dims = (cfg.embedding_size, cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size)
    assert dims == (128, 4096, 64, 16384)
    assert cfg.hidden_act == "gelu" and cfg.hidden_dropout_prob == 0 and cfg.max_position_embeddings == 512


@pytest.mark.parametrize("name", MODEL_CONFIGS)
def test_model_configs_load(name):
    cfg = AlbertConfig.from_name(name)
    assert cfg.vocab_size > 0


def test_v1_dropout_except_xxlarge_v2_none():
    for size in ("base", "large", "xlarge"):
        assert AlbertConfig.from_name(f"albert_{size}_v1").hidden_dropout_prob == 0.1
        assert AlbertConfig.from_name(f"albert_{size}_v2").hidden_dropout_prob == 0.0
    assert AlbertConfig.from_name("albert_xxlarge_v1").hidden_dropout_prob == 0.0


def test_group_assignment_is_official():
    cfg = AlbertConfig(vocab_size=10, hidden_size=12, num_attention_heads=2, num_hidden_layers=12, num_hidden_groups=3)
    assert [cfg.group_of_layer(i) for i in range(12)] == [0] * 4 + [1] * 4 + [2] * 4


@pytest.mark.parametrize(
    "change, key",
    [
        ({"vocab_size": None}, "vocab_size"),
        ({"num_attention_heads": 7}, "num_attention_heads"),
        ({"hidden_act": "swishy"}, "hidden_act"),
        ({"num_hidden_groups": 13}, "num_hidden_groups"),
        ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob"),
        ({"hidden_size": "768"}, "hidden_size"),
    ],
)
def test_bad_config_names_the_key(change, key):
    data = dict(OFFICIAL_BASE_V2)
    data.update(change)
    with pytest.raises(ConfigError) as err:
        AlbertConfig.from_dict(data)
    message = str(err.value)
    assert key in message and "\n" not in message


def test_missing_vocab_size_in_file_names_file_and_key(tmp_path):
    data = dict(OFFICIAL_BASE_V2)
    del data["vocab_size"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"bad\.json.*vocab_size"):
        AlbertConfig.from_json_file(str(path))


def test_invalid_json_names_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n  "vocab_size": 30000,\n  oops\n}')
    with pytest.raises(ConfigError, match=r"broken\.json: line 3"):
        AlbertConfig.from_json_file(str(path))


def test_max_seq_length_check():
    cfg = AlbertConfig.from_name("albert_tiny")
    cfg.check_max_seq_length(128)
    with pytest.raises(ConfigError, match="max_position_embeddings"):
        cfg.check_max_seq_length(129)


def test_bad_config_error_is_one_line_not_a_keras_traceback(tmp_path):
    """Building a model from a bad config fails in the config, before any Keras layer."""
    data = dict(OFFICIAL_BASE_V2, num_attention_heads=5)
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(data))
    code = (
        "import sys\n"
        "from albert_tf.config import AlbertConfig, ConfigError\n"
        "try:\n"
        f"    AlbertConfig.from_json_file({str(path)!r})\n"
        "except ConfigError as e:\n"
        "    print(e); sys.exit(3)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 3
    assert proc.stdout.strip().count("\n") == 0 and "num_attention_heads" in proc.stdout


def test_recipes_and_the_old_flag_spelling():
    """``--recipe=NAME`` is the packaged flagfile at its place on the command line; the old spelling ``--preset``
    reads the same file with one notice, and ``AlbertConfig.from_preset`` is ``from_name`` with a warning."""
    from albert_tf.cli.app import expand_recipes
    from albert_tf.configs import UnknownNameError, recipe_path

    notices: list[str] = []
    new = expand_recipes(["prog", "--recipe=glue/mrpc", "--x=1"], notices.append)
    assert new == ["prog", f"--flagfile={recipe_path('glue/mrpc')}", "--x=1"] and notices == []
    old = expand_recipes(["prog", "--preset", "glue/mrpc", "--preset=squad/v2"], notices.append)
    assert old == ["prog", f"--flagfile={recipe_path('glue/mrpc')}", f"--flagfile={recipe_path('squad/v2')}"]
    assert notices == ["notice: --preset=glue/mrpc is now spelled --recipe=glue/mrpc (a packaged flagfile; a preset "
                       "is released weights, --init_checkpoint=NAME)"]
    with pytest.raises(UnknownNameError, match="unknown recipe 'glue/nope'; known recipes: .*glue/mrpc"):
        expand_recipes(["prog", "--recipe=glue/nope"])
    with pytest.warns(DeprecationWarning, match="^AlbertConfig.from_preset is now AlbertConfig.from_name$"):
        assert AlbertConfig.from_preset("albert_tiny") == AlbertConfig.from_name("albert_tiny")
    with pytest.raises(ConfigError, match="unknown model config 'albert_huge'; known: .*albert_tiny"):
        AlbertConfig.from_name("albert_huge")
