from roman import from_roman, to_roman


def test_to_roman():
    assert to_roman(1) == "I"
    assert to_roman(4) == "IV"
    assert to_roman(1994) == "MCMXCIV"
    assert to_roman(3999) == "MMMCMXCIX"


def test_round_trip():
    for n in range(1, 4000):
        assert from_roman(to_roman(n)) == n


def test_bad_input():
    for bad in (0, 4000, -1):
        try:
            to_roman(bad)
        except ValueError:
            pass
        else:
            raise AssertionError(f"to_roman({bad}) should raise ValueError")
    for bad in ("", "IIII", "ABC", "VV"):
        try:
            from_roman(bad)
        except ValueError:
            pass
        else:
            raise AssertionError(f"from_roman({bad!r}) should raise ValueError")
