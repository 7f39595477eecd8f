"""factory_boy factories shared by every app's tests. Add a factory here when two apps need it."""

from __future__ import annotations

import factory

from agents.models import Agent, RolePrompt
from media_catalog.models import MediaDescription, MediaKind
from memory.models import Memory


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Agent
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"Agent{n}")
    phone = factory.Sequence(lambda n: f"+1555010{n:04d}")
    instructions = factory.LazyAttribute(lambda a: f"You are {a.name}. Be kind to {{user}}.")
    transport = "sandbox"


class RolePromptFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RolePrompt

    name = factory.Sequence(lambda n: f"Prompt{n}")
    text = factory.LazyAttribute(lambda p: f"# {p.name}\n\nBe helpful.\n")
    agent = None


class MemoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Memory

    agent = factory.SubFactory(AgentFactory)
    kind = Memory.Kind.CURATED
    partner_id = 123456789
    content = factory.Sequence(lambda n: f"Remembered fact number {n}.")


class MediaDescriptionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = MediaDescription

    unique_id = factory.Sequence(lambda n: f"AgADuid{n:05d}")
    kind = MediaKind.STICKER
    sticker_set_name = "TestSet"
    sticker_name = factory.Iterator(["😀", "👋", "🎉"])
    description = "A test sticker."
    status = MediaDescription.Status.OK
    source = MediaDescription.Source.AI
