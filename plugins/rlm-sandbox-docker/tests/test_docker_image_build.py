"""``rlm sandbox build-image`` from nothing, as a user on a fresh machine runs it: debootstrap, pack, import, and a
session in the new image runs code. The suite's own image is built only where it is missing, so without this test
a machine that already had it would never run the build (a broken import step once hid that way)."""

from __future__ import annotations

import json
import os

import pytest

from rlm_host import SandboxServices

from docker_fixtures import docker_client, docker_engine, limits  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow

TAG = "rlm-sandbox:build-check"


@pytest.mark.skipif(os.geteuid() != 0 and not os.environ.get("RLM_REQUIRE_DOCKER"), reason="debootstrap needs root")
def test_the_image_is_built_from_nothing_and_runs_a_session(docker_engine, docker_client, rlm_cli, limits):
    from rlm_sandbox_docker.runtime import create

    try:
        done = rlm_cli("sandbox", "build-image", "--tag", TAG, "--force", "--json", plugins="rlm-sandbox-docker")
        assert done.code == 0, done.err
        result = json.loads(done.out)
        assert result["tag"] == TAG and result["built"] is True and result["size_mb"] > 20
        session = create({"image": TAG}, SandboxServices(limits=limits))
        try:
            ran = session.execute("import sys\nprint(sys.version_info[0], 6 * 7)")
            assert ran.error is None and ran.stdout == "3 42\n", ran
        finally:
            session.shutdown()
    finally:
        try:
            docker_client.images.remove(TAG, force=True)
        except Exception:
            pass
