"""The registry of ops and the loading of entry points (augjax's own and every pack's)."""
