"""A registry per kind: aliases, suggestions for typos, and names claimed twice."""

import pytest

from rlm_host import EnvironmentSpec
from rlm_host.errors import ComponentClashError, UnknownComponentError
from rlm_host.plugins.registry import Registry


def make(name, *aliases):
    return EnvironmentSpec(name, f"{name} environment", "builtins:dict", aliases=aliases)


def test_get_by_name_or_alias_in_any_spelling():
    registry = Registry("environment")
    registry.add(make("pure_rlm", "pure-rlm", "rlm-pure"), "rlm-host")
    assert registry.get("PURE-RLM").name == "pure_rlm"
    assert registry.get("rlm_pure").name == "pure_rlm"
    assert registry.owner("pure-rlm") == "rlm-host"
    assert "Pure_Rlm" in registry and len(registry) == 1


def test_unknown_name_suggests_and_lists_choices():
    registry = Registry("sandbox")
    registry.add(make("monty"), "rlm-sandbox-monty")
    registry.add(make("docker"), "rlm-sandbox-docker")
    with pytest.raises(UnknownComponentError) as info:
        registry.get("dcoker")
    assert "did you mean 'docker'" in str(info.value)
    assert info.value.hint == "choose one of: monty, docker"


def test_empty_registry_says_nothing_is_installed():
    with pytest.raises(UnknownComponentError) as info:
        Registry("framework").get("dspy")
    assert info.value.hint == "no framework is installed"


def test_a_name_claimed_twice_is_refused_and_poisoned():
    registry = Registry("environment")
    assert registry.add(make("traces", "trace_analysis"), "rlm-env-traces") is None
    message, other = registry.add(make("other", "trace-analysis"), "acme-traces")
    assert other == "rlm-env-traces"
    assert "registered by both rlm-env-traces and acme-traces" in message
    assert registry.names() == ["traces"]  # the newcomer's record is not registered at all
    with pytest.raises(ComponentClashError, match="both rlm-env-traces and acme-traces"):
        registry.get("trace_analysis")
    assert registry.get("traces").name == "traces"  # names nobody else claimed still work


def test_same_distribution_registering_twice_is_reported():
    registry = Registry("environment")
    registry.add(make("x"), "acme")
    message, _ = registry.add(make("x"), "acme")
    assert message == "environment 'x' is registered twice by acme"
