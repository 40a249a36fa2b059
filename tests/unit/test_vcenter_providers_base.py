"""The vCenter dynamic resources share one base: one connection argument, the password secret
by the same code, and no module reaching into another's private names."""
from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pulumi.dynamic as dyn

import components.vsphere.providers as providers

PROVIDERS_DIR = Path(providers.__file__).parent


def _modules():
    names = [m.name for m in pkgutil.iter_modules([str(PROVIDERS_DIR)])]
    return [importlib.import_module(f"{providers.__name__}.{name}") for name in names]


def _defined(base: type) -> list[type]:
    """The public subclasses of ``base`` each providers module defines."""
    return [cls for module in _modules() for _, cls in inspect.getmembers(module, inspect.isclass)
            if cls.__module__ == module.__name__ and issubclass(cls, base) and not cls.__name__.startswith("_")]


def test_every_vcenter_resource_takes_the_connection_as_one_argument():
    resources = _defined(dyn.Resource)
    assert len(resources) >= 7, resources
    for cls in resources:
        parameters = inspect.signature(cls.__init__).parameters
        assert "vcenter" in parameters, f"{cls.__name__} does not take vcenter"
        assert not {"server", "user", "password", "insecure", "ca_pem", "port"} & set(parameters), cls.__name__
        assert any(base.__name__ == "VCenterResource" for base in cls.__mro__), cls.__name__


def test_every_vcenter_provider_shares_one_base():
    for cls in _defined(dyn.ResourceProvider):
        assert any(base.__name__ == "VCenterProvider" for base in cls.__mro__), cls.__name__


def test_no_providers_module_imports_another_modules_private_names():
    imported = []
    for path in sorted(PROVIDERS_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                imported += [f"{path.name}: {node.module}.{a.name}" for a in node.names
                             if a.name.startswith("_") and a.name != "__future__" and node.module != "__future__"]
    assert imported == []
