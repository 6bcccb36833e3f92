"""Model Explorer (Google's `ai-edge-model-explorer`) integration: node-data overlays of coverage and
parity over the source graph (`overlays.py`), an adapter that draws `.nnapi` models
(`nnapi_graph.py`, registered as the extension `converters.viz.model_explorer_adapter`) and
`nnapi view` (`view.py`). The overlays need nothing but the standard library; the adapter and
`nnapi view` need the `viz` extra."""

# the extension module name Model Explorer imports (it loads `<name>.main`)
ADAPTER_EXTENSION = "converters.viz.model_explorer_adapter"
ADAPTER_ID = "nnapi_adapter"
