"""A deterministic, English-like sample corpus in the pretraining input format (one sentence per line, blank line
between documents), for the demo and for tests on a machine without real data.

Each document follows one character through a day, so both pretraining tasks have signal:

* masked LM: sentences come from a small grammar (names, places, objects, verbs, adjectives) with agreement inside a
  document (the same character, pronoun and town throughout), so masked words are predictable from context;
* sentence order: sentences carry ordered discourse markers ("In the morning", "Then", "Later", "In the evening",
  "Finally") and clock times that increase, so a swapped pair is detectable.

The writers here write local files only (Python's ``open``): they make test and demo inputs on the machine that runs
them. Copy the result to ``gs://`` if a job there should read it; every reader of the package takes either.
"""

from __future__ import annotations

import os
import random
import sys

__all__ = ["generate_documents", "write_document_files", "write_sample_corpus", "write_weather_task"]

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
    from albert_tf import files as _fs

    _fs.makedirs_for(path)
    _fs.write_bytes_atomic(path, data)  # under a temporary name until complete, as every output
    return {"documents": len(docs), "sentences": sum(len(d) for d in docs), "bytes": len(data)}


def write_document_files(directory: str, num_documents: int = 2000, seed: int = 0) -> dict:
    """The same documents as plain text files, one document per file and one paragraph per document: the raw
    input ``albert_prepare_text`` expects (books, articles), so a pipeline can start from files as a user's does."""
    docs = generate_documents(num_documents, seed)
    os.makedirs(directory, exist_ok=True)
    width = max(5, len(str(len(docs))))
    for i, doc in enumerate(docs):
        with open(os.path.join(directory, f"doc_{i:0{width}d}.txt"), "w", encoding="utf-8", newline="\n") as f:
            f.write(" ".join(doc) + "\n")
    return {"documents": len(docs), "files": len(docs), "directory": directory}


SUNNY = "the sun is shining"


def write_weather_task(data_dir: str, seed: int = 0, per_class: int = 400) -> dict[str, int]:
    """A single-sentence classification task in the GLUE SST-2 layout (``<data_dir>/SST-2/{train,dev,test}.tsv``)
    so ``run_classifier --task_name=SST-2`` runs unchanged: the first sentence of a document says what the weather
    is; label 1 = sunny, 0 = any other weather, balanced, split 60/20/20 (test without labels, as GLUE's)."""
    docs = generate_documents(6 * per_class, seed=seed + 1)
    firsts = [d[0] for d in docs]
    sunny = [s for s in firsts if SUNNY in s][:per_class]
    other = [s for s in firsts if SUNNY not in s][: len(sunny)]
    rows = [(s, "1") for s in sunny] + [(s, "0") for s in other]
    random.Random(seed).shuffle(rows)
    n = len(rows)
    splits = {"train": rows[: int(0.6 * n)], "dev": rows[int(0.6 * n) : int(0.8 * n)], "test": rows[int(0.8 * n) :]}
    folder = os.path.join(data_dir, "SST-2")
    os.makedirs(folder, exist_ok=True)
    for name, part in splits.items():
        with open(os.path.join(folder, f"{name}.tsv"), "w", encoding="utf-8") as f:
            if name == "test":
                f.write("index\tsentence\n")
                f.writelines(f"{i}\t{s}\n" for i, (s, _) in enumerate(part))
            else:
                f.write("sentence\tlabel\n")
                f.writelines(f"{s}\t{label}\n" for s, label in part)
    return {name: len(part) for name, part in splits.items()}


if __name__ == "__main__":  # a library module: say where the command is instead of exiting 0 silently
    print("albert_tf.data.sample_corpus is a library module; the command is albert_make_sample_corpus "
          "(python -m albert_tf.cli.make_sample_corpus)", file=sys.stderr)
    sys.exit(2)
