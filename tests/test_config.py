"""Layered settings: precedence, provenance, and errors that name the file or variable and the key."""

import json
from pathlib import Path

import pytest

from support import GOOD
from rlm_host.config import load_settings
from rlm_host.errors import ConfigError
from rlm_host.plugins.host import PluginHost


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def dirs(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    return home, work


def load(home, work, env=None, **kw):
    """Settings as read in ``work``, its project file trusted (tests/security/test_trust_boundaries.py covers an
    untrusted one)."""
    environ = {"HOME": str(home), "RLM_TRUST_CONFIG": "1", **(env or {})}
    return load_settings(environ=environ, cwd=work, **kw)


def test_defaults_when_nothing_is_configured(dirs):
    loaded = load(*dirs)
    assert loaded.settings.run.max_steps == 8
    assert loaded.source_of("run.max_steps") == "default"
    assert loaded.files == []


def test_each_source_overrides_the_weaker_ones(dirs):
    home, work = dirs
    user = write(home / ".config" / "rlm" / "config.toml", "[run]\nmax_steps = 3\nmax_depth = 1\ntimeout = 5\n")
    project = write(work / "rlm.toml", "[run]\nmax_steps = 4\nmax_depth = 3\n")
    loaded = load(
        home,
        work,
        env={"RLM_RUN__MAX_STEPS": "5"},
        overrides={"run.environment": ("generic", "flag --env"), "run.model": (None, "flag --model")},
    )
    run = loaded.settings.run
    assert (run.max_steps, run.max_depth, run.timeout, run.environment, run.model) == (5, 3, 5.0, "generic", "auto")
    assert loaded.source_of("run.max_steps") == "env RLM_RUN__MAX_STEPS"
    assert loaded.source_of("run.max_depth") == f"project file {project}"
    assert loaded.source_of("run.timeout") == f"user file {user}"
    assert loaded.source_of("run.environment") == "flag --env"
    assert loaded.source_of("run.model") == "default"  # a flag left unset does not count
    assert loaded.files == [user, project]


def test_explicit_config_file_replaces_the_project_file(dirs, tmp_path):
    home, work = dirs
    write(work / "rlm.toml", "[run]\nmax_steps = 4\n")
    other = write(tmp_path / "other.toml", "[run]\nmax_steps = 9\n")
    assert load(home, work, config_file=other).settings.run.max_steps == 9
    with pytest.raises(ConfigError, match="config file not found"):
        load(home, work, config_file=tmp_path / "missing.toml")


def test_tool_rlm_in_pyproject_is_the_project_file_unless_rlm_toml_exists(dirs, tmp_path):
    home, work = dirs
    pyproject = write(work / "pyproject.toml", "[project]\nname = 'x'\n\n[tool.rlm.run]\nmax_steps = 6\n")
    loaded = load(home, work)
    assert loaded.settings.run.max_steps == 6 and loaded.files == [pyproject]
    assert loaded.source_of("run.max_steps") == f"project file {pyproject}"
    write(work / "rlm.toml", "[run]\nmax_depth = 3\n")  # rlm.toml wins as a whole, as ruff.toml does for ruff
    assert load(home, work).settings.run.max_steps == 8
    assert load(home, work, config_file=pyproject).settings.run.max_steps == 6  # --config pyproject.toml too
    write(work / "pyproject.toml", "[tool.rlm.run]\nmax_step = 6\n")
    (work / "rlm.toml").unlink()
    with pytest.raises(ConfigError, match=r"pyproject.toml: run.max_step: unknown key \(did you mean 'max_steps'\?\)"):
        load(home, work)


def test_a_pyproject_without_tool_rlm_is_not_a_config_file(dirs):
    home, work = dirs
    write(work / "pyproject.toml", "[project]\nname = 'x'\n")
    assert load(home, work).files == []


def test_rlm_home_and_xdg_config_home(dirs, tmp_path):
    home, work = dirs
    write(tmp_path / "xdg" / "rlm" / "config.toml", "[paths]\nhome = '/from/xdg'\n")
    loaded = load(home, work, env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert str(loaded.settings.paths.home) == "/from/xdg"
    loaded = load(home, work, env={"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "RLM_HOME": "/from/env"})
    assert str(loaded.settings.paths.home) == "/from/env"
    assert loaded.source_of("paths.home") == "env RLM_HOME"


def test_unknown_key_names_the_file_and_suggests(dirs):
    home, work = dirs
    project = write(work / "rlm.toml", "[run]\nmax_step = 4\n")
    with pytest.raises(ConfigError) as info:
        load(home, work)
    assert str(info.value) == f"project file {project}: run.max_step: unknown key (did you mean 'max_steps'?)"


def test_unknown_section_lists_known_keys(dirs):
    home, work = dirs
    write(work / "rlm.toml", "[runn]\nx = 1\n")
    with pytest.raises(ConfigError, match="runn: unknown key \\(did you mean 'run'\\?\\)"):
        load(home, work)


def test_bad_value_from_env_names_the_variable(dirs):
    with pytest.raises(ConfigError) as info:
        load(*dirs, env={"RLM_RUN__MAX_STEPS": "0"})
    assert str(info.value).startswith("env RLM_RUN__MAX_STEPS: run.max_steps: Input should be greater than")


def test_invalid_toml_is_reported_with_its_path(dirs):
    home, work = dirs
    project = write(work / "rlm.toml", "[run\n")
    with pytest.raises(ConfigError, match=f"{project}: not valid TOML"):
        load(home, work)


@pytest.mark.usefixtures("use_plugin_site")
class TestPluginSections:
    def host(self):
        return PluginHost(environ={"RLM_PLUGINS": GOOD})

    def test_plugin_section_is_validated_by_its_own_model(self, dirs):
        home, work = dirs
        write(work / "rlm.toml", "[sandbox.test-box]\nmemory_mb = 512\n")
        loaded = load(home, work, env={"RLM_SANDBOX__TEST-BOX__NETWORK": "true"}, host=self.host())
        box = loaded.component("sandbox", "test-box")
        assert (box.memory_mb, box.network) == (512, True)
        assert loaded.source_of("sandbox.test-box.network") == "env RLM_SANDBOX__TEST-BOX__NETWORK"

    def test_env_spelling_with_underscores_merges_into_the_same_section(self, dirs):
        home, work = dirs
        write(work / "rlm.toml", "[sandbox.test-box]\nmemory_mb = 512\nnetwork = false\n")
        loaded = load(home, work, env={"RLM_SANDBOX__TEST_BOX__NETWORK": "1"}, host=self.host())
        box = loaded.component("sandbox", "test-box")
        assert (box.memory_mb, box.network) == (512, True)

    def test_components_without_a_section_get_their_defaults(self, dirs):
        loaded = load(*dirs, host=self.host())
        assert loaded.component("sandbox", "test-box").memory_mb == 256
        rows = {key: (value, source) for key, value, source in loaded.rows(all_components=True)}
        assert rows["sandbox.test-box.memory_mb"] == (256, "default")
        assert "sandbox.test-box.memory_mb" not in {key for key, _, _ in loaded.rows()}  # unconfigured: hidden

    def test_bad_value_in_plugin_section_names_file_and_key(self, dirs):
        home, work = dirs
        project = write(work / "rlm.toml", "[sandbox.test-box]\nmemory_mb = 1\n")
        with pytest.raises(ConfigError) as info:
            load(home, work, host=self.host())
        assert str(info.value).startswith(f"project file {project}: sandbox.test-box.memory_mb: Input should be")

    def test_unknown_key_in_plugin_section_suggests(self, dirs):
        home, work = dirs
        write(work / "rlm.toml", "[sandbox.test-box]\nmemory = 1\n")
        with pytest.raises(ConfigError, match="sandbox.test-box.memory: unknown key \\(did you mean 'memory_mb'"):
            load(home, work, host=self.host())

    def test_section_for_a_component_that_is_not_installed(self, dirs):
        home, work = dirs
        write(work / "rlm.toml", "[sandbox.dockr]\nmemory = '1g'\n")
        with pytest.raises(ConfigError) as info:
            load(home, work, host=self.host())
        assert "[sandbox.dockr]: unknown sandbox 'dockr'" in str(info.value)
        assert info.value.hint == "choose one of: process, test-box"

    def test_section_for_a_component_without_settings(self, dirs):
        home, work = dirs
        write(work / "rlm.toml", "[sink.test-sink]\nlevel = 1\n")
        with pytest.raises(ConfigError, match="this sink takes no settings"):
            load(home, work, host=self.host())


def test_config_show_prints_values_and_sources(rlm, tmp_path):
    (tmp_path / "work" / "rlm.toml").write_text("[run]\nmax_steps = 4\n[sandbox.test-box]\nnetwork = true\n")
    assert rlm("config", "trust", plugins=[GOOD]).returncode == 0  # the project's own sandbox settings apply
    result = rlm("config", "show", "--json", plugins=[GOOD], env={"RLM_RUN__TIMEOUT": "12.5"})
    assert result.returncode == 0, result.stderr
    settings = json.loads(result.stdout)["settings"]
    assert settings["run.max_steps"]["value"] == 4
    assert settings["run.max_steps"]["source"].startswith("project file ")
    assert settings["run.timeout"] == {"value": 12.5, "source": "env RLM_RUN__TIMEOUT"}
    assert settings["sandbox.test-box.network"]["value"] is True
    assert settings["sandbox.test-box.memory_mb"] == {"value": 256, "source": "default"}  # its section is set
    text = rlm("config", "show", plugins=[GOOD]).stdout
    assert "run.max_steps" in text and "# project file" in text


def test_config_show_lists_every_documented_key_even_empty(rlm, tmp_path):
    """``rlm config show`` hid the documented keys whose value is empty (labels, sub_sampling,
    approval_rules), though each is a setting one may look for; component kinds with no section stay out."""
    result = rlm("config", "show", "--json", plugins=[])
    assert result.returncode == 0, result.stderr
    settings = json.loads(result.stdout)["settings"]
    for key in ("run.labels", "run.sub_sampling", "run.approval_rules"):
        assert settings[key] == {"value": {}, "source": "default"}, key
    assert "sandbox" not in settings and "environment" not in settings
    text = rlm("config", "show", plugins=[]).stdout
    assert "run.labels" in text and "run.approval_rules" in text


def test_config_errors_exit_nonzero_with_one_line(rlm, tmp_path):
    (tmp_path / "work" / "rlm.toml").write_text("[run]\nmax_steps = 'ten'\n")
    result = rlm("config", "show", plugins=[])
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: project file ")
    assert "Traceback" not in result.stderr
