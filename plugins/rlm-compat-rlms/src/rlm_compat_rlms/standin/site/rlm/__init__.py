"""A stand-in for the authors' ``rlm`` package: with this folder's parent on ``PYTHONPATH`` (``python -m
rlm_compat_rlms.standin`` prints it), ``import rlm`` and every ``rlm.…`` module are rlm_compat_rlms's. It refuses
to load when the authors' package is installed (further down the path)."""

from rlm_compat_rlms.standin import install_as_rlm

install_as_rlm()
