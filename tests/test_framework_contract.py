"""The framework contract on the host's side, through a test-only framework (tests/support/echo_framework):
the runner records a framework's steps as they happen, stops it at max_steps, keeps its trajectory."""

import pytest

from rlm_host.testing import FrameworkContract


class TestEchoFramework(FrameworkContract):
    framework = "echo"
    modules = ("support.echo_framework",)
    finishing_replies = ("x = llm_query('What is the code word? ' + context)\nprint(context.splitlines()[2], x)",
                         "ANSWER: PAPAYA")
    final_answer = "PAPAYA"
    sub_rules = ({"match": "code word", "text": "PAPAYA"},)
    working_reply = "print(len(context))"


def test_unknown_frameworks_name_the_installed_ones(rlm_cli):
    result = rlm_cli("run", "x", "--framework", "nope", "--model", "scripted:none.json")
    assert result.code == 2 and "unknown framework 'nope'" in result.err and "native" in result.err
    assert "pip install rlm-adapter-" in result.err


def test_frameworks_list_shows_native_and_the_plugins(rlm_cli, monkeypatch):
    monkeypatch.setenv("RLM_PLUGIN_MODULES", "support.echo_framework")
    result = rlm_cli("frameworks", "list")
    assert result.code == 0 and result.out.splitlines()[0].startswith("native")
    assert "echo" in result.out and "agent" in result.out


def test_a_framework_run_via_the_cli_records_a_final_step(rlm_cli, rlm_script, rlm_isolated, monkeypatch):
    monkeypatch.setenv("RLM_PLUGIN_MODULES", "support.echo_framework")
    (rlm_isolated.work / "notes.txt").write_text("hello")
    model = rlm_script(["print(context)", "ANSWER: done"])
    result = rlm_cli("run", "Say done", "--framework", "echo", "--context", str(rlm_isolated.work / "notes.txt"),
                     "--model", model, "--sandbox", "process", "--json")
    assert result.code == 0, result.err
    import json

    run = json.loads(result.out)
    assert run["framework"] == "echo" and run["final_response"] == "done" and run["steps"] == 2


@pytest.mark.parametrize("value", ["tool_call", "tool_result", "retry", "final", "model_text"])
def test_event_rewards_come_from_the_frameworks_settings(value):
    from rlm_host.config.schema import RewardProfile
    from rlm_host.frameworks.protocol import EVENT_REWARDS, FrameworkRewards, event_reward

    profile, weights = RewardProfile(final_reward=0.9), FrameworkRewards(reward_tool_call=0.5, reward_retry=-0.3)
    source = profile if value == "final" else weights
    assert event_reward(profile, value, settings=weights) == getattr(source, EVENT_REWARDS[value])
    assert event_reward(profile, "final", settings=weights) == 0.9  # [rewards] final_reward, shared
    assert event_reward(profile, "tool_result", ok=False) == FrameworkRewards().reward_tool_error == -0.05
    assert event_reward(profile, "tool_call", settings=object()) == 0.02  # settings of another shape: the defaults
    assert event_reward(profile, "no_such_kind", settings=weights) == 0.0


def test_a_framework_event_weight_is_a_setting_of_the_framework(rlm_cli, rlm_script, rlm_isolated, monkeypatch):
    """``[framework.echo] reward_tool_result`` weighs the echo framework's code steps, ``[rewards] final_reward``
    its final step, ``[rewards] global_scale`` both."""
    import json

    monkeypatch.setenv("RLM_PLUGIN_MODULES", "support.echo_framework")
    (rlm_isolated.work / "rlm.toml").write_text("[framework.echo]\nreward_tool_result = 0.4\n\n"
                                                "[rewards]\nfinal_reward = 0.8\nglobal_scale = 0.5\n")
    model = rlm_script(["print(1)", "ANSWER: done"])
    result = rlm_cli("run", "Say done", "--framework", "echo", "--model", model, "--sandbox", "process", "--json")
    assert result.code == 0, result.err
    trajectory = json.loads(result.out)["trajectory_path"]
    steps = [e["data"] for e in map(json.loads, open(trajectory)) if e["type"] == "step"]
    assert [(s["action"], s["reward"]) for s in steps] == [("run_code", 0.2), ("final", 0.4)]


def test_a_moved_framework_reward_key_names_its_new_place(rlm_cli, rlm_isolated, monkeypatch):
    monkeypatch.setenv("RLM_PLUGIN_MODULES", "support.echo_framework")
    (rlm_isolated.work / "rlm.toml").write_text("[rewards]\nframework_tool_result = 0.4\n")
    result = rlm_cli("run", "x", "--framework", "echo", "--model", "scripted:none.json", "--sandbox", "process")
    assert result.code == 2
    assert "rewards.framework_tool_result: moved to" in result.err and "[framework.echo]" in result.err
    assert "reward_tool_result" in result.err


def test_bench_runs_one_preset_through_several_frameworks_side_by_side(rlm_cli, rlm_script, rlm_isolated,
                                                                       monkeypatch):
    import json

    monkeypatch.setenv("RLM_PLUGIN_MODULES", "support.echo_framework")
    pack = rlm_isolated.work / "pack.yaml"
    pack.write_text("presets:\n  words:\n    cases:\n      - case_id: code_word\n        task: What is the code word?\n"
                    "        context: {inline: 'the code word is PAPAYA'}\n        expected: PAPAYA\n")
    model = rlm_script([], rules=[{"match": "ANSWER: text", "text": "ANSWER: PAPAYA"},
                                  {"match": ".", "text": "FINAL(PAPAYA)"}])
    result = rlm_cli("bench", "run", "--pack", str(pack), "--framework", "native,echo", "--model", model,
                     "--sandbox", "process", "--json", "--quiet", plugins="rlm-bench")
    assert result.code == 0, result.err
    rows = json.loads(result.out)["frameworks"]
    assert [(r["framework"], r["accuracy"], r["correct"]) for r in rows] == [("native", 1.0, 1), ("echo", 1.0, 1)]
    assert all(r["tokens"] > 0 and r["benchmark_id"].startswith("bench_") for r in rows)
