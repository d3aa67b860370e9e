"""What every job's process sets up: JAX configured for the compiled core (``jax_runtime``:
float64, one thread, the on-disk compilation cache) and the user cache directory
(``user_cache``).
"""
