"""Every registered converter of both importers, driven with degenerate and unknown shapes (rank 0 and 1,
zero extents, unknown extents, unknown rank), runtime and constant operands, float and int32: each gives a
clean verdict -- Supported, or Unsupported with a reason code and a sentence -- never an exception and never
the driver's "internal error" safety net (converters/convert.py run_converter).

The node structures are valid ones: for ONNX the input/output counts the op's schema allows; for TFLite
(and the contrib ONNX ops without a schema here) the counts for which an ordinary 4-D float node converts or
is refused cleanly. Attributes are left out, so every default and every missing required attribute is hit.
"""
import itertools

import numpy as np
import onnx
import pytest

import converters.onnx  # noqa: F401  (registers the ONNX converters)
import converters.tflite  # noqa: F401  (registers the TFLite converters)
from converters.convert import ConversionError, check_graph, convert_source
from converters.onnx.common import MS_DOMAIN, MS_DOMAIN_VERSIONS, OPSET_MAX
from converters.registry import REGISTRY, Reason
from converters.source_graph import SourceGraph, SourceModel, SourceNode, SourceTensor

SHAPES = {"rank0": (), "rank1": (3,), "zero_extent": (2, 0, 3), "unknown_extents": (-1, 4, -1, 3),
          "unknown_rank": None, "unknown_output_rank": ((1, 4, 4, 3), None)}
ORDINARY = (1, 4, 4, 3)
REASONS = {r.value for r in Reason}
# the constant inputs after the first: an int32 [1] (axes, k, shapes) or a float [3, 3] (weights)
CONSTS = {"int": np.ones(1, np.int32), "weights": np.full((3, 3), 0.5, np.float32)}
# attributes that select another path of a converter than its defaults do
ATTRS = {("onnx", "Transpose"): {"perm": [0, 2, 1]}, ("onnx", "Squeeze"): {"axes": [0]},
         ("onnx", "Unsqueeze"): {"axes": [0]}, ("onnx", "Concat"): {"axis": 1}, ("onnx", "Gather"): {"axis": 1},
         ("onnx", "Flatten"): {"axis": 1}, ("onnx", "Softmax"): {"axis": 1}, ("onnx", "Split"): {"axis": 1},
         ("tflite", "CONCATENATION"): {"axis": 1}, ("tflite", "SQUEEZE"): {"squeeze_dims": [0]}}


def _source(fmt, op, version, domain, shape, n_in, n_out, const_rest, dtype, attrs=None) -> SourceModel:
    tensors = []
    shape, out_shape = shape if isinstance(shape, tuple) and len(shape) == 2 and isinstance(shape[0], tuple) \
        else (shape, shape)

    def tensor(name, shp, data=None, dt=dtype):
        sig = None
        if fmt == "tflite" and shp is not None and any(d < 0 for d in shp):  # TFLite: placeholder 1 + signature
            sig, shp = tuple(shp), tuple(1 if d < 0 else d for d in shp)
        tensors.append(SourceTensor(len(tensors), name, shp, np.dtype(dt), None, data, shape_signature=sig))
        return len(tensors) - 1

    ins = [tensor("x", shape)]
    for k in range(1, n_in):
        if const_rest:
            value = CONSTS[const_rest]
            ins.append(tensor(f"c{k}", value.shape, value, value.dtype))
        else:
            ins.append(tensor(f"x{k}", shape))
    outs = [tensor(f"y{k}", out_shape) for k in range(n_out)]
    node = SourceNode(0, op, ins, outs, dict(attrs or {}), version, domain, "n0")
    graph = SourceGraph("g", tensors, [node], [i for i in ins if tensors[i].data is None], outs)
    return SourceModel(fmt, [graph])


def _verdict(source):
    """The node's NodeResult (and, when supported, the conversion's clean outcome)."""
    (r,) = check_graph(source, 8)
    if r.supported:
        try:
            convert_source(source, 8)
        except ConversionError:
            pass  # a clean "invalid model" error naming the inconsistency
    return r


def _clean(r) -> bool:
    """Supported, or refused with a code and the converter's own sentence (not the driver's safety nets for
    an exception or for an operation NNAPI rejects as built)."""
    return r.supported or (r.reason_code in REASONS and bool(r.reason) and "internal error" not in r.reason
                           and "the converter built an invalid operation" not in r.reason)


def _structures(fmt, op, conv, version):
    """(inputs, outputs) counts of well-formed nodes of this op at this version."""
    domain = MS_DOMAIN if (conv.min_version, conv.max_version) == MS_DOMAIN_VERSIONS and fmt == "onnx" else ""
    if fmt == "onnx" and not domain:
        try:
            schema = onnx.defs.get_schema(op, version, "")
        except onnx.defs.SchemaError:
            schema = None
        if schema is not None:
            ins = range(schema.min_input, min(schema.max_input, schema.min_input + 3) + 1)
            outs = sorted({schema.min_output, min(schema.max_output, 2)})
            return domain, [(i, o) for i in ins for o in outs]
    probe = []
    for n_in, n_out, const_rest in itertools.product(range(1, 6), (1, 2), (False, "int")):
        if n_in == 1 and const_rest:
            continue
        r = _verdict(_source(fmt, op, version, domain, ORDINARY, n_in, n_out, const_rest, np.float32))
        if _clean(r):
            probe.append((n_in, n_out))
    return domain, sorted(set(probe))


CONVERTERS = sorted(REGISTRY.items())


@pytest.mark.parametrize("fmt", ["tflite", "onnx"])
def test_every_converter_refuses_degenerate_shapes_cleanly(fmt):
    bad = {}
    for (f, op), conv in CONVERTERS:
        if f != fmt:
            continue
        attr_sets = [{}] + ([ATTRS[(fmt, op)]] if (fmt, op) in ATTRS else [])
        # the oldest and newest versions it accepts (ONNX opsets change inputs into attributes and back)
        newest = min(conv.max_version, OPSET_MAX if fmt == "onnx" else conv.min_version)
        for version in sorted({conv.min_version, newest}):
            domain, structures = _structures(fmt, op, conv, version)
            for (sname, shape), (n_in, n_out), const_rest, dtype, attrs in itertools.product(
                    SHAPES.items(), structures, (False, *CONSTS), (np.float32, np.int32), attr_sets):
                if (n_in == 1 and const_rest) or (dtype is np.int32 and const_rest == "weights"):
                    continue
                case = (f"{op} v{version} {sname} inputs={n_in}{' const ' + const_rest if const_rest else ''} "
                        f"outputs={n_out} {dtype.__name__} {attrs}")
                try:
                    r = _verdict(_source(fmt, op, version, domain, shape, n_in, n_out, const_rest, dtype, attrs))
                except Exception as e:  # noqa: BLE001
                    bad.setdefault(op, f"{case}: raised {type(e).__name__}: {e}")
                    continue
                if not _clean(r):
                    bad.setdefault(op, f"{case}: [{r.reason_code}] {r.reason}")
    assert not bad, f"{len(bad)} {fmt} converters fail on degenerate shapes:\n" + "\n".join(bad.values())


def test_the_sweep_covers_both_registries():
    counts = {f: sum(1 for (g, _) in REGISTRY if g == f) for f in ("tflite", "onnx")}
    assert counts["tflite"] > 100 and counts["onnx"] > 90
