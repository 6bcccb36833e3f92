"""The optional packages: which commands need them and the one piece of advice every command gives when
one is missing (exit 4). Any other missing module is a broken installation or a bug (exit 5), never
advice to install something."""
from __future__ import annotations

# top-level module -> (what it is, the pip package, the nnapi-convert extra that installs it)
OPTIONAL_PACKAGES = {
    "ai_edge_litert": ("LiteRT", "ai-edge-litert", "runtimes"),
    "onnxruntime": ("onnxruntime", "onnxruntime", "runtimes"),
    "PIL": ("Pillow", "pillow", "datasets"),
    "dask": ("Dask distributed", "dask[distributed]", "scale"),
    "distributed": ("Dask distributed", "dask[distributed]", "scale"),
    "model_explorer": ("Model Explorer", "ai-edge-model-explorer", "viz"),
    "model_explorer_onnx": ("Model Explorer's ONNX adapter", "model-explorer-onnx", "viz"),
}


class MissingDependency(Exception):
    """An optional package is not installed; the message is advice() for it."""

    def __init__(self, module: str, purpose: str = ""):
        self.module = module
        super().__init__(advice(module, purpose))


def optional_module(module_name: str | None) -> str | None:
    """The OPTIONAL_PACKAGES key a ModuleNotFoundError's module belongs to, or None (not optional)."""
    top = (module_name or "").split(".")[0]
    return top if top in OPTIONAL_PACKAGES else None


def advice(module: str, purpose: str = "") -> str:
    """'<package> is not installed: pip install "nnapi-convert[extra]" (or: pip install pkg); needed <purpose>'."""
    what, pip_name, extra = OPTIONAL_PACKAGES[module]
    why = f"; needed {purpose}" if purpose else ""
    return f"{what} is not installed: pip install \"nnapi-convert[{extra}]\" (or: pip install '{pip_name}'){why}"
