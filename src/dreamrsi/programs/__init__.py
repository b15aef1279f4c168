"""Policy programs: exploration policies as code, run only in a sandboxed worker.

:func:`gate` rejects the obvious before anything runs; :class:`ProgramPolicy` runs a program
that passed in a long-lived sandboxed process behind the policy protocol; the channel's
schema is :mod:`dreamrsi.programs.wire`. See docs/dreaming.md ("Code dreaming") and
SECURITY.md ("Policy code written by a model").
"""

from dreamrsi.programs.gate import ALLOWED_IMPORTS, CLASS_NAME, gate
from dreamrsi.programs.worker import ProgramFailure, ProgramLimits, ProgramPolicy, program_digest

__all__ = ["ALLOWED_IMPORTS", "CLASS_NAME", "ProgramFailure", "ProgramLimits", "ProgramPolicy",
           "gate", "program_digest"]
