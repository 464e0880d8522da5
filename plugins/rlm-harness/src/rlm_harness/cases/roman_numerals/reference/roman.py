"""Roman numerals."""

VALUES = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
          (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def to_roman(n):
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 3999:
        raise ValueError(f"not a number from 1 to 3999: {n!r}")
    parts = []
    for value, letters in VALUES:
        count, n = divmod(n, value)
        parts.append(letters * count)
    return "".join(parts)


def from_roman(s):
    if not isinstance(s, str) or not s:
        raise ValueError(f"not a Roman numeral: {s!r}")
    total, rest = 0, s
    for value, letters in VALUES:
        while rest.startswith(letters):
            total += value
            rest = rest[len(letters):]
    if rest or not 1 <= total <= 3999 or to_roman(total) != s:
        raise ValueError(f"not a Roman numeral: {s!r}")
    return total
