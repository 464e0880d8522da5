"""The authors' ``rlm.core``: the ``RLM`` class (``rlm.core.rlm``) and its records (``rlm.core.types``)."""
