"""The template's environment, provider and framework, each run by the host's contract suite of its kind
through the plugin's real entry point (``pip install -e .`` first)."""

from rlm_host.testing import Behaviour, EnvironmentContract, FakeHTTPServer, FrameworkContract, ProviderContract

PLUGIN = "rlm-plugin-template"


class TestLinesEnvironment(EnvironmentContract):
    """Replies are ``RUN: <python>`` or ``ANSWER: <text>``; the suite drives it step by step, then through the
    real runner, in the ``process`` sandbox with scripted models."""

    environment = "plugin-template-lines"
    distribution = PLUGIN
    working_reply = "RUN: print(len(context))"
    final_reply = "ANSWER: 42"
    final_answer = "42"


class OllamaServer(FakeHTTPServer):
    """Ollama's chat API on 127.0.0.1: ``POST /api/chat`` answers with the queued behaviours."""

    thread_name = "ollama-test-server"

    def route(self, request):
        if request.path != "/api/chat" or request.body is None:
            return Behaviour(404, {"error": f"test server: no route {request.path}"})
        return None


class TestOllamaProvider(ProviderContract):
    """Answers, usage, malformed bodies, retries (429 with Retry-After, 5xx, timeouts, cut bodies), errors that
    are not retried, keys read from OLLAMA_API_KEY and never printed, the reply format, settings: against a fake
    Ollama server."""

    provider = "plugin-template-ollama"
    distribution = PLUGIN
    model = "gpt-oss:120b"
    key_help = "OLLAMA_API_KEY"
    context_windows = {"gpt-oss:120b": 131_072, "llama3.2:1b": 131_072, "mistral": None}
    lazy_modules = ("httpx",)
    fake_server = OllamaServer

    def answer(self, text, usage=(11, 7)):
        body = {"model": self.model, "message": {"role": "assistant", "content": text}, "done": True,
                "done_reason": "stop"}
        if usage is not None:
            body.update(prompt_eval_count=usage[0], eval_count=usage[1])
        return Behaviour(body=body)

    def error(self, status, message):
        return Behaviour(status, {"error": message})

    def malformed_answers(self):
        return [(Behaviour(body={"model": self.model, "done": True}), "no 'message' in response"),
                (Behaviour(body={"message": {"role": "assistant", "content": ""}}),
                 "message.content is empty")]

    def sent_key(self, request):
        return request.headers["authorization"].removeprefix("Bearer ")


class TestTinyAgentFramework(FrameworkContract):
    """The framework through the real runner with scripted models: the answer, its steps in order, the code run in
    the sandbox with ``context`` and ``llm_query``, ``max_steps``, a failing model."""

    framework = "plugin-template-agent"
    distribution = PLUGIN
    heavy_modules = ("rlm_plugin_template.tiny_agent",)  # the framework: never imported when `rlm` starts
    finishing_replies = ("TOOL run_code\nword = llm_query('The code word?')\nprint(context.splitlines()[2], word)",
                         "FINAL PAPAYA")
    final_answer = "PAPAYA"
    sub_rules = ({"match": "code word", "text": "it is PAPAYA"},)
    working_reply = "TOOL run_code\nprint(len(context))"
