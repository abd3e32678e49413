"""Benchmarks on the real public data: retriever comparison, scale, router targets, tuning, the
Gorilla audit reproduction, the BFCL checker and the proxy overhead. Its one command line is
``toolsift bench`` (benchmarks/cli.py); the product never imports this package."""
