"""A deterministic, English-like sample corpus in the pretraining input format (one sentence per line, blank line
between documents), for the demo and for tests on a machine without real data.

Each document follows one character through a day, so both pretraining tasks have signal:

* masked LM: sentences come from a small grammar (names, places, objects, verbs, adjectives) with agreement inside a
  document (the same character, pronoun and town throughout), so masked words are predictable from context;
* sentence order: sentences carry ordered discourse markers ("In the morning", "Then", "Later", "In the evening",
  "Finally") and clock times that increase, so a swapped pair is detectable.
"""

from __future__ import annotations

import random

__all__ = ["generate_documents", "write_sample_corpus"]

_NAMES = [("Anna", "she"), ("Ben", "he"), ("Clara", "she"), ("David", "he"), ("Emma", "she"), ("Felix", "he"),
          ("Grace", "she"), ("Henry", "he"), ("Iris", "she"), ("Jack", "he"), ("Lena", "she"), ("Max", "he"),
          ("Nora", "she"), ("Oscar", "he"), ("Paula", "she"), ("Sam", "he")]
_TOWNS = ["Riverton", "Oakfield", "Millbrook", "Stonebridge", "Ashford", "Lakeside", "Greenwich", "Westport"]
_PLACES = ["market", "library", "bakery", "harbor", "station", "garden", "museum", "school", "hospital", "park"]
_OBJECTS = ["apples", "books", "bread", "flowers", "letters", "tickets", "tools", "paintings", "maps", "candles"]
_ADJS = ["old", "small", "busy", "quiet", "bright", "crowded", "narrow", "famous", "new", "cold"]
_VERBS = [("buys", "bought"), ("reads", "read"), ("carries", "carried"), ("sells", "sold"), ("finds", "found"),
          ("paints", "painted"), ("repairs", "repaired"), ("counts", "counted")]
_PEOPLE = ["a friend", "the baker", "a teacher", "the doctor", "a sailor", "the mayor", "a neighbour", "a child"]
_WEATHER = ["it is raining", "the sun is shining", "a cold wind blows", "the sky is grey", "snow is falling"]
_MARKERS = ["In the morning", "Then", "After that", "Around noon", "Later", "In the afternoon", "In the evening",
            "Finally"]


def _document(rng: random.Random) -> list[str]:
    name, pron = rng.choice(_NAMES)
    town = rng.choice(_TOWNS)
    n = rng.randint(4, len(_MARKERS))
    steps = sorted(rng.sample(range(len(_MARKERS)), n))
    hour = 7
    sentences = [f"{name} lives in the {rng.choice(_ADJS)} town of {town}, where {rng.choice(_WEATHER)} today."]
    for k, step in enumerate(steps):
        hour = 7 + 2 * step + rng.randint(0, 1)  # strictly increasing with the marker
        marker = _MARKERS[step] if k < len(steps) - 1 else "Finally"
        place = rng.choice(_PLACES)
        obj = rng.choice(_OBJECTS)
        verb, past = rng.choice(_VERBS)
        form = rng.randrange(3)
        if form == 0:
            s = f"{marker}, at {hour} o'clock, {name} goes to the {rng.choice(_ADJS)} {place} and {verb} {obj}."
        elif form == 1:
            s = f"{marker} {pron} meets {rng.choice(_PEOPLE)} at the {place}, and together they {verb[:-1]} {obj}."
            s = s.replace("carrie ", "carry ")
        else:
            s = f"{marker}, {pron} has {past} {rng.randint(2, 12)} {obj} near the {place} of {town}."
        sentences.append(s[0].upper() + s[1:])
    sentences.append(f"At {hour + 1} o'clock {name} goes home and sleeps.")
    return sentences


def generate_documents(num_documents: int, seed: int = 0) -> list[list[str]]:
    """``num_documents`` documents (lists of sentences), identical for the same ``seed``."""
    rng = random.Random(seed)
    return [_document(rng) for _ in range(num_documents)]


def write_sample_corpus(path: str, num_documents: int = 2000, seed: int = 0) -> dict:
    """Write the corpus to ``path`` (UTF-8); returns counts (documents, sentences, bytes)."""
    docs = generate_documents(num_documents, seed)
    text = "\n\n".join("\n".join(d) for d in docs) + "\n"
    data = text.encode("utf-8")
    with open(path, "wb") as f:
        f.write(data)
    return {"documents": len(docs), "sentences": sum(len(d) for d in docs), "bytes": len(data)}
