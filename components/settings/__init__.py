"""Settings: the only reader of ``pulumi.Config``.

``load_settings()`` reads every key declared in ``Pulumi.yaml`` once, validates it, and
returns a frozen ``Settings``. A bad value raises ``SettingsError`` naming the key, so it
fails at ``pulumi preview``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.settings.build import load
from components.settings.errors import Problem, SettingsError
from components.settings.model import POOL_ROLE_LABEL, Settings

__all__ = [
    "POOL_ROLE_LABEL",
    "DictSource",
    "Problem",
    "PulumiSource",
    "Settings",
    "SettingsError",
    "load",
    "load_settings",
]


class PulumiSource:
    """Reads the running Pulumi program's config (project keys and provider keys)."""

    def __init__(self) -> None:
        import pulumi

        self._pulumi = pulumi
        self._project = pulumi.Config()

    def get(self, key: str) -> Any | None:
        return self._project.get(key)

    def get_secret(self, key: str) -> Any | None:
        return self._project.get_secret(key)

    def provider(self, namespace: str, key: str, secret: bool = False) -> Any | None:
        config = self._pulumi.Config(namespace)
        return config.get_secret(key) if secret else config.get(key)


class DictSource:
    """Settings from plain dicts (unit tests, tools): project keys without the project
    prefix, provider keys as ``namespace:key``."""

    def __init__(self, values: Mapping[str, Any], provider: Mapping[str, Any] | None = None):
        self._values = dict(values)
        self._provider = dict(provider or {})

    def get(self, key: str) -> Any | None:
        return self._values.get(key)

    def get_secret(self, key: str) -> Any | None:
        return self._values.get(key)

    def provider(self, namespace: str, key: str, secret: bool = False) -> Any | None:
        return self._provider.get(f"{namespace}:{key}")


def load_settings() -> Settings:
    """Settings of the running Pulumi program."""
    return load(PulumiSource())
