"""The adapter class Model Explorer registers: it reads a `.nnapi` file (nnapi/serialize.py) and
draws every subgraph (converters/viz/nnapi_graph.py). Defined here, in the module Model Explorer
imports, because it registers the classes defined in that module."""
from __future__ import annotations

from typing import Dict

import model_explorer

from converters.viz import ADAPTER_ID
from converters.viz.nnapi_graph import build_graphs


class NnapiAdapter(model_explorer.Adapter):
    metadata = model_explorer.AdapterMetadata(
        id=ADAPTER_ID, name="NNAPI adapter",
        description="Android NNAPI models saved by nnapi-convert (.nnapi): operations with their parameters, "
                    "operands with type, shape and quantization, every subgraph",
        fileExts=["nnapi"])

    def __init__(self):
        super().__init__()

    def convert(self, model_path: str, settings: Dict) -> model_explorer.ModelExplorerGraphs:
        from pathlib import Path

        import nnapi
        return {"graphs": build_graphs(nnapi.load(model_path), title=Path(model_path).name)}
