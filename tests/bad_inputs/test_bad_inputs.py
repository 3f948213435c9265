"""Table-driven bad inputs and faults through the real command lines (issue: reliability).

Every case runs the CLI in a subprocess and checks: a non-zero exit with exactly one ``error:`` line naming the
file or flag (or, for legal but degenerate input, exit 0 with a summary saying what was skipped), no
traceback, no signal, and every input file byte-identical afterwards. In-process cases cover the Python API
(``AlbertConfig``, the tokenizers, the serving preprocessor).
"""

from __future__ import annotations

import concurrent.futures
import os
import queue
import re

import commands
import pytest
from bad_inputs import fixtures
from conftest import ROOT

CLI = {
    "cpd": [str(ROOT / "create_pretraining_data.py")],
    "rp": [str(ROOT / "run_pretraining.py")],
    "rc": [str(ROOT / "run_classifier.py")],
    "rs": [str(ROOT / "run_squad.py")],
    "rr": [str(ROOT / "run_race.py")],
    "rt": ["-m", "albert_tf.cli.run_tagging"],
    "export": [str(ROOT / "export_savedmodel.py")],
    "convert": ["-m", "albert_tf.cli.convert_checkpoint", "convert"],
    "vocab": ["-m", "albert_tf.cli.train_vocab"],
    "prep": ["-m", "albert_tf.cli.prepare_text"],
    "repro": ["-m", "albert_tf.reproduce"],
    "configs": ["-m", "albert_tf.configs"],
    "demo": ["-m", "albert_tf.demo"],
    "stats": ["-m", "albert_tf.data.pretraining.stats"],
}
BASE = {
    "cpd": {"input_file": "{corpus}", "output_file": "{out}/r.tfrecord", "spm_model_file": "{spm}",
            "max_seq_length": "32", "max_predictions_per_seq": "5", "dupe_factor": "1"},
    "rp": {"albert_config_file": "{config}", "input_file": "{records}", "output_dir": "{out}/run",
           "max_seq_length": "32", "max_predictions_per_seq": "5", "train_batch_size": "8", "num_train_steps": "2",
           "steps_per_loop": "1", "save_checkpoints_steps": "2", "num_warmup_steps": "0"},
    "rc": {"task_name": "SST-2", "data_dir": "{glue}", "output_dir": "{out}/rc", "albert_config_file": "{config}",
           "spm_model_file": "{spm}", "max_seq_length": "16", "do_train": "true", "train_step": "2",
           "train_batch_size": "8", "save_checkpoints_steps": "2"},
    "rs": {"train_file": "{squad}/train.json", "predict_file": "{squad}/train.json", "output_dir": "{out}/rs",
           "albert_config_file": "{config}", "spm_model_file": "{spm}", "max_seq_length": "32",
           "max_query_length": "12", "doc_stride": "8", "version_2_with_negative": "true", "do_train": "true",
           "train_step": "2", "train_batch_size": "4", "save_checkpoints_steps": "2"},
    "rr": {"data_dir": "{race}", "output_dir": "{out}/rr", "albert_config_file": "{config}", "spm_model_file": "{spm}",
           "max_seq_length": "32", "max_qa_length": "8", "train_step": "2", "warmup_step": "0",
           "train_batch_size": "2", "save_checkpoints_steps": "2"},
    "rt": {"train_file": "{tagging}/train.conll", "output_dir": "{out}/rt", "albert_config_file": "{config}",
           "spm_model_file": "{spm}", "max_seq_length": "16", "do_train": "true", "train_step": "2",
           "train_batch_size": "4", "save_checkpoints_steps": "2"},
    "export": {"task_name": "SST-2", "albert_config_file": "{config}", "spm_model_file": "{spm}",
               "max_seq_length": "16", "checkpoint": "{bad}/ckpt-1", "export_dir": "{out}/export"},
    "convert": {"input": "{bad}/ckpt-1", "input_format": "official", "output": "{out}/hf",
                "output_format": "huggingface", "albert_config_file": "{config}"},
    "vocab": {"input": "{corpus}", "model_prefix": "{tmp}/spm", "vocab_size": "200"},
    "prep": {"input_file": "{corpus}", "output_file": "{out}/prepared.txt"},
    "repro": {"workdir": "{out}/w", "output": "{out}/REPRODUCTION.md"},
    "configs": {},
    "demo": {"workdir": "{out}/demo", "stages": "table1"},
    "stats": {"records": "{shard0}"},
}
B = "{bad}"

# (id, command, flag changes (None removes a flag; a key starting with '+' is a positional/raw arg, one starting with
# '$' an environment variable), kind, fragments)
# kind: "error" (one error line holding every fragment), "ok" (exit 0, the fragments in the output), "rerun-ok" /
# "rerun-error" (the command twice on the same output; the second run is checked)
CASES = [
    # ---------------------------------------------------------------- create_pretraining_data
    ("cpd-no-input", "cpd", {"input_file": None}, "error", ["--input_file is required"]),
    ("cpd-glob-no-match", "cpd", {"input_file": B + "/nothing-*.txt"}, "error", ["nothing-*.txt"]),
    ("cpd-latin1", "cpd", {"input_file": B + "/latin1.txt"}, "error", ["latin1.txt", "byte"]),
    ("cpd-only-empty", "cpd", {"input_file": B + "/empty.txt"}, "error", ["empty"]),
    ("cpd-missing-model", "cpd", {"spm_model_file": B + "/none.model"}, "error", ["none.model"]),
    ("cpd-garbage-model", "cpd", {"spm_model_file": B + "/garbage.model"}, "error", ["garbage.model"]),
    ("cpd-zero-shards", "cpd", {"output_file": "{out}/r.tfrecord@0"}, "error", ["--output_file", "N >= 1"]),
    ("cpd-output-is-input", "cpd", {"output_file": "{corpus}"}, "error", ["sample_corpus.txt", "input and an output"]),
    ("cpd-tiny-seq", "cpd", {"max_seq_length": "2"}, "error", ["--max_seq_length"]),
    ("cpd-mask-prob", "cpd", {"masked_lm_prob": "1.5"}, "error", ["--masked_lm_prob"]),
    ("cpd-dupe-zero", "cpd", {"dupe_factor": "0"}, "error", ["--dupe_factor"]),
    ("cpd-workers-zero", "cpd", {"num_workers": "0"}, "error", ["--num_workers"]),
    ("cpd-bad-enum", "cpd", {"sentence_order": "bogus"}, "error", ["--sentence_order"]),
    ("cpd-unknown-flag", "cpd", {"no_such_flag": "1"}, "error", ["no_such_flag"]),
    ("cpd-int-flag-text", "cpd", {"max_seq_length": "long"}, "error", ["max_seq_length"]),
    ("cpd-nul-bytes", "cpd", {"input_file": B + "/nul.bin"}, "ok", ["documents: 1", "instances: 1"]),
    # ---------------------------------------------------------------- run_pretraining
    ("rp-no-config", "rp", {"albert_config_file": None}, "error", ["--albert_config_file"]),
    ("rp-config-missing", "rp", {"albert_config_file": B + "/none.json"}, "error", ["none.json"]),
    ("rp-config-not-json", "rp", {"albert_config_file": B + "/not_json.json"}, "error", ["not_json.json"]),
    ("rp-config-bad-heads", "rp", {"albert_config_file": B + "/config_bad_heads.json"}, "error",
     ["num_attention_heads"]),
    ("rp-text-input", "rp", {"input_file": B + "/text.txt"}, "error", ["text.txt", "not a TFRecord"]),
    ("rp-json-input", "rp", {"input_file": B + "/not_json.json"}, "error", ["not_json.json", "not a TFRecord"]),
    ("rp-cut-record", "rp", {"input_file": B + "/cut.tfrecord"}, "error", ["cut.tfrecord", "truncated"]),
    ("rp-flipped-bit", "rp", {"input_file": B + "/flipped.tfrecord"}, "error", ["flipped.tfrecord", "checksum"]),
    ("rp-only-sidecar", "rp", {"input_file": "{records_dir}/*.json"}, "error", ["--input_file", "sidecar"]),
    ("rp-glob-with-sidecar", "rp", {"input_file": "{records_dir}/train.tfrecord*"}, "ok",
     ["skipping 1 create_pretraining_data sidecar"]),
    ("rp-no-match", "rp", {"input_file": B + "/none-*.tfrecord"}, "error", ["--input_file", "none-*.tfrecord"]),
    ("rp-negative-lr", "rp", {"learning_rate": "-0.1"}, "error", ["--learning_rate=-0.1"]),
    ("rp-nan-clip", "rp", {"clip_norm": "nan"}, "error", ["--clip_norm"]),
    ("rp-zero-batch", "rp", {"train_batch_size": "0"}, "error", ["--train_batch_size"]),
    ("rp-zero-steps", "rp", {"num_train_steps": "0"}, "error", ["--num_train_steps"]),
    ("rp-seq-mismatch", "rp", {"max_seq_length": "64"}, "error", ["--max_seq_length=64"]),
    ("rp-pred-over-seq", "rp", {"max_predictions_per_seq": "40"}, "error", ["--max_predictions_per_seq"]),
    ("rp-seq-over-positions", "rp", {"albert_config_file": B + "/config_16_positions.json"}, "error",
     ["max_position_embeddings"]),
    ("rp-init-missing", "rp", {"init_checkpoint": B + "/none/ckpt-3"}, "error", ["ckpt-3"]),
    ("rp-init-garbage", "rp", {"init_checkpoint": B + "/ckpt-1"}, "error", ["ckpt-1"]),
    ("rp-output-is-file", "rp", {"output_dir": "{corpus}"}, "error", ["sample_corpus.txt"]),
    ("rp-bad-strategy", "rp", {"strategy": "bogus"}, "error", ["--strategy"]),
    ("rp-eval-no-input", "rp", {"input_file": None, "do_train": "false", "do_eval": "true"}, "error",
     ["--eval_input_file"]),
    ("rp-nothing-to-do", "rp", {"do_train": "false"}, "error", ["at least one of"]),
    ("rp-extra-arg", "rp", {"+": "oops"}, "error", ["unexpected arguments"]),
    ("rp-no-tpu", "rp", {"strategy": "tpu", "tpu": "no-such-tpu"}, "error", ["--tpu=no-such-tpu", "no TPU answered"]),
    ("rp-unknown-recipe", "rp", {"recipe": "glue/nope"}, "error", ["unknown recipe", "glue/mrpc"]),
    ("rp-unknown-old-spelling", "rp", {"preset": "glue/nope"}, "error", ["unknown recipe", "glue/mrpc"]),
    ("rp-masked-lm-budget-negative", "rp", {"masked_lm_budget": "-1"}, "error", ["--masked_lm_budget"]),
    # ---------------------------------------------------------------- run_classifier
    ("rc-unknown-task", "rc", {"task_name": "MNLI2"}, "error", ["unknown GLUE task 'MNLI2'"]),
    ("rc-no-data-dir", "rc", {"data_dir": None}, "error", ["--data_dir"]),
    ("rc-missing-data", "rc", {"data_dir": B + "/nowhere"}, "error", ["nowhere"]),
    ("rc-header-only", "rc", {"data_dir": B + "/header_only"}, "error", ["train.tsv", "no examples"]),
    ("rc-bad-columns", "rc", {"data_dir": B + "/bad_columns"}, "error", ["train.tsv:3"]),
    ("rc-bad-label", "rc", {"data_dir": B + "/bad_label"}, "error", ["train.tsv:2", "label"]),
    ("rc-bad-utf8", "rc", {"data_dir": B + "/bad_utf8"}, "error", ["train.tsv:2"]),
    ("rc-stsb-label", "rc", {"data_dir": B + "/stsb", "task_name": "STS-B"}, "error", ["train.tsv:2"]),
    ("rc-missing-model", "rc", {"spm_model_file": B + "/none.model"}, "error", ["none.model"]),
    ("rc-garbage-model", "rc", {"spm_model_file": B + "/garbage.model"}, "error", ["garbage.model"]),
    ("rc-vocab-mismatch", "rc", {"albert_config_file": "albert_tiny"}, "error", ["vocab_size"]),
    ("rc-tiny-seq", "rc", {"max_seq_length": "2"}, "error", ["max_seq_length"]),
    ("rc-dropout", "rc", {"classifier_dropout": "1.5"}, "error", ["--classifier_dropout"]),
    ("rc-zero-lr", "rc", {"learning_rate": "0"}, "error", ["--learning_rate"]),
    ("rc-encoder-only-alone", "rc", {"init_encoder_only": "true"}, "error",
     ["--init_encoder_only", "--init_checkpoint"]),
    ("rc-foreign-output", "rc", {"output_dir": B}, "error", ["--init_checkpoint"]),
    ("rc-eval-no-ckpt", "rc", {"do_train": "false", "do_eval": "true", "output_dir": "{out}/empty"}, "error",
     ["no checkpoint"]),
    ("rc-predict-ckpt-missing", "rc", {"do_train": "false", "do_predict": "true",
                                       "predict_checkpoint": B + "/none/ckpt-5"}, "error", ["ckpt-5"]),
    ("rc-export-wordpiece", "rc", {"spm_model_file": "", "vocab_file": B + "/text.txt",
                                   "export_dir": "{out}/e"}, "error", ["--spm_model_file"]),
    # ---------------------------------------------------------------- run_squad
    ("rs-not-squad", "rs", {"train_file": B + "/squad_not_squad.json"}, "error",
     ["squad_not_squad.json", "not a SQuAD file"]),
    ("rs-not-utf8", "rs", {"predict_file": B + "/latin1.txt", "do_predict": "true"}, "error",
     ["latin1.txt", "UTF-8"]),
    ("rs-no-answers", "rs", {"train_file": B + "/squad_no_answers.json"}, "error",
     ["squad_no_answers.json", "question q-sun", "answers"]),
    ("rs-bad-answer-start", "rs", {"train_file": B + "/squad_bad_start.json"}, "error",
     ["squad_bad_start.json", "question q-off", "answer_start"]),
    ("rs-v1-impossible", "rs", {"version_2_with_negative": "false"}, "error",
     ["train.json", "question q-snow", "is_impossible"]),
    ("rs-long-question-batch-1", "rs", {"train_file": B + "/squad_long_question.json", "train_batch_size": "1"},
     "ok",
     ["squad_long_question.json: question q-long: question cut to max_query_length", "saved checkpoint"]),
    ("rs-seq-vs-query", "rs", {"max_seq_length": "15"}, "error", ["--max_seq_length=15", "--max_query_length"]),
    ("rs-no-train-file", "rs", {"train_file": None}, "error", ["--train_file"]),
    ("rs-wordpiece", "rs", {"spm_model_file": "", "vocab_file": B + "/text.txt"}, "error", ["--spm_model_file"]),
    ("rs-eval-without-gold", "rs", {"do_train": "false", "do_eval": "true",
                                    "predict_file": B + "/squad_not_squad.json"}, "error", ["squad_not_squad.json"]),
    ("rs-doc-stride", "rs", {"doc_stride": "0"}, "error", ["--doc_stride"]),
    # ---------------------------------------------------------------- run_race
    ("rr-three-options", "rr", {"data_dir": B + "/race_three_options"}, "error", ["1.txt", "4"]),
    ("rr-answer-e", "rr", {"data_dir": B + "/race_answer_e"}, "error", ["1.txt", "'E'"]),
    ("rr-no-article", "rr", {"data_dir": B + "/race_no_article"}, "error", ["1.txt", "article"]),
    ("rr-no-data", "rr", {"data_dir": B + "/nowhere"}, "error", ["nowhere"]),
    ("rr-both-levels", "rr", {"middle_only": "true", "high_only": "true"}, "error", ["--middle_only", "--high_only"]),
    ("rr-qa-vs-seq", "rr", {"max_qa_length": "30"}, "error", ["--max_seq_length=32", "--max_qa_length"]),
    ("rt-tag-not-iob", "rt", {"train_file": B + "/tagging_not_iob.conll"}, "error",
     ["tagging_not_iob.conll:2", "'X-place'", "expected O, B-TYPE, I-TYPE"]),
    ("rt-no-tag-column", "rt", {"train_file": B + "/tagging_no_column.conll"}, "error",
     ["tagging_no_column.conll:2", "no tag column"]),
    ("rt-empty-file", "rt", {"train_file": B + "/tagging_empty.conll"}, "error",
     ["tagging_empty.conll", "no sentence"]),
    ("rt-unknown-tag", "rt", {"dev_file": B + "/tagging_unknown.conll", "do_eval": "true"}, "error",
     ["tagging_unknown.conll:3", "'B-river' is not one the model knows"]),
    ("rt-i-after-b", "rt", {"train_file": B + "/tagging_i_after_b.conll"}, "ok",
     ["tagging_i_after_b.conll:12: I-place after B-person", "read as the start of a new entity of its own type"]),
    ("rt-ok-batch-1", "rt", {"dev_file": "{tagging}/dev.conll", "do_eval": "true", "train_batch_size": "1"}, "ok",
     ["tags read as IOB2", "best entity f1 = ", "saved checkpoint"]),
    ("rt-output-is-input", "rt", {"output_dir": "{tagging}"}, "error", ["--output_dir", "input"]),
    ("rc-misspelt-preset", "rc", {"init_checkpoint": "albert_base_v3"}, "error",
     ["--init_checkpoint albert_base_v3", "not a pretrained preset name", "did you mean albert_base_v2"]),
    # ---------------------------------------------------------------- export_savedmodel
    ("export-garbage-ckpt", "export", {}, "error", ["ckpt-1"]),
    ("export-no-checkpoint", "export", {"checkpoint": None}, "error", ["--checkpoint"]),
    ("export-unknown-task", "export", {"task_name": "NOPE"}, "error", ["NOPE"]),
    ("export-quantize-without-tflite", "export", {"quantize": "dynamic"}, "error", ["--quantize=dynamic", "--tflite"]),
    ("export-misspelt-preset", "export", {"checkpoint": "albert_larg_v2"}, "error",
     ["--checkpoint albert_larg_v2", "did you mean albert_large_v2"]),
    # ---------------------------------------------------------------- checkpoint converter
    ("convert-garbage", "convert", {}, "error", ["ckpt-1"]),
    ("convert-missing", "convert", {"input": B + "/none/model.ckpt"}, "error", ["model.ckpt"]),
    ("convert-bad-format", "convert", {"input_format": "pickle"}, "error", ["--input_format"]),
    ("convert-misspelt-preset", "convert", {"input": "albert-base-v9"}, "error",
     ["--input albert-base-v9", "not a pretrained preset name"]),
    ("convert-hf-no-weights", "convert", {"input": B + "/hf_no_weights", "input_format": "huggingface"}, "error",
     ["hf_no_weights"]),
    ("convert-text-as-keras", "convert", {"input": B + "/text.txt", "input_format": "albert_tf"}, "error",
     ["text.txt"]),
    # ---------------------------------------------------------------- vocabulary, text preparation
    ("vocab-missing-input", "vocab", {"input": B + "/none.txt"}, "error", ["none.txt"]),
    ("vocab-too-large", "vocab", {"vocab_size": "100000"}, "error", ["--vocab_size 100000", "at most"]),
    ("prep-no-match", "prep", {"input_file": B + "/none-*.txt"}, "error", ["none-*.txt"]),
    ("prep-latin1", "prep", {"input_file": "{corpus}," + B + "/latin1.txt"}, "error",
     ["latin1.txt", "--input_encoding=utf-8,iso-8859-1"]),
    # ---------------------------------------------------------------- the same command twice ("rerun-*": the
    # checks are on the second run; the first must succeed)
    ("cpd-rerun", "cpd", {}, "rerun-ok", ["instances:"]),
    ("rp-rerun", "rp", {}, "rerun-ok", ["nothing left to train"]),
    ("rc-rerun", "rc", {}, "rerun-ok", []),
    ("rs-rerun", "rs", {}, "rerun-ok", []),
    ("rr-rerun", "rr", {}, "rerun-ok", ["best accuracy = "]),
    ("export-rerun", "export", {"checkpoint": B + "/sst2/ckpt-5"}, "rerun-ok", ["is the export of"]),
    ("convert-rerun", "convert", {"input": "{run}/ckpt-2", "input_format": "albert_tf"}, "rerun-ok",
     ["wrote huggingface"]),
    ("prep-rerun", "prep", {}, "rerun-ok", []),
    ("vocab-rerun", "vocab", {"vocab_size": "150"}, "rerun-ok", []),
    # ---------------------------------------------------------------- no command writes onto its own input
    ("convert-output-is-input", "convert", {"input": "{run}/ckpt-2", "input_format": "albert_tf",
                                            "output": "{run}/ckpt-2", "output_format": "albert_tf"}, "error",
     ["--output", "would write onto the input"]),
    ("convert-output-holds-input", "convert", {"input": "{run}/ckpt-2", "input_format": "albert_tf",
                                               "output": "{run}"}, "error", ["would write onto the input"]),
    ("convert-over-a-run", "convert", {"input": "{run}/ckpt-2", "input_format": "albert_tf",
                                       "output": "{run}/weights", "output_format": "albert_tf"}, "error",
     ["optimizer state", "--overwrite"]),
    ("convert-hard-link", "convert", {"input": "{run}/ckpt-2", "input_format": "albert_tf", "output": B + "/hard",
                                      "output_format": "albert_tf", "overwrite": "true"}, "error",
     ["would write onto the input"]),
    ("convert-through-symlink", "convert", {"input": "{run}/ckpt-2", "input_format": "albert_tf",
                                            "output": B + "/run_link/ckpt-2", "output_format": "albert_tf",
                                            "overwrite": "true"}, "error", ["would write onto the input"]),
    ("cpd-metadata-is-input", "cpd", {"metadata_file": "{corpus}"}, "error", ["sample_corpus.txt", "input"]),
    ("cpd-output-symlink-to-input", "cpd", {"output_file": B + "/corpus_link"}, "error", ["corpus_link", "input"]),
    ("rp-output-holds-input", "rp", {"output_dir": "{records_dir}"}, "error", ["--output_dir", "input"]),
    ("rc-output-is-data-dir", "rc", {"output_dir": "{glue}"}, "error", ["--output_dir", "input"]),
    ("rc-output-in-data-dir", "rc", {"output_dir": "{glue}/SST-2"}, "error", ["--output_dir", "input"]),
    ("rs-output-holds-train-file", "rs", {"output_dir": "{squad}"}, "error", ["--output_dir", "input"]),
    ("rr-output-is-data-dir", "rr", {"output_dir": "{race}"}, "error", ["--output_dir", "input"]),
    ("rc-export-into-data-dir", "rc", {"export_dir": "{glue}"}, "error", ["--export_dir", "input"]),
    ("export-into-checkpoint-dir", "export", {"checkpoint": B + "/sst2/ckpt-5", "export_dir": B + "/sst2"}, "error",
     ["--export_dir"]),
    ("prep-output-is-input", "prep", {"output_file": "{corpus}"}, "error", ["sample_corpus.txt", "input"]),
    # ---------------------------------------------------------------- damaged checkpoints and weights
    ("rc-init-cut-data", "rc", {"init_checkpoint": B + "/cut/ckpt-2"}, "error", ["cut/ckpt-2"]),
    ("rc-init-bad-index", "rc", {"init_checkpoint": B + "/bad_index/ckpt-2"}, "error", ["bad_index/ckpt-2"]),
    ("rp-init-cut-data", "rp", {"init_checkpoint": B + "/cut/ckpt-2"}, "error", ["cut/ckpt-2"]),
    ("rs-init-cut-data", "rs", {"init_checkpoint": B + "/cut/ckpt-2"}, "error", ["cut/ckpt-2"]),
    ("rp-resume-cut", "rp", {"output_dir": B + "/run_cut", "num_train_steps": "4"}, "error", ["run_cut/ckpt-2"]),
    ("export-cut-data", "export", {"checkpoint": B + "/cut/ckpt-2"}, "error", ["cut/ckpt-2"]),
    ("convert-cut-data", "convert", {"input": B + "/cut/ckpt-2", "input_format": "albert_tf"}, "error",
     ["cut/ckpt-2"]),
    ("convert-bad-index", "convert", {"input": B + "/bad_index/ckpt-2", "input_format": "albert_tf"}, "error",
     ["bad_index/ckpt-2"]),
    ("convert-hf-cut", "convert", {"input": B + "/hf_cut", "input_format": "huggingface",
                                   "output": "{out}/official", "output_format": "official"}, "error",
     ["model.safetensors"]),
    ("rc-init-savedmodel-without-variables", "rc", {"init_checkpoint": B + "/savedmodel_no_variables"}, "error",
     ["savedmodel_no_variables", "SavedModel without its variables"]),
    ("rc-init-hf-cut", "rc", {"init_checkpoint": B + "/hf_cut"}, "error", ["model.safetensors"]),
    # ---------------------------------------------------------------- messages that say what to fix
    ("rc-spm-is-dir", "rc", {"spm_model_file": B}, "error", ["--spm_model_file", "is a directory"]),
    ("rp-config-is-dir", "rp", {"albert_config_file": B}, "error", ["--albert_config_file", "is a directory"]),
    ("cpd-input-is-dir", "cpd", {"input_file": B + "/stsb"}, "error", ["--input_file", "is a directory"]),
    ("rs-train-file-is-dir", "rs", {"train_file": "{squad}"}, "error", ["squad is a directory", "SQuAD JSON"]),
    ("export-spm-is-dir", "export", {"checkpoint": B + "/sst2/ckpt-5", "spm_model_file": B}, "error",
     ["--spm_model_file", "is a directory"]),
    ("rc-data-dir-is-file", "rc", {"data_dir": "{corpus}"}, "error", ["--data_dir", "not a directory"]),
    ("rr-data-dir-is-file", "rr", {"data_dir": "{corpus}"}, "error", ["--data_dir", "not a directory"]),
    ("export-dir-is-file", "export", {"checkpoint": B + "/sst2/ckpt-5", "export_dir": "{corpus}"}, "error",
     ["--export_dir", "not a directory"]),
    ("rp-output-under-file", "rp", {"output_dir": "{corpus}/run"}, "error", ["--output_dir", "not a directory"]),
    ("rc-output-under-file", "rc", {"output_dir": "{corpus}/rc"}, "error", ["--output_dir", "not a directory"]),
    ("cpd-output-under-file", "cpd", {"output_file": "{corpus}/r.tfrecord"}, "error",
     ["--output_file", "not a directory"]),
    ("convert-output-under-file", "convert", {"input": "{run}/ckpt-2", "input_format": "albert_tf",
                                              "output": "{corpus}/hf"}, "error", ["--output", "not a directory"]),
    ("prep-output-under-file", "prep", {"output_file": "{corpus}/x.txt"}, "error",
     ["--output_file", "not a directory"]),
    ("export-head-of-another-task", "export", {"task_name": "MNLI", "checkpoint": B + "/sst2/ckpt-5"}, "error",
     ["--task_name"]),
    # ---------------------------------------------------------------- reliability, third round. Kind 1: no
    # traceback from any entry point (the smallest settings, damaged JSON, a .keras file that is no zip archive)
    # (run_squad's and run_tagging's batch of one: rs-long-question-batch-1 and rt-ok-batch-1 above)
    ("rc-batch-1", "rc", {"train_batch_size": "1"}, "ok", ["saved checkpoint"]),
    ("rc-batch-1-accumulate", "rc", {"train_batch_size": "1", "gradient_accumulation_steps": "2"}, "ok",
     ["saved checkpoint"]),
    ("rr-batch-1", "rr", {"train_batch_size": "1"}, "ok", ["best accuracy = "]),
    ("convert-keras-not-zip", "convert", {"input": B + "/not_zip.keras", "input_format": "albert_tf"}, "error",
     ["not_zip.keras: not a .keras file (not a zip archive"]),
    ("repro-render-cut-results", "repro", {"workdir": B + "/repro_cut", "+": "--render_only"}, "error",
     ["repro_cut/results.json", "cut short"]),
    ("repro-render-other-shape", "repro", {"workdir": B + "/repro_shape", "+": "--render_only"}, "error",
     ["repro_shape/results.json", "not the results this version renders"]),
    ("configs-bad-presets-file", "configs", {"$ALBERT_TF_PRESETS": B + "/not_json.json"}, "error",
     ["not_json.json", "not valid JSON"]),
    ("demo-workdir-is-a-file", "demo", {"workdir": "{corpus}"}, "error", ["sample_corpus.txt is a file"]),
    ("stats-cut-records", "stats", {"records": B + "/cut.tfrecord"}, "error", ["cut.tfrecord", "truncated"]),
    # Kind 2: messages name the real cause (a file that is there but of another kind is not "not found"; what
    # SentencePiece and TensorFlow say is put in the user's terms)
    ("rc-init-is-a-text-file", "rc", {"init_checkpoint": "{corpus}"}, "error",
     ["sample_corpus.txt: a file, but not a checkpoint"]),
    ("rc-spm-is-json", "rc", {"spm_model_file": "{config}"}, "error",
     ["albert_config.json: not a valid SentencePiece model (a text file", "--vocab_file"]),
    ("rc-vocab-is-binary", "rc", {"spm_model_file": "", "vocab_file": B + "/nul.bin"}, "error",
     ["nul.bin: a binary file", "not a vocab file"]),
    ("rc-config-is-binary", "rc", {"albert_config_file": "{spm}"}, "error",
     ["demo_spm.model: not a JSON config: a binary file"]),
    ("rc-hub-handle-is-a-file", "rc", {"albert_hub_module_handle": "{corpus}", "albert_config_file": None,
                                       "spm_model_file": None}, "error",
     ["a file, where a TF-Hub module's directory is expected"]),
    ("rc-flagfile-is-binary", "rc", {"flagfile": B + "/nul.bin"}, "error", ["--flagfile", "a binary file"]),
    ("rc-misspelt-hub-id", "rc", {"init_checkpoint": "albert/albert-base-v3"}, "error",
     ["--init_checkpoint albert/albert-base-v3", "did you mean albert/albert-base-v2"]),
    ("rs-spm-empty", "rs", {"spm_model_file": B + "/empty.txt"}, "error",
     ["empty.txt: not a valid SentencePiece model (the file is empty)"]),
    ("vocab-binary-corpus", "vocab", {"input": B + "/nul.bin"}, "error", ["nul.bin: a binary file"]),
    ("vocab-blank-corpus", "vocab", {"input": B + "/blank.txt"}, "error", ["no text to train on", "blank line"]),
    ("export-dir-under-a-file-before-work", "rc", {"export_dir": "{corpus}/export"}, "error",
     ["--export_dir", "is a file, not a directory"]),
    # Kind 4: outputs that are nearly empty are named; suspicious data is named before training
    ("cpd-one-giant-line", "cpd", {"input_file": B + "/giant_line.txt"}, "ok",
     ["warning:", "instance(s), where about", "one sentence per line?"]),
    ("cpd-blank-only", "cpd", {"input_file": B + "/blank.txt"}, "error", ["no text in the input"]),
    ("cpd-same-file-twice", "cpd", {"input_file": "{corpus},{corpus}"}, "error", ["named twice", "--dupe_factor"]),
    ("rc-stsb-score-out-of-range", "rc", {"data_dir": B + "/stsb_range", "task_name": "STS-B"}, "error",
     ["train.tsv:2", "outside STS-B's scores [0, 5]"]),
    ("prep-empty-input", "prep", {"input_file": B + "/empty.txt"}, "error", ["no document in", "empty.txt"]),
]


def _args(command: str, changes: dict, paths: dict, out: str) -> list[str]:
    values = dict(BASE[command])
    extra = []
    for key, value in changes.items():
        if key.startswith(("+", "$")):
            if key.startswith("+"):
                extra.append(value)
        elif value is None:
            values.pop(key, None)
        else:
            values[key] = value
    fill = {**paths, "out": out, "tmp": os.path.dirname(out)}
    return [*CLI[command], *(f"--{k}={v.format(**fill)}" for k, v in values.items()), *extra]


#: Cases run this many at a time, each on its own copy of the inputs (so a changed input is still one case's).
#: A case is mostly Python and TensorFlow starting up, one core's work; two at once halve the corpus' time here.
WORKERS = 2


def run_case(command, changes, paths, out):
    fill = {**paths, "out": out, "tmp": os.path.dirname(out)}
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONHASHSEED": "0",
           **{k[1:]: v.format(**fill) for k, v in changes.items() if k.startswith("$")}}
    return commands.run(_args(command, changes, paths, out), cwd=paths["root"], env=env, timeout=600)


@pytest.fixture(scope="module")
def outcomes(request, tmp_path_factory):
    """``{case id: (completed process, input files it changed, stderr of a failed first run of a rerun case)}`` for
    every selected case, run WORKERS at a time."""
    wanted = {item.callspec.params["case"][0] for item in request.session.items
              if getattr(item, "originalname", "") == "test_bad_input_gets_one_clear_line"}
    cases = [c for c in CASES if c[0] in wanted]
    base = fixtures.build(tmp_path_factory.mktemp("bad_inputs"))
    free: queue.Queue = queue.Queue()
    free.put(base)
    for i in range(1, WORKERS):
        free.put(fixtures.copy_inputs(base, tmp_path_factory.mktemp(f"bad_inputs_{i}")))

    def one(case):
        name, command, changes, kind, _ = case
        paths = free.get()
        try:
            before = fixtures.checksums(paths["root"])
            out = str(tmp_path_factory.mktemp(name) / "out")
            first_failed = ""
            if kind.startswith("rerun"):
                first = run_case(command, changes, paths, out)
                first_failed = first.stderr[-3000:] if first.returncode else ""
            result = run_case(command, changes, paths, out)
            after = fixtures.checksums(paths["root"])
            changed = sorted(os.path.relpath(p, paths["root"]) for p in set(before) | set(after)
                             if before.get(p) != after.get(p))
            return result, changed, first_failed
        finally:
            free.put(paths)

    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        return dict(zip([c[0] for c in cases], pool.map(one, cases)))


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_one_clear_line(case, outcomes):
    name, command, changes, kind, fragments = case
    result, changed, first_failed = outcomes[name]
    assert not first_failed, f"the first run failed: {first_failed}"
    output = result.stdout + result.stderr
    assert result.returncode >= 0, f"killed by signal {-result.returncode}"
    assert "Traceback" not in output, output[-3000:]
    if kind in ("error", "rerun-error"):
        assert result.returncode != 0, output[-3000:]
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, result.stderr[-3000:]
        for fragment in fragments:
            assert fragment in errors[0], errors[0]
    else:
        assert result.returncode == 0, output[-3000:]
        for fragment in fragments:
            assert fragment in output, output[-3000:]
    assert not changed, f"input files changed: {changed}"


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 60 and len({c[0] for c in CASES}) == len(CASES)
    assert re.fullmatch(r"[a-z0-9-]+", "".join(c[0] for c in CASES))
