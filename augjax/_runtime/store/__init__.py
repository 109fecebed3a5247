"""What outlives a process: traced programs on disk (files checked whole, identities, module
sources), stored lifting decisions and JAX's compilation cache."""
