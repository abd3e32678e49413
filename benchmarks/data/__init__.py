"""benchmarks.data: the real public data the benchmarks read. Where it lives (shared_data), its
tool catalogs as records (corpora), the labelled query sets (datasets), a user's own set (custom)
and the fixed two-way split of every set's queries (halves)."""
