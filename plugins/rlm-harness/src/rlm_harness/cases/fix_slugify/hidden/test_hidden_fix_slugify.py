from textkit import slugify


def test_words_and_punctuation():
    assert slugify("Hello,  World!") == "hello-world"


def test_runs_and_ends():
    assert slugify("  --Already--slugged--  ") == "already-slugged"
    assert slugify("a__b..c") == "a-b-c"


def test_nothing_left():
    assert slugify("***") == ""
    assert slugify("") == ""


def test_digits_stay():
    assert slugify("Python 3.12 Release") == "python-3-12-release"
