"""What outlives a process: traced programs on disk (files checked whole, identities, module
sources), stored lifting decisions, JAX's compilation cache, and the lowering of a stored program
without LAPACK's set-up where it calls none."""
