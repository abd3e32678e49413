"""benchmarks.retrieval: how well and how fast the router finds tools. The retriever comparison
(comparison, over the methods of methods), scale against catalog size (scale), the encoders side by
side (encoders), the router's targets and the grid behind its defaults (targets, targets_speed,
targets_run), and the trained encoders: `toolsift tune` on APIBench (tuning) and the shipped general
encoder (general_training, general_encoder, general_fusion)."""
