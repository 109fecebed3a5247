"""augjax.testing (provisional)."""
from augjax.testing._dists import write_distribution

__all__ = ["write_distribution"]
