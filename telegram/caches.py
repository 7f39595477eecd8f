"""Small per-agent caches: time-to-live entries read through the injected clock (so tests move time
instead of sleeping), and a size-bounded least-recently-used map."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

from cindy_site.clock import get_clock

K = TypeVar("K")
V = TypeVar("V")

_MISSING = object()


class TTLCache(Generic[K, V]):
    """A dict whose entries expire `ttl` seconds after they were stored; `ttl=None` never expires."""

    __slots__ = ("_data", "ttl")  # one per agent and kind: no instance dict

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


class LRUCache(Mapping[K, V]):
    """A map of at most `size` entries: storing one more drops the entry read or stored longest ago."""

    __slots__ = ("_data", "size")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"LRUCache size must be at least 1, not {size}")
        self.size = size
        self._data: OrderedDict[K, V] = OrderedDict()

    def __getitem__(self, key: K) -> V:
        value = self._data[key]
        self._data.move_to_end(key)
        return value

    def get(self, key: K, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __setitem__(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.size:
            self._data.popitem(last=False)

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        self._data.clear()
