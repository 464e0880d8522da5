"""Errors that say what to type: ``--env dspy`` without a ready boundary that can mount a folder names
``--sandbox process`` (and that it is no security boundary), and a misspelt framework gets "did you mean"."""

MONTY = "rlm-sandbox-monty"


def test_env_dspy_in_the_default_setup_says_which_sandbox_flag_to_pass(rlm):
    result = rlm("run", "fix the bug", "--env", "dspy", "--model", "scripted:x.json",
                 plugins=[MONTY, "rlm-env-dspy"])
    assert result.returncode == 2, result.stderr
    assert "no sandbox that can mount the dspy environment's project folder is ready" in result.stderr
    assert "hint: pass --sandbox process (NOT a security boundary)" in result.stderr


def test_a_misspelt_framework_gets_did_you_mean(rlm):
    result = rlm("run", "q", "--framework", "natve", "--model", "scripted:x.json", plugins=[])
    assert result.returncode == 2
    assert "unknown framework 'natve' (did you mean 'native'?)" in result.stderr
    assert "choose one of: native" in result.stderr
