"""Importers (TFLite, ONNX) into nnapi.Model, coverage, parity and the `nnapi` command line."""
