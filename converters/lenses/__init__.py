"""Coverage lenses: what a deployment path (LiteRT's NNAPI delegate, a driver's
capability profile) would run of a model, beside what `nnapi convert` runs."""
