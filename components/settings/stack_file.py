"""A stack's settings read from its file alone, as the commands that need no Pulumi CLI read them.

``Pulumi.<stack>.yaml`` beside ``Pulumi.yaml`` holds what a stack sets; ``Pulumi.yaml``
declares every setting and its default (``schema``). Reading the file needs no CLI, backend,
secret or network, so a person checks a stack before any of those is set up.

``pulumi config set --secret`` writes a secret into the stack file encrypted, as
``{secure: <ciphertext>}``. It is never decrypted here: a placeholder stands for it, so a
secret that is set counts as present and no secret is read or printed.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from components.settings import DictSource
from components.settings.build import RENAMED
from components.settings.errors import Problem
from components.settings.schema import project

REPO = Path(__file__).resolve().parents[2]
SECRET_PLACEHOLDER = "(a secret: not read)"  # noqa: S105 (what stands in a secret's place)
PROVIDER_SECRETS = ("vsphere:password",)  # the provider's keys the settings read as secrets


class StackFileError(ValueError):
    """A stack that cannot be read: its message is one line, naming the file."""


def stack_names(folder: Path) -> list[str]:
    """The stacks whose files lie in ``folder`` (``Pulumi.<name>.yaml``)."""
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))


def stack_path(folder: Path, name: str) -> Path:
    """``Pulumi.<name>.yaml`` in ``folder``; an unknown stack names the stacks there are."""
    path = folder / f"Pulumi.{name}.yaml"
    if not path.is_file():
        there = ", ".join(stack_names(folder)) or "none"
        raise StackFileError(f"no stack {name!r} in {folder}: no Pulumi.{name}.yaml there (its stacks: {there})")
    return path


def stack_config(path: Path) -> dict[str, Any]:
    """The ``config:`` block of a stack file, as written (secrets still encrypted)."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise StackFileError(f"{path.name}: not valid YAML{where} ({getattr(exc, 'problem', None) or exc})") from None
    except OSError as exc:
        raise StackFileError(f"{path.name}: cannot be read ({exc.strerror or exc})") from None
    config = doc.get("config") if isinstance(doc, dict) else None
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise StackFileError(f"{path.name}: config must be a mapping of key: value, got {type(config).__name__}")
    return config


def is_secret(value: object) -> bool:
    """An encrypted value (``pulumi config set --secret``): present, never read here."""
    return isinstance(value, dict) and "secure" in value


def split(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The project's settings (without the ``<project>:`` prefix) and the providers' keys."""
    name = project()[0]
    own: dict[str, Any] = {}
    provider: dict[str, Any] = {}
    for key, value in config.items():
        namespace, sep, rest = str(key).partition(":")
        if not sep or namespace == name:
            own[rest if sep else namespace] = value
        else:
            provider[str(key)] = value
    return own, provider


def stack_source(config: Mapping[str, Any], assume: Iterable[str] = ()) -> DictSource:
    """The settings' source for a stack's ``config:``: each secret a placeholder, and so is each
    key of ``assume`` (secrets a caller takes as set; a project key, or a provider's ``ns:key``)."""
    own, provider = split(config)
    placeholders = dict.fromkeys(assume, SECRET_PLACEHOLDER)
    own = {**{k: SECRET_PLACEHOLDER if is_secret(v) else v for k, v in own.items()},
           **{k: v for k, v in placeholders.items() if ":" not in k}}
    provider = {**{k: SECRET_PLACEHOLDER if is_secret(v) else v for k, v in provider.items()},
                **{k: v for k, v in placeholders.items() if ":" in k}}
    return DictSource(own, provider)


def undeclared(config: Mapping[str, Any]) -> list[Problem]:
    """The project's keys that ``Pulumi.yaml`` does not declare: the Pulumi CLI refuses a stack
    that sets one (a misspelt setting would otherwise be left out without a word)."""
    name, declared = project()
    out = []
    for key in split(config)[0]:
        if key in declared or key in RENAMED:
            continue
        close = difflib.get_close_matches(key, declared, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        out.append(Problem(key, f"is not a setting of {name} (Pulumi.yaml declares none by that name, and pulumi"
                                f" preview refuses the stack){hint}"))
    return out
