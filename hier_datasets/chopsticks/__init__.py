"""Chopsticks: the generator (pure numpy) and its TFDS builder."""
from hier_datasets.chopsticks.generator import VARIANTS, Chopsticks, chopsticks_hierarchy, level_start

__all__ = ["VARIANTS", "Chopsticks", "chopsticks_hierarchy", "level_start"]
from hier_datasets._tfds import tfds  # noqa: E402

if tfds is not None:
    from hier_datasets.chopsticks.builder import ChopsticksBuilder  # noqa: F401  (registers "chopsticks")

    __all__ += ["ChopsticksBuilder"]
