"""benchmarks.checker: the checker against its references. The Gorilla hallucination audit
reproduction (gorilla_audit), the BFCL AST categories (bfcl_check), agreement with the official
BFCL checker (bfcl_agreement) and the speed of both (bfcl_speed, bfcl_reference)."""
