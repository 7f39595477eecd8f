"""`file:media.json`: the agent's media library as the original's media.json, for retrieve tasks.

The original's `Task-Photo` prompt tells the model to retrieve it: a JSON list, by unique id, of
`{"media_id", "media_type", "description"}` (no `description` when the medium has none). The same
library is also listed in the prompt (`# Media Library`).
"""

from __future__ import annotations

import json

from llm.file_sources import register_file_source

MEDIA_FILE = "media.json"


def media_json(agent_id: int, name: str) -> str:
    """The library: the item's curated description, else the catalog's description of the medium."""
    from media_catalog.models import LibraryItem, MediaDescription

    items = list(LibraryItem.objects.filter(agent_id=agent_id).order_by("unique_id"))
    catalog = dict(
        MediaDescription.objects.filter(unique_id__in=[i.unique_id for i in items]).values_list(
            "unique_id", "description"
        )
    )
    listed = []
    for item in items:
        entry = {"media_id": item.unique_id, "media_type": item.kind}
        description = item.description.strip() or catalog.get(item.unique_id)
        if description:
            entry["description"] = description
        listed.append(entry)
    return json.dumps(listed, indent=2, ensure_ascii=False)


register_file_source(MEDIA_FILE, media_json)
