"""albert-tf: ALBERT (A Lite BERT) for TensorFlow 2 / Keras 3."""

from setuptools import find_namespace_packages, setup

# The stack is pinned exactly: tensorflow-text's minor version must match TensorFlow's,
# and the python sentencepiece version must break Viterbi ties the way tf_text does
# (0.2.2/0.2.3 differ from tf_text 2.21; 0.2.1 agrees). See README "Dependencies".
INSTALL_REQUIRES = [
    "tensorflow==2.21.0",
    "tensorflow-text==2.21.1",
    "keras==3.15.1",
    "sentencepiece==0.2.1",
    "absl-py==2.5.1",
    "google-crc32c==1.9.0",  # TFRecord checksums when validating input files
    "safetensors>=0.4,<1",  # Hugging Face weights in and out (small, no torch needed)
    "numpy>=2.0,<2.5",
]

EXTRAS = {
    "test": [
        "pytest>=8.0",
        # `make test` runs the suite in TEST_WORKERS processes, whole files each (pytest-xdist --dist loadfile).
        "pytest-xdist>=3.8",  # --no-loadscope-reorder
        # `make coverage`: line coverage of every process the suite starts ([run] patch = subprocess, fork).
        "coverage>=7.10",
        "hypothesis>=6.100",
        "ruff>=0.6",
        "scikit-learn>=1.5",
        "scipy>=1.13",
        # tests/test_console_scripts.py builds the wheel without build isolation.
        "setuptools>=69",
        "wheel>=0.42",
        # tests/test_notebooks.py executes notebooks/*.ipynb on CPU (the "notebooks" extra).
        "nbclient>=0.10",
        "nbformat>=5.10",
        "ipykernel>=6.29",
        # pinned: tests/test_reproduction_verdicts.py regenerates the report's PNG plots byte for byte.
        "matplotlib==3.11.2",
        # tests/test_paper_map.py builds the docs site (mkdocs.yml) and checks it has every page.
        "mkdocs>=1.6,<2",
        # tests/test_pretraining_beam.py runs the Beam pipeline with the DirectRunner (the "beam" extra).
        "apache-beam==2.77.0",
        # tests/test_export_onnx.py converts the token-id signatures (the "onnx" extra).
        "tf2onnx==1.17.0",
        "onnx==1.23.2",
        "onnxruntime==1.32.0",
        # tests/test_tagging_data.py: the entity scores against seqeval's (conlleval's chunking).
        "seqeval==1.2.2",
        # tests/test_keras_hub_presets.py: keras-hub presets in and out (the "keras_hub" extra).
        "keras-hub==0.32.0",
    ],
    # Independent reference implementations, used only by tests and benchmarks.
    # torch is pinned to the CPU build available as a local wheel on the project machines;
    # an unpinned torch would pull a multi-GB CUDA build.
    "parity": [
        "torch==2.13.0",
        "transformers==5.23.0",
        "keras-hub==0.32.0",
    ],
    # What notebooks/*.ipynb need beyond the base install (plots; a Jupyter kernel where the runtime lacks one).
    "notebooks": ["matplotlib>=3.8", "ipykernel>=6.29"],
    # create_pretraining_data --runner=DirectRunner|DataflowRunner|FlinkRunner|SparkRunner (Apache Beam). Resolves
    # with the pinned stack; it moves protobuf from 7.36.2 to 6.33.6 (TensorFlow 2.21 accepts >=6.31.1,<8).
    "beam": ["apache-beam==2.77.0"],
    # export_savedmodel --onnx: tf2onnx 1.17.0 converts TF 2.21 functions (albert_tf/export/onnx.py); ONNX Runtime
    # runs the file. onnx 1.23 wants protobuf>=6.31.1 and ml_dtypes>=0.5.4, as the pinned TensorFlow has.
    "onnx": ["tf2onnx==1.17.0", "onnx==1.23.2", "onnxruntime==1.32.0"],
    # keras-hub presets in and out (albert_convert_checkpoint --input_format/--output_format=keras_hub,
    # --init_checkpoint=<keras-hub preset folder or handle>): read and written through keras-hub itself.
    "keras_hub": ["keras-hub==0.32.0"],
    # The TensorBoard UI for the training and evaluation scalars every runner writes.
    "tensorboard": ["tensorboard==2.21.0"],
}

setup(
    name="albert-tf",
    version="0.1.0",
    description="ALBERT (A Lite BERT) for TensorFlow 2 / Keras 3: pretraining, checkpoints, fine-tuning, serving.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10,<3.13",
    # Namespace discovery lists the data-only folders (configs/glue, configs/squad, ...) as packages, so that setuptools
    # installs their flagfiles without a "package would be ignored" warning.
    # A flat layout declared as such: pip's editable install then uses a plain .pth file (the repository root on
    # sys.path) instead of an import finder, which setuptools announces with a warning on every install.
    package_dir={"": "."},
    packages=find_namespace_packages(include=["albert_tf", "albert_tf.*"], exclude=["*.__pycache__"]),
    # The root run_*.py scripts are thin shells over albert_tf.cli and are not installed; the packaged recipes
    # (albert_tf/configs, `--recipe=NAME`) are.
    include_package_data=True,
    package_data={"albert_tf.configs": ["*.json", "*.flags", "*/*.flags"]},  # a recipe folder needs no line here
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS,
    entry_points={
        "console_scripts": [
            "albert-demo=albert_tf.demo.__main__:main",
            "run_pretraining=albert_tf.cli.run_pretraining:main",
            "run_classifier=albert_tf.cli.run_classifier:main",
            "run_squad=albert_tf.cli.run_squad:main",
            "run_race=albert_tf.cli.run_race:main",
            "run_tagging=albert_tf.cli.run_tagging:main",
            "create_pretraining_data=albert_tf.cli.create_pretraining_data:main",
            "export_savedmodel=albert_tf.cli.export_savedmodel:main",
            "albert_convert_checkpoint=albert_tf.cli.convert_checkpoint:main",
            "albert_train_vocab=albert_tf.cli.train_vocab:main",
            "albert_prepare_text=albert_tf.cli.prepare_text:main",
            "albert_make_sample_corpus=albert_tf.cli.make_sample_corpus:main",
        ],
    },
)
