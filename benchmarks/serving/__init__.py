"""benchmarks.serving: toolsift as a running service. The proxy's overhead and token saving
(proxy_overhead), a soak of distinct tool lists (proxy_soak), replicas over one catalog on SQLite
and PostgreSQL (replicas), and what one fresh `toolsift route` process costs (cold_route)."""
