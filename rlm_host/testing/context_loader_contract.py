"""``ContextLoaderContract``: the test suite of context loaders (``ContextLoaderSpec``).

A loader plugin proves it keeps the contract by subclassing it in its tests::

    from rlm_host.testing import ContextLoaderContract


    class TestRtfLoader(ContextLoaderContract):
        loader = "rtf"                         # the registered name
        distribution = "rlm-context-rtf"       # RLM_PLUGINS: the distribution registering it ("" for built-ins)

        def sample(self, folder):              # write a real file of the format; return (path, a fact in it)
            ...
        def broken(self, folder):              # write a file of the format it cannot read (corrupt, encrypted)
            ...

pytest then checks: the loader is registered and built by its factory; it claims the sample's suffix; it loads
the sample into text, a JSON value or ``Documents`` holding the fact (named ``<file>#<part>`` when documents); a
broken file raises ``InputError`` naming the file; and ``rlm run --context <sample>`` with a scripted model that
searches for the fact finds it in the REPL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pytest

from rlm_host.context import Documents
from rlm_host.engine.context_loading import loader_lookup
from rlm_host.errors import InputError
from rlm_host.plugins.host import PluginHost
from rlm_host.testing.engine import isolated_runner


class ContextLoaderContract:
    """Subclass in a ``Test…`` class: set ``loader`` and ``distribution``, implement ``sample`` (and ``broken``)."""

    loader: str = ""
    distribution: str = ""

    def sample(self, folder: Path) -> tuple[Path, str]:
        """Write a file the loader reads; return its path and a short fact its text contains."""
        raise NotImplementedError("a ContextLoaderContract subclass writes a sample file")

    def broken(self, folder: Path) -> Optional[Path]:
        """A file of the format the loader must refuse with an InputError (None: no such case)."""
        return None

    @pytest.fixture
    def lookup(self, tmp_path: Path):
        host = PluginHost(environ={"RLM_PLUGINS": self.distribution})
        runner = isolated_runner(tmp_path / "home", host=host)
        return loader_lookup(host, runner.loaded, runner.home)

    def test_is_registered_and_claims_its_sample(self, tmp_path: Path, lookup) -> None:
        spec = PluginHost(environ={"RLM_PLUGINS": self.distribution}).context_loaders().get(self.loader)
        path, _ = self.sample(tmp_path)
        assert not spec.suffixes or path.name.lower().endswith(spec.suffixes), "the sample has a claimed suffix"
        chosen = lookup(path)
        factory = spec.load()
        assert chosen is not None
        if isinstance(factory, type):
            assert isinstance(chosen, factory), f"{path.name} went to another loader ({type(chosen).__name__})"

    def test_loads_the_fact(self, tmp_path: Path, lookup) -> None:
        path, fact = self.sample(tmp_path)
        loaded = lookup(path).load(path)
        assert fact in _text(loaded), f"{fact!r} not found in what the loader returned"
        if isinstance(loaded, Documents):
            assert len(loaded.names) == len(loaded) and all(n.startswith(path.name + "#") for n in loaded.names)

    def test_a_broken_file_is_one_clear_error(self, tmp_path: Path, lookup) -> None:
        path = self.broken(tmp_path)
        if path is None:
            pytest.skip("no broken file of this format")
        with pytest.raises(InputError) as raised:
            lookup(path).load(path)
        assert path.name in raised.value.message

    def test_a_run_finds_the_fact_in_the_repl(self, tmp_path: Path, monkeypatch) -> None:
        from rlm_host.engine.context_loading import load_context_with_loaders
        from rlm_host.models.scripted import ScriptedConnector

        monkeypatch.chdir(tmp_path)
        path, fact = self.sample(tmp_path)
        host = PluginHost(environ={"RLM_PLUGINS": self.distribution})
        runner = isolated_runner(tmp_path, host=host, sandbox="process")
        context = load_context_with_loaders([str(path)], host, runner.loaded, runner.home)
        code = f"text = context if isinstance(context, str) else str(context)\nprint({fact!r} in text)"
        root = ScriptedConnector.from_responses([f"```repl\n{code}\n```", "FINAL(done)"])
        result = runner.run_task("Find the fact.", context=context, connectors={"root": root, "sub": root})
        assert result.trajectory_path is not None, "the run was not recorded"
        steps = [json.loads(line) for line in Path(result.trajectory_path).read_text().splitlines()]
        output = next(e for e in steps if e["type"] == "step")["data"]["observation"]["blocks"][0]["stdout"]
        assert output.strip() == "True", output


def _text(loaded: Any) -> str:
    if isinstance(loaded, str):
        return loaded
    if isinstance(loaded, list):
        return "\n".join(_text(item) for item in loaded)
    return json.dumps(loaded, ensure_ascii=False)
