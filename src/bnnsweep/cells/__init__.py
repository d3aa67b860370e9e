"""The files bnnsweep writes and checks, cells first: one cell's NetCDF file written
(``writer``) and read back (``reader``), its key and content checksums (``checksum``), the
SHA-256 seal that ends every NetCDF file (``file_seal``, also prepared data and merged
files), writes that are atomic (``atomic_file``), the runs of one cell stacked
(``run_stack``) and the bitwise comparison of two result files (``compare``).

Nothing here knows sweeps, methods or data: every other part of the package may import it.
"""
