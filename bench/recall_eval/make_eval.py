"""Writes the recall evaluation set (bench/recall_eval/*.json) from the templates below.

Each file is one long DM between a person and an agent: everyday small talk drawn from filler
templates (seeded, so the files come out the same every time), with facts planted at chosen places,
and questions that ask for those facts in other words ("when did Jane get married?" for "Jane
finally tied the knot on Saturday"). The format is in docs/recall.md ("Evaluating recall").

Run: .venv/bin/python bench/recall_eval/make_eval.py   (rewrites the JSON files beside it)
"""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
START = dt.datetime(2026, 1, 5, 8, 0, tzinfo=dt.UTC)

# (what the person says, one or more messages; the questions that ask for it in other words)
FACTS: list[tuple[list[str], list[str]]] = [
    (
        [
            "Jane finally tied the knot on Saturday!",
            "the ceremony was down by the lake and I cried the whole time",
        ],
        ["when did my sister get married?", "how did the wedding go?", "how was Jane's big day?"],
    ),
    (
        ["we adopted a little tabby from the shelter, she's called Miso"],
        ["what's the name of the kitten we took home?", "is Miso settling in?"],
    ),
    (
        ["I start at the new firm on the 3rd as a senior accountant, finally out of retail"],
        ["what job did I take?", "which role was I hired for?"],
    ),
    (
        ["my flight to Lisbon leaves at 6:40 on Friday morning"],
        ["what time is my plane to Portugal?", "when do I fly out to Lisbon?"],
    ),
    (
        ["the doctor said my cholesterol is far too high and I need to cut out cheese"],
        ["what did the physician say about my blood results?"],
    ),
    (
        ["the landlord is raising the rent by two hundred a month from March"],
        ["how much more will the apartment cost?"],
    ),
    (
        ["I broke my wrist falling off the bike last week", "six weeks in a cast, can't even type properly"],
        ["what happened to my arm?", "how did I get injured?"],
    ),
    (
        ["Tom and I split up, he moved his stuff out on Sunday"],
        ["is my boyfriend still with me?", "what happened with Tom?"],
    ),
    (["my grandmother passed away peacefully last night, she was 94"], ["when did granny die?"]),
    (["I passed my driving test at the second attempt!"], ["did I get my licence?"]),
    (["we're expecting a baby in October, it's a girl"], ["when is our daughter due to be born?"]),
    (
        ["my car got towed from outside the pharmacy, 180 to get it back"],
        ["how much did I pay to recover the vehicle?"],
    ),
    (["I'm allergic to peanuts, the proper epipen kind of allergy"], ["which food could kill me?"]),
    (
        ["my brother Marco is moving to Melbourne in the spring"],
        ["where is my sibling relocating to?", "what is Marco planning?"],
    ),
    (
        ["I've been learning the cello for about three months now"],
        ["what instrument am I studying?", "how long have I played the cello?"],
    ),
    (
        ["the kitchen ceiling leaked after the storm, the plumber comes Thursday"],
        ["when will someone fix the water coming through the roof?"],
    ),
    (["ran the half marathon in 1:52, a personal best"], ["what was my time in the race?"]),
    (
        ["my very first dog was a beagle called Biscuit"],
        ["what was my first puppy named?", "what breed was Biscuit?"],
    ),
    (
        ["we booked a cottage in Cornwall for the first week of August"],
        ["where are we going on holiday this summer?", "when is the Cornwall trip?"],
    ),
    (["eight years married on the 14th of May, can you believe it"], ["when is our anniversary?"]),
    (["I lost my wallet on the tram, had to cancel all the cards"], ["where did I leave my purse?"]),
    (
        ["my daughter got into Edinburgh to study medicine!"],
        ["which university accepted my kid?", "what will she study at Edinburgh?"],
    ),
    (["I've been vegetarian since January, no meat at all"], ["do I still eat steak?"]),
    (["the boss made me team lead today"], ["did I get promoted at work?"]),
    (["dad's heart surgery is scheduled for the 9th"], ["when is my father's operation?"]),
    (["we painted the living room a dark sage green"], ["what colour are the lounge walls now?"]),
    (["I'm terrified of spiders, I can't even look at pictures of them"], ["what creatures scare me?"]),
    (["my favourite film of all time is Spirited Away"], ["which movie do I love most?"]),
    (
        ["Sam borrowed 300 quid from me and still hasn't paid it back"],
        ["who owes me money?", "how much does Sam still owe?"],
    ),
    (["got a tattoo of a swallow on my ankle yesterday"], ["what ink did I have done on my leg?"]),
    (
        ["the twins turn seven on the 21st, party at the trampoline park"],
        ["how old will the kids be?", "where is the twins' celebration?"],
    ),
    (["sold my old guitar for 450 on the marketplace"], ["how much did I get for the instrument?"]),
    (["we're moving house at the end of the month, a flat near the river"], ["when do we relocate?"]),
    (["I quit smoking 40 days ago, not a single cigarette since"], ["how long since I gave up tobacco?"]),
    (["dropped my phone in the car park and the screen shattered"], ["how did my mobile get damaged?"]),
    (
        ["my niece Ella was born this morning, 3.2 kilos"],
        ["how heavy was the newborn?", "when did Ella arrive?"],
    ),
    (
        ["I'm taking Spanish evening classes on Tuesdays"],
        ["which language am I learning?", "what night is my Spanish lesson?"],
    ),
    (
        ["the vet says Rufus needs two teeth pulled"],
        ["what's wrong with my dog's mouth?", "what did the vet say about Rufus?"],
    ),
    (
        ["our boiler died, no hot water until the engineer comes Monday"],
        ["when will the heating be repaired?", "when is the boiler getting fixed?"],
    ),
    (["I got a speeding fine, 100 and three points"], ["what penalty did the police give me?"]),
]

PEOPLE = [
    "Priya",
    "Dan",
    "Chloe",
    "Omar",
    "Lucy",
    "Ben",
    "Nadia",
    "Kev",
    "my mum",
    "my cousin",
    "a colleague",
]
PLACES = [
    "the gym",
    "the office",
    "the shops",
    "town",
    "the park",
    "the station",
    "work",
    "the cafe",
    "the library",
]
FOODS = ["pasta", "curry", "a sandwich", "soup", "tacos", "leftover pizza", "a salad", "noodles", "toast"]
SHOWS = [
    "that detective series",
    "the baking show",
    "a documentary about whales",
    "the football",
    "a quiz show",
]
WEATHER = ["rainy", "freezing", "grey", "sunny for once", "windy", "muggy", "foggy"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
USER_LINES = [
    "morning! it's {weather} again",
    "just got back from {place}",
    "had {food} for lunch, not bad",
    "watching {show} tonight",
    "{person} says hi",
    "so tired today, barely slept",
    "traffic was awful on the way to {place}",
    "thinking of ordering {food} later",
    "bumped into {person} at {place}",
    "can't decide what to do this weekend",
    "the bus was late again, twenty minutes",
    "it's {weather} out, staying in",
    "did some laundry and tidied up a bit",
    "{person} and I might go to {place} on {day}",
    "long meeting this afternoon, nothing decided",
    "what a day honestly",
    "my back is a bit sore from sitting all day",
    "finished that book, the ending was strange",
    "need to remember to buy milk",
    "we had {food} for dinner",
    "{person} sent me a funny video",
    "going to bed early tonight",
    "the neighbours are hammering something again",
    "started {show}, two episodes in",
    "work was fine, quiet mostly",
    "lol yes",
    "haha exactly",
    "ok talk later",
    "I might go to {place} after lunch",
    "how's your {day} going?",
    "coffee number three already",
    "it was {weather} all {day}",
    "the shop ran out of bread so I got {food} instead",
    "{person} is coming round on {day}",
    "I should really exercise more",
]
AGENT_LINES = [
    "oh nice, how was it?",
    "haha I love that",
    "sounds like a long day",
    "ugh, {weather} days are the worst",
    "say hi back!",
    "that sounds lovely",
    "what are you up to later?",
    "fair enough",
    "I'd go for {food} too honestly",
    "oh no, hope it gets better",
    "tell me more!",
    "is {show} any good?",
    "rest up tonight",
    "ha, classic",
    "ooh what happened?",
    "you deserve a quiet evening",
    "did you get everything done?",
    "I'm listening",
    "that's so typical",
    "good plan",
]

# The same people, places and subjects in passing, so that a fact is not the only message with its words.
DISTRACTORS = [
    "Jane sent a photo of her lunch, so jealous",
    "Jane wants to go to the cinema on {day}",
    "the lake looked lovely this morning",
    "the cat next door is sitting in our garden again",
    "I need to call the doctor about my prescription",
    "my brother is being so annoying about the group chat",
    "Tom's mum rang, nothing important",
    "Marco sent me a meme about accountants",
    "the plumber next door has parked across our drive",
    "my flight home from the conference was delayed last year",
    "Lisbon looked amazing in that travel show",
    "the rent on the garage is due on {day}",
    "my wrist watch stopped, need a new battery",
    "my grandmother's recipe for {food} is the best",
    "saw a dog that looked like a beagle at {place}",
    "the kids were loud at {place} today",
    "the cheese shop has closed down",
    "the car needs an MOT next month",
    "Sam is coming to {place} with us on {day}",
    "the vet's waiting room was packed when I took my mum's cat",
    "Ella's drawing is on the fridge",
    "we bought new paint brushes but haven't started anything",
    "music lessons for adults are so expensive",
    "my phone battery dies by lunchtime",
    "the tram was packed this morning",
    "the university sent a survey about alumni events",
    "had a meeting with the boss, all fine",
    "dad fixed the fence at the weekend",
    "the office heating is broken again, freezing",
    "a police car raced past the house with its siren on",
    "my sister is coming to stay on {day}",
    "the bike shop has a sale on helmets",
    "watched a film last night, it was fine",
    "the shelter down the road is having an open day",
    "I owe Priya a coffee",
    "the ceiling in the office has a stain",
    "the twins next door were playing football in the street",
    "there's a marathon on {day}, roads are closed",
    "smoking area at work has moved round the back",
    "cheese on toast for dinner again",
]

# (file name, messages, seed, which facts, where they go as a fraction of the conversation)
CONVERSATIONS = [
    ("long_dm_a", 700, 1, range(0, 10)),
    ("long_dm_b", 1200, 2, range(10, 20)),
    ("long_dm_c", 1600, 3, range(20, 30)),
    ("long_dm_d", 2000, 4, range(30, 40)),
]


def _fill(template: str, rng: random.Random) -> str:
    return template.format(
        weather=rng.choice(WEATHER),
        place=rng.choice(PLACES),
        food=rng.choice(FOODS),
        show=rng.choice(SHOWS),
        person=rng.choice(PEOPLE),
        day=rng.choice(DAYS),
    )


def conversation(name: str, size: int, seed: int, facts: range) -> dict:
    rng = random.Random(seed)
    chosen = [FACTS[i] for i in facts]
    # Facts spread over the whole history, none in the last 50 messages (the prompt's recent part).
    slots = sorted(rng.sample(range(20, size - 50), len(chosen)))
    messages: list[dict] = []
    questions: list[dict] = []
    at = START
    pending = dict(zip(slots, chosen, strict=True))
    while len(messages) < size:
        at += dt.timedelta(minutes=rng.choice((1, 2, 3, 7, 30, 90, 600)))
        fact = pending.pop(len(messages), None)
        if fact is not None:
            lines, asked = fact
            ids = []
            for line in lines:
                messages.append(
                    {"id": len(messages) + 1, "from": "user", "date": at.isoformat(), "text": line}
                )
                ids.append(len(messages))
                at += dt.timedelta(minutes=1)
            questions.extend({"question": q, "answers": ids} for q in asked)
            continue
        who = "user" if rng.random() < 0.55 else "agent"
        lines = USER_LINES if who == "user" else AGENT_LINES
        if who == "user" and rng.random() < 0.15:
            lines = DISTRACTORS
        text = _fill(rng.choice(lines), rng)
        messages.append({"id": len(messages) + 1, "from": who, "date": at.isoformat(), "text": text})
    if pending:
        raise RuntimeError(
            f"{name}: facts left unplanted at {sorted(pending)}: space the slots further apart"
        )
    return {
        "name": name,
        "about": "small talk from templates with planted facts; questions ask for them in other words",
        "messages": messages,
        "questions": questions,
    }


def main() -> None:
    for name, size, seed, facts in CONVERSATIONS:
        data = conversation(name, size, seed, facts)
        (HERE / f"{name}.json").write_text(
            json.dumps(data, indent=0, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        print(f"{name}.json: {len(data['messages'])} messages, {len(data['questions'])} questions")


if __name__ == "__main__":
    main()
