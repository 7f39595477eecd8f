"""What a Lottie animation would cost to render, measured from its JSON before any renderer sees it.

A TGS sticker is at most 1 MiB packed and 8 MiB unpacked (`media_catalog.previews`), but a few hundred
bytes can still describe millions of layers: a precomposition (an asset with `layers`) is drawn once
for every layer of type 0 whose `refId` names it, so ten precompositions of ten layers, each layer
referring to the next, expand to 10^10 layers. rlottie builds all of them and takes gigabytes.

`lottie_budget` parses the JSON and counts what the renderer would build:

1. the composition's frames (`op - ip`), frame rate (`fr`) and size (`w`, `h`);
2. the layers it expands to, following precomposition references multiplicatively (each asset counted
   once and remembered, so counting is linear in the file), stopping as soon as the count passes the
   limit; a reference cycle or nesting deeper than `MAX_NESTING` is refused;
3. the shapes those layers draw, a repeater (`ty: rp`, which the renderer builds once per copy)
   multiplying what comes before it in its group: one repeater of a million copies is as bad.

`lottie_check` refuses an animation past the limits (`LottieLimits`, from the `CINDY_TGS_MAX_*`
settings) with `AnimationTooComplex`, whose message says which limit and by how much.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from media_catalog.previews import PreviewError, PreviewTooLarge

MAX_NESTING = 32  # precompositions inside precompositions; real stickers use two or three


class AnimationTooComplex(PreviewTooLarge):
    """The animation would cost more to render than any sticker should: it is not rendered."""


@dataclass(frozen=True)
class LottieLimits:
    layers: int = 2000
    shapes: int = 50_000
    frames: int = 600
    frame_rate: float = 120
    side: int = 2048

    @classmethod
    def from_settings(cls) -> LottieLimits:
        from django.conf import settings

        return cls(
            layers=settings.CINDY_TGS_MAX_LAYERS,
            shapes=settings.CINDY_TGS_MAX_SHAPES,
            frames=settings.CINDY_TGS_MAX_FRAMES,
            frame_rate=settings.CINDY_TGS_MAX_FRAME_RATE,
            side=settings.CINDY_TGS_MAX_SIDE,
        )


@dataclass(frozen=True)
class LottieBudget:
    layers: int  # capped: past the limit counting stops at limit + 1
    shapes: int  # likewise
    frames: float
    frame_rate: float
    width: float
    height: float


def _number(animation: dict, key: str) -> float:
    value = animation.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PreviewError(f"not a Lottie animation: {key!r} is {value!r}, not a number")
    return float(value)


def _layers(value: Any, where: str) -> list[dict]:
    if not isinstance(value, list):
        raise PreviewError(f"not a Lottie animation: {where} has no list of layers")
    return [layer for layer in value if isinstance(layer, dict)]


def _copies(repeater: dict) -> int:
    """The most copies a repeater (`ty: rp`) makes, over its keyframes; 1 when unreadable."""
    prop = repeater.get("c")
    values = []
    if isinstance(prop, dict):
        frames = prop.get("k")
        for value in frames if isinstance(frames, list) else [frames]:
            if isinstance(value, dict):
                value = value.get("s")
            if isinstance(value, list):
                values.extend(value[:1])
            else:
                values.append(value)
    numbers = [
        v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    ]
    return max(1, int(min(max(numbers, default=1), 1e12)))


class _Counter:
    """Expanded layer and shape counts, each precomposition computed once, saturating past the caps.

    Shapes are a layer's drawn items (`shapes`, groups' `it` counted inside them); a repeater
    (`ty: rp`) multiplies everything before it in its group by its copies, as the renderer builds them.
    """

    def __init__(self, assets: Any, *, max_layers: int, max_shapes: int) -> None:
        self.max_layers, self.max_shapes = max_layers, max_shapes
        self.precomps: dict[str, list[dict]] = {}
        for asset in assets if isinstance(assets, list) else []:
            if isinstance(asset, dict) and isinstance(asset.get("layers"), list):
                self.precomps[str(asset.get("id"))] = _layers(asset["layers"], f"asset {asset.get('id')!r}")
        self.known: dict[str, tuple[int, int]] = {}
        self.open: list[str] = []  # the chain of precompositions being counted, for cycles and depth

    def count(self, layers: list[dict]) -> tuple[int, int]:
        total, shapes = 0, 0
        for layer in layers:
            total += 1
            shapes += self.shapes(layer.get("shapes"), depth=0)
            ref = layer.get("refId")
            if layer.get("ty") == 0 and ref is not None and str(ref) in self.precomps:
                more, more_shapes = self.precomp(str(ref))
                total, shapes = total + more, shapes + more_shapes
            if total > self.max_layers or shapes > self.max_shapes:
                break
        return min(total, self.max_layers + 1), min(shapes, self.max_shapes + 1)

    def shapes(self, items: Any, *, depth: int) -> int:
        if not isinstance(items, list):
            return 0
        if depth >= MAX_NESTING:
            raise AnimationTooComplex(f"shape groups are nested more than {MAX_NESTING} deep")
        total = 0
        for item in items:
            if not isinstance(item, dict):
                continue
            kind = item.get("ty")
            if kind == "rp":
                total *= _copies(item)
            else:
                total += 1 + (self.shapes(item.get("it"), depth=depth + 1) if kind == "gr" else 0)
            if total > self.max_shapes:
                return self.max_shapes + 1
        return total

    def precomp(self, ref: str) -> tuple[int, int]:
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


def lottie_budget(raw: bytes, *, max_layers: int, max_shapes: int = 10**9) -> LottieBudget:
    """Parse Lottie JSON and measure it (layers and shapes counted up to their limit + 1)."""
    try:
        animation = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise PreviewError(f"not a TGS file: {exc}") from None
    except RecursionError:
        raise AnimationTooComplex("its JSON is nested too deeply to read") from None
    if not isinstance(animation, dict):
        raise PreviewError("not a Lottie animation: the JSON is not an object")
    counter = _Counter(animation.get("assets"), max_layers=max_layers, max_shapes=max_shapes)
    layers, shapes = counter.count(_layers(animation.get("layers"), "the composition"))
    return LottieBudget(
        layers=layers,
        shapes=shapes,
        frames=_number(animation, "op") - _number(animation, "ip"),
        frame_rate=_number(animation, "fr"),
        width=_number(animation, "w"),
        height=_number(animation, "h"),
    )


def lottie_check(raw: bytes, limits: LottieLimits | None = None) -> LottieBudget:
    """The animation's budget, or `AnimationTooComplex` naming the first limit it passes."""
    limits = limits or LottieLimits.from_settings()
    budget = lottie_budget(raw, max_layers=limits.layers, max_shapes=limits.shapes)
    if budget.layers > limits.layers:
        raise AnimationTooComplex(
            f"it expands to more than {limits.layers} layers through its precompositions "
            "(CINDY_TGS_MAX_LAYERS)"
        )
    if budget.shapes > limits.shapes:
        raise AnimationTooComplex(
            f"it draws more than {limits.shapes} shapes through its repeaters and precompositions "
            "(CINDY_TGS_MAX_SHAPES)"
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
