"""The demo's pretraining learns both tasks: held-out MLM and SOP accuracy beat their baselines."""

import argparse

import pytest


@pytest.mark.slow
def test_demo_pretraining_learns_mlm_and_sop(tmp_path):
    from albert_tf.demo import pretrain, pretraining_data

    args = argparse.Namespace(workdir=str(tmp_path), seed=12345, glue_dir=None, pretrain_steps=0)
    args.pretraining_data_result = pretraining_data.run(str(tmp_path), args)
    result = pretrain.run(str(tmp_path), args)
    after, base = result["after"], result["baselines"]
    assert result["steps"] == pretrain.DEFAULT_STEPS
    # Held-out documents never seen in training; baselines are the best constant predictions.
    assert after["masked_lm_accuracy"] > base["masked_lm_accuracy_majority_token"] + 0.03
    assert after["sentence_order_accuracy"] > base["sentence_order_accuracy_majority_label"] + 0.2
