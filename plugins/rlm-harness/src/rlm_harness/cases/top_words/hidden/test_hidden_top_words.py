from stats import top_words


def test_example():
    assert top_words("The cat and the hat. THE end!", 2) == [("the", 3), ("and", 1)]


def test_ties_are_alphabetical():
    assert top_words("b a c b a c", 3) == [("a", 2), ("b", 2), ("c", 2)]


def test_apostrophes_and_case():
    assert top_words("Don't stop. don't!", 1) == [("don't", 2)]


def test_nothing():
    assert top_words("", 3) == []
    assert top_words("a b", 0) == []
