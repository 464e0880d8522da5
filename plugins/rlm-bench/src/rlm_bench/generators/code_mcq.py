"""Multiple-choice questions over a synthetic Python repository (after LongBench-v2's code-repository QA).

The context is a list of source files (with their paths, so ``list_files()`` / ``load_file()`` work in the
REPL): modules of constants and functions whose parameters have default values and whose bodies call functions
of other modules. Names are invented, so nothing can be answered from memory. Question kinds:

- ``default``: the default value of a parameter of a function;
- ``defined_in``: which file defines a function;
- ``caller``: which of four functions calls a given function (exactly one does).

Four options A–D, the right one placed by the seed; the answer is its letter (scored by ``multiple_choice``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from rlm_bench.generators import Generated
from rlm_bench.generators._text import make_rng, tokens_to_chars, unique_words
from rlm_host.sdk.context import Documents

LETTERS = "ABCD"
_VERBS = ("load", "parse", "compute", "merge", "render", "check", "store", "fetch", "build", "update", "scan", "emit")
MODULE_CHARS = 1600  # a first estimate of a rendered module's size
_PARAMS = ("limit", "retries", "window", "depth", "batch_size", "timeout", "offset", "scale", "margin", "threshold")


@dataclass
class Function:
    name: str
    path: str
    params: dict[str, int]
    calls: list[str] = field(default_factory=list)

    def source(self, module_of: dict[str, str], rng: random.Random) -> str:
        args = ", ".join(["records"] + [f"{p}={v}" for p, v in self.params.items()])
        lines = [f"def {self.name}({args}):", f'    """{self.name.replace("_", " ").capitalize()} for the records."""',
                 "    result = []"]
        first = next(iter(self.params))
        for index, callee in enumerate(self.calls):
            lines.append(f"    part_{index} = {module_of[callee]}.{callee}(records[:{first}])")
            lines.append(f"    result.extend(part_{index} or [])")
        lines += [
            "    for item in records:",
            f"        if len(result) >= {first} * {rng.randint(2, 9)}:",
            "            break",
            "        result.append(item)",
            "    return result",
        ]
        return "\n".join(lines)


def _repository(rng: random.Random, modules: int) -> tuple[list[str], list[Function]]:
    words = [w.lower() for w in unique_words(rng, 400)]
    package = words.pop()
    folders = ("core", "io", "util", "service")
    paths = [f"{package}/{rng.choice(folders)}/{words[i % len(words)]}_{i}.py" for i in range(modules)]
    functions: list[Function] = []
    used: set[str] = set()
    for path in paths:
        for _ in range(rng.randint(3, 5)):
            name = f"{rng.choice(_VERBS)}_{rng.choice(words)}"
            while name in used:
                name = f"{rng.choice(_VERBS)}_{rng.choice(words)}_{len(used)}"
            used.add(name)
            params = {p: rng.randint(2, 400) for p in rng.sample(_PARAMS, rng.randint(1, 3))}
            functions.append(Function(name, path, params))
    for function in functions:
        for _ in range(rng.randint(0, 2)):
            callee = rng.choice(functions)
            if callee.path != function.path and callee.name not in function.calls:
                function.calls.append(callee.name)
    return paths, functions


def _render(paths: list[str], functions: list[Function], rng: random.Random) -> list[str]:
    module_of = {f.name: f.path.removesuffix(".py").replace("/", "_") for f in functions}
    path_of = {f.name: f.path for f in functions}
    by_path: dict[str, list[Function]] = {}
    for function in functions:
        by_path.setdefault(function.path, []).append(function)
    files = []
    for path in paths:
        own = by_path[path]
        imports = sorted({path_of[c] for o in own for c in o.calls})
        head = [f'"""{path}: helpers of the {path.split("/")[-1][:-3]} module."""', ""]
        stems = [p.removesuffix(".py") for p in imports]
        head += [f"import {stem.replace('/', '.')} as {stem.replace('/', '_')}" for stem in stems]
        head += ["", f"VERSION = {rng.randint(1, 40)}", ""]
        files.append("\n".join(head) + "\n\n" + "\n\n\n".join(f.source(module_of, rng) for f in own) + "\n")
    return files


def generate(tokens: int = 8192, question: str = "default", seed: int | str = 0) -> Generated:
    if tokens < 1024:
        raise ValueError("tokens must be at least 1024")
    target = tokens_to_chars(tokens)
    modules = max(4, target // MODULE_CHARS)
    for _ in range(2):  # one size estimate, then one correction from the size actually rendered
        rng = make_rng(seed, "code")
        paths, functions = _repository(rng, modules)
        files = _render(paths, functions, rng)
        chars = sum(map(len, files))
        modules = max(4, round(modules * target / chars))
    ask = make_rng(seed, "code-question")
    called = {c for f in functions for c in f.calls}
    if question == "default":
        picked = ask.choice(functions)
        param, value = ask.choice(sorted(picked.params.items()))
        text = f"What is the default value of the parameter `{param}` of the function `{picked.name}`?"
        wrong = ask.sample(sorted(set(range(2, 401)) - {value}), 3)
        right, options = str(value), [str(value)] + [str(w) for w in wrong]
    elif question == "defined_in":
        picked = ask.choice(functions)
        text = f"Which file defines the function `{picked.name}`?"
        right, options = picked.path, [picked.path] + ask.sample(sorted(set(paths) - {picked.path}), 3)
    elif question == "caller":
        picked = ask.choice(sorted((f for f in functions if f.name in called), key=lambda f: f.name))
        callers = sorted(f.name for f in functions if picked.name in f.calls)
        others = sorted(f.name for f in functions if picked.name not in f.calls and f.name != picked.name)
        text = f"Which of these functions calls the function `{picked.name}`?"
        right = ask.choice(callers)
        options = [right] + ask.sample(others, 3)
    else:
        raise ValueError("question must be default, defined_in or caller")
    ask.shuffle(options)
    letter = LETTERS[options.index(right)]
    listing = "\n".join(f"{LETTERS[i]}) {option}" for i, option in enumerate(options))
    prompt = (
        "The context is a Python repository: a list of source files (list_files() gives their paths). "
        f"{text}\n\n{listing}\n\nAnswer with the letter of the correct option."
    )
    context = Documents(files, paths)
    return Generated(
        context=context, answer=letter, question=prompt, scorer="multiple_choice",
        meta={"chars": sum(map(len, files)), "files": len(files), "functions": len(functions), "right": right},
    )
