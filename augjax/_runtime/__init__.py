"""Running steps: input checks, keys, the traced program (sample, then apply), dispatch to
arrays or DALI, bound ops, warm-up."""
