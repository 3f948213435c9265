"""Input data for ALBERT: pretraining instances and TFRecords (``albert_tf.data.pretraining``) and task processors.

Kept import-free on purpose: submodules pull in what they need (TensorFlow only where records are written/read).
"""
