"""router.tenancy: which tools a client may see, for every way in. The tenants file (tenants),
how a request presents its key (keys), a router seen through some namespaces only (scope), the
proxy's door (gate) and the MCP gateway's (views).
"""
from .gate import Gate
from .scope import ScopedRouter
from .tenants import Tenant, Tenants, hash_key, new_key
from .views import KeyCheck, Views

__all__ = ["Gate", "KeyCheck", "ScopedRouter", "Tenant", "Tenants", "Views", "hash_key", "new_key"]
