"""``TinyAgent``: a stand-in for the agent framework a framework plugin wraps (DSPy, Pydantic AI, ADK…), kept here so
the template runs without one. Replace it by your framework's import; ``framework.py`` shows what to plug in.

Like a real framework, it knows nothing of rlm: it takes a *model* (anything with ``generate(messages) -> str``),
*tools* (name → function of one string) and *callbacks* (``on_event(kind, data)``), and runs a loop in which the
model either calls a tool — a reply ``TOOL <name>`` followed by the tool's input on the next lines — or answers,
``FINAL <answer>``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

INSTRUCTIONS = """\
Reply in one of two forms.
To call a tool: the line `TOOL <name>`, then its input on the following lines.
To answer: the line `FINAL <answer>`.
Tools: {tools}"""


class TinyAgent:
    def __init__(self, model: Any, tools: dict[str, Callable[[str], str]], instructions: str = "",
                 on_event: Optional[Callable[[str, dict[str, Any]], None]] = None) -> None:
        self.model, self.tools, self.on_event = model, tools, on_event or (lambda kind, data: None)
        self.system = INSTRUCTIONS.format(tools=", ".join(tools)) + ("\n\n" + instructions if instructions else "")

    def run(self, task: str) -> str:
        """Loop until the model answers (the model's own limits stop it otherwise: they raise out of here)."""
        messages = [{"role": "system", "content": self.system}, {"role": "user", "content": task}]
        while True:
            reply = self.model.generate(messages)
            head, _, body = reply.strip().partition("\n")
            if head.startswith("FINAL"):
                answer = head.removeprefix("FINAL").strip()
                self.on_event("final", {"answer": answer, "reply": reply})
                return answer
            name = head.removeprefix("TOOL").strip() if head.startswith("TOOL") else ""
            if name not in self.tools:
                observation = f"unknown tool {name!r}: use one of {', '.join(self.tools)}, or FINAL <answer>"
                self.on_event("retry", {"reply": reply, "error": observation})
            else:
                self.on_event("tool_call", {"tool": name, "input": body, "reply": reply})
                observation = self.tools[name](body)
                self.on_event("tool_result", {"tool": name, "output": observation})
            messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": observation}]
