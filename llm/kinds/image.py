"""`image`: the agent makes a picture from a description and sends it as a photo.

Its fields and their validation are `llm.image_task`'s; params: description, caption, references,
reply_to|None. The LLM asks; this policy decides:

- A turn that read text from outside the chat (a retrieved web page, another chat's intention) may not
  make a picture, unless an operator allows it (CINDY_IMAGES_AFTER_UNTRUSTED): text anyone wrote must
  not spend the agent's pictures or choose what it shows.
- An agent makes at most CINDY_IMAGES_PER_DAY pictures a day (midnight in TIME_ZONE): its image calls
  of the day, and the image tasks this reply already had allowed, count.
- The pictures it names as references must be in its own media library.

A refusal makes no image call; `llm.policy.apply_policy` records it (a `policy_refused` event) and the
turn's log lists it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings

from cindy_site.parameters import parameter
from llm.image_task import image_params
from llm.kinds.base import INTEGER, STRING, STRINGS, Policy, Task, TaskKind
from llm.kinds.registry import register

if TYPE_CHECKING:
    from llm.policy_inputs import TurnInputs


def image_refusal(task: Task, *, inputs: TurnInputs, earlier: int = 0) -> str:
    """Why this image task may not run in this turn, or "" when it may."""
    from llm.images import pictures_made_today
    from media_catalog.models import LibraryItem

    conversation = inputs.conversation
    agent = conversation.agent
    if inputs.outside and not settings.CINDY_IMAGES_AFTER_UNTRUSTED:
        return (
            f"image is not allowed in a turn that read text from outside the chat "
            f"({', '.join(inputs.outside)}); an operator may allow it with CINDY_IMAGES_AFTER_UNTRUSTED"
        )
    limit = parameter("CINDY_IMAGES_PER_DAY")
    made = pictures_made_today(agent_id=agent.pk)
    if made + earlier >= limit:
        return (
            f"agent {agent.name} already made {made + earlier} picture(s) today and CINDY_IMAGES_PER_DAY "
            f"allows {limit}; no picture was made"
        )
    references = task.params.get("references") or []
    have = set(
        LibraryItem.objects.filter(agent_id=agent.pk, unique_id__in=references).values_list(
            "unique_id", flat=True
        )
    )
    missing = [r for r in references if r not in have]
    if missing:
        return f"image references {', '.join(missing)}: not in agent {agent.name}'s media library"
    return ""


@dataclass(frozen=True)
class ImagePolicy(Policy):
    def refusal(self, task: Task, *, inputs: TurnInputs, earlier: int) -> str:
        return image_refusal(task, inputs=inputs, earlier=earlier)


IMAGE = register(
    TaskKind(
        name="image",
        validate=image_params,
        policy=ImagePolicy(),
        runs="gateway",
        fields={"description": STRING, "text": STRING, "reply_to": INTEGER},
        taught_fields={"references": STRINGS},
    )
)
