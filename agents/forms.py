"""The agent's admin form: pickers for the persona's lists instead of raw JSON.

Role prompts are picked among those the agent can use (the global ones and its own), sticker sets
among those the media catalog knows (imported sets and the sets curated descriptions name; listed by
`media_catalog`, see agents/admin_parts.py), and explicit stickers are written one `SET::NAME` per line. A value already on the agent that is not
among the choices (a prompt file not imported yet, say) stays offered, marked, so saving the form
never drops it.
"""

from __future__ import annotations

from collections.abc import Iterable

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils.html import format_html, format_html_join

from agents import admin_parts
from agents.models import Agent, RolePrompt
from agents.services import curation
from agents.timezone_change import FIELD as TIMEZONE_CHANGE
from agents.timezone_change import TimezoneChange, timezone_change_check
from cindy_site.admin_utils import service_form

#: The global response-format prompt, always included (llm.prompt.sections.INSTRUCTIONS_PROMPT).
INSTRUCTIONS_PROMPT = "Instructions"


def _ordered_choices(
    current: Iterable[str], available: dict[str, str], missing: str
) -> list[tuple[str, str]]:
    """The agent's values first, in their order (a form posts checked boxes in page order, so the
    order survives a save), then the other choices by name. `available` maps value to label."""
    current = [value for value in current if isinstance(value, str)]
    choices = [(value, available.get(value, f"{value} ({missing})")) for value in dict.fromkeys(current)]
    choices += [
        (value, available[value]) for value in sorted(available, key=str.lower) if value not in current
    ]
    return choices


def role_prompt_choices(agent: Agent) -> dict[str, str]:
    """Role prompt names the agent can use, labelled with where each comes from. `Instructions` is
    not among them: every prompt includes it (`llm.prompt.sections.included_prompts`)."""
    scope = Q(agent__isnull=True) | Q(agent_id=agent.pk) if agent.pk else Q(agent__isnull=True)
    labels: dict[str, str] = {}
    prompts = RolePrompt.objects.filter(scope).exclude(name=INSTRUCTIONS_PROMPT).order_by("scope_key")
    for prompt in prompts:  # global first, own wins
        labels[prompt.name] = f"{prompt.name} ({'own' if prompt.agent_id else 'global'})"
    return labels


class StickerLinesField(forms.CharField):
    """Explicit stickers as lines of `SET::NAME`; stored as the list of those strings."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 40, "placeholder": "WendyFaces::wink"})

    def prepare_value(self, value):
        if isinstance(value, list | tuple):
            return "\n".join(str(v) for v in value)
        return value

    def to_python(self, value) -> list[str]:
        text = super().to_python(value)
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        for number, line in enumerate(lines, start=1):
            set_name, _, name = line.partition("::")
            if not set_name.strip() or not name.strip():
                raise ValidationError(
                    f'line {number}, "{line}": write each sticker as SET::NAME, e.g. WendyFaces::wink'
                )
        return lines

    def has_changed(self, initial, data) -> bool:
        return self.prepare_value(initial or []) != self.prepare_value(self.to_python(data))


class LLMLinesField(forms.CharField):
    """The fallback chain as lines, one LLM name each; stored as the list of names (checked, with
    the rest of the agent, by `agent_validate`)."""

    widget = forms.Textarea(attrs={"rows": 3, "cols": 40, "placeholder": "gpt-5-mini"})

    def prepare_value(self, value):
        if isinstance(value, list | tuple):
            return "\n".join(str(v) for v in value)
        return value

    def to_python(self, value) -> list[str]:
        return [line.strip() for line in super().to_python(value).splitlines() if line.strip()]

    def has_changed(self, initial, data) -> bool:
        return self.prepare_value(initial or []) != self.prepare_value(self.to_python(data))


class HeadingSectionsField(forms.CharField):
    """Headed texts written as in a persona file: `# Heading` on a line, its text below, for the
    headings the importer keeps aside (`extra_sections`, a list of [heading, text] pairs) and the
    text under flag headings (`flag_notes`, heading: text). `as_dict` picks the stored shape."""

    def __init__(self, *, as_dict: bool, **kwargs) -> None:
        self.as_dict = as_dict
        kwargs.setdefault(
            "widget", forms.Textarea(attrs={"rows": 4, "cols": 60, "placeholder": "# Heading\ntext"})
        )
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, dict):
            value = list(value.items())
        if isinstance(value, list | tuple):
            return "\n\n".join(f"# {heading}\n{body}".rstrip() for heading, body in value)
        return value

    def to_python(self, value) -> list[list[str]] | dict[str, str]:
        pairs: list[list[str]] = []
        for number, line in enumerate(super().to_python(value).splitlines(), start=1):
            if line.startswith("# ") and line[2:].strip():
                pairs.append([line[2:].strip(), ""])
            elif pairs:
                pairs[-1][1] += line + "\n"
            elif line.strip():
                raise ValidationError(
                    f'line {number}, "{line}": start with a "# Heading" line, then its text below it'
                )
        pairs = [[heading, body.strip()] for heading, body in pairs]
        return dict(pairs) if self.as_dict else pairs

    def has_changed(self, initial, data) -> bool:
        try:
            return self.prepare_value(initial or []) != self.prepare_value(self.to_python(data))
        except ValidationError:
            return True


class ListChoiceField(forms.MultipleChoiceField):
    widget = forms.CheckboxSelectMultiple

    def has_changed(self, initial, data) -> bool:
        return list(initial or []) != list(data or [])


class LLMNameInput(forms.TextInput):
    """A text field suggesting the models offered to personas (the admin's LLMs and prices page, in its
    order), then the built-in names; any name that routes is accepted."""

    def __init__(self) -> None:
        super().__init__(attrs={"list": "agent-llm-choices", "autocomplete": "off"})

    def render(self, name, value, attrs=None, renderer=None):  # noqa: ANN001 - Django's signature
        names = admin_parts.choices(admin_parts.LLM_NAMES, default=[])
        options = format_html_join("", '<option value="{}">', ((choice,) for choice in names))
        datalist = format_html('<datalist id="agent-llm-choices">{}</datalist>', options)
        return super().render(name, value, attrs, renderer) + datalist


class AgentForm(service_form(lambda obj: curation.agent_validate(agent=obj))):
    role_prompt_names = ListChoiceField(
        label="Role prompts",
        required=False,
        help_text="Prompts added to this agent's instructions, in this order; its own prompts "
        "(below) override global ones of the same name.",
    )
    sticker_set_names = ListChoiceField(
        label="Sticker sets",
        required=False,
        help_text="Every sticker of these sets is offered to the agent.",
    )
    llm_fallback = LLMLinesField(
        label="LLM fallback",
        required=False,
        help_text="LLM names tried in order, one per line, when the LLM is away or has no such model; "
        "empty: CINDY_LLM_FALLBACK.",
    )
    explicit_stickers = StickerLinesField(
        label="Explicit stickers",
        required=False,
        help_text="One SET::NAME per line, offered besides the whole sets above.",
    )
    extra_sections = HeadingSectionsField(
        as_dict=False,
        label="Other sections",
        required=False,
        help_text="Sections of the persona file Cindy does not use, kept for export: "
        "a # Heading line, then its text.",
    )
    flag_notes = HeadingSectionsField(
        as_dict=True,
        label="Flag notes",
        required=False,
        help_text="Text written under a flag heading of the persona file (# Disabled, # Gagged): "
        "a # Heading line, then its text.",
    )

    timezone_change = forms.ChoiceField(
        label="When the timezone changes",
        required=False,
        choices=[("", "---------"), *TimezoneChange.choices],
        help_text="Needed only when the agent has future events or schedule entries: keep their local "
        "times (a 09:00 event stays at 09:00 in the new zone) or their instants (it then reads another "
        "clock time). The activity stream records the choice.",
    )

    class Meta:
        model = Agent
        fields = "__all__"
        labels = {"llm": "LLM"}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        agent = self.instance
        offered = [n for n in agent.role_prompt_names or [] if n != INSTRUCTIONS_PROMPT]
        self.initial["role_prompt_names"] = offered
        self.fields["role_prompt_names"].choices = _ordered_choices(
            offered, role_prompt_choices(agent), "no such prompt yet"
        )
        self.fields["sticker_set_names"].choices = _ordered_choices(
            agent.sticker_set_names or [],
            admin_parts.choices(admin_parts.STICKER_SETS, default={}),
            "not in the media catalog",
        )
        if "llm" in self.fields:
            self.fields["llm"].label = "LLM"
            self.fields["llm"].widget = LLMNameInput()

    def _post_clean(self) -> None:
        """Then the timezone rule: a changed zone with events or a schedule needs the choice."""
        super()._post_clean()
        if self.instance.pk is None or "timezone" in self.errors:
            return
        before = Agent.objects.filter(pk=self.instance.pk).values_list("timezone", flat=True).first()
        try:
            timezone_change_check(
                agent=self.instance, before=before, change=self.cleaned_data.get(TIMEZONE_CHANGE, "")
            )
        except ValidationError as exc:
            self._update_errors(exc)

    def clean_role_prompt_names(self) -> list[str]:
        """An `Instructions` entry the agent already lists is not offered, but it is kept in its place."""
        names = list(self.cleaned_data.get("role_prompt_names") or [])
        before = [n for n in self.instance.role_prompt_names or [] if isinstance(n, str)]
        if INSTRUCTIONS_PROMPT in before:
            names.insert(min(before.index(INSTRUCTIONS_PROMPT), len(names)), INSTRUCTIONS_PROMPT)
        return names
