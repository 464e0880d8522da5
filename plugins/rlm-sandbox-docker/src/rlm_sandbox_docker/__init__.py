"""rlm-sandbox-docker: model-written code runs in a hardened, persistent Docker container.

Modules: ``hooks`` (registration, imports rlm_host only), ``settings`` (``[sandbox.docker]``), ``engine``
(connecting, image checks, labels, stale-container cleanup), ``channel`` (JSON lines over the attach socket),
``runtime`` (the session), ``checks`` (readiness), ``image`` and ``commands`` (``rlm sandbox build-image``,
``rlm sandbox cleanup``), ``provision`` (a missing image built when a session needs it: ``build_missing``) and
``build_view`` (its question and progress on stderr).
"""

PLUGIN_NAME = "rlm-sandbox-docker"
DEFAULT_IMAGE = "rlm-sandbox:py3"
#: Images with extra Python packages (``rlm sandbox build-image --with …``) are tagged ``rlm-sandbox:py-<hash>``.
DERIVED_REPOSITORY = "rlm-sandbox"
#: Every container this plugin creates carries this label (``rlm sandbox cleanup`` looks for it).
LABEL = "rlm.sandbox"
BUILD_HINT = "run `rlm sandbox build-image` (or set [sandbox.docker] image to one you can pull)"
#: What the runtime isolates, said once: in its registration (listings) and in its session's info (the prompt).
ISOLATION = "Docker container: no network, read-only root, non-root user, no capabilities"
ENGINE_HINT = ("start it (`sudo systemctl start docker`, or as root `scripts/docker-engine.sh` from the rlm "
               "repository), or point DOCKER_HOST at a running engine")
