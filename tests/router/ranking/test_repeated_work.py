"""Work a route does once per router, not once per request (issue 39: the latency of real requests)."""
from __future__ import annotations

from apidb.record import ApiRecord

PARTY = ("I'm hosting a cocktail party and I need some cocktail recipes. Can you suggest some cocktail "
         "recipes that contain vodka as one of the ingredients? Also, provide me with a cake recipe "
         "from The Birthday Cake DB.")


def test_explaining_a_tool_again_renders_nothing_again(stb_router, monkeypatch):
    """The matched fields of a tool chosen before come from the router's memo: no content hash
    (its canonical JSON) and no field tokenizing for it on a later request."""
    first = stb_router.select(PARTY, k=5)
    assert any(s.matched_fields for s in first)
    hashed = []
    real = ApiRecord.content_hash

    def counting(self):
        hashed.append(self.id)
        return real.fget(self)

    monkeypatch.setattr(ApiRecord, "content_hash", property(counting))
    again = stb_router.select(PARTY, k=5)
    assert hashed == []
    assert [(s.record.id, s.matched_fields, s.matched_terms) for s in again] == \
        [(s.record.id, s.matched_fields, s.matched_terms) for s in first]
