"""Benchmarks on the real public data, grouped by what they measure: `benchmarks.retrieval`
(retrievers, the router's targets, scale, the trained encoders), `benchmarks.routing` (routing
beyond top-k), `benchmarks.checker` (the Gorilla audit, BFCL), `benchmarks.serving` (the proxy,
replicas, a cold route), all reading `benchmarks.data`. Its one command line is ``toolsift bench``
(benchmarks/cli.py); the product never imports this package."""
