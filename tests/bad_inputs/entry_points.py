"""Every entry point and each of its file-valued flags, for the walk of ``test_entry_points.py``.

An entry point is a console script of ``setup.py`` or a ``python -m albert_tf.*`` module. Each file-valued flag
has a *kind* (what it should hold); :func:`variants` makes, per kind, the four wrong files the walk passes one at
a time on an otherwise valid command line: ``missing`` (no such path), ``empty`` (an empty file, or an empty
folder where a folder is read), ``truncated`` (a file of the right kind cut short) and ``wrong`` (a file of
another kind). Output flags get the wrong things an output can meet: an existing file where a folder is written,
a folder where a file is written, a path under a file, and a path whose folder does not exist yet (``missing``,
which is legal and must work).
"""

from __future__ import annotations

import json
import pathlib
import shutil

#: console script -> ``python -m`` module (setup.py's entry points)
CONSOLE_SCRIPTS = {
    "albert-demo": "albert_tf.demo",
    "run_pretraining": "albert_tf.cli.run_pretraining",
    "run_classifier": "albert_tf.cli.run_classifier",
    "run_squad": "albert_tf.cli.run_squad",
    "run_race": "albert_tf.cli.run_race",
    "run_tagging": "albert_tf.cli.run_tagging",
    "create_pretraining_data": "albert_tf.cli.create_pretraining_data",
    "export_savedmodel": "albert_tf.cli.export_savedmodel",
    "albert_convert_checkpoint": "albert_tf.cli.convert_checkpoint",
    "albert_train_vocab": "albert_tf.cli.train_vocab",
    "albert_prepare_text": "albert_tf.cli.prepare_text",
    "albert_make_sample_corpus": "albert_tf.cli.make_sample_corpus",
}

FINE_TUNING = {"albert_config_file": ("config", {}), "spm_model_file": ("spm", {}),
               "vocab_file": ("vocab", {"spm_model_file": ""}), "init_checkpoint": ("checkpoint", {}),
               "albert_hub_module_handle": ("hub", {"albert_config_file": None, "spm_model_file": None}),
               "output_dir": ("out_dir", {}), "export_dir": ("out_dir", {}), "cached_dir": ("out_dir", {}),
               "predict_checkpoint": ("checkpoint", {"do_train": "false", "export_dir": "{out}/export"}),
               "flagfile": ("flagfile", {})}

#: entry point -> (argv after the interpreter, a valid command line, {flag: (kind, flags that make it read)})
ENTRY_POINTS: dict[str, tuple[list[str], dict[str, str | bool], dict[str, tuple[str, dict]]]] = {
    "run_pretraining": (["-m", "albert_tf.cli.run_pretraining"], {
        "albert_config_file": "{config}", "input_file": "{records}", "output_dir": "{out}/run",
        "max_seq_length": "32", "max_predictions_per_seq": "5", "train_batch_size": "4", "num_train_steps": "1",
        "steps_per_loop": "1", "save_checkpoints_steps": "1", "num_warmup_steps": "0"}, {
        "albert_config_file": ("config", {}), "input_file": ("records", {}), "init_checkpoint": ("checkpoint", {}),
        "eval_input_file": ("records", {"do_train": "false", "do_eval": "true", "input_file": None,
                                        "init_checkpoint": "{run}/ckpt-2"}),
        "output_dir": ("out_dir", {}), "flagfile": ("flagfile", {})}),
    "run_classifier": (["-m", "albert_tf.cli.run_classifier"], {
        "task_name": "SST-2", "data_dir": "{glue}", "output_dir": "{out}/rc", "albert_config_file": "{config}",
        "spm_model_file": "{spm}", "max_seq_length": "16", "do_train": "true", "train_step": "1",
        "train_batch_size": "8", "save_checkpoints_steps": "1"}, {
        **FINE_TUNING, "data_dir": ("glue_dir", {})}),
    "run_squad": (["-m", "albert_tf.cli.run_squad"], {
        "train_file": "{squad}/train.json", "output_dir": "{out}/rs", "albert_config_file": "{config}",
        "spm_model_file": "{spm}", "max_seq_length": "32", "max_query_length": "12", "doc_stride": "8",
        "version_2_with_negative": "true", "do_train": "true", "train_step": "1", "train_batch_size": "4",
        "save_checkpoints_steps": "1"}, {
        **FINE_TUNING, "train_file": ("squad", {}),
        "predict_file": ("squad", {"do_train": "false", "do_predict": "true", "init_checkpoint": "{run}/ckpt-2"}),
        "predict_checkpoint": ("checkpoint", {"do_train": "false", "do_predict": "true",
                                              "predict_file": "{squad}/train.json"}),
        "train_feature_file": ("cache", {}),
        "predict_feature_file": ("cache", {"do_train": "false", "do_predict": "true",
                                           "predict_file": "{squad}/train.json", "init_checkpoint": "{run}/ckpt-2"})}),
    "run_race": (["-m", "albert_tf.cli.run_race"], {
        "data_dir": "{race}", "output_dir": "{out}/rr", "albert_config_file": "{config}", "spm_model_file": "{spm}",
        "max_seq_length": "32", "max_qa_length": "8", "train_step": "1", "warmup_step": "0", "do_eval": "false",
        "train_batch_size": "2", "save_checkpoints_steps": "1"}, {
        **FINE_TUNING, "data_dir": ("race_dir", {}), "train_file": ("cache", {}),
        "eval_file": ("cache", {"do_train": "false", "do_eval": "true", "init_checkpoint": "{run}/ckpt-2"}),
        "predict_file": ("cache", {"do_train": "false", "do_predict": "true", "init_checkpoint": "{run}/ckpt-2"})}),
    "run_tagging": (["-m", "albert_tf.cli.run_tagging"], {
        "train_file": "{tagging}/train.conll", "output_dir": "{out}/rt", "albert_config_file": "{config}",
        "spm_model_file": "{spm}", "max_seq_length": "16", "do_train": "true", "train_step": "1",
        "train_batch_size": "4", "save_checkpoints_steps": "1"}, {
        **FINE_TUNING, "train_file": ("conll", {}), "dev_file": ("conll", {"do_eval": "true"}),
        "predict_checkpoint": ("checkpoint", {"do_train": "false", "export_dir": "{out}/export"}),
        "predict_file": ("conll", {"do_predict": "true"})}),
    "create_pretraining_data": (["-m", "albert_tf.cli.create_pretraining_data"], {
        "input_file": "{corpus}", "output_file": "{out}/r.tfrecord", "spm_model_file": "{spm}",
        "max_seq_length": "32", "max_predictions_per_seq": "5", "dupe_factor": "1"}, {
        "input_file": ("text", {}), "spm_model_file": ("spm", {}), "vocab_file": ("vocab", {"spm_model_file": ""}),
        "output_file": ("out_file", {}), "metadata_file": ("out_file", {}), "flagfile": ("flagfile", {})}),
    "export_savedmodel": (["-m", "albert_tf.cli.export_savedmodel"], {
        "task_name": "SST-2", "albert_config_file": "{config}", "spm_model_file": "{spm}", "max_seq_length": "16",
        "checkpoint": "{bad}/sst2/ckpt-5", "export_dir": "{out}/export"}, {
        "checkpoint": ("checkpoint", {}), "albert_config_file": ("config", {}), "spm_model_file": ("spm", {}),
        "init_checkpoint": ("checkpoint", {"task": "encoder", "task_name": None, "checkpoint": None}),
        "train_file": ("conll", {"task": "tagging", "task_name": None}),
        "export_dir": ("out_dir", {}), "flagfile": ("flagfile", {})}),
    "albert_convert_checkpoint": (["-m", "albert_tf.cli.convert_checkpoint", "convert"], {
        "input": "{run}/ckpt-2", "input_format": "albert_tf", "output": "{out}/hf", "output_format": "huggingface",
        "albert_config_file": "{config}", "spm_model_file": "{spm}"}, {
        "input": ("checkpoint", {}), "albert_config_file": ("config", {}), "spm_model_file": ("spm", {}),
        "vocab_file": ("vocab", {"spm_model_file": None}), "output": ("out_dir", {}),
        "flagfile": ("flagfile", {})}),
    "albert_convert_checkpoint keras": (["-m", "albert_tf.cli.convert_checkpoint", "convert"], {
        "input": "{run}/ckpt-2", "input_format": "albert_tf", "output": "{out}/hf", "output_format": "huggingface",
        "albert_config_file": "{config}"}, {"input": ("keras", {})}),
    "albert_convert_checkpoint huggingface": (["-m", "albert_tf.cli.convert_checkpoint", "convert"], {
        "input": "{hf}", "input_format": "huggingface", "output": "{out}/tf", "output_format": "albert_tf"},
        {"input": ("hf_dir", {})}),
    "albert_train_vocab": (["-m", "albert_tf.cli.train_vocab"], {
        "input": "{corpus}", "model_prefix": "{out}/spm", "vocab_size": "150"}, {
        "input": ("text", {}), "model_prefix": ("out_file", {}), "flagfile": ("flagfile", {})}),
    "albert_prepare_text": (["-m", "albert_tf.cli.prepare_text"], {
        "input_file": "{corpus}", "output_file": "{out}/prepared.txt"}, {
        "input_file": ("text", {}), "output_file": ("out_file", {}),
        "heldout_file": ("out_file", {"heldout_fraction": "0.2"}), "flagfile": ("flagfile", {})}),
    "albert_make_sample_corpus": (["-m", "albert_tf.cli.make_sample_corpus"], {
        "output_file": "{out}/corpus.txt", "num_documents": "3"}, {
        "output_file": ("out_file", {}), "documents_dir": ("out_dir", {}), "glue_dir": ("out_dir", {}),
        "flagfile": ("flagfile", {})}),
    "albert_tf.demo": (["-m", "albert_tf.demo"], {"workdir": "{out}/demo", "stages": "table1"}, {
        "workdir": ("out_dir", {}), "glue_dir": ("glue_dir", {"stages": "finetune", "finetune_steps": "1",
                                                              "pretrain_steps": "1"})}),
    "albert_tf.reproduce": (["-m", "albert_tf.reproduce"], {
        "workdir": "{results_dir}", "output": "{out}/REPRODUCTION.md", "render_only": True}, {
        "reuse_results": ("results", {"render_only": None, "shared_data": "{shared_dir}", "workdir": "{out}/w"}),
        "workdir": ("results_dir", {}), "output": ("out_file", {}),
        "shared_data": ("shared_dir", {"render_only": None, "workdir": "{out}/w"})}),
    "albert_tf.tasks.squad": (["-m", "albert_tf.tasks.squad", "span_upper_bound"], {
        "predict_file": "{squad}/train.json", "spm_model_file": "{spm}", "version_2_with_negative": "true",
        "max_seq_length": "32", "max_query_length": "12", "doc_stride": "8"}, {
        "predict_file": ("squad", {}), "spm_model_file": ("spm", {}), "output_file": ("out_file", {}),
        "flagfile": ("flagfile", {})}),
    "albert_tf.data.pretraining.stats": (["-m", "albert_tf.data.pretraining.stats"], {"records": "{shard0}"}, {
        "records": ("records", {})}),
    "albert_tf.configs": (["-m", "albert_tf.configs"], {}, {"ALBERT_TF_PRESETS": ("presets_env", {})}),
}

#: Entry points whose valid command line trains or exports (tens of seconds a run). Of their cases only the empty
#: flagfile succeeds, and absl expands an empty flagfile to no flags when it parses the command line, so that case
#: ends there (``--helpshort`` after the flagfile: exit 0 once every flag is read); what the command then does is the
#: valid command line's own run, which the command's own tests run end to end.
ENDS_AFTER_PARSING = {"run_pretraining", "run_classifier", "run_squad", "run_race", "run_tagging", "export_savedmodel"}

#: flags whose name looks like a path but that hold none (a count, a mode, an encoding, a prefix inside a file)
NOT_PATHS = {"keep_checkpoint_max", "num_keep_checkpoint", "save_checkpoints_steps", "input_encoding",
             "input_file_mode", "file_is_document_boundary", "input_format", "output_format", "module_prefix",
             "input_sentence_size", "shuffle_input_sentence", "model_type", "do_lower_case",
             "predict_feature_left_file"}  # the last: an official flag, accepted and unused

VARIANTS = ("missing", "empty", "truncated", "wrong")
#: an output folder given as a file or under one; an output file given as a folder, under a file, or in a folder
#: that does not exist yet (legal); a feature-cache path under a file. A new output folder is what every valid
#: command line already has.
OUTPUT_VARIANTS = {"out_dir": ("file_for_folder", "under_a_file"),
                   "out_file": ("missing", "folder_for_file", "under_a_file"),
                   "cache": ("under_a_file",)}  # an official feature-file flag: its folder holds the cache


def _cut(source: pathlib.Path, target: pathlib.Path, keep: float = 0.5) -> str:
    data = source.read_bytes()
    target.write_bytes(data[: max(1, int(len(data) * keep))])
    return str(target)


def variants(paths: dict[str, str], root: pathlib.Path) -> dict[str, dict[str, str]]:
    """``{kind: {variant: value}}`` for every input kind of :data:`ENTRY_POINTS` (files made under ``root``); adds
    the valid ``results_dir`` and ``shared_dir`` to ``paths``."""
    root.mkdir(parents=True, exist_ok=True)
    bad = pathlib.Path(paths["bad"])
    text, nul, empty = str(bad / "text.txt"), str(bad / "nul.bin"), str(bad / "empty.txt")
    empty_dir = root / "empty_dir"
    empty_dir.mkdir()

    def cut_folder(source: str, name: str, relative: str) -> str:
        shutil.copytree(source, root / name)
        _cut(pathlib.Path(source) / relative, root / name / relative)
        return str(root / name)

    vocab = root / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\nsun\n")
    flagfile = root / "good.flags"
    flagfile.write_text("--max_seq_length=32\n")
    results = root / "results.json"  # the checked-in report's results: a valid file of this version
    shutil.copy(pathlib.Path(__file__).resolve().parents[2] / "reproduction" / "results.json", results)
    paths["results_dir"] = _folder_with(root / "results_dir", "results.json", results.read_bytes())
    paths["shared_dir"] = str(root / "shared_dir")
    _folder_with(root / "shared_dir" / "text", "book.txt", b"One sentence of a book.\nAnother one.\n")
    truncated_shared = root / "cut_shared"
    _folder_with(truncated_shared / "text", "book.txt", b"")
    not_zip = root / "not_zip.keras"
    not_zip.write_text("this is not a zip archive\n")
    out = {
        "config": {"truncated": _cut(pathlib.Path(paths["config"]), root / "cut_config.json"),
                   "wrong": paths["spm"]},
        "spm": {"truncated": _cut(pathlib.Path(paths["spm"]), root / "cut.model"), "wrong": paths["config"]},
        "vocab": {"truncated": _cut(vocab, root / "cut_vocab.txt", 0.3), "wrong": nul},
        "records": {"truncated": str(bad / "cut.tfrecord"), "wrong": text},
        "checkpoint": {"truncated": str(bad / "cut" / "ckpt-2"), "wrong": paths["corpus"]},
        "keras": {"truncated": _cut(pathlib.Path(paths["spm"]), root / "cut.keras", 0.2), "wrong": str(not_zip)},
        "hf_dir": {"truncated": str(bad / "hf_cut"), "wrong": paths["corpus"], "empty": str(empty_dir)},
        "hub": {"truncated": str(bad / "savedmodel_no_variables"), "wrong": paths["corpus"], "empty": str(empty_dir)},
        "glue_dir": {"truncated": cut_folder(paths["glue"], "cut_glue", "SST-2/train.tsv"), "wrong": paths["corpus"],
                     "empty": str(empty_dir)},
        "race_dir": {"truncated": cut_folder(paths["race"], "cut_race", "RACE/train/middle/1.txt"),
                     "wrong": paths["corpus"], "empty": str(empty_dir)},
        "squad": {"truncated": _cut(pathlib.Path(paths["squad"]) / "train.json", root / "cut_squad.json"),
                  "wrong": paths["config"]},
        "conll": {"truncated": _cut(pathlib.Path(paths["tagging"]) / "train.conll", root / "cut.conll", 0.37),
                  "wrong": nul},
        "text": {"truncated": _cut(pathlib.Path(str(bad / "latin1.txt")), root / "cut_text.txt", 0.9),
                 "wrong": str(bad / "cut" / "ckpt-2.index")},
        "flagfile": {"truncated": _cut(flagfile, root / "cut.flags", 0.6), "wrong": nul},
        "results": {"truncated": _cut(results, root / "cut_results.json"), "wrong": paths["config"]},
        "results_dir": {"truncated": _folder_with(root / "cut_results_dir", "results.json",
                                                  (root / "cut_results.json").read_bytes()),
                        "wrong": paths["corpus"],
                        "empty": str(empty_dir)},
        "shared_dir": {"truncated": str(truncated_shared), "wrong": paths["corpus"], "empty": str(empty_dir)},
        "presets_env": {"truncated": _cut(pathlib.Path(_presets(root)), root / "cut_presets.json"),
                        "wrong": paths["config"]},
    }
    for kind, found in out.items():
        found.setdefault("empty", empty)
        found["missing"] = str(root / "missing" / f"no_{kind}")
    return out


def _folder_with(folder: pathlib.Path, name: str, data: bytes) -> str:
    folder.mkdir(parents=True)
    (folder / name).write_bytes(data)
    return str(folder)


def _presets(root: pathlib.Path) -> str:
    path = root / "presets.json"
    path.write_text(json.dumps({"my_model": {"url": "https://example.invalid/my_model.tar.gz",
                                             "sha256": "0" * 64, "description": "a preset of a user"}}))
    return str(path)


def output_variants(case_dir: pathlib.Path, kind: str) -> dict[str, str]:
    """The places an output flag of ``kind`` (``out_dir`` / ``out_file``) can wrongly (or, ``missing``: newly) be
    given, made in the case's own scratch folder ``case_dir``."""
    case_dir.mkdir(parents=True, exist_ok=True)
    (case_dir / "a_file.txt").write_text("a file that is in the way\n")
    (case_dir / "a_folder").mkdir(exist_ok=True)
    return {"missing": str(case_dir / "new" / "deeper" / kind), "file_for_folder": str(case_dir / "a_file.txt"),
            "folder_for_file": str(case_dir / "a_folder"), "under_a_file": str(case_dir / "a_file.txt" / kind)}
