"""The `image` task's validation, its reply-schema field and its price."""

from __future__ import annotations

from decimal import Decimal

import pytest

from llm.image_task import CAPTION_LIMIT, MAX_IMAGE_REFERENCES
from llm.request import Usage
from llm.task_schema import task_list_schema
from llm.tasks import TaskError, validate_task, validate_tasks
from llm.usage import estimate_cost


def test_an_image_task_keeps_its_description_caption_references_and_reply():
    notes: list[str] = []
    (task,) = validate_task(
        {
            "kind": "image",
            "prompt": " A gull ",
            "text": "Look!",
            "references": ["a", "a", "b"],
            "reply_to": 7,
        },
        notes,
    )
    assert task.params == {
        "description": "A gull",
        "caption": "Look!",
        "references": ["a", "b"],
        "reply_to": 7,
    }
    assert notes == []


def test_an_image_task_without_a_description_is_an_error_that_says_what_to_give():
    tasks, errors, _ = validate_tasks(
        [{"kind": "image", "text": "caption only"}, {"kind": "send", "text": "hi"}]
    )
    assert [t.kind for t in tasks] == ["send"]
    assert errors == ['task 1 (image): "description" is missing or empty: describe the picture to make']


def test_references_and_captions_beyond_their_limits_are_cut_with_a_note():
    notes: list[str] = []
    ids = [f"id{n}" for n in range(MAX_IMAGE_REFERENCES + 2)]
    (task,) = validate_task(
        {"kind": "image", "description": "x", "text": "c" * 2000, "references": ids}, notes
    )
    assert task.params["references"] == ids[:MAX_IMAGE_REFERENCES]
    assert len(task.params["caption"]) == CAPTION_LIMIT
    assert len(notes) == 2 and "only the first 3 are shown" in notes[1]


def test_references_that_are_not_a_list_of_ids_are_an_error():
    with pytest.raises(TaskError, match='"references" is 5: give a list of unique ids'):
        validate_task({"kind": "image", "description": "x", "references": 5})


def test_the_reply_schema_has_references_only_when_image_is_taught():
    assert "references" in task_list_schema(["send", "image"])["items"]["properties"]
    assert "references" not in task_list_schema(["send", "send_media"])["items"]["properties"]


@pytest.mark.django_db
def test_image_output_tokens_are_billed_at_the_image_output_price_and_text_output_at_the_output_price():
    usage = Usage(input_tokens=1000, output_tokens=1290 + 100, image_output_tokens=1290)
    # 1000 × 0.30 + 100 × 2.50 + 1290 × 30.00, per million (the seeded gemini-2.5-flash-image price)
    assert estimate_cost("gemini", "gemini-2.5-flash-image", usage) == Decimal("0.039250")
    # A model without an image output price bills every output token at its output price.
    assert estimate_cost("gemini", "gemini-2.5-flash", usage) == Decimal("0.003775")
