"""The proxy's door: who a request is, and which catalog namespaces it is routed with (issue 17).

One proxy key (``--api-key``), a tenants file (``--tenants``), or an open door. The key is read
by the rules of router.tenancy.keys. With a tenants file (router.tenancy.tenants), the key names a
tenant and the tenant's namespaces are the only catalog the request is routed, injected, pinned
and checked with: the request router gets a `ScopedRouter` over them.
``X-Toolsift-Namespaces: a,b`` narrows one request further, never wider: a namespace the key may
not see is refused (403) with the same words whether or not it exists.
"""
from __future__ import annotations

import hmac
import threading
from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import NamespaceRefused, TenancyError
from ..ranking.watch import LiveRouter
from .keys import NAMESPACES_HEADER, take_key
from .scope import ScopedRouter
from .tenants import Tenant, Tenants

# A request router of the proxy (router.middleware.request.RequestRouter): what it routes with is
# ``.router``, and ``.scoped(router)`` is the same settings over another view of the catalog.
RequestRouter = Any


@dataclass
class _View:
    rr: RequestRouter       # the request router it was made from
    catalog: Any            # that request router's catalog router, when it was made
    scoped: RequestRouter


class Gate:
    """The proxy's door: one key (``--api-key``) or a tenants file (``--tenants``), or neither."""

    def __init__(self, api_key: str | None = None, tenants: Tenants | None = None) -> None:
        if api_key and tenants is not None:
            raise TenancyError("give either one proxy key or a tenants file, not both (a key that sees every "
                                  "namespace is a tenant with namespaces = [\"*\"])")
        self.api_key, self.tenants = api_key, tenants
        self._views: dict[tuple[str, frozenset[str] | None], _View] = {}
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        """Whether a request needs a key."""
        return bool(self.api_key) or self.tenants is not None

    def admit(self, received: Mapping[str, str], upstream: dict[str, str]) -> tuple[bool, Tenant | None]:
        """(admitted, tenant): whether the request's key opens the door, and whose it is."""
        if not self.closed:
            return True, None
        given = take_key(received, upstream)
        if self.tenants is not None:
            tenant = self.tenants.identify(given)
            return tenant is not None, tenant
        ok = given is not None and hmac.compare_digest(given.encode("utf-8", "surrogatepass"),
                                                       self.api_key.encode("utf-8", "surrogatepass"))
        return ok, None

    def request_router(self, rr: RequestRouter, tenant: Tenant | None, narrow: str | None) -> RequestRouter:
        """``rr`` over the catalog namespaces this request may see. NamespaceRefused when
        ``narrow`` (the ``X-Toolsift-Namespaces`` value) names one it may not."""
        wanted = _narrowed(narrow, tenant)
        spaces = wanted if tenant is None or tenant.namespaces is None else \
            (tenant.namespaces if wanted is None else wanted & tenant.namespaces)
        if spaces is None or rr.router is None:  # every namespace, or no catalog to restrict
            return rr
        key = (tenant.name if tenant else "", wanted)
        with self._lock:
            view = self._views.get(key)
            catalog = _current(rr.router)
            if view is None or view.rr is not rr or view.catalog is not catalog:  # new catalog: new view
                if len(self._views) > 256:  # narrowed combinations are client-chosen: keep the map bounded
                    self._views.clear()
                view = _View(rr, catalog, rr.scoped(ScopedRouter(rr.router, spaces)))
                self._views[key] = view
            return view.scoped


def _current(router: Any) -> Any:
    """What a tenant's view was made from. A live router (router.ranking.watch) stays one object while it
    swaps in a new catalog router on every committed change; a view made before the swap would
    keep the old list of visible records and namespaces, so it is keyed by the current one."""
    return router.router if isinstance(router, LiveRouter) else router


def _narrowed(value: str | None, tenant: Tenant | None) -> frozenset[str] | None:
    if value is None:
        return None
    names = frozenset(n.strip() for n in value.split(",") if n.strip())
    refused = sorted(n for n in names if tenant is not None and not tenant.sees(n))
    if refused:
        # the same words for a namespace that exists and one that does not: no existence oracle
        raise NamespaceRefused(f"namespace {refused[0]!r} is not one this key may use ({NAMESPACES_HEADER})")
    return names
