"""``tf.train.Example`` parsed without TensorFlow: the message classes of ``tensorflow/core/example/example.proto``
and ``feature.proto`` rebuilt from their field numbers in a private protobuf descriptor pool.

Checking an input record (its features, their lengths, its ids) needs the Example message, and TensorFlow's own
class (``tensorflow.core.example.example_pb2``) imports all of TensorFlow: seconds of start-up, and a runner checks
its inputs before that (``cli.flags.checked_config``). The wire format is the same, so the bytes parse to the same
values (``tests/test_example_proto.py`` compares with TensorFlow's class). The pool is private so that TensorFlow's
own registration of ``example.proto`` in the default pool, when it is imported later, does not collide.

    example = Example.FromString(raw)
    feature = example.features.feature["input_ids"]
    feature.WhichOneof("kind"), list(feature.int64_list.value)
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

__all__ = ["DecodeError", "Example", "feature_values"]

_PACKAGE = "albert_tf.example"
_F = descriptor_pb2.FieldDescriptorProto


def _file() -> descriptor_pb2.FileDescriptorProto:
    """example.proto and feature.proto in one file: BytesList / FloatList / Int64List (field 1, repeated), Feature
    (oneof ``kind``: bytes_list 1, float_list 2, int64_list 3), Features (``map<string, Feature> feature = 1``),
    Example (``Features features = 1``)."""
    proto = descriptor_pb2.FileDescriptorProto(name="albert_tf/example.proto", package=_PACKAGE, syntax="proto3")
    for name, kind in (("BytesList", _F.TYPE_BYTES), ("FloatList", _F.TYPE_FLOAT), ("Int64List", _F.TYPE_INT64)):
        message = proto.message_type.add(name=name)
        message.field.add(name="value", number=1, type=kind, label=_F.LABEL_REPEATED)
    feature = proto.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for number, (name, kind) in enumerate(
        (("bytes_list", "BytesList"), ("float_list", "FloatList"), ("int64_list", "Int64List")), start=1
    ):
        feature.field.add(name=name, number=number, type=_F.TYPE_MESSAGE, type_name=f".{_PACKAGE}.{kind}",
                          label=_F.LABEL_OPTIONAL, oneof_index=0)
    features = proto.message_type.add(name="Features")
    entry = features.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=_F.TYPE_MESSAGE, type_name=f".{_PACKAGE}.Feature",
                    label=_F.LABEL_OPTIONAL)
    features.field.add(name="feature", number=1, type=_F.TYPE_MESSAGE, label=_F.LABEL_REPEATED,
                       type_name=f".{_PACKAGE}.Features.FeatureEntry")
    example = proto.message_type.add(name="Example")
    example.field.add(name="features", number=1, type=_F.TYPE_MESSAGE, type_name=f".{_PACKAGE}.Features",
                      label=_F.LABEL_OPTIONAL)
    return proto


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())
#: The ``tf.train.Example`` message class (``Example.FromString(raw)`` raises :class:`DecodeError` on bad bytes).
Example = message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{_PACKAGE}.Example"))


def feature_values(example, name: str) -> list | None:
    """The values of feature ``name`` of a parsed ``example`` (whichever list it holds), ``[]`` for a feature with
    no list set, None when the example has no such feature."""
    feature = example.features.feature.get(name)
    if feature is None:
        return None
    kind = feature.WhichOneof("kind")
    return list(getattr(feature, kind).value) if kind else []
