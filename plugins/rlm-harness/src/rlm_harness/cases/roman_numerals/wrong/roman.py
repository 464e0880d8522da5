"""Roman numerals."""

VALUES = [(1000, "M"), (500, "D"), (100, "C"), (50, "L"), (10, "X"), (5, "V"), (1, "I")]


def to_roman(n):
    parts = []
    for value, letter in VALUES:
        count, n = divmod(n, value)
        parts.append(letter * count)
    return "".join(parts)


def from_roman(s):
    table = dict((letter, value) for value, letter in VALUES)
    return sum(table[c] for c in s)
