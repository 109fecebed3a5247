"""Running steps, by concern: ``execution`` (bound ops, checks, keys, the traced program,
dispatch on arrays, warm-up), ``targets`` (masks, boxes, keypoints through a chain), ``ragged``
(images of different sizes) and ``store`` (programs, lifting decisions and compiled code kept
on disk)."""
