"""benchmarks.routing: routing beyond top-k (`toolsift bench routing`). Complete sets for
multi-tool requests, adaptive k, abstention and exact names (features, over the extra sets of
sets), what the new steps cost (costs), and the report (report); common holds what they share."""
