"""The sample media ship real pictures of what their descriptions say, drawn by scripts/draw_pictures.py."""

from __future__ import annotations

import importlib.util
import json

from django.conf import settings
from PIL import Image, ImageChops

SAMPLES = settings.BASE_DIR / "samples" / "media"


def _script():
    spec = importlib.util.spec_from_file_location(
        "draw_pictures", settings.BASE_DIR / "scripts" / "draw_pictures.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_sample_description_has_a_picture_the_script_draws():
    script = _script()
    described = sorted(path.stem for path in SAMPLES.glob("*.json"))
    assert described and sorted(script.PICTURES) == described
    for unique_id in described:
        meta = json.loads((SAMPLES / f"{unique_id}.json").read_text())
        with Image.open(SAMPLES / f"{unique_id}.png") as shipped:
            assert shipped.format == "PNG" and meta["mime"] == "image/png"
            assert min(shipped.size) >= 200, f"{unique_id}.png is {shipped.size}: a picture, not a dot"
            drawn = script.PICTURES[unique_id]()
            assert drawn.size == shipped.size
            difference = ImageChops.difference(drawn.convert("RGBA"), shipped.convert("RGBA")).getbbox()
            assert difference is None, f"{unique_id}.png differs from what scripts/draw_pictures.py draws"


def test_pictures_have_many_colours_not_a_flat_dot():
    for path in SAMPLES.glob("*.png"):
        with Image.open(path) as picture:
            colours = picture.convert("RGB").getcolors(maxcolors=1_000_000)
        assert len(colours) > 200, f"{path.name} has only {len(colours)} colours"
