"""Importing a module whose extra is not installed names the extra to install."""

from __future__ import annotations

import importlib
import sys

import pytest


@pytest.mark.parametrize("module, dependency, extra", [
    ("vecsim.trainers.sb3", "stable_baselines3", "train"),
    ("vecsim.gym.pettingzoo", "pettingzoo", "pettingzoo"),
])
def test_a_module_without_its_extra_names_the_extra(monkeypatch, module, dependency, extra):
    monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setitem(sys.modules, dependency, None)  # as if not installed
    with pytest.raises(ModuleNotFoundError, match=rf'{module} needs {dependency}, which is not installed: '
                                                   rf'pip install "vecsim\[{extra}\]"') as info:
        importlib.import_module(module)
    assert info.value.name == dependency


def test_the_ray_collector_without_ray_names_the_extra(monkeypatch):
    from vecsim.distributed import collector

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ModuleNotFoundError, match=r'the Ray collector needs ray, which is not installed: '
                                                   r'pip install "vecsim\[ray\]"'):
        collector._import_ray()
