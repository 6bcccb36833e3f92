"""The Model Explorer extension for `.nnapi` files: `model-explorer --extensions
converters.viz.model_explorer_adapter` (Model Explorer imports the extension's `main` module)."""
