"""The Boxhead paper's training protocol (Chen et al. 2022, section 5 and appendix B).

The paper compares beta-VAE, beta-TCVAE, pro-VLAE and pro-LVAE under one protocol:

- 12 latent variables for every model; the ladders have 3 layers of 4;
- equivalent networks for single-layer and ladder models, at two capacities
  (appendix B.2, tables 1-4; :data:`hier_models.architectures.CAPACITIES`);
- the KL weight of the single-layer models annealed over 10,000 steps; the top layer
  of the ladders over 5,000 steps, while each of the two lower layers fades in over
  5,000 steps after it (layer 2 over steps 5,000-10,000, layer 1 over 10,000-15,000).

The paper does not give its optimiser, batch size or length of training; the
authors' code trains every model with Adamax (the infinity-norm variant of Adam,
Kingma & Ba 2015, section 7.1) at learning rate 3e-4 on batches of 32 for 200,000
steps, which :data:`LEARNING_RATE`, :data:`BATCH_SIZE` and :data:`PAPER_TRAINING_STEPS`
record.

Direction of the annealing. The paper anneals beta as "annealing the constraint on
the capacity" (section 2, after Burgess et al. 2018; section 5), and the authors'
jobs do it from a high start value down to beta, linearly from step 0:
``beta_t = beta_0 + (beta - beta_0) * min(1, t / T)`` with ``beta_0 = 200``,
``T = 10,000`` for beta-VAE and beta-TCVAE and ``beta_0 = 150``, ``T = 5,000`` for
the ladders' top layer, whose lower layers keep beta (the weight ``gamma`` before
they fade in). The protocol passes these start values as ``beta_start``
(:data:`BETA_START`); the models' own default (``beta_start=None``) is a warm-up from
0 instead. For beta-TCVAE the annealed weight is the total correlation's, as in the
authors' code (:class:`hier_models.BetaTCVAE`).

``gamma``, the KL weight of a ladder layer not yet faded in (:class:`hier_models.ProVLAE`),
follows the paper's text: its pro-VLAE objective at the introduction of layer
``L - s`` (appendix A) sums ``beta KL`` over the layers ``L - s .. L`` only, so a
layer not yet introduced has no KL term, :data:`GAMMA` = 0. The authors' code
differs: its ladder class defaults to 0.5 (the pre-trained KL penalty of Li et al.
2020's progressive scheme), and its study jobs construct the ladders with
``gamma=1`` (the jobs for the larger networks also try 5). ``--set gamma=1`` trains
as those jobs did.

One difference remains in the timetable: the authors' scheduler starts each fade-in
5,000 steps after the previous one has ended, so their layer 1 fades in over steps
15,000-20,000 rather than 10,000-15,000; the paper's text gives only the 5,000 steps
of each fade-in, and the protocol keeps them back to back.

In a run shorter than the paper's, the timetable keeps its proportions and shrinks
by one factor for every model, so that the ladders' last fade-in ends by
:data:`SCHEDULE_SHARE` (60%) of the run: :func:`schedule_steps`. With 2,000 steps,
single-layer models anneal over 800 steps, the ladders' top layer over 400, layer 2
fades in over steps 400-800 and layer 1 over 800-1,200.
"""
from __future__ import annotations

import math
from typing import Mapping

from hier_datasets.validation import check_choice, check_positive_int
from hier_models.architectures import CAPACITIES, capacity_architecture
from hier_models.registry import LADDERS, MODELS

__all__ = [
    "BATCH_SIZE",
    "BETA_START",
    "GAMMA",
    "LATENT_DIM",
    "LATENTS_PER_LAYER",
    "LEARNING_RATE",
    "PAPER_STEPS",
    "PAPER_TRAINING_STEPS",
    "SCHEDULE_SHARE",
    "STUDY_MODELS",
    "boxhead_optimizer",
    "boxhead_protocol",
    "boxhead_settings",
    "schedule_steps",
]

#: the models of the paper's study (section 5), by their hier_models names
STUDY_MODELS = ("VAE", "BetaTCVAE", "ProVLAE", "ProLVAE")
#: latent variables of every model, and per ladder layer (layer 1 first)
LATENT_DIM = 12
LATENTS_PER_LAYER = (4, 4, 4)
#: the paper's timetable in steps (section 5)
PAPER_STEPS = {"single_layer_anneal": 10_000, "top_anneal": 5_000, "fade_in": 5_000, "stage": 5_000}
#: length of the authors' runs (200,000 steps of 32 images)
PAPER_TRAINING_STEPS = 200_000
LEARNING_RATE = 3e-4
BATCH_SIZE = 32
#: the share of a short run by which the ladders' last fade-in ends
SCHEDULE_SHARE = 0.6
#: the KL weight at step 0, annealed down to beta (the authors' jobs)
BETA_START = {"single_layer": 200.0, "top": 150.0}
#: the KL weight of ladder layers not yet faded in (appendix A: none)
GAMMA = 0.0

_ANNEALED = ("VAE", "BetaTCVAE")


def _ladder_end(steps) -> int:
    """Last step of the ladders' fade-in: two stages, then the last fade-in."""
    return 2 * steps["stage"] + steps["fade_in"]


def schedule_steps(training_steps: int | None = None) -> dict:
    """The paper's timetable for a run of ``training_steps`` steps.

    Returns ``{"single_layer_anneal", "top_anneal", "fade_in", "stage"}``: the paper's
    steps (:data:`PAPER_STEPS`) when its ladder schedule (15,000 steps) ends by
    :data:`SCHEDULE_SHARE` of the run, else all of them multiplied by
    ``SCHEDULE_SHARE * training_steps / 15,000`` (rounded, at least 1 step each). With
    ``training_steps=None`` the same proportions as fractions of the training length
    (floats: 0.4, 0.2, 0.2, 0.2), which the models resolve when ``fit`` starts.
    """
    end = _ladder_end(PAPER_STEPS)
    if training_steps is None:
        return {k: SCHEDULE_SHARE * v / end for k, v in PAPER_STEPS.items()}
    training_steps = check_positive_int(training_steps, "training_steps")
    factor = min(1.0, SCHEDULE_SHARE * training_steps / end)
    return {k: max(1, int(round(v * factor))) for k, v in PAPER_STEPS.items()}


def boxhead_settings(model: str, capacity: str = "small", training_steps: int | None = None) -> dict:
    """Constructor arguments of ``model`` (a name of :data:`hier_models.MODELS`) under
    the paper's protocol, for a run of ``training_steps`` steps (see :func:`schedule_steps`).

    Every model gets the ``capacity``'s architecture and 12 latents; single-layer VAEs
    (``VAE``, ``BetaTCVAE``) their ``beta_anneal_steps`` and ``beta_start`` (200); the
    ladders their ``beta_anneal_steps``, ``beta_start`` (150), ``fade_in_steps``,
    ``stage_steps`` and ``gamma`` (:data:`GAMMA`). ``AE`` and ``FactorVAE``, which the
    paper did not train, get the networks and 12 codes.
    """
    check_choice(model, "model", MODELS)
    check_choice(capacity, "capacity", CAPACITIES)
    steps = schedule_steps(training_steps)
    settings = {"architecture": capacity_architecture(capacity)}
    if model in LADDERS:
        settings.update(latents_per_layer=LATENTS_PER_LAYER, beta_anneal_steps=steps["top_anneal"],
                        beta_start=BETA_START["top"], fade_in_steps=steps["fade_in"], stage_steps=steps["stage"],
                        gamma=GAMMA)
    else:
        settings["latent_dim"] = LATENT_DIM
    if model in _ANNEALED:
        settings.update(beta_anneal_steps=steps["single_layer_anneal"], beta_start=BETA_START["single_layer"])
    return settings


def boxhead_optimizer():
    """A fresh optimiser as in the authors' code: Adamax at :data:`LEARNING_RATE`."""
    import keras

    return keras.optimizers.Adamax(LEARNING_RATE)


def training_steps(num_examples: int, batch_size: int, epochs: int) -> int:
    """Steps of ``epochs`` epochs over ``num_examples`` in batches of ``batch_size``."""
    return check_positive_int(epochs, "epochs") * math.ceil(
        check_positive_int(num_examples, "num_examples") / check_positive_int(batch_size, "batch_size")
    )


def boxhead_protocol(model_name: str, options: Mapping, *, latent_dim: int | None, training_steps: int) -> dict:
    """The constructor arguments of ``model_name`` on a Boxhead dataset: the paper's
    protocol (:func:`boxhead_settings`: 12 codes, the small or large networks of its
    appendix B.2, the KL weight annealed down to beta from 200 over 10,000 steps for
    single-layer models and from 150 over 5,000 for the ladders' top layer, the
    ladders' fade-in timetable, all shrunk to fit a shorter run), overridden by
    ``options`` and ``latent_dim``. ``options["capacity"]`` chooses the networks
    (default small); ``beta_anneal_steps=0`` (constant beta) drops the protocol's
    start value.

    Raises:
      ValueError: an unknown model or capacity.
    """
    options = dict(options)
    capacity = options.pop("capacity", None) or "small"
    try:
        settings = boxhead_settings(model_name, capacity, training_steps)
    except ValueError as err:
        raise ValueError(f"{model_name}: {err}; use capacity=small or capacity=large") from err
    if "architecture" in options:
        settings.pop("architecture")
    if latent_dim is not None or "latent_dim" in options or "latents_per_layer" in options:
        settings.pop("latent_dim", None)
        settings.pop("latents_per_layer", None)
    if options.get("beta_anneal_steps") == 0:
        settings.pop("beta_start", None)
    return {**settings, **options}
