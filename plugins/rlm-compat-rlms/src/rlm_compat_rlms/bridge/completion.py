"""One ``completion`` of an authors'-style ``RLM``, as an rlm run: the clients ``get_client`` gave become the run's
root and sub connectors, the ``rlms`` loop runs in the planned sandbox with the completion's ``Turn`` as its carry,
the events feed the callbacks, logger and printer, and the result becomes rlms' answer or exception. The run is
recorded like any rlm run (``.rlm/runs``, sinks, ``rlm runs show``): ``RLMChatCompletion.run`` says where."""

from __future__ import annotations

import sys
import time
from typing import Any, Optional

from rlm_compat_rlms.bridge.connectors import connector_of
from rlm_compat_rlms.bridge.outcome import outcome, usage_summary
from rlm_compat_rlms.bridge.recorder import Callbacks, Recorder
from rlm_compat_rlms.core.types import RLMChatCompletion
from rlm_compat_rlms.loop.turn import Turn

#: The question a run records when the caller gave none (the model is shown none, as in rlms).
NO_QUESTION = "Answer the request contained in the context."


def run_completion(front: Any, prompt: Any, root_prompt: Optional[str], root_client: Any,
                   sub_client: Any) -> RLMChatCompletion:
    """Run ``front`` (an ``RLM``) over ``prompt`` with these clients; its answer, or rlms' exception."""
    from rlm_host.sdk.embedding import RLM as Engine

    plan, loaded, host = front._plan, front._loaded, front._host
    persistent = front._persistent_env
    if persistent is not None:
        persistent.add_context(prompt)
        turn = persistent.turn(root_prompt, plan.setup_code)
    else:
        turn = Turn(question=root_prompt, setup_code=plan.setup_code)
    home = front._home
    connectors = {"root": connector_of(root_client, front._label(0), host, loaded, home),
                  "sub": connector_of(sub_client, front._label(1), host, loaded, home)}
    if sub_client is root_client:
        connectors["sub"] = connectors["root"]
    root_model = _model_name(front.backend_kwargs, connectors["root"])
    sub_model = _model_name(front.other_backend_kwargs[0], connectors["sub"]) if front.other_backends else root_model
    engine = Engine(settings=loaded, connectors=connectors, home=home)
    callbacks = Callbacks(front.on_subcall_start, front.on_subcall_complete, front.on_iteration_start,
                          front.on_iteration_complete)
    recorder = Recorder(turn=turn, callbacks=callbacks, model=root_model, logger=front.logger,
                        printer=front.verbose)
    if plan.notice and not front._noticed:
        front._noticed = True
        sys.stderr.write(f"! {plan.notice}\n")
    started = time.perf_counter()
    try:
        result = engine.completion(prompt, root_prompt or NO_QUESTION, on_event=recorder, carry=turn)
    finally:
        recorder.finish()
    seconds = time.perf_counter() - started
    if persistent is not None:
        persistent.keep(turn)
    usage = usage_summary(result, root_model, sub_model)
    metadata = front.logger.get_trajectory() if front.logger is not None else None
    try:
        answer = outcome(result, prompt=prompt, root_model=root_model, usage=usage, seconds=seconds,
                         partial_answer=turn.partial_answer, error_streak=turn.error_streak,
                         limits=engine.loaded.settings.run, metadata=metadata)
    except Exception as exc:
        front.verbose.print_limit_exceeded(result.termination_reason, str(exc))
        raise
    front.verbose.print_final_answer(answer.response)
    front.verbose.print_summary(result.steps, seconds, usage.to_dict())
    return answer


def _model_name(kwargs: dict[str, Any], connector: Any) -> str:
    """The model's name as rlms reports it: ``model_name`` as given, else the bare name rlm resolved."""
    return str(kwargs.get("model_name") or connector.name.partition(":")[2] or connector.name)


__all__ = ["run_completion", "NO_QUESTION"]
