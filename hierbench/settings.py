"""What ``hierbench run`` does (:class:`RunSettings`), and :data:`DEFAULT_RUN`, the
embedded default benchmark. Free of the model code, so that the commands' help
shows these defaults at once (:mod:`hierbench.library_facts`)."""
from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Sequence

from hierbench import library_facts

__all__ = ["DEFAULT_RUN", "RunSettings"]


@dataclasses.dataclass
class RunSettings:
    """Everything ``hierbench run`` does; the defaults are the embedded benchmark."""

    datasets: Sequence[str] = ("chopsticks/depth2_inter",)
    models: Sequence[str] = ("AE", "BetaTCVAE", library_facts.constant(library_facts.REGISTRY, "HIERARCHICAL"))
    seeds: Sequence[int] = (0,)
    train_size: int | None = 20_000
    test_size: int | None = 5_000
    epochs: int = 10
    autoencoder_epochs: int = library_facts.constant(library_facts.REGISTRY, "AUTOENCODER_EPOCHS")
    batch_size: int = 256
    interventional_points: int = 2000
    options: Mapping[str, Mapping] = dataclasses.field(default_factory=dict)
    #: select COFHAE over the paper's 27-run grid (PAPER_GRID) instead of training it once
    grid: bool = False
    #: the same selection run as successive halving (hier_models.hierarchical.successive_halving)
    halving: bool = False
    data_dir: str | None = None
    out: str = "runs/default"
    #: a tf.distribute strategy, "mirrored" or "multiworker" (hier_models.distribute.get_strategy); None: one device
    strategy: str | None = None

    def describe(self) -> str:
        sizes = f"{self.train_size} train / {self.test_size} test" if self.train_size else "registered sizes"
        paper_grid = library_facts.constant("hier_models.hierarchical", "PAPER_GRID")
        size = math.prod(len(values) for values in paper_grid.values())
        grid = (f", COFHAE selected over the paper's {size}-run grid by successive halving" if self.halving
                else f", COFHAE selected over the paper's {size}-run grid" if self.grid else "")
        return (
            f"datasets {', '.join(self.datasets)} ({sizes}); models {', '.join(self.models)}; "
            f"seeds {', '.join(map(str, self.seeds))}; {_count(self.epochs, 'epoch')} (the smooth autoencoder "
            f"before MIMOSA {self.autoencoder_epochs}{grid}), batch {self.batch_size}; FactorVAE / beta-VAE scores "
            f"from {self.interventional_points} training votes"
            + (f"; trained under tf.distribute ({self.strategy})" if self.strategy else "")
        )


DEFAULT_RUN = RunSettings()


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")
