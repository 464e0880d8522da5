"""``BenchmarkPackContract``: the test suite of the benchmark pack contract (``rlm_register_benchmark_packs``).

A pack plugin proves its presets are usable benchmarks by subclassing it in its tests::

    from rlm_host.testing import BenchmarkPackContract


    class TestMyPacks(BenchmarkPackContract):
        distribution = "rlm-bench-mine"        # RLM_PLUGINS: the distribution registering the packs
        packs = ("legal_qa", "contracts_long")  # every pack it registers

        def check_case(self, pack, case):       # optional: what only this plugin knows of a case
            assert case["expected"] in case["context"]["text"]

pytest then builds every pack through its registered factory, ``factory(settings, HostServices(home))``, and
checks what any benchmark runner relies on: the distribution registers exactly these packs, each is ready;
each pack builds a non-empty list of cases, as dicts or pydantic models; every case has a ``case_id`` unique in
its pack, a ``task`` (or a ``context`` that brings one: a generated one carries its question) and an
``expected`` answer (a preset without answers is not a benchmark); cases are JSON data, so results can be stored
and compared; and building a pack twice gives the same cases (a benchmark must be reproducible).
Real example: ``plugins/rlm-bench/tests/test_packs_contract.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlm_host.components import BenchmarkPackSpec
from rlm_host.plugins.host import PluginHost
from rlm_host.services import HostServices


def case_data(case: Any) -> dict[str, Any]:
    """A case as plain JSON data: a dict as it is, a pydantic model through ``model_dump(mode="json")``."""
    if isinstance(case, dict):
        return case
    dump = getattr(case, "model_dump", None)
    if dump is None:
        raise AssertionError(f"a case must be a dict or a pydantic model, got {type(case).__name__}")
    data: dict[str, Any] = dump(mode="json")
    return data


class BenchmarkPackContract:
    """Subclass in a ``Test…`` class and set ``distribution`` and ``packs``."""

    distribution: str = ""
    packs: tuple[str, ...] = ()

    def settings(self, pack: str) -> Any:
        """The ``[benchmark.<pack>]`` settings a pack is built with (default: its model's defaults, or None)."""
        model = self._host().benchmark_packs().get(pack).settings_model()
        return model() if model is not None else None

    def check_case(self, pack: str, case: dict[str, Any]) -> None:
        """Assert what only this plugin knows of a case (its answer checkable against its data, say)."""

    # ------------------------------------------------------------------ helpers

    def _host(self) -> PluginHost:
        return PluginHost(environ={"RLM_PLUGINS": self.distribution}).load()

    def _spec(self, pack: str) -> BenchmarkPackSpec:
        spec: BenchmarkPackSpec = self._host().benchmark_packs().get(pack)
        return spec

    def build(self, pack: str, home: Path) -> list[dict[str, Any]]:
        """The pack's cases, built as a benchmark runner builds them, as JSON data."""
        cases = self._spec(pack).create(self.settings(pack), HostServices(home=home))
        assert isinstance(cases, list), f"pack {pack!r}: the factory returned {type(cases).__name__}, not a list"
        return [case_data(case) for case in cases]

    # ------------------------------------------------------------------ the contract

    def test_the_distribution_registers_exactly_these_packs(self) -> None:
        assert self.packs, "set `packs` to the names of the packs the distribution registers"
        registry = self._host().benchmark_packs()
        mine = {spec.name for spec in registry if registry.owner(spec.name) == self.distribution}
        assert mine == set(self.packs)

    def test_every_pack_is_ready(self) -> None:
        for pack in self.packs:
            readiness = self._spec(pack).readiness(self.settings(pack))
            assert readiness.ok, f"pack {pack!r}: {readiness.detail}"

    def test_every_case_has_an_id_a_task_and_an_answer(self, tmp_path: Path) -> None:
        for pack in self.packs:
            cases = self.build(pack, tmp_path)
            assert cases, f"pack {pack!r} has no case"
            ids = [case.get("case_id") for case in cases]
            assert all(isinstance(i, str) and i for i in ids), f"pack {pack!r}: every case needs a case_id: {ids}"
            assert len(set(ids)) == len(ids), f"pack {pack!r}: case ids repeat: {sorted(str(i) for i in ids)}"
            for case in cases:
                where = f"pack {pack!r} case {case['case_id']!r}"
                assert case.get("expected") is not None, f"{where}: no expected answer"
                assert case.get("task") or case.get("context"), f"{where}: neither a task nor a context"
                self.check_case(pack, case)

    def test_cases_are_json_data(self, tmp_path: Path) -> None:
        for pack in self.packs:
            for case in self.build(pack, tmp_path):
                assert json.loads(json.dumps(case)) == case, f"pack {pack!r} case {case.get('case_id')!r}"

    def test_building_a_pack_twice_gives_the_same_cases(self, tmp_path: Path) -> None:
        for pack in self.packs:
            assert self.build(pack, tmp_path / "a") == self.build(pack, tmp_path / "b"), f"pack {pack!r}"
