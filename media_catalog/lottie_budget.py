"""What a Lottie animation would cost to render, measured from its JSON before any renderer sees it.

A TGS sticker is at most 1 MiB packed and 8 MiB unpacked (`media_catalog.previews`), but a few hundred
bytes can still describe millions of layers: a precomposition (an asset with `layers`) is drawn once
for every layer of type 0 whose `refId` names it, so ten precompositions of ten layers, each layer
referring to the next, expand to 10^10 layers. rlottie builds all of them and takes gigabytes.

`lottie_budget` parses the JSON and counts what the renderer would build:

1. the composition's frames (`op - ip`), frame rate (`fr`) and size (`w`, `h`);
2. the layers it expands to, following precomposition references multiplicatively (each asset counted
   once and remembered, so counting is linear in the file), stopping as soon as the count passes the
   limit; a reference cycle or nesting deeper than `MAX_NESTING` is refused.

`lottie_check` refuses an animation past the limits (`LottieLimits`, from the `CINDY_TGS_MAX_*`
settings) with `AnimationTooComplex`, whose message says which limit and by how much.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from media_catalog.previews import PreviewError, PreviewTooLarge

MAX_NESTING = 32  # precompositions inside precompositions; real stickers use two or three


class AnimationTooComplex(PreviewTooLarge):
    """The animation would cost more to render than any sticker should: it is not rendered."""


@dataclass(frozen=True)
class LottieLimits:
    layers: int = 2000
    frames: int = 600
    frame_rate: float = 120
    side: int = 2048

    @classmethod
    def from_settings(cls) -> LottieLimits:
        from django.conf import settings

        return cls(
            layers=settings.CINDY_TGS_MAX_LAYERS,
            frames=settings.CINDY_TGS_MAX_FRAMES,
            frame_rate=settings.CINDY_TGS_MAX_FRAME_RATE,
            side=settings.CINDY_TGS_MAX_SIDE,
        )


@dataclass(frozen=True)
class LottieBudget:
    layers: int  # capped: past the limit counting stops at limit + 1
    frames: float
    frame_rate: float
    width: float
    height: float


def _number(animation: dict, key: str) -> float:
    value = animation.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PreviewError(f"not a Lottie animation: {key!r} is {value!r}, not a number")
    return float(value)


def _layers(value: Any, where: str) -> list[dict]:
    if not isinstance(value, list):
        raise PreviewError(f"not a Lottie animation: {where} has no list of layers")
    return [layer for layer in value if isinstance(layer, dict)]


class _Counter:
    """Expanded layer counts of precompositions, each computed once, saturating at `cap`."""

    def __init__(self, assets: Any, cap: int) -> None:
        self.cap = cap
        self.precomps: dict[str, list[dict]] = {}
        for asset in assets if isinstance(assets, list) else []:
            if isinstance(asset, dict) and isinstance(asset.get("layers"), list):
                self.precomps[str(asset.get("id"))] = _layers(asset["layers"], f"asset {asset.get('id')!r}")
        self.known: dict[str, int] = {}
        self.open: list[str] = []  # the chain of precompositions being counted, for cycles and depth

    def count(self, layers: list[dict]) -> int:
        total = 0
        for layer in layers:
            total += 1
            ref = layer.get("refId")
            if layer.get("ty") == 0 and ref is not None and str(ref) in self.precomps:
                total += self.precomp(str(ref))
            if total > self.cap:
                return self.cap + 1
        return total

    def precomp(self, ref: str) -> int:
        if ref in self.known:
            return self.known[ref]
        if ref in self.open:
            chain = " -> ".join([*self.open[self.open.index(ref) :], ref])
            raise AnimationTooComplex(f"precompositions refer to each other in a cycle ({chain})")
        if len(self.open) >= MAX_NESTING:
            raise AnimationTooComplex(f"precompositions are nested more than {MAX_NESTING} deep")
        self.open.append(ref)
        try:
            self.known[ref] = self.count(self.precomps[ref])
        finally:
            self.open.pop()
        return self.known[ref]


def lottie_budget(raw: bytes, *, max_layers: int) -> LottieBudget:
    """Parse Lottie JSON and measure it (layers counted up to `max_layers` + 1)."""
    try:
        animation = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise PreviewError(f"not a TGS file: {exc}") from None
    except RecursionError:
        raise AnimationTooComplex("its JSON is nested too deeply to read") from None
    if not isinstance(animation, dict):
        raise PreviewError("not a Lottie animation: the JSON is not an object")
    counter = _Counter(animation.get("assets"), max_layers)
    return LottieBudget(
        layers=counter.count(_layers(animation.get("layers"), "the composition")),
        frames=_number(animation, "op") - _number(animation, "ip"),
        frame_rate=_number(animation, "fr"),
        width=_number(animation, "w"),
        height=_number(animation, "h"),
    )


def lottie_check(raw: bytes, limits: LottieLimits | None = None) -> LottieBudget:
    """The animation's budget, or `AnimationTooComplex` naming the first limit it passes."""
    limits = limits or LottieLimits.from_settings()
    budget = lottie_budget(raw, max_layers=limits.layers)
    if budget.layers > limits.layers:
        raise AnimationTooComplex(
            f"it expands to more than {limits.layers} layers through its precompositions "
            "(CINDY_TGS_MAX_LAYERS)"
        )
    if budget.frames <= 0 or budget.frame_rate <= 0 or budget.width <= 0 or budget.height <= 0:
        raise PreviewError(
            f"not a Lottie animation: {budget.frames:g} frames at {budget.frame_rate:g} a second, "
            f"{budget.width:g}x{budget.height:g}"
        )
    if budget.frames > limits.frames:
        raise AnimationTooComplex(
            f"it has {budget.frames:g} frames (op - ip); at most {limits.frames} (CINDY_TGS_MAX_FRAMES)"
        )
    if budget.frame_rate > limits.frame_rate:
        raise AnimationTooComplex(
            f"its frame rate is {budget.frame_rate:g}; at most {limits.frame_rate:g} (CINDY_TGS_MAX_FRAME_RATE)"
        )
    if budget.width > limits.side or budget.height > limits.side:
        raise AnimationTooComplex(
            f"it is {budget.width:g}x{budget.height:g}; at most {limits.side} a side (CINDY_TGS_MAX_SIDE)"
        )
    return budget
