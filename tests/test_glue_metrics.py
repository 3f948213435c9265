"""GLUE metrics against scikit-learn / scipy (test-only references), incl. degenerate inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.stats
import sklearn.metrics

from albert_tf.evaluation import glue_metrics as gm


@pytest.mark.parametrize("seed", range(5))
def test_classification_metrics_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    y = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < 0.7, y, 1 - y)  # correlated predictions
    assert gm.accuracy(y, p) == pytest.approx(sklearn.metrics.accuracy_score(y, p), abs=1e-12)
    assert gm.matthews_corrcoef(y, p) == pytest.approx(sklearn.metrics.matthews_corrcoef(y, p), abs=1e-12)
    assert gm.f1(y, p) == pytest.approx(sklearn.metrics.f1_score(y, p, zero_division=0), abs=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_multiclass_mcc_matches_sklearn(seed):
    rng = np.random.default_rng(100 + seed)
    y = rng.integers(0, 3, 200)
    p = np.where(rng.random(200) < 0.5, y, rng.integers(0, 3, 200))
    assert gm.matthews_corrcoef(y, p) == pytest.approx(sklearn.metrics.matthews_corrcoef(y, p), abs=1e-12)
    assert gm.accuracy(y, p) == pytest.approx(sklearn.metrics.accuracy_score(y, p))


@pytest.mark.parametrize("seed", range(5))
def test_correlations_match_scipy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 500))
    y = np.round(rng.uniform(0, 5, n), 1)  # rounded: many ties, as in STS-B gold scores
    p = (y + rng.normal(0, 1.5, n)).astype(np.float32)
    assert gm.pearson(y, p) == pytest.approx(scipy.stats.pearsonr(y, p)[0], abs=1e-6)
    assert gm.spearman(y, p) == pytest.approx(scipy.stats.spearmanr(y, p)[0], abs=1e-9)
    assert gm.mse(y, p) == pytest.approx(sklearn.metrics.mean_squared_error(y, p), rel=1e-6)


def test_tied_predictions_spearman_matches_scipy():
    y = np.array([0.0, 1.0, 1.0, 2.0, 3.0, 3.0, 3.0, 4.0])
    p = np.array([1.0, 1.0, 0.5, 2.0, 2.0, 2.0, 5.0, 5.0])
    assert gm.spearman(y, p) == pytest.approx(scipy.stats.spearmanr(y, p)[0], abs=1e-12)


def test_degenerate_one_class_and_constant_predictions():
    y_one = np.zeros(10, dtype=int)
    p_mix = np.array([0, 1] * 5)
    const = np.ones(10, dtype=int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # MCC: one class in labels or predictions -> 0, as scikit-learn.
        assert gm.matthews_corrcoef(y_one, p_mix) == sklearn.metrics.matthews_corrcoef(y_one, p_mix) == 0.0
        assert gm.matthews_corrcoef(p_mix, const) == sklearn.metrics.matthews_corrcoef(p_mix, const) == 0.0
        assert gm.matthews_corrcoef(const, const) == 0.0
        # F1: no positive anywhere -> 0 (zero_division=0).
        assert gm.f1(y_one, y_one) == sklearn.metrics.f1_score(y_one, y_one, zero_division=0) == 0.0
        # Constant predictions against mixed labels: F1 of predicting all-positive.
        assert gm.f1(p_mix, const) == pytest.approx(sklearn.metrics.f1_score(p_mix, const))
        assert gm.accuracy(y_one, y_one) == 1.0
        # Pearson / Spearman are undefined for a constant side: scipy gives NaN, we define 0.
        y = np.linspace(0, 5, 10)
        assert np.isnan(scipy.stats.pearsonr(y, np.full(10, 2.5))[0])
        assert np.isnan(scipy.stats.spearmanr(y, np.full(10, 2.5))[0])
    assert gm.pearson(y, np.full(10, 2.5)) == 0.0
    assert gm.spearman(y, np.full(10, 2.5)) == 0.0
    assert gm.pearson(np.full(10, 1.0), y) == 0.0
    # Perfect and inverted rankings.
    assert gm.pearson(y, 2 * y + 1) == pytest.approx(1.0)
    assert gm.spearman(y, -(y**3)) == pytest.approx(-1.0)


def test_empty_and_mismatched_inputs_raise():
    with pytest.raises(ValueError, match="no examples"):
        gm.accuracy([], [])
    with pytest.raises(ValueError, match="3 labels but 2 predictions"):
        gm.pearson([1, 2, 3], [1, 2])


def test_task_metric_sets_and_key_metrics():
    y = np.array([0, 1, 1, 0, 1])
    p = np.array([0, 1, 0, 0, 1])
    assert set(gm.glue_metrics("CoLA", y, p)) == {"accuracy", "matthews_corr"}
    assert set(gm.glue_metrics("mrpc", y, p)) == {"accuracy", "f1"}
    assert set(gm.glue_metrics("sst-2", y, p)) == {"accuracy"}
    assert set(gm.glue_metrics("sts-b", y.astype(float), p.astype(float))) == {"pearson", "spearman", "mse"}
    assert gm.key_metric("cola") == "matthews_corr"
    assert gm.key_metric("STS-B") == "pearson"
    assert gm.key_metric("rte") == "accuracy"
