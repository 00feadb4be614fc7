"""Variational autoencoder with a weighted, optionally annealed KL term (beta-VAE)."""
from __future__ import annotations

import keras
from keras import ops

from hier_datasets.validation import check_non_negative
from hier_models import losses
from hier_models.schedules import (
    FollowsTrainingLength,
    annealed_weight,
    check_length,
    check_weight_start,
    resolve_length,
)
from hier_models.single_layer import SingleLayerModel

__all__ = ["VAE"]


@keras.saving.register_keras_serializable(package="hier_models")
class VAE(FollowsTrainingLength, SingleLayerModel):
    """Gaussian-posterior VAE; with ``beta != 1`` the beta-VAE of Higgins et al. (2017).

    Loss per batch: ``reconstruction + beta_t * kl`` with the analytic
    ``kl = KL(N(mean, var) || N(0, I))`` summed over latent dimensions (the ELBO of
    the Boxhead paper, section 2, with the KL weighted) and

    ``beta_t = beta_0 + (beta - beta_0) * min(1, t / beta_anneal_steps)``

    at training step t, where ``beta_0`` is ``beta_start``. Metrics: ``loss``,
    ``reconstruction``, ``kl``, ``beta`` (the current beta_t).

    Args:
      input_shape: shape of one observation, e.g. ``(64,)`` or ``(64, 64, 3)``.
      latent_dim: number of latent dimensions, default 10 (12 in the Boxhead paper,
        section 5).
      beta: the KL weight once annealed, default 1.0 (the plain VAE); the Boxhead
        paper sweeps 1, 5, 10 and 20 (section 5).
      beta_anneal_steps: length of the annealing of beta_t, default 0 (constant beta):
        whole steps (an int; 10,000 for the Boxhead paper's single-layer models,
        section 5) or a fraction of the training length that ``fit`` sets (a float in
        [0, 1], e.g. 0.5: the first half of the steps; see :mod:`hier_models.schedules`).
      beta_start: beta_0, the KL weight at step 0. None (the default) warms the KL term
        up from 0; a value above ``beta`` anneals the capacity constraint from strong
        to weak (Burgess et al. 2018, section 4), as the Boxhead authors' code does
        from 200 (:mod:`hier_models.protocols`). Needs ``beta_anneal_steps > 0``.
      training_steps: the training length that fraction schedules refer to. Default
        (None): set by each ``fit`` (steps taken so far plus the steps it runs); give
        it for a custom loop or one run over several fits.
      **kwargs: ``architecture``, ``activation``, ``hidden_units`` (see
        :class:`~hier_models.single_layer.SingleLayerModel`) and ``likelihood``,
        ``observation_std``, ``random_state``, ``name``, ``trainable`` (see
        :class:`~hier_models.base.Autoencoder`).

    Raises:
      ValueError: a negative or non-finite ``beta`` or ``beta_start``, a schedule
        length that is neither an int >= 0 nor a float in [0, 1], a ``beta_start``
        with constant beta, or an invalid network argument.

    Example:
      >>> import keras, numpy as np
      >>> from hier_models import VAE
      >>> keras.utils.set_random_seed(0)
      >>> model = VAE((16,), latent_dim=2, beta=4.0, beta_anneal_steps=10, hidden_units=(8,), random_state=0)
      >>> model.schedule(5)
      {'beta': 2.0}
      >>> model = VAE((16,), latent_dim=2, beta=4.0, beta_anneal_steps=10, beta_start=200.0, random_state=0)
      >>> model.schedule(0), model.schedule(5), model.schedule(10)
      ({'beta': 200.0}, {'beta': 102.0}, {'beta': 4.0})
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
        beta = check_non_negative(beta, "beta")
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
