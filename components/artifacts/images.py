"""Image references as a registry resolves them: ``name[:tag][@sha256:<64 hex>]``.

A tag is a name the registry may point elsewhere tomorrow; a digest names the bytes. Both
may be given (``python:3.12.13-slim-trixie@sha256:...``): the runtime pulls by the digest and
the tag stays for the reader. The digest of an official Docker image is the multi-platform
index digest that docker-library/repo-info records per tag (``repos/<image>/remote/<tag>.md``,
"docker pull <image>@sha256:...").
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class ImageRef:
    repository: str  # registry/path/name, a registry's :port included
    tag: str | None
    digest: str | None  # sha256:<64 hex>

    @classmethod
    def parse(cls, text: str) -> ImageRef:
        name, at, digest = text.partition("@")
        if at and not _DIGEST.match(digest):
            raise ValueError("a digest must be @sha256: and 64 lower-case hex digits")
        repository, colon, tag = name.rpartition(":")
        if not colon or "/" in tag:  # no tag: the last ':' (if any) belongs to a registry's port
            repository, tag = name, ""
        return cls(repository, tag or None, digest or None)

    @property
    def tag_and_digest(self) -> str:
        """What follows ``repository:`` where a chart joins the two with a colon."""
        return f"{self.tag or ''}{'@' + self.digest if self.digest else ''}"
