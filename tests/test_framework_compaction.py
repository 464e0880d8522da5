"""A framework's chat kept inside the model's window: older turns folded into one summary, a
``compaction`` call that is not a turn, the summary reused and extended, the event recorded."""

from __future__ import annotations

from rlm_host.events import EventBus
from rlm_host.engine.scope import RunScope
from rlm_host.frameworks.compaction import ChatCompactor
from rlm_host.frameworks.protocol import TurnLimitedRole
from rlm_host.models.scripted import ScriptedConnector


class Role:
    """A model role over a scripted model, with a small window and an event scope (as ``ModelClient`` has)."""

    def __init__(self, summaries: list[str], window: int = 400) -> None:
        self.model = ScriptedConnector.from_responses(summaries, name="scripted:root")
        self.context_window = window
        self.events: list = []
        bus = EventBus()
        bus.subscribe("test", self.events.append)
        self.scope = RunScope("run_x", "run_x", 0, bus)
        self.purposes: list = []

    def complete(self, messages, purpose=None, **kwargs):
        self.purposes.append(purpose)
        return self.model.complete(messages, purpose=purpose)

    def count_tokens(self, text: str) -> int:
        return len(text) // 4


def chat(turns: int) -> list[dict]:
    messages = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Task: find X."}]
    for n in range(turns):
        messages += [{"role": "assistant", "content": f'{{"tool": "run_code", "args": {{"code": "step {n}"}}}}'},
                     {"role": "user", "content": f"Result of run_code: {'output ' * 40}{n}"}]
    return messages


def test_a_short_chat_is_sent_as_it_is():
    role = Role([])
    compactor = ChatCompactor(role)
    assert compactor.fit(chat(1)) == chat(1) and role.purposes == []


def test_a_long_chat_folds_its_older_turns_and_later_turns_fold_onto_the_summary():
    role = Role(["summary one", "summary two"])
    compactor = ChatCompactor(role, keep_last=2)
    fitted = compactor.fit(chat(6))
    assert fitted[:2] == chat(6)[:2] and "summary one" in fitted[2]["content"]
    assert fitted[-2:] == chat(6)[-2:] and len(fitted) < len(chat(6))
    assert role.purposes == ["compaction"]
    assert compactor.fit(chat(6)) == fitted and role.purposes == ["compaction"]  # the same history: no new call
    later = compactor.fit(chat(12))
    assert "summary two" in later[2]["content"] and role.purposes == ["compaction", "compaction"]
    sent = role.model.calls[-1]
    assert any("summary one" in m["content"] for m in sent)  # the new summary builds on the old one
    folds = [e.data for e in role.events if e.type == "compaction"]
    assert [f["summary"] for f in folds] == ["summary one", "summary two"]
    assert folds[0]["turns_before"] == 12 and folds[0]["turns_after"] == 2


def test_a_compaction_call_is_not_a_turn():
    role = Role(["the summary", "turn reply"])
    limited = TurnLimitedRole(role, max_turns=1)
    ChatCompactor(limited, keep_last=2).fit(chat(6))
    assert limited.turns == 0
    limited.complete([{"role": "user", "content": "go"}])
    assert limited.turns == 1 and role.purposes == ["compaction", None]


def test_a_history_that_starts_over_drops_the_old_summary():
    role = Role(["first summary"])
    compactor = ChatCompactor(role, keep_last=2)
    compactor.fit(chat(6))
    assert compactor.fit(chat(1)) == chat(1)


def test_two_conversations_through_one_model_keep_their_own_summaries():
    """A deep agent's sub-agent talks through the same model: its chat (another task) is another conversation."""
    role = Role(["main summary", "sub summary"])
    compactor = ChatCompactor(role, keep_last=2)
    main = compactor.fit(chat(6))
    other = [{"role": "system", "content": "You are a sub-agent."}, *chat(6)[1:]]
    sub = compactor.fit(other)
    assert "main summary" in main[2]["content"] and "sub summary" in sub[2]["content"]
    assert compactor.fit(chat(6)) == main and len(role.purposes) == 2


def test_a_prompt_that_alone_fills_the_window_is_not_folded_in_vain():
    """When the framework's own system prompt fills the window, folding turns cannot help: no compaction call."""
    role = Role([], window=400)
    big_head = [{"role": "system", "content": "rules " * 300}, *chat(3)[1:]]
    assert ChatCompactor(role).fit(big_head) == big_head and role.purposes == []
