"""Programs in the store: named ``code:digest=sha256:...``, their text a blob.

A program's spec carries only its digest; the text is read back from the store's blobs and
checked against it before anything runs, online (the engine redeploys a promoted program
through the same sandboxed worker) and in later dreams. :class:`ProgramKind` is the ``code``
kind of ``policies.registry``: ``parse_spec`` reads these specs and ``open_policy`` opens
them through it.
"""

from __future__ import annotations

import re
from typing import Any

from dreamrsi.core.policy import PolicySpec
from dreamrsi.errors import ConfigError
from dreamrsi.programs.worker import ProgramLimits, ProgramPolicy, program_digest
from dreamrsi.store.base import StoreHandle

__all__ = ["CODE", "ONLINE_LIMITS", "ProgramKind", "load_program", "program_spec",
           "read_program"]

CODE = "code"
"""The name of every policy program's spec."""

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")

ONLINE_LIMITS = ProgramLimits(total_s=365 * 86400.0, cpu_s=3600, reply_s=10.0)
"""A deployed program's worker lives as long as its run; each decision still has a deadline."""


def program_spec(digest: str) -> PolicySpec:
    """The spec of the program with this digest."""
    return PolicySpec(CODE, {"digest": digest})


def read_program(store: StoreHandle, digest: object) -> str:
    """A stored program's text, checked against its digest.

    Raises:
        ConfigError: The digest is malformed, the program is missing, or its bytes do not
            match the digest.
    """
    if not isinstance(digest, str) or not digest.startswith("sha256:"):
        raise ConfigError(f"a policy program's digest must be 'sha256:...', got {digest!r}",
                          key="policy")
    try:
        data = store.blobs.get(digest.removeprefix("sha256:"))
    except (KeyError, OSError, ValueError) as exc:
        raise ConfigError(f"policy program {digest} is not in the store ({exc})",
                          key="policy") from None
    text = data.decode("utf-8", "surrogatepass")
    if program_digest(text) != digest:
        raise ConfigError(f"policy program {digest} does not match its digest", key="policy")
    return text


def load_program(store: StoreHandle, spec: PolicySpec,
                 limits: ProgramLimits = ONLINE_LIMITS) -> ProgramPolicy:
    """The program a ``code`` spec names, ready to run in its sandboxed worker.

    Raises:
        ConfigError: As :func:`read_program`, or the spec has other parameters.
        ProgramFailure: The gate refuses the program.
    """
    ProgramKind().check(spec)
    return ProgramPolicy(read_program(store, spec.params["digest"]), limits)


class ProgramKind:
    """The ``code`` kind of policy spec: a stored program, named by its digest alone and run
    in its own sandboxed worker."""

    name = CODE
    isolated = True

    def parse(self, text: str) -> PolicySpec:
        """``code:digest=sha256:HEX``.

        Raises:
            ConfigError: Another form, or a malformed digest.
        """
        key, _, digest = text.strip().partition(":")[2].partition("=")
        if key.strip() != "digest" or not _DIGEST.fullmatch(digest.strip()):
            raise ConfigError(f"bad policy program {text!r}", key="policy",
                              expected="code:digest=sha256:<64 hex digits>")
        return program_spec(digest.strip())

    def check(self, spec: PolicySpec) -> None:
        """Refuse a spec with other parameters than a well-formed digest."""
        digest = spec.params.get("digest")
        if set(spec.params) != {"digest"} or not isinstance(digest, str) \
                or not _DIGEST.fullmatch(digest):
            raise ConfigError(f"policy '{spec.label()}': a program is named by its digest "
                              "only", key="policy", expected="code:digest=sha256:...")

    def code_digest(self, spec: PolicySpec) -> str | None:
        """The program's digest."""
        return str(spec.params["digest"])

    def open(self, spec: PolicySpec, store: Any, limits: Any) -> ProgramPolicy:
        """The program in its sandboxed worker (``limits``: :data:`ONLINE_LIMITS` if
        ``None``).

        Raises:
            ConfigError: No store to read it from, or as :func:`load_program`.
            ProgramFailure: The gate refuses the program.
        """
        if store is None:
            raise ConfigError(f"policy '{spec.label()}' is a stored program: open it with "
                              "the store that holds it", key="policy")
        return load_program(store, spec, ONLINE_LIMITS if limits is None else limits)
