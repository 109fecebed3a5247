"""Images of different sizes: a chain's ragged prefix (crops, resize), the list's windowed
reads, and a flip folded into them."""
