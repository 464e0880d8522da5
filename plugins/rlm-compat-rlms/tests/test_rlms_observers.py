"""What watches a completion: the authors' callbacks, ``RLMLogger`` (``completion.metadata`` and their JSON-lines
log) and ``verbose``, fed from the events of a real run with a child RLM (``rlm_query``)."""

from __future__ import annotations

import json

from rlm_compat_rlms import RLM
from rlm_compat_rlms.logger import RLMLogger, VerbosePrinter
from rlm_host.testing import openai_answer as answer

DELEGATE = "Delegating.\n```repl\nnote = rlm_query('Say what this is: ' + context)\nprint(note)\n```"
CHILD = "```repl\nanswer['content'] = 'a greeting'\nanswer['ready'] = True\n```"
SUBMIT = "```repl\nanswer['content'] = note\nanswer['ready'] = True\n```"


def run_with_a_child(server, kwargs_for, **options):
    server.push(answer(DELEGATE), answer(CHILD), answer(SUBMIT))
    rlm = RLM(backend="openai", backend_kwargs=kwargs_for(server, "gpt-test"), environment="process", max_depth=2,
              **options)
    return rlm.completion("hello world", "What is this?")


def test_callbacks_get_the_authors_arguments(server, kwargs_for):
    calls = []
    completion = run_with_a_child(
        server, kwargs_for,
        on_iteration_start=lambda depth, n: calls.append(("iteration_start", depth, n)),
        on_iteration_complete=lambda depth, n, seconds: calls.append(("iteration_complete", depth, n, seconds >= 0)),
        on_subcall_start=lambda depth, model, preview: calls.append(("subcall_start", depth, model, preview)),
        on_subcall_complete=lambda depth, model, secs, error: calls.append(("subcall_complete", depth, model, error)),
    )
    assert completion.response == "a greeting"
    assert calls == [("iteration_start", 0, 1), ("subcall_start", 1, "gpt-test", "Say what this is: hello world"),
                     ("iteration_start", 1, 1), ("iteration_complete", 1, 1, True),
                     ("subcall_complete", 1, "gpt-test", None), ("iteration_complete", 0, 1, True),
                     ("iteration_start", 0, 2), ("iteration_complete", 0, 2, True)]


def test_a_callback_that_raises_does_not_stop_the_run(server, kwargs_for):
    completion = run_with_a_child(server, kwargs_for, on_iteration_start=lambda depth, n: 1 / 0)
    assert completion.response == "a greeting"


def test_the_logger_keeps_the_trajectory_in_memory_and_in_the_authors_log_file(server, kwargs_for, bodies, tmp_path):
    logger = RLMLogger(log_dir=str(tmp_path / "logs"))
    completion = run_with_a_child(server, kwargs_for, logger=logger)
    trajectory = completion.metadata
    assert trajectory["run_metadata"]["root_model"] == "gpt-test" and trajectory["run_metadata"]["max_depth"] == 2
    first, second = trajectory["iterations"]
    assert first["prompt"] == bodies(server)[0]["messages"]  # the messages the model was really sent
    assert first["response"] == DELEGATE and first["final_answer"] is None
    call = first["code_blocks"][0]["result"]["rlm_calls"][0]
    assert call["response"] == "a greeting" and call["metadata"]["iterations"][0]["final_answer"] == "a greeting"
    assert second["final_answer"] == "a greeting" and second["code_blocks"][0]["result"]["final_answer"] == "a greeting"
    lines = [json.loads(line) for line in open(logger.log_file_path, encoding="utf-8")]
    assert [line["type"] for line in lines] == ["metadata", "iteration", "iteration"]
    assert "api_key" not in lines[0]["backend_kwargs"] and lines[0]["backend_kwargs"]["model_name"] == "gpt-test"


def test_the_logged_configuration_holds_no_key_and_no_url_password(rlm_isolated):
    logger = RLMLogger()
    RLM(backend="openai", backend_kwargs={"model_name": "m", "api_key": "sk-secret-1", "base_url":
        "https://user:pw-secret-2@proxy.example/v1"}, environment_kwargs={"setup_code": "token = 1"},
        environment="process", logger=logger)
    logged = json.dumps(logger.get_trajectory())
    assert "sk-secret-1" not in logged and "pw-secret-2" not in logged and "https://proxy.example/v1" in logged


def test_each_completion_starts_a_new_list_of_iterations(server, kwargs_for):
    logger = RLMLogger()
    server.push(answer(CHILD), answer(CHILD))
    rlm = RLM(backend="openai", backend_kwargs=kwargs_for(server), environment="process", logger=logger)
    assert len(rlm.completion("a").metadata["iterations"]) == 1
    assert len(rlm.completion("b").metadata["iterations"]) == 1 and logger.iteration_count == 1


def test_verbose_prints_each_iteration_on_stderr_with_control_characters_shown(server, kwargs_for, capsys):
    hostile = "```repl\nprint('\\x1b[2Jwiped')\nanswer['content'] = 'done'\nanswer['ready'] = True\n```"
    server.push(answer(hostile))
    RLM(backend="openai", backend_kwargs=kwargs_for(server), environment="process", verbose=True).completion("ctx")
    out, err = capsys.readouterr()
    assert out == "" and "── iteration 1" in err and "✓ final answer: done" in err
    assert "\x1b" not in err and "␛[2Jwiped" in err
    VerbosePrinter(enabled=False).print_final_answer("x")
    assert capsys.readouterr().err == ""
