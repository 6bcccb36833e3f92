"""Author small ONNX models in memory with onnx.helper, for tests and sample scripts.

    data = make_model([helper.make_node("Relu", ["x"], ["y"])], inputs=[("x", np.float32, [1, 2, 3, 5])],
                      outputs=["y"])

Output types and shapes come from ONNX shape inference, so tests state only the inputs.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

MS_DOMAIN = "com.microsoft"


def make_model(nodes: Sequence, inputs: Sequence, outputs: Sequence, initializers: Optional[dict] = None,
               opset: int = 17, ms_opset: Optional[int] = None, name: str = "test") -> bytes:
    """Bytes of an ONNX model. inputs: (name, numpy dtype, shape); outputs: names (types inferred) or
    (name, dtype, shape);
    initializers: name -> numpy array; ms_opset imports com.microsoft (QLinearAdd, ...)."""
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(dt)), shape)
           for n, dt, shape in inputs]
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in (initializers or {}).items()]
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(MS_DOMAIN, ms_opset)] if ms_opset else [])
    model = helper.make_model(helper.make_graph(list(nodes), name, ins, [], inits), opset_imports=opsets)
    model.ir_version = 8
    known = {vi.name: vi for vi in onnx.shape_inference.infer_shapes(model).graph.value_info}
    for out in outputs:
        if isinstance(out, tuple):  # (name, dtype, shape): ops shape inference does not know (com.microsoft)
            n, dt, shape = out
            model.graph.output.append(helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(dt)),
                                                                    shape))
        elif out in known:
            model.graph.output.append(known[out])
        else:
            raise ValueError(f"shape inference found no type for output {out!r}; give (name, dtype, shape)")
    return model.SerializeToString()
