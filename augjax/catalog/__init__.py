"""augjax's built-in ops, one family per module. They are registered through augjax's own
``augjax.ops`` entry points, exactly as a third-party pack registers its ops."""
