"""Benchmarks: retriever comparison, scale, hallucination-audit reproduction."""
