"""Stands for a heavy framework: the host must not import it until a component is used."""

import os

if os.environ.get("RLM_TEST_HEAVY_MARKER"):
    with open(os.environ["RLM_TEST_HEAVY_MARKER"], "a") as marker:
        marker.write("imported\n")


class Echo:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs
