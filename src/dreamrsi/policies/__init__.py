"""Built-in exploration policies and the registry that finds them by name."""

from dreamrsi.policies.fixed_refinement import FixedRefinement
from dreamrsi.policies.registry import available, make_policy, parse_spec

__all__ = ["FixedRefinement", "available", "make_policy", "parse_spec"]
