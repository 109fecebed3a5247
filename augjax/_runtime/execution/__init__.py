"""Running steps: bound ops, input checks, keys, the traced program (sample, then apply),
fusion, partial batches, dispatch on arrays, ahead-of-time compiles and warm-up."""
