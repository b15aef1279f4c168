"""Model-driven proposers: an OpenAI-compatible client, prompts, and edits applied exactly.

The engine imports this package; it never imports the engine, dreaming or the interfaces.

- :class:`ModelClient` (``client.py``): one endpoint, weighted models, retries with backoff
  and jitter, a hard deadline per call, tokens and money per call; never raises for what an
  endpoint does.
- :class:`Proposer` (``protocol.py``): what the attempt runner asks of a proposer, a
  :class:`ProposalRequest` in and a :class:`Proposal` (with its :class:`ProposalStatus`) out.
- :class:`LlmProposer` (``proposer.py``): the ``[proposer] kind = "llm"`` of a task.
- ``edits.py``: SEARCH/REPLACE blocks and whole-file answers, confined to EVOLVE-BLOCK
  regions; ``files.py``: reading and writing workspace files without following links;
  ``prompts.py``: the templates and their placeholders.

The names below are imported when first used (PEP 562): the engine imports this package,
and a run whose proposer is a command never loads the model client (``openai``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dreamrsi._lazy import lazy_exports

if TYPE_CHECKING:
    from dreamrsi.agents.client import ChatResult, ModelCall, ModelClient
    from dreamrsi.agents.edits import Edit, EditError, apply_edits, parse_answer
    from dreamrsi.agents.proposer import LlmProposer
    from dreamrsi.agents.protocol import Proposal, ProposalRequest, ProposalStatus, Proposer

_MODULE_OF = {
    "ChatResult": "dreamrsi.agents.client",
    "ModelCall": "dreamrsi.agents.client",
    "ModelClient": "dreamrsi.agents.client",
    "Edit": "dreamrsi.agents.edits",
    "EditError": "dreamrsi.agents.edits",
    "apply_edits": "dreamrsi.agents.edits",
    "parse_answer": "dreamrsi.agents.edits",
    "LlmProposer": "dreamrsi.agents.proposer",
    "Proposal": "dreamrsi.agents.protocol",
    "ProposalRequest": "dreamrsi.agents.protocol",
    "ProposalStatus": "dreamrsi.agents.protocol",
    "Proposer": "dreamrsi.agents.protocol",
}

__all__ = [
    "ChatResult",
    "Edit",
    "EditError",
    "LlmProposer",
    "ModelCall",
    "ModelClient",
    "Proposal",
    "ProposalRequest",
    "ProposalStatus",
    "Proposer",
    "apply_edits",
    "parse_answer",
]


__getattr__ = lazy_exports(__name__, _MODULE_OF)
