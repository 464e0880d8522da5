"""Is pure_rlm's reply parser linear on adversarial replies? Prints throughput per input class and size, and
the ratio of time per character at the largest size to the smallest (about 1 when linear, growing with the
size when not).

    .venv/bin/python benchmarks/reply_parsing.py [--sizes 1e4,1e5,1e6] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time

from rlm_host.environments.repl_format import parse_reply

#: A repeating unit per class; each reply is the unit repeated to the size, then one valid block at the end.
CLASSES = {
    "prose": "word " * 20 + "\n",
    "crlf lines": "FINAL is near\r\n```text\r\nx\r\n```\r\n",
    "unclosed fences": "```repl\n",
    "closing fences only": "```\n",
    "fences in strings": 's = "```" + \'```\'\n',
    "FINAL lines unclosed": "FINAL(\n",
    "nested parentheses": "FINAL(" + "(" * 50 + "\n",
    "quotes": "FINAL('\"" * 10 + "\n",
}
TAIL = "```repl\nFINAL(len(context))\n```\n"


def seconds(text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        parse_reply(text)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e4,1e5,1e6", help="reply sizes in characters")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    print(f"{'class':<22}" + "".join(f"{f'{s:,} ch MB/s':>18}" for s in sizes) + f"{'ns/ch ratio':>14}")
    for name, unit in CLASSES.items():
        per_char = []
        row = f"{name:<22}"
        for size in sizes:
            text = unit * (size // len(unit) + 1)
            text = text[:size] + "\n" + TAIL
            took = seconds(text, args.repeat)
            per_char.append(took / len(text))
            row += f"{len(text) / took / 1e6:>18.1f}"
        print(row + f"{per_char[-1] / per_char[0]:>14.2f}")


if __name__ == "__main__":
    main()
