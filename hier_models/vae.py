"""Variational autoencoder with a weighted, optionally annealed KL term (beta-VAE)."""
from __future__ import annotations

import keras
from keras import ops

from hier_models import losses
from hier_models.base import SingleLayerModel
from hier_models.schedules import (
    FollowsTrainingLength,
    annealed_weight,
    check_length,
    check_weight_start,
    resolve_length,
)
from hier_models.validation import check_non_negative

__all__ = ["VAE"]


@keras.saving.register_keras_serializable(package="hier_models")
class VAE(FollowsTrainingLength, SingleLayerModel):
    """Gaussian-posterior VAE; with ``beta != 1`` the beta-VAE of Higgins et al.

    ``VAE(input_shape, latent_dim=10, *, beta=1.0, beta_anneal_steps=0,
    beta_start=None, training_steps=None, architecture=None, activation=None,
    hidden_units=None, likelihood=None, observation_std=..., seed=None)``.

    Loss per batch: ``reconstruction + beta_t * kl`` with the analytic
    ``kl = KL(N(mean, var) || N(0, I))`` summed over latent dimensions and

    ``beta_t = beta_0 + (beta - beta_0) * min(1, t / beta_anneal_steps)``

    at training step t, where ``beta_0`` is ``beta_start``: None (the default) starts
    from 0, a warm-up of the KL term; a value above ``beta`` anneals the capacity
    constraint from strong to weak (Burgess et al. 2018, section 4), as the Boxhead
    paper does for single-layer models (section 5: over 10,000 steps; its authors'
    code starts at 200, :mod:`hier_models.protocols`). ``beta_anneal_steps=0``:
    constant beta (``beta_start`` must then stay None). ``beta_anneal_steps`` is whole
    steps (an int) or a fraction of the training length (a float in [0, 1], e.g. 0.5:
    over the first half of the steps ``fit`` runs); ``training_steps`` fixes that
    length instead (see :mod:`hier_models.schedules`). Metrics: ``loss``,
    ``reconstruction``, ``kl``, ``beta`` (the current beta_t).
    """

    loss_terms = ("loss", "reconstruction", "kl")
    encoder_heads = 2  # means and log variances

    def __init__(
        self,
        input_shape,
        latent_dim: int = 10,
        *,
        beta: float = 1.0,
        beta_anneal_steps: int | float = 0,
        beta_start: float | None = None,
        training_steps: int | None = None,
        **kwargs,
    ):
        beta = check_non_negative("beta", beta)
        beta_anneal_steps = check_length("beta_anneal_steps", beta_anneal_steps)
        beta_start = check_weight_start("beta_start", beta_start, beta_anneal_steps)
        super().__init__(input_shape, latent_dim, **kwargs)
        self.beta, self.beta_anneal_steps, self.beta_start = beta, beta_anneal_steps, beta_start
        self._config.update(dict(beta=beta, beta_anneal_steps=beta_anneal_steps, beta_start=beta_start))
        self._init_training_length(training_steps)
        self._build_schedules()
        self._finish_init(("beta",))

    # ------------------------------------------------------------ schedules
    def _schedule_lengths(self) -> dict:
        return {"beta_anneal_steps": self.beta_anneal_steps}

    def _build_schedules(self) -> None:
        self._beta_schedule = annealed_weight(
            self.beta, resolve_length(self.beta_anneal_steps, self.training_steps), start=self.beta_start or 0.0
        )

    def _schedule_ends(self) -> dict:
        steps = resolve_length(self.beta_anneal_steps, self.training_steps)
        return {"the beta annealing": steps}

    def posterior(self, x, training=False):
        """``(mean, logvar)`` tensors of q(z | x) for a batch (logvar bounded, see
        :func:`hier_models.losses.bound_logvar`)."""
        out = self.encoder(x, training=training)
        return out[:, : self.latent_dim], losses.bound_logvar(out[:, self.latent_dim :])

    def _anneal_fraction(self):
        return self._beta_schedule.fraction(self._step)

    def _beta_at(self, fraction):
        """``beta_t`` at annealing progress ``fraction`` (``min(1, t / beta_anneal_steps)``)."""
        start = 0.0 if self.beta_start is None else self.beta_start
        return start + (self.beta - start) * fraction

    def _regulariser(self, z, mean, logvar, kl, fraction):
        """``(penalty, extra_terms)`` added to the reconstruction loss."""
        beta = self._beta_at(fraction)
        return beta * kl, {"beta": beta}

    def _forward(self, x, training):
        mean, logvar = self.posterior(x, training=training)
        z = self._sample(mean, logvar, salt=0)
        recon = self._reconstruction(x, self.decoder(z, training=training))
        kl = ops.mean(losses.gaussian_kl(mean, logvar))
        penalty, extra = self._regulariser(z, mean, logvar, kl, self._anneal_fraction())
        return {"loss": recon + penalty, "reconstruction": recon, "kl": kl, **extra}, z

    def _codes(self, x):
        return self.posterior(x)[0]

    def schedule(self, step=None) -> dict:
        step = self.step if step is None else step
        return {"beta": float(self._beta_at(self._beta_schedule.fraction(step)))}
