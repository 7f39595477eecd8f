"""Small time-to-live caches read through the injected clock, so tests move time instead of sleeping."""

from __future__ import annotations

from typing import Generic, TypeVar

from cindy_site.clock import get_clock

K = TypeVar("K")
V = TypeVar("V")

_MISSING = object()


class TTLCache(Generic[K, V]):
    """A dict whose entries expire `ttl` seconds after they were stored; `ttl=None` never expires."""

    def __init__(self, ttl: float | None) -> None:
        self.ttl = ttl
        self._data: dict[K, tuple[float, V]] = {}

    def get(self, key: K, default=None):
        hit = self._data.get(key, _MISSING)
        if hit is _MISSING:
            return default
        stored_at, value = hit
        if self.ttl is not None and get_clock().monotonic() - stored_at >= self.ttl:
            del self._data[key]
            return default
        return value

    def __contains__(self, key: K) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    def set(self, key: K, value: V) -> V:
        self._data[key] = (get_clock().monotonic(), value)
        return value

    def invalidate(self, key: K) -> None:
        self._data.pop(key, None)

    def clear(self) -> None:
        self._data.clear()
