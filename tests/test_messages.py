"""The models kit's ``merge_same_role``: the one merge of consecutive same-role messages the host's compaction and
the providers and adapters that need alternating roles share."""

from rlm_host.sdk.models import merge_same_role


def test_runs_of_one_role_become_one_message_joined_by_a_blank_line():
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "task"},
        {"role": "user", "content": "more"},
        {"role": "assistant", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "assistant", "content": "c"},
        {"role": "user", "content": "result"},
    ]
    assert merge_same_role(messages) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "task\n\nmore"},
        {"role": "assistant", "content": "a\n\nb\n\nc"},
        {"role": "user", "content": "result"},
    ]


def test_the_input_is_left_as_it_is_and_empty_stays_empty():
    first = {"role": "user", "content": "one"}
    messages = [first, {"role": "user", "content": "two"}]
    merged = merge_same_role(messages)
    assert merged == [{"role": "user", "content": "one\n\ntwo"}]
    assert first == {"role": "user", "content": "one"} and merged[0] is not first
    assert len(messages) == 2
    assert merge_same_role([]) == []
