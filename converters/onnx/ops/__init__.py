"""ONNX op converters, one module per op family; importing this package registers them all."""
import importlib
import pkgutil

for _info in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_info.name}")
